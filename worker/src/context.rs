//! What a running unit shares with the worker's IO loop: the freshest bound, stop and split
//! requests, progress, the latest checkpoint, and improvements to report.

use grind_shared::problem::{
    Objective, ProblemError, Scored, SolveContext, UnitOutcome, UnitSpec, MAX_CHECKPOINT_BYTES,
    MAX_PROVENANCE_BYTES,
};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// A campaign's pruning bound as this worker knows it; shared by all its units. Unknown is
/// held as the worst possible value (i64::MIN for max, i64::MAX for min), so tightening is
/// one atomic fetch_max / fetch_min.
pub struct SharedBound {
    objective: Objective,
    value: AtomicI64,
}

impl SharedBound {
    /// A bound for `objective`, starting at `initial`.
    pub fn new(objective: Objective, initial: Option<i64>) -> Self {
        let unknown = match objective {
            Objective::Min => i64::MAX,
            _ => i64::MIN,
        };
        let bound = SharedBound {
            objective,
            value: AtomicI64::new(unknown),
        };
        if let Some(v) = initial {
            bound.offer(v);
        }
        bound
    }

    /// The bound, if any.
    pub fn get(&self) -> Option<i64> {
        let v = self.value.load(Ordering::Acquire);
        match self.objective {
            Objective::Max if v != i64::MIN => Some(v),
            Objective::Min if v != i64::MAX => Some(v),
            _ => None,
        }
    }

    /// The tighter of this bound and `other` (a unit's view: its own claims and the
    /// campaign's verified bound).
    pub fn tighter(&self, other: Option<i64>) -> Option<i64> {
        match (self.get(), other) {
            (Some(a), Some(b)) => Some(match self.objective {
                Objective::Min => a.min(b),
                _ => a.max(b),
            }),
            (a, b) => a.or(b),
        }
    }

    /// Tightens the bound when `candidate` is better (never loosens it).
    pub fn offer(&self, candidate: i64) {
        match self.objective {
            Objective::Max => {
                self.value.fetch_max(candidate, Ordering::AcqRel);
            }
            Objective::Min => {
                self.value.fetch_min(candidate, Ordering::AcqRel);
            }
            Objective::Count | Objective::Sample => {}
        }
    }
}

/// The bounds of every campaign this worker has run units of, shared with the task that
/// watches the coordinator's bound stream.
#[derive(Clone, Default)]
pub struct Bounds(Arc<Mutex<std::collections::HashMap<i64, Arc<SharedBound>>>>);

impl Bounds {
    /// The shared bound of a campaign, created on first use.
    pub fn for_campaign(&self, campaign_id: i64, objective: Objective) -> Arc<SharedBound> {
        self.0
            .lock()
            .expect("poisoned")
            .entry(campaign_id)
            .or_insert_with(|| Arc::new(SharedBound::new(objective, None)))
            .clone()
    }

    /// Tightens a campaign's bound if this worker knows the campaign.
    pub fn offer(&self, campaign_id: i64, value: i64) {
        let known = self.0.lock().expect("poisoned").get(&campaign_id).cloned();
        if let Some(bound) = known {
            bound.offer(value);
        }
    }
}

/// What a running unit tells the IO loop, in the order it happened (one channel, so a
/// donation always reaches the coordinator before the result that depends on it).
#[derive(Debug)]
pub enum UnitEvent {
    /// A better solution, to report at once.
    Improved(FoundImprovement),
    /// Part of the unit handed off.
    Donated {
        /// The lease it was donated from.
        lease_id: i64,
        /// The new units.
        units: Vec<UnitSpec>,
        /// What the donor keeps.
        remaining: Vec<u8>,
        /// The donor's latest checkpoint, valid for `remaining`.
        cursor: Vec<u8>,
    },
    /// The solve ended.
    Finished(Finished),
}

