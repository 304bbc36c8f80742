//! Starting the processes under test: the command lines of `grind serve` (on a loopback
//! port, over a database) and `grind-worker`, the address `grind serve` prints once it
//! listens, SIGTERM, the tail of a log, and the directory a run works in. Each caller
//! spawns the command its own way (std or tokio, stderr collected or to a file).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `grind serve` on `listen` (`127.0.0.1:0`: a free loopback port, printed once bound)
/// over the database `db`, with lease time `lease_ttl_ms` and heartbeat interval
/// `heartbeat_ms`; logging at info level, stdin closed, stdout piped (the first line says
/// where it listens: see [`listening_addr`]). More flags may be appended.
pub fn serve_command(
    grind: &Path,
    listen: &str,
    db: &Path,
    lease_ttl_ms: u64,
    heartbeat_ms: u64,
) -> Command {
    let mut cmd = Command::new(grind);
    cmd.args(["serve", "--listen", listen, "--db"])
        .arg(db)
        .args(["--lease-ttl-ms", &lease_ttl_ms.to_string()])
        .args(["--heartbeat-ms", &heartbeat_ms.to_string()])
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    cmd
}

/// `grind-worker` against the coordinator at `url` with `threads` solver threads (and
/// `--name` when given); logging at info level, stdin closed. More flags may be appended.
pub fn worker_command(worker: &Path, url: &str, name: Option<&str>, threads: usize) -> Command {
    let mut cmd = Command::new(worker);
    cmd.args(["--coordinator", url]);
    if let Some(name) = name {
        cmd.args(["--name", name]);
    }
    cmd.args(["--threads", &threads.to_string()])
        .env("RUST_LOG", "info")
        .stdin(Stdio::null());
    cmd
}

/// The address in `grind serve`'s first line (`... listening on 127.0.0.1:PORT`), if the
/// line is that one.
pub fn listening_addr(line: &str) -> Option<SocketAddr> {
    if !line.contains("listening on") {
        return None;
    }
    line.trim().rsplit(' ').next()?.parse().ok()
}

/// Sends SIGTERM to process `pid` (the processes take it as "checkpoint and stop").
pub fn sigterm(pid: u32) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        if pid > 0 {
            // SAFETY: kill(2) with a positive pid names one process; no memory is touched.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
    }
}

/// The last `bytes` bytes of a log file (for error messages), from a character boundary;
/// empty when it cannot be read.
pub fn tail_of(path: &Path, bytes: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let start = text.len().saturating_sub(bytes);
    let start = (start..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    text[start..].to_string()
}

/// The directory for a run's databases and logs: `out` when given, else a new temporary
/// directory named `prefix...`, returned as well so that the caller decides how long it lives
/// (and can keep it when a run fails).
pub fn work_dir(
    out: Option<&Path>,
    prefix: &str,
) -> std::io::Result<(PathBuf, Option<tempfile::TempDir>)> {
    match out {
        Some(dir) => Ok((dir.to_path_buf(), None)),
        None => {
            let dir = tempfile::Builder::new().prefix(prefix).tempdir()?;
            Ok((dir.path().to_path_buf(), Some(dir)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_listening_line() {
        let line = "grind 0.1.0 listening on 127.0.0.1:41234\n";
        assert_eq!(
            listening_addr(line),
            Some("127.0.0.1:41234".parse().unwrap())
        );
        assert_eq!(listening_addr("error: database is locked"), None);
        assert_eq!(listening_addr("listening on nowhere"), None);
        assert_eq!(listening_addr(""), None);
    }

    #[test]
    fn command_lines_are_the_documented_flags() {
        let serve = serve_command(
            Path::new("grind"),
            "127.0.0.1:0",
            Path::new("/tmp/g.db"),
            500,
            100,
        );
        let args: Vec<_> = serve.get_args().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(
            args,
            [
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--db",
                "/tmp/g.db",
                "--lease-ttl-ms",
                "500",
                "--heartbeat-ms",
                "100"
            ]
        );
        let worker = worker_command(Path::new("w"), "http://x", None, 2);
        let args: Vec<_> = worker.get_args().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(args, ["--coordinator", "http://x", "--threads", "2"]);
        let named = worker_command(Path::new("w"), "http://x", Some("a"), 1);
        assert_eq!(named.get_args().count(), 6);
    }

    #[test]
    fn tails_start_on_a_character() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        std::fs::write(&log, "abcé").unwrap();
        assert_eq!(tail_of(&log, 1), "");
        assert_eq!(tail_of(&log, 2), "é");
        assert_eq!(tail_of(&log, 100), "abcé");
        assert_eq!(tail_of(&dir.path().join("none"), 10), "");
    }

    #[test]
    fn a_given_work_dir_is_kept_and_a_temporary_one_is_made() {
        let given = Path::new("/some/where");
        let (dir, temporary) = work_dir(Some(given), "x-").unwrap();
        assert_eq!(dir, given);
        assert!(temporary.is_none());
        let (dir, temporary) = work_dir(None, "grind-kit-").unwrap();
        assert!(dir.is_dir());
        assert!(temporary.is_some());
    }
}
