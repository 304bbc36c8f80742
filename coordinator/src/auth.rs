//! Authentication: bearer tokens for workers and administrators.
//!
//! A token is `grind_` followed by 64 hex digits (256 random bits). Only its SHA-256 digest is
//! stored; the token itself is printed once, when it is created. Tokens are created, listed
//! and revoked offline against the database (`grind token ...`); a running coordinator
//! reloads the table twice a second, so a revoked token stops working within a second, and it
//! reads the table again before refusing a token it does not know, so a token made before a
//! request was sent always works. Unknown tokens arriving together share one read: a miss
//! reads the table only if no read began after the request arrived.
//!
//! Callers send `authorization: Bearer <token>` as gRPC metadata. Worker RPCs accept worker
//! and admin tokens, admin RPCs only admin tokens. The caller's identity travels to the
//! handlers as a request extension ([`Caller`]), so a worker identity can be bound to the
//! token that registered it.

use rusqlite::{params, Connection, OptionalExtension};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use tonic::metadata::MetadataMap;
use tonic::{Request, Status};

use crate::error::Error;

/// What a token may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Join campaigns and deliver results.
    Worker,
    /// Everything a worker may do, plus campaign management.
    Admin,
}

impl Role {
    /// The name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Worker => "worker",
            Role::Admin => "admin",
        }
    }

    fn parse(text: &str) -> Option<Role> {
        match text {
            "worker" => Some(Role::Worker),
            "admin" => Some(Role::Admin),
            _ => None,
        }
    }

    /// True when a token of this role may call an RPC that needs `needed`.
    pub fn allows(self, needed: Role) -> bool {
        self == Role::Admin || needed == Role::Worker
    }
}

/// The authenticated caller of an RPC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The token's id in the database.
    pub token_id: i64,
    /// What the token may do.
    pub role: Role,
}

/// A token as listed (never the token itself).
#[derive(Clone, Debug)]
pub struct TokenInfo {
    /// Database id (used to revoke it).
    pub id: i64,
    /// The name given at creation.
    pub name: String,
    /// What it may do.
    pub role: Role,
    /// When it was created.
    pub created_ms: i64,
    /// When it was revoked, if it was.
    pub revoked_ms: Option<i64>,
}

/// Prefix of every token, so leaked tokens are easy to recognise.
pub const TOKEN_PREFIX: &str = "grind_";

/// A fresh random token.
pub fn new_token() -> Result<String, Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::Internal(format!("no randomness for a token: {e}")))?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{TOKEN_PREFIX}{hex}"))
}

/// The stored digest of a token.
pub fn token_digest(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// Creates a token and returns its id and the token (shown once, never stored).
pub fn create_token(
    conn: &Connection,
    role: Role,
    name: &str,
    now_ms: i64,
) -> Result<(i64, String), Error> {
    if name.len() > 200 {
        return Err(Error::InvalidArgument(
            "a token name must be at most 200 bytes".into(),
        ));
    }
    let token = new_token()?;
    conn.execute(
        "INSERT INTO tokens (name, kind, hash, created_ms) VALUES (?1, ?2, ?3, ?4)",
        params![name, role.as_str(), token_digest(&token), now_ms],
    )?;
    Ok((conn.last_insert_rowid(), token))
}

/// Every token, oldest first.
pub fn list_tokens(conn: &Connection) -> Result<Vec<TokenInfo>, Error> {
    let mut stmt =
        conn.prepare("SELECT id, name, kind, created_ms, revoked_ms FROM tokens ORDER BY id")?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, i64>(3)?,
            r.get::<_, Option<i64>>(4)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (id, name, kind, created_ms, revoked_ms) = row?;
        let role = Role::parse(&kind)
            .ok_or_else(|| Error::Internal(format!("token {id} has unknown kind {kind:?}")))?;
        out.push(TokenInfo {
            id,
            name,
            role,
            created_ms,
            revoked_ms,
        });
    }
    Ok(out)
}

/// Revokes a token; revoking twice is harmless.
pub fn revoke_token(conn: &Connection, id: i64, now_ms: i64) -> Result<(), Error> {
    let found: Option<i64> = conn
        .query_row("SELECT id FROM tokens WHERE id = ?1", params![id], |r| {
            r.get(0)
        })
        .optional()?;
    if found.is_none() {
        return Err(Error::NotFound(format!("no token {id}")));
    }
    conn.execute(
        "UPDATE tokens SET revoked_ms = ?2 WHERE id = ?1 AND revoked_ms IS NULL",
        params![id, now_ms],
    )?;
    Ok(())
}

