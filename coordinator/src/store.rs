//! The coordinator's durable state: one SQLite database in WAL mode.
//!
//! All writes go through one writer thread that owns the write connection and commits in
//! groups: it takes every write waiting in its queue, runs each inside its own SAVEPOINT (so a
//! failing write rolls back alone and changes nothing), commits them together with one fsync,
//! and only then answers the callers. Each state change is atomic and durable before anyone
//! hears of it, and a busy coordinator pays one fsync per group instead of one per change.
//! Reads use a separate connection (WAL lets them run beside the writer).

use rusqlite::Connection;
use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};
use tokio::sync::oneshot;

use crate::error::Error;
use crate::schema;

/// Most writes committed in one group.
const MAX_GROUP: usize = 512;

/// One queued write: runs inside its own savepoint, then hears whether the group committed.
trait Job: Send {
    /// Runs the change; returns false when it failed and must be rolled back.
    fn run(&mut self, conn: &Connection) -> bool;
    /// Delivers the outcome once the group's commit is known.
    fn finish(self: Box<Self>, committed: Result<(), String>);
}

struct WriteJob<R, F> {
    f: Option<F>,
    outcome: Option<Result<R, Error>>,
    tx: oneshot::Sender<Result<R, Error>>,
}

impl<R, F> Job for WriteJob<R, F>
where
    R: Send + 'static,
    F: FnOnce(&Connection) -> Result<R, Error> + Send + 'static,
{
    fn run(&mut self, conn: &Connection) -> bool {
        let f = self.f.take().expect("a job runs once");
        let outcome = f(conn);
        let ok = outcome.is_ok();
        self.outcome = Some(outcome);
        ok
    }

    fn finish(self: Box<Self>, committed: Result<(), String>) {
        let answer = match (committed, self.outcome) {
            (Ok(()), Some(outcome)) => outcome,
            (Ok(()), None) => Err(Error::Internal("a write never ran".into())),
            (Err(e), _) => Err(Error::Unavailable(format!(
                "the store could not commit: {e}"
            ))),
        };
        let _ = self.tx.send(answer);
    }
}

/// How durable a commit is before its caller hears of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Synced to disk (`synchronous=FULL`): a commit survives a power loss. Every database
    /// a campaign can be resumed from.
    Full,
    /// Handed to the operating system only (`synchronous=OFF`): a commit survives the
    /// process dying (the WAL keeps the database consistent), not a power loss. Only for a
    /// scratch database that nothing resumes from, such as `grind run`'s temporary one,
    /// which is deleted when the run ends.
    Scratch,
}

/// Handle to the store; cheap to clone.
#[derive(Clone)]
pub struct Store {
    writer: mpsc::Sender<Box<dyn Job>>,
    reader: Arc<Mutex<Connection>>,
}

impl Store {
    /// Opens (creating and migrating if needed) the database at `path`.
    pub fn open(path: &Path) -> Result<Store, Error> {
        Store::open_with(path, Durability::Full)
    }

    /// Opens the database at `path` as [`Store::open`] does, with commits as durable as
    /// `durability` says.
    pub fn open_with(path: &Path, durability: Durability) -> Result<Store, Error> {
        let mut write_conn = Connection::open(path)?;
        configure(&write_conn, durability)?;
        schema::migrate(&mut write_conn)?;
        let read_conn = Connection::open(path)?;
        configure(&read_conn, durability)?;
        let (writer, jobs) = mpsc::channel::<Box<dyn Job>>();
        std::thread::Builder::new()
            .name("grind-store".into())
            .spawn(move || writer_loop(write_conn, jobs))
            .map_err(|e| Error::Internal(format!("cannot start the store thread: {e}")))?;
        Ok(Store {
            writer,
            reader: Arc::new(Mutex::new(read_conn)),
        })
    }

    /// Runs `f` as one atomic, durable change. If `f` fails, nothing it did is kept.
    pub async fn write<R, F>(&self, f: F) -> Result<R, Error>
    where
        R: Send + 'static,
        F: FnOnce(&Connection) -> Result<R, Error> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel::<Result<R, Error>>();
        let job: Box<dyn Job> = Box::new(WriteJob {
            f: Some(f),
            outcome: None,
            tx,
        });
        self.writer
            .send(job)
            .map_err(|_| Error::Unavailable("the store is shut down".into()))?;
        rx.await
            .map_err(|_| Error::Internal("the store dropped a write".into()))?
    }

    /// Runs a read-only query on the reader connection (off the async runtime's threads).
    pub async fn read<R, F>(&self, f: F) -> Result<R, Error>
    where
        R: Send + 'static,
        F: FnOnce(&Connection) -> Result<R, Error> + Send + 'static,
    {
        let reader = self.reader.clone();
        tokio::task::spawn_blocking(move || {
            let conn = reader
                .lock()
                .map_err(|_| Error::Internal("reader poisoned".into()))?;
            conn.execute_batch("BEGIN DEFERRED")?;
            let out = f(&conn);
            conn.execute_batch("COMMIT")?;
            out
        })
        .await
        .map_err(|e| Error::Internal(format!("read task failed: {e}")))?
    }
}

