//! What a unit's runs mean: whether a result is still wanted, whether a unit is drawn for a
//! replica run, and the verdict on a unit's runs (done, replica wanted, agreement, dispute,
//! a refused claim, a lie). Pure: the flow that settles
//! ([`crate::scheduler::flows::complete`]) reads the runs and writes the verdict.

use grind_shared::rng::splitmix64;
use serde_json::json;

/// Whether the unit's replication draw picks it for a second run: a deterministic draw per
/// unit, so a restarted coordinator makes the same choices.
pub fn replicate(seed: i64, unit_id: i64, rate: f64) -> bool {
    if rate <= 0.0 {
        return false;
    }
    if rate >= 1.0 {
        return true;
    }
    let draw = splitmix64(seed as u64 ^ (unit_id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    (draw >> 11) as f64 / (1u64 << 53) as f64 <= rate
}

/// What a result arriving for a lease finds.
#[derive(Clone, Copy, Debug)]
pub struct Arrival<'a> {
    /// The lease's state.
    pub lease_state: &'a str,
    /// Whether the lease is a replica run.
    pub lease_replica: bool,
    /// The unit's state.
    pub unit_state: &'a str,
    /// Whether the unit waits for a replica run.
    pub replica_needed: bool,
    /// The campaign's state.
    pub campaign_state: &'a str,
}

/// What to do with an arriving result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intake {
    /// The lease already delivered its result: acknowledge, change nothing.
    Duplicate,
    /// The unit no longer needs it (finished, or not waiting for this kind of run, or its
    /// campaign cancelled): close the lease, do not count it.
    Ignore,
    /// The unit needs it.
    Take,
}

/// What to do with an arriving result. A late result from an expired or released lease is
/// still taken when the unit needs it.
pub fn intake(at: Arrival) -> Intake {
    if at.lease_state == "completed" || at.lease_state == "failed" {
        return Intake::Duplicate;
    }
    let finished = at.unit_state == "done" || at.unit_state == "failed";
    if finished || at.lease_replica != at.replica_needed || at.campaign_state == "cancelled" {
        return Intake::Ignore;
    }
    Intake::Take
}

/// The verdict on a count unit's runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CountVerdict {
    /// The only run so far, drawn for replication: run the unit again elsewhere.
    Replica,
    /// The only run, not drawn: the unit is done with it.
    Done,
    /// At least two runs agree on the value: the unit is done with them; the others lied.
    Agreed {
        /// The agreeing runs (result ids).
        agreeing: Vec<i64>,
        /// The runs with another value: (result id, value).
        liars: Vec<(i64, String)>,
    },
    /// The runs disagree: the unit is disputed and runs again.
    Disputed,
}

/// The verdict on a count unit given this run's `value`, the `earlier` runs awaiting
/// settlement and whether the unit is `drawn` for replication.
pub fn count_verdict(
    result_id: i64,
    value: &str,
    earlier: &[(i64, String)],
    drawn: bool,
) -> CountVerdict {
    if earlier.is_empty() {
        return if drawn {
            CountVerdict::Replica
        } else {
            CountVerdict::Done
        };
    }
    let agreeing: Vec<i64> = earlier
        .iter()
        .filter(|(_, v)| v == value)
        .map(|(id, _)| *id)
        .chain([result_id])
        .collect();
    if agreeing.len() >= 2 {
        let liars = earlier
            .iter()
            .filter(|(_, v)| v != value)
            .cloned()
            .collect();
        return CountVerdict::Agreed { agreeing, liars };
    }
    CountVerdict::Disputed
}

/// Whether a disputed unit with `runs` results awaiting settlement gives up (fails) rather
/// than run again.
pub fn dispute_gives_up(runs: i64, max_attempts: i64) -> bool {
    runs > max_attempts + 1
}

/// What settling a search unit needs to know of its campaign.
#[derive(Clone, Copy, Debug)]
pub struct SearchCampaign {
    /// The objective is `min`.
    pub minimise: bool,
    /// Its search is exhaustive.
    pub exhaustive: bool,
    /// The pruning bound as the coordinator knows it (its best verified score or starting
    /// bound): at least as good as any bound it has shared with a worker.
    pub bound: Option<i64>,
}

impl SearchCampaign {
    /// Why a run's claim covers less than the coordinator needs, if it does: it claims to
    /// have pruned against a bound better than any the coordinator shared (or than none, when
    /// it shared none) that is not the run's own verified find, so the solutions between
    /// the two were never looked at. `None` when the claim can be taken.
    pub fn claim_weaker_than_shared(&self, run: &Run) -> Option<String> {
        let Some(Some(claimed)) = run.claim else {
            return None;
        };
        if run.value.is_some_and(|own| !self.better(claimed, own)) {
            return None;
        }
        match self.bound {
            Some(shared) if self.better(claimed, shared) => Some(format!(
                "the run claims to have pruned against {claimed}, better than any bound the \
                 coordinator shared ({shared})"
            )),
            None => Some(format!(
                "the run claims to have pruned against {claimed}, but the coordinator shared \
                 no bound"
            )),
            Some(_) => None,
        }
    }

