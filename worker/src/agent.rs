//! The worker's IO loop: registers, leases units, runs them on the rayon pool, heartbeats,
//! reports improvements and delivers results — holding them while the coordinator is away —
//! and on shutdown checkpoints and hands its leases back.

use grind_proto::v1 as pb;
use grind_shared::problem::{Problem, ProblemError, SolveContext, UnitOutcome};
use grind_shared::registry;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tonic::Code;

use crate::client::{is_transient, Client};
use crate::context::{Bounds, Finished, FoundImprovement, UnitContext, UnitEvent};
use crate::cpu;
use crate::idle::{self, IdleMonitor};
use crate::{WorkerConfig, WorkerError, WorkerSummary};

/// How long shutdown waits for running units to checkpoint and stop.
const STOP_GRACE: Duration = Duration::from_millis(3000);
/// How long shutdown spends handing leases and results back.
const DELIVERY_GRACE: Duration = Duration::from_millis(1500);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
const MIN_BACKOFF: Duration = Duration::from_millis(100);
/// How long a token refusal must last before the worker gives up for good. A running
/// coordinator re-reads its tokens every second, so a token created a moment ago (a worker
/// started right after `grind token create`, as Kubernetes does once the Secret exists) is
/// refused until then; a wrong or revoked token is refused for as long as it is asked.
const TOKEN_REFUSAL_GRACE: Duration = Duration::from_secs(3);
/// How often a refused token is tried again during the grace.
const TOKEN_RETRY: Duration = Duration::from_millis(500);
/// Most units a lease slot takes when the coordinator grants tiny units in runs.
const RUN_UNITS_PER_SLOT: u32 = 256;
/// Most completions sent in one `CompleteBatch`.
const MAX_BATCH: usize = 1024;
/// Most leases queued per thread ahead of free threads (tiny units, long round trips).
const MAX_QUEUE_PER_THREAD: usize = 128;

struct Running {
    grant: pb::LeaseGrant,
    ctx: Arc<UnitContext>,
    cancelled: bool,
}

/// A message waiting to be delivered to the coordinator, in order.
enum Outgoing {
    Complete(pb::CompleteRequest),
    Improvement(pb::ImprovementRequest),
    Release(pb::ReleaseRequest),
    Donate(pb::DonateRequest),
}

/// Tracks whether a unit ran alone on this worker for its whole life (then the process CPU
/// clock measures it exactly; otherwise its solving thread's clock is used).
/// Process-wide, because several workers may share one process (`grind run --workers N`).
struct CpuAccounting {
    active: AtomicUsize,
    starts: AtomicUsize,
}

static ACCOUNTING: CpuAccounting = CpuAccounting {
    active: AtomicUsize::new(0),
    starts: AtomicUsize::new(0),
};

struct Agent {
    config: WorkerConfig,
    client: Client,
    pool: Arc<rayon::ThreadPool>,
    worker_id: i64,
    heartbeat_every: Duration,
    running: HashMap<i64, Running>,
    /// Leases granted ahead of free threads, so a finishing unit's thread never waits on a
    /// round trip to the coordinator.
    queued: VecDeque<pb::LeaseGrant>,
    outbox: VecDeque<Outgoing>,
    problems: HashMap<i64, Arc<dyn Problem>>,
    bounds: Bounds,
    events_tx: mpsc::UnboundedSender<UnitEvent>,
    bound_watch: Option<tokio::task::JoinHandle<()>>,
    summary: WorkerSummary,
    backoff: Duration,
    next_contact: Instant,
    next_lease: Instant,
    next_heartbeat: Instant,
    /// `--idle-only`: the load monitor and when it samples next.
    idle: Option<(IdleMonitor, Instant)>,
    /// True while `--idle-only` holds work back because the machine is busy.
    paused: bool,
    /// Set when the coordinator refuses this worker for good (bad token, banned).
    locked_out: Option<String>,
    /// When the coordinator began refusing this worker's token, unless it has accepted a
    /// call since ([`TOKEN_REFUSAL_GRACE`]).
    token_refused_since: Option<Instant>,
    /// What sizes the lease queue: measured unit and round-trip times.
    pace: Pace,
    /// False once the coordinator answered that it has no `CompleteBatch` (older grind).
    batches: bool,
    /// The highest lease id received (heartbeats report it, so that the coordinator can take
    /// back leases granted in a reply that never arrived).
    newest_lease: i64,
    /// Events from the running units. Handled while calls are in flight too, so that a
    /// finished unit's thread starts its queued unit without waiting for a round trip.
    events: Option<mpsc::UnboundedReceiver<UnitEvent>>,
}