/// Runs `f` inside a savepoint of the current write: if it fails, what it did is rolled
/// back alone and the rest of the write goes on (a batch of changes whose items succeed or
/// fail one by one).
pub fn in_savepoint<R>(
    conn: &Connection,
    f: impl FnOnce() -> Result<R, Error>,
) -> Result<R, Error> {
    conn.execute_batch("SAVEPOINT batch_item")?;
    match f() {
        Ok(value) => {
            conn.execute_batch("RELEASE batch_item")?;
            Ok(value)
        }
        Err(err) => {
            conn.execute_batch("ROLLBACK TO batch_item; RELEASE batch_item")?;
            Err(err)
        }
    }
}

fn configure(conn: &Connection, durability: Durability) -> Result<(), Error> {
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    let synchronous = match durability {
        Durability::Full => "FULL",
        Durability::Scratch => "OFF",
    };
    conn.pragma_update(None, "synchronous", synchronous)?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // Savepoint sub-journals stay in memory (measured: 22% of the writer's time went to
    // temp-file writes), every statement of a lease cycle stays prepared (the default cache
    // of 16 is smaller than one grant + completion), and query plans are not re-made on
    // every bind (the query planner stability guarantee).
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.set_prepared_statement_cache_capacity(256);
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(())
}

fn writer_loop(conn: Connection, jobs: mpsc::Receiver<Box<dyn Job>>) {
    while let Ok(first) = jobs.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match jobs.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let started = std::time::Instant::now();
        if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
            let msg = format!("cannot begin a transaction: {e}");
            tracing::error!("store: {msg}");
            for job in group {
                job.finish(Err(msg.clone()));
            }
            continue;
        }
        let mut failed_savepoint = None;
        for job in group.iter_mut() {
            let step = conn.execute_batch("SAVEPOINT op").and_then(|()| {
                if job.run(&conn) {
                    conn.execute_batch("RELEASE op")
                } else {
                    conn.execute_batch("ROLLBACK TO op; RELEASE op")
                }
            });
            if let Err(e) = step {
                failed_savepoint = Some(e.to_string());
                break;
            }
        }
        let committed = match failed_savepoint {
            Some(e) => Err(e),
            None => conn.execute_batch("COMMIT").map_err(|e| e.to_string()),
        };
        if let Err(e) = &committed {
            tracing::error!("store: group not committed: {e}");
            let _ = conn.execute_batch("ROLLBACK");
        }
        crate::metrics::observe_store_transaction(started.elapsed().as_secs_f64(), group.len());
        for job in group {
            job.finish(committed.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `PRAGMA synchronous` of the store's connections (0 = OFF, 2 = FULL).
    async fn synchronous(store: &Store) -> (i64, i64) {
        let read = store
            .read(|c| Ok(c.pragma_query_value(None, "synchronous", |r| r.get(0))?))
            .await
            .unwrap();
        let write = store
            .write(|c| Ok(c.pragma_query_value(None, "synchronous", |r| r.get(0))?))
            .await
            .unwrap();
        (read, write)
    }

    #[tokio::test]
    async fn only_a_scratch_database_skips_the_disk_sync() {
        let dir = tempfile::tempdir().unwrap();
        let full = Store::open(&dir.path().join("full.db")).unwrap();
        assert_eq!(synchronous(&full).await, (2, 2));
        let scratch =
            Store::open_with(&dir.path().join("scratch.db"), Durability::Scratch).unwrap();
        assert_eq!(synchronous(&scratch).await, (0, 0));
        // Both are migrated to the newest schema.
        for store in [&full, &scratch] {
            let version: i64 = store
                .read(|c| Ok(c.pragma_query_value(None, "user_version", |r| r.get(0))?))
                .await
                .unwrap();
            assert_eq!(version, schema::current_version());
        }
    }
}
