//! The worker's event stream (`grind-worker --events FILE`): one JSON object per line for
//! each thing the coordinator told this worker that a harness may want to trace (chaos runs
//! check every result a worker heard accepted against the store). Unlike the log, this is
//! a contract: the lines below are pinned by a test, and fields are only ever added.
//!
//! Every line has `event` (its kind), then the kind's fields, then `at_ms` (milliseconds
//! since the Unix epoch, when the worker learnt it) and `at_us` (the same instant in
//! microseconds):
//!
//! | `event` | fields |
//! |---|---|
//! | `registered` | `worker_id` |
//! | `lease_granted` | `worker_id`, `lease_id`, `campaign_id`, `unit_id`, `replica` |
//! | `unit_started` | `worker_id`, `lease_id`, `campaign_id`, `unit_id`: a solving thread took the (queued) unit; its solve starts now |
//! | `result_accepted` | `worker_id`, `lease_id`, `campaign_id`, `unit_id`: the result was new and taken |
//! | `result_duplicate` | same: acknowledged, but the unit was already finished |
//! | `result_refused` | same plus `code` (gRPC code) and `reason` |
//! | `improvement_accepted` | `worker_id`, `lease_id`, `campaign_id`, `score` |
//! | `units_donated` | `worker_id`, `lease_id`, `accepted` (units taken) |
//! | `lease_released` | `worker_id`, `lease_id`, `campaign_id`, `unit_id` (handed back) |
//! | `lease_cancelled` | `worker_id`, `lease_id` (the coordinator took it back) |
//! | `refused` | `worker_id`, `kind` (`banned`, `token`), `reason`: the worker stops for good |
//! | `stopped` | `worker_id`, `units_done`, `refused`, `undelivered` |
//!
//! Each line is written with one `write` to a file opened for appending, so a killed worker
//! leaves at most its last line unfinished.

use serde::Serialize;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::WorkerError;

/// One event of the stream (see the module docs for the meaning of each).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum WorkerEvent {
    /// The coordinator gave this worker its identity.
    Registered {
        /// The identity.
        worker_id: i64,
    },
    /// A unit was leased to this worker.
    LeaseGranted {
        /// This worker.
        worker_id: i64,
        /// The lease.
        lease_id: i64,
        /// Its campaign.
        campaign_id: i64,
        /// Its unit.
        unit_id: i64,
        /// Whether it re-runs a finished unit to check it.
        replica: bool,
    },
    /// A granted unit's solve is starting on a thread (at once, or after waiting in the
    /// queue for a free thread).
    UnitStarted {
        /// This worker.
        worker_id: i64,
        /// The lease.
        lease_id: i64,
        /// Its campaign.
        campaign_id: i64,
        /// Its unit.
        unit_id: i64,
    },
    /// The coordinator acknowledged a result as new and took it.
    ResultAccepted {
        /// This worker.
        worker_id: i64,
        /// The lease the result was for.
        lease_id: i64,
        /// Its campaign.
        campaign_id: i64,
        /// Its unit.
        unit_id: i64,
    },
    /// The coordinator acknowledged a result of a unit that was already finished.
    ResultDuplicate {
        /// This worker.
        worker_id: i64,
        /// The lease the result was for.
        lease_id: i64,
        /// Its campaign.
        campaign_id: i64,
        /// Its unit.
        unit_id: i64,
    },
    /// The coordinator refused a result.
    ResultRefused {
        /// This worker.
        worker_id: i64,
        /// The lease the result was for.
        lease_id: i64,
        /// Its campaign.
        campaign_id: i64,
        /// Its unit.
        unit_id: i64,
        /// The gRPC status code.
        code: i32,
        /// The coordinator's reason.
        reason: String,
    },
    /// The coordinator took an improvement as the campaign's new best.
    ImprovementAccepted {
        /// This worker.
        worker_id: i64,
        /// The lease it was found under.
        lease_id: i64,
        /// Its campaign.
        campaign_id: i64,
        /// The score the coordinator computed.
        score: i64,
    },
    /// The coordinator took part of a leased unit as new units.
    UnitsDonated {
        /// This worker.
        worker_id: i64,
        /// The donating lease.
        lease_id: i64,
        /// Units taken.
        accepted: u32,
    },
    /// A lease was handed back unfinished (with its checkpoint) and acknowledged.
    LeaseReleased {
        /// This worker.
        worker_id: i64,
        /// The lease.
        lease_id: i64,
        /// Its campaign.
        campaign_id: i64,
        /// Its unit.
        unit_id: i64,
    },
    /// The coordinator took a lease back (its unit was finished elsewhere).
    LeaseCancelled {
        /// This worker.
        worker_id: i64,
        /// The lease.
        lease_id: i64,
    },
    /// The coordinator refuses this worker for good; it stops.
    Refused {
        /// This worker (0 if it never registered).
        worker_id: i64,
        /// `banned` or `token`.
        kind: RefusedFor,
        /// The coordinator's reason.
        reason: String,
    },
    /// The worker stopped.
    Stopped {
        /// This worker (0 if it never registered).
        worker_id: i64,
        /// Results accepted.
        units_done: u64,
        /// Deliveries refused.
        refused: u64,
        /// Messages still undelivered.
        undelivered: usize,
    },
}

