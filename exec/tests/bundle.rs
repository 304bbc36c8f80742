//! Bundles: canonical digests, pack/unpack round trips, tampering, unsafe trees, the cache.

use grind_exec::bundle::{self, BundleCache, Digest};
use grind_exec::Error;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Makes the same tree under `root`, creating entries in the given order.
fn make_tree(root: &Path, reverse: bool) {
    let mut steps: Vec<Box<dyn Fn()>> = vec![
        Box::new(|| {
            std::fs::create_dir_all(root.join("data/deep")).unwrap();
            std::fs::write(root.join("data/deep/table.txt"), b"1 2 3\n").unwrap();
        }),
        Box::new(|| {
            std::fs::write(root.join("solve"), b"#!/bin/sh\necho o 1\n").unwrap();
            std::fs::set_permissions(root.join("solve"), std::fs::Permissions::from_mode(0o750))
                .unwrap();
        }),
        Box::new(|| std::fs::create_dir_all(root.join("empty")).unwrap()),
        Box::new(|| {
            std::fs::create_dir_all(root.join("data")).unwrap();
            std::os::unix::fs::symlink("deep/table.txt", root.join("data/link")).unwrap();
        }),
    ];
    if reverse {
        steps.reverse();
    }
    for s in steps {
        s();
    }
}

#[test]
fn the_digest_depends_on_content_not_on_order_times_or_umask_bits() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    make_tree(a.path(), false);
    make_tree(b.path(), true);
    // Group/other bits differ; only "any execute bit" is recorded.
    std::fs::set_permissions(
        b.path().join("solve"),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    let da = bundle::bundle_digest(a.path()).unwrap();
    assert_eq!(da, bundle::bundle_digest(b.path()).unwrap());
    // The digest is the SHA-256 of the packed bytes.
    let mut bytes = Vec::new();
    assert_eq!(bundle::pack(a.path(), &mut bytes).unwrap(), da);
    assert_eq!(Digest::of(&bytes), da);
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.starts_with("grind-bundle 1\nd data\nd data/deep\nf 644 6 data/deep/table.txt\n1 2 3\nl 14 data/link\ndeep/table.txt"), "{text}");
    // Any change of content, name or execute bit changes it.
    std::fs::write(b.path().join("data/deep/table.txt"), b"1 2 4\n").unwrap();
    assert_ne!(bundle::bundle_digest(b.path()).unwrap(), da);
    std::fs::write(b.path().join("data/deep/table.txt"), b"1 2 3\n").unwrap();
    std::fs::set_permissions(
        b.path().join("solve"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    assert_ne!(bundle::bundle_digest(b.path()).unwrap(), da);
}

#[test]
fn a_bundle_round_trips_through_the_cache() {
    let src = tempfile::tempdir().unwrap();
    make_tree(src.path(), false);
    let mut bytes = Vec::new();
    let digest = bundle::pack(src.path(), &mut bytes).unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = BundleCache::open(cache_dir.path().join("cas")).unwrap();
    assert!(cache.get(&digest).is_none());
    let dir = cache.install(&digest, &bytes[..]).unwrap();
    assert_eq!(dir, cache.path(&digest));
    assert_eq!(
        std::fs::read(dir.join("data/deep/table.txt")).unwrap(),
        b"1 2 3\n"
    );
    assert_eq!(
        std::fs::read_link(dir.join("data/link")).unwrap(),
        Path::new("deep/table.txt")
    );
    assert!(dir.join("empty").is_dir());
    let mode = std::fs::metadata(dir.join("solve"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    // The unpacked tree has the same digest; a second install reads nothing.
    assert_eq!(bundle::bundle_digest(&dir).unwrap(), digest);
    assert_eq!(cache.install(&digest, std::io::empty()).unwrap(), dir);
    // No temporary directories are left behind.
    let names: Vec<_> = std::fs::read_dir(cache.root())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from(digest.hex())]);
}

#[test]
fn a_single_file_is_a_bundle_of_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("solver.py");
    std::fs::write(&f, b"print('o 1')\n").unwrap();
    let mut bytes = Vec::new();
    bundle::pack(&f, &mut bytes).unwrap();
    assert_eq!(
        bytes,
        b"grind-bundle 1\nf 644 13 solver.py\nprint('o 1')\nend\n"
    );
    // SHA-256 of the contents, as sha256sum prints it.
    assert_eq!(
        bundle::file_digest(&f).unwrap(),
        Digest::of(b"print('o 1')\n")
    );
}

