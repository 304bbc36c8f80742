//! Writing one bundle's bytes into the blob directory: streamed to a temporary file while
//! hashing, checked against the claimed digest and size, synced and renamed into place.
//! Everything here blocks (disk IO and hashing): callers run it off the async runtime.

use grind_exec::bundle::Digest;
use sha2::{Digest as _, Sha256};
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::error::Error;

/// The bytes of one bundle on their way into the store. Dropped before
/// [`BlobSink::commit`], it removes its temporary file: nothing unchecked is ever left
/// where a bundle is looked for.
pub struct BlobSink {
    temp: tempfile::NamedTempFile,
    hasher: Sha256,
    received: u64,
    digest: Digest,
    size: u64,
    /// Why the last write through `io::Write` was refused.
    refused: Option<Error>,
}

impl BlobSink {
    /// Starts receiving bundle `digest` of `size` bytes into a temporary file in `incoming`.
    pub fn create(incoming: &Path, digest: Digest, size: u64) -> Result<BlobSink, Error> {
        let temp = tempfile::Builder::new()
            .prefix(&format!("{}-", digest.hex()))
            .tempfile_in(incoming)
            .map_err(|e| io_error("creating a temporary file in", incoming, e))?;
        Ok(BlobSink {
            temp,
            hasher: Sha256::new(),
            received: 0,
            digest,
            size,
            refused: None,
        })
    }

    /// Appends the next bytes; refuses bytes beyond the claimed size.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), Error> {
        let total = self.received + bytes.len() as u64;
        if total > self.size {
            return Err(Error::InvalidArgument(format!(
                "bundle sha256:{}: more bytes arrived ({total} so far) than the {} claimed; \
                 nothing was stored",
                self.digest, self.size
            )));
        }
        self.hasher.update(bytes);
        self.temp
            .as_file_mut()
            .write_all(bytes)
            .map_err(|e| io_error("writing", self.temp.path(), e))?;
        self.received = total;
        Ok(())
    }

    /// Checks the size and digest of everything written, syncs the file and renames it to
    /// `dest` (then syncs the directory, so the name survives a power loss too).
    pub fn commit(self, dest: &Path) -> Result<(), Error> {
        if self.received != self.size {
            return Err(Error::InvalidArgument(format!(
                "bundle sha256:{}: the upload ended after {} of the {} bytes claimed; nothing \
                 was stored",
                self.digest, self.received, self.size
            )));
        }
        let actual = Digest(self.hasher.finalize().into());
        if actual != self.digest {
            return Err(Error::InvalidArgument(format!(
                "digest mismatch: the upload claimed sha256:{} but its {} bytes have \
                 sha256:{actual}; nothing was stored",
                self.digest, self.size
            )));
        }
        self.temp
            .as_file()
            .sync_all()
            .map_err(|e| io_error("syncing", self.temp.path(), e))?;
        self.temp
            .persist(dest)
            .map_err(|e| io_error("renaming into place", dest, e.error))?;
        if let Some(dir) = dest.parent() {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| io_error("syncing the directory", dir, e))?;
        }
        Ok(())
    }
}

impl BlobSink {
    /// The refusal that stopped the last write, if one did (a bundle written through
    /// [`std::io::Write`] sees only an IO error).
    pub fn refusal(&mut self) -> Option<Error> {
        self.refused.take()
    }
}

impl std::io::Write for BlobSink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        match BlobSink::write(self, bytes) {
            Ok(()) => Ok(bytes.len()),
            Err(e) => {
                let text = e.to_string();
                self.refused = Some(e);
                Err(std::io::Error::other(text))
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Removes what a stopped coordinator left in the incoming directory (uploads it was
/// receiving when it stopped).
pub fn clear_incoming(incoming: &Path) -> Result<(), Error> {
    let entries = std::fs::read_dir(incoming).map_err(|e| io_error("listing", incoming, e))?;
    for entry in entries.flatten() {
        let path: PathBuf = entry.path();
        if let Err(e) = std::fs::remove_file(&path) {
            tracing::warn!("cannot remove the stale upload {}: {e}", path.display());
        }
    }
    Ok(())
}

/// An IO failure on `path` as a coordinator error naming both.
pub fn io_error(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::Unavailable(format!("bundle store: {what} {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sink_with(dir: &Path, claimed: &[u8], size: u64, parts: &[&[u8]]) -> Result<(), Error> {
        let mut sink = BlobSink::create(dir, Digest::of(claimed), size)?;
        for part in parts {
            sink.write(part)?;
        }
        sink.commit(&dir.join("blob"))
    }

    #[test]
    fn only_the_claimed_bytes_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let only_blob = |dir: &Path| {
            std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect::<Vec<_>>()
        };
        // Wrong bytes, too few, too many: each refused, no file left behind.
        let wrong = sink_with(dir.path(), b"hello", 5, &[b"hellp"]).unwrap_err();
        assert!(wrong.to_string().contains("digest mismatch"), "{wrong}");
        let short = sink_with(dir.path(), b"hello", 5, &[b"hel"]).unwrap_err();
        assert!(short.to_string().contains("after 3 of the 5"), "{short}");
        let long = sink_with(dir.path(), b"hello", 5, &[b"hel", b"lo!"]).unwrap_err();
        assert!(long.to_string().contains("more bytes"), "{long}");
        assert!(
            only_blob(dir.path()).is_empty(),
            "{:?}",
            only_blob(dir.path())
        );
        // The right bytes, in any chunking, are stored under the name asked for.
        sink_with(dir.path(), b"hello", 5, &[b"he", b"", b"llo"]).unwrap();
        assert_eq!(only_blob(dir.path()), vec!["blob".to_string()]);
        assert_eq!(std::fs::read(dir.path().join("blob")).unwrap(), b"hello");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// However the bytes are cut into messages, the right bytes are stored whole, and
        /// one changed byte anywhere is refused.
        #[test]
        fn any_chunking_stores_the_bytes_and_any_change_is_caught(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..5000),
            cuts in proptest::collection::vec(0usize..5000, 0..12),
            flip in 0usize..5000,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (data.len() + 1)).collect();
            cuts.extend([0, data.len()]);
            cuts.sort_unstable();
            let parts: Vec<&[u8]> = cuts.windows(2).map(|w| &data[w[0]..w[1]]).collect();
            sink_with(dir.path(), &data, data.len() as u64, &parts).unwrap();
            proptest::prop_assert_eq!(std::fs::read(dir.path().join("blob")).unwrap(), data.clone());

            let mut changed = data.clone();
            changed[flip % data.len()] ^= 0x01;
            let parts: Vec<&[u8]> = cuts.windows(2).map(|w| &changed[w[0]..w[1]]).collect();
            let other = tempfile::tempdir().unwrap();
            let refused = sink_with(other.path(), &data, data.len() as u64, &parts);
            proptest::prop_assert!(refused.is_err());
            proptest::prop_assert!(std::fs::read_dir(other.path()).unwrap().next().is_none());
        }
    }
}
