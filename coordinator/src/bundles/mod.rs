//! Content-addressed bundles on the coordinator (issue 29): the files a campaign's
//! parameters name (a user's solver, checker, instance, units file), packed by
//! `grind_exec::bundle` into one byte stream and addressed by its SHA-256.
//!
//! Layout beside the database `grind.db`:
//!
//! ```text
//! grind.db.bundles/blobs/<hex>        the packed bytes, complete and checked
//! grind.db.bundles/incoming/          uploads being received (cleared at start)
//! grind.db.bundles/unpacked/<hex>/    bundles unpacked for the coordinator's own use
//! ```
//!
//! and a row in the `bundles` table (digest, size, created, uploader's token). An upload is
//! streamed to a temporary file in `incoming/` while it is hashed, on a blocking thread fed
//! through a small channel (the async runtime only moves the chunks; the store's writer
//! only writes the row), checked against the claimed digest and size, synced and renamed
//! into `blobs/`; the row is written last. A refused upload leaves nothing behind.
//!
//! [`service`] is the gRPC `grind.v1.Bundles` service, [`blobs`] the file side, [`table`]
//! the rows, [`source`] the coordinator's [`grind_shared::attachments::BundleSource`],
//! [`backup`] the blobs `grind backup` carries beside a snapshot.

pub mod backup;
pub mod blobs;
pub mod service;
pub mod source;
pub mod table;

use grind_exec::bundle::Digest;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::mpsc;

use crate::error::Error;
use crate::store::Store;
use blobs::BlobSink;
pub use table::BundleRow;

/// Bytes per streamed message (uploads and fetches).
pub const CHUNK_BYTES: usize = 1 << 20;

/// Largest message the Bundles service accepts (a client may send bigger chunks than
/// [`CHUNK_BYTES`], up to this).
pub const MAX_CHUNK_MESSAGE_BYTES: usize = 4 << 20;

/// The HTTP/2 flow-control window of one stream, server and bundle clients alike. The
/// default (64 KiB) makes a sender wait for a window update every 64 KiB: 16 round trips
/// per chunk, each a wake-up of both sides' runtimes, which on a busy machine cost more
/// than the bytes.
pub const STREAM_WINDOW_BYTES: u32 = 2 << 20;

/// The HTTP/2 flow-control window of one connection (all its streams).
pub const CONNECTION_WINDOW_BYTES: u32 = 4 << 20;

/// The default `grind serve --max-bundle-mib`.
pub const DEFAULT_MAX_BUNDLE_MIB: u64 = 2048;

/// Chunks queued between the network and the blocking writer of one upload.
const QUEUED_CHUNKS: usize = 4;

/// The coordinator's bundles: files beside the database, rows in it. Cheap to clone.
#[derive(Clone)]
pub struct BundleStore {
    inner: Arc<Inner>,
}

struct Inner {
    root: PathBuf,
    store: Store,
    max_bytes: u64,
}

impl BundleStore {
    /// The bundle directory of the database at `db`: `<db>.bundles`.
    pub fn beside(db: &Path) -> PathBuf {
        let mut name = db.as_os_str().to_owned();
        name.push(".bundles");
        PathBuf::from(name)
    }

