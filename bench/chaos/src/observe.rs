//! Watching the store while faults land: every half second the harness opens the database
//! read-only and checks that every lease, unit and campaign moved only along legal
//! transitions since the last look, and fingerprints the event log so the end of the run can
//! prove that no event seen earlier was changed or removed (the log is append-only).

use rusqlite::{Connection, OpenFlags};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Opens the database read-only (never creating or changing anything).
pub fn open_read_only(db: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    Ok(conn)
}

/// Whether a lease may go from `from` to `to`. Active leases end in any final state; a
/// lease that expired, was released or was cancelled may still deliver its result late
/// (it becomes completed, or failed when the result is a solver error); completed and
/// failed leases never change.
pub fn lease_transition_legal(from: &str, to: &str) -> bool {
    from == to
        || match from {
            "active" => matches!(
                to,
                "completed" | "expired" | "released" | "cancelled" | "failed"
            ),
            "expired" | "released" | "cancelled" => matches!(to, "completed" | "failed"),
            _ => false,
        }
}

/// Whether a unit may go from `from` to `to` (no campaign is resumed in a chaos run, so
/// done and failed are final).
pub fn unit_transition_legal(from: &str, to: &str) -> bool {
    from == to || matches!(from, "pending" | "leased")
}

/// FNV-1a, 64 bits: a stable fingerprint (the same on every run and platform).
#[derive(Clone, Copy, Debug)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    /// Mixes `bytes` in.
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
        // A separator, so that ("ab", "c") and ("a", "bc") differ.
        self.0 ^= 0xff;
        self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
    }

    /// The fingerprint so far.
    pub fn value(self) -> u64 {
        self.0
    }
}

const EVENT_COLUMNS: &str =
    "id, at_ms, kind, coalesce(campaign_id, -1), coalesce(unit_id, -1), coalesce(lease_id, -1), \
     coalesce(worker_id, -1), detail";

/// Folds the events with `after < id <= upto` into `digest`; returns the last id folded.
pub fn fold_events(
    conn: &Connection,
    digest: &mut Fnv,
    after: i64,
    upto: Option<i64>,
) -> rusqlite::Result<i64> {
    let sql = format!("SELECT {EVENT_COLUMNS} FROM events WHERE id > ?1 AND id <= ?2 ORDER BY id");
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query([after, upto.unwrap_or(i64::MAX)])?;
    let mut last = after;
    while let Some(row) = rows.next()? {
        let id: i64 = row.get(0)?;
        for column in 0..7 {
            let v: i64 = match column {
                2 => continue,
                _ => row.get(column)?,
            };
            digest.write(&v.to_le_bytes());
        }
        let kind: String = row.get(2)?;
        let detail: String = row.get(7)?;
        digest.write(kind.as_bytes());
        digest.write(detail.as_bytes());
        last = id;
    }
    Ok(last)
}

/// What the observer saw and found during a run.
#[derive(Debug, Default)]
pub struct Observer {
    db: PathBuf,
    leases: HashMap<i64, String>,
    units: HashMap<i64, (String, Option<String>)>,
    campaigns: HashMap<i64, (String, String)>,
    digest: Fnv,
    events_seen: i64,
    /// (last event id, fingerprint of every event up to it), one per look.
    pub event_checkpoints: Vec<(i64, u64)>,
    /// Looks taken.
    pub snapshots: u64,
    /// State changes checked against the transition rules.
    pub transitions_checked: u64,
    /// Looks that could not read the database (busy, or mid-recovery after a crash).
    pub failed_looks: u64,
    /// Illegal transitions seen.
    pub violations: Vec<String>,
}

impl Observer {
    /// An observer of the database at `db`.
    pub fn new(db: &Path) -> Observer {
        Observer {
            db: db.to_path_buf(),
            ..Observer::default()
        }
    }

    /// Takes one look, inside one read transaction.
    pub fn look(&mut self) {
        if !self.db.exists() {
            return;
        }
        match self.try_look() {
            Ok(()) => self.snapshots += 1,
            Err(_) => self.failed_looks += 1,
        }
    }

