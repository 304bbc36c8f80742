//! Attachments at the command line: for each parameter a problem names in
//! `ProblemDef::ATTACHMENTS`, the local file or directory given is packed into a bundle,
//! stored on the coordinator (remote: asked about with `Stat`, sent with `Upload` only when
//! missing; `grind run`: straight into its embedded coordinator's store) and replaced in
//! the parameters by its digest `sha256:<hex>`, keeping a `LABEL=` prefix (a platform
//! triple, say). A value that is already a digest is kept (and must be stored).

use anyhow::Context;
use grind_exec::bundle::{pack, Digest};
use grind_proto::v1 as pb;
use grind_proto::v1::bundles_client::BundlesClient;
use grind_shared::attachments::is_digest;
use grind_worker::connect::{authenticated, endpoint, Access, AuthChannel};
use serde_json::Value;
use std::io::{BufWriter, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::admin::{failed, CoordinatorUrl};
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
    let access = Access::from_sources(
        url.token.clone(),
        url.token_file.as_deref(),
        url.ca_file.as_deref(),
    )
    .map_err(|e| CliError::Usage(e.to_string()))?;
    let channel = endpoint(&url.coordinator, &access)
        .map_err(|e| CliError::Usage(e.to_string()))?
        .timeout(UPLOAD_TIMEOUT)
        .connect()
        .await
        .with_context(|| format!("cannot reach the coordinator at {}", url.coordinator))?;
    Ok(BundlesClient::new(
        authenticated(channel, &access).map_err(|e| CliError::Usage(e.to_string()))?,
    ))
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
    let packed = pack_to_temp(path.clone())
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

/// A bundle packed into a temporary file.
pub struct Packed {
    /// The temporary file (removed when dropped).
    pub file: tempfile::NamedTempFile,
    /// The bundle digest.
    pub digest: Digest,
    /// Its size in bytes.
    pub size: u64,
}

/// Packs the file or directory at `path` into a temporary file (off the async runtime).
pub async fn pack_to_temp(path: PathBuf) -> anyhow::Result<Packed> {
    tokio::task::spawn_blocking(move || {
        let file = tempfile::Builder::new()
            .prefix("grind-bundle-")
            .tempfile()
            .context("cannot create a temporary file")?;
        let digest = pack(&path, BufWriter::with_capacity(CHUNK_BYTES, file.as_file()))?;
        let size = file.as_file().metadata()?.len();
        Ok(Packed { file, digest, size })
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

/// Stores `packed` unless the destination has it; true when bytes were sent.
pub async fn store(destination: &mut Destination<'_>, packed: &Packed) -> Result<bool, CliError> {
    if is_stored(destination, &packed.digest).await? {
        return Ok(false);
    }
    match destination {
        Destination::Remote(client) => {
            let chunks = read_chunks(packed)?;
            client.upload(chunks).await.map_err(failed)?;
        }
        Destination::Local(store) => {
            store
                .ingest_file(packed.file.path().to_path_buf(), packed.digest, packed.size)
                .await
                .map_err(anyhow::Error::from)?;
        }
    }
    Ok(true)
}

/// The upload stream of `packed`: its file read in chunks on a blocking thread, the first
/// message carrying the digest and size.
fn read_chunks(
    packed: &Packed,
) -> Result<tokio_stream::wrappers::ReceiverStream<pb::BundleChunk>, CliError> {
    let mut file = packed
        .file
        .reopen()
        .context("cannot reopen the packed bundle")?;
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let mut first = Some((format!("sha256:{}", packed.digest), packed.size));
    tokio::task::spawn_blocking(move || loop {
        let mut data = vec![0u8; CHUNK_BYTES];
        let n = match read_full(&mut file, &mut data) {
            Ok(n) => n,
            Err(e) => {
                // Ending early makes the coordinator refuse the upload (short of its size).
                tracing::warn!("cannot read the packed bundle: {e}");
                return;
            }
        };
        data.truncate(n);
        let header = first.take();
        if n == 0 && header.is_none() {
            return;
        }
        let (digest, size) = header.unwrap_or_default();
        if tx
            .blocking_send(pb::BundleChunk { digest, size, data })
            .is_err()
            || n < CHUNK_BYTES
        {
            return;
        }
    });
    Ok(tokio_stream::wrappers::ReceiverStream::new(rx))
}

/// Reads until `buf` is full or the file ends; the bytes read.
fn read_full(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
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