/// Moving averages of how long units take and how long a round trip to the coordinator
/// takes: the queue of leased units must cover the units finished during a round trip.
#[derive(Debug, Clone, Copy)]
struct Pace {
    unit_seconds: f64,
    round_trip_seconds: f64,
}

impl Default for Pace {
    fn default() -> Self {
        // Until measured: units are assumed long (one queued per thread, as before).
        Pace {
            unit_seconds: 1.0,
            round_trip_seconds: 0.001,
        }
    }
}

impl Pace {
    const WEIGHT: f64 = 0.2;

    fn unit_took(&mut self, seconds: f64) {
        if seconds.is_finite() && seconds >= 0.0 {
            self.unit_seconds += Self::WEIGHT * (seconds - self.unit_seconds);
        }
    }

    fn round_trip_took(&mut self, elapsed: Duration) {
        self.round_trip_seconds += Self::WEIGHT * (elapsed.as_secs_f64() - self.round_trip_seconds);
    }

    /// Leases to hold queued per thread: enough for two round trips' worth of units.
    fn queue_per_thread(&self) -> usize {
        let units = 2.0 * self.round_trip_seconds / self.unit_seconds.max(1e-6);
        (units.ceil() as usize).clamp(1, MAX_QUEUE_PER_THREAD)
    }
}

/// Runs a worker until `shutdown` resolves.
pub async fn run(
    config: WorkerConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<WorkerSummary, WorkerError> {
    let client = Client::new(&config.coordinator, &config.access)?;
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(config.threads)
            .thread_name(|i| format!("grind-solve-{i}"))
            .build()
            .map_err(|e| WorkerError::Setup(format!("cannot start the CPU pool: {e}")))?,
    );
    let (events_tx, events_rx) = mpsc::unbounded_channel();
    let now = Instant::now();
    let mut agent = Agent {
        config,
        client,
        pool,
        worker_id: 0,
        heartbeat_every: Duration::from_secs(2),
        running: HashMap::new(),
        queued: VecDeque::new(),
        outbox: VecDeque::new(),
        problems: HashMap::new(),
        bounds: Bounds::default(),
        events_tx,
        bound_watch: None,
        summary: WorkerSummary::default(),
        backoff: MIN_BACKOFF,
        next_contact: now,
        next_lease: now,
        next_heartbeat: now,
        idle: None,
        paused: false,
        locked_out: None,
        token_refused_since: None,
        pace: Pace::default(),
        batches: true,
        newest_lease: 0,
        events: Some(events_rx),
    };
    if agent.config.idle_only {
        agent.idle = Some((IdleMonitor::default(), now));
        agent.paused = true;
        tracing::info!("--idle-only: waiting for the machine to be idle");
    }
    // `--max-hours`: stop as on SIGTERM when the budget is spent.
    let budget_end = agent
        .config
        .max_runtime
        .map(|budget| now + budget)
        .unwrap_or(now + Duration::from_secs(100 * 365 * 24 * 3600));
    tokio::pin!(shutdown);
    loop {
        if agent.locked_out.is_some() {
            break;
        }
        agent.watch_load();
        if agent.worker_id == 0 && Instant::now() >= agent.next_contact {
            agent.register().await;
        }
        if agent.worker_id != 0 {
            agent.deliver().await;
            agent.heartbeat_if_due().await;
            agent.lease_if_free().await;
        }
        let wake = agent.next_wakeup();
        tokio::select! {
            _ = &mut shutdown => break,
            _ = tokio::time::sleep_until(budget_end.into()) => {
                tracing::info!("the --max-hours budget is spent; stopping");
                break;
            }
            Some(event) = next_event(&mut agent.events) => {
                agent.on_event(event);
                agent.take_waiting_events();
            }
            _ = tokio::time::sleep_until(wake.into()) => {}
        }
    }
    agent.shut_down().await;
    match agent.locked_out {
        Some(reason) => Err(WorkerError::Refused(reason)),
        None => Ok(agent.summary),
    }
}