/// The valid tokens of a running coordinator, by digest; checks request metadata.
#[derive(Default)]
pub struct Authenticator {
    valid: RwLock<HashMap<Vec<u8>, Caller>>,
    /// The database to read again when a token is unknown (it may have been made a moment
    /// ago).
    db: Option<PathBuf>,
    miss_reads: Mutex<MissReads>,
}

/// The reads of the token table made for unknown tokens, one at a time.
#[derive(Default)]
struct MissReads {
    /// A read-only connection to the database, opened at the first miss.
    conn: Option<Connection>,
    /// When the last such read began.
    last_began: Option<Instant>,
}

impl Authenticator {
    /// An authenticator that reads the database at `db` again before refusing an unknown
    /// token (filled by [`Authenticator::reload`], as the default one).
    pub fn reading(db: PathBuf) -> Authenticator {
        Authenticator {
            db: Some(db),
            ..Authenticator::default()
        }
    }

    /// An authenticator holding the database's unrevoked tokens.
    pub fn load(conn: &Connection) -> Result<Arc<Authenticator>, Error> {
        let auth = Arc::new(Authenticator::default());
        auth.reload(conn)?;
        Ok(auth)
    }

    /// Re-reads the unrevoked tokens (new tokens start working, revoked ones stop).
    pub fn reload(&self, conn: &Connection) -> Result<(), Error> {
        let mut stmt =
            conn.prepare_cached("SELECT id, kind, hash FROM tokens WHERE revoked_ms IS NULL")?;
        let mut valid = HashMap::new();
        for row in stmt.query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Vec<u8>>(2)?,
            ))
        })? {
            let (token_id, kind, hash) = row?;
            if let Some(role) = Role::parse(&kind) {
                valid.insert(hash, Caller { token_id, role });
            }
        }
        *self
            .valid
            .write()
            .map_err(|_| Error::Internal("token table poisoned".into()))? = valid;
        Ok(())
    }

    /// The caller behind `metadata`, if it carries a valid token allowed to do `needed`.
    pub fn check(&self, metadata: &MetadataMap, needed: Role) -> Result<Caller, Status> {
        let Some(value) = metadata.get("authorization") else {
            return Err(Status::unauthenticated(
                "this coordinator requires a token: send `authorization: Bearer <token>` \
                 (grind-worker --token-file, or GRIND_TOKEN / GRIND_ADMIN_TOKEN)",
            ));
        };
        let text = value
            .to_str()
            .map_err(|_| Status::unauthenticated("the authorization header is not text"))?;
        let token = text
            .strip_prefix("Bearer ")
            .ok_or_else(|| {
                Status::unauthenticated("the authorization header must be `Bearer <token>`")
            })?
            .trim();
        let asked = Instant::now();
        let digest = token_digest(token);
        let lookup = || -> Result<Option<Caller>, Status> {
            Ok(self
                .valid
                .read()
                .map_err(|_| Status::internal("token table poisoned"))?
                .get(&digest)
                .copied())
        };
        let mut caller = lookup()?;
        if caller.is_none() && self.reload_after_miss(asked) {
            caller = lookup()?;
        }
        let caller = caller.ok_or_else(|| Status::unauthenticated("unknown or revoked token"))?;
        if !caller.role.allows(needed) {
            return Err(Status::permission_denied(format!(
                "a {} token cannot call this; an admin token is needed",
                caller.role.as_str()
            )));
        }
        Ok(caller)
    }

    /// Makes sure the token table was read after `asked` (when the request arrived), reading
    /// it now unless another miss's read began since; true if the table in memory is that
    /// fresh. Reads are serialised, so a burst of unknown tokens costs one read, not one each.
    fn reload_after_miss(&self, asked: Instant) -> bool {
        let Some(db) = &self.db else {
            return false;
        };
        let Ok(mut reads) = self.miss_reads.lock() else {
            return false;
        };
        if reads.last_began.is_some_and(|began| began >= asked) {
            return true;
        }
        reads.last_began = Some(Instant::now());
        let read = match &reads.conn {
            Some(conn) => self.reload(conn),
            None => Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .map_err(Error::from)
                .and_then(|conn| {
                    conn.busy_timeout(Duration::from_millis(200))?;
                    self.reload(&conn)?;
                    reads.conn = Some(conn);
                    Ok(())
                }),
        };
        match read {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!("cannot read the token table for an unknown token: {e}");
                reads.conn = None;
                false
            }
        }
    }

    /// A gRPC interceptor that admits callers allowed to do `needed` and records who they
    /// are in the request's extensions.
    pub fn interceptor(
        self: &Arc<Self>,
        needed: Role,
    ) -> impl FnMut(Request<()>) -> Result<Request<()>, Status> + Clone + Send + Sync + 'static
    {
        let auth = self.clone();
        move |mut request: Request<()>| {
            let caller = auth.check(request.metadata(), needed)?;
            request.extensions_mut().insert(caller);
            Ok(request)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::schema::migrate(&mut conn).unwrap();
        conn
    }

    fn bearer(token: &str) -> MetadataMap {
        let mut map = MetadataMap::new();
        map.insert("authorization", format!("Bearer {token}").parse().unwrap());
        map
    }

    #[test]
    fn tokens_are_random_and_stored_hashed() {
        let conn = db();
        let (id, token) = create_token(&conn, Role::Worker, "rack", 1).unwrap();
        let (_, other) = create_token(&conn, Role::Worker, "rack", 1).unwrap();
        assert_ne!(token, other);
        assert!(token.starts_with(TOKEN_PREFIX) && token.len() == TOKEN_PREFIX.len() + 64);
        let stored: Vec<u8> = conn
            .query_row("SELECT hash FROM tokens WHERE id = ?1", [id], |r| r.get(0))
            .unwrap();
        assert_eq!(stored, token_digest(&token));
        assert!(!String::from_utf8_lossy(&stored).contains(&token[6..]));
    }

    #[test]
    fn a_token_made_after_the_last_reload_is_read_before_it_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.db");
        let mut conn = Connection::open(&path).unwrap();
        crate::schema::migrate(&mut conn).unwrap();
        let auth = Authenticator::reading(path.clone());
        auth.reload(&conn).unwrap();
        let (_, token) = create_token(&conn, Role::Worker, "new", 1).unwrap();
        assert!(auth.check(&bearer(&token), Role::Worker).is_ok());
        let unknown = auth.check(&bearer("grind_nope"), Role::Worker);
        assert_eq!(unknown.unwrap_err().code(), tonic::Code::Unauthenticated);
        // A token made right after another miss's read is read too (no waiting period).
        let (_, second) = create_token(&conn, Role::Worker, "newer", 1).unwrap();
        assert!(auth.check(&bearer(&second), Role::Worker).is_ok());
        let (_, admin) = create_token(&conn, Role::Admin, "admin", 1).unwrap();
        assert!(auth.check(&bearer(&admin), Role::Admin).is_ok());
        // Without a database to read, an unknown token waits for the periodic reload.
        let periodic = Authenticator::load(&conn).unwrap();
        let (_, third) = create_token(&conn, Role::Worker, "newest", 1).unwrap();
        assert!(periodic.check(&bearer(&third), Role::Worker).is_err());
    }

    #[test]
    fn roles_revocation_and_bad_headers() {
        let conn = db();
        let (worker_id, worker) = create_token(&conn, Role::Worker, "w", 1).unwrap();
        let (_, admin) = create_token(&conn, Role::Admin, "a", 1).unwrap();
        let auth = Authenticator::load(&conn).unwrap();
        assert_eq!(
            auth.check(&bearer(&worker), Role::Worker).unwrap().token_id,
            worker_id
        );
        assert_eq!(
            auth.check(&bearer(&worker), Role::Admin)
                .unwrap_err()
                .code(),
            tonic::Code::PermissionDenied
        );
        assert!(auth.check(&bearer(&admin), Role::Admin).is_ok());
        assert!(auth.check(&bearer(&admin), Role::Worker).is_ok());
        let unauthenticated = |m: &MetadataMap| auth.check(m, Role::Worker).unwrap_err().code();
        assert_eq!(
            unauthenticated(&MetadataMap::new()),
            tonic::Code::Unauthenticated
        );
        assert_eq!(
            unauthenticated(&bearer("grind_nope")),
            tonic::Code::Unauthenticated
        );
        let mut basic = MetadataMap::new();
        basic.insert("authorization", format!("Basic {worker}").parse().unwrap());
        assert_eq!(unauthenticated(&basic), tonic::Code::Unauthenticated);

        revoke_token(&conn, worker_id, 2).unwrap();
        revoke_token(&conn, worker_id, 3).unwrap();
        auth.reload(&conn).unwrap();
        assert_eq!(
            unauthenticated(&bearer(&worker)),
            tonic::Code::Unauthenticated
        );
        assert!(revoke_token(&conn, 999, 3).is_err());
        let listed = list_tokens(&conn).unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].revoked_ms, Some(2));
    }
}
