//! A finished unit as its wire result: what the solver's outcome claims, with the work and
//! time it took.

use grind_proto::v1 as pb;
use grind_shared::problem::UnitOutcome;

use crate::context::Finished;

/// What a finished solve is to be reported as.
#[derive(Debug, PartialEq)]
pub(super) enum Report {
    /// The solver stopped early (a stop was asked): hand the lease back with its checkpoint.
    Stopped,
    /// The unit's result (possibly an error report).
    Result(pb::UnitResult),
}

/// Encodes `done` (a unit that did `nodes` nodes with `solver_version`) for the coordinator.
pub(super) fn report(done: Finished, nodes: u64, solver_version: u32) -> Report {
    let mut result = pb::UnitResult {
        nodes,
        cpu_seconds: done.cpu_seconds,
        wall_seconds: done.wall_seconds,
        solver_version,
        ..Default::default()
    };
    match done.outcome {
        Ok(UnitOutcome::Stopped) => return Report::Stopped,
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
    Report::Result(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use grind_shared::problem::{ProblemError, Scored, UnitSpec};
    use num_bigint::BigUint;
    use serde_json::json;

    fn finished(outcome: Result<UnitOutcome, ProblemError>) -> Finished {
        Finished {
            lease_id: 4,
            outcome,
            cpu_seconds: 1.5,
            wall_seconds: 2.0,
            claim_bound: Some(11),
        }
    }

    fn result_of(outcome: Result<UnitOutcome, ProblemError>) -> pb::UnitResult {
        match report(finished(outcome), 77, 3) {
            Report::Result(result) => result,
            Report::Stopped => panic!("not stopped"),
        }
    }

    #[test]
    fn every_outcome_is_encoded() {
        assert_eq!(
            report(finished(Ok(UnitOutcome::Stopped)), 1, 1),
            Report::Stopped
        );
        // A count larger than any machine integer travels as decimal text.
        let big = BigUint::from(u64::MAX) * BigUint::from(10u32);
        let count = result_of(Ok(UnitOutcome::Count(big)));
        assert_eq!(count.count, "184467440737095516150");
        assert_eq!((count.nodes, count.solver_version), (77, 3));
        assert_eq!((count.cpu_seconds, count.wall_seconds), (1.5, 2.0));
        assert!(!count.claims);

        let best = Scored {
            solution: json!([3, 1, 2]),
            score: 12,
        };
        let searched = result_of(Ok(UnitOutcome::Searched {
            best: Some(best.clone()),
            hits: vec![json!({"a": 1})],
        }));
        assert!(searched.claims);
        assert_eq!(searched.claim_bound, Some(11));
        assert_eq!(searched.best_solution_json, "[3,1,2]");
        assert_eq!(searched.best_score, 12);
        assert_eq!(searched.samples, vec![r#"{"a":1}"#.to_string()]);

        let samples = result_of(Ok(UnitOutcome::Samples(vec![json!(1), json!("x")])));
        assert_eq!(samples.samples, vec!["1".to_string(), "\"x\"".to_string()]);
        assert!(!samples.claims);

        let expanded = result_of(Ok(UnitOutcome::Expanded {
            best: None,
            children: vec![UnitSpec {
                label: "child".into(),
                payload: vec![1, 2],
            }],
        }));
        assert!(expanded.claims);
        assert_eq!(expanded.best_solution_json, "");
        assert_eq!(expanded.children.len(), 1);
        assert_eq!(expanded.children[0].payload, vec![1, 2]);

        let failed = result_of(Err(ProblemError::Solver("out of memory".into())));
        assert_eq!(failed.error, "solver failed: out of memory");
    }
}
