//! The gRPC `grind.v1.Bundles` service: upload (admin), fetch and stat (worker), list
//! (admin). The service is behind the worker gate; the admin-only calls check the caller's
//! role themselves.

use grind_exec::bundle::Digest;
use grind_proto::v1 as pb;
use grind_proto::v1::bundles_server::Bundles;
use std::io::Read;
use std::pin::Pin;
use tokio_stream::Stream;
use tonic::{Request, Response, Status, Streaming};

use super::{blobs, BundleRow, BundleStore, CHUNK_BYTES};
use crate::auth::{Caller, Role};
use crate::error::Error;

/// Implements `grind.v1.Bundles` over a [`BundleStore`].
pub struct BundlesService(pub BundleStore);

/// The stream type of `Fetch`.
pub type ChunkStream = Pin<Box<dyn Stream<Item = Result<pb::BundleChunk, Status>> + Send>>;

/// Chunks read ahead of the network for one fetch.
const READ_AHEAD: usize = 4;

/// A bundle digest from the wire (`sha256:<hex>`, or bare hex).
pub fn parse_digest(text: &str) -> Result<Digest, Error> {
    text.parse::<Digest>()
        .map_err(|e| Error::InvalidArgument(format!("bad bundle digest: {e}")))
}

/// Refuses callers without an admin token (when the coordinator requires tokens).
fn require_admin(caller: Option<Caller>) -> Result<(), Status> {
    match caller {
        Some(caller) if !caller.role.allows(Role::Admin) => Err(Status::permission_denied(
            "a worker token cannot upload or list bundles; an admin token is needed",
        )),
        _ => Ok(()),
    }
}

fn info(row: BundleRow) -> pb::BundleInfo {
    pb::BundleInfo {
        digest: format!("sha256:{}", row.digest),
        size: row.size,
        created_ms: row.created_ms,
        uploader_token: row.uploader_token.unwrap_or(0),
    }
}

#[tonic::async_trait]
impl Bundles for BundlesService {
    type FetchStream = ChunkStream;

    async fn upload(
        &self,
        request: Request<Streaming<pb::BundleChunk>>,
    ) -> Result<Response<pb::BundleReceipt>, Status> {
        let caller = request.extensions().get::<Caller>().copied();
        require_admin(caller)?;
        let mut chunks = request.into_inner();
        let first = chunks
            .message()
            .await?
            .ok_or_else(|| Status::invalid_argument("an upload must send at least one message"))?;
        let digest = parse_digest(&first.digest)?;
        if let Some(row) = self.0.stat(&digest).await? {
            return Ok(Response::new(pb::BundleReceipt {
                digest: format!("sha256:{digest}"),
                size: row.size,
                already_stored: true,
            }));
        }
        let mut incoming = self.0.receive(digest, first.size)?;
        incoming.write(first.data).await?;
        while let Some(chunk) = chunks.message().await? {
            incoming.write(chunk.data).await?;
        }
        let row = incoming.finish(caller.map(|c| c.token_id)).await?;
        tracing::info!("stored bundle sha256:{digest} ({} bytes)", row.size);
        Ok(Response::new(pb::BundleReceipt {
            digest: format!("sha256:{digest}"),
            size: row.size,
            already_stored: false,
        }))
    }

    async fn fetch(
        &self,
        request: Request<pb::BundleRef>,
    ) -> Result<Response<ChunkStream>, Status> {
        let digest = parse_digest(&request.into_inner().digest)?;
        let Some(row) = self.0.stat(&digest).await? else {
            return Err(Error::NotFound(format!(
                "bundle sha256:{digest} is not stored on this coordinator"
            ))
            .into());
        };
        let path = self.0.blob_path(&digest);
        let file = std::fs::File::open(&path).map_err(|e| blobs::io_error("opening", &path, e))?;
        let (tx, rx) = tokio::sync::mpsc::channel(READ_AHEAD);
        let header = pb::BundleChunk {
            digest: format!("sha256:{digest}"),
            size: row.size,
            data: Vec::new(),
        };
        tokio::task::spawn_blocking(move || read_chunks(file, &path, header, tx));
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }

    async fn stat(
        &self,
        request: Request<pb::BundleRef>,
    ) -> Result<Response<pb::BundleStat>, Status> {
        let digest = parse_digest(&request.into_inner().digest)?;
        let stat = match self.0.stat(&digest).await? {
            Some(row) => pb::BundleStat {
                present: true,
                size: row.size,
                created_ms: row.created_ms,
            },
            None => pb::BundleStat::default(),
        };
        Ok(Response::new(stat))
    }

    async fn list(
        &self,
        request: Request<pb::ListBundlesRequest>,
    ) -> Result<Response<pb::ListBundlesReply>, Status> {
        require_admin(request.extensions().get::<Caller>().copied())?;
        let bundles = self.0.list().await?.into_iter().map(info).collect();
        Ok(Response::new(pb::ListBundlesReply { bundles }))
    }
}

/// Reads `file` in chunks into `tx` (the first carries `header`); stops when the receiver
/// goes away. Runs on a blocking thread.
fn read_chunks(
    mut file: std::fs::File,
    path: &std::path::Path,
    mut header: pb::BundleChunk,
    tx: tokio::sync::mpsc::Sender<Result<pb::BundleChunk, Status>>,
) {
    let mut sent_header = false;
    loop {
        let mut buf = vec![0u8; CHUNK_BYTES];
        let n = match read_full(&mut file, &mut buf) {
            Ok(n) => n,
            Err(e) => {
                let error = blobs::io_error("reading", path, e);
                let _ = tx.blocking_send(Err(error.into()));
                return;
            }
        };
        if n == 0 && sent_header {
            return;
        }
        buf.truncate(n);
        let chunk = if sent_header {
            pb::BundleChunk {
                data: buf,
                ..Default::default()
            }
        } else {
            sent_header = true;
            header.data = buf;
            std::mem::take(&mut header)
        };
        if tx.blocking_send(Ok(chunk)).is_err() {
            return;
        }
    }
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
