//! Verification: what a worker claims is re-checked with the problem's verifier, off the
//! async runtime (solutions re-scored, counts parsed, samples and child units checked). A
//! claim that does not check out is an error and changes nothing. A claim whose check
//! failed in the verifier itself ([`ProblemError::VerifierFailed`]: a user's checker
//! crashed) is neither: it is held for the operator ([`VerifiedResult::Held`]).

use grind_proto::v1 as pb;
use grind_shared::count::parse_count;
use grind_shared::problem::{Objective, Problem, ProblemError, MAX_PROVENANCE_BYTES};
use std::sync::Arc;

use crate::error::Error;
use crate::scheduler::{ChildUnit, VerifiedResult};

/// Largest solution document accepted (bytes of JSON).
pub const MAX_SOLUTION_BYTES: usize = 4 << 20;
/// Most samples accepted in one result.
pub const MAX_SAMPLES_PER_RESULT: usize = 1_000_000;
/// Most child units one result may create.
pub const MAX_CHILDREN_PER_RESULT: usize = 100_000;

/// Why a claimed solution was not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Refuted {
    /// The claim is wrong: held against the worker who made it.
    Invalid(String),
    /// The verifier itself failed (a user's checker crashed, hung or printed nonsense):
    /// the claim is held for the operator, not against the worker.
    VerifierFailed(String),
}

impl std::fmt::Display for Refuted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refuted::Invalid(reason) => f.write_str(reason),
            Refuted::VerifierFailed(reason) => write!(f, "the verifier failed: {reason}"),
        }
    }
}

/// Re-scores a solution with the problem's verifier, off the async runtime.
pub(super) async fn verify_solution(
    problem: Arc<dyn Problem>,
    solution_json: &str,
) -> Result<i64, Refuted> {
    if solution_json.len() > MAX_SOLUTION_BYTES {
        return Err(Refuted::Invalid(format!(
            "solution is {} bytes, more than the {MAX_SOLUTION_BYTES} accepted",
            solution_json.len()
        )));
    }
    let solution: serde_json::Value = serde_json::from_str(solution_json)
        .map_err(|e| Refuted::Invalid(format!("solution is not JSON: {e}")))?;
    tokio::task::spawn_blocking(move || {
        problem.score(&solution).map_err(|e| match e {
            ProblemError::VerifierFailed(reason) => Refuted::VerifierFailed(reason),
            other => Refuted::Invalid(other.to_string()),
        })
    })
    .await
    .map_err(|e| Refuted::Invalid(format!("verifier crashed: {e}")))?
}

/// Checks a solver's provenance record: JSON, at most [`MAX_PROVENANCE_BYTES`]; `None` when
/// there is none.
pub(super) fn checked_provenance(record: &str) -> Result<Option<String>, Error> {
    if record.is_empty() {
        return Ok(None);
    }
    if record.len() > MAX_PROVENANCE_BYTES {
        return Err(Error::InvalidArgument(format!(
            "the provenance record is {} bytes, more than the {MAX_PROVENANCE_BYTES} accepted",
            record.len()
        )));
    }
    serde_json::from_str::<serde_json::Value>(record)
        .map_err(|e| Error::InvalidArgument(format!("the provenance record is not JSON: {e}")))?;
    Ok(Some(record.to_string()))
}

