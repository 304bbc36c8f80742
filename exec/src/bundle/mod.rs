//! Content addressing for solver and checker bundles.
//!
//! A bundle is a directory tree (a single-file solver is a bundle with one file). It is packed
//! into one canonical byte stream, the *grind bundle format*, and its address is the SHA-256 of
//! exactly those bytes: the same tree gives the same bytes and digest on every machine, the
//! coordinator stores and serves the bytes under that digest, and a worker checks the digest
//! of the bytes it received before anything is used ([`BundleCache::install`]).
//!
//! The format, version 1 (all header lines end in `\n`; numbers are decimal):
//!
//! ```text
//! grind-bundle 1
//! d <path>                          a directory
//! f <mode> <size> <path>            a regular file, followed directly by its <size> bytes;
//!                                   <mode> is 755 if any execute bit is set, else 644
//! l <size> <path>                   a symbolic link, followed directly by its <size>-byte target
//! end
//! ```
//!
//! Entries come in ascending byte order of their path (relative, `/`-separated, UTF-8, no
//! `.`/`..`/empty components, no newline), so a directory precedes its contents. Owners,
//! times and other mode bits are not recorded (they differ between machines for the same
//! content). A symbolic link must be relative and must not leave the bundle (checked
//! lexically when packing and unpacking); devices, sockets and FIFOs are refused. When
//! unpacking, every entry's parent must be a directory entry of the bundle, so no path ever
//! goes through a link.

mod cache;
mod format;

pub use cache::BundleCache;
pub use format::{pack, unpack};

use crate::error::{Error, Result};
use sha2::{Digest as _, Sha256};
use std::fmt;
use std::io::Read;
use std::path::Path;
use std::str::FromStr;

/// A SHA-256 digest.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(Sha256::digest(bytes).into())
    }

    /// Lower-case hex.
    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hex())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex())
    }
}

impl FromStr for Digest {
    type Err = Error;

    /// 64 hex digits, optionally prefixed `sha256:`.
    fn from_str(s: &str) -> Result<Digest> {
        let hex = s.strip_prefix("sha256:").unwrap_or(s);
        let bad = || Error::Bundle(format!("{s:?} is not a SHA-256 digest (64 hex digits)"));
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        let mut out = [0u8; 32];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        }
        Ok(Digest(out))
    }
}

/// The SHA-256 of a file's contents (for instances and solutions).
pub fn file_digest(path: &Path) -> Result<Digest> {
    let mut f = std::fs::File::open(path).map_err(|e| Error::io("opening", path, e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| Error::io("reading", path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(Digest(h.finalize().into()))
}

/// The bundle digest of a file or directory (the SHA-256 of its packed bytes), without
/// keeping the bytes.
pub fn bundle_digest(path: &Path) -> Result<Digest> {
    pack(path, std::io::sink())
}

/// Checks that `bytes` have digest `expected`.
pub fn verify(bytes: &[u8], expected: &Digest) -> Result<()> {
    let actual = Digest::of(bytes);
    if &actual != expected {
        return Err(Error::DigestMismatch {
            expected: expected.hex(),
            actual: actual.hex(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_hex_round_trip_and_known_value() {
        // SHA-256("abc"), FIPS 180-2 appendix B.1.
        let d = Digest::of(b"abc");
        assert_eq!(
            d.hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(d.hex().parse::<Digest>().unwrap(), d);
        assert_eq!(format!("sha256:{d}").parse::<Digest>().unwrap(), d);
        assert!("xyz".parse::<Digest>().is_err());
        assert!(verify(b"abc", &d).is_ok());
        assert!(matches!(
            verify(b"abd", &d),
            Err(Error::DigestMismatch { .. })
        ));
    }
}
