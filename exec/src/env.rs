//! The environment a solver starts with.
//!
//! The worker's own environment is **not** passed on (no tokens or paths leak into a user's
//! program, and a solver sees the same variables on every machine). A solver gets exactly:
//!
//! | variable | value |
//! |---|---|
//! | `GRIND_PROTOCOL` | `1`, the version of the line protocol and of these variables |
//! | `GRIND_UNIT` | the unit: its seed for seed campaigns, its line for units-file campaigns |
//! | `GRIND_SEED` | a seed (decimal `u64`) for the solver's random choices |
//! | `GRIND_TIME_LIMIT` | wall-clock seconds (whole, at least 1) before `SIGTERM` |
//! | `GRIND_THREADS` | how many threads the solver should use |
//! | `GRIND_INSTANCE` | the instance file, when the campaign has one |
//! | `GRIND_WORK_DIR` | private, writable, also the working directory and `HOME` |
//! | `GRIND_CHECKPOINT_DIR` | writable; files written here (by rename) move with the unit |
//! | `GRIND_BOUND_FILE` | only with the bound feed: the best known cost, one decimal line, replaced atomically |
//! | `TMPDIR` | `$GRIND_WORK_DIR/tmp` |
//! | `PATH` | `/usr/local/bin:/usr/bin:/bin` |
//! | `LANG` | `C.UTF-8` |
//!
//! plus the campaign's own extra variables (which may override none of the above).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `GRIND_PROTOCOL`.
pub const PROTOCOL: &str = "GRIND_PROTOCOL";
/// `GRIND_UNIT`.
pub const UNIT: &str = "GRIND_UNIT";
/// `GRIND_SEED`.
pub const SEED: &str = "GRIND_SEED";
/// `GRIND_TIME_LIMIT`.
pub const TIME_LIMIT: &str = "GRIND_TIME_LIMIT";
/// `GRIND_THREADS`.
pub const THREADS: &str = "GRIND_THREADS";
/// `GRIND_INSTANCE`.
pub const INSTANCE: &str = "GRIND_INSTANCE";
/// `GRIND_WORK_DIR`.
pub const WORK_DIR: &str = "GRIND_WORK_DIR";
/// `GRIND_CHECKPOINT_DIR`.
pub const CHECKPOINT_DIR: &str = "GRIND_CHECKPOINT_DIR";
/// `GRIND_BOUND_FILE`.
pub const BOUND_FILE: &str = "GRIND_BOUND_FILE";
/// The protocol version in `GRIND_PROTOCOL`.
pub const PROTOCOL_VERSION: &str = "1";
/// `PATH` given to solvers.
pub const SOLVER_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The per-unit values a solver is told.
#[derive(Clone, Debug, Default)]
pub struct UnitEnv {
    /// `GRIND_UNIT`.
    pub unit: String,
    /// `GRIND_SEED`.
    pub seed: u64,
    /// `GRIND_THREADS` (at least 1).
    pub threads: u32,
    /// `GRIND_INSTANCE`.
    pub instance: Option<PathBuf>,
    /// Extra variables of the campaign.
    pub extra: Vec<(String, String)>,
}

/// Where a run's directories are.
#[derive(Clone, Debug)]
pub struct RunDirs {
    /// `GRIND_WORK_DIR`.
    pub work: PathBuf,
    /// `GRIND_CHECKPOINT_DIR`.
    pub checkpoint: PathBuf,
    /// The directory holding the bound file (read-only for the solver).
    pub control: PathBuf,
}

impl RunDirs {
    /// The layout under `run_dir`: `work/`, `checkpoint/`, `control/`.
    pub fn under(run_dir: &Path) -> RunDirs {
        RunDirs {
            work: run_dir.join("work"),
            checkpoint: run_dir.join("checkpoint"),
            control: run_dir.join("control"),
        }
    }

    /// The bound file's path.
    pub fn bound_file(&self) -> PathBuf {
        self.control.join("bound")
    }
}

/// Whether `name` is one grind sets (so a campaign may not override it).
pub fn is_reserved(name: &str) -> bool {
    name.starts_with("GRIND_") || matches!(name, "PATH" | "HOME" | "TMPDIR" | "LANG")
}

/// The complete environment of a solver.
pub fn solver_env(
    unit: &UnitEnv,
    dirs: &RunDirs,
    time_limit: Option<Duration>,
    bound_feed: bool,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    let mut set = |k: &str, v: OsString| env.push((k.into(), v));
    set(PROTOCOL, PROTOCOL_VERSION.into());
    set(UNIT, unit.unit.clone().into());
    set(SEED, unit.seed.to_string().into());
    if let Some(t) = time_limit {
        set(TIME_LIMIT, t.as_secs().max(1).to_string().into());
    }
    set(THREADS, unit.threads.max(1).to_string().into());
    if let Some(i) = &unit.instance {
        set(INSTANCE, i.clone().into());
    }
    set(WORK_DIR, dirs.work.clone().into());
    set(CHECKPOINT_DIR, dirs.checkpoint.clone().into());
    if bound_feed {
        set(BOUND_FILE, dirs.bound_file().into());
    }
    set("HOME", dirs.work.clone().into());
    set("TMPDIR", dirs.work.join("tmp").into());
    set("PATH", SOLVER_PATH.into());
    set("LANG", "C.UTF-8".into());
    for (k, v) in &unit.extra {
        if !is_reserved(k) {
            env.push((k.into(), v.into()));
        }
    }
    env
}
