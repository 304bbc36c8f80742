//! A TCP proxy between one worker and the coordinator, under the harness's control.
//!
//! The worker connects to the proxy; the proxy connects on to wherever the coordinator listens
//! now (the target follows coordinator restarts). What it can inject, per proxy:
//!
//! - [`Mode::Pass`] with a delay: every chunk read from either side is held for the delay
//!   before it is written on (latency; order is kept);
//! - [`Mode::Cut`]: every open connection is reset (RST: `SO_LINGER` 0, then close) and new
//!   connections are reset as soon as they are accepted — the worker sees "connection reset"
//!   or "connection refused"-like failures;
//! - [`Mode::Stall`]: a partition — bytes stop flowing both ways (nothing is read past the
//!   chunk in hand, so TCP backpressure holds the rest); when the mode changes back to `Pass`
//!   everything held is delivered, late, in order;
//! - [`Mode::LoseReplies`]: requests reach the coordinator but its replies are discarded and
//!   the connection is reset a moment after the first discarded byte — the worker does not
//!   know whether its call took effect and delivers again (at-least-once delivery, so the
//!   coordinator sees duplicate messages).
//! - [`Mode::Duplicate`]: every connection opened while it is in force gets a shadow
//!   connection to the coordinator that receives an exact copy of everything the worker sends
//!   (from the connection's first byte, so HTTP/2 framing and header compression stay valid);
//!   the shadow's replies are discarded. The coordinator sees every request twice, at nearly
//!   the same moment, as if the network had duplicated it. Connections open when the mode
//!   starts are reset first, so the worker reconnects under duplication.
//!
//! Duplicating bytes inside one TCP stream would only corrupt HTTP/2 framing (the coordinator
//! would drop the connection), which is why duplicates travel on a shadow connection, and
//! also come the way they happen in real networks: a lost reply followed by a retry.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::Instant;

/// What the proxy does to the traffic it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Bytes flow, each chunk held for `delay` first.
    Pass {
        /// Added latency per chunk and direction.
        delay: Duration,
    },
    /// Every connection is reset, new ones too.
    Cut,
    /// Bytes are held in both directions until the mode changes.
    Stall,
    /// Requests flow; replies are discarded and the connection is reset `after` the first
    /// discarded byte.
    LoseReplies {
        /// How long after the first lost reply byte the connection is reset.
        after: Duration,
    },
    /// Bytes flow, and new connections' requests are also sent again on a shadow connection.
    Duplicate,
}

impl Mode {
    /// Normal operation.
    pub const OPEN: Mode = Mode::Pass {
        delay: Duration::ZERO,
    };
}

/// Counters of what a proxy did.
#[derive(Debug, Default)]
pub struct ProxyStats {
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Connections reset by the proxy.
    pub resets: AtomicU64,
    /// Bytes carried worker -> coordinator.
    pub bytes_up: AtomicU64,
    /// Bytes carried coordinator -> worker.
    pub bytes_down: AtomicU64,
    /// Chunks held back by a stall.
    pub held_chunks: AtomicU64,
    /// Chunks of replies discarded.
    pub lost_chunks: AtomicU64,
    /// Shadow connections opened to duplicate requests.
    pub shadow_connections: AtomicU64,
    /// Bytes sent a second time on shadow connections.
    pub duplicated_bytes: AtomicU64,
}

/// A running proxy.
pub struct Proxy {
    addr: SocketAddr,
    mode: watch::Sender<Mode>,
    stats: Arc<ProxyStats>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Starts a proxy on a free loopback port, forwarding to `target` (none: the
    /// coordinator is down and connections are reset).
    pub async fn start(target: watch::Receiver<Option<SocketAddr>>) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (mode, mode_rx) = watch::channel(Mode::OPEN);
        let stats = Arc::new(ProxyStats::default());
        let task = tokio::spawn(accept_loop(listener, mode_rx, target, stats.clone()));
        Ok(Proxy {
            addr,
            mode,
            stats,
            task,
        })
    }

    /// The address workers connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Switches the proxy to `mode` (takes effect on open connections at once).
    pub fn set(&self, mode: Mode) {
        self.mode.send_replace(mode);
    }

    /// The mode in force.
    pub fn mode(&self) -> Mode {
        *self.mode.borrow()
    }

    /// What the proxy did so far.
    pub fn stats(&self) -> &ProxyStats {
        &self.stats
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.mode.send_replace(Mode::Cut);
        self.task.abort();
    }
}

async fn accept_loop(
    listener: TcpListener,
    mode: watch::Receiver<Mode>,
    target: watch::Receiver<Option<SocketAddr>>,
    stats: Arc<ProxyStats>,
) {
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        stats.connections.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(connection(
            socket,
            mode.clone(),
            target.clone(),
            stats.clone(),
        ));
    }
}

