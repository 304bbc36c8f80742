//! The `bundles` table: one row per stored bundle (see `schema.rs`, version 11).

use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::error::Error;

/// A stored bundle as recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BundleRow {
    /// The SHA-256 of its packed bytes, 64 lowercase hex digits.
    pub digest: String,
    /// Its packed size in bytes.
    pub size: u64,
    /// When it was first stored.
    pub created_ms: i64,
    /// The token that first uploaded it (none without authentication).
    pub uploader_token: Option<i64>,
}

fn from_row(row: &Row<'_>) -> rusqlite::Result<BundleRow> {
    Ok(BundleRow {
        digest: row.get(0)?,
        size: row.get::<_, i64>(1)? as u64,
        created_ms: row.get(2)?,
        uploader_token: row.get(3)?,
    })
}

/// The row of bundle `hex`, if recorded.
pub fn get(conn: &Connection, hex: &str) -> Result<Option<BundleRow>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT digest, size, created_ms, uploader_token FROM bundles WHERE digest = ?1",
        )?
        .query_row([hex], from_row)
        .optional()?)
}

/// Every row, oldest first.
pub fn list(conn: &Connection) -> Result<Vec<BundleRow>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT digest, size, created_ms, uploader_token FROM bundles ORDER BY created_ms, digest",
    )?;
    let rows = stmt.query_map([], from_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Records `row` unless the bundle is recorded already; returns the row as stored.
pub fn insert(conn: &Connection, row: &BundleRow) -> Result<BundleRow, Error> {
    let size = i64::try_from(row.size)
        .map_err(|_| Error::InvalidArgument(format!("bundle size {} is too large", row.size)))?;
    conn.prepare_cached(
        "INSERT OR IGNORE INTO bundles (digest, size, created_ms, uploader_token) \
         VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![
        row.digest,
        size,
        row.created_ms,
        row.uploader_token
    ])?;
    get(conn, &row.digest)?
        .ok_or_else(|| Error::Internal(format!("bundle {} was not recorded", row.digest)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_kept_once() {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::schema::migrate(&mut conn).unwrap();
        let first = BundleRow {
            digest: "ab".repeat(32),
            size: 7,
            created_ms: 10,
            uploader_token: None,
        };
        assert_eq!(insert(&conn, &first).unwrap(), first);
        // A second upload of the same bundle keeps the first record.
        let again = BundleRow {
            created_ms: 20,
            ..first.clone()
        };
        assert_eq!(insert(&conn, &again).unwrap(), first);
        assert_eq!(list(&conn).unwrap(), vec![first.clone()]);
        assert_eq!(get(&conn, &"cd".repeat(32)).unwrap(), None);
    }
}
