//! Process-group supervision: wait for a leader with a deadline, stop the whole group
//! (SIGTERM, grace, SIGKILL), reap with resource usage.
//!
//! The leader is watched through a pidfd (`pidfd_open`, Linux >= 5.3) polled together with a
//! wake-up pipe, so a stop request or a deadline interrupts the wait at once. The leader is
//! reaped only after its group has been sent `SIGKILL`: while it is an unreaped zombie its
//! process ID, which is the group ID, cannot be reused, so the group signal cannot hit an
//! unrelated process.

use crate::proc_scan;
use std::io::{self, PipeReader, PipeWriter, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Why a process was stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// It exited by itself (nobody stopped it).
    Exited,
    /// Its wall-clock time limit was reached.
    TimeLimit,
    /// Stop was requested (lease lost, worker shutting down, ...), with the caller's reason.
    Requested(String),
    /// It wrote more than allowed on the named stream (`stdout` or `stderr`): killed at once.
    OutputLimit(&'static str),
    /// The resident memory of its process group went over this many bytes: killed at once.
    MemoryLimit(u64),
}

impl StopReason {
    /// Whether the process is killed without a grace period.
    fn immediate(&self) -> bool {
        matches!(
            self,
            StopReason::OutputLimit(_) | StopReason::MemoryLimit(_)
        )
    }
}

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitKind {
    /// Exited with this code.
    Code(i32),
    /// Killed by this signal.
    Signal(i32),
}

impl std::fmt::Display for ExitKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExitKind::Code(c) => write!(f, "exit code {c}"),
            ExitKind::Signal(s) => write!(f, "killed by signal {s} ({})", signal_name(*s)),
        }
    }
}

/// A signal's usual name (for messages).
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGTERM => "SIGTERM",
        libc::SIGKILL => "SIGKILL",
        libc::SIGXCPU => "SIGXCPU: CPU time limit",
        libc::SIGXFSZ => "SIGXFSZ: file size limit",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGINT => "SIGINT",
        _ => "other",
    }
}

/// Asks a supervised process to stop; cheap to clone, usable from any thread.
#[derive(Clone, Debug)]
pub struct StopHandle {
    inner: Arc<StopInner>,
}

#[derive(Debug)]
struct StopInner {
    reason: Mutex<Option<StopReason>>,
    wake: PipeWriter,
}

impl StopHandle {
    /// Requests a stop; the first reason wins, later requests are ignored.
    pub fn stop(&self, reason: StopReason) {
        let mut slot = self.inner.reason.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(reason);
            let _ = (&self.inner.wake).write(&[1]);
        }
    }

    pub(crate) fn requested(&self) -> Option<StopReason> {
        self.inner
            .reason
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// A new stop handle and the read end its requests wake.
pub(crate) fn stop_channel() -> io::Result<(StopHandle, PipeReader)> {
    let (r, w) = std::io::pipe()?;
    Ok((
        StopHandle {
            inner: Arc::new(StopInner {
                reason: Mutex::new(None),
                wake: w,
            }),
        },
        r,
    ))
}

/// What supervision saw.
#[derive(Clone, Debug)]
pub struct Supervised {
    /// Why it stopped.
    pub reason: StopReason,
    /// `SIGKILL` had to be sent to the group while the leader was still alive.
    pub killed: bool,
    /// How the leader ended.
    pub exit: ExitKind,
    /// The leader's CPU time (user + system), with that of the descendants it reaped.
    pub cpu_time: Duration,
    /// The leader's peak resident set, in bytes.
    pub max_rss_bytes: u64,
}

/// Opens a pidfd for `pid`.
fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the descriptor is new and ours.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Sends `sig` to process group `pgid` (ignoring "no such group").
pub(crate) fn kill_group(pgid: i32, sig: i32) {
    // SAFETY: kill with a negative pid signals the group.
    unsafe { libc::kill(-pgid, sig) };
}

enum Woke {
    Exited,
    Request,
    Timeout,
}

fn wait_event(pidfd: &OwnedFd, wake: Option<&PipeReader>, until: Option<Instant>) -> Woke {
    loop {
        let timeout_ms = match until {
            None => -1,
            Some(t) => {
                let left = t.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Woke::Timeout;
                }
                left.as_millis().clamp(1, i32::MAX as u128) as i32
            }
        };
        let mut fds = [
            libc::pollfd {
                fd: pidfd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: wake.map_or(-1, |w| w.as_raw_fd()),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: polling two pollfd structs we own.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout_ms) };
        if n < 0 {
            continue; // EINTR
        }
        if fds[0].revents != 0 {
            return Woke::Exited;
        }
        if fds[1].revents != 0 {
            return Woke::Request;
        }
    }
}

