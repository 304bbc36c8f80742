//! An in-memory coordinator for driving the agent in tests: it leases the units of one real
//! campaign from the problem registry (an `exec` campaign's bundles come from the exec
//! fixtures' cache, see [`Fake::exec`]), records every call, and can be switched into failure
//! modes (unreachable, banned, forgetting the worker, no batched completions, failing the
//! next batches). Tests wait on its state with [`Fake::wait_for`].

pub mod agent;

use grind_proto::refusal::refusal_status;
use grind_proto::v1 as pb;
use grind_proto::v1::refusal::Kind;
use grind_shared::problem::UnitSpec;
use grind_shared::problems::exec::fixtures;
use grind_shared::registry;
use grind_worker::coordinator::{BoundUpdates, Coordinator};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tonic::{Code, Status};

/// One campaign's unit as the fake tracks it.
#[derive(Clone, Debug)]
pub struct Unit {
    pub spec: UnitSpec,
    pub cursor: Vec<u8>,
}

/// A lease as the fake tracks it.
#[derive(Clone, Debug)]
pub struct Lease {
    pub worker_id: i64,
    pub unit_id: i64,
    pub active: bool,
    pub completed: bool,
}

/// Everything the fake knows and recorded.
#[derive(Default)]
pub struct State {
    pub problem: String,
    pub params_json: String,
    pub units: BTreeMap<i64, Unit>,
    pub pending: VecDeque<i64>,
    pub leases: HashMap<i64, Lease>,
    next_lease: i64,
    next_worker: i64,
    /// Workers the fake knows (forgetting one makes its calls UNKNOWN_WORKER refusals).
    pub known: Vec<i64>,
    // Switches.
    pub down: bool,
    pub banned: bool,
    pub batch_unimplemented: bool,
    /// Batches to fail with UNAVAILABLE before taking one.
    pub fail_batches: u32,
    // Records.
    pub registrations: Vec<pb::RegisterRequest>,
    /// Accepted results: lease id -> count.
    pub accepted: BTreeMap<i64, String>,
    /// Results acknowledged as duplicates (lease ids).
    pub duplicates: Vec<i64>,
    /// Results refused (lease id, code).
    pub refused: Vec<(i64, Code)>,
    pub single_completes: u64,
    pub batch_calls: u64,
    pub batches_failed: u64,
    /// Completions (lease ids) the worker tried to deliver while the fake was down.
    pub attempted_while_down: Vec<i64>,
    pub releases: Vec<pb::ReleaseRequest>,
    pub heartbeats: Vec<pb::HeartbeatRequest>,
    /// Accepted results as sent (lease id -> result).
    pub results: BTreeMap<i64, pb::UnitResult>,
}

impl State {
    /// Whether every unit has an accepted result.
    pub fn all_done(&self) -> bool {
        let done: std::collections::BTreeSet<i64> = self
            .accepted
            .keys()
            .map(|lease| self.leases[lease].unit_id)
            .collect();
        done.len() == self.units.len()
    }

    /// The sum of the accepted counts.
    pub fn total(&self) -> u64 {
        self.accepted
            .values()
            .map(|c| c.parse::<u64>().unwrap())
            .sum()
    }

    /// Accepted results per unit.
    pub fn accepted_per_unit(&self) -> BTreeMap<i64, usize> {
        let mut per_unit = BTreeMap::new();
        for lease in self.accepted.keys() {
            *per_unit.entry(self.leases[lease].unit_id).or_insert(0) += 1;
        }
        per_unit
    }

    fn admit(&self, worker_id: i64) -> Result<(), Status> {
        if self.down {
            return Err(Status::unavailable("the fake coordinator is down"));
        }
        if self.banned {
            return Err(refusal_status(
                Code::PermissionDenied,
                format!("worker {worker_id} is banned"),
                Kind::Banned,
                worker_id,
            ));
        }
        if !self.known.contains(&worker_id) {
            return Err(refusal_status(
                Code::NotFound,
                format!("unknown worker {worker_id}: register first"),
                Kind::UnknownWorker,
                worker_id,
            ));
        }
        Ok(())
    }

    fn grant(&mut self, worker_id: i64, capacity: u32) -> pb::LeaseReply {
        let mut leases = Vec::new();
        while leases.len() < capacity as usize {
            let Some(unit_id) = self.pending.pop_front() else {
                break;
            };
            self.next_lease += 1;
            let lease_id = self.next_lease;
            self.leases.insert(
                lease_id,
                Lease {
                    worker_id,
                    unit_id,
                    active: true,
                    completed: false,
                },
            );
            let unit = &self.units[&unit_id];
            leases.push(pb::LeaseGrant {
                lease_id,
                campaign_id: 1,
                problem: self.problem.clone(),
                params_json: self.params_json.clone(),
                unit_id,
                unit_label: unit.spec.label.clone(),
                unit_payload: unit.spec.payload.clone(),
                cursor: unit.cursor.clone(),
                solver_version: registry::lookup(&self.problem).unwrap().solver_version,
                ..Default::default()
            });
        }
        pb::LeaseReply {
            leases,
            retry_after_ms: 20,
            ..Default::default()
        }
    }

