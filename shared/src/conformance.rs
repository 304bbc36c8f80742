//! What every problem must do alike, checked on small instances with the generic local
//! driver ([`crate::local`]): a campaign run straight finds something the problem's own
//! verifier accepts, and the same campaign run with its units interrupted at checkpoints and
//! resumed, with donations, with split batches joined, and one unit at a time ends with the
//! same result. The test below runs every registry entry's example parameters
//! ([`crate::registry::ProblemDef::examples`]) through it, so a new problem is checked by
//! adding it to the registry.

use serde_json::Value;

use crate::local::{self, Drive, Run};
use crate::problem::{Objective, Problem, ProblemError};

/// How a problem failed to conform.
#[derive(Debug, thiserror::Error)]
pub enum ConformanceError {
    /// A run ended with an error (a refused claim, a malformed unit, a run without end).
    #[error("{variant} run: {source}")]
    Run {
        /// Which run.
        variant: &'static str,
        /// What went wrong.
        source: ProblemError,
    },
    /// A run ended with another result than the straight run.
    #[error("{variant} run differs from the straight run: {detail}")]
    Differs {
        /// Which run.
        variant: &'static str,
        /// The two results.
        detail: String,
    },
    /// The example checks nothing (it finds no solution, sample or hit to verify), or the
    /// problem's presentation of its result is broken.
    #[error("{0}")]
    Weak(String),
}

/// The runs of one example, for reporting.
#[derive(Debug)]
pub struct Checked {
    /// The straight run.
    pub straight: Run,
    /// The other runs, by name.
    pub variants: Vec<(&'static str, Run)>,
}

/// The ways a campaign is run besides straight, each by name.
fn variants() -> Vec<(&'static str, Drive)> {
    vec![
        (
            "interrupted",
            Drive {
                interrupt_after: Some(1),
                ..Drive::default()
            },
        ),
        (
            "donating",
            Drive {
                donations: 8,
                ..Drive::default()
            },
        ),
        (
            "joined",
            Drive {
                join: true,
                ..Drive::default()
            },
        ),
        (
            "unit by unit",
            Drive {
                batch: 1,
                ..Drive::default()
            },
        ),
    ]
}

/// Checks the problem's verifier ([`crate::problem::Verification::self_check`]), runs
/// `problem` straight and every other way, and checks that the runs agree and that what they
/// found is verified and can be shown.
pub fn check(problem: &dyn Problem) -> Result<Checked, ConformanceError> {
    let run = |variant: &'static str, drive: &Drive| {
        local::run(problem, drive).map_err(|source| ConformanceError::Run { variant, source })
    };
    problem
        .self_check(None)
        .map_err(|source| ConformanceError::Run {
            variant: "self-check",
            source,
        })?;
    let straight = run("straight", &Drive::default())?;
    checks_something(problem, &straight)?;
    presents(problem, &straight)?;
    let mut others = Vec::new();
    for (variant, drive) in variants() {
        let other = run(variant, &drive)?;
        agrees(problem, variant, &straight, &other)?;
        others.push((variant, other));
    }
    Ok(Checked {
        straight,
        variants: others,
    })
}

/// An example must give the verifier something to check.
fn checks_something(problem: &dyn Problem, run: &Run) -> Result<(), ConformanceError> {
    let objective = problem.objective();
    let found = match objective {
        Objective::Max | Objective::Min => run.best.is_some() || !run.hits.is_empty(),
        Objective::Count => run.units > 0,
        Objective::Sample => !run.samples.is_empty(),
    };
    match found {
        true => Ok(()),
        false => Err(ConformanceError::Weak(format!(
            "a {objective} example that finds nothing to verify ({} units)",
            run.units
        ))),
    }
}

/// The result can be rendered, drawn and, once proven, restated with the same score.
fn presents(problem: &dyn Problem, run: &Run) -> Result<(), ConformanceError> {
    let weak = |what: String| Err(ConformanceError::Weak(what));
    if let Some(best) = &run.best {
        let text = problem.render(&best.score.to_string(), Some(&best.solution));
        if text.trim().is_empty() {
            return weak("the best solution renders as nothing".into());
        }
        let _ = problem.drawing(&best.solution);
        if problem.exhaustive() {
            if let Some(restated) = problem.proven_solution(&best.solution) {
                match problem.score(&restated) {
                    Ok(score) if score == best.score => {}
                    other => {
                        return weak(format!(
                            "the proven solution {restated} scores {other:?}, not {}",
                            best.score
                        ))
                    }
                }
            }
        }
    }
    if problem.objective() == Objective::Count
        && problem
            .render(&run.count.to_string(), None)
            .trim()
            .is_empty()
    {
        return weak("the count renders as nothing".into());
    }
    if !run.samples.is_empty() && problem.render_samples(&run.samples).trim().is_empty() {
        return weak("the samples render as nothing".into());
    }
    Ok(())
}

