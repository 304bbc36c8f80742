//! A local directory of unpacked bundles keyed by digest.

use super::{unpack, Digest};
use crate::error::{Error, Result};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Unpacked, verified bundles under one root: `<root>/<hex digest>/`. Installation unpacks
/// into a temporary directory under the root, verifies the digest, then renames it into
/// place, so a bundle directory either does not exist or is complete and verified; two
/// installers racing for the same digest both end with the same directory.
#[derive(Clone, Debug)]
pub struct BundleCache {
    root: PathBuf,
}

impl BundleCache {
    /// A cache at `root` (created if missing).
    pub fn open(root: impl Into<PathBuf>) -> Result<BundleCache> {
        let root = root.into();
        std::fs::create_dir_all(&root).map_err(|e| Error::io("creating directory", &root, e))?;
        Ok(BundleCache { root })
    }

    /// The cache's root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the bundle with `digest` is (or would be).
    pub fn path(&self, digest: &Digest) -> PathBuf {
        self.root.join(digest.hex())
    }

    /// The bundle's directory, if installed.
    pub fn get(&self, digest: &Digest) -> Option<PathBuf> {
        let p = self.path(digest);
        p.is_dir().then_some(p)
    }

    /// Installs the bundle read from `bytes`, which must have `digest`; returns its
    /// directory. Does nothing (and reads nothing) if it is already installed.
    pub fn install(&self, digest: &Digest, bytes: impl Read) -> Result<PathBuf> {
        if let Some(p) = self.get(digest) {
            return Ok(p);
        }
        let tmp = tempfile::Builder::new()
            .prefix(".incoming-")
            .tempdir_in(&self.root)
            .map_err(|e| Error::io("creating a temporary directory in", &self.root, e))?;
        let staged = tmp.path().join("bundle");
        unpack(bytes, &staged, digest)?;
        let dest = self.path(digest);
        match std::fs::rename(&staged, &dest) {
            Ok(()) => Ok(dest),
            // Another installer won the race with the same verified content.
            Err(_) if dest.is_dir() => Ok(dest),
            Err(e) => Err(Error::io("renaming into place", &dest, e)),
        }
    }
}