/// A unit's end.
#[derive(Debug)]
pub struct Finished {
    /// Its lease.
    pub lease_id: i64,
    /// How it ended.
    pub outcome: Result<UnitOutcome, ProblemError>,
    /// CPU seconds used.
    pub cpu_seconds: f64,
    /// Wall seconds used.
    pub wall_seconds: f64,
    /// The bound the solve was pruning against when it returned (its claim: nothing better
    /// in the unit). Read on the solving thread before this is sent, so every improvement
    /// that raised it was sent before it (see [`UnitContext`]'s `improve`).
    pub claim_bound: Option<i64>,
}

/// An improvement found by a unit, to be reported to the coordinator.
#[derive(Debug)]
pub struct FoundImprovement {
    /// The lease it was found under.
    pub lease_id: i64,
    /// The campaign it improves.
    pub campaign_id: i64,
    /// The solution and its score.
    pub found: Scored,
}

/// The state one running unit shares with the IO loop.
pub struct UnitContext {
    lease_id: i64,
    campaign_id: i64,
    resume: Option<Vec<u8>>,
    /// The campaign's bound on this worker: tightened only by what the coordinator says
    /// (its bound stream and its replies), so every unit prunes against verified scores.
    bound: Arc<SharedBound>,
    /// This unit's own claims, before the coordinator has checked them: the unit prunes
    /// against them, the worker's other units do not (a held or refused claim must not keep
    /// them from reporting solutions below it).
    own: SharedBound,
    stop: AtomicBool,
    split: AtomicBool,
    nodes: AtomicU64,
    fraction: Mutex<Option<f64>>,
    checkpoint: Mutex<Option<Vec<u8>>>,
    checkpoint_dirty: AtomicBool,
    payload: Mutex<Vec<u8>>,
    /// The solver's last provenance record (JSON), sent with the unit's result.
    provenance: Mutex<Option<String>>,
    /// A checkpoint over [`MAX_CHECKPOINT_BYTES`] was refused (logged once per unit).
    oversize_logged: AtomicBool,
    /// CPU of the processes the solve ran, in nanoseconds ([`SolveContext::child_cpu`]).
    child_cpu_nanos: AtomicU64,
    events: mpsc::UnboundedSender<UnitEvent>,
}

impl UnitContext {
    /// Context for lease `lease_id` of `campaign_id`.
    pub fn new(
        lease_id: i64,
        campaign_id: i64,
        payload: Vec<u8>,
        resume: Option<Vec<u8>>,
        bound: Arc<SharedBound>,
        events: mpsc::UnboundedSender<UnitEvent>,
    ) -> Self {
        UnitContext {
            lease_id,
            campaign_id,
            resume,
            own: SharedBound::new(bound.objective, None),
            bound,
            stop: AtomicBool::new(false),
            split: AtomicBool::new(false),
            nodes: AtomicU64::new(0),
            fraction: Mutex::new(None),
            checkpoint: Mutex::new(None),
            checkpoint_dirty: AtomicBool::new(false),
            payload: Mutex::new(payload),
            provenance: Mutex::new(None),
            oversize_logged: AtomicBool::new(false),
            child_cpu_nanos: AtomicU64::new(0),
            events,
        }
    }

    /// The solver's last provenance record (JSON), if it made one.
    pub fn provenance_json(&self) -> Option<String> {
        self.provenance.lock().expect("poisoned").clone()
    }

    /// CPU seconds of the processes the solve ran and reaped (its own thread's not included).
    pub fn child_cpu_seconds(&self) -> f64 {
        self.child_cpu_nanos.load(Ordering::Acquire) as f64 * 1e-9
    }

    /// Asks the solver to checkpoint and stop.
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    /// Whether a stop was asked for.
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Passes on the coordinator's wish that this unit donate work.
    pub fn request_split(&self, wanted: bool) {
        self.split.store(wanted, Ordering::Release);
    }

    /// Nodes done so far.
    pub fn nodes(&self) -> u64 {
        self.nodes.load(Ordering::Acquire)
    }

