//! What a solver or checker process may do, and what was really applied.
//!
//! A [`SandboxPolicy`] is turned into a [`PreparedSandbox`] in the parent (everything that
//! allocates or opens paths happens there: the Landlock rule set is built and its file
//! descriptor kept), then [`PreparedSandbox::install`] adds the child-side steps to a
//! [`std::process::Command`]: they run between fork and exec and make only system calls (see
//! `child.rs`). [`PreparedSandbox::report`] says what was applied, for provenance.

mod child;
mod landlock_rules;

use crate::error::{Error, Result};
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

pub use landlock_rules::{kernel_landlock_abi, LandlockReport};

/// How Landlock is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LandlockMode {
    /// Not used.
    Off,
    /// Used when the kernel supports it; the report says whether it was.
    BestEffort,
    /// Starting fails with a clear error when the kernel does not support it.
    Required,
}

/// How the memory limit is enforced (both are per process, inherited by children).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryLimitKind {
    /// `RLIMIT_AS`: the whole address space. Strict, but breaks runtimes that reserve large
    /// address ranges up front (JVM, Go, AddressSanitizer).
    AddressSpace,
    /// `RLIMIT_DATA`: private writable memory (heap, anonymous mappings; Linux >= 4.7).
    /// Tolerates reserved-but-unused address space.
    Data,
}

/// Resource limits, applied with `setrlimit` in the child (unset = inherited).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// CPU time per process: `SIGXCPU` at the limit, `SIGKILL` one second later.
    pub cpu_time: Option<Duration>,
    /// Memory per process, in bytes.
    pub memory_bytes: Option<u64>,
    /// How [`Limits::memory_bytes`] is enforced.
    pub memory_kind: MemoryLimitKind,
    /// Highest file descriptor number + 1 (`RLIMIT_NOFILE`).
    pub open_files: Option<u64>,
    /// Largest file the process may write, in bytes (`RLIMIT_FSIZE`; `SIGXFSZ` beyond).
    pub file_size_bytes: Option<u64>,
    /// Resident memory of the whole process group, in bytes: not an rlimit but measured by
    /// the supervisor every 200 ms (as runsolver's `-R`); over it, the group is killed. Works
    /// for runtimes that reserve address space up front, unlike [`Limits::memory_bytes`].
    pub rss_bytes: Option<u64>,
}

impl Default for Limits {
    /// No CPU or memory limit, 1024 open files, 1 GiB files; core dumps are always off.
    fn default() -> Self {
        Limits {
            cpu_time: None,
            memory_bytes: None,
            memory_kind: MemoryLimitKind::AddressSpace,
            open_files: Some(1024),
            file_size_bytes: Some(1 << 30),
            rss_bytes: None,
        }
    }
}

/// Network access of the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Network {
    /// The host's network, as the worker has it.
    Host,
    /// A new, empty network namespace (only its own loopback) inside a new user namespace:
    /// no connection to anything outside the process tree.
    Isolated,
}

/// What to apply to a child process.
#[derive(Clone, Debug)]
pub struct SandboxPolicy {
    /// Landlock use.
    pub landlock: LandlockMode,
    /// Paths readable (and executable) beneath: the bundle, the instance, extra runtimes.
    pub read_only: Vec<PathBuf>,
    /// Paths readable and writable beneath: the work and checkpoint directories.
    pub read_write: Vec<PathBuf>,
    /// Whether the usual system locations are readable (see [`SYSTEM_READ_ONLY`]) and the
    /// harmless devices writable (see [`SYSTEM_DEVICES`]); needed by any dynamically linked
    /// program or interpreter.
    pub system_paths: bool,
    /// Whether `/proc` is readable (under Landlock). Off by default: Landlock's ptrace rules
    /// refuse only attach-class access (`/proc/<pid>/mem`), so with `/proc` a solver could
    /// read the environment and command line of every process of the same user, the
    /// worker's included. Some runtimes (the JVM) need it.
    pub proc_fs: bool,
    /// Resource limits.
    pub limits: Limits,
    /// Network access.
    pub network: Network,
    /// Drop every capability (bounding, ambient, effective, permitted, inheritable sets)
    /// before exec: a worker running as root then starts solvers that cannot use root's
    /// powers (set the clock, reboot, load modules, override file permissions). On by default.
    pub drop_capabilities: bool,
}

impl Default for SandboxPolicy {
    fn default() -> Self {
        SandboxPolicy {
            landlock: LandlockMode::BestEffort,
            read_only: Vec::new(),
            read_write: Vec::new(),
            system_paths: true,
            proc_fs: false,
            limits: Limits::default(),
            network: Network::Host,
            drop_capabilities: true,
        }
    }
}

