//! The parameters of an `exec` campaign: flags and JSON ([`ExecParams`]), checked into the
//! typed [`Config`] the rest of the module uses.

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};
use std::time::Duration;

use super::attached::{parse_attachment, Attachment};
use crate::problem::{Objective, ProblemError};

/// What an `exec` campaign computes.
#[derive(ValueEnum, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ExecObjective {
    /// The best (highest) score: the checker's score of the solutions the solvers print.
    Max,
    /// The best (lowest) score (MaxSAT costs, ruler lengths).
    Min,
    /// An exact count over a units file: the units' `g count` lines add up.
    Count,
}

impl ExecObjective {
    /// The campaign objective.
    pub fn objective(self) -> Objective {
        match self {
            ExecObjective::Max => Objective::Max,
            ExecObjective::Min => Objective::Min,
            ExecObjective::Count => Objective::Count,
        }
    }
}

fn default_objective() -> ExecObjective {
    ExecObjective::Min
}
fn default_unit_seconds() -> u64 {
    60
}
fn default_grace_seconds() -> u64 {
    5
}
fn default_threads() -> u32 {
    1
}
fn default_output_mb() -> u64 {
    256
}
fn default_open_files() -> u64 {
    1024
}
fn default_file_mb() -> u64 {
    1024
}
fn default_checker_seconds() -> u64 {
    10
}
fn default_checker_memory_mb() -> u64 {
    1024
}

/// Most seconds a unit may run (a week).
pub const MAX_UNIT_SECONDS: u64 = 7 * 24 * 3600;
/// Most seconds between `SIGTERM` and `SIGKILL`.
pub const MAX_GRACE_SECONDS: u64 = 600;
/// Most seconds a checker may run.
pub const MAX_CHECKER_SECONDS: u64 = 3600;
/// Most threads a solver may be told to use.
pub const MAX_THREADS: u32 = 1024;
/// Longest `--arg` value, in bytes.
pub const MAX_ARG_BYTES: usize = 4096;
/// Most `--arg` values.
pub const MAX_ARGS: usize = 256;