impl Agent {
    /// `--idle-only`: samples the machine's load when due, and pauses (checkpointing and
    /// handing back running units) or resumes work accordingly.
    fn watch_load(&mut self) {
        let Some((monitor, next)) = &mut self.idle else {
            return;
        };
        let now = Instant::now();
        if now < *next {
            return;
        }
        *next = now + idle::SAMPLE_EVERY;
        let Some(busy) = idle::machine_busy_seconds() else {
            return;
        };
        let may_run = monitor.sample(now, busy, crate::cpu::process_seconds());
        if may_run && self.paused {
            tracing::info!("the machine is idle: resuming work");
            self.paused = false;
        } else if !may_run && !self.paused {
            tracing::info!("the machine is busy: handing work back until it is idle");
            self.paused = true;
            for unit in self.running.values() {
                unit.ctx.request_stop();
            }
            self.release_queued();
        }
    }

    /// Hands queued (not started) leases back untouched.
    fn release_queued(&mut self) {
        for grant in std::mem::take(&mut self.queued) {
            self.outbox.push_back(Outgoing::Release(pb::ReleaseRequest {
                worker_id: self.worker_id,
                lease_id: grant.lease_id,
                cursor: grant.cursor,
                nodes: 0,
                cpu_seconds: 0.0,
            }));
        }
    }

    fn next_wakeup(&self) -> Instant {
        let mut wake = self.next_heartbeat;
        if let Some((_, next)) = &self.idle {
            wake = wake.min(*next);
        }
        if self.worker_id == 0 || !self.outbox.is_empty() {
            wake = wake.min(self.next_contact);
        }
        if self.free_slots() > 0 {
            wake = wake.min(self.next_lease.max(self.next_contact));
        }
        wake.max(Instant::now() + Duration::from_millis(1))
    }

    /// Leases this worker would take now: one per thread plus a queue per thread sized from
    /// measured unit and round-trip times (at least one).
    fn free_slots(&self) -> usize {
        if self.paused {
            return 0;
        }
        let threads = self.config.threads;
        (threads * (1 + self.pace.queue_per_thread()))
            .saturating_sub(self.running.len() + self.queued.len())
    }

    /// Starts queued units on free threads.
    fn start_queued(&mut self) {
        while self.running.len() < self.config.threads {
            match self.queued.pop_front() {
                Some(grant) => self.start(grant),
                None => break,
            }
        }
    }

    fn contact_failed(&mut self, what: &str, status: &tonic::Status) {
        tracing::warn!(
            "{what}: coordinator unreachable ({}: {}); retrying in {:?}",
            status.code(),
            status.message(),
            self.backoff
        );
        self.next_contact = Instant::now() + self.backoff;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }

    fn contact_ok(&mut self) {
        self.backoff = MIN_BACKOFF;
        self.token_refused_since = None;
    }

    fn reachable(&self) -> bool {
        Instant::now() >= self.next_contact
    }

    /// Notes a refusal that no retry can cure (a missing, wrong or revoked token, a banned
    /// identity): the worker then stops; a token refused for less than
    /// [`TOKEN_REFUSAL_GRACE`] is asked again first (it may be new). True while in the grace.
    fn note_refusal(&mut self, status: &tonic::Status) -> bool {
        if status.code() == Code::PermissionDenied && status.message().contains("banned") {
            self.locked_out = Some(status.message().to_string());
        } else if status.code() == Code::Unauthenticated {
            let since = *self.token_refused_since.get_or_insert_with(Instant::now);
            if since.elapsed() < TOKEN_REFUSAL_GRACE {
                tracing::warn!(
                    "token refused ({}); asking again in {TOKEN_RETRY:?}, in case the token \
                     is new (a coordinator reads new tokens within a second)",
                    status.message()
                );
                return true;
            }
            self.locked_out = Some(status.message().to_string());
        }
        false
    }

    /// Handles an answer meaning "this coordinator does not know us" by registering again.
    fn forget_identity_if_unknown(&mut self, status: &tonic::Status) -> bool {
        if status.code() == Code::NotFound && status.message().contains("unknown worker") {
            tracing::warn!(
                "the coordinator no longer knows worker {}; registering again",
                self.worker_id
            );
            self.worker_id = 0;
            true
        } else {
            false
        }
    }

