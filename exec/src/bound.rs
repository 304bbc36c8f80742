//! The bound feed: the best cost known anywhere in the campaign, passed into a running solver.
//!
//! Opt-in per run. Each improvement is written
//! - as a line `b <value>` on the solver's stdin (non-blocking: if the solver does not read
//!   its stdin and the pipe is full, the line is dropped and counted; the file still has it),
//! - and to the bound file (`GRIND_BOUND_FILE`), replaced atomically: written to a temporary
//!   file in the same directory, then renamed over it. The file holds one decimal line.
//!
//! Only improvements are passed on ([`Objective::improves`]): the values a solver sees are
//! strictly monotone.

use crate::error::{Error, Result};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::ChildStdin;
use std::sync::{Arc, Mutex};

/// The direction of the campaign's objective.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Objective {
    /// Lower is better (MaxSAT costs).
    Minimize,
    /// Higher is better.
    Maximize,
}

impl Objective {
    /// Whether `new` is strictly better than `old`.
    pub fn improves(self, new: i64, old: i64) -> bool {
        match self {
            Objective::Minimize => new < old,
            Objective::Maximize => new > old,
        }
    }
}

/// What happened to one offered bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Not better than what the solver already has: nothing written.
    NotBetter,
    /// Written to the file and to stdin.
    Delivered,
    /// Written to the file; stdin was full (the solver does not read it) or closed.
    FileOnly,
}

/// Sends bounds to one running solver. Cheap to clone; usable from any thread.
#[derive(Clone, Debug)]
pub struct BoundFeed {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug)]
struct Inner {
    objective: Objective,
    best: Option<i64>,
    stdin: Option<ChildStdin>,
    file: PathBuf,
    dropped_lines: u64,
}

impl BoundFeed {
    /// A feed writing to `file` (whose directory must exist) and, once attached, stdin.
    pub(crate) fn new(objective: Objective, file: PathBuf) -> BoundFeed {
        BoundFeed {
            inner: Arc::new(Mutex::new(Inner {
                objective,
                best: None,
                stdin: None,
                file,
                dropped_lines: 0,
            })),
        }
    }

    /// Attaches the solver's stdin (made non-blocking).
    pub(crate) fn attach(&self, stdin: ChildStdin) {
        // SAFETY: fcntl on a descriptor we own.
        unsafe {
            let fd = stdin.as_raw_fd();
            let flags = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        let mut inner = self.lock();
        if let Some(b) = inner.best {
            let _ = write_line(&mut inner, &stdin, b);
        }
        inner.stdin = Some(stdin);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Offers a bound: passed on only if it improves on the last one passed on.
    pub fn offer(&self, value: i64) -> Result<Delivery> {
        let mut inner = self.lock();
        if let Some(best) = inner.best {
            if !inner.objective.improves(value, best) {
                return Ok(Delivery::NotBetter);
            }
        }
        inner.best = Some(value);
        write_atomically(&inner.file, format!("{value}\n").as_bytes())?;
        let Some(stdin) = inner.stdin.take() else {
            return Ok(Delivery::FileOnly);
        };
        let delivered = write_line(&mut inner, &stdin, value);
        if delivered != Some(false) {
            inner.stdin = Some(stdin); // keep it unless closed
        }
        Ok(if delivered == Some(true) {
            Delivery::Delivered
        } else {
            Delivery::FileOnly
        })
    }

    /// The last bound passed on.
    pub fn current(&self) -> Option<i64> {
        self.lock().best
    }

    /// Lines dropped because the solver's stdin pipe was full.
    pub fn dropped_lines(&self) -> u64 {
        self.lock().dropped_lines
    }

    /// Closes the solver's stdin (it sees end of file).
    pub fn close_stdin(&self) {
        self.lock().stdin = None;
    }
}

/// Writes `b <value>\n`: `Some(true)` written, `None` pipe full (dropped), `Some(false)`
/// pipe closed.
fn write_line(inner: &mut Inner, mut stdin: &ChildStdin, value: i64) -> Option<bool> {
    // Lines are far shorter than PIPE_BUF, so the write is all or nothing.
    match stdin.write(format!("b {value}\n").as_bytes()) {
        Ok(_) => Some(true),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
            inner.dropped_lines += 1;
            None
        }
        Err(_) => Some(false),
    }
}

/// Replaces `path` with `data`: a temporary file in the same directory, then `rename`.
pub fn write_atomically(path: &Path, data: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| Error::InvalidSpec(format!("{} has no directory", path.display())))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".bound-")
        .tempfile_in(dir)
        .map_err(|e| Error::io("creating a temporary file in", dir, e))?;
    tmp.write_all(data)
        .map_err(|e| Error::io("writing", tmp.path(), e))?;
    // Readable by the solver whatever the umask (tempfile creates 0600).
    let perm = std::os::unix::fs::PermissionsExt::from_mode(0o644);
    std::fs::set_permissions(tmp.path(), perm).map_err(|e| Error::io("chmod", tmp.path(), e))?;
    tmp.persist(path)
        .map_err(|e| Error::io("renaming into place", path, e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_improvements_are_passed_on() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bound");
        let feed = BoundFeed::new(Objective::Minimize, file.clone());
        assert_eq!(feed.offer(10).unwrap(), Delivery::FileOnly);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "10\n");
        assert_eq!(feed.offer(12).unwrap(), Delivery::NotBetter);
        assert_eq!(feed.offer(10).unwrap(), Delivery::NotBetter);
        assert_eq!(feed.offer(7).unwrap(), Delivery::FileOnly);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "7\n");
        assert_eq!(feed.current(), Some(7));
        let max = BoundFeed::new(Objective::Maximize, dir.path().join("b2"));
        max.offer(3).unwrap();
        assert_eq!(max.offer(2).unwrap(), Delivery::NotBetter);
        assert_eq!(max.offer(4).unwrap(), Delivery::FileOnly);
    }
}