/// Parameters of an `exec` campaign. Attachment fields ([`super::ATTACHMENTS`]) hold paths
/// at the command line and `sha256:<hex>` bundle digests once the CLI has uploaded them;
/// [`Config::from_params`] accepts only digests.
#[derive(Args, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ExecParams {
    /// The solver: a file or a directory. Repeat as TRIPLE=PATH for one variant per
    /// platform (e.g. x86_64-unknown-linux-gnu=./solve-x86).
    #[arg(long, required = true, value_name = "[TRIPLE=]PATH")]
    pub solver: Vec<String>,
    /// The program to run inside a directory solver (a path relative to it); default: the
    /// bundle's only file.
    #[arg(long, value_name = "PATH")]
    #[serde(default)]
    pub solver_entry: Option<String>,
    /// The checker (`checker <instance> <solution>`: exit 0 + score on the first line =
    /// valid, 43 = invalid, anything else = the checker failed): a file or a directory.
    #[arg(long, value_name = "PATH")]
    pub checker: String,
    /// The program to run inside a directory checker; default: the bundle's only file.
    #[arg(long, value_name = "PATH")]
    #[serde(default)]
    pub checker_entry: Option<String>,
    /// The instance file (or directory) solvers and the checker read ($GRIND_INSTANCE).
    #[arg(long, value_name = "PATH")]
    #[serde(default)]
    pub instance: Option<String>,
    /// What the campaign computes: max or min (the checker's score), or count (units file).
    #[arg(long, value_enum, default_value_t = ExecObjective::Min)]
    #[serde(default = "default_objective")]
    pub objective: ExecObjective,
    /// Independent anytime runs: `seeds:N` (seeds 0..N) or `seeds:A..B` (A..B, B excluded).
    #[arg(long, value_name = "seeds:N", conflicts_with = "units_file")]
    #[serde(default)]
    pub units: Option<String>,
    /// A split of an exhaustive search: one unit per line (its words become the solver's
    /// arguments; blank lines and lines starting with `#` are skipped).
    #[arg(long, value_name = "FILE")]
    #[serde(default)]
    pub units_file: Option<String>,
    /// Wall-clock seconds per unit run before SIGTERM.
    #[arg(long, default_value_t = default_unit_seconds())]
    #[serde(default = "default_unit_seconds")]
    pub unit_seconds: u64,
    /// Seconds between SIGTERM and SIGKILL to the solver's process group.
    #[arg(long, default_value_t = default_grace_seconds())]
    #[serde(default = "default_grace_seconds")]
    pub grace_seconds: u64,
    /// Feed the campaign's best score into running solvers (`b <value>` on stdin and
    /// $GRIND_BOUND_FILE).
    #[arg(long)]
    #[serde(default)]
    pub bound_feed: bool,
    /// Cut solvers and the checker off from the network (a new network namespace).
    #[arg(long)]
    #[serde(default)]
    pub no_network: bool,
    /// Resident memory of a solver's whole process group, in MiB (also its per-process
    /// data limit); none by default.
    #[arg(long, value_name = "MIB")]
    #[serde(default)]
    pub memory_mb: Option<u64>,
    /// Threads a solver should use ($GRIND_THREADS). The flag is `--solver-threads`:
    /// `grind run`'s own `--threads` sizes its workers.
    #[arg(id = "solver_threads", long = "solver-threads", default_value_t = default_threads())]
    #[serde(default = "default_threads")]
    pub threads: u32,
    /// Most MiB a solver may print on stdout (stderr: at most 16 MiB); beyond, it is killed.
    #[arg(long, value_name = "MIB", default_value_t = default_output_mb())]
    #[serde(default = "default_output_mb")]
    pub output_mb: u64,
    /// Most open files per solver process.
    #[arg(long, default_value_t = default_open_files())]
    #[serde(default = "default_open_files")]
    pub open_files: u64,
    /// Largest file a solver may write, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = default_file_mb())]
    #[serde(default = "default_file_mb")]
    pub file_mb: u64,
    /// The solver's arguments, one per --arg, replacing the default `{instance} {unit}`.
    /// `{instance}`, `{seed}` and `{unit}` are replaced; an argument that is exactly
    /// `{unit}` becomes the unit line's words.
    #[arg(long = "arg", value_name = "ARG", allow_hyphen_values = true)]
    #[serde(default)]
    pub args: Vec<String>,
    /// Wall-clock seconds per checker run.
    #[arg(long, default_value_t = default_checker_seconds())]
    #[serde(default = "default_checker_seconds")]
    pub checker_seconds: u64,
    /// Resident memory of a checker run, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = default_checker_memory_mb())]
    #[serde(default = "default_checker_memory_mb")]
    pub checker_memory_mb: u64,
}

/// How a campaign is split into units.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnitSource {
    /// One unit per seed in `from..to` (independent anytime runs).
    Seeds {
        /// First seed.
        from: u64,
        /// One past the last seed.
        to: u64,
    },
    /// One unit per line of this units file (bundle digest).
    File(String),
}

/// The checked parameters.
#[derive(Clone, Debug)]
pub struct Config {
    /// The parameters as given (canonical).
    pub params: ExecParams,
    /// The solver's variants: unlabelled (one), or one per platform.
    pub solver: Vec<Attachment>,
    /// The checker bundle.
    pub checker: String,
    /// The instance bundle, if any.
    pub instance: Option<String>,
    /// The split.
    pub units: UnitSource,
    /// Wall-clock limit per run.
    pub unit_time: Duration,
    /// `SIGTERM` to `SIGKILL`.
    pub grace: Duration,
}

fn invalid(why: impl std::fmt::Display) -> ProblemError {
    ProblemError::InvalidParams(format!("exec: {why}"))
}