    fn settle(
        &mut self,
        worker_id: i64,
        req: &pb::CompleteRequest,
    ) -> Result<pb::CompleteReply, Status> {
        if req.worker_id != worker_id {
            return Err(Status::invalid_argument(format!(
                "a completion for worker {} inside worker {worker_id}'s call",
                req.worker_id
            )));
        }
        let Some(lease) = self.leases.get_mut(&req.lease_id) else {
            return Err(Status::not_found(format!("unknown lease {}", req.lease_id)));
        };
        if lease.worker_id != worker_id {
            return Err(Status::permission_denied("someone else's lease"));
        }
        if lease.completed {
            self.duplicates.push(req.lease_id);
            return Ok(pb::CompleteReply {
                accepted: false,
                duplicate: true,
                detail: "already finished".into(),
                ..Default::default()
            });
        }
        if !lease.active {
            return Err(Status::failed_precondition("the lease has ended"));
        }
        let result = req.result.clone().unwrap_or_default();
        if !result.error.is_empty() {
            return Err(Status::invalid_argument(result.error));
        }
        lease.active = false;
        lease.completed = true;
        self.accepted.insert(req.lease_id, result.count.clone());
        self.results.insert(req.lease_id, result);
        Ok(pb::CompleteReply {
            accepted: true,
            duplicate: false,
            detail: String::new(),
            ..Default::default()
        })
    }
}

/// The fake coordinator; clones share one state.
#[derive(Clone)]
pub struct Fake {
    state: Arc<Mutex<State>>,
    changed: Arc<watch::Sender<u64>>,
}

impl Fake {
    /// A fake running one campaign of `problem` with `params_json`, every unit pending.
    pub fn new(problem: &str, params_json: &str) -> Fake {
        let instance = registry::instantiate(problem, params_json).expect("a valid campaign");
        let mut state = State {
            problem: problem.into(),
            params_json: params_json.into(),
            ..Default::default()
        };
        let mut cursor = None;
        loop {
            let batch = instance.split(cursor.as_deref(), 1000).expect("split");
            for spec in batch.units {
                let id = state.units.len() as i64 + 1;
                state.units.insert(
                    id,
                    Unit {
                        spec,
                        cursor: Vec::new(),
                    },
                );
                state.pending.push_back(id);
            }
            match batch.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        Fake {
            state: Arc::new(Mutex::new(state)),
            changed: Arc::new(watch::channel(0).0),
        }
    }

    /// A fake running one `exec` campaign (a user's solver) of the exec fixtures' toy
    /// problem: `solver` (a shell script) with `extra` parameters (see
    /// [`fixtures::toy_params`]). The fixtures' bundle cache becomes this process's bundle
    /// source, so the worker under test finds the campaign's bundles there, as a worker
    /// finds them in its cache once fetched from the coordinator.
    #[allow(dead_code)] // exec_duties.rs only
    pub fn exec(solver: &str, extra: serde_json::Value) -> Fake {
        let params = fixtures::toy_params(solver, extra);
        Fake::new("exec", &params.to_string())
    }

    /// Changes the state (and wakes the waiters).
    pub fn with<T>(&self, change: impl FnOnce(&mut State) -> T) -> T {
        let out = change(&mut self.state.lock().unwrap());
        self.changed.send_modify(|v| *v += 1);
        out
    }

    /// Reads the state.
    pub fn read<T>(&self, look: impl FnOnce(&State) -> T) -> T {
        look(&self.state.lock().unwrap())
    }

    /// Waits until `cond` holds, at most `timeout`; false if it never did.
    pub async fn wait_for(&self, timeout: Duration, cond: impl Fn(&State) -> bool) -> bool {
        let mut rx = self.changed.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if self.read(&cond) {
                return true;
            }
            if tokio::time::timeout_at(deadline, rx.changed())
                .await
                .is_err()
            {
                return self.read(&cond);
            }
        }
    }