    async fn register(&mut self) {
        let request = pb::RegisterRequest {
            name: self.config.name.clone(),
            host: self.config.host.clone(),
            cores: self.config.threads as u32,
            version: grind_shared::VERSION.to_string(),
            git_commit: grind_shared::GIT_COMMIT.to_string(),
            previous_worker_id: self.summary.worker_id,
        };
        let client = self.client.clone();
        match self
            .waiting(async move { client.register(request).await })
            .await
        {
            Ok(reply) => {
                self.contact_ok();
                self.worker_id = reply.worker_id;
                self.summary.worker_id = reply.worker_id;
                self.heartbeat_every =
                    Duration::from_millis(reply.heartbeat_interval_ms.clamp(50, 60_000) as u64);
                self.next_heartbeat = Instant::now() + self.heartbeat_every;
                tracing::info!("registered as worker {}", reply.worker_id);
                if let Some(old) = self.bound_watch.take() {
                    old.abort();
                }
                self.bound_watch = Some(tokio::spawn(watch_bounds(
                    self.client.clone(),
                    reply.worker_id,
                    self.bounds.clone(),
                )));
            }
            Err(status) if is_transient(&status) => self.contact_failed("register", &status),
            Err(status) => {
                tracing::error!("registration refused: {}", status.message());
                let retry = if self.note_refusal(&status) {
                    TOKEN_RETRY
                } else {
                    MAX_BACKOFF
                };
                self.next_contact = Instant::now() + retry;
            }
        }
    }

    async fn deliver(&mut self) {
        while self.reachable() {
            if self.batches && matches!(self.outbox.front(), Some(Outgoing::Complete(_))) {
                if !self.deliver_batch().await {
                    return;
                }
                continue;
            }
            let Some(item) = self.outbox.pop_front() else {
                return;
            };
            let outcome = match &item {
                Outgoing::Complete(req) => {
                    let lease_id = req.lease_id;
                    let (client, req) = (self.client.clone(), req.clone());
                    match self
                        .waiting(async move { client.complete(req).await })
                        .await
                    {
                        Ok(reply) => {
                            self.note_completion(lease_id, &reply);
                            Ok(())
                        }
                        Err(status) => Err(status),
                    }
                }
                Outgoing::Improvement(req) => {
                    let (client, call) = (self.client.clone(), req.clone());
                    let reply = self
                        .waiting(async move { client.improve(call).await })
                        .await;
                    reply.map(|reply| {
                        tracing::info!(
                            "improvement {} for campaign {}: {}",
                            reply.verified_score,
                            req.campaign_id,
                            if reply.accepted {
                                "accepted"
                            } else {
                                "not better"
                            }
                        );
                        if let Some(best) = reply.campaign_best {
                            self.bounds.offer(req.campaign_id, best);
                        }
                    })
                }
                Outgoing::Release(req) => {
                    let (client, req) = (self.client.clone(), req.clone());
                    self.waiting(async move { client.release(req).await })
                        .await
                        .map(|_| ())
                }
                Outgoing::Donate(req) => {
                    let (client, call) = (self.client.clone(), req.clone());
                    let reply = self.waiting(async move { client.donate(call).await }).await;
                    reply.map(|reply| {
                        tracing::info!(
                            "lease {}: {} unit(s) donated",
                            req.lease_id,
                            reply.accepted
                        );
                    })
                }
            };
            match outcome {
                Ok(()) => self.contact_ok(),
                Err(status) if is_transient(&status) => {
                    self.outbox.push_front(item);
                    self.contact_failed("delivery", &status);
                    return;
                }
                Err(status) => {
                    self.forget_identity_if_unknown(&status);
                    tracing::error!("the coordinator refused a delivery: {}", status.message());
                    self.note_refusal(&status);
                    self.summary.refused += 1;
                }
            }
        }
    }

