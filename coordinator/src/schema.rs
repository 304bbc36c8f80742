//! The database schema and its migrations. `PRAGMA user_version` holds the schema version;
//! a database written by a newer grind is refused rather than guessed at.

use rusqlite::Connection;

use crate::error::Error;

/// Each entry upgrades the schema by one version, in order.
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE workers (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    host TEXT NOT NULL,
    cores INTEGER NOT NULL,
    version TEXT NOT NULL,
    git_commit TEXT NOT NULL,
    registered_ms INTEGER NOT NULL,
    last_seen_ms INTEGER NOT NULL,
    banned INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE campaigns (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    problem TEXT NOT NULL,
    params_json TEXT NOT NULL,
    objective TEXT NOT NULL,
    exhaustive INTEGER NOT NULL,
    solver_version INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('running', 'paused', 'done', 'failed', 'cancelled')),
    created_ms INTEGER NOT NULL,
    finished_ms INTEGER,
    verify_rate REAL NOT NULL,
    max_attempts INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    split_cursor BLOB,
    split_done INTEGER NOT NULL DEFAULT 0,
    next_seq INTEGER NOT NULL DEFAULT 0,
    bound INTEGER,
    best_score INTEGER,
    best_solution TEXT,
    best_event INTEGER,
    total TEXT NOT NULL DEFAULT '0',
    samples INTEGER NOT NULL DEFAULT 0,
    cpu_seconds REAL NOT NULL DEFAULT 0,
    nodes INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE units (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    seq INTEGER NOT NULL,
    label TEXT NOT NULL,
    payload BLOB NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'leased', 'done', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    cursor BLOB,
    lease_id INTEGER,
    replica_needed INTEGER NOT NULL DEFAULT 0,
    disputed INTEGER NOT NULL DEFAULT 0,
    value TEXT,
    done_ms INTEGER,
    UNIQUE (campaign_id, seq)
);
CREATE INDEX units_by_state ON units (campaign_id, state, id);

CREATE TABLE leases (
    id INTEGER PRIMARY KEY,
    unit_id INTEGER NOT NULL REFERENCES units(id),
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    worker_id INTEGER NOT NULL REFERENCES workers(id),
    granted_ms INTEGER NOT NULL,
    deadline_ms INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('active', 'completed', 'expired', 'released', 'cancelled', 'failed')),
    replica INTEGER NOT NULL,
    nodes INTEGER NOT NULL DEFAULT 0,
    fraction REAL,
    ended_ms INTEGER
);
CREATE INDEX leases_active ON leases (state, deadline_ms);
CREATE INDEX leases_by_worker ON leases (worker_id, state);
CREATE INDEX leases_by_campaign ON leases (campaign_id, state);

CREATE TABLE results (
    id INTEGER PRIMARY KEY,
    unit_id INTEGER NOT NULL REFERENCES units(id),
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    lease_id INTEGER NOT NULL REFERENCES leases(id),
    worker_id INTEGER NOT NULL REFERENCES workers(id),
    value TEXT NOT NULL,
    solution TEXT,
    nodes INTEGER NOT NULL,
    cpu_seconds REAL NOT NULL,
    wall_seconds REAL NOT NULL,
    created_ms INTEGER NOT NULL,
    replica INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('accepted', 'awaiting', 'rejected'))
);
CREATE INDEX results_by_unit ON results (unit_id);
CREATE INDEX results_by_campaign ON results (campaign_id);

CREATE TABLE samples (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    unit_id INTEGER NOT NULL REFERENCES units(id),
    result_id INTEGER NOT NULL REFERENCES results(id),
    data TEXT NOT NULL
);
CREATE INDEX samples_by_campaign ON samples (campaign_id, id);

CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    at_ms INTEGER NOT NULL,
    kind TEXT NOT NULL,
    campaign_id INTEGER,
    unit_id INTEGER,
    lease_id INTEGER,
    worker_id INTEGER,
    detail TEXT NOT NULL
);
CREATE INDEX events_by_campaign ON events (campaign_id, id);

CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
"#,
    r#"
