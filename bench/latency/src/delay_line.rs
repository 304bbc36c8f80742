//! A TCP delay line: every byte reaches the other side a fixed one-way delay after it
//! arrived, in both directions, however many bytes are in flight (a long fat pipe, not a
//! slow one). Each direction is a reader that stamps chunks with their arrival time and a
//! writer that delivers each chunk at its stamp plus the delay, so chunks in flight overlap
//! as they do on a real link. (The chaos proxy's `Pass` delay holds one chunk at a time,
//! which also throttles bandwidth; faults such as resets come from that proxy, in front.)

use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// A running delay line on a loopback port, forwarding to a fixed target.
pub struct DelayLine {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl DelayLine {
    /// Starts a delay line on a free loopback port that forwards every connection to
    /// `target`, holding bytes for `one_way` in each direction.
    pub async fn start(target: SocketAddr, one_way: Duration) -> std::io::Result<DelayLine> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                tokio::spawn(carry(client, target, one_way));
            }
        });
        Ok(DelayLine { addr, task })
    }

    /// The address to connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for DelayLine {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn carry(client: TcpStream, target: SocketAddr, one_way: Duration) {
    let Ok(Ok(server)) =
        tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(target)).await
    else {
        let _ = client.set_zero_linger();
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let up = direction(client_read, server_write, one_way);
    let down = direction(server_read, client_write, one_way);
    // When one direction ends (closed or reset), the other is dropped with it and both
    // sockets close: HTTP/2 never half-closes a live connection.
    tokio::select! {
        () = up => {}
        () = down => {}
    }
}

/// Carries one direction: returns when the source closes (after delivering everything and
/// closing the destination's write side) or either side fails.
async fn direction(mut src: OwnedReadHalf, mut dst: OwnedWriteHalf, one_way: Duration) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let reader = async move {
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            match src.read(&mut buf).await {
                Ok(n) if n > 0 => {
                    if tx.send((Instant::now(), buf[..n].to_vec())).is_err() {
                        return false;
                    }
                }
                Ok(_) => return true,
                Err(_) => return false,
            }
        }
    };
    let writer = async move {
        while let Some((arrived, chunk)) = rx.recv().await {
            tokio::time::sleep_until(arrived + one_way).await;
            if dst.write_all(&chunk).await.is_err() {
                let _ = dst.as_ref().set_zero_linger();
                return;
            }
        }
        let _ = dst.shutdown().await;
    };
    // The writer ends once the reader has ended (its sender dropped) and everything read
    // is delivered, or at once when the destination fails.
    tokio::pin!(reader);
    tokio::pin!(writer);
    let mut reader_done = false;
    loop {
        tokio::select! {
            _ = &mut reader, if !reader_done => reader_done = true,
            () = &mut writer => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use grind_kit::net::echo_server;

    #[tokio::test]
    async fn a_round_trip_takes_twice_the_delay_and_bursts_overlap() {
        let line = DelayLine::start(echo_server().await, Duration::from_millis(100))
            .await
            .unwrap();
        let mut stream = TcpStream::connect(line.addr()).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let started = std::time::Instant::now();
        // Ten writes 10 ms apart: on a delay line they overlap in flight, so the last echo
        // arrives about 90 + 200 ms after the first write, not 10 x 200 ms.
        for i in 0..10u8 {
            stream.write_all(&[i]).await.unwrap();
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let mut got = [0u8; 10];
        stream.read_exact(&mut got).await.unwrap();
        let elapsed = started.elapsed();
        assert_eq!(got, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert!(elapsed >= Duration::from_millis(290), "{elapsed:?}");
        assert!(elapsed < Duration::from_millis(1000), "{elapsed:?}");
    }
}
