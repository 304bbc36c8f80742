//! `probe`: a stand-in for a user's own solver, for grind's own tests of the plumbing that
//! `exec` campaigns rely on (issue 29). It runs nothing external: unit `i` of `--units N`
//! holds the one solution `{"seed": i, "value": v(i)}` with `v(i) = (i * 7919) mod 1009`,
//! so the campaign's optimum is the largest `v(i)` below N, known in closed form.
//!
//! Flags make it behave like a user's solver in one respect each:
//! - `--native-code`: its units need the worker's opt-in (`grind-worker --allow-exec`), as a
//!   user's solver does ([`Placement::requirements`]);
//! - `--claim-only`: grind cannot check its split ([`Problem::coverage_checked`] false), so a
//!   finished campaign is the solver's claim, never proven;
//! - `--checker-fails-while PATH`: while a file exists at `PATH`, its verifier fails
//!   ([`ProblemError::VerifierFailed`]), as a user's broken checker would;
//! - `--broken-checker`: the creation-time check fails ([`Verification::self_check`]);
//! - `--unit-ms`, `--checkpoint-bytes`: each unit takes that long, checkpointing every
//!   10 ms with a cursor of that size, and stops when asked;
//! - `--marker-dir DIR`: each solve writes `DIR/started-<seed>` first, so a test sees
//!   whether a worker started the "solver" at all;
//! - `--provenance-bytes`: each solve records a provenance record of about that size.

use clap::Args;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

use crate::placement::Requirements;
use crate::problem::{
    codec, Chains, Objective, Placement, Presentation, Problem, ProblemError, Scored, SolveContext,
    SplitBatch, UnitOutcome, UnitSpec, Units, Verification,
};
use crate::registry::ProblemDef;

/// The modulus of the values: every value lies in `0..MODULUS`.
pub const MODULUS: u64 = 1009;

/// The value of unit `seed`'s one solution.
pub fn value_of(seed: u64) -> i64 {
    ((seed % MODULUS) * 7919 % MODULUS) as i64
}

/// Parameters of the probe problem.
#[derive(Args, Serialize, Deserialize, Clone, Debug, Default)]
pub struct ProbeParams {
    /// Number of units (seeds 0..units).
    #[arg(long, default_value_t = 4)]
    #[serde(default = "default_units")]
    pub units: u64,
    /// Units need workers started with --allow-exec (as a user's solver does).
    #[arg(long)]
    #[serde(default)]
    pub native_code: bool,
    /// Grind cannot check the split: a finished campaign is the solver's claim.
    #[arg(long)]
    #[serde(default)]
    pub claim_only: bool,
    /// While a file exists at this path, the verifier fails (a broken checker).
    #[arg(long)]
    #[serde(default)]
    pub checker_fails_while: Option<String>,
    /// The creation-time check of the verifier fails.
    #[arg(long)]
    #[serde(default)]
    pub broken_checker: bool,
    /// Each unit takes this long, checkpointing every 10 ms and stopping when asked.
    #[arg(long, default_value_t = 0)]
    #[serde(default)]
    pub unit_ms: u64,
    /// Size of each checkpoint cursor, bytes (at least 16).
    #[arg(long, default_value_t = 16)]
    #[serde(default = "default_checkpoint_bytes")]
    pub checkpoint_bytes: u64,
    /// Each solve first writes the file DIR/started-SEED.
    #[arg(long)]
    #[serde(default)]
    pub marker_dir: Option<String>,
    /// Each solve records a provenance record of about this many bytes.
    #[arg(long, default_value_t = 64)]
    #[serde(default = "default_provenance_bytes")]
    pub provenance_bytes: u64,
}

fn default_units() -> u64 {
    4
}
fn default_checkpoint_bytes() -> u64 {
    16
}
fn default_provenance_bytes() -> u64 {
    64
}

/// The probe problem instance.
pub struct Probe {
    params: ProbeParams,
}

impl ProblemDef for Probe {
    const NAME: &'static str = "probe";
    const ABOUT: &'static str =
        "a stand-in for a user's solver, for grind's own tests (runs nothing external)";
    const SOLVER_VERSION: u32 = 1;
    type Params = ProbeParams;

