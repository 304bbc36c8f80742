//! The coordinator's own [`BundleSource`]: a stored bundle unpacked (its digest checked
//! while unpacking) into `<bundles>/unpacked/<hex>/`, so that the coordinator can run a
//! user's checker. Installed by `grind serve` and `grind run` at start (in `grind run` the
//! local workers use it too: they share the machine and its files).

use grind_exec::bundle::Digest;
use grind_shared::attachments::BundleSource;
use grind_shared::problem::ProblemError;
use grind_worker::bundles::VerifiedCache;
use std::path::PathBuf;

use super::BundleStore;

/// Bundles from the coordinator's store, unpacked on first use.
pub struct StoreBundles {
    bundles: BundleStore,
    unpacked: VerifiedCache,
}

impl StoreBundles {
    /// A source over `bundles`.
    pub fn new(bundles: BundleStore) -> StoreBundles {
        let unpacked = VerifiedCache::new(bundles.root().join("unpacked"));
        StoreBundles { bundles, unpacked }
    }

    /// Installs a source over `bundles` as the process's bundle source.
    pub fn install(bundles: BundleStore) {
        grind_shared::attachments::install(std::sync::Arc::new(StoreBundles::new(bundles)));
    }

    fn unpack(&self, digest: &Digest) -> Result<PathBuf, String> {
        if let Some(dir) = self.unpacked.lookup(digest)? {
            return Ok(dir);
        }
        let blob = self.bundles.blob_path(digest);
        let file = match std::fs::File::open(&blob) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!(
                    "bundle sha256:{digest} is not stored on this coordinator (upload it: \
                     `grind bundle add PATH`, or name the file in `grind campaign add`)"
                ))
            }
            Err(e) => return Err(format!("cannot open {}: {e}", blob.display())),
        };
        self.unpacked
            .install(digest, std::io::BufReader::new(file))
            .map_err(|e| format!("stored bundle sha256:{digest} is unusable: {e}"))
    }
}

impl BundleSource for StoreBundles {
    fn materialise(&self, digest: &str) -> Result<PathBuf, ProblemError> {
        let parsed: Digest = digest
            .parse()
            .map_err(|e| ProblemError::InvalidParams(format!("bad bundle digest: {e}")))?;
        self.unpack(&parsed).map_err(ProblemError::VerifierFailed)
    }
}
