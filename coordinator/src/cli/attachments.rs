//! Attachments at the command line: for each parameter a problem names in
//! `ProblemDef::ATTACHMENTS`, the local file or directory given is packed into a bundle
//! (once to learn its digest, again, streamed, only if it must be sent: no temporary
//! copy), stored on the coordinator (remote: asked about with `Stat`, sent with `Upload` only when
//! missing; `grind run`: straight into its embedded coordinator's store) and replaced in
//! the parameters by its digest `sha256:<hex>`, keeping a `LABEL=` prefix (a platform
//! triple, say). A value that is already a digest is kept (and must be stored).

use anyhow::Context;
use grind_exec::bundle::{pack, Digest};
use grind_proto::v1 as pb;
use grind_proto::v1::bundles_client::BundlesClient;
use grind_shared::attachments::is_digest;
use grind_worker::connect::AuthChannel;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::admin::{channel, failed, CoordinatorUrl};
use super::CliError;
use crate::bundles::{BundleStore, CHUNK_BYTES};

/// How long one upload may take in all.
const UPLOAD_TIMEOUT: Duration = Duration::from_secs(6 * 3600);

/// Where attachments are stored.
pub enum Destination<'a> {
    /// A coordinator's Bundles service (needs an admin token when it requires tokens).
    Remote(BundlesClient<AuthChannel>),
    /// The store of this process's own coordinator (`grind run`).
    Local(&'a BundleStore),
}

/// One attachment as stored.
#[derive(Clone, Debug)]
pub struct Attached {
    /// The parameter (JSON key).
    pub key: String,
    /// The path given.
    pub path: PathBuf,
    /// The bundle's digest.
    pub digest: Digest,
    /// Its packed size.
    pub size: u64,
    /// False when the coordinator had it already (nothing was sent).
    pub sent: bool,
}

/// A Bundles client for the coordinator at `url` (uploads may take long: no 60 s limit).
pub async fn connect(url: &CoordinatorUrl) -> Result<BundlesClient<AuthChannel>, CliError> {
    let channel = channel(url, |endpoint| {
        endpoint
            .timeout(UPLOAD_TIMEOUT)
            .initial_stream_window_size(crate::bundles::STREAM_WINDOW_BYTES)
            .initial_connection_window_size(crate::bundles::CONNECTION_WINDOW_BYTES)
    })
    .await?;
    Ok(BundlesClient::new(channel))
}

/// Replaces every attachment path in `raw` (a problem's parameters as given) under `keys`
/// (its registry entry's `attachments`) by the digest of its bundle, storing each bundle at
/// `destination` first. Returns what was attached (nothing when `keys` is empty).
pub async fn attach(
    keys: &[&str],
    raw: &mut Value,
    destination: &mut Destination<'_>,
) -> Result<Vec<Attached>, CliError> {
    let mut attached = Vec::new();
    for &key in keys {
        let Some(value) = raw.get_mut(key) else {
            continue;
        };
        match value {
            Value::Null => {}
            Value::String(text) => {
                *text = attach_one(key, text, destination, &mut attached).await?;
            }
            Value::Array(items) => {
                for item in items {
                    let Value::String(text) = item else {
                        return Err(not_paths(key));
                    };
                    *text = attach_one(key, text, destination, &mut attached).await?;
                }
            }
            _ => return Err(not_paths(key)),
        }
    }
    Ok(attached)
}

fn not_paths(key: &str) -> CliError {
    CliError::Usage(format!(
        "{key}: expected a path (or a list of paths), each optionally prefixed LABEL="
    ))
}

/// Splits `LABEL=path` (a label is letters, digits and `_-.`); a value that names an
/// existing path as a whole is never split.
pub fn split_label(text: &str) -> (Option<&str>, &str) {
    if Path::new(text).exists() {
        return (None, text);
    }
    match text.split_once('=') {
        Some((label, rest))
            if !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b)) =>
        {
            (Some(label), rest)
        }
        _ => (None, text),
    }
}

/// Stores the bundle `text` names (`[LABEL=]path`, or `[LABEL=]sha256:<hex>`); returns the
/// value to put in its place.
async fn attach_one(
    key: &str,
    text: &str,
    destination: &mut Destination<'_>,
    attached: &mut Vec<Attached>,
) -> Result<String, CliError> {
    let (label, target) = split_label(text);
    let with_label = |digest: &str| match label {
        Some(label) => format!("{label}={digest}"),
        None => digest.to_string(),
    };
    if is_digest(target) {
        let digest: Digest = target
            .parse()
            .map_err(|e| CliError::Usage(format!("{key}: {e}")))?;
        if !is_stored(destination, &digest).await? {
            return Err(CliError::Usage(format!(
                "{key}: bundle {target} is not stored on the coordinator: give the path of \
                 the file or directory instead"
            )));
        }
        return Ok(with_label(target));
    }
    let path = PathBuf::from(target);
    if !path.exists() {
        return Err(CliError::Usage(format!(
            "{key}: {}: no such file or directory",
            path.display()
        )));
    }
    let packed = measure(path.clone())
        .await
        .map_err(|e| CliError::Usage(format!("{key}: cannot bundle {}: {e:#}", path.display())))?;
    let sent = store(destination, &packed).await?;
    let digest = format!("sha256:{}", packed.digest);
    attached.push(Attached {
        key: key.to_string(),
        path,
        digest: packed.digest,
        size: packed.size,
        sent,
    });
    Ok(with_label(&digest))
}