    fn from_params(params: ProbeParams) -> Result<Self, ProblemError> {
        if params.units == 0 || params.units > 1_000_000 {
            return Err(ProblemError::InvalidParams(
                "--units must be between 1 and 1000000".into(),
            ));
        }
        if params.unit_ms > 600_000 {
            return Err(ProblemError::InvalidParams(
                "--unit-ms must be at most 10 minutes".into(),
            ));
        }
        if !(16..=64 << 20).contains(&params.checkpoint_bytes) {
            return Err(ProblemError::InvalidParams(
                "--checkpoint-bytes must be between 16 and 64 MiB".into(),
            ));
        }
        if params.provenance_bytes > 1 << 20 {
            return Err(ProblemError::InvalidParams(
                "--provenance-bytes must be at most 1 MiB".into(),
            ));
        }
        Ok(Probe { params })
    }

    fn examples() -> Vec<Value> {
        vec![
            json!({"units": 5}),
            json!({"units": 3, "claim_only": true, "native_code": true}),
        ]
    }
}

impl Probe {
    fn checker_broken_now(&self) -> Option<String> {
        let path = self.params.checker_fails_while.as_deref()?;
        std::path::Path::new(path)
            .exists()
            .then(|| format!("the checker crashed (test switch {path} is present)"))
    }

    fn checkpoint(&self, seed: u64, elapsed_ms: u64) -> Vec<u8> {
        let mut cursor = codec::encode_u64s(&[seed, elapsed_ms]);
        cursor.resize(self.params.checkpoint_bytes as usize, 0xA5);
        cursor
    }
}

impl Problem for Probe {
    fn objective(&self) -> Objective {
        Objective::Max
    }

    fn coverage_checked(&self) -> bool {
        !self.params.claim_only
    }

    fn split(&self, cursor: Option<&[u8]>, max_units: usize) -> Result<SplitBatch, ProblemError> {
        let mut seed = match cursor {
            None => 0,
            Some(bytes) => codec::decode_u64s::<1>(bytes, "probe split cursor")?[0],
        };
        let mut units = Vec::new();
        while seed < self.params.units && units.len() < max_units {
            units.push(UnitSpec {
                label: format!("seed {seed}"),
                payload: codec::encode_u64s(&[seed]),
            });
            seed += 1;
        }
        let next = (seed < self.params.units).then(|| codec::encode_u64s(&[seed]));
        Ok(SplitBatch { units, next })
    }