/// How one direction of a connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// The source closed its side; the other side was told (FIN).
    Eof,
    /// The connection must be reset.
    Reset,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    /// Worker to coordinator.
    Up,
    /// Coordinator to worker.
    Down,
}

fn reset(stream: &TcpStream, stats: &ProxyStats) {
    stats.resets.fetch_add(1, Ordering::Relaxed);
    let _ = stream.set_zero_linger();
}

async fn connection(
    client: TcpStream,
    mode: watch::Receiver<Mode>,
    target: watch::Receiver<Option<SocketAddr>>,
    stats: Arc<ProxyStats>,
) {
    let _ = client.set_nodelay(true);
    let addr = *target.borrow();
    let Some(addr) = addr.filter(|_| *mode.borrow() != Mode::Cut) else {
        reset(&client, &stats);
        return;
    };
    let server = match tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(addr)).await
    {
        Ok(Ok(server)) => server,
        _ => {
            reset(&client, &stats);
            return;
        }
    };
    let _ = server.set_nodelay(true);
    let mut shadow = None;
    if *mode.borrow() == Mode::Duplicate {
        if let Ok(Ok(twin)) =
            tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(addr)).await
        {
            let _ = twin.set_nodelay(true);
            stats.shadow_connections.fetch_add(1, Ordering::Relaxed);
            let (mut replies, requests) = twin.into_split();
            // The shadow's replies go nowhere.
            tokio::spawn(async move {
                let mut sink = vec![0u8; 16 * 1024];
                while matches!(replies.read(&mut sink).await, Ok(n) if n > 0) {}
            });
            shadow = Some(requests);
        }
    }
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let outcome = {
        let up = pump(
            &mut client_read,
            &mut server_write,
            shadow,
            mode.clone(),
            Direction::Up,
            &stats,
        );
        let down = pump(
            &mut server_read,
            &mut client_write,
            None,
            mode.clone(),
            Direction::Down,
            &stats,
        );
        tokio::pin!(up);
        tokio::pin!(down);
        let (mut up_done, mut down_done) = (false, false);
        loop {
            tokio::select! {
                end = &mut up, if !up_done => {
                    if end == End::Reset { break End::Reset; }
                    up_done = true;
                }
                end = &mut down, if !down_done => {
                    if end == End::Reset { break End::Reset; }
                    down_done = true;
                }
            }
            if up_done && down_done {
                break End::Eof;
            }
        }
    };
    if outcome == End::Reset {
        reset(client_write.as_ref(), &stats);
        let _ = server_write.as_ref().set_zero_linger();
    }
}

