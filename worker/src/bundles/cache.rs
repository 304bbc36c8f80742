//! A local cache of unpacked bundles whose contents are checked against their digest before
//! first use in this process (a cached bundle could have been changed on disk since it was
//! installed); a changed one is removed, so that it is fetched again.

use grind_exec::bundle::{bundle_digest, BundleCache, Digest};
use std::collections::HashSet;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Mutex;

/// Unpacked bundles under one directory (`<root>/<hex>/`), checked before use.
pub struct VerifiedCache {
    root: PathBuf,
    /// Bundles checked by this process (each is checked once).
    checked: Mutex<HashSet<Digest>>,
}

impl VerifiedCache {
    /// A cache at `root` (created when first written; a relative path is taken from the
    /// current directory now, since solvers start in directories of their own).
    pub fn new(root: PathBuf) -> VerifiedCache {
        let root = std::path::absolute(&root).unwrap_or(root);
        VerifiedCache {
            root,
            checked: Mutex::new(HashSet::new()),
        }
    }

    /// The cache's directory.
    pub fn root(&self) -> &std::path::Path {
        &self.root
    }

    fn open(&self) -> Result<BundleCache, String> {
        BundleCache::open(&self.root)
            .map_err(|e| format!("cannot use the bundle cache {}: {e}", self.root.display()))
    }

    /// The directory of bundle `digest` if it is cached and its contents have its digest.
    /// A cached bundle whose contents no longer match is removed (and `None` returned).
    /// Blocks while it hashes the bundle's files (once per bundle and process).
    pub fn lookup(&self, digest: &Digest) -> Result<Option<PathBuf>, String> {
        let cache = self.open()?;
        let Some(dir) = cache.get(digest) else {
            return Ok(None);
        };
        if self.is_checked(digest) {
            return Ok(Some(dir));
        }
        match bundle_digest(&dir) {
            Ok(actual) if actual == *digest => {
                self.mark_checked(digest);
                Ok(Some(dir))
            }
            found => {
                let why = match found {
                    Ok(actual) => format!("its files now have digest sha256:{actual}"),
                    Err(e) => format!("it cannot be read: {e}"),
                };
                tracing::warn!(
                    "cached bundle sha256:{digest} at {} was changed ({why}): removing it",
                    dir.display()
                );
                self.remove(&dir)?;
                Ok(None)
            }
        }
    }

    /// Installs bundle `digest` from `bytes` (unpacked into a temporary directory, its
    /// digest checked, then renamed into place); returns its directory.
    pub fn install(&self, digest: &Digest, bytes: impl Read) -> Result<PathBuf, grind_exec::Error> {
        let cache = BundleCache::open(&self.root)?;
        let dir = cache.install(digest, bytes)?;
        self.mark_checked(digest);
        Ok(dir)
    }

    fn is_checked(&self, digest: &Digest) -> bool {
        self.checked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(digest)
    }

    fn mark_checked(&self, digest: &Digest) {
        self.checked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(*digest);
    }

    /// Moves a bad bundle directory aside (atomically: nobody finds it half removed) and
    /// removes it.
    fn remove(&self, dir: &std::path::Path) -> Result<(), String> {
        let aside = tempfile::Builder::new()
            .prefix(".removing-")
            .tempdir_in(&self.root)
            .map_err(|e| format!("cannot remove the bad bundle {}: {e}", dir.display()))?;
        std::fs::rename(dir, aside.path().join("bundle"))
            .map_err(|e| format!("cannot remove the bad bundle {}: {e}", dir.display()))?;
        drop(aside);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_cached_bundle_is_removed_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        std::fs::create_dir(&tree).unwrap();
        std::fs::write(tree.join("solve.sh"), "echo o 1\n").unwrap();
        let mut packed = Vec::new();
        let digest = grind_exec::bundle::pack(&tree, &mut packed).unwrap();
        let cache = VerifiedCache::new(dir.path().join("cache"));
        assert_eq!(cache.lookup(&digest).unwrap(), None);
        let installed = cache.install(&digest, &packed[..]).unwrap();
        assert_eq!(cache.lookup(&digest).unwrap(), Some(installed.clone()));
        // Changed behind the cache's back: a new process (a fresh cache) finds it changed.
        std::fs::write(installed.join("solve.sh"), "echo o 999\n").unwrap();
        let fresh = VerifiedCache::new(dir.path().join("cache"));
        assert_eq!(fresh.lookup(&digest).unwrap(), None);
        assert!(!installed.exists());
        // Installing again restores the right contents.
        let again = fresh.install(&digest, &packed[..]).unwrap();
        assert_eq!(
            std::fs::read_to_string(again.join("solve.sh")).unwrap(),
            "echo o 1\n"
        );
    }
}
