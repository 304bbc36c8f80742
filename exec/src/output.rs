//! Readers for a child's output pipes: byte counting with a limit, a bounded tail, a
//! bounded capture.

use crate::process::{StopHandle, StopReason};
use std::collections::VecDeque;
use std::io::Read;

/// Size of each read from a pipe.
const CHUNK: usize = 64 << 10;

/// What was read from one stream.
#[derive(Clone, Debug, Default)]
pub struct Collected {
    /// Bytes read in total (including those beyond the limit, up to the kill).
    pub total: u64,
    /// The stream went over its limit (and the process was stopped for it).
    pub overflowed: bool,
    /// The kept bytes: the tail (for stderr) or the head (for a capture).
    pub kept: Vec<u8>,
}

/// Which part of a stream to keep.
#[derive(Clone, Copy, Debug)]
pub enum Keep {
    /// The last `n` bytes.
    Tail(usize),
    /// The first `n` bytes.
    Head(usize),
}

/// How long a pipe must stay silent, after data, before [`collect`]'s quiet callback runs.
pub const QUIET: std::time::Duration = std::time::Duration::from_millis(100);

/// Waits until `fd` is readable or, when `timeout` is given, that long: false on timeout.
fn readable_within(fd: std::os::fd::RawFd, timeout: Option<std::time::Duration>) -> bool {
    let ms = timeout.map_or(-1, |t| t.as_millis().clamp(1, i32::MAX as u128) as i32);
    loop {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: polling one pollfd we own.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        if n >= 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return n != 0;
        }
    }
}

/// Reads `stream` to its end, keeping a part and stopping the process (via `stop`) when more
/// than `limit` bytes arrive; reading goes on (and discards) until EOF so the writer never
/// blocks on a full pipe before the kill lands. `on_chunk` sees every byte within the limit.
pub fn collect(
    stream: impl Read,
    name: &'static str,
    limit: u64,
    keep: Keep,
    stop: &StopHandle,
    on_chunk: impl FnMut(&[u8]),
) -> Collected {
    collect_quiet(stream, None, name, limit, keep, stop, on_chunk, || {})
}

/// [`collect`], and when `quiet_fd` (the stream's descriptor) is given, `on_quiet` runs once
/// each time the stream has been silent for [`QUIET`] after data.
#[allow(clippy::too_many_arguments)]
pub fn collect_quiet(
    mut stream: impl Read,
    quiet_fd: Option<std::os::fd::RawFd>,
    name: &'static str,
    limit: u64,
    keep: Keep,
    stop: &StopHandle,
    mut on_chunk: impl FnMut(&[u8]),
    mut on_quiet: impl FnMut(),
) -> Collected {
    let mut buf = vec![0u8; CHUNK];
    let mut tail: VecDeque<u8> = VecDeque::new();
    let mut out = Collected::default();
    let mut since_data = false;
    loop {
        if let Some(fd) = quiet_fd.filter(|_| since_data && !out.overflowed) {
            if !readable_within(fd, Some(QUIET)) {
                on_quiet();
                since_data = false;
            }
        }
        let n = match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        since_data = true;
        let before = out.total;
        out.total += n as u64;
        if out.overflowed {
            continue;
        }
        let within = (limit.saturating_sub(before)).min(n as u64) as usize;
        let chunk = &buf[..within];
        on_chunk(chunk);
        match keep {
            Keep::Tail(max) => {
                tail.extend(chunk);
                let excess = tail.len().saturating_sub(max);
                tail.drain(..excess);
            }
            Keep::Head(max) => {
                let room = max.saturating_sub(out.kept.len());
                out.kept.extend_from_slice(&chunk[..room.min(chunk.len())]);
            }
        }
        if out.total > limit {
            out.overflowed = true;
            stop.stop(StopReason::OutputLimit(name));
        }
    }
    if let Keep::Tail(_) = keep {
        out.kept = tail.into();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_and_head_and_limit() {
        let (stop, _wake) = crate::process::stop_channel().unwrap();
        let data: Vec<u8> = (0..200u8).collect();
        let c = collect(&data[..], "stderr", 1000, Keep::Tail(10), &stop, |_| {});
        assert_eq!(c.kept, (190..200u8).collect::<Vec<_>>());
        assert_eq!(c.total, 200);
        assert!(!c.overflowed);
        let mut seen = 0;
        let c = collect(&data[..], "stdout", 50, Keep::Head(20), &stop, |b| {
            seen += b.len()
        });
        assert!(c.overflowed);
        assert_eq!(seen, 50);
        assert_eq!(c.kept, (0..20u8).collect::<Vec<_>>());
        assert_eq!(stop.requested(), Some(StopReason::OutputLimit("stdout")));
    }
}