#[test]
fn bytes_that_do_not_match_their_digest_are_refused_and_nothing_is_installed() {
    let src = tempfile::tempdir().unwrap();
    make_tree(src.path(), false);
    let mut bytes = Vec::new();
    let digest = bundle::pack(src.path(), &mut bytes).unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = BundleCache::open(cache_dir.path()).unwrap();
    // One byte of content changed (same length, still well-formed).
    let at = bytes.windows(5).position(|w| w == b"1 2 3").unwrap();
    let mut tampered = bytes.clone();
    tampered[at] = b'9';
    let err = cache.install(&digest, &tampered[..]).unwrap_err();
    assert!(matches!(err, Error::DigestMismatch { .. }), "{err}");
    assert!(err.to_string().contains(&digest.hex()), "{err}");
    assert!(cache.get(&digest).is_none());
    assert_eq!(std::fs::read_dir(cache.root()).unwrap().count(), 0);
    // Truncated bytes, and trailing bytes, are refused too.
    assert!(cache.install(&digest, &bytes[..bytes.len() - 3]).is_err());
    let mut longer = bytes.clone();
    longer.extend_from_slice(b"x");
    assert!(cache.install(&digest, &longer[..]).is_err());
    assert!(bundle::verify(&tampered, &digest).is_err());
    assert!(bundle::verify(&bytes, &digest).is_ok());
    assert_eq!(std::fs::read_dir(cache.root()).unwrap().count(), 0);
}

#[test]
fn unsafe_trees_are_refused_when_packing() {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("../../etc/passwd", dir.path().join("evil")).unwrap();
    let err = bundle::bundle_digest(dir.path()).unwrap_err();
    assert!(err.to_string().contains("leaves the bundle"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/etc/passwd", dir.path().join("abs")).unwrap();
    assert!(bundle::bundle_digest(dir.path()).is_err());
}

#[test]
fn crafted_bundles_are_refused_when_unpacking_even_with_a_matching_digest() {
    let cases: &[(&[u8], &str)] = &[
        (b"grind-bundle 1\nf 644 1 ../x\nA\nend\n", "bad entry path"),
        (b"grind-bundle 1\nf 644 1 /x\nA\nend\n", "bad entry path"),
        (b"grind-bundle 1\nl 2 x\n..end\n", "leaves the bundle"),
        (
            b"grind-bundle 1\nl 11 x\n/etc/passwdend\n",
            "leaves the bundle",
        ),
        (
            b"grind-bundle 1\nf 644 1 b\nAf 644 1 a\nAend\n",
            "out of order",
        ),
        (
            b"grind-bundle 1\nf 644 1 a\nAf 644 1 a\nAend\n",
            "out of order",
        ),
        (
            b"grind-bundle 1\nl 1 d\n.f 644 1 d/x\nAend\n",
            "not a directory",
        ),
        (b"grind-bundle 1\nf 644 1 d/x\nA\nend\n", "not a directory"),
        (b"grind-bundle 1\nf 600 1 a\nA\nend\n", "mode"),
        (b"grind-bundle 1\nf 644 10 a\nA\nend\n", "ends after"),
        (b"grind-bundle 1\nq a\nend\n", "unknown entry kind"),
        (b"tar\n", "does not start"),
        (b"grind-bundle 1\nd a\n", "ends before"),
    ];
    for (bytes, expected) in cases {
        let out = tempfile::tempdir().unwrap();
        let dest = out.path().join("b");
        let err = bundle::unpack(*bytes, &dest, &Digest::of(bytes)).unwrap_err();
        assert!(
            err.to_string().contains(expected),
            "{:?}: {err}",
            String::from_utf8_lossy(bytes)
        );
        assert!(!dest.exists(), "nothing left after a refused bundle");
        assert!(!out.path().join("x").exists());
    }
}
