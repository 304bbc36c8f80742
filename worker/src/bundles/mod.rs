//! The worker's bundles (issue 29): a [`BundleSource`] that finds a bundle in the worker's
//! local cache by digest (its files checked against the digest before first use) and, on a
//! miss, fetches it from the coordinator's `grind.v1.Bundles` service with the worker's
//! URL, token and TLS settings, checks the digest while unpacking, and installs it by
//! rename. A bundle whose bytes do not have its digest is refused, and nothing of it is
//! kept.
//!
//! [`BundleSource::materialise`] blocks: it is called from a solving thread (rayon or
//! blocking), never from the async runtime; the fetch itself runs on the runtime given
//! ([`fetch`]).

pub mod cache;
pub mod fetch;

use grind_exec::bundle::Digest;
use grind_proto::v1::bundles_client::BundlesClient;
use grind_shared::attachments::BundleSource;
use grind_shared::problem::ProblemError;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::connect::{authenticated, endpoint, Access, AuthChannel};
use crate::WorkerError;
pub use cache::VerifiedCache;

/// Largest message accepted from the Bundles service.
const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// How long one fetch may take in all (large bundles on slow links).
const FETCH_TIMEOUT: Duration = Duration::from_secs(6 * 3600);

/// A worker's bundle source: its local cache, filled from the coordinator.
pub struct WorkerBundles {
    cache: VerifiedCache,
    client: BundlesClient<AuthChannel>,
    runtime: tokio::runtime::Handle,
    /// One fetch at a time (two units wanting the same bundle fetch it once).
    fetching: Mutex<()>,
    fetches: AtomicU64,
}

impl WorkerBundles {
    /// A source caching under `cache_dir`, fetching from the coordinator at `url` with
    /// `access`, its calls run on `runtime`. Connects on first fetch.
    pub fn new(
        cache_dir: PathBuf,
        url: &str,
        access: &Access,
        runtime: tokio::runtime::Handle,
    ) -> Result<WorkerBundles, WorkerError> {
        // Windows as large as the coordinator's (see `grind_coordinator::bundles`): a
        // bundle streams without waiting for a window update every 64 KiB.
        let endpoint = endpoint(url, access)?
            .timeout(FETCH_TIMEOUT)
            .initial_stream_window_size(2 << 20)
            .initial_connection_window_size(4 << 20);
        let channel = {
            // A lazy channel needs a runtime context to be made in.
            let _entered = runtime.enter();
            endpoint.connect_lazy()
        };
        let client = BundlesClient::new(authenticated(channel, access)?)
            .max_decoding_message_size(MAX_MESSAGE_BYTES);
        Ok(WorkerBundles {
            cache: VerifiedCache::new(cache_dir),
            client,
            runtime,
            fetching: Mutex::new(()),
            fetches: AtomicU64::new(0),
        })
    }

    /// Installs this source as the process's bundle source.
    pub fn install(self) -> Arc<WorkerBundles> {
        let source = Arc::new(self);
        grind_shared::attachments::install(source.clone());
        source
    }

    /// Fetches made from the coordinator so far (cache hits make none).
    pub fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// The cache directory.
    pub fn cache_dir(&self) -> &std::path::Path {
        self.cache.root()
    }

    fn fetch_and_install(&self, digest: &Digest) -> Result<PathBuf, String> {
        let _one_at_a_time = self.fetching.lock().unwrap_or_else(|e| e.into_inner());
        // Another thread may have installed it while this one waited.
        if let Some(dir) = self.cache.lookup(digest)? {
            return Ok(dir);
        }
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let mut reader = fetch::start(&self.runtime, self.client.clone(), *digest);
        match self.cache.install(digest, &mut reader) {
            Ok(dir) => Ok(dir),
            Err(e) => Err(match reader.failure.take() {
                Some(why) => why,
                None => format!("bundle sha256:{digest} from the coordinator refused: {e}"),
            }),
        }
    }
}

/// The default cache directory: `$XDG_CACHE_HOME/grind/bundles`, else
/// `$HOME/.cache/grind/bundles`, else one under the temporary directory.
pub fn default_cache_dir() -> PathBuf {
    let from_env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(xdg) = from_env("XDG_CACHE_HOME") {
        return PathBuf::from(xdg).join("grind").join("bundles");
    }
    if let Some(home) = from_env("HOME") {
        return PathBuf::from(home)
            .join(".cache")
            .join("grind")
            .join("bundles");
    }
    std::env::temp_dir().join("grind-bundles")
}

impl BundleSource for WorkerBundles {
    fn materialise(&self, digest: &str) -> Result<PathBuf, ProblemError> {
        let parsed: Digest = digest
            .parse()
            .map_err(|e| ProblemError::InvalidParams(format!("bad bundle digest: {e}")))?;
        let found = match self.cache.lookup(&parsed) {
            Ok(Some(dir)) => Ok(dir),
            Ok(None) => self.fetch_and_install(&parsed),
            Err(e) => Err(e),
        };
        found.map_err(ProblemError::Solver)
    }
}