    /// Fraction done, when the solver reported one.
    pub fn fraction(&self) -> Option<f64> {
        *self.fraction.lock().expect("poisoned")
    }

    /// The checkpoint taken since the last call, if any.
    pub fn take_new_checkpoint(&self) -> Option<Vec<u8>> {
        if self.checkpoint_dirty.swap(false, Ordering::AcqRel) {
            self.checkpoint.lock().expect("poisoned").clone()
        } else {
            None
        }
    }

    /// The part of the unit this solve still covers (the leased payload, or what remained
    /// after donations).
    pub fn payload(&self) -> Vec<u8> {
        self.payload.lock().expect("poisoned").clone()
    }

    /// Sends an event to the IO loop.
    pub fn send(&self, event: UnitEvent) {
        let _ = self.events.send(event);
    }

    /// The latest checkpoint, new or not.
    pub fn last_checkpoint(&self) -> Option<Vec<u8>> {
        self.checkpoint.lock().expect("poisoned").clone()
    }
}

impl SolveContext for UnitContext {
    fn resume_cursor(&self) -> Option<&[u8]> {
        self.resume.as_deref()
    }

    fn bound(&self) -> Option<i64> {
        self.own.tighter(self.bound.get())
    }

    fn improve(&self, found: Scored) {
        // Reported before the unit's bound moves: a unit finishing with a claim at this
        // bound is then reported after this improvement, so the coordinator never sees a
        // claim against a bound it has not heard of. Only this unit's own bound moves: the
        // campaign's moves when the coordinator has checked the claim (its reply's best).
        let score = found.score;
        self.send(UnitEvent::Improved(FoundImprovement {
            lease_id: self.lease_id,
            campaign_id: self.campaign_id,
            found,
        }));
        self.own.offer(score);
    }

    fn progress(&self, nodes: u64, fraction: Option<f64>) {
        self.nodes.store(nodes, Ordering::Release);
        *self.fraction.lock().expect("poisoned") = fraction;
    }

    fn checkpoint(&self, cursor: Vec<u8>) {
        if cursor.len() > MAX_CHECKPOINT_BYTES {
            if !self.oversize_logged.swap(true, Ordering::AcqRel) {
                tracing::error!(
                    "lease {}: the solver's checkpoint is {} bytes, more than the {} a \
                     checkpoint may have; it is not kept (the unit resumes from its previous \
                     checkpoint)",
                    self.lease_id,
                    cursor.len(),
                    MAX_CHECKPOINT_BYTES
                );
            }
            return;
        }
        *self.checkpoint.lock().expect("poisoned") = Some(cursor);
        self.checkpoint_dirty.store(true, Ordering::Release);
    }

    fn stop_requested(&self) -> bool {
        self.stopping()
    }

    fn split_requested(&self) -> bool {
        self.split.load(Ordering::Acquire) && !self.stopping()
    }

    fn provenance(&self, record: serde_json::Value) {
        let mut text = record.to_string();
        if text.len() > MAX_PROVENANCE_BYTES {
            tracing::warn!(
                "lease {}: the solver's provenance record is {} bytes, more than the {} kept; \
                 a marker saying so is sent instead",
                self.lease_id,
                text.len(),
                MAX_PROVENANCE_BYTES
            );
            text = serde_json::json!({
                "provenance_dropped": format!(
                    "the solver's record was {} bytes, more than the {MAX_PROVENANCE_BYTES} kept",
                    text.len()
                )
            })
            .to_string();
        }
        *self.provenance.lock().expect("poisoned") = Some(text);
    }

    fn child_cpu(&self, seconds: f64) {
        if seconds.is_finite() && seconds > 0.0 {
            let nanos = (seconds * 1e9).min(u64::MAX as f64) as u64;
            self.child_cpu_nanos.fetch_add(nanos, Ordering::AcqRel);
        }
    }

