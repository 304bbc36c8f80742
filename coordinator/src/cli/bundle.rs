//! `grind bundle add PATH` (pack and upload a file or directory, print its digest),
//! `grind bundle get DIGEST DIR` (fetch, check and unpack one, as a worker does) and
//! `grind bundle list`.

use grind_exec::bundle::Digest;
use grind_proto::v1 as pb;
use grind_worker::bundles::fetch;
use std::path::PathBuf;

use super::admin::{failed, print_json_lines, CoordinatorUrl};
use super::attachments::{self, Destination};
use super::CliError;

/// `grind bundle ...`
#[derive(clap::Subcommand, Debug)]
pub enum BundleCommand {
    /// Pack a file or directory and store it on the coordinator (nothing is sent when it is
    /// stored already); prints its digest, `sha256:<hex>`, as the last line.
    Add {
        #[command(flatten)]
        url: CoordinatorUrl,
        /// The file or directory.
        path: PathBuf,
    },
    /// Fetch a bundle from the coordinator, check its digest and unpack it into a new
    /// directory (what a worker does on a cache miss).
    Get {
        #[command(flatten)]
        url: CoordinatorUrl,
        /// The bundle's digest, `sha256:<hex>`.
        digest: String,
        /// The directory to create and unpack into.
        dir: PathBuf,
    },
    /// List the coordinator's bundles, oldest first.
    List {
        #[command(flatten)]
        url: CoordinatorUrl,
        /// Print JSON: one bundle per line.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a `grind bundle` command.
pub async fn bundle(cmd: BundleCommand) -> Result<(), CliError> {
    match cmd {
        BundleCommand::Add { url, path } => {
            if !path.exists() {
                return Err(CliError::Usage(format!(
                    "{}: no such file or directory",
                    path.display()
                )));
            }
            let packed = attachments::measure(path.clone())
                .await
                .map_err(|e| CliError::Usage(format!("cannot bundle {}: {e:#}", path.display())))?;
            let mut destination = Destination::Remote(attachments::connect(&url).await?);
            let sent = attachments::store(&mut destination, &packed).await?;
            attachments::report(&[attachments::Attached {
                key: "bundle".into(),
                path,
                digest: packed.digest,
                size: packed.size,
                sent,
            }]);
            println!("sha256:{}", packed.digest);
        }
        BundleCommand::Get { url, digest, dir } => {
            let digest: Digest = digest
                .parse()
                .map_err(|e| CliError::Usage(format!("{e}")))?;
            if dir.exists() {
                return Err(CliError::Usage(format!(
                    "{} exists already: name a new directory",
                    dir.display()
                )));
            }
            let client = attachments::connect(&url).await?;
            let runtime = tokio::runtime::Handle::current();
            let target = dir.clone();
            // Unpacking blocks: it reads the fetched bytes on a blocking thread.
            tokio::task::spawn_blocking(move || {
                let mut reader = fetch::start(&runtime, client, digest);
                grind_exec::bundle::unpack(&mut reader, &target, &digest)
                    .map_err(|e| reader.failure.take().unwrap_or_else(|| e.to_string()))
            })
            .await
            .map_err(|e| anyhow::anyhow!("the fetch task failed: {e}"))?
            .map_err(|e| anyhow::anyhow!("bundle sha256:{digest}: {e}"))?;
            eprintln!("grind: sha256:{digest} -> {}", dir.display());
        }
        BundleCommand::List { url, json } => {
            let reply = attachments::connect(&url)
                .await?
                .list(pb::ListBundlesRequest {})
                .await
                .map_err(failed)?
                .into_inner();
            if json {
                print_json_lines(reply.bundles.iter().map(|b| {
                    serde_json::json!({
                        "digest": b.digest,
                        "size": b.size,
                        "created_ms": b.created_ms,
                        "uploader_token": b.uploader_token,
                    })
                }));
            } else {
                for b in &reply.bundles {
                    println!("{}  {:>12} bytes", b.digest, b.size);
                }
            }
        }
    }
    Ok(())
}
