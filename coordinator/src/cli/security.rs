//! Offline commands against the database and the file system: tokens, certificates and
//! backups. They work whether or not a coordinator is serving the database.

use anyhow::Context;
use std::path::PathBuf;

use super::CliError;
use crate::auth::{self, Role};
use crate::bundles::BundleStore;
use crate::store::Store;

/// `grind token ...`
#[derive(clap::Subcommand, Debug)]
pub enum TokenCommand {
    /// Create a token and print it (once: only its digest is stored). Creates the database
    /// (with the coordinator's schema) if it does not exist yet.
    Create {
        /// The coordinator's database (created if missing).
        #[arg(long)]
        db: PathBuf,
        /// An admin token (campaign management) instead of a worker token.
        #[arg(long)]
        admin: bool,
        /// A name to recognise it by (e.g. the machines it is for).
        #[arg(long, default_value = "")]
        name: String,
    },
    /// List tokens (ids, names, roles; never the tokens themselves).
    List {
        /// The coordinator's database.
        #[arg(long)]
        db: PathBuf,
        /// Print JSON: one token per line.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token: calls with it are refused within a second.
    Revoke {
        /// The coordinator's database.
        #[arg(long)]
        db: PathBuf,
        /// Token id (see `grind token list`).
        id: i64,
    },
}

/// `grind cert ...`
#[derive(clap::Subcommand, Debug)]
pub enum CertCommand {
    /// Make a CA and a server certificate signed by it (ca.pem, cert.pem, key.pem).
    SelfSigned {
        /// Directory to write the three files into.
        #[arg(long)]
        out_dir: PathBuf,
        /// Host names or IP addresses workers use to reach the coordinator.
        #[arg(long = "host", required = true)]
        hosts: Vec<String>,
        /// Replace existing ca.pem, cert.pem and key.pem (workers must then get the new CA).
        #[arg(long)]
        force: bool,
    },
}

/// `grind backup` flags.
#[derive(clap::Args, Debug)]
pub struct BackupArgs {
    /// The coordinator's database (it may be in use).
    #[arg(long)]
    pub db: PathBuf,
    /// Where to write the snapshot (must not exist).
    #[arg(long)]
    pub out: PathBuf,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Opens an existing database (refusing a missing one: a typo in `--db` must not leave an
/// empty database behind).
fn open(db: &PathBuf) -> Result<rusqlite::Connection, CliError> {
    if !db.exists() {
        return Err(CliError::Usage(format!(
            "no database at {} (`grind token create --db {}` or `grind serve --db {}` creates it)",
            db.display(),
            db.display(),
            db.display()
        )));
    }
    open_or_create(db)
}

/// Opens the database, creating it with the coordinator's schema if it is missing.
fn open_or_create(db: &PathBuf) -> Result<rusqlite::Connection, CliError> {
    // Opening through the store creates the file, applies migrations and refuses newer schemas.
    drop(Store::open(db).with_context(|| format!("cannot open {}", db.display()))?);
    let conn =
        rusqlite::Connection::open(db).with_context(|| format!("cannot open {}", db.display()))?;
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .context("busy timeout")?;
    Ok(conn)
}

/// Runs a `grind token` command.
pub fn token(cmd: TokenCommand) -> Result<(), CliError> {
    match cmd {
        TokenCommand::Create { db, admin, name } => {
            let conn = open_or_create(&db)?;
            let role = if admin { Role::Admin } else { Role::Worker };
            let (id, token) = auth::create_token(&conn, role, &name, now_ms())
                .map_err(|e| CliError::Usage(e.to_string()))?;
            eprintln!(
                "created {} token {id}; it is shown only now:",
                role.as_str()
            );
            println!("{token}");
        }
        TokenCommand::List { db, json } => {
            let conn = open(&db)?;
            let tokens = auth::list_tokens(&conn).map_err(anyhow::Error::from)?;
            if json {
                super::admin::print_json_lines(tokens.iter().map(|t| {
                    serde_json::json!({
                        "id": t.id,
                        "role": t.role.as_str(),
                        "name": t.name,
                        "created_ms": t.created_ms,
                        "revoked_ms": t.revoked_ms,
                    })
                }));
                return Ok(());
            }
            for t in tokens {
                println!(
                    "{:>4}  {:<6} {:<30} created {}{}",
                    t.id,
                    t.role.as_str(),
                    t.name,
                    t.created_ms,
                    t.revoked_ms
                        .map(|at| format!("  REVOKED {at}"))
                        .unwrap_or_default()
                );
            }
        }
        TokenCommand::Revoke { db, id } => {
            let conn = open(&db)?;
            auth::revoke_token(&conn, id, now_ms()).map_err(|e| CliError::Usage(e.to_string()))?;
            println!("token {id} revoked");
        }
    }
    Ok(())
}

/// Runs a `grind cert` command.
pub fn cert(cmd: CertCommand) -> Result<(), CliError> {
    match cmd {
        CertCommand::SelfSigned {
            out_dir,
            hosts,
            force,
        } => {
            let files = crate::tls::write_self_signed(&out_dir, &hosts, force)
                .map_err(|e| CliError::Usage(e.to_string()))?;
            println!("CA (give to workers as --ca-file): {}", files.ca.display());
            println!(
                "server certificate (--tls-cert):   {}",
                files.cert.display()
            );
            println!("server key (--tls-key):            {}", files.key.display());
        }
    }
    Ok(())
}

/// Runs `grind backup`: a consistent snapshot through SQLite's online backup, safe while a
/// coordinator writes to the database, and beside it (`<out>.bundles/blobs/`) the bundle
/// blobs the snapshot refers to (see [`crate::bundles::backup`]).
pub fn backup(args: BackupArgs) -> Result<(), CliError> {
    let out_bundles = BundleStore::beside(&args.out);
    for taken in [&args.out, &out_bundles] {
        if taken.exists() {
            return Err(CliError::Usage(format!(
                "{} exists; choose a new file",
                taken.display()
            )));
        }
    }
    let conn = open(&args.db)?;
    conn.backup(
        rusqlite::MAIN_DB,
        &args.out,
        None::<fn(rusqlite::backup::Progress)>,
    )
    .with_context(|| format!("backup to {} failed", args.out.display()))?;
    let check = rusqlite::Connection::open(&args.out).context("cannot reopen the backup")?;
    let verdict: String = check
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .context("cannot check the backup")?;
    if verdict != "ok" {
        return Err(CliError::Other(anyhow::anyhow!(
            "the backup failed its integrity check: {verdict}"
        )));
    }
    let digests: Vec<String> = {
        let mut stmt = check
            .prepare("SELECT digest FROM bundles ORDER BY digest")
            .context("cannot list the backup's bundles")?;
        let rows = stmt
            .query_map([], |r| r.get(0))
            .context("cannot list the backup's bundles")?;
        rows.collect::<Result<_, _>>()
            .context("cannot list the backup's bundles")?
    };
    println!("backed up {} to {}", args.db.display(), args.out.display());
    if !digests.is_empty() {
        let carried = crate::bundles::backup::carry_blobs(
            &BundleStore::beside(&args.db),
            &out_bundles,
            &digests,
        )
        .map_err(|e| CliError::Other(anyhow::anyhow!("backing up the bundles failed: {e}")))?;
        println!(
            "backed up {} bundle blobs ({} bytes; {} hard-linked, {} copied) to {}",
            digests.len(),
            carried.bytes,
            carried.linked,
            carried.copied,
            out_bundles.join("blobs").display()
        );
    }
    Ok(())
}