/// A file or directory to be stored as a bundle, with its bundle digest and size.
pub struct Packed {
    /// The file or directory.
    pub path: PathBuf,
    /// The bundle digest.
    pub digest: Digest,
    /// The packed size in bytes.
    pub size: u64,
}

/// Counts the bytes written to it and keeps none.
struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The bundle digest and size of the file or directory at `path`: a first packing pass
/// that keeps nothing (off the async runtime). The bytes are packed again, streamed, only
/// when the coordinator lacks them.
pub async fn measure(path: PathBuf) -> anyhow::Result<Packed> {
    tokio::task::spawn_blocking(move || {
        let mut counter = Counter(0);
        let digest = pack(&path, &mut counter)?;
        Ok(Packed {
            path,
            digest,
            size: counter.0,
        })
    })
    .await
    .context("the packing task failed")?
}

/// True when the destination holds bundle `digest`.
async fn is_stored(destination: &mut Destination<'_>, digest: &Digest) -> Result<bool, CliError> {
    match destination {
        Destination::Remote(client) => Ok(client
            .stat(pb::BundleRef {
                digest: format!("sha256:{digest}"),
            })
            .await
            .map_err(failed)?
            .into_inner()
            .present),
        Destination::Local(store) => Ok(store
            .stat(digest)
            .await
            .map_err(anyhow::Error::from)?
            .is_some()),
    }
}

/// Stores `packed` unless the destination has it; true when bytes were sent. Files changed
/// since [`measure`] are refused by the store (their digest no longer matches).
pub async fn store(destination: &mut Destination<'_>, packed: &Packed) -> Result<bool, CliError> {
    if is_stored(destination, &packed.digest).await? {
        return Ok(false);
    }
    let changed = |e: String| {
        CliError::Other(anyhow::anyhow!(
            "{}: {e} (did it change while being uploaded?)",
            packed.path.display()
        ))
    };
    match destination {
        Destination::Remote(client) => {
            let chunks = pack_stream(packed);
            client.upload(chunks).await.map_err(|e| match e.code() {
                tonic::Code::InvalidArgument => changed(e.message().to_string()),
                _ => failed(e),
            })?;
        }
        Destination::Local(store) => {
            store
                .ingest_packed(packed.path.clone(), packed.digest, packed.size)
                .await
                .map_err(|e| changed(e.to_string()))?;
        }
    }
    Ok(true)
}

/// The upload stream of `packed`: packed again on a blocking thread, in chunks, the first
/// message carrying the digest and size.
fn pack_stream(packed: &Packed) -> tokio_stream::wrappers::ReceiverStream<pb::BundleChunk> {
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let path = packed.path.clone();
    let mut chunks = ChunkWriter {
        tx,
        buf: Vec::with_capacity(CHUNK_BYTES),
        first: Some((format!("sha256:{}", packed.digest), packed.size)),
    };
    tokio::task::spawn_blocking(move || {
        // A failure ends the stream early, and the coordinator refuses the short upload.
        let packed = pack(&path, &mut chunks)
            .map_err(|e| e.to_string())
            .and_then(|_| chunks.send().map_err(|e| e.to_string()));
        if let Err(e) = packed {
            tracing::warn!("packing {} for upload failed: {e}", path.display());
        }
    });
    tokio_stream::wrappers::ReceiverStream::new(rx)
}

/// Cuts what is written to it into upload messages of [`CHUNK_BYTES`].
struct ChunkWriter {
    tx: tokio::sync::mpsc::Sender<pb::BundleChunk>,
    buf: Vec<u8>,
    /// The digest and size, until the first message is sent.
    first: Option<(String, u64)>,
}

impl ChunkWriter {
    /// Sends what is buffered (and the first message even if empty).
    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() && self.first.is_none() {
            return Ok(());
        }
        let (digest, size) = self.first.take().unwrap_or_default();
        let data = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK_BYTES));
        self.tx
            .blocking_send(pb::BundleChunk { digest, size, data })
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "upload ended"))
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let n = bytes.len().min(CHUNK_BYTES - self.buf.len());
        self.buf.extend_from_slice(&bytes[..n]);
        if self.buf.len() == CHUNK_BYTES {
            self.send()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Prints one line per attachment to stderr (stdout stays for the command's own output).
pub fn report(attached: &[Attached]) {
    for a in attached {
        eprintln!(
            "grind: {} {} -> sha256:{} ({} bytes, {})",
            a.key,
            a.path.display(),
            a.digest,
            a.size,
            if a.sent { "uploaded" } else { "already stored" }
        );
    }
}