/// Copies `src` to `dst` chunk by chunk, applying the mode in force to every chunk; while
/// the mode is [`Mode::Duplicate`], every chunk is also written to `shadow` (closed, for
/// good, when the mode changes).
async fn pump(
    src: &mut OwnedReadHalf,
    dst: &mut OwnedWriteHalf,
    mut shadow: Option<OwnedWriteHalf>,
    mut mode: watch::Receiver<Mode>,
    direction: Direction,
    stats: &ProxyStats,
) -> End {
    let mut buf = vec![0u8; 32 * 1024];
    let mut reset_at: Option<Instant> = None;
    loop {
        if *mode.borrow_and_update() == Mode::Cut {
            return End::Reset;
        }
        let far = Instant::now() + Duration::from_secs(3600);
        let n = tokio::select! {
            read = src.read(&mut buf) => match read {
                Ok(0) => {
                    let _ = dst.shutdown().await;
                    return End::Eof;
                }
                Ok(n) => n,
                Err(_) => return End::Reset,
            },
            changed = mode.changed() => {
                if changed.is_err() {
                    return End::Reset;
                }
                continue;
            }
            _ = tokio::time::sleep_until(reset_at.unwrap_or(far)), if reset_at.is_some() => {
                return End::Reset;
            }
        };
        loop {
            let current = *mode.borrow_and_update();
            if current != Mode::Duplicate {
                if let Some(mut twin) = shadow.take() {
                    let _ = twin.shutdown().await;
                }
            }
            match current {
                Mode::Cut => return End::Reset,
                Mode::Stall => {
                    stats.held_chunks.fetch_add(1, Ordering::Relaxed);
                    if mode.changed().await.is_err() {
                        return End::Reset;
                    }
                }
                Mode::LoseReplies { after } if direction == Direction::Down => {
                    stats.lost_chunks.fetch_add(1, Ordering::Relaxed);
                    reset_at.get_or_insert(Instant::now() + after);
                    break;
                }
                Mode::Pass { .. } | Mode::LoseReplies { .. } | Mode::Duplicate => {
                    if let Mode::Pass { delay } = current {
                        if !delay.is_zero() {
                            tokio::time::sleep(delay).await;
                        }
                    }
                    if dst.write_all(&buf[..n]).await.is_err() {
                        return End::Reset;
                    }
                    if let Some(twin) = shadow.as_mut() {
                        if twin.write_all(&buf[..n]).await.is_ok() {
                            stats
                                .duplicated_bytes
                                .fetch_add(n as u64, Ordering::Relaxed);
                        } else {
                            shadow = None;
                        }
                    }
                    let counter = match direction {
                        Direction::Up => &stats.bytes_up,
                        Direction::Down => &stats.bytes_down,
                    };
                    counter.fetch_add(n as u64, Ordering::Relaxed);
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use grind_kit::net::echo_server;

    async fn round_trip(stream: &mut TcpStream, text: &[u8]) -> std::io::Result<Vec<u8>> {
        stream.write_all(text).await?;
        let mut got = vec![0u8; text.len()];
        stream.read_exact(&mut got).await?;
        Ok(got)
    }

    #[tokio::test]
    async fn passes_cuts_stalls_and_heals() {
        let (_tx, target) = watch::channel(Some(echo_server().await));
        let proxy = Proxy::start(target).await.unwrap();
        let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(round_trip(&mut stream, b"hello").await.unwrap(), b"hello");

        // A stall holds bytes until it heals, then delivers them.
        proxy.set(Mode::Stall);
        stream.write_all(b"held").await.unwrap();
        let mut got = [0u8; 4];
        let early =
            tokio::time::timeout(Duration::from_millis(200), stream.read_exact(&mut got)).await;
        assert!(early.is_err(), "nothing arrives during a stall");
        proxy.set(Mode::OPEN);
        stream.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"held");

        // A cut resets the open connection and refuses new ones.
        proxy.set(Mode::Cut);
        let mut buf = [0u8; 8];
        let cut = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
            .await
            .unwrap();
        assert!(matches!(cut, Err(_) | Ok(0)), "{cut:?}");
        let mut fresh = TcpStream::connect(proxy.addr()).await.unwrap();
        assert!(round_trip(&mut fresh, b"x").await.is_err());

        // Healed: new connections work again, with a delay when asked.
        proxy.set(Mode::Pass {
            delay: Duration::from_millis(100),
        });
        let mut healed = TcpStream::connect(proxy.addr()).await.unwrap();
        let started = std::time::Instant::now();
        assert_eq!(round_trip(&mut healed, b"late").await.unwrap(), b"late");
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert!(proxy.stats().resets.load(Ordering::Relaxed) >= 2);
    }

    #[tokio::test]
    async fn duplicated_connections_deliver_every_request_twice() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (_tx, target) = watch::channel(Some(listener.local_addr().unwrap()));
        let proxy = Proxy::start(target).await.unwrap();
        proxy.set(Mode::Duplicate);
        let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
        client.write_all(b"first").await.unwrap();
        let (mut a, _) = listener.accept().await.unwrap();
        let (mut b, _) = listener.accept().await.unwrap();
        for server in [&mut a, &mut b] {
            let mut got = [0u8; 5];
            server.read_exact(&mut got).await.unwrap();
            assert_eq!(&got, b"first", "both connections carry the request");
        }
        // Only one server's replies reach the client: whichever is the real one answers.
        a.write_all(b"A").await.unwrap();
        b.write_all(b"B").await.unwrap();
        let mut reply = [0u8; 1];
        client.read_exact(&mut reply).await.unwrap();
        assert!(&reply == b"A" || &reply == b"B");
        let quiet = tokio::time::timeout(Duration::from_millis(200), client.read(&mut reply)).await;
        assert!(quiet.is_err(), "the shadow's reply is discarded");
        // Back to normal: the shadow is closed and requests go once.
        proxy.set(Mode::OPEN);
        client.write_all(b"again").await.unwrap();
        let (mut real, mut twin) = if reply == *b"A" { (a, b) } else { (b, a) };
        let mut got = [0u8; 5];
        real.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"again");
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(5), twin.read_to_end(&mut rest))
            .await
            .unwrap();
        assert!(closed.is_ok() && rest.is_empty(), "{closed:?} {rest:?}");
        assert_eq!(proxy.stats().shadow_connections.load(Ordering::Relaxed), 1);
        assert_eq!(proxy.stats().duplicated_bytes.load(Ordering::Relaxed), 5);
    }

    #[tokio::test]
    async fn lost_replies_reach_the_server_and_reset_the_client() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (_tx, target) = watch::channel(Some(listener.local_addr().unwrap()));
        let proxy = Proxy::start(target).await.unwrap();
        proxy.set(Mode::LoseReplies {
            after: Duration::from_millis(50),
        });
        let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
        client.write_all(b"request").await.unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        let mut got = [0u8; 7];
        server.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"request", "the request arrives");
        server.write_all(b"reply").await.unwrap();
        let mut buf = [0u8; 8];
        let read = tokio::time::timeout(Duration::from_secs(5), client.read(&mut buf))
            .await
            .unwrap();
        assert!(
            matches!(read, Err(_) | Ok(0)),
            "the reply is lost: {read:?}"
        );
    }
}
