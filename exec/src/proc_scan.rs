//! Lookups in `/proc`: processes holding a pipe, a process group's resident memory.

use std::os::fd::AsRawFd;

/// The inode of the pipe behind `fd` (both ends of a pipe share it).
pub(crate) fn pipe_inode(fd: &impl AsRawFd) -> Option<u64> {
    // SAFETY: fstat on a valid descriptor into a zeroed struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    (unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } == 0).then_some(st.st_ino)
}

/// Kills (`SIGKILL`) every other process holding one of the pipes `inodes` open, found by
/// scanning `/proc/*/fd`: processes that left the solver's group (`setsid`) but kept its
/// stdout or stderr. Returns their process IDs.
pub(crate) fn kill_pipe_holders(inodes: &[u64]) -> Vec<i32> {
    let me = std::process::id() as i32;
    let wanted: Vec<String> = inodes.iter().map(|i| format!("pipe:[{i}]")).collect();
    let mut killed = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return killed;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        // Our own children are other runs being started (between fork and exec they still
        // hold copies of every descriptor); a solver's descendants never are, once it is gone.
        if pid == me || parent_of(pid) == Some(me) {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .ok()
                .and_then(|t| t.to_str().map(|t| wanted.iter().any(|w| w == t)))
                .unwrap_or(false)
        });
        if holds {
            // SAFETY: kill with a positive pid.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            killed.push(pid);
        }
    }
    killed
}

/// The parent process ID of `pid`, from `/proc/<pid>/stat`.
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses: fields resume after the last ')'.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The resident memory (bytes) of all processes in group `pgid`, from `/proc/*/stat`.
pub(crate) fn group_rss_bytes(pgid: i32) -> u64 {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut pages = 0;
    for p in procs.flatten() {
        if !p
            .file_name()
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(p.path().join("stat")) else {
            continue;
        };
        // Fields after the command name: state ppid pgrp ... (rss is field 24 of stat).
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(pgid) {
            pages += fields
                .get(21)
                .and_then(|r| r.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    pages * page
}