    /// Sends the completions at the front of the outbox as one batch that also asks for
    /// more work. False when the coordinator could not be reached (the batch stays queued).
    async fn deliver_batch(&mut self) -> bool {
        let mut completions = Vec::new();
        while completions.len() < MAX_BATCH {
            match self.outbox.front() {
                Some(Outgoing::Complete(_)) => {
                    if let Some(Outgoing::Complete(req)) = self.outbox.pop_front() {
                        completions.push(req);
                    }
                }
                _ => break,
            }
        }
        let lease_capacity = if Instant::now() >= self.next_lease {
            self.free_slots() as u32
        } else {
            0
        };
        let request = pb::CompleteBatchRequest {
            worker_id: self.worker_id,
            completions: completions.clone(),
            lease_capacity,
            lease_max_units: lease_capacity.saturating_mul(RUN_UNITS_PER_SLOT),
        };
        let sent = Instant::now();
        let client = self.client.clone();
        match self
            .waiting(async move { client.complete_batch(request).await })
            .await
        {
            Ok(reply) => {
                self.pace.round_trip_took(sent.elapsed());
                self.contact_ok();
                for (req, outcome) in completions.iter().zip(reply.outcomes) {
                    match outcome.reply {
                        Some(reply) => self.note_completion(req.lease_id, &reply),
                        None => {
                            let status = tonic::Status::new(
                                Code::from_i32(outcome.error_code),
                                outcome.error.clone(),
                            );
                            tracing::error!(
                                "the coordinator refused the result of lease {}: {}",
                                req.lease_id,
                                outcome.error
                            );
                            self.forget_identity_if_unknown(&status);
                            self.note_refusal(&status);
                            self.summary.refused += 1;
                        }
                    }
                }
                if let Some(lease) = reply.lease {
                    self.take_grants(lease);
                }
                true
            }
            Err(status) if status.code() == Code::Unimplemented => {
                tracing::warn!(
                    "the coordinator has no batched completions; sending them one by one"
                );
                self.batches = false;
                self.requeue_front(completions);
                true
            }
            Err(status) if is_transient(&status) => {
                self.requeue_front(completions);
                self.contact_failed("delivery", &status);
                false
            }
            Err(status) => {
                // The batch as a whole was refused (the worker itself, not one result).
                self.forget_identity_if_unknown(&status);
                tracing::error!("the coordinator refused a delivery: {}", status.message());
                self.note_refusal(&status);
                if self.worker_id == 0 || self.locked_out.is_some() {
                    self.requeue_front(completions);
                } else {
                    self.summary.refused += completions.len() as u64;
                }
                false
            }
        }
    }

    /// Puts completions back at the front of the outbox, in their order.
    fn requeue_front(&mut self, completions: Vec<pb::CompleteRequest>) {
        for req in completions.into_iter().rev() {
            self.outbox.push_front(Outgoing::Complete(req));
        }
    }

    /// Counts an acknowledged completion.
    fn note_completion(&mut self, lease_id: i64, reply: &pb::CompleteReply) {
        if reply.duplicate {
            tracing::info!("lease {lease_id}: {}", reply.detail);
        } else {
            self.summary.units_done += 1;
        }
        if reply.accepted {
            tracing::debug!("lease {lease_id}: result accepted");
        }
    }

    /// Queues granted leases and starts what free threads can take.
    fn take_grants(&mut self, reply: pb::LeaseReply) {
        if reply.leases.is_empty() {
            let wait = reply.retry_after_ms.clamp(10, 10_000) as u64;
            self.next_lease = Instant::now() + Duration::from_millis(wait);
        }
        if let Some(newest) = reply.leases.iter().map(|g| g.lease_id).max() {
            self.newest_lease = self.newest_lease.max(newest);
        }
        self.queued.extend(reply.leases);
        self.start_queued();
    }

    async fn heartbeat_if_due(&mut self) {
        if Instant::now() < self.next_heartbeat || !self.reachable() {
            return;
        }
        self.next_heartbeat = Instant::now() + self.heartbeat_every;
        let leases: Vec<pb::LeaseProgress> = self
            .running
            .values()
            .filter(|r| !r.cancelled)
            .map(|r| pb::LeaseProgress {
                lease_id: r.grant.lease_id,
                nodes: r.ctx.nodes(),
                cursor: r.ctx.take_new_checkpoint().unwrap_or_default(),
                fraction: r.ctx.fraction().unwrap_or(-1.0),
            })
            .chain(self.queued.iter().map(|g| pb::LeaseProgress {
                lease_id: g.lease_id,
                nodes: 0,
                cursor: Vec::new(),
                fraction: -1.0,
            }))
            .collect();
        // Every lease this worker still holds: running, queued, or waiting in the outbox.
        let delivering = self
            .outbox
            .iter()
            .filter_map(|item| match item {
                Outgoing::Complete(req) => Some(req.lease_id),
                Outgoing::Release(req) => Some(req.lease_id),
                Outgoing::Donate(req) => Some(req.lease_id),
                Outgoing::Improvement(_) => None,
            })
            .chain(
                self.running
                    .values()
                    .filter(|r| r.cancelled)
                    .map(|r| r.grant.lease_id),
            )
            .collect();
        let request = pb::HeartbeatRequest {
            worker_id: self.worker_id,
            leases,
            complete_list: true,
            delivering,
            newest_lease_id: self.newest_lease,
        };
        let client = self.client.clone();
        match self
            .waiting(async move { client.heartbeat(request).await })
            .await
        {
            Ok(reply) => {
                self.contact_ok();
                for status in reply.leases {
                    if status.verdict == pb::LeaseVerdict::Cancel as i32 {
                        self.queued.retain(|g| g.lease_id != status.lease_id);
                    }
                    if let Some(unit) = self.running.get_mut(&status.lease_id) {
                        if status.verdict == pb::LeaseVerdict::Cancel as i32 {
                            tracing::info!(
                                "lease {} cancelled by the coordinator",
                                status.lease_id
                            );
                            unit.cancelled = true;
                            unit.ctx.request_stop();
                        } else {
                            unit.ctx.request_split(status.split_requested);
                        }
                    }
                }
                for bound in reply.bounds {
                    self.bounds.offer(bound.campaign_id, bound.bound);
                }
            }
            Err(status) if is_transient(&status) => self.contact_failed("heartbeat", &status),
            Err(status) => {
                if !self.forget_identity_if_unknown(&status) {
                    tracing::error!("heartbeat refused: {}", status.message());
                    self.note_refusal(&status);
                }
            }
        }
    }