    /// True when score `a` is strictly better than `b`.
    pub fn better(&self, a: i64, b: i64) -> bool {
        if self.minimise {
            a < b
        } else {
            a > b
        }
    }

    /// The best of `values`, if any.
    pub fn best(&self, values: impl IntoIterator<Item = i64>) -> Option<i64> {
        values
            .into_iter()
            .reduce(|a, b| if self.better(b, a) { b } else { a })
    }
}

/// One run of a unit, as settlement sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    /// Its result id.
    pub id: i64,
    /// Its worker.
    pub worker_id: i64,
    /// Its verified best score, if it found one.
    pub value: Option<i64>,
    /// Its claim (see [`crate::scheduler::Usage::claim`]).
    pub claim: Option<Option<i64>>,
}

impl Run {
    /// True when this run claimed the unit holds nothing better than its bound (or its own
    /// find, whichever is better), and `found`, a verified solution of the same unit, is
    /// better than that.
    pub fn claim_contradicted_by(&self, found: i64, campaign: &SearchCampaign) -> bool {
        let Some(claimed) = self.claim else {
            return false;
        };
        let covered = match (claimed, self.value) {
            (Some(b), Some(v)) => Some(if campaign.better(v, b) { v } else { b }),
            (b, v) => b.or(v),
        };
        covered.is_none_or(|c| campaign.better(found, c))
    }

    /// The run as its provenance events show it.
    pub fn claim_json(&self) -> serde_json::Value {
        json!({"result": self.id, "worker": self.worker_id, "value": self.value,
               "claims": self.claim.is_some(), "bound": self.claim.flatten()})
    }
}

/// The verdict on a search unit's runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SearchVerdict {
    /// This run's claim covers less than the coordinator needs: reject it, run again.
    RefuseClaim(String),
    /// The only run so far, drawn for replication.
    Replica,
    /// The only run, not drawn: the unit is done with it.
    Done,
    /// Runs claimed nothing better than what another run verifiably found: they lied.
    Lie {
        /// The lying runs.
        liars: Vec<Run>,
        /// The verified score that contradicts them.
        found: i64,
    },
    /// The runs fit together (`consistent`) or differ by value only: the unit keeps the
    /// best value (`kept`) of them all (`runs`).
    Settled {
        /// Their values and claims fit together.
        consistent: bool,
        /// The value the unit keeps.
        kept: String,
        /// Every run (result ids).
        runs: Vec<Run>,
    },
}

/// The verdict on a search unit, given its campaign, whether the problem's finds stay in
/// their unit (`judges`: claims can then be judged against other runs' finds), this run,
/// the `earlier` runs awaiting settlement, and whether the unit is `drawn` for replication.
///
/// Each run of an exhaustive search claims "nothing better than B in this unit" (B: the
/// bound it pruned against); a claim better than any bound the coordinator shared is not
/// counted. When finds stay in their unit, runs whose claims and verified solutions fit
/// together agree whatever their values, as runs prune with different bounds, and a run
/// whose claim another run's verified solution contradicts lied. Other runs (older workers
/// without claims, heuristic searches, finds that may leave their unit) are compared by
/// value only. The unit keeps the best value of the runs it accepts.
pub fn search_verdict(
    campaign: &SearchCampaign,
    judges: bool,
    this: Run,
    earlier: Vec<Run>,
    drawn: bool,
) -> SearchVerdict {
    if campaign.exhaustive {
        if let Some(why) = campaign.claim_weaker_than_shared(&this) {
            return SearchVerdict::RefuseClaim(why);
        }
    }
    if earlier.is_empty() {
        return if drawn {
            SearchVerdict::Replica
        } else {
            SearchVerdict::Done
        };
    }
    let mut runs = earlier;
    runs.push(this);
    let best = campaign.best(runs.iter().filter_map(|r| r.value));
    if campaign.exhaustive && judges {
        if let Some(found) = best {
            let liars: Vec<Run> = runs
                .iter()
                .filter(|r| r.claim_contradicted_by(found, campaign))
                .cloned()
                .collect();
            if !liars.is_empty() {
                return SearchVerdict::Lie { liars, found };
            }
        }
    }
    let same_value = runs.iter().all(|r| r.value == runs[0].value);
    let consistent =
        same_value || (campaign.exhaustive && judges && runs.iter().all(|r| r.claim.is_some()));
    SearchVerdict::Settled {
        consistent,
        kept: kept(best),
        runs,
    }
}