/// System locations readable (and executable) by sandboxed programs when
/// [`SandboxPolicy::system_paths`] is set. Missing ones are skipped. `/proc` is not among
/// them (see [`SandboxPolicy::proc_fs`]).
pub const SYSTEM_READ_ONLY: &[&str] = &[
    "/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt", "/sys",
];

/// Device files readable and writable when [`SandboxPolicy::system_paths`] is set.
pub const SYSTEM_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// What was applied to a process, for provenance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxReport {
    /// Always true: the process leads its own process group, signalled as a whole.
    pub process_group: bool,
    /// `PR_SET_NO_NEW_PRIVS` was set (always, before exec).
    pub no_new_privs: bool,
    /// The parent's death kills the process (`PR_SET_PDEATHSIG`, `SIGKILL`).
    pub parent_death_signal: bool,
    /// The limits applied (`RLIMIT_CORE` is always 0 in addition).
    pub limits: Limits,
    /// Landlock.
    pub landlock: LandlockReport,
    /// The network was cut off (new user and network namespace).
    pub network_isolated: bool,
    /// Every capability was dropped before exec.
    pub capabilities_dropped: bool,
}

impl SandboxReport {
    /// One line for logs and provenance records.
    pub fn summary(&self) -> String {
        let mut parts = vec!["process group".to_string(), "no_new_privs".to_string()];
        let l = &self.limits;
        if let Some(t) = l.cpu_time {
            parts.push(format!("cpu {}s", t.as_secs()));
        }
        if let Some(m) = l.memory_bytes {
            let kind = match l.memory_kind {
                MemoryLimitKind::AddressSpace => "as",
                MemoryLimitKind::Data => "data",
            };
            parts.push(format!("mem({kind}) {} MiB", m >> 20));
        }
        if let Some(r) = l.rss_bytes {
            parts.push(format!("rss {} MiB (polled)", r >> 20));
        }
        if let Some(n) = l.open_files {
            parts.push(format!("nofile {n}"));
        }
        if let Some(f) = l.file_size_bytes {
            parts.push(format!("fsize {} MiB", f >> 20));
        }
        if self.capabilities_dropped {
            parts.push("no capabilities".into());
        }
        parts.push(self.landlock.summary());
        parts.push(if self.network_isolated {
            "network isolated".into()
        } else {
            "host network".into()
        });
        parts.join(", ")
    }
}

/// A policy made ready in the parent: install it on a `Command`, then spawn.
#[derive(Debug)]
pub struct PreparedSandbox {
    report: SandboxReport,
    landlock_fd: Option<OwnedFd>,
}

impl SandboxPolicy {
    /// Builds the Landlock rule set (when asked and supported) and checks the limits.
    pub fn prepare(&self) -> Result<PreparedSandbox> {
        if self.limits.memory_bytes == Some(0) || self.limits.open_files == Some(0) {
            return Err(Error::InvalidSpec(
                "memory and open-file limits must be positive".into(),
            ));
        }
        let (landlock, landlock_fd) = landlock_rules::build(self)?;
        Ok(PreparedSandbox {
            report: SandboxReport {
                process_group: true,
                no_new_privs: true,
                parent_death_signal: true,
                limits: self.limits.clone(),
                landlock,
                network_isolated: self.network == Network::Isolated,
                capabilities_dropped: self.drop_capabilities,
            },
            landlock_fd,
        })
    }
}

impl PreparedSandbox {
    /// What will be applied.
    pub fn report(&self) -> &SandboxReport {
        &self.report
    }

    /// Makes `cmd` start its process in its own group with the sandbox applied.
    ///
    /// The process must be spawned from a thread that outlives it: the parent-death signal
    /// fires when the spawning *thread* exits.
    pub fn install(self, cmd: &mut Command) -> SpawnDiagnosis {
        let setup = Arc::new(child::ChildSetup::new(&self.report, self.landlock_fd));
        let in_child = Arc::clone(&setup);
        cmd.process_group(0);
        // SAFETY: `ChildSetup::apply` only makes async-signal-safe system calls on data
        // prepared before the fork (no allocation, no locks).
        unsafe {
            cmd.pre_exec(move || in_child.apply());
        }
        SpawnDiagnosis { setup }
    }
}

/// Explains a failed spawn of a command with an installed sandbox.
#[derive(Debug)]
pub struct SpawnDiagnosis {
    setup: Arc<child::ChildSetup>,
}

impl SpawnDiagnosis {
    /// The error for a failed `spawn` of `program`, naming the sandbox step that failed.
    pub fn explain(&self, program: &Path, err: std::io::Error) -> Error {
        let source = match self.setup.failed_step() {
            Some(step) => std::io::Error::new(err.kind(), format!("sandbox step {step}: {err}")),
            None => err,
        };
        Error::Spawn {
            program: program.to_path_buf(),
            source,
        }
    }
}