impl Config {
    /// Checks `params`: attachments must be bundle digests, the split and limits sane.
    pub fn from_params(params: ExecParams) -> Result<Config, ProblemError> {
        let solver = solver_variants(&params.solver)?;
        let checker = plain_digest("checker", &params.checker)?;
        let instance = params
            .instance
            .as_deref()
            .map(|i| plain_digest("instance", i))
            .transpose()?;
        let units = match (&params.units, &params.units_file) {
            (Some(_), Some(_)) => {
                return Err(invalid("give --units seeds:N or --units-file, not both"))
            }
            (None, None) => return Err(invalid(
                "give --units seeds:N (independent runs) or --units-file FILE (one unit a line)",
            )),
            (Some(spec), None) => parse_seeds(spec)?,
            (None, Some(file)) => UnitSource::File(plain_digest("units_file", file)?),
        };
        if params.objective == ExecObjective::Count && !matches!(units, UnitSource::File(_)) {
            return Err(invalid(
                "--objective count needs --units-file: counts of seeds would not add up",
            ));
        }
        if params.bound_feed && params.objective == ExecObjective::Count {
            return Err(invalid("--bound-feed needs --objective max or min"));
        }
        in_range("--unit-seconds", params.unit_seconds, 1, MAX_UNIT_SECONDS)?;
        in_range(
            "--grace-seconds",
            params.grace_seconds,
            0,
            MAX_GRACE_SECONDS,
        )?;
        in_range(
            "--checker-seconds",
            params.checker_seconds,
            1,
            MAX_CHECKER_SECONDS,
        )?;
        in_range(
            "--solver-threads",
            u64::from(params.threads),
            1,
            u64::from(MAX_THREADS),
        )?;
        in_range("--output-mb", params.output_mb, 1, 1 << 20)?;
        in_range("--open-files", params.open_files, 16, 1 << 20)?;
        in_range("--file-mb", params.file_mb, 1, 1 << 30)?;
        in_range("--checker-memory-mb", params.checker_memory_mb, 16, 1 << 30)?;
        if let Some(mb) = params.memory_mb {
            in_range("--memory-mb", mb, 16, 1 << 30)?;
        }
        for (name, entry) in [
            ("--solver-entry", &params.solver_entry),
            ("--checker-entry", &params.checker_entry),
        ] {
            if let Some(entry) = entry {
                super::attached::check_entry(entry)
                    .map_err(|why| invalid(format!("{name}: {why}")))?;
            }
        }
        if params.args.len() > MAX_ARGS {
            return Err(invalid(format!("more than {MAX_ARGS} --arg values")));
        }
        for arg in &params.args {
            if arg.len() > MAX_ARG_BYTES || arg.contains('\0') {
                return Err(invalid(format!(
                    "--arg {:?}: longer than {MAX_ARG_BYTES} bytes or contains NUL",
                    arg.chars().take(40).collect::<String>()
                )));
            }
        }
        Ok(Config {
            unit_time: Duration::from_secs(params.unit_seconds),
            grace: Duration::from_secs(params.grace_seconds),
            params,
            solver,
            checker,
            instance,
            units,
        })
    }

    /// Whether units are lines of a units file (an exhaustive split).
    pub fn is_units_file(&self) -> bool {
        matches!(self.units, UnitSource::File(_))
    }
}

fn in_range(name: &str, value: u64, low: u64, high: u64) -> Result<(), ProblemError> {
    if (low..=high).contains(&value) {
        Ok(())
    } else {
        Err(invalid(format!("{name} {value} is not in {low}..={high}")))
    }
}

/// The message for an attachment that still holds a path.
fn not_uploaded(field: &str, value: &str) -> ProblemError {
    invalid(format!(
        "{field} must be a bundle digest (sha256:<64 hex digits>), not {value:?}; \
         `grind campaign add exec` and `grind run exec` upload the path for you"
    ))
}

/// An attachment without a label.
fn plain_digest(field: &str, value: &str) -> Result<String, ProblemError> {
    let attachment = parse_attachment(value).ok_or_else(|| not_uploaded(field, value))?;
    match attachment.label {
        None => Ok(attachment.digest),
        Some(label) => Err(invalid(format!(
            "{field} takes no label (got {label:?}=); only --solver has per-platform variants"
        ))),
    }
}

