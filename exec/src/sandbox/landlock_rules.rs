//! The Landlock rule set: built in the parent with the `landlock` crate; only its file
//! descriptor goes to the child, which enforces it with `landlock_restrict_self`.

use super::{LandlockMode, SandboxPolicy, SYSTEM_DEVICES, SYSTEM_READ_ONLY};
use crate::error::{Error, Result};
use landlock::{
    path_beneath_rules, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// The Landlock ABI grind asks for: file system rights of ABI 6 (including truncate and
/// device ioctl) and its scopes (no signals to, no abstract UNIX sockets of, processes
/// outside the sandbox). Older kernels get what they support (best effort).
const TARGET_ABI: ABI = ABI::V6;

/// What Landlock did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LandlockReport {
    /// Not asked for.
    Off,
    /// Asked for, but the kernel does not support it (the reason).
    Unsupported(String),
    /// Enforced.
    Applied {
        /// The kernel's Landlock ABI version.
        kernel_abi: i32,
        /// Read-only (and executable) trees, as granted (missing paths are left out).
        read_only: Vec<PathBuf>,
        /// Read-write trees.
        read_write: Vec<PathBuf>,
        /// Signals and abstract UNIX sockets are scoped to the sandbox (ABI >= 6).
        scoped: bool,
    },
}

impl LandlockReport {
    /// Whether a rule set is enforced.
    pub fn applied(&self) -> bool {
        matches!(self, LandlockReport::Applied { .. })
    }

    /// A short description for provenance.
    pub fn summary(&self) -> String {
        match self {
            LandlockReport::Off => "landlock off".into(),
            LandlockReport::Unsupported(why) => format!("landlock unsupported ({why})"),
            LandlockReport::Applied {
                kernel_abi,
                read_only,
                read_write,
                scoped,
            } => format!(
                "landlock abi {kernel_abi} ({} read-only, {} read-write trees{})",
                read_only.len(),
                read_write.len(),
                if *scoped { ", scoped" } else { "" }
            ),
        }
    }
}

/// The kernel's Landlock ABI version, or why there is none.
pub fn kernel_landlock_abi() -> std::result::Result<i32, String> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the version query takes no pointer (NULL, size 0) and returns an integer.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if v >= 1 {
        Ok(v as i32)
    } else {
        let e = std::io::Error::last_os_error();
        Err(match e.raw_os_error() {
            Some(libc::ENOSYS) => "kernel built without Landlock".into(),
            Some(libc::EOPNOTSUPP) => "Landlock disabled at boot (lsm= list)".into(),
            _ => format!("Landlock version query failed: {e}"),
        })
    }
}

fn existing(paths: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = paths.into_iter().filter(|p| p.exists()).collect();
    out.dedup();
    out
}

/// Builds the rule set for `policy`; returns the report and the rule set's descriptor.
pub(super) fn build(policy: &SandboxPolicy) -> Result<(LandlockReport, Option<OwnedFd>)> {
    if policy.landlock == LandlockMode::Off {
        return Ok((LandlockReport::Off, None));
    }
    let kernel_abi = match kernel_landlock_abi() {
        Ok(v) => v,
        Err(why) if policy.landlock == LandlockMode::BestEffort => {
            return Ok((LandlockReport::Unsupported(why), None))
        }
        Err(why) => return Err(Error::Sandbox(format!("Landlock required: {why}"))),
    };
    for p in policy.read_only.iter().chain(&policy.read_write) {
        if !p.exists() {
            return Err(Error::Sandbox(format!(
                "sandbox path {} does not exist",
                p.display()
            )));
        }
    }
    let mut read_only = policy.read_only.clone();
    let mut devices = Vec::new();
    if policy.system_paths {
        read_only.extend(SYSTEM_READ_ONLY.iter().map(PathBuf::from));
        devices.extend(SYSTEM_DEVICES.iter().map(PathBuf::from));
    }
    if policy.proc_fs {
        read_only.push(PathBuf::from("/proc"));
    }
    let read_only = existing(read_only);
    let devices = existing(devices);
    let read_write = existing(policy.read_write.clone());
    let fail = |e: landlock::RulesetError| Error::Sandbox(format!("building Landlock rules: {e}"));
    let created = Ruleset::default()
        .handle_access(AccessFs::from_all(TARGET_ABI))
        .map_err(fail)?
        .scope(Scope::from_all(TARGET_ABI))
        .map_err(fail)?
        .create()
        .map_err(fail)?
        .add_rules(path_beneath_rules(
            &read_only,
            AccessFs::from_read(TARGET_ABI),
        ))
        .map_err(fail)?
        .add_rules(path_beneath_rules(
            devices.iter().chain(&read_write).map(Path::new),
            AccessFs::from_all(TARGET_ABI),
        ))
        .map_err(fail)?;
    let fd: Option<OwnedFd> = created.into();
    match fd {
        Some(fd) => Ok((
            LandlockReport::Applied {
                kernel_abi,
                read_only,
                read_write,
                scoped: kernel_abi >= 6,
            },
            Some(fd),
        )),
        None if policy.landlock == LandlockMode::BestEffort => Ok((
            LandlockReport::Unsupported("the landlock crate could not create a rule set".into()),
            None,
        )),
        None => Err(Error::Sandbox(
            "Landlock required, but no rule set could be created".into(),
        )),
    }
}
