//! Users' own solvers (`exec` campaigns) as a test drives them: scripts written into a
//! directory, campaigns added as a user adds them (`grind campaign add exec` uploads the
//! solver, checker and instance as bundles), and workers that may run them.

use super::processes::{grind_bin, worker_bin, Proc};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Writes `text` to `dir/name` as an executable file and returns its path.
pub fn script(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("the script is written");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path.to_str().expect("a UTF-8 path").to_string()
}

/// Runs `grind campaign add --coordinator URL exec ARGS` to its end, whatever its outcome.
pub fn try_add_exec_campaign(url: &str, args: &[&str]) -> Output {
    Command::new(grind_bin())
        .args(["campaign", "add", "--coordinator", url, "exec"])
        .args(args)
        .output()
        .expect("run grind campaign add exec")
}

/// Adds an `exec` campaign with `args` (`--solver PATH --checker PATH ...`), failing the
/// test unless grind succeeds. Returns the campaign's id (the last line grind prints).
pub fn add_exec_campaign(url: &str, args: &[&str]) -> i64 {
    let out = try_add_exec_campaign(url, args);
    assert!(
        out.status.success(),
        "grind campaign add exec: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .trim()
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no campaign id from grind campaign add exec: {stdout}"))
}

/// The LABS example (`examples/labs`: a Python solver and checker, N = 27 with its published
/// optimum as the target) as an `exec` campaign: two seeds of at most 5 s and `extra` flags
/// (e.g. `--bound-feed`). Returns the campaign's id.
pub fn add_labs_campaign(url: &str, extra: &[&str]) -> i64 {
    let labs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/labs");
    let path = |name: &str| labs.join(name).to_str().expect("UTF-8 path").to_string();
    let mut args = vec![
        "--solver".to_string(),
        path("solve.py"),
        "--checker".into(),
        path("check.py"),
        "--instance".into(),
        path("instances/27.txt"),
    ];
    args.extend(
        [
            "--objective",
            "min",
            "--units",
            "seeds:2",
            "--unit-seconds",
            "5",
        ]
        .map(String::from),
    );
    args.extend(extra.iter().map(|a| a.to_string()));
    add_exec_campaign(url, &args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Starts a one-thread `grind-worker` named `name` that may run users' programs
/// (`--allow-exec`), caching bundles in `cache`.
pub fn start_exec_worker(url: &str, name: &str, cache: &Path) -> Proc {
    let mut cmd = grind_kit::launch::worker_command(&worker_bin(), url, Some(name), 1);
    cmd.arg("--allow-exec").arg("--bundle-cache").arg(cache);
    Proc::spawn_command(cmd)
}
