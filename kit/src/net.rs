//! Loopback sockets for tests: a free port to hand to a process, an echo server to relay to.

use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A loopback port free at the time of the call (bound, read, released: another process
/// could take it meanwhile, so prefer `127.0.0.1:0` where the program reports its port).
/// Panics when no loopback port can be bound (a test cannot go on then).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("bind a loopback port")
        .port()
}

/// A TCP server on a free loopback port that writes back every byte it reads, on every
/// connection, until the runtime stops. Panics when no loopback port can be bound.
pub async fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let addr = listener.local_addr().expect("a bound address");
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                while let Ok(n) = socket.read(&mut buf).await {
                    if n == 0 || socket.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpStream;

    #[tokio::test]
    async fn the_echo_server_echoes_and_ports_are_free() {
        let addr = echo_server().await;
        let mut socket = TcpStream::connect(addr).await.unwrap();
        socket.write_all(b"ping").await.unwrap();
        let mut back = [0u8; 4];
        socket.read_exact(&mut back).await.unwrap();
        assert_eq!(&back, b"ping");
        let port = free_port();
        assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_ok());
    }
}