/// Why the coordinator refuses a worker for good.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusedFor {
    /// An administrator banned it.
    Banned,
    /// Its token is missing, wrong or revoked.
    Token,
}

#[derive(Serialize)]
struct Line<'a> {
    #[serde(flatten)]
    event: &'a WorkerEvent,
    at_ms: i64,
    at_us: i64,
}

/// `event` as its line (without the newline) at `at_us` microseconds since the Unix epoch.
pub fn line(event: &WorkerEvent, at_us: i64) -> String {
    let at_ms = at_us.div_euclid(1000);
    serde_json::to_string(&Line {
        event,
        at_ms,
        at_us,
    })
    .unwrap_or_else(|e| {
        // Unreachable for these plain types; say so in the stream rather than panic.
        format!(r#"{{"event":"unwritable","reason":{:?}}}"#, e.to_string())
    })
}

/// Where events go: a file, or nowhere.
#[derive(Default)]
pub struct EventLog {
    file: Option<File>,
    failed: AtomicBool,
}

impl EventLog {
    /// A stream appending to `path` (created if missing).
    pub fn open(path: &Path) -> Result<EventLog, WorkerError> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| {
                WorkerError::Setup(format!(
                    "cannot open the events file {}: {e}",
                    path.display()
                ))
            })?;
        Ok(EventLog {
            file: Some(file),
            failed: AtomicBool::new(false),
        })
    }

    /// Writes `event` now (nothing when there is no file). A failed write is logged once.
    pub fn emit(&self, event: WorkerEvent) {
        let Some(mut file) = self.file.as_ref() else {
            return;
        };
        let at_us = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        let mut text = line(&event, at_us);
        text.push('\n');
        if let Err(e) = file.write_all(text.as_bytes()) {
            if !self.failed.swap(true, Ordering::Relaxed) {
                tracing::error!("cannot write to the events file: {e}; events are being lost");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stream is a contract: these lines must not change (fields may only be added, at
    /// the end, with a new line here).
    #[test]
    fn the_format_is_stable() {
        let (w, l, c, u) = (3, 41, 5, 17);
        let cases = [
            (
                WorkerEvent::Registered { worker_id: w },
                r#"{"event":"registered","worker_id":3,"at_ms":1000,"at_us":1000250}"#,
            ),
            (
                WorkerEvent::LeaseGranted {
                    worker_id: w,
                    lease_id: l,
                    campaign_id: c,
                    unit_id: u,
                    replica: false,
                },
                r#"{"event":"lease_granted","worker_id":3,"lease_id":41,"campaign_id":5,"unit_id":17,"replica":false,"at_ms":1000,"at_us":1000250}"#,
            ),
            (
                WorkerEvent::UnitStarted {
                    worker_id: w,
                    lease_id: l,
                    campaign_id: c,
                    unit_id: u,
                },
                r#"{"event":"unit_started","worker_id":3,"lease_id":41,"campaign_id":5,"unit_id":17,"at_ms":1000,"at_us":1000250}"#,
            ),
            (
                WorkerEvent::ResultAccepted {
                    worker_id: w,
                    lease_id: l,
                    campaign_id: c,
                    unit_id: u,
                },
                r#"{"event":"result_accepted","worker_id":3,"lease_id":41,"campaign_id":5,"unit_id":17,"at_ms":1000,"at_us":1000250}"#,
            ),
            (
                WorkerEvent::ResultDuplicate {
                    worker_id: w,
                    lease_id: l,
                    campaign_id: c,
                    unit_id: u,
                },
                r#"{"event":"result_duplicate","worker_id":3,"lease_id":41,"campaign_id":5,"unit_id":17,"at_ms":1000,"at_us":1000250}"#,
            ),
            (
                WorkerEvent::ResultRefused {
                    worker_id: w,
                    lease_id: l,
                    campaign_id: c,
                    unit_id: u,
                    code: 9,
                    reason: "lease 41 has ended".into(),
                },
                r#"{"event":"result_refused","worker_id":3,"lease_id":41,"campaign_id":5,"unit_id":17,"code":9,"reason":"lease 41 has ended","at_ms":1000,"at_us":1000250}"#,
            ),
            (
                WorkerEvent::ImprovementAccepted {
                    worker_id: w,
                    lease_id: l,
                    campaign_id: c,
                    score: -12,
                },
                r#"{"event":"improvement_accepted","worker_id":3,"lease_id":41,"campaign_id":5,"score":-12,"at_ms":1000,"at_us":1000250}"#,
            ),
            (
                WorkerEvent::UnitsDonated {
                    worker_id: w,
                    lease_id: l,
                    accepted: 2,
                },
                r#"{"event":"units_donated","worker_id":3,"lease_id":41,"accepted":2,"at_ms":1000,"at_us":1000250}"#,
            ),
            (
                WorkerEvent::LeaseReleased {
                    worker_id: w,
                    lease_id: l,
                    campaign_id: c,
                    unit_id: u,
                },
                r#"{"event":"lease_released","worker_id":3,"lease_id":41,"campaign_id":5,"unit_id":17,"at_ms":1000,"at_us":1000250}"#,
            ),
            (
                WorkerEvent::LeaseCancelled {
                    worker_id: w,
                    lease_id: l,
                },
                r#"{"event":"lease_cancelled","worker_id":3,"lease_id":41,"at_ms":1000,"at_us":1000250}"#,
            ),
            (
                WorkerEvent::Refused {
                    worker_id: w,
                    kind: RefusedFor::Banned,
                    reason: "worker 3 is banned".into(),
                },
                r#"{"event":"refused","worker_id":3,"kind":"banned","reason":"worker 3 is banned","at_ms":1000,"at_us":1000250}"#,
            ),
            (
                WorkerEvent::Stopped {
                    worker_id: w,
                    units_done: 7,
                    refused: 1,
                    undelivered: 0,
                },
                r#"{"event":"stopped","worker_id":3,"units_done":7,"refused":1,"undelivered":0,"at_ms":1000,"at_us":1000250}"#,
            ),
        ];
        for (event, expected) in cases {
            assert_eq!(line(&event, 1_000_250), expected);
        }
    }

    #[test]
    fn events_are_appended_one_line_each() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let log = EventLog::open(&path).unwrap();
        log.emit(WorkerEvent::Registered { worker_id: 1 });
        log.emit(WorkerEvent::LeaseCancelled {
            worker_id: 1,
            lease_id: 2,
        });
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["event"], "registered");
        assert_eq!(lines[1]["lease_id"], 2);
        let (ms, us) = (
            lines[1]["at_ms"].as_i64().unwrap(),
            lines[1]["at_us"].as_i64().unwrap(),
        );
        assert!(ms > 1_600_000_000_000);
        assert_eq!(us / 1000, ms);
        let err = EventLog::open(&dir.path().join("no/such/dir/events"))
            .err()
            .unwrap();
        assert!(err.to_string().contains("events file"), "{err}");
    }
}