/// One unlabelled solver, or labelled variants with distinct platforms.
fn solver_variants(values: &[String]) -> Result<Vec<Attachment>, ProblemError> {
    if values.is_empty() {
        return Err(invalid("--solver is required"));
    }
    let variants = values
        .iter()
        .map(|v| parse_attachment(v).ok_or_else(|| not_uploaded("solver", v)))
        .collect::<Result<Vec<_>, _>>()?;
    let labelled = variants.iter().filter(|v| v.label.is_some()).count();
    if labelled != 0 && labelled != variants.len() || labelled == 0 && variants.len() > 1 {
        return Err(invalid(
            "give one --solver PATH, or one --solver TRIPLE=PATH per platform (all labelled)",
        ));
    }
    let mut platforms: Vec<&str> = variants.iter().filter_map(|v| v.label.as_deref()).collect();
    if let Some(bad) = platforms
        .iter()
        .find(|p| !p.contains('-') || p.contains(char::is_whitespace))
    {
        return Err(invalid(format!(
            "--solver {bad}=...: a platform is a target triple such as x86_64-unknown-linux-gnu"
        )));
    }
    platforms.sort_unstable();
    if platforms.windows(2).any(|w| w[0] == w[1]) {
        return Err(invalid("--solver names the same platform twice"));
    }
    Ok(variants)
}

