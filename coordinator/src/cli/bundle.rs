//! `grind bundle add PATH` (pack and upload a file or directory, print its digest) and
//! `grind bundle list`.

use grind_proto::v1 as pb;
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
            let packed = attachments::pack_to_temp(path.clone())
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
