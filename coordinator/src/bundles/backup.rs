//! The bundle side of `grind backup`: the blobs a database snapshot refers to, carried to
//! `<backup>.bundles/blobs/` beside the snapshot, hard-linked where the filesystem allows and
//! copied otherwise, each checked against its digest.
//!
//! Consistency: a blob is renamed into `blobs/` (synced) before its row is written, blobs are
//! never changed in place (a second upload of the same bundle renames identical bytes over
//! it) and never removed from a served store, so every row in a snapshot names a blob that is
//! complete on disk when the snapshot is taken and stays so; copying the blobs after the
//! snapshot therefore carries everything it refers to. `unpacked/` is derived from the blobs
//! (rebuilt, digest-checked, on first use) and `incoming/` holds uploads in flight (cleared at
//! start): neither is carried.

use grind_exec::bundle::{file_digest, Digest};
use std::fs::File;
use std::path::Path;

use super::blobs::io_error;
use crate::error::Error;

/// What [`carry_blobs`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Carried {
    /// Blobs hard-linked (sharing the store's file).
    pub linked: usize,
    /// Blobs copied (another filesystem, or links refused).
    pub copied: usize,
    /// Their total size in bytes.
    pub bytes: u64,
}

/// Carries the blobs `digests` (64 hex digits each) from the bundle store rooted at `from`
/// to a new one rooted at `to` (its `blobs/` created), checking each carried file's SHA-256
/// against its name. A blob missing from `from`, or not matching its digest, is an error
/// naming it.
pub fn carry_blobs(from: &Path, to: &Path, digests: &[String]) -> Result<Carried, Error> {
    let dest_dir = to.join("blobs");
    std::fs::create_dir_all(&dest_dir).map_err(|e| io_error("creating directory", &dest_dir, e))?;
    let mut carried = Carried::default();
    for hex in digests {
        let digest: Digest = hex
            .parse()
            .map_err(|e| Error::Internal(format!("a bundle row names a bad digest: {e}")))?;
        let source = from.join("blobs").join(digest.hex());
        let dest = dest_dir.join(digest.hex());
        if !source.is_file() {
            return Err(Error::Unavailable(format!(
                "bundle sha256:{digest} is recorded in the database but its blob {} is \
                 missing",
                source.display()
            )));
        }
        if std::fs::hard_link(&source, &dest).is_ok() {
            carried.linked += 1;
        } else {
            copy_synced(&source, &dest_dir, &dest)?;
            carried.copied += 1;
        }
        let actual = file_digest(&dest).map_err(|e| Error::Unavailable(e.to_string()))?;
        if actual != digest {
            let _ = std::fs::remove_file(&dest);
            return Err(Error::Unavailable(format!(
                "bundle sha256:{digest}: the stored blob {} has sha256:{actual}; it is damaged \
                 and was not backed up",
                source.display()
            )));
        }
        carried.bytes += std::fs::metadata(&dest)
            .map_err(|e| io_error("reading the size of", &dest, e))?
            .len();
    }
    File::open(&dest_dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_error("syncing the directory", &dest_dir, e))?;
    Ok(carried)
}

/// Copies `source` to `dest` through a synced temporary file in `dir`, renamed into place.
fn copy_synced(source: &Path, dir: &Path, dest: &Path) -> Result<(), Error> {
    let mut temp = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| io_error("creating a temporary file in", dir, e))?;
    let mut input = File::open(source).map_err(|e| io_error("opening", source, e))?;
    std::io::copy(&mut input, temp.as_file_mut()).map_err(|e| io_error("copying", source, e))?;
    temp.as_file()
        .sync_all()
        .map_err(|e| io_error("syncing", temp.path(), e))?;
    temp.persist(dest)
        .map_err(|e| io_error("renaming into place", dest, e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_with(root: &Path, contents: &[&[u8]]) -> Vec<String> {
        std::fs::create_dir_all(root.join("blobs")).unwrap();
        contents
            .iter()
            .map(|bytes| {
                let hex = Digest::of(bytes).hex();
                std::fs::write(root.join("blobs").join(&hex), bytes).unwrap();
                hex
            })
            .collect()
    }

    #[test]
    fn the_named_blobs_are_carried_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("db.bundles");
        let digests = store_with(&from, &[b"solver", b"checker", b"not referenced"]);
        let to = dir.path().join("backup.bundles");
        let carried = carry_blobs(&from, &to, &digests[..2]).unwrap();
        assert_eq!(carried.linked + carried.copied, 2);
        assert_eq!(carried.bytes, 13);
        let mut names: Vec<String> = std::fs::read_dir(to.join("blobs"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        let mut expected = digests[..2].to_vec();
        expected.sort();
        assert_eq!(names, expected);
        assert_eq!(
            std::fs::read(to.join("blobs").join(&digests[1])).unwrap(),
            b"checker"
        );
    }

    #[test]
    fn a_missing_or_damaged_blob_fails_the_backup() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("db.bundles");
        let digests = store_with(&from, &[b"solver"]);
        let missing = Digest::of(b"never stored").hex();
        let err = carry_blobs(&from, &dir.path().join("a"), &[missing]).unwrap_err();
        assert!(err.to_string().contains("is missing"), "{err}");

        std::fs::write(from.join("blobs").join(&digests[0]), b"solveR").unwrap();
        let to = dir.path().join("b");
        let err = carry_blobs(&from, &to, &digests).unwrap_err();
        assert!(err.to_string().contains("damaged"), "{err}");
        assert!(!to.join("blobs").join(&digests[0]).exists());
    }
}
