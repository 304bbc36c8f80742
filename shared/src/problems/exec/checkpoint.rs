//! Checkpoints of a unit: the solver's checkpoint directory packed in the grind bundle format
//! (`grind_exec::bundle`), so that a resumed unit on any machine starts with the same files.
//!
//! The cursor is exactly the bundle bytes (they start with `grind-bundle 1`). It is checked
//! when unpacked: a malformed cursor is an invalid unit, never a half-restored directory.

use std::path::Path;

use grind_exec::bundle::{self, Digest};

use crate::problem::ProblemError;

/// Largest checkpoint shipped, in bytes (the cluster's limit on any checkpoint cursor); a
/// bigger one is not shipped (the provenance says so) and the unit resumes from the previous
/// one.
pub const MAX_CHECKPOINT_BYTES: usize = crate::problem::MAX_CHECKPOINT_BYTES;

/// What packing the checkpoint directory gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Packed {
    /// The directory holds nothing.
    Empty,
    /// The cursor to ship.
    Cursor(Vec<u8>),
    /// Not shipped, and why (too big, changed while being packed, unreadable).
    Skipped(String),
}

/// Packs the checkpoint directory `dir`.
pub fn pack(dir: &Path) -> Packed {
    let empty = std::fs::read_dir(dir).map_or(true, |mut entries| entries.next().is_none());
    if empty {
        return Packed::Empty;
    }
    let mut bytes = Vec::new();
    match bundle::pack(dir, &mut bytes) {
        Ok(_) if bytes.len() > MAX_CHECKPOINT_BYTES => Packed::Skipped(format!(
            "checkpoint of {} bytes is over the {MAX_CHECKPOINT_BYTES}-byte limit",
            bytes.len()
        )),
        Ok(_) => Packed::Cursor(bytes),
        Err(e) => Packed::Skipped(format!("checkpoint not packed: {e}")),
    }
}

/// Unpacks `cursor` into the new directory `dir` (which must not exist yet).
pub fn restore(cursor: &[u8], dir: &Path) -> Result<(), ProblemError> {
    bundle::unpack(cursor, dir, &Digest::of(cursor)).map_err(|e| {
        ProblemError::InvalidUnit(format!("exec: the unit's checkpoint does not unpack: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_directory_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let ckpt = dir.path().join("ckpt");
        std::fs::create_dir(&ckpt).unwrap();
        assert_eq!(pack(&ckpt), Packed::Empty);
        std::fs::write(ckpt.join("state"), "x=5 best=9\n").unwrap();
        std::fs::create_dir(ckpt.join("sub")).unwrap();
        std::fs::write(ckpt.join("sub/pool.bin"), [0u8, 1, 2, 255]).unwrap();
        let Packed::Cursor(cursor) = pack(&ckpt) else {
            panic!("not packed");
        };
        let back = dir.path().join("back");
        restore(&cursor, &back).unwrap();
        assert_eq!(
            std::fs::read_to_string(back.join("state")).unwrap(),
            "x=5 best=9\n"
        );
        assert_eq!(
            std::fs::read(back.join("sub/pool.bin")).unwrap(),
            vec![0u8, 1, 2, 255]
        );
        // Packing the restored directory gives the same bytes.
        assert_eq!(pack(&back), Packed::Cursor(cursor.clone()));
        let mut cut = cursor.clone();
        cut.truncate(cursor.len() - 3);
        let err = restore(&cut, &dir.path().join("cut"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not unpack"), "{err}");
        assert!(!dir.path().join("cut").exists(), "nothing half-restored");
        assert!(restore(b"garbage", &dir.path().join("g")).is_err());
    }
}