/// Documents as sorted text, so that runs producing them in another order compare equal.
fn sorted(values: &[Value]) -> Vec<String> {
    let mut texts: Vec<String> = values.iter().map(Value::to_string).collect();
    texts.sort();
    texts
}

/// `other` ends with the same result as `straight`: the same count, the same samples, and
/// for exhaustive searches the same optimum and the same proof-mode hits.
fn agrees(
    problem: &dyn Problem,
    variant: &'static str,
    straight: &Run,
    other: &Run,
) -> Result<(), ConformanceError> {
    let differs = |detail: String| Err(ConformanceError::Differs { variant, detail });
    match problem.objective() {
        Objective::Count if other.count != straight.count => differs(format!(
            "count {} instead of {}",
            other.count, straight.count
        )),
        Objective::Sample if sorted(&other.samples) != sorted(&straight.samples) => {
            differs(format!(
                "{} samples instead of {} (or other ones)",
                other.samples.len(),
                straight.samples.len()
            ))
        }
        Objective::Max | Objective::Min if problem.exhaustive() => {
            let score = |run: &Run| run.best.as_ref().map(|b| b.score);
            let (mut hits, mut expected) = (sorted(&other.hits), sorted(&straight.hits));
            hits.dedup();
            expected.dedup();
            if score(other) != score(straight) {
                differs(format!(
                    "best {:?} instead of {:?}",
                    score(other),
                    score(straight)
                ))
            } else if hits != expected {
                differs(format!(
                    "{} proof-mode hits instead of {}",
                    hits.len(),
                    expected.len()
                ))
            } else {
                Ok(())
            }
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::{
        Chains, Placement, Presentation, SolveContext, SplitBatch, UnitOutcome, UnitSpec, Units,
        Verification,
    };
    use crate::registry::registry;
    use std::time::Instant;

    #[test]
    fn every_registry_entry_conforms() {
        for entry in registry() {
            // Examples may need more than parameters (exec's name bundles to install).
            entry.prepare_examples();
            let examples = entry.examples();
            assert!(
                !examples.is_empty(),
                "{}: no example parameters (ProblemDef::examples)",
                entry.name
            );
            for params in examples {
                let started = Instant::now();
                let (_, problem) = entry
                    .build(&params)
                    .unwrap_or_else(|e| panic!("{} {params}: {e}", entry.name));
                let checked = check(problem.as_ref())
                    .unwrap_or_else(|e| panic!("{} {params}: {e}", entry.name));
                let s = &checked.straight;
                eprintln!(
                    "{} {params}: {} units, best {:?}, count {}, {} samples, {} hits; \
                     {} resumes, {} donations, {} joins, {} children; {:.2} s",
                    entry.name,
                    s.units,
                    s.best.as_ref().map(|b| b.score),
                    s.count,
                    s.samples.len(),
                    s.hits.len(),
                    checked
                        .variants
                        .iter()
                        .map(|(_, r)| r.resumes)
                        .sum::<usize>(),
                    checked
                        .variants
                        .iter()
                        .map(|(_, r)| r.donations)
                        .sum::<usize>(),
                    checked.variants.iter().map(|(_, r)| r.joins).sum::<usize>(),
                    s.children,
                    started.elapsed().as_secs_f64()
                );
            }
        }
    }

    /// A counting problem for checking the checks: counts 0..`n` in units of one number,
    /// each unit taking checkpoints; `fault` breaks it in one way.
    struct Faulty {
        n: u64,
        fault: Fault,
    }

    #[derive(Clone, Copy, PartialEq)]
    enum Fault {
        None,
        /// A resumed unit forgets what it counted before its checkpoint.
        ForgetsOnResume,
        /// Claims a solution the verifier refuses.
        BadSolution,
        /// The splitter repeats its first unit for ever.
        EndlessSplit,
    }

    impl Problem for Faulty {
        fn objective(&self) -> Objective {
            match self.fault {
                Fault::BadSolution => Objective::Max,
                _ => Objective::Count,
            }
        }
        fn split(
            &self,
            cursor: Option<&[u8]>,
            _max_units: usize,
        ) -> Result<SplitBatch, ProblemError> {
            let at = cursor.map_or(0, |c| c[0]);
            let next = match self.fault {
                Fault::EndlessSplit => Some(vec![0]),
                _ => (u64::from(at) + 1 < self.n).then(|| vec![at + 1]),
            };
            Ok(SplitBatch {
                units: vec![UnitSpec {
                    label: at.to_string(),
                    payload: vec![at],
                }],
                next,
            })
        }
        fn solve(
            &self,
            _payload: &[u8],
            ctx: &dyn SolveContext,
        ) -> Result<UnitOutcome, ProblemError> {
            // Each unit counts 3 in steps of one, with a checkpoint after each step.
            let mut counted = match (ctx.resume_cursor(), self.fault) {
                (Some(_), Fault::ForgetsOnResume) => 0,
                (Some(c), _) => c[0],
                (None, _) => 0,
            };
            while counted < 3 {
                counted += 1;
                ctx.checkpoint(vec![counted]);
                if ctx.stop_requested() {
                    return Ok(UnitOutcome::Stopped);
                }
            }
            Ok(match self.fault {
                Fault::BadSolution => UnitOutcome::Searched {
                    best: Some(crate::problem::Scored {
                        solution: serde_json::json!({"value": 2}),
                        score: 3,
                    }),
                    hits: Vec::new(),
                },
                _ => UnitOutcome::Count(3u32.into()),
            })
        }
    }
    impl Verification for Faulty {
        fn score(&self, solution: &Value) -> Result<i64, ProblemError> {
            Ok(solution["value"].as_i64().unwrap_or(0))
        }
    }
    impl Units for Faulty {}
    impl Chains for Faulty {}
    impl Placement for Faulty {}
    impl Presentation for Faulty {}

    #[test]
    fn a_conforming_problem_passes_and_faults_are_caught() {
        let checked = check(&Faulty {
            n: 4,
            fault: Fault::None,
        })
        .unwrap();
        assert_eq!(checked.straight.count, 12u32.into());
        let interrupted = &checked.variants[0];
        assert_eq!(
            (interrupted.0, interrupted.1.resumes),
            ("interrupted", 4 * 3),
            "each unit stops after each of its three steps"
        );

        let forgets = check(&Faulty {
            n: 4,
            fault: Fault::ForgetsOnResume,
        });
        assert!(
            matches!(
                forgets,
                Err(ConformanceError::Run {
                    variant: "interrupted",
                    ..
                })
            ),
            "a unit that never gets past its first checkpoint: {forgets:?}"
        );
        let bad = check(&Faulty {
            n: 2,
            fault: Fault::BadSolution,
        })
        .unwrap_err();
        assert!(bad.to_string().contains("verifier says 2"), "{bad}");
        let endless = Faulty {
            n: 2,
            fault: Fault::EndlessSplit,
        };
        let drive = Drive {
            max_units: 50,
            ..Drive::default()
        };
        let err = local::run(&endless, &drive).unwrap_err();
        assert!(err.to_string().contains("did not end within 50"), "{err}");
    }

    #[test]
    fn a_resumed_run_that_loses_work_differs() {
        // Forgetting on resume and finishing at once: the interrupted run counts less.
        struct Short;
        impl Problem for Short {
            fn objective(&self) -> Objective {
                Objective::Count
            }
            fn split(&self, _: Option<&[u8]>, _: usize) -> Result<SplitBatch, ProblemError> {
                Ok(SplitBatch {
                    units: vec![UnitSpec {
                        label: "all".into(),
                        payload: vec![],
                    }],
                    next: None,
                })
            }
            fn solve(&self, _: &[u8], ctx: &dyn SolveContext) -> Result<UnitOutcome, ProblemError> {
                if ctx.resume_cursor().is_some() {
                    return Ok(UnitOutcome::Count(1u32.into()));
                }
                ctx.checkpoint(vec![1]);
                if ctx.stop_requested() {
                    return Ok(UnitOutcome::Stopped);
                }
                Ok(UnitOutcome::Count(2u32.into()))
            }
        }
        impl Verification for Short {}
        impl Units for Short {}
        impl Chains for Short {}
        impl Placement for Short {}
        impl Presentation for Short {}
        let err = check(&Short).unwrap_err();
        assert!(
            matches!(
                &err,
                ConformanceError::Differs {
                    variant: "interrupted",
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("count 1 instead of 2"), "{err}");
    }
}