/// The value a unit keeps: its best score, or `none`.
pub fn kept(best: Option<i64>) -> String {
    best.map_or_else(|| "none".to_string(), |v| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: i64, value: Option<i64>, claim: Option<Option<i64>>) -> Run {
        Run {
            id,
            worker_id: id * 10,
            value,
            claim,
        }
    }

    const MAX: SearchCampaign = SearchCampaign {
        minimise: false,
        exhaustive: true,
        bound: Some(10),
    };

    #[test]
    fn a_replication_draw_is_deterministic_and_follows_its_rate() {
        assert!(!replicate(7, 1, 0.0));
        assert!(replicate(7, 1, 1.0));
        let drawn = (0..10_000).filter(|&u| replicate(42, u, 0.25)).count();
        assert!(
            (2_200..2_800).contains(&drawn),
            "{drawn} of 10,000 drawn at 25%"
        );
        assert_eq!(replicate(42, 17, 0.5), replicate(42, 17, 0.5));
    }

    #[test]
    fn a_result_is_taken_only_while_its_unit_needs_it() {
        let at = Arrival {
            lease_state: "active",
            lease_replica: false,
            unit_state: "leased",
            replica_needed: false,
            campaign_state: "running",
        };
        assert_eq!(intake(at), Intake::Take);
        // A late result of an expired lease still counts while the unit needs it.
        let late = Arrival {
            lease_state: "expired",
            unit_state: "pending",
            ..at
        };
        assert_eq!(intake(late), Intake::Take);
        let again = Arrival {
            lease_state: "completed",
            ..at
        };
        assert_eq!(intake(again), Intake::Duplicate);
        let done = Arrival {
            unit_state: "done",
            ..at
        };
        assert_eq!(intake(done), Intake::Ignore);
        let wants_replica = Arrival {
            replica_needed: true,
            ..at
        };
        assert_eq!(intake(wants_replica), Intake::Ignore);
        let cancelled = Arrival {
            campaign_state: "cancelled",
            ..at
        };
        assert_eq!(intake(cancelled), Intake::Ignore);
    }

    #[test]
    fn count_runs_agree_or_dispute() {
        assert_eq!(count_verdict(3, "5", &[], true), CountVerdict::Replica);
        assert_eq!(count_verdict(3, "5", &[], false), CountVerdict::Done);
        let earlier = vec![(1, "5".to_string()), (2, "6".to_string())];
        assert_eq!(
            count_verdict(3, "5", &earlier, false),
            CountVerdict::Agreed {
                agreeing: vec![1, 3],
                liars: vec![(2, "6".to_string())]
            }
        );
        assert_eq!(
            count_verdict(3, "7", &earlier, true),
            CountVerdict::Disputed
        );
        assert!(!dispute_gives_up(4, 3));
        assert!(dispute_gives_up(5, 3));
    }

    #[test]
    fn a_claim_beyond_the_shared_bound_is_refused() {
        let this = run(1, None, Some(Some(12)));
        assert!(matches!(
            search_verdict(&MAX, true, this, vec![], false),
            SearchVerdict::RefuseClaim(_)
        ));
        // Its own verified find may be its bound.
        let own = run(1, Some(12), Some(Some(12)));
        assert_eq!(
            search_verdict(&MAX, true, own, vec![], false),
            SearchVerdict::Done
        );
    }

    #[test]
    fn a_claim_contradicted_by_another_runs_find_is_a_lie() {
        let liar = run(1, None, Some(Some(10)));
        let finder = run(2, Some(11), Some(Some(10)));
        let verdict = search_verdict(&MAX, true, finder.clone(), vec![liar.clone()], false);
        assert!(
            matches!(&verdict, SearchVerdict::Lie { liars, .. } if *liars == vec![liar.clone()]),
            "{verdict:?}"
        );
        // Finds that may leave their unit are compared by value only.
        let verdict = search_verdict(&MAX, false, finder, vec![liar], false);
        assert!(
            matches!(&verdict, SearchVerdict::Settled { consistent: false, kept, .. } if kept == "11"),
            "{verdict:?}"
        );
    }

    #[test]
    fn runs_that_fit_together_agree_on_the_best_value() {
        let a = run(1, Some(9), Some(Some(9)));
        let b = run(2, None, Some(Some(10)));
        let verdict = search_verdict(&MAX, true, b, vec![a], true);
        assert!(
            matches!(&verdict, SearchVerdict::Settled { consistent: true, kept, runs } if kept == "9" && runs.len() == 2),
            "{verdict:?}"
        );
    }
}