/// Checks a unit result against its campaign's objective; CPU-heavy checks run off the
/// async runtime. A result that does not check out is an error and changes nothing.
/// `known` is the verified score of the result's best solution when its lease already had
/// exactly that solution verified as an improvement (it is not checked again).
pub(super) async fn verify_result(
    problem: Arc<dyn Problem>,
    result: &pb::UnitResult,
    covered_payload: &[u8],
    known: Option<i64>,
) -> Result<VerifiedResult, Error> {
    if !result.error.is_empty() {
        let mut reason = result.error.clone();
        reason.truncate(2000);
        return Ok(VerifiedResult::Failed(reason));
    }
    match problem.objective() {
        Objective::Count => {
            if result.count.len() > 10_000 {
                return Err(Error::InvalidArgument("count is absurdly long".into()));
            }
            Ok(VerifiedResult::Count(
                parse_count(&result.count)?.to_string(),
            ))
        }
        Objective::Max | Objective::Min => {
            let hits = match verify_samples(problem.clone(), &result.samples).await? {
                Ok(hits) => hits,
                Err(held) => return Ok(held),
            };
            let children =
                verify_children(problem.clone(), covered_payload, &result.children).await?;
            if result.best_solution_json.is_empty() {
                return Ok(VerifiedResult::Best(None, hits, children));
            }
            let verified = match known {
                Some(score) => Ok(score),
                None => verify_solution(problem, &result.best_solution_json).await,
            };
            let score = match verified {
                Ok(score) => score,
                Err(Refuted::VerifierFailed(reason)) => {
                    return Ok(VerifiedResult::Held {
                        solution: result.best_solution_json.clone(),
                        claimed_score: result.best_score,
                        reason,
                    })
                }
                Err(Refuted::Invalid(reason)) => {
                    return Err(Error::InvalidArgument(format!("result rejected: {reason}")))
                }
            };
            if score != result.best_score {
                return Err(Error::InvalidArgument(format!(
                    "result rejected: claimed score {} but the solution scores {score}",
                    result.best_score
                )));
            }
            Ok(VerifiedResult::Best(
                Some((result.best_solution_json.clone(), score)),
                hits,
                children,
            ))
        }
        _ if !result.children.is_empty() => Err(Error::InvalidArgument(
            "child units are only accepted from optimisation campaigns".into(),
        )),
        Objective::Sample => Ok(match verify_samples(problem, &result.samples).await? {
            Ok(samples) => VerifiedResult::Samples(samples),
            Err(held) => held,
        }),
    }
}

/// Checks every child unit a result created against its parent, off the runtime, and
/// returns them with their priorities.
async fn verify_children(
    problem: Arc<dyn Problem>,
    parent: &[u8],
    children: &[pb::UnitSpec],
) -> Result<Vec<ChildUnit>, Error> {
    if children.is_empty() {
        return Ok(Vec::new());
    }
    if children.len() > MAX_CHILDREN_PER_RESULT {
        return Err(Error::InvalidArgument(format!(
            "{} child units in one result, more than the {MAX_CHILDREN_PER_RESULT} accepted",
            children.len()
        )));
    }
    let parent = parent.to_vec();
    let children = children.to_vec();
    tokio::task::spawn_blocking(move || {
        children
            .into_iter()
            .enumerate()
            .map(|(index, child)| {
                let mut label = child.label;
                label.truncate(200);
                let priority = problem
                    .child_priority(&parent, &child.payload)
                    .map_err(|e| {
                        Error::InvalidArgument(format!("child unit {index} rejected: {e}"))
                    })?;
                Ok(ChildUnit {
                    label,
                    payload: child.payload,
                    priority,
                })
            })
            .collect()
    })
    .await
    .map_err(|e| Error::Internal(format!("child verifier crashed: {e}")))?
}

/// Checks every sample (or proof-mode hit) with the problem's verifier, off the runtime;
/// `Ok(Err(held))` when the verifier itself failed on one (the result is then held).
async fn verify_samples(
    problem: Arc<dyn Problem>,
    samples: &[String],
) -> Result<Result<Vec<String>, VerifiedResult>, Error> {
    if samples.is_empty() {
        return Ok(Ok(Vec::new()));
    }
    if samples.len() > MAX_SAMPLES_PER_RESULT {
        return Err(Error::InvalidArgument(
            "too many samples in one result".into(),
        ));
    }
    let samples = samples.to_vec();
    tokio::task::spawn_blocking(move || {
        for (index, text) in samples.iter().enumerate() {
            let value: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| Error::InvalidArgument(format!("sample {index} is not JSON: {e}")))?;
            match problem.verify_sample(&value) {
                Ok(()) => {}
                Err(ProblemError::VerifierFailed(reason)) => {
                    return Ok(Err(VerifiedResult::Held {
                        solution: text.clone(),
                        claimed_score: 0,
                        reason: format!("sample {index}: {reason}"),
                    }))
                }
                Err(e) => {
                    return Err(Error::InvalidArgument(format!(
                        "sample {index} rejected: {e}"
                    )))
                }
            }
        }
        Ok(Ok(samples))
    })
    .await
    .map_err(|e| Error::Internal(format!("sample verifier crashed: {e}")))?
}
