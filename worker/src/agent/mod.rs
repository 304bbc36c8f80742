//! The worker's IO loop: registers, leases units, runs them on the rayon pool, heartbeats,
//! reports improvements and delivers results — holding them while the coordinator is away —
//! and on shutdown checkpoints and hands its leases back.
//!
//! The loop is here; each job has its module: `contact` (backoff and refusals),
//! `register` (identity and the bound stream), `leasing` (asking for work, the queue of
//! leased units, starting them), `pace` (how deep that queue is), `problems` (the
//! problem cache), `runner` (the rayon pool: CPU accounting, panic capture), `unit_events`
//! (what running units report), `results` (a finished unit as its wire result),
//! `outbox` (ordered delivery, batched with a fallback to single calls), `heartbeat`,
//! `pause` (`--idle-only`) and `shutdown` (checkpoint and hand back). The coordinator is
//! any [`Coordinator`]: the gRPC [`Client`] in production, an in-memory fake in tests.

mod contact;
mod heartbeat;
mod leasing;
mod outbox;
mod pace;
mod pause;
mod problems;
mod register;
mod results;
mod runner;
mod shutdown;
mod unit_events;

use grind_proto::v1 as pb;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

use crate::client::Client;
use crate::context::{Bounds, UnitContext, UnitEvent};
use crate::coordinator::Coordinator;
use crate::events::{EventLog, WorkerEvent};
use crate::idle::IdleMonitor;
use crate::{WorkerConfig, WorkerError, WorkerSummary};
use contact::Contact;
use outbox::Outbox;
use pace::Pace;
use problems::ProblemCache;
use runner::Runner;

/// A unit running on the pool.
struct Running {
    grant: pb::LeaseGrant,
    ctx: Arc<UnitContext>,
    /// The coordinator took the lease back: its end is reported to nobody.
    cancelled: bool,
}

/// One worker's state, driven by [`run_with`]'s loop.
struct Agent<C: Coordinator> {
    config: WorkerConfig,
    client: C,
    /// The identity the coordinator gave (0 until registered, and after it forgot us).
    worker_id: i64,
    summary: WorkerSummary,
    /// `--events`: what the coordinator said, for harnesses.
    log: EventLog,
    contact: Contact,
    heartbeat_every: Duration,
    next_heartbeat: Instant,
    next_lease: Instant,
    runner: Runner,
    problems: ProblemCache,
    running: HashMap<i64, Running>,
    /// Leases granted ahead of free threads, so a finishing unit's thread never waits on a
    /// round trip to the coordinator.
    queued: VecDeque<pb::LeaseGrant>,
    /// The highest lease id received (heartbeats report it, so that the coordinator can take
    /// back leases granted in a reply that never arrived).
    newest_lease: i64,
    /// What sizes the lease queue: measured unit and round-trip times.
    pace: Pace,
    outbox: Outbox,
    bounds: Bounds,
    bound_watch: Option<tokio::task::JoinHandle<()>>,
    /// `--idle-only`: the load monitor and when it samples next.
    idle: Option<(IdleMonitor, Instant)>,
    /// True while `--idle-only` holds work back because the machine is busy.
    paused: bool,
    /// Campaigns the coordinator said this worker may not run, already logged.
    skips_logged: std::collections::HashSet<i64>,
    /// Events from the running units. Handled while calls are in flight too, so that a
    /// finished unit's thread starts its queued unit without waiting for a round trip.
    events: Option<mpsc::UnboundedReceiver<UnitEvent>>,
}

/// Runs a worker against the coordinator at `config.coordinator` until `shutdown` resolves.
pub async fn run(
    config: WorkerConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<WorkerSummary, WorkerError> {
    let client = Client::new(&config.coordinator, &config.access)?;
    run_with(config, client, shutdown).await
}

/// Runs a worker against `coordinator` until `shutdown` resolves, the `--max-hours` budget is
/// spent, or the coordinator refuses it for good ([`WorkerError::Refused`]).
pub async fn run_with<C: Coordinator>(
    config: WorkerConfig,
    coordinator: C,
    shutdown: impl Future<Output = ()>,
) -> Result<WorkerSummary, WorkerError> {
    let (runner, events_rx) = Runner::new(config.threads)?;
    let log = match &config.events {
        Some(path) => EventLog::open(path)?,
        None => EventLog::default(),
    };
    let now = Instant::now();
    let mut agent = Agent {
        config,
        client: coordinator,
        worker_id: 0,
        summary: WorkerSummary::default(),
        log,
        contact: Contact::new(now),
        heartbeat_every: Duration::from_secs(2),
        next_heartbeat: now,
        next_lease: now,
        runner,
        problems: ProblemCache::default(),
        running: HashMap::new(),
        queued: VecDeque::new(),
        newest_lease: 0,
        pace: Pace::default(),
        outbox: Outbox::default(),
        bounds: Bounds::default(),
        bound_watch: None,
        idle: None,
        paused: false,
        skips_logged: Default::default(),
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
        if agent.contact.locked_out().is_some() {
            break;
        }
        agent.watch_load();
        if agent.worker_id == 0 && agent.contact.reachable() {
            // Nothing is held before registering: a stop need not wait for the call.
            tokio::select! {
                _ = &mut shutdown => break,
                _ = agent.register() => {}
            }
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
    agent.log.emit(WorkerEvent::Stopped {
        worker_id: agent.summary.worker_id,
        units_done: agent.summary.units_done,
        refused: agent.summary.refused,
        undelivered: agent.summary.undelivered,
    });
    match agent.contact.locked_out() {
        Some(reason) => Err(WorkerError::Refused(reason.to_string())),
        None => Ok(agent.summary),
    }
}

impl<C: Coordinator> Agent<C> {
    fn next_wakeup(&self) -> Instant {
        let mut wake = self.next_heartbeat;
        if let Some((_, next)) = &self.idle {
            wake = wake.min(*next);
        }
        if self.worker_id == 0 || !self.outbox.is_empty() {
            wake = wake.min(self.contact.next());
        }
        if self.free_slots() > 0 {
            wake = wake.min(self.next_lease.max(self.contact.next()));
        }
        wake.max(Instant::now() + Duration::from_millis(1))
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
}

/// The next unit event, or never when the receiver is lent out or closed.
async fn next_event(events: &mut Option<mpsc::UnboundedReceiver<UnitEvent>>) -> Option<UnitEvent> {
    match events {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}
