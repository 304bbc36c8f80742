//! Fetching one bundle's bytes from the coordinator for a thread outside the async runtime:
//! the call runs as a task on the runtime, and its chunks reach the calling thread through
//! a small bounded channel, read as a [`std::io::Read`] (so a bundle is never held whole in
//! memory and the runtime never blocks).

use grind_exec::bundle::Digest;
use grind_proto::v1 as pb;
use grind_proto::v1::bundles_client::BundlesClient;
use std::io::Read;
use std::sync::mpsc;

use crate::connect::AuthChannel;

/// Chunks buffered between the network and the unpacking thread.
const BUFFERED_CHUNKS: usize = 4;

/// What the fetching task hands the reading thread.
enum Arrival {
    /// The bundle's size, as the coordinator announced it (first).
    Size(u64),
    /// The next bytes.
    Bytes(Vec<u8>),
}

type Sender = mpsc::SyncSender<Result<Arrival, String>>;

/// The bytes of one bundle as they arrive, readable from a blocking thread. Reading past
/// the size the coordinator announced, or a broken stream, is an error.
pub struct FetchReader {
    rx: mpsc::Receiver<Result<Arrival, String>>,
    current: Vec<u8>,
    position: usize,
    /// Bytes still expected (from the first message's size).
    remaining: Option<u64>,
    /// Why the fetch failed, if it did (kept for the caller's message).
    pub failure: Option<String>,
}

/// Starts fetching bundle `digest` on `runtime`; returns the reader of its bytes.
pub fn start(
    runtime: &tokio::runtime::Handle,
    client: BundlesClient<AuthChannel>,
    digest: Digest,
) -> FetchReader {
    let (tx, rx) = mpsc::sync_channel(BUFFERED_CHUNKS);
    runtime.spawn(async move {
        if let Err(e) = stream_into(client, digest, &tx).await {
            let _ = tx.send(Err(e));
        }
    });
    FetchReader {
        rx,
        current: Vec::new(),
        position: 0,
        remaining: None,
        failure: None,
    }
}

/// Sends the announced size (the first message's), then every chunk.
async fn stream_into(
    mut client: BundlesClient<AuthChannel>,
    digest: Digest,
    tx: &Sender,
) -> Result<(), String> {
    let failed = |e: tonic::Status| {
        format!(
            "fetching bundle sha256:{digest} from the coordinator failed: {}: {}",
            e.code(),
            e.message()
        )
    };
    let request = pb::BundleRef {
        digest: format!("sha256:{digest}"),
    };
    let mut stream = client.fetch(request).await.map_err(failed)?.into_inner();
    let mut first = true;
    while let Some(chunk) = stream.message().await.map_err(failed)? {
        if first {
            first = false;
            if tx.send(Ok(Arrival::Size(chunk.size))).is_err() {
                return Ok(());
            }
        }
        match tx.try_send(Ok(Arrival::Bytes(chunk.data))) {
            Ok(()) => {}
            Err(mpsc::TrySendError::Disconnected(_)) => return Ok(()),
            // A full channel is waited on by a blocking thread, never by the runtime's.
            Err(mpsc::TrySendError::Full(item)) => {
                let tx = tx.clone();
                let sent = tokio::task::spawn_blocking(move || tx.send(item).is_ok())
                    .await
                    .unwrap_or(false);
                if !sent {
                    return Ok(());
                }
            }
        }
    }
    if first {
        return Err(format!(
            "the coordinator sent nothing for bundle sha256:{digest}"
        ));
    }
    Ok(())
}

impl FetchReader {
    fn fail(&mut self, why: String) -> std::io::Error {
        self.failure = Some(why.clone());
        std::io::Error::other(why)
    }

    fn next_chunk(&mut self) -> std::io::Result<bool> {
        match self.rx.recv() {
            Ok(Ok(Arrival::Size(size))) => {
                self.remaining = Some(size);
                Ok(true)
            }
            Ok(Ok(Arrival::Bytes(bytes))) => {
                self.current = bytes;
                self.position = 0;
                Ok(true)
            }
            Ok(Err(why)) => Err(self.fail(why)),
            // The fetch ended.
            Err(_) => Ok(false),
        }
    }
}

impl Read for FetchReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.position == self.current.len() {
            if !self.next_chunk()? {
                return match self.remaining {
                    Some(0) => Ok(0),
                    Some(left) => Err(self.fail(format!(
                        "the coordinator's stream ended {left} bytes short of the size it announced"
                    ))),
                    None => Err(self.fail("the fetch ended before it began".into())),
                };
            }
        }
        let n = buf.len().min(self.current.len() - self.position);
        let remaining = self.remaining.unwrap_or(0);
        if n as u64 > remaining {
            return Err(
                self.fail("the coordinator sent more bytes than the size it announced".into())
            );
        }
        buf[..n].copy_from_slice(&self.current[self.position..self.position + n]);
        self.position += n;
        self.remaining = Some(remaining - n as u64);
        Ok(n)
    }
}