    async fn lease_if_free(&mut self) {
        let free = self.free_slots();
        if free == 0 || Instant::now() < self.next_lease || !self.reachable() {
            return;
        }
        // A worker with nothing to do lets the coordinator hold the call until work appears.
        let idle = self.running.is_empty() && self.queued.is_empty() && self.outbox.is_empty();
        let wait_ms = if idle {
            self.config.idle_lease_wait_ms
        } else {
            0
        };
        let request = pb::LeaseRequest {
            worker_id: self.worker_id,
            capacity: free as u32,
            max_units: (free as u32).saturating_mul(RUN_UNITS_PER_SLOT),
            wait_ms,
        };
        let sent = Instant::now();
        let client = self.client.clone();
        match self
            .waiting(async move { client.lease(request).await })
            .await
        {
            Ok(reply) => {
                if wait_ms == 0 {
                    // A held call's time is waiting, not the round trip.
                    self.pace.round_trip_took(sent.elapsed());
                }
                self.contact_ok();
                self.take_grants(reply);
            }
            Err(status) if is_transient(&status) => self.contact_failed("lease", &status),
            Err(status) => {
                if !self.forget_identity_if_unknown(&status) {
                    tracing::error!("lease refused: {}", status.message());
                    self.note_refusal(&status);
                    self.next_lease = Instant::now() + MAX_BACKOFF;
                }
            }
        }
    }

    fn problem_for(&mut self, grant: &pb::LeaseGrant) -> Result<Arc<dyn Problem>, ProblemError> {
        if let Some(problem) = self.problems.get(&grant.campaign_id) {
            return Ok(problem.clone());
        }
        let entry = registry::lookup(&grant.problem)?;
        if entry.solver_version != grant.solver_version {
            tracing::warn!(
                "campaign {} was created for {} solver version {}, this worker has {}",
                grant.campaign_id,
                grant.problem,
                grant.solver_version,
                entry.solver_version
            );
        }
        let problem = registry::instantiate(&grant.problem, &grant.params_json)?;
        self.problems.insert(grant.campaign_id, problem.clone());
        Ok(problem)
    }