    /// Opens (creating) the bundle store under `root`, recording rows in `store`, refusing
    /// bundles over `max_bytes`; removes uploads a stopped coordinator left half received.
    pub fn open(root: PathBuf, store: Store, max_bytes: u64) -> Result<BundleStore, Error> {
        for dir in ["blobs", "incoming", "unpacked"] {
            let path = root.join(dir);
            std::fs::create_dir_all(&path)
                .map_err(|e| blobs::io_error("creating directory", &path, e))?;
        }
        blobs::clear_incoming(&root.join("incoming"))?;
        // Absolute: checkers run from bundles here start in a directory of their own.
        let root = std::fs::canonicalize(&root)
            .map_err(|e| blobs::io_error("resolving directory", &root, e))?;
        Ok(BundleStore {
            inner: Arc::new(Inner {
                root,
                store,
                max_bytes,
            }),
        })
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// Where the bytes of bundle `digest` are kept.
    pub fn blob_path(&self, digest: &Digest) -> PathBuf {
        self.inner.root.join("blobs").join(digest.hex())
    }

    /// The largest bundle accepted, in bytes.
    pub fn max_bytes(&self) -> u64 {
        self.inner.max_bytes
    }

    /// The stored bundle `digest`, if its row and its file are both there.
    pub async fn stat(&self, digest: &Digest) -> Result<Option<BundleRow>, Error> {
        let hex = digest.hex();
        let row = self
            .inner
            .store
            .read(move |conn| table::get(conn, &hex))
            .await?;
        Ok(row.filter(|_| self.blob_path(digest).is_file()))
    }

    /// Every stored bundle, oldest first.
    pub async fn list(&self) -> Result<Vec<BundleRow>, Error> {
        self.inner.store.read(table::list).await
    }

    /// Refuses a bundle of `size` bytes when it is over the limit.
    pub fn check_size(&self, size: u64) -> Result<(), Error> {
        if size > self.inner.max_bytes {
            return Err(Error::ResourceExhausted(format!(
                "a bundle of {size} bytes is over this coordinator's limit of {} bytes \
                 (grind serve --max-bundle-mib)",
                self.inner.max_bytes
            )));
        }
        Ok(())
    }

    /// Starts receiving bundle `digest` of `size` bytes (the size checked against the
    /// limit). Feed it with [`Incoming::write`], end with [`Incoming::finish`].
    pub fn receive(&self, digest: Digest, size: u64) -> Result<Incoming, Error> {
        self.check_size(size)?;
        let sink = BlobSink::create(&self.inner.root.join("incoming"), digest, size)?;
        let dest = self.blob_path(&digest);
        let (tx, rx) = mpsc::channel(QUEUED_CHUNKS);
        let task = tokio::task::spawn_blocking(move || receive_blocking(sink, rx, &dest));
        Ok(Incoming {
            bundles: self.clone(),
            tx,
            task,
            digest,
            size,
        })
    }

    /// Packs the file or directory at `source` straight into the store as bundle `digest`
    /// of `size` bytes (for `grind run`'s embedded coordinator: the same checks as an
    /// upload, no network, no temporary copy).
    pub async fn ingest_packed(
        &self,
        source: PathBuf,
        digest: Digest,
        size: u64,
    ) -> Result<BundleRow, Error> {
        self.check_size(size)?;
        let incoming = self.inner.root.join("incoming");
        let dest = self.blob_path(&digest);
        tokio::task::spawn_blocking(move || {
            let mut sink = BlobSink::create(&incoming, digest, size)?;
            grind_exec::bundle::pack(&source, &mut sink).map_err(|e| match sink.refusal() {
                Some(refused) => refused,
                None => Error::InvalidArgument(format!("cannot bundle {}: {e}", source.display())),
            })?;
            sink.commit(&dest)
        })
        .await
        .map_err(|e| Error::Internal(format!("bundle ingest task failed: {e}")))??;
        self.record(digest, size, None).await
    }

    /// Writes the row of a bundle whose file is in place (keeping an earlier row).
    async fn record(
        &self,
        digest: Digest,
        size: u64,
        uploader: Option<i64>,
    ) -> Result<BundleRow, Error> {
        let row = BundleRow {
            digest: digest.hex(),
            size,
            created_ms: now_ms(),
            uploader_token: uploader,
        };
        self.inner
            .store
            .write(move |conn| table::insert(conn, &row))
            .await
    }
}

/// What the blocking writer of an upload is sent.
enum Piece {
    Bytes(Vec<u8>),
    /// The sender saw the whole upload: check and commit.
    End,
}

/// An upload being received.
pub struct Incoming {
    bundles: BundleStore,
    tx: mpsc::Sender<Piece>,
    task: tokio::task::JoinHandle<Result<(), Error>>,
    digest: Digest,
    size: u64,
}

impl Incoming {
    /// Hands the next bytes to the writer (waiting while it is behind).
    pub async fn write(&mut self, bytes: Vec<u8>) -> Result<(), Error> {
        if bytes.is_empty() {
            return Ok(());
        }
        if self.tx.send(Piece::Bytes(bytes)).await.is_err() {
            // The writer stopped: it refused the bytes; its error says why.
            return Err(self.writer_error().await);
        }
        Ok(())
    }

    /// Ends the upload: the writer checks and commits the file, then the row is written by
    /// `uploader` (a token id, or none).
    pub async fn finish(self, uploader: Option<i64>) -> Result<BundleRow, Error> {
        let _ = self.tx.send(Piece::End).await;
        drop(self.tx);
        self.task
            .await
            .map_err(|e| Error::Internal(format!("bundle writer failed: {e}")))??;
        self.bundles.record(self.digest, self.size, uploader).await
    }

    async fn writer_error(&mut self) -> Error {
        match (&mut self.task).await {
            Ok(Err(e)) => e,
            Ok(Ok(())) => Error::Internal("the bundle writer ended early".into()),
            Err(e) => Error::Internal(format!("bundle writer failed: {e}")),
        }
    }
}

/// The blocking side of an upload: writes and hashes pieces until the end, then commits.
/// A channel closed without [`Piece::End`] (the upload broke off) stores nothing.
fn receive_blocking(
    mut sink: BlobSink,
    mut rx: mpsc::Receiver<Piece>,
    dest: &Path,
) -> Result<(), Error> {
    while let Some(piece) = rx.blocking_recv() {
        match piece {
            Piece::Bytes(bytes) => sink.write(&bytes)?,
            Piece::End => return sink.commit(dest),
        }
    }
    Err(Error::Unavailable(
        "the upload broke off before its end; nothing was stored".into(),
    ))
}

fn now_ms() -> i64 {
    use crate::clock::Clock;
    crate::clock::SystemClock.now_ms()
}