/// `seeds:N` or `seeds:A..B`.
fn parse_seeds(spec: &str) -> Result<UnitSource, ProblemError> {
    let bad = || {
        invalid(format!(
            "--units {spec:?}: expected seeds:N (seeds 0..N) or seeds:A..B (B excluded), N >= 1"
        ))
    };
    let range = spec.strip_prefix("seeds:").ok_or_else(bad)?;
    let number = |s: &str| s.trim().parse::<u64>().map_err(|_| bad());
    let (from, to) = match range.split_once("..") {
        Some((a, b)) => (number(a)?, number(b)?),
        None => (0, number(range)?),
    };
    if from >= to {
        return Err(bad());
    }
    Ok(UnitSource::Seeds { from, to })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{FromArgMatches, Parser};

    pub(crate) fn digest(byte: &str) -> String {
        format!("sha256:{}", byte.repeat(32))
    }

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        params: ExecParams,
    }

    fn parse(args: &[&str]) -> Result<ExecParams, String> {
        let cmd = <Cli as clap::CommandFactory>::command();
        let matches = cmd
            .try_get_matches_from(std::iter::once("exec").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        ExecParams::from_arg_matches(&matches).map_err(|e| e.to_string())
    }

    fn base() -> ExecParams {
        serde_json::from_value(serde_json::json!({
            "solver": [digest("aa")], "checker": digest("bb"), "units": "seeds:4"
        }))
        .unwrap()
    }

    #[test]
    fn flags_parse_with_defaults() {
        let p = parse(&[
            "--solver",
            "./solve",
            "--checker",
            "./check",
            "--units",
            "seeds:64",
            "--arg",
            "-v",
            "--arg",
            "{instance}",
        ])
        .unwrap();
        assert_eq!(p.solver, vec!["./solve".to_string()]);
        assert_eq!(p.objective, ExecObjective::Min);
        assert_eq!((p.unit_seconds, p.grace_seconds, p.threads), (60, 5, 1));
        assert_eq!(p.args, vec!["-v".to_string(), "{instance}".to_string()]);
        assert!(
            parse(&["--checker", "./c", "--units", "seeds:1"]).is_err(),
            "no solver"
        );
        assert!(parse(&[
            "--solver",
            "s",
            "--checker",
            "c",
            "--units",
            "seeds:1",
            "--units-file",
            "u"
        ])
        .is_err());
        // The JSON defaults are the flags' defaults.
        let json: ExecParams = serde_json::from_value(serde_json::json!({
            "solver": ["./solve"], "checker": "./check", "units": "seeds:64",
            "args": ["-v", "{instance}"]
        }))
        .unwrap();
        assert_eq!(json, p);
    }

    #[test]
    fn paths_are_refused_with_the_way_out() {
        let mut p = base();
        p.solver = vec!["./solve".into()];
        let err = Config::from_params(p).unwrap_err().to_string();
        assert!(err.contains("solver must be a bundle digest"), "{err}");
        assert!(err.contains("grind campaign add exec"), "{err}");
        let mut p = base();
        p.checker = "check.py".into();
        let err = Config::from_params(p).unwrap_err().to_string();
        assert!(err.contains("checker must be a bundle digest"), "{err}");
        let mut p = base();
        p.instance = Some(format!("x86_64-unknown-linux-gnu={}", digest("cc")));
        let err = Config::from_params(p).unwrap_err().to_string();
        assert!(err.contains("instance takes no label"), "{err}");
    }

    #[test]
    fn solver_variants_are_all_labelled_or_one() {
        let linux = format!("x86_64-unknown-linux-gnu={}", digest("aa"));
        let arm = format!("aarch64-unknown-linux-gnu={}", digest("ab"));
        let mut p = base();
        p.solver = vec![linux.clone(), arm];
        let config = Config::from_params(p).unwrap();
        assert_eq!(config.solver.len(), 2);
        for bad in [
            vec![linux.clone(), digest("ac")],
            vec![digest("aa"), digest("ab")],
            vec![linux.clone(), linux.clone()],
            vec![format!("linux={}", digest("aa"))],
            vec![],
        ] {
            let mut p = base();
            p.solver = bad.clone();
            assert!(Config::from_params(p).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn splits_and_objectives_are_checked() {
        let seeds = |spec: &str| {
            let mut p = base();
            p.units = Some(spec.into());
            Config::from_params(p).map(|c| c.units)
        };
        assert_eq!(
            seeds("seeds:64").unwrap(),
            UnitSource::Seeds { from: 0, to: 64 }
        );
        assert_eq!(
            seeds("seeds:5..9").unwrap(),
            UnitSource::Seeds { from: 5, to: 9 }
        );
        for bad in [
            "seeds:0",
            "seeds:9..5",
            "seeds:x",
            "64",
            "file:u.txt",
            "seeds:-1",
        ] {
            let err = seeds(bad).unwrap_err().to_string();
            assert!(err.contains("--units"), "{bad}: {err}");
        }
        let mut p = base();
        p.units = None;
        assert!(Config::from_params(p.clone())
            .unwrap_err()
            .to_string()
            .contains("--units-file"));
        p.units_file = Some(digest("dd"));
        assert!(Config::from_params(p.clone()).unwrap().is_units_file());
        p.objective = ExecObjective::Count;
        assert!(Config::from_params(p.clone()).is_ok());
        p.bound_feed = true;
        assert!(Config::from_params(p)
            .unwrap_err()
            .to_string()
            .contains("--bound-feed"));
        let mut p = base();
        p.objective = ExecObjective::Count;
        assert!(Config::from_params(p)
            .unwrap_err()
            .to_string()
            .contains("count needs"));
    }

    #[test]
    fn limits_are_checked() {
        let with = |f: &dyn Fn(&mut ExecParams)| {
            let mut p = base();
            f(&mut p);
            Config::from_params(p)
        };
        assert!(with(&|p| p.unit_seconds = 0).is_err());
        assert!(with(&|p| p.threads = 0).is_err());
        assert!(with(&|p| p.grace_seconds = 601).is_err());
        assert!(with(&|p| p.memory_mb = Some(1)).is_err());
        assert!(with(&|p| p.open_files = 3).is_err());
        assert!(with(&|p| p.checker_seconds = 0).is_err());
        assert!(with(&|p| p.solver_entry = Some("../x".into())).is_err());
        assert!(with(&|p| p.args = vec!["a\0b".into()]).is_err());
        assert!(with(&|p| p.memory_mb = Some(512)).is_ok());
    }
}
