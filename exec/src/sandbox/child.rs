//! The steps run in the child between fork and exec. Everything here is a plain system call
//! on data prepared before the fork: no allocation, no locks (the parent is multi-threaded).
//!
//! When a step fails, its number is written to a pipe so the parent can name it: the standard
//! library only carries the `errno` of a failed `pre_exec` back to the parent.

use super::{MemoryLimitKind, SandboxReport};
use std::io::{self, PipeReader, PipeWriter, Read};
use std::os::fd::{AsRawFd, OwnedFd};

/// The steps, by number, for error messages.
const STEPS: &[&str] = &[
    "setting the parent-death signal",
    "checking the parent is alive",
    "setting resource limits",
    "unsharing user and network namespaces",
    "writing /proc/self/setgroups",
    "writing /proc/self/uid_map",
    "writing /proc/self/gid_map",
    "bringing the loopback interface up",
    "setting no_new_privs",
    "enforcing the Landlock rule set",
    "dropping capabilities",
];

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

type Resource = libc::__rlimit_resource_t;

/// Everything the child needs, prepared in the parent.
#[derive(Debug)]
pub(super) struct ChildSetup {
    parent: libc::pid_t,
    rlimits: Vec<(Resource, libc::rlimit)>,
    isolate_network: bool,
    drop_capabilities: bool,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    landlock_fd: Option<OwnedFd>,
    failed_step: Option<(PipeReader, PipeWriter)>,
}

fn limit(soft: u64, hard: u64) -> libc::rlimit {
    libc::rlimit {
        rlim_cur: soft as libc::rlim_t,
        rlim_max: hard as libc::rlim_t,
    }
}

impl ChildSetup {
    pub(super) fn new(report: &SandboxReport, landlock_fd: Option<OwnedFd>) -> ChildSetup {
        let l = &report.limits;
        let mut rlimits = vec![(libc::RLIMIT_CORE, limit(0, 0))];
        if let Some(t) = l.cpu_time {
            let secs = t.as_secs().max(1);
            rlimits.push((libc::RLIMIT_CPU, limit(secs, secs + 1)));
        }
        if let Some(m) = l.memory_bytes {
            let resource = match l.memory_kind {
                MemoryLimitKind::AddressSpace => libc::RLIMIT_AS,
                MemoryLimitKind::Data => libc::RLIMIT_DATA,
            };
            rlimits.push((resource, limit(m, m)));
        }
        if let Some(n) = l.open_files {
            rlimits.push((libc::RLIMIT_NOFILE, limit(n, n)));
        }
        if let Some(f) = l.file_size_bytes {
            rlimits.push((libc::RLIMIT_FSIZE, limit(f, f)));
        }
        // SAFETY: getpid/getuid/getgid cannot fail.
        let (parent, uid, gid) = unsafe { (libc::getpid(), libc::getuid(), libc::getgid()) };
        ChildSetup {
            parent,
            rlimits,
            isolate_network: report.network_isolated,
            drop_capabilities: report.capabilities_dropped,
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            landlock_fd,
            failed_step: std::io::pipe().ok(),
        }
    }

    /// Runs in the child. Async-signal-safe.
    pub(super) fn apply(&self) -> io::Result<()> {
        let fail = |step: u8| -> io::Result<()> {
            let err = io::Error::last_os_error();
            if let Some((_, w)) = &self.failed_step {
                // SAFETY: writing one byte from a local to a valid descriptor.
                unsafe { libc::write(w.as_raw_fd(), [step].as_ptr().cast(), 1) };
            }
            Err(err)
        };
        // SAFETY: plain system calls with valid arguments; see the module docs.
        unsafe {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return fail(0);
            }
            if libc::getppid() != self.parent {
                *libc::__errno_location() = libc::ESRCH;
                return fail(1);
            }
            for (resource, value) in &self.rlimits {
                if libc::setrlimit(*resource, value) != 0 {
                    return fail(2);
                }
            }
            if self.isolate_network {
                if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) != 0 {
                    return fail(3);
                }
                if !write_file(c"/proc/self/setgroups", b"deny") {
                    return fail(4);
                }
                if !write_file(c"/proc/self/uid_map", &self.uid_map) {
                    return fail(5);
                }
                if !write_file(c"/proc/self/gid_map", &self.gid_map) {
                    return fail(6);
                }
                if !loopback_up() {
                    return fail(7);
                }
            }
            if self.drop_capabilities && !drop_capabilities() {
                return fail(10);
            }
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return fail(8);
            }
            if let Some(fd) = &self.landlock_fd {
                if libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0) != 0 {
                    return fail(9);
                }
            }
        }
        Ok(())
    }

    /// After a failed spawn: the step that failed, if the child got to say.
    pub(super) fn failed_step(&self) -> Option<&'static str> {
        let (r, _) = self.failed_step.as_ref()?;
        let mut reader: &PipeReader = r;
        // SAFETY: setting O_NONBLOCK on a descriptor we own.
        unsafe { libc::fcntl(r.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
        let mut b = [0u8; 1];
        match reader.read(&mut b) {
            Ok(1) => STEPS.get(b[0] as usize).copied(),
            _ => None,
        }
    }
}

/// Empties the capability bounding set (so even a root solver gets no capabilities at
/// exec), the ambient set, and the effective, permitted and inheritable sets.
/// Async-signal-safe.
unsafe fn drop_capabilities() -> bool {
    for cap in 0..64 {
        if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
            // EINVAL: past the last capability. EPERM: no CAP_SETPCAP, so not root, and
            // no_new_privs keeps it from gaining any at exec anyway.
            break;
        }
    }
    // EINVAL on kernels without ambient capabilities (< 4.3), which then have none.
    libc::prctl(
        libc::PR_CAP_AMBIENT,
        libc::PR_CAP_AMBIENT_CLEAR_ALL,
        0,
        0,
        0,
    );
    let header = [CAPABILITY_VERSION_3, 0];
    let data = [0u32; 6];
    libc::syscall(libc::SYS_capset, header.as_ptr(), data.as_ptr()) == 0
}

/// Writes `data` to `path` with open/write/close. Async-signal-safe.
unsafe fn write_file(path: &std::ffi::CStr, data: &[u8]) -> bool {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return false;
    }
    let n = libc::write(fd, data.as_ptr().cast(), data.len());
    libc::close(fd);
    n == data.len() as isize
}

/// Sets `lo` up in the new network namespace, so solvers may talk to themselves over
/// 127.0.0.1. Async-signal-safe.
unsafe fn loopback_up() -> bool {
    let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
    if sock < 0 {
        return false;
    }
    let mut req: libc::ifreq = std::mem::zeroed();
    for (i, b) in b"lo".iter().enumerate() {
        req.ifr_name[i] = *b as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    let ok = libc::ioctl(sock, libc::SIOCSIFFLAGS, &req) == 0;
    libc::close(sock);
    ok
}