    fn solve(&self, payload: &[u8], ctx: &dyn SolveContext) -> Result<UnitOutcome, ProblemError> {
        let [seed] = codec::decode_u64s::<1>(payload, "probe unit")?;
        if seed >= self.params.units {
            return Err(ProblemError::InvalidUnit(format!(
                "probe seed {seed} out of range"
            )));
        }
        if let Some(dir) = &self.params.marker_dir {
            std::fs::write(
                std::path::Path::new(dir).join(format!("started-{seed}")),
                b"",
            )
            .map_err(|e| ProblemError::Solver(format!("cannot write the marker: {e}")))?;
        }
        let done_before = match ctx.resume_cursor() {
            Some(bytes) if bytes.len() >= 16 => {
                codec::decode_u64s::<2>(&bytes[..16], "probe checkpoint")?[1]
            }
            Some(_) => {
                return Err(ProblemError::InvalidUnit(
                    "probe checkpoint too short".into(),
                ))
            }
            None => 0,
        };
        let started = Instant::now();
        loop {
            let elapsed = done_before + started.elapsed().as_millis() as u64;
            if elapsed >= self.params.unit_ms {
                break;
            }
            ctx.checkpoint(self.checkpoint(seed, elapsed));
            ctx.progress(elapsed, Some(elapsed as f64 / self.params.unit_ms as f64));
            if ctx.stop_requested() {
                return Ok(UnitOutcome::Stopped);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let pad = "p".repeat(self.params.provenance_bytes as usize);
        ctx.provenance(json!({"probe": {"seed": seed, "resumed_at_ms": done_before}, "pad": pad}));
        let found = Scored {
            solution: json!({"seed": seed, "value": value_of(seed)}),
            score: value_of(seed),
        };
        let better = ctx.bound().is_none_or(|b| found.score > b);
        if better {
            ctx.improve(found.clone());
        }
        Ok(UnitOutcome::Searched {
            best: better.then_some(found),
            hits: Vec::new(),
        })
    }
}

impl Verification for Probe {
    fn score(&self, solution: &Value) -> Result<i64, ProblemError> {
        if let Some(reason) = self.checker_broken_now() {
            return Err(ProblemError::VerifierFailed(reason));
        }
        let seed = solution["seed"]
            .as_u64()
            .filter(|&s| s < self.params.units)
            .ok_or_else(|| ProblemError::InvalidSolution("no valid seed".into()))?;
        match solution["value"].as_i64() {
            Some(v) if v == value_of(seed) => Ok(v),
            _ => Err(ProblemError::InvalidSolution(format!(
                "seed {seed} does not have that value"
            ))),
        }
    }

    fn self_check(&self, _sample: Option<&Value>) -> Result<Option<String>, ProblemError> {
        if self.params.broken_checker {
            return Err(ProblemError::VerifierFailed(
                "the checker failed on an empty solution (--broken-checker)".into(),
            ));
        }
        Ok(None)
    }
}

impl Units for Probe {}
impl Chains for Probe {}
impl Presentation for Probe {}

impl Placement for Probe {
    fn requirements(&self) -> Requirements {
        Requirements {
            native_code: self.params.native_code,
            platforms: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::LocalContext;

    fn probe(params: Value) -> Probe {
        Probe::from_params(serde_json::from_value(params).unwrap()).unwrap()
    }

    #[test]
    fn values_and_verifier_agree() {
        let p = probe(json!({"units": 3}));
        assert_eq!(value_of(1), 7919 % 1009);
        assert_eq!(
            p.score(&json!({"seed": 2, "value": value_of(2)})),
            Ok(value_of(2))
        );
        assert!(matches!(
            p.score(&json!({"seed": 2, "value": 5})),
            Err(ProblemError::InvalidSolution(_))
        ));
        assert!(matches!(
            p.score(&json!({"seed": 3, "value": value_of(3)})),
            Err(ProblemError::InvalidSolution(_))
        ));
    }

    #[test]
    fn a_switch_file_breaks_the_checker() {
        let dir = std::env::temp_dir().join(format!("probe-switch-{}", std::process::id()));
        let p = probe(json!({"units": 3, "checker_fails_while": dir.to_str().unwrap()}));
        assert_eq!(p.score(&json!({"seed": 0, "value": 0})), Ok(0));
        std::fs::write(&dir, b"").unwrap();
        let broken = p.score(&json!({"seed": 0, "value": 0}));
        std::fs::remove_file(&dir).unwrap();
        assert!(
            matches!(broken, Err(ProblemError::VerifierFailed(_))),
            "{broken:?}"
        );
        assert!(probe(json!({"broken_checker": true}))
            .self_check(None)
            .is_err());
        assert!(probe(json!({})).self_check(None).is_ok());
    }

    #[test]
    fn a_stopped_unit_resumes_from_its_checkpoint() {
        let p = probe(json!({"units": 2, "unit_ms": 60, "checkpoint_bytes": 100}));
        let ctx = LocalContext::stopping_after(2);
        assert_eq!(
            p.solve(&codec::encode_u64s(&[1]), &ctx),
            Ok(UnitOutcome::Stopped)
        );
        let last = ctx.checkpoints().pop().unwrap();
        assert_eq!(last.len(), 100);
        let resumed = LocalContext::resuming(last);
        let UnitOutcome::Searched { best, .. } =
            p.solve(&codec::encode_u64s(&[1]), &resumed).unwrap()
        else {
            panic!("expected a searched unit");
        };
        assert_eq!(best.unwrap().score, value_of(1));
        assert!(p.requirements().admits(&Default::default()).is_ok());
        assert!(probe(json!({"native_code": true}))
            .requirements()
            .admits(&Default::default())
            .is_err());
    }
}