-- v2: units created by other units' results (best-first expansion) are granted by priority,
-- and a campaign never holds the same spawned payload twice.
ALTER TABLE units ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
DROP INDEX units_by_state;
CREATE INDEX units_by_state ON units (campaign_id, state, priority, id);
CREATE TABLE spawned_payloads (
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    payload BLOB NOT NULL,
    PRIMARY KEY (campaign_id, payload)
) WITHOUT ROWID;
"#,
    r#"
-- v3: authentication tokens (stored as SHA-256 digests) and the token each worker
-- registered with.
CREATE TABLE tokens (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('worker', 'admin')),
    hash BLOB NOT NULL UNIQUE,
    created_ms INTEGER NOT NULL,
    revoked_ms INTEGER
);
ALTER TABLE workers ADD COLUMN token_id INTEGER REFERENCES tokens(id);
ALTER TABLE workers ADD COLUMN banned_ms INTEGER;
"#,
    r#"
-- v4: campaigns created together (a family, a contest) share a label.
ALTER TABLE campaigns ADD COLUMN family TEXT;
CREATE INDEX campaigns_by_family ON campaigns (family, id);
"#,
    r#"
-- v5: the worker that wrote a unit's checkpoint (a checkpoint is only handed to a worker
-- trusted with its writer's work).
ALTER TABLE units ADD COLUMN cursor_worker INTEGER;
"#,
    r#"
-- v6: the campaign's latest lease, so that campaigns with equally many active leases are
-- served least recently served first (round robin), never by id alone.
ALTER TABLE campaigns ADD COLUMN last_lease_id INTEGER NOT NULL DEFAULT 0;
"#,
    r#"
-- v7: the solver version that produced each result (the worker's report; 0 when not
-- reported).
-- Results from before this column existed were produced by their campaign's solver.
ALTER TABLE results ADD COLUMN solver_version INTEGER NOT NULL DEFAULT 0;
UPDATE results SET solver_version =
    (SELECT c.solver_version FROM campaigns c WHERE c.id = results.campaign_id);
"#,
    r#"
-- v8: one worker is a valid cluster, and tiny units travel in runs.
-- When a unit was put back for a replica run (a lone worker may re-check it after a while).
ALTER TABLE units ADD COLUMN replica_wanted_ms INTEGER;
-- A replica run by a worker that had already produced a result for the same unit.
ALTER TABLE results ADD COLUMN self_checked INTEGER NOT NULL DEFAULT 0;
-- The lease duration a campaign's grants aim at (0: the coordinator's default).
ALTER TABLE campaigns ADD COLUMN target_lease_ms INTEGER NOT NULL DEFAULT 0;
"#,
    r#"
-- v9: proof chains. The results a campaign's proof takes as given (values its parameters
-- state), and the finished, proven campaign that backs each (or contradicts it).
CREATE TABLE premises (
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    position INTEGER NOT NULL,
    label TEXT NOT NULL,
    problem TEXT NOT NULL,
    params_json TEXT NOT NULL,
    value INTEGER NOT NULL,
    backed_by INTEGER REFERENCES campaigns(id),
    contradicted_by INTEGER REFERENCES campaigns(id),
    backed_by_record INTEGER REFERENCES proof_records(id),
    PRIMARY KEY (campaign_id, position)
);
CREATE INDEX premises_open ON premises (problem)
    WHERE backed_by IS NULL AND backed_by_record IS NULL;
-- Proven results imported from another grind database (its export provenance record, kept
-- whole), which back premises as a proven campaign of this database would.
CREATE TABLE proof_records (
    id INTEGER PRIMARY KEY,
    problem TEXT NOT NULL,
    params_json TEXT NOT NULL,
    value INTEGER NOT NULL,
    record_json TEXT NOT NULL,
    source TEXT NOT NULL,
    imported_ms INTEGER NOT NULL
);
-- A search run's claim: "nothing better than claim_bound in this unit" (claims = 0: the
-- worker made none; claim_bound NULL: nothing at all beyond its value).
ALTER TABLE results ADD COLUMN claims INTEGER NOT NULL DEFAULT 0;
ALTER TABLE results ADD COLUMN claim_bound INTEGER;
-- The coordinator's own bound on every solution of a unit (Problem::bound_of_unit, computed
-- from the payload when the unit is created; NULL: none).
ALTER TABLE units ADD COLUMN bound INTEGER;
-- Tiny units are created coarser: how many consecutive splitter units a unit joins.
ALTER TABLE units ADD COLUMN parts INTEGER NOT NULL DEFAULT 1;
"#,
    r#"
