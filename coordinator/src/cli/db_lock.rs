//! One coordinator per database: `grind serve` and `grind run` hold an exclusive lock on a
//! file beside the database (`DB.lock`) for as long as they run, and write who they are into
//! it, so a second coordinator is refused with a message naming the first.
//!
//! The lock is `flock(2)` on the open file (through `std::fs::File::try_lock`): the kernel
//! drops it when the holder exits, however it exits, so a crash never leaves a stale lock
//! behind; the file itself stays (removing it would race with the next holder). The offline
//! commands (`grind token`, `grind backup`) take no lock: SQLite serialises their writes with
//! the coordinator's, and the coordinator re-reads tokens while it runs.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// Why the database could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds the lock.
    #[error(
        "{db} is in use by another coordinator ({holder}); stop it first, or use another \
         --db (lock file {lock})"
    )]
    Held {
        /// The database.
        db: String,
        /// Who holds it, as its lock file says.
        holder: String,
        /// The lock file.
        lock: String,
    },
    /// The lock file could not be opened or locked.
    #[error("cannot lock {lock}: {source}")]
    Io {
        /// The lock file.
        lock: String,
        /// What failed.
        source: std::io::Error,
    },
}

/// An exclusive hold on a database, released when dropped (or when the process ends).
#[derive(Debug)]
pub struct DbLock {
    _file: File,
    path: PathBuf,
}

impl DbLock {
    /// The lock file of `db`: the same path with `.lock` appended.
    pub fn path_for(db: &Path) -> PathBuf {
        let mut name = db.as_os_str().to_owned();
        name.push(".lock");
        PathBuf::from(name)
    }

    /// Takes the lock of `db` without waiting, recording this process (pid, host, start time
    /// and command line) in the lock file.
    pub fn acquire(db: &Path) -> Result<DbLock, LockError> {
        let path = Self::path_for(db);
        let io = |source| LockError::Io {
            lock: path.display().to_string(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                return Err(LockError::Held {
                    db: db.display().to_string(),
                    holder: describe_holder(&text),
                    lock: path.display().to_string(),
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        let record = holder_record();
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        file.write_all(record.as_bytes()).map_err(io)?;
        file.flush().map_err(io)?;
        Ok(DbLock { _file: file, path })
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// What a holder writes into the lock file: `key=value` lines.
fn holder_record() -> String {
    // Linux-only, like the rest of grind.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let command: Vec<String> = std::env::args().collect();
    format!(
        "pid={}\nhost={host}\nstarted_unix={started}\ncommand={}\n",
        std::process::id(),
        command.join(" ").replace('\n', " ")
    )
}

/// "pid 123 on host h, started 40 s ago: grind serve --db x", from a holder's record.
fn describe_holder(record: &str) -> String {
    let field = |key: &str| {
        record
            .lines()
            .find_map(|line| line.strip_prefix(key)?.strip_prefix('='))
            .map(str::trim)
            .filter(|value| !value.is_empty())
    };
    let Some(pid) = field("pid") else {
        return "a process that has not recorded itself yet".into();
    };
    let mut out = format!("pid {pid}");
    if let Some(host) = field("host") {
        // An empty host (unreadable /proc) is left out by `field`.
        out += &format!(" on {host}");
    }
    if let Some(started) = field("started_unix").and_then(|s| s.parse::<u64>().ok()) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        out += &format!(", started {} s ago", now.saturating_sub(started));
    }
    if let Some(command) = field("command") {
        out += &format!(": {command}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_record() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("campaigns.db");
        let first = DbLock::acquire(&db).unwrap();
        assert_eq!(first.path(), dir.path().join("campaigns.db.lock"));
        let refused = DbLock::acquire(&db).unwrap_err().to_string();
        assert!(
            refused.contains(&format!("pid {}", std::process::id())),
            "{refused}"
        );
        assert!(
            refused.contains("in use by another coordinator"),
            "{refused}"
        );
        assert!(refused.contains("campaigns.db.lock"), "{refused}");
        drop(first);
        // Released on drop: the next holder gets it and rewrites the record.
        let again = DbLock::acquire(&db).unwrap();
        let text = std::fs::read_to_string(again.path()).unwrap();
        assert_eq!(text.matches("pid=").count(), 1, "{text}");
    }

    #[test]
    fn describes_partial_records() {
        assert_eq!(
            describe_holder(""),
            "a process that has not recorded itself yet"
        );
        assert_eq!(describe_holder("pid=7\nhost=h\n"), "pid 7 on h");
        assert_eq!(
            describe_holder("pid=7\ncommand=grind serve --db x\n"),
            "pid 7: grind serve --db x"
        );
    }
}
