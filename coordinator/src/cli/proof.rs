//! `grind proof`: proof records from other grind databases, which back the premises of this
//! database's campaigns (see `scheduler::flows::proof`).

use anyhow::Context;
use grind_proto::v1 as pb;
use std::path::PathBuf;
use std::sync::Arc;

use super::CliError;
use crate::clock::SystemClock;
use crate::config::Config;
use crate::store::Store;
use crate::Coordinator;

/// `grind proof` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum ProofCommand {
    /// Import another grind database's export provenance record of a proven optimum (what
    /// `grind export` or `grind run --out FILE` writes to FILE.provenance.json), offline,
    /// into DB: it backs the premises of DB's campaigns that state its value. Its solution is
    /// re-scored; its optimality is the record's word, kept whole with it.
    Import {
        /// The record file (one JSON record).
        file: PathBuf,
        /// The database to import into (created if missing).
        #[arg(long)]
        db: PathBuf,
    },
}

/// Runs a `grind proof` command.
pub async fn proof(cmd: ProofCommand) -> Result<(), CliError> {
    match cmd {
        ProofCommand::Import { file, db } => {
            let record_json = std::fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let store =
                Store::open(&db).with_context(|| format!("cannot open {}", db.display()))?;
            let coordinator = Coordinator::new(store, Arc::new(SystemClock), Config::default());
            let reply = coordinator
                .import_proof_record(pb::ImportProofRecordRequest {
                    record_json,
                    source: file.display().to_string(),
                })
                .await
                .map_err(|e| CliError::Usage(e.to_string()))?;
            eprintln!(
                "imported proof record {} from {}",
                reply.record_id,
                file.display()
            );
            println!("{}", reply.record_id);
            Ok(())
        }
    }
}