    fn start(&mut self, grant: pb::LeaseGrant) {
        let lease_id = grant.lease_id;
        tracing::info!(
            "lease {lease_id}: campaign {} unit {} ({}){}",
            grant.campaign_id,
            grant.unit_id,
            grant.unit_label,
            if grant.replica { " [replica]" } else { "" }
        );
        let problem = match self.problem_for(&grant) {
            Ok(problem) => problem,
            Err(e) => {
                self.outbox
                    .push_back(Outgoing::Complete(pb::CompleteRequest {
                        worker_id: self.worker_id,
                        lease_id,
                        result: Some(pb::UnitResult {
                            error: format!("this worker cannot run the unit: {e}"),
                            ..Default::default()
                        }),
                        unit_payload: grant.unit_payload.clone(),
                    }));
                return;
            }
        };
        let objective = problem.objective();
        let bound = self.bounds.for_campaign(grant.campaign_id, objective);
        if let Some(b) = grant.bound {
            bound.offer(b);
        }
        let resume = (!grant.cursor.is_empty()).then(|| grant.cursor.clone());
        let ctx = Arc::new(UnitContext::new(
            lease_id,
            grant.campaign_id,
            grant.unit_payload.clone(),
            resume,
            bound,
            self.events_tx.clone(),
        ));
        let payload = grant.unit_payload.clone();
        let unit_ctx = ctx.clone();
        let accounting = &ACCOUNTING;
        self.pool.spawn(move || {
            accounting.active.fetch_add(1, Ordering::AcqRel);
            let starts_before = accounting.starts.fetch_add(1, Ordering::AcqRel) + 1;
            let (thread0, process0, wall0) = (
                cpu::thread_seconds(),
                cpu::process_seconds(),
                Instant::now(),
            );
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                problem.solve(&payload, unit_ctx.as_ref())
            }))
            .unwrap_or_else(|panic| {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                Err(ProblemError::Solver(format!("solver panicked: {what}")))
            });
            let alone = accounting.active.load(Ordering::Acquire) == 1
                && accounting.starts.load(Ordering::Acquire) == starts_before;
            let cpu_seconds = if alone {
                cpu::process_seconds() - process0
            } else {
                cpu::thread_seconds() - thread0
            };
            accounting.active.fetch_sub(1, Ordering::AcqRel);
            let claim_bound = SolveContext::bound(unit_ctx.as_ref());
            unit_ctx.send(UnitEvent::Finished(Finished {
                lease_id,
                outcome,
                cpu_seconds,
                wall_seconds: wall0.elapsed().as_secs_f64(),
                claim_bound,
            }));
        });
        self.running.insert(
            lease_id,
            Running {
                grant,
                ctx,
                cancelled: false,
            },
        );
    }

    /// Awaits `call` (an RPC made with a clone of the client) while still handling the
    /// units' events, so that a unit finishing during a round trip frees its thread for the
    /// next queued unit at once, not when the reply arrives.
    async fn waiting<T>(&mut self, call: impl Future<Output = T>) -> T {
        let Some(mut events) = self.events.take() else {
            return call.await;
        };
        tokio::pin!(call);
        let out = loop {
            tokio::select! {
                biased;
                out = &mut call => break out,
                Some(event) = events.recv() => self.on_event(event),
            }
        };
        self.events = Some(events);
        out
    }

    /// Handles every event already waiting, so that their results travel in one batch.
    fn take_waiting_events(&mut self) {
        while let Some(Ok(event)) = self.events.as_mut().map(|rx| rx.try_recv()) {
            self.on_event(event);
        }
    }

    fn on_event(&mut self, event: UnitEvent) {
        self.handle_event(event);
        self.start_queued();
    }

    fn handle_event(&mut self, event: UnitEvent) {
        match event {
            UnitEvent::Improved(found) => self.on_improvement(found),
            UnitEvent::Finished(done) => self.on_finished(done),
            UnitEvent::Donated {
                lease_id,
                units,
                remaining,
                cursor,
            } => {
                tracing::info!("lease {lease_id}: donating {} unit(s)", units.len());
                self.outbox.push_back(Outgoing::Donate(pb::DonateRequest {
                    worker_id: self.worker_id,
                    lease_id,
                    units: units
                        .into_iter()
                        .map(|u| pb::UnitSpec {
                            label: u.label,
                            payload: u.payload,
                        })
                        .collect(),
                    remaining_payload: remaining,
                    remaining_cursor: cursor,
                }));
            }
        }
    }

    fn on_improvement(&mut self, found: FoundImprovement) {
        let solution_json = found.found.solution.to_string();
        let solver_version = self
            .running
            .get(&found.lease_id)
            .map_or(0, |unit| solver_version_of(&unit.grant.problem));
        self.outbox
            .push_back(Outgoing::Improvement(pb::ImprovementRequest {
                worker_id: self.worker_id,
                lease_id: found.lease_id,
                campaign_id: found.campaign_id,
                solution_json,
                claimed_score: found.found.score,
                solver_version,
            }));
    }

    fn on_finished(&mut self, done: Finished) {
        let Some(unit) = self.running.remove(&done.lease_id) else {
            return;
        };
        let nodes = unit.ctx.nodes();
        let mut result = pb::UnitResult {
            nodes,
            cpu_seconds: done.cpu_seconds,
            wall_seconds: done.wall_seconds,
            solver_version: solver_version_of(&unit.grant.problem),
            ..Default::default()
        };
        match done.outcome {
            Ok(UnitOutcome::Stopped) => {
                if !unit.cancelled {
                    // Stopped for shutdown: hand the lease back with its checkpoint.
                    self.outbox.push_back(Outgoing::Release(pb::ReleaseRequest {
                        worker_id: self.worker_id,
                        lease_id: done.lease_id,
                        cursor: unit.ctx.last_checkpoint().unwrap_or_default(),
                        nodes,
                        cpu_seconds: done.cpu_seconds,
                    }));
                }
                return;
            }
            Ok(UnitOutcome::Count(count)) => result.count = count.to_string(),
            Ok(UnitOutcome::Searched { best, hits }) => {
                // The claim: nothing in the unit beats the bound it was pruning against.
                result.claims = true;
                result.claim_bound = done.claim_bound;
                if let Some(best) = best {
                    result.best_solution_json = best.solution.to_string();
                    result.best_score = best.score;
                }
                result.samples = hits.iter().map(|h| h.to_string()).collect();
            }
            Ok(UnitOutcome::Samples(samples)) => {
                result.samples = samples.iter().map(|s| s.to_string()).collect();
            }
            Ok(UnitOutcome::Expanded { best, children }) => {
                result.claims = true;
                result.claim_bound = done.claim_bound;
                if let Some(best) = best {
                    result.best_solution_json = best.solution.to_string();
                    result.best_score = best.score;
                }
                result.children = children
                    .into_iter()
                    .map(|child| pb::UnitSpec {
                        label: child.label,
                        payload: child.payload,
                    })
                    .collect();
            }
            Err(e) => {
                tracing::error!("lease {}: {e}", done.lease_id);
                result.error = e.to_string();
            }
        }
        self.pace.unit_took(done.wall_seconds);
        tracing::info!(
            "lease {} finished in {:.3}s wall, {:.3}s CPU",
            done.lease_id,
            done.wall_seconds,
            done.cpu_seconds
        );
        self.outbox
            .push_back(Outgoing::Complete(pb::CompleteRequest {
                worker_id: self.worker_id,
                lease_id: done.lease_id,
                result: Some(result),
                unit_payload: unit.ctx.payload(),
            }));
    }

    async fn shut_down(&mut self) {
        tracing::info!(
            "shutting down: checkpointing {} running unit(s)",
            self.running.len()
        );
        for unit in self.running.values() {
            unit.ctx.request_stop();
        }
        self.release_queued();
        let stop_by = Instant::now() + STOP_GRACE;
        while !self.running.is_empty() {
            match tokio::time::timeout_at(stop_by.into(), next_event(&mut self.events)).await {
                Ok(Some(event)) => self.on_event(event),
                _ => break,
            }
        }
        // Units that did not stop in time are handed back with their last checkpoint.
        let stuck: Vec<i64> = self.running.keys().copied().collect();
        for lease_id in stuck {
            if let Some(unit) = self.running.remove(&lease_id) {
                if !unit.cancelled {
                    self.outbox.push_back(Outgoing::Release(pb::ReleaseRequest {
                        worker_id: self.worker_id,
                        lease_id,
                        cursor: unit.ctx.last_checkpoint().unwrap_or_default(),
                        nodes: unit.ctx.nodes(),
                        cpu_seconds: 0.0,
                    }));
                }
            }
        }
        self.take_waiting_events();
        if self.worker_id != 0 {
            self.next_contact = Instant::now();
            let _ = tokio::time::timeout(DELIVERY_GRACE, self.deliver()).await;
        }
        if !self.outbox.is_empty() {
            tracing::warn!(
                "{} message(s) could not be delivered before exit",
                self.outbox.len()
            );
        }
        self.summary.undelivered = self.outbox.len();
        if let Some(watch) = self.bound_watch.take() {
            watch.abort();
        }
    }
}

/// The next unit event, or never when the receiver is lent out or closed.
async fn next_event(events: &mut Option<mpsc::UnboundedReceiver<UnitEvent>>) -> Option<UnitEvent> {
    match events {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// Follows the coordinator's bound stream for as long as the worker runs, reconnecting
/// with backoff: a new incumbent found anywhere reaches this worker's units in milliseconds.
async fn watch_bounds(client: Client, worker_id: i64, bounds: Bounds) {
    let mut backoff = MIN_BACKOFF;
    loop {
        match client.watch_bounds(worker_id).await {
            Ok(mut stream) => {
                backoff = MIN_BACKOFF;
                while let Ok(Some(update)) = stream.message().await {
                    for bound in update.bounds {
                        bounds.offer(bound.campaign_id, bound.bound);
                    }
                }
            }
            Err(status) => tracing::debug!("bound stream: {}", status.message()),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// This worker's solver version for `problem` (0 when it does not know the problem), sent
/// with every result so the coordinator can label what each solver version produced.
fn solver_version_of(problem: &str) -> u32 {
    registry::lookup(problem).map_or(0, |entry| entry.solver_version)
}
