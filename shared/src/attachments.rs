//! Attachments: files a campaign's parameters name (a user's solver, checker, instance or
//! units file), stored once by the coordinator as content-addressed bundles and made
//! available on every host that needs them.
//!
//! At the command line an attachment parameter holds a local path; before the campaign is
//! created the CLI packs and uploads it and replaces the path with `sha256:<hex>` (see
//! [`crate::registry::ProblemDef::ATTACHMENTS`]). A problem holding a digest reaches the
//! bundle's files through [`materialise`], which asks the [`BundleSource`] the host
//! installed: the coordinator serves them from its store, a worker from its local cache
//! (fetching from the coordinator on a miss), a test from a directory.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use crate::problem::ProblemError;

/// The prefix of a bundle digest as it appears in campaign parameters.
pub const DIGEST_PREFIX: &str = "sha256:";

/// Where a host finds bundles by digest.
pub trait BundleSource: Send + Sync {
    /// The local directory holding the unpacked bundle `digest` (`sha256:<hex>`), fetching
    /// it first when needed. The bundle's bytes are checked against the digest before the
    /// directory is returned.
    fn materialise(&self, digest: &str) -> Result<PathBuf, ProblemError>;
}

static SOURCE: RwLock<Option<Arc<dyn BundleSource>>> = RwLock::new(None);

/// Installs the host's bundle source (replacing any earlier one).
pub fn install(source: Arc<dyn BundleSource>) {
    *SOURCE.write().unwrap_or_else(|e| e.into_inner()) = Some(source);
}

/// The local directory of bundle `digest`, through the installed [`BundleSource`].
pub fn materialise(digest: &str) -> Result<PathBuf, ProblemError> {
    let source = SOURCE.read().unwrap_or_else(|e| e.into_inner()).clone();
    match source {
        Some(source) => source.materialise(digest),
        None => Err(ProblemError::Unsupported(format!(
            "bundle {digest} is needed, but this host has no bundle source installed"
        ))),
    }
}

/// True when `value` is a bundle digest (`sha256:` and 64 lowercase hex digits).
pub fn is_digest(value: &str) -> bool {
    value.strip_prefix(DIGEST_PREFIX).is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_recognised_exactly() {
        let good = format!("sha256:{}", "0a".repeat(32));
        assert!(is_digest(&good));
        assert!(!is_digest(&good[..good.len() - 1]));
        assert!(!is_digest(&good.to_uppercase()));
        assert!(!is_digest("./solve"));
    }
}