    /// Forgets worker `worker_id` as a coordinator with a new store would: its calls are
    /// refused as UNKNOWN_WORKER and its active leases go back to pending.
    pub fn forget(&self, worker_id: i64) {
        self.with(|s| {
            s.known.retain(|&w| w != worker_id);
            let mut back: Vec<i64> = s
                .leases
                .values_mut()
                .filter(|l| l.worker_id == worker_id && l.active)
                .map(|l| {
                    l.active = false;
                    l.unit_id
                })
                .collect();
            back.sort();
            s.pending.extend(back);
        });
    }
}

impl Coordinator for Fake {
    async fn register(&self, req: pb::RegisterRequest) -> Result<pb::RegisterReply, Status> {
        self.with(|s| {
            if s.down {
                return Err(Status::unavailable("the fake coordinator is down"));
            }
            if s.banned {
                return Err(refusal_status(
                    Code::PermissionDenied,
                    "banned",
                    Kind::Banned,
                    req.previous_worker_id,
                ));
            }
            s.next_worker += 1;
            let worker_id = s.next_worker;
            s.known.push(worker_id);
            s.registrations.push(req);
            Ok(pb::RegisterReply {
                worker_id,
                lease_ttl_ms: 60_000,
                heartbeat_interval_ms: 100,
                coordinator_version: "fake".into(),
            })
        })
    }

    async fn lease(&self, req: pb::LeaseRequest) -> Result<pb::LeaseReply, Status> {
        self.with(|s| {
            s.admit(req.worker_id)?;
            Ok(s.grant(req.worker_id, req.capacity))
        })
    }

    async fn heartbeat(&self, req: pb::HeartbeatRequest) -> Result<pb::HeartbeatReply, Status> {
        self.with(|s| {
            s.admit(req.worker_id)?;
            s.heartbeats.push(req);
            Ok(pb::HeartbeatReply::default())
        })
    }

    async fn improve(&self, _: pb::ImprovementRequest) -> Result<pb::ImprovementReply, Status> {
        Err(Status::unimplemented("the fake takes no improvements"))
    }

    async fn complete(&self, req: pb::CompleteRequest) -> Result<pb::CompleteReply, Status> {
        self.with(|s| {
            if s.down {
                s.attempted_while_down.push(req.lease_id);
            }
            s.admit(req.worker_id)?;
            s.single_completes += 1;
            let reply = s.settle(req.worker_id, &req);
            if let Err(status) = &reply {
                s.refused.push((req.lease_id, status.code()));
            }
            reply
        })
    }

    async fn complete_batch(
        &self,
        req: pb::CompleteBatchRequest,
    ) -> Result<pb::CompleteBatchReply, Status> {
        self.with(|s| {
            s.batch_calls += 1;
            if s.down {
                s.attempted_while_down
                    .extend(req.completions.iter().map(|c| c.lease_id));
            }
            s.admit(req.worker_id)?;
            if s.batch_unimplemented {
                return Err(Status::unimplemented("no CompleteBatch here"));
            }
            if s.fail_batches > 0 {
                s.fail_batches -= 1;
                s.batches_failed += 1;
                return Err(Status::unavailable("the batch was lost"));
            }
            let outcomes = req
                .completions
                .iter()
                .map(|c| match s.settle(req.worker_id, c) {
                    Ok(reply) => pb::CompleteOutcome {
                        reply: Some(reply),
                        ..Default::default()
                    },
                    Err(status) => {
                        s.refused.push((c.lease_id, status.code()));
                        pb::CompleteOutcome {
                            reply: None,
                            error_code: status.code() as i32,
                            error: status.message().to_string(),
                        }
                    }
                })
                .collect();
            let lease =
                (req.lease_capacity > 0).then(|| s.grant(req.worker_id, req.lease_capacity));
            Ok(pb::CompleteBatchReply { outcomes, lease })
        })
    }

    async fn donate(&self, _: pb::DonateRequest) -> Result<pb::DonateReply, Status> {
        Err(Status::unimplemented("the fake takes no donations"))
    }

    async fn release(&self, req: pb::ReleaseRequest) -> Result<pb::ReleaseReply, Status> {
        self.with(|s| {
            s.admit(req.worker_id)?;
            let Some(lease) = s.leases.get_mut(&req.lease_id) else {
                return Err(Status::not_found("unknown lease"));
            };
            if lease.active {
                lease.active = false;
                let unit_id = lease.unit_id;
                if let Some(unit) = s.units.get_mut(&unit_id) {
                    unit.cursor = req.cursor.clone();
                }
                s.pending.push_back(unit_id);
            }
            s.releases.push(req);
            Ok(pb::ReleaseReply {})
        })
    }

    async fn watch_bounds(&self, _: i64) -> Result<BoundUpdates, Status> {
        Ok(Box::pin(tokio_stream::pending()))
    }
}
