//! A "full disk" without root: a running process's soft file-size limit (`RLIMIT_FSIZE`)
//! set from outside with prlimit(2) (allowed on one's own processes). Lowered to 0, every
//! write(2) to a regular file (a database, its WAL, its shared-memory index) fails with
//! `EFBIG`, as on a full disk or a volume gone read-only, provided the process ignores
//! `SIGXFSZ`. Pipes and sockets are not regular files: logging to them and the network keep
//! working, and reads keep working. Restoring the previous limit heals it.
//!
//! Alternatives that do not work here: `chmod` on the file or its directory does not affect
//! descriptors that are already open, and a small tmpfs to fill needs mount privileges.

use crate::KitError;

/// Sets the soft file-size limit of process `pid` (`None`: unlimited; never above the hard
/// limit, which is kept). Returns the soft limit it replaced.
pub fn set_file_size_limit(pid: u32, limit: Option<u64>) -> Result<Option<u64>, KitError> {
    let os = |what: String| KitError::Os {
        what,
        source: std::io::Error::last_os_error(),
    };
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: prlimit(2) with valid pointers; a null new limit only reads.
    let read = unsafe {
        libc::prlimit(
            pid as libc::pid_t,
            libc::RLIMIT_FSIZE,
            std::ptr::null(),
            &mut old,
        )
    };
    if read != 0 {
        return Err(os(format!("cannot read the file-size limit of {pid}")));
    }
    let new = libc::rlimit {
        rlim_cur: limit.unwrap_or(libc::RLIM_INFINITY).min(old.rlim_max),
        rlim_max: old.rlim_max,
    };
    // SAFETY: as above; a null old limit only writes.
    let set = unsafe {
        libc::prlimit(
            pid as libc::pid_t,
            libc::RLIMIT_FSIZE,
            &new,
            std::ptr::null_mut(),
        )
    };
    if set != 0 {
        return Err(os(format!("cannot set the file-size limit of {pid}")));
    }
    Ok((old.rlim_cur != libc::RLIM_INFINITY).then_some(old.rlim_cur))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::process::{Command, Stdio};

    #[test]
    fn a_zero_limit_makes_file_writes_fail_and_healing_restores_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        // A child that appends a line to the file for every line it reads.
        let script = format!(
            "trap '' XFSZ; while read l; do echo $l 2>/dev/null >> {} || echo failed; echo done; done",
            path.display()
        );
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut step = |text: &str| -> String {
            use std::io::BufRead;
            writeln!(stdin, "{text}").unwrap();
            let mut out = String::new();
            loop {
                let mut line = String::new();
                stdout.read_line(&mut line).unwrap();
                if line.trim() == "done" {
                    return out;
                }
                out.push_str(&line);
            }
        };
        assert_eq!(step("one"), "");
        let before = set_file_size_limit(pid, Some(0)).unwrap();
        assert!(step("two").contains("failed"));
        set_file_size_limit(pid, before).unwrap();
        assert_eq!(step("three"), "");
        drop(stdin);
        child.wait().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\nthree\n");
    }
}