    fn try_look(&mut self) -> rusqlite::Result<()> {
        let mut conn = open_read_only(&self.db)?;
        let tx = conn.transaction()?;
        let leases: Vec<(i64, String)> = tx
            .prepare("SELECT id, state FROM leases")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        let units: Vec<(i64, String, Option<String>)> = tx
            .prepare("SELECT id, state, value FROM units")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?;
        let campaigns: Vec<(i64, String, String)> = tx
            .prepare("SELECT id, state, total FROM campaigns")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?;
        let mut digest = self.digest;
        let last = fold_events(&tx, &mut digest, self.events_seen, None)?;
        drop(tx);

        for (id, state) in leases {
            if let Some(before) = self.leases.get(&id) {
                self.transitions_checked += 1;
                if !lease_transition_legal(before, &state) {
                    self.violations
                        .push(format!("lease {id} went from {before} to {state}"));
                }
            }
            self.leases.insert(id, state);
        }
        for (id, state, value) in units {
            if let Some((before, before_value)) = self.units.get(&id) {
                self.transitions_checked += 1;
                if !unit_transition_legal(before, &state) {
                    self.violations
                        .push(format!("unit {id} went from {before} to {state}"));
                } else if before == "done" && before_value != &value {
                    self.violations.push(format!(
                        "done unit {id} changed its value from {before_value:?} to {value:?}"
                    ));
                }
            }
            self.units.insert(id, (state, value));
        }
        for (id, state, total) in campaigns {
            if let Some((before, before_total)) = self.campaigns.get(&id) {
                self.transitions_checked += 1;
                let finished = matches!(before.as_str(), "done" | "failed" | "cancelled");
                if finished && (before != &state || before_total != &total) {
                    self.violations.push(format!(
                        "finished campaign {id} changed from {before} ({before_total}) to \
                         {state} ({total})"
                    ));
                }
                let grew = match (before_total.parse::<u128>(), total.parse::<u128>()) {
                    (Ok(a), Ok(b)) => b >= a,
                    _ => true,
                };
                if !grew {
                    self.violations.push(format!(
                        "campaign {id}'s total went down from {before_total} to {total}"
                    ));
                }
            }
            self.campaigns.insert(id, (state, total));
        }
        if last > self.events_seen {
            self.digest = digest;
            self.events_seen = last;
            self.event_checkpoints.push((last, digest.value()));
        }
        Ok(())
    }

    /// Re-reads the whole event log and checks every fingerprint taken during the run:
    /// returns (checkpoints verified, violations).
    pub fn verify_append_only(&self, conn: &Connection) -> (u64, Vec<String>) {
        let mut violations = Vec::new();
        let mut digest = Fnv::default();
        let mut at = 0;
        let mut verified = 0;
        for &(upto, expected) in &self.event_checkpoints {
            match fold_events(conn, &mut digest, at, Some(upto)) {
                Ok(last) if last == upto && digest.value() == expected => verified += 1,
                Ok(last) => {
                    violations.push(format!(
                        "the event log up to id {upto} changed after it was seen (now ends at \
                         {last}, fingerprint {:016x} instead of {expected:016x})",
                        digest.value()
                    ));
                    break;
                }
                Err(e) => {
                    violations.push(format!("cannot re-read the event log: {e}"));
                    break;
                }
            }
            at = upto;
        }
        (verified, violations)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_rules() {
        assert!(lease_transition_legal("active", "expired"));
        assert!(lease_transition_legal("expired", "completed"));
        assert!(!lease_transition_legal("completed", "active"));
        assert!(!lease_transition_legal("expired", "active"));
        assert!(!lease_transition_legal("failed", "completed"));
        assert!(unit_transition_legal("leased", "pending"));
        assert!(!unit_transition_legal("done", "pending"));
    }

    #[test]
    fn a_rewritten_event_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("x.db");
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch(
            "CREATE TABLE events (id INTEGER PRIMARY KEY, at_ms INTEGER, kind TEXT,
                campaign_id INTEGER, unit_id INTEGER, lease_id INTEGER, worker_id INTEGER,
                detail TEXT);
             CREATE TABLE leases (id INTEGER PRIMARY KEY, state TEXT);
             CREATE TABLE units (id INTEGER PRIMARY KEY, state TEXT, value TEXT);
             CREATE TABLE campaigns (id INTEGER PRIMARY KEY, state TEXT, total TEXT);
             INSERT INTO events VALUES (1, 1, 'a', 1, NULL, NULL, NULL, '{}');
             INSERT INTO leases VALUES (1, 'active');",
        )
        .unwrap();
        let mut observer = Observer::new(&db);
        observer.look();
        conn.execute_batch(
            "INSERT INTO events VALUES (2, 2, 'b', 1, NULL, NULL, NULL, '{}');
             UPDATE leases SET state = 'expired';",
        )
        .unwrap();
        observer.look();
        assert_eq!(observer.snapshots, 2);
        assert!(observer.violations.is_empty());
        let (verified, bad) = observer.verify_append_only(&conn);
        assert_eq!((verified, bad.len()), (2, 0));
        conn.execute_batch("UPDATE events SET detail = '{\"x\":1}' WHERE id = 1; UPDATE leases SET state = 'active';")
            .unwrap();
        observer.look();
        assert_eq!(observer.violations.len(), 1, "{:?}", observer.violations);
        let (_, bad) = observer.verify_append_only(&conn);
        assert_eq!(bad.len(), 1);
    }
}
