//! The `grind-worker` binary `grind workers up` copies: which file, its architecture (from
//! its ELF header), the newest glibc symbol version it needs, and its SHA-256 digest.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// A worker binary ready to copy.
#[derive(Clone, Debug)]
pub struct WorkerBinary {
    /// Where it is on this machine.
    pub path: PathBuf,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// Lower-case hex SHA-256 of the bytes.
    pub sha256: String,
    /// `uname -m` of the machines it runs on (`x86_64`, `aarch64`).
    pub arch: String,
    /// The newest `GLIBC_2.N` symbol version it needs, as `(2, N)`; `None` for a static one.
    pub glibc: Option<(u32, u32)>,
}

/// The binary to copy: `explicit` (`--worker-bin`) if given, else the portable build
/// (`deploy/portable-worker.sh` writes `target/portable/grind-worker`) when present, else the
/// `grind-worker` beside this `grind`.
pub fn choose(explicit: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(path) = explicit {
        return Ok(path.to_path_buf());
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let beside = exe.parent().unwrap_or(Path::new("."));
    let candidates = [
        beside.join("grind-worker-portable"),
        beside.join("../portable/grind-worker"),
        PathBuf::from("target/portable/grind-worker"),
        beside.join("grind-worker"),
    ];
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .ok_or_else(|| {
            format!(
                "no grind-worker binary found (looked at {}): build one \
                 (deploy/portable-worker.sh) or name it with --worker-bin",
                candidates
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

impl WorkerBinary {
    /// Reads and checks the binary at `path`.
    pub fn load(path: &Path) -> Result<WorkerBinary, String> {
        let bytes = std::fs::read(path)
            .map_err(|e| format!("cannot read the worker binary {}: {e}", path.display()))?;
        let arch = elf_arch(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(WorkerBinary {
            path: path.to_path_buf(),
            sha256: format!("{:x}", Sha256::digest(&bytes)),
            glibc: newest_glibc(&bytes),
            arch: arch.to_string(),
            bytes,
        })
    }

    /// Whether it runs on a machine whose `uname -m` says `machine`.
    pub fn runs_on(&self, machine: &str) -> bool {
        let machine = match machine {
            "amd64" => "x86_64",
            "arm64" => "aarch64",
            other => other,
        };
        machine == self.arch
    }
}

/// The architecture of an ELF executable, as `uname -m` names it.
pub fn elf_arch(bytes: &[u8]) -> Result<&'static str, String> {
    if bytes.len() < 20 || &bytes[..4] != b"\x7fELF" {
        return Err("not an ELF executable".into());
    }
    let machine = match bytes[5] {
        1 => u16::from_le_bytes([bytes[18], bytes[19]]),
        _ => u16::from_be_bytes([bytes[18], bytes[19]]),
    };
    match machine {
        62 => Ok("x86_64"),
        183 => Ok("aarch64"),
        3 => Ok("i686"),
        40 => Ok("armv7l"),
        243 => Ok("riscv64"),
        other => Err(format!("unknown ELF machine {other}")),
    }
}

/// The newest `GLIBC_2.N` version named in the binary (its dynamic symbol versions), or
/// `None` when it names none (a static binary).
pub fn newest_glibc(bytes: &[u8]) -> Option<(u32, u32)> {
    let needle = b"GLIBC_2.";
    let mut newest = None;
    let mut at = 0;
    while let Some(found) = bytes[at..].windows(needle.len()).position(|w| w == needle) {
        let start = at + found + needle.len();
        let digits: String = bytes[start..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .map(|&b| b as char)
            .collect();
        if let Ok(minor) = digits.parse::<u32>() {
            newest = newest.max(Some((2, minor)));
        }
        at = start;
    }
    newest
}

/// `glibc 2.31` (from `getconf GNU_LIBC_VERSION`, or `ldd --version`'s first line) as
/// `(2, 31)`.
pub fn parse_glibc(text: &str) -> Option<(u32, u32)> {
    let version = text
        .split(|c: char| c.is_whitespace() || c == ')')
        .rev()
        .find(|w| w.starts_with("2.") && w[2..].chars().all(|c| c.is_ascii_digit()))?;
    let minor = version[2..].parse().ok()?;
    Some((2, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_architecture_and_glibc_floor_of_this_test_binary() {
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let arch = elf_arch(&me).unwrap();
        assert_eq!(arch, std::env::consts::ARCH);
        // Built against glibc: it names GLIBC_2.x versions, at least 2.2.5 on x86-64.
        let (major, minor) = newest_glibc(&me).expect("a dynamic glibc binary");
        assert_eq!(major, 2);
        assert!(minor >= 2, "{minor}");
        assert!(elf_arch(b"#!/bin/sh\n").is_err());
        assert_eq!(
            newest_glibc(b"xx GLIBC_2.17\0GLIBC_2.3.4\0GLIBC_2.34\0"),
            Some((2, 34))
        );
        assert_eq!(newest_glibc(b"static"), None);
    }

    #[test]
    fn parses_the_remote_glibc_version() {
        assert_eq!(parse_glibc("glibc 2.31"), Some((2, 31)));
        assert_eq!(
            parse_glibc("ldd (Debian GLIBC 2.36-9+deb12u4) 2.36"),
            Some((2, 36))
        );
        assert_eq!(parse_glibc("musl libc"), None);
    }
}