-- Campaigns that build on another campaign's result (Problem::predecessor): the campaign it
-- builds on, whether it has taken that campaign's finished result yet, and the ceiling on
-- the optimum that result gives (resting on a premise; the campaign ends when its incumbent
-- reaches it).
ALTER TABLE campaigns ADD COLUMN after_campaign INTEGER;
ALTER TABLE campaigns ADD COLUMN inherited INTEGER NOT NULL DEFAULT 0;
ALTER TABLE campaigns ADD COLUMN ceiling INTEGER;
CREATE INDEX campaigns_after ON campaigns (after_campaign) WHERE after_campaign IS NOT NULL;
"#,
    r#"
-- Content-addressed bundles (issue 29): the files a campaign's parameters name, stored as
-- `<database>.bundles/blobs/<hex>` beside the database; this row is written after the file
-- is complete, checked and renamed into place. The token that uploaded it (NULL: no
-- authentication, as on loopback or in `grind run`).
CREATE TABLE bundles (
    digest TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    uploader_token INTEGER REFERENCES tokens(id)
) WITHOUT ROWID;
"#,
    r#"
-- Placement (issue 29): what a worker states about itself when it registers: its owner's
-- opt-in to run users' native code (`grind-worker --allow-exec`) and its platform (target
-- triple; '' from older workers). Grants follow the campaign problem's requirements.
ALTER TABLE workers ADD COLUMN native_code_allowed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN platform TEXT NOT NULL DEFAULT '';
-- The solver's provenance record of a run (SolveContext::provenance), JSON; NULL for none.
ALTER TABLE results ADD COLUMN provenance_json TEXT;
-- 0 when grind cannot check that the units cover the search space (a user's own units
-- file): a finished exhaustive campaign is then the solver's claim, never proven.
ALTER TABLE campaigns ADD COLUMN coverage_checked INTEGER NOT NULL DEFAULT 1;
-- Claims whose check failed in the verifier itself (a user's checker crashed or hung):
-- neither accepted nor held against the worker; kept whole for the operator.
CREATE TABLE held_claims (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    unit_id INTEGER,
    lease_id INTEGER,
    worker_id INTEGER,
    source TEXT NOT NULL,
    solution_json TEXT NOT NULL,
    claimed_score INTEGER NOT NULL,
    reason TEXT NOT NULL,
    at_ms INTEGER NOT NULL
);
CREATE INDEX held_claims_by_campaign ON held_claims (campaign_id, id);
"#,
];

/// The schema version this binary writes.
pub fn current_version() -> i64 {
    MIGRATIONS.len() as i64
}

/// Brings the database up to [`current_version`] in one transaction; refuses a
/// database from a newer grind.
pub fn migrate(conn: &mut Connection) -> Result<(), Error> {
    let found: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if found > current_version() {
        return Err(Error::FailedPrecondition(format!(
            "the database has schema version {found}, newer than this grind understands ({}); \
             upgrade grind before opening it",
            current_version()
        )));
    }
    if found == current_version() {
        return Ok(());
    }
    // Every step in one transaction: the database moves to the newest version or stays as
    // it was (SQLite's DDL is transactional), with one commit instead of one per step.
    let tx = conn.transaction()?;
    for step in MIGRATIONS.iter().skip(found as usize) {
        tx.execute_batch(step)?;
    }
    tx.pragma_update(None, "user_version", current_version())?;
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrates_and_refuses_newer_schemas() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn).unwrap();
        migrate(&mut conn).unwrap();
        conn.pragma_update(None, "user_version", current_version() + 1)
            .unwrap();
        let err = migrate(&mut conn).unwrap_err();
        assert!(err.to_string().contains("newer"), "{err}");
    }

    #[test]
    fn events_cannot_be_rewritten() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn).unwrap();
        conn.execute(
            "INSERT INTO events (at_ms, kind, detail) VALUES (1, 'x', '{}')",
            [],
        )
        .unwrap();
        assert!(conn.execute("UPDATE events SET kind = 'y'", []).is_err());
        assert!(conn.execute("DELETE FROM events", []).is_err());
    }
}