/// What the supervisor watches besides stop requests.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Watch {
    /// The wall-clock limit.
    pub deadline: Option<Instant>,
    /// The resident-memory limit of the whole group, polled every [`RSS_POLL`].
    pub rss_limit: Option<u64>,
}

/// How often the group's resident memory is measured when it has a limit.
pub const RSS_POLL: Duration = Duration::from_millis(200);

/// Supervises process-group leader `pid` until it has ended and been reaped.
///
/// Stops it at the deadline (with [`StopReason::TimeLimit`]) or when `stop` is asked:
/// `SIGTERM` to the group, `grace`, then `SIGKILL` to the group (output- and memory-limit
/// stops get `SIGKILL` at once). When the leader has exited, whatever is left of its group
/// gets `SIGKILL`.
pub(crate) fn supervise(
    pid: u32,
    stop: &StopHandle,
    wake: &PipeReader,
    watch: Watch,
    grace: Duration,
) -> io::Result<Supervised> {
    let pid = pid as i32;
    let pidfd = match pidfd_open(pid) {
        Ok(fd) => fd,
        Err(e) => {
            // Never leave a process unsupervised (pidfd_open needs Linux >= 5.3).
            kill_group(pid, libc::SIGKILL);
            let _ = reap(pid);
            return Err(e);
        }
    };
    let mut killed = false;
    let mut reason = StopReason::Exited;
    if let Some(stop_reason) = watch_until_stop(pid, &pidfd, stop, wake, watch) {
        reason = stop_reason;
        if !reason.immediate() {
            kill_group(pid, libc::SIGTERM);
            let until = Some(Instant::now() + grace);
            killed = !matches!(wait_event(&pidfd, None, until), Woke::Exited);
        } else {
            killed = true;
        }
        if killed {
            kill_group(pid, libc::SIGKILL);
            wait_event(&pidfd, None, None);
        }
    }
    // The leader is a zombie now: its group ID cannot be reused until it is reaped.
    kill_group(pid, libc::SIGKILL);
    let (exit, cpu_time, max_rss_bytes) = reap(pid)?;
    Ok(Supervised {
        reason,
        killed,
        exit,
        cpu_time,
        max_rss_bytes,
    })
}

/// Waits until the leader exits (`None`) or a reason to stop it arises.
fn watch_until_stop(
    pid: i32,
    pidfd: &OwnedFd,
    stop: &StopHandle,
    wake: &PipeReader,
    watch: Watch,
) -> Option<StopReason> {
    loop {
        let poll = watch.rss_limit.map(|_| Instant::now() + RSS_POLL);
        let until = match (watch.deadline, poll) {
            (Some(d), Some(p)) => Some(d.min(p)),
            (d, p) => d.or(p),
        };
        match wait_event(pidfd, Some(wake), until) {
            Woke::Exited => return None,
            Woke::Request => {
                return Some(
                    stop.requested()
                        .unwrap_or(StopReason::Requested("stop".into())),
                )
            }
            Woke::Timeout => {
                if watch.deadline.is_some_and(|d| Instant::now() >= d) {
                    return Some(StopReason::TimeLimit);
                }
                if let Some(limit) = watch.rss_limit {
                    if proc_scan::group_rss_bytes(pid) > limit {
                        return Some(StopReason::MemoryLimit(limit));
                    }
                }
            }
        }
    }
}

/// Reaps `pid` with `wait4`, returning its end and resource usage.
fn reap(pid: i32) -> io::Result<(ExitKind, Duration, u64)> {
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid value to be overwritten.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: wait4 on our own child with valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let exit = if libc::WIFSIGNALED(status) {
        ExitKind::Signal(libc::WTERMSIG(status))
    } else {
        ExitKind::Code(libc::WEXITSTATUS(status))
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    let cpu = tv(usage.ru_utime) + tv(usage.ru_stime);
    Ok((exit, cpu, usage.ru_maxrss as u64 * 1024))
}
