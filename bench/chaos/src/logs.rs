//! What the processes' logs say: which leases' results each worker heard accepted (the
//! worker logs `lease N: result accepted` when the coordinator acknowledges a result as
//! new), and whether anything panicked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Leases whose results a worker heard accepted, with the log that says so.
pub fn accepted_leases(log_dir: &Path) -> BTreeMap<i64, PathBuf> {
    let mut accepted = BTreeMap::new();
    for path in log_files(log_dir, "worker-") {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for line in text.lines() {
            if let Some(lease) = accepted_lease(line) {
                accepted.insert(lease, path.clone());
            }
        }
    }
    accepted
}

/// The lease id of a `lease N: result accepted` log line.
pub fn accepted_lease(line: &str) -> Option<i64> {
    let rest = &line[line.find("lease ")? + "lease ".len()..];
    let (number, tail) = rest.split_once(':')?;
    if tail.trim() != "result accepted" {
        return None;
    }
    number.trim().parse().ok()
}

/// Lines reporting a panic, with their file, from every log.
pub fn panics(log_dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for path in log_files(log_dir, "") {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for line in text.lines().filter(|l| l.contains("panicked")) {
            found.push(format!("{}: {line}", path.display()));
        }
    }
    found
}

fn log_files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(prefix) && n.ends_with(".log"))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_acceptance_lines() {
        let line = "2026-11-22T06:00:00Z  INFO grind_worker::agent: lease 42: result accepted";
        assert_eq!(accepted_lease(line), Some(42));
        assert_eq!(
            accepted_lease("INFO lease 42: the unit is already finished"),
            None
        );
        assert_eq!(accepted_lease("INFO lease 4"), None);
    }
}