    fn donate(&self, units: Vec<UnitSpec>, remaining: Vec<u8>) -> bool {
        if units.is_empty() || remaining.is_empty() || self.stopping() {
            return false;
        }
        *self.payload.lock().expect("poisoned") = remaining.clone();
        self.split.store(false, Ordering::Release);
        let cursor = self.last_checkpoint().unwrap_or_default();
        self.send(UnitEvent::Donated {
            lease_id: self.lease_id,
            units,
            remaining,
            cursor,
        });
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_only_tighten() {
        let max = SharedBound::new(Objective::Max, None);
        assert_eq!(max.get(), None);
        max.offer(-5);
        assert_eq!(max.get(), Some(-5));
        max.offer(-7);
        assert_eq!(max.get(), Some(-5));
        max.offer(3);
        assert_eq!(max.get(), Some(3));
        let min = SharedBound::new(Objective::Min, Some(10));
        min.offer(12);
        assert_eq!(min.get(), Some(10));
        min.offer(4);
        assert_eq!(min.get(), Some(4));
    }

    fn context() -> UnitContext {
        context_sharing(Arc::new(SharedBound::new(Objective::Max, None)))
    }

    fn context_sharing(bound: Arc<SharedBound>) -> UnitContext {
        let (events, _) = mpsc::unbounded_channel();
        UnitContext::new(1, 1, Vec::new(), None, bound, events)
    }

    fn scored(score: i64) -> Scored {
        Scored {
            solution: serde_json::json!({}),
            score,
        }
    }

    #[test]
    fn an_unchecked_claim_bounds_its_own_unit_only() {
        let campaign = Arc::new(SharedBound::new(Objective::Max, Some(10)));
        let (claimant, other) = (
            context_sharing(campaign.clone()),
            context_sharing(campaign.clone()),
        );
        claimant.improve(scored(50));
        assert_eq!(claimant.bound(), Some(50));
        assert_eq!(
            other.bound(),
            Some(10),
            "a claim not yet checked is not shared"
        );
        // The coordinator's reply (or bound stream) carries the checked best to every unit.
        campaign.offer(30);
        assert_eq!((claimant.bound(), other.bound()), (Some(50), Some(30)));
        campaign.offer(70);
        assert_eq!((claimant.bound(), other.bound()), (Some(70), Some(70)));
        let min = SharedBound::new(Objective::Min, Some(8));
        assert_eq!(min.tighter(Some(5)), Some(5));
        assert_eq!(min.tighter(Some(9)), Some(8));
        assert_eq!(SharedBound::new(Objective::Min, None).tighter(None), None);
    }

    #[test]
    fn the_last_provenance_record_is_kept_and_an_oversized_one_is_marked() {
        let ctx = context();
        assert_eq!(ctx.provenance_json(), None);
        ctx.provenance(serde_json::json!({"exit": 1}));
        ctx.provenance(serde_json::json!({"exit": 0}));
        assert_eq!(ctx.provenance_json().as_deref(), Some(r#"{"exit":0}"#));
        ctx.provenance(serde_json::json!({"tail": "x".repeat(MAX_PROVENANCE_BYTES)}));
        let marked = ctx.provenance_json().unwrap();
        assert!(marked.contains("provenance_dropped"), "{marked}");
        assert!(marked.contains(&format!("more than the {MAX_PROVENANCE_BYTES} kept")));
    }

    #[test]
    fn an_oversized_checkpoint_is_refused_and_the_previous_one_kept() {
        let ctx = context();
        ctx.checkpoint(vec![1; 10]);
        ctx.checkpoint(vec![2; MAX_CHECKPOINT_BYTES + 1]);
        assert_eq!(ctx.last_checkpoint(), Some(vec![1; 10]));
        ctx.checkpoint(vec![3; MAX_CHECKPOINT_BYTES]);
        assert_eq!(
            ctx.last_checkpoint().map(|c| c.len()),
            Some(MAX_CHECKPOINT_BYTES)
        );
    }
}
