//! What the processes said: which leases' results each worker heard accepted — read from the
//! workers' event streams (`grind-worker --events`, one JSON object per line, a format the
//! worker pins with a test), not from their human logs, whose wording and levels may change —
//! and whether anything panicked (from the logs).

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file name ending of a worker's event stream beside its log.
pub const EVENTS_SUFFIX: &str = ".events.jsonl";

/// What the workers' event streams say.
#[derive(Clone, Debug, Default)]
pub struct Heard {
    /// Leases whose results a worker heard accepted, with the stream that says so.
    pub accepted: BTreeMap<i64, PathBuf>,
    /// Event streams read.
    pub streams: usize,
    /// Lines that are not events (a SIGKILLed worker's unfinished last line excepted).
    pub malformed: Vec<String>,
}

/// The fields of an event line the harness reads.
#[derive(Deserialize)]
struct Line {
    event: String,
    #[serde(default)]
    lease_id: Option<i64>,
}

/// Reads every worker event stream in `log_dir`.
pub fn heard(log_dir: &Path) -> Heard {
    let mut heard = Heard::default();
    for path in log_files(log_dir, "worker-", EVENTS_SUFFIX) {
        heard.streams += 1;
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let complete = text.ends_with('\n');
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            match serde_json::from_str::<Line>(line) {
                Ok(event) => {
                    if event.event == "result_accepted" {
                        match event.lease_id {
                            Some(lease) => {
                                heard.accepted.insert(lease, path.clone());
                            }
                            None => heard.malformed.push(format!(
                                "{}:{}: result_accepted without a lease_id",
                                path.display(),
                                i + 1
                            )),
                        }
                    }
                }
                // A worker killed in the middle of a write leaves its last line unfinished.
                Err(_) if i + 1 == lines.len() && !complete => {}
                Err(e) => {
                    heard
                        .malformed
                        .push(format!("{}:{}: {e}: {line}", path.display(), i + 1))
                }
            }
        }
    }
    heard
}

/// Lines reporting a panic, with their file, from every log.
pub fn panics(log_dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for path in log_files(log_dir, "", ".log") {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for line in text.lines().filter(|l| l.contains("panicked")) {
            found.push(format!("{}: {line}", path.display()));
        }
    }
    found
}

fn log_files(dir: &Path, prefix: &str, suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(prefix) && n.ends_with(suffix))
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
    fn acceptances_come_from_the_event_streams() {
        let dir = tempfile::tempdir().unwrap();
        // Lines as grind-worker writes them (see grind_worker::events' format test).
        std::fs::write(
            dir.path().join(format!("worker-0.0{EVENTS_SUFFIX}")),
            concat!(
                r#"{"event":"registered","worker_id":1,"at_ms":5}"#,
                "\n",
                r#"{"event":"result_accepted","worker_id":1,"lease_id":42,"campaign_id":1,"unit_id":7,"at_ms":6}"#,
                "\n",
                r#"{"event":"result_duplicate","worker_id":1,"lease_id":43,"campaign_id":1,"unit_id":8,"at_ms":7}"#,
                "\n",
                // Killed mid-line.
                r#"{"event":"result_acc"#,
            ),
        )
        .unwrap();
        std::fs::write(
            dir.path().join(format!("worker-1.0{EVENTS_SUFFIX}")),
            "not json\n{\"event\":\"result_accepted\",\"lease_id\":50}\n",
        )
        .unwrap();
        // A log line saying the same is not a source.
        std::fs::write(
            dir.path().join("worker-2.0.log"),
            "INFO grind_worker::agent: lease 60: result accepted\n",
        )
        .unwrap();
        let heard = heard(dir.path());
        assert_eq!(heard.streams, 2);
        assert_eq!(heard.accepted.keys().copied().collect::<Vec<_>>(), [42, 50]);
        assert_eq!(heard.malformed.len(), 1, "{:?}", heard.malformed);
        assert!(heard.malformed[0].contains("worker-1.0"));
    }
}
