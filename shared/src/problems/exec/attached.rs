//! The campaign's attachments: `[LABEL=]sha256:<hex>` values, the solver variant for this
//! platform, the program to run inside a bundle, and [`LocalBundles`], a
//! [`BundleSource`] over a local directory (for `grind run exec` in one process, and tests).

use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use grind_exec::bundle::{self, BundleCache, Digest};

use crate::attachments::{self, BundleSource};
use crate::problem::ProblemError;

/// An attachment value: a bundle digest with an optional label (a platform triple).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attachment {
    /// `LABEL` of `LABEL=sha256:...`.
    pub label: Option<String>,
    /// `sha256:<hex>`.
    pub digest: String,
}

/// Parses `[LABEL=]sha256:<hex>`; `None` when the value is no digest (still a path).
pub fn parse_attachment(value: &str) -> Option<Attachment> {
    if attachments::is_digest(value) {
        return Some(Attachment {
            label: None,
            digest: value.to_string(),
        });
    }
    let (label, digest) = value.split_once('=')?;
    (attachments::is_digest(digest) && !label.is_empty()).then(|| Attachment {
        label: Some(label.to_string()),
        digest: digest.to_string(),
    })
}

/// The solver variant to run on `platform`: the unlabelled one, or the one labelled so.
pub fn variant_for<'a>(
    variants: &'a [Attachment],
    platform: &str,
) -> Result<&'a Attachment, ProblemError> {
    match variants {
        [only] if only.label.is_none() => Ok(only),
        _ => variants
            .iter()
            .find(|v| v.label.as_deref() == Some(platform))
            .ok_or_else(|| {
                let have: Vec<&str> = variants.iter().filter_map(|v| v.label.as_deref()).collect();
                ProblemError::Unsupported(format!(
                    "exec: the solver has no variant for platform {platform} (it has: {})",
                    have.join(", ")
                ))
            }),
    }
}

/// Checks an entry path: relative, inside the bundle (no `..`), not empty.
pub fn check_entry(entry: &str) -> Result<(), String> {
    let path = Path::new(entry);
    let inside = path
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if entry.is_empty() || !inside || path.components().next().is_none() {
        return Err(format!(
            "{entry:?} must be a relative path inside the bundle (no `..`, not absolute)"
        ));
    }
    Ok(())
}

/// The file of bundle directory `dir` to use: `entry` inside it, else its only entry, which
/// must be a file. `what` names the bundle in errors ("solver", "checker", "instance").
pub fn bundle_file(dir: &Path, entry: Option<&str>, what: &str) -> Result<PathBuf, ProblemError> {
    let path = match entry {
        Some(entry) => {
            check_entry(entry).map_err(|e| ProblemError::InvalidParams(format!("exec: {e}")))?;
            dir.join(entry)
        }
        None => {
            let mut names = std::fs::read_dir(dir)
                .map_err(|e| {
                    ProblemError::Unsupported(format!("exec: cannot list {what} bundle: {e}"))
                })?
                .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
                .collect::<Vec<_>>();
            names.sort();
            match names.as_slice() {
                [only] => dir.join(only),
                _ => {
                    let hint = match what {
                        "solver" | "checker" => {
                            format!("name the file to use with --{what}-entry PATH")
                        }
                        _ => "give a single file".to_string(),
                    };
                    return Err(ProblemError::InvalidParams(format!(
                        "exec: the {what} bundle is a directory with entries {}; {hint}",
                        names.join(", ")
                    )));
                }
            }
        }
    };
    if !path.is_file() {
        return Err(ProblemError::InvalidParams(format!(
            "exec: the {what} bundle has no file {}",
            path.strip_prefix(dir).unwrap_or(&path).display()
        )));
    }
    Ok(path)
}

/// The program `entry` of bundle `dir` (see [`bundle_file`]), which must be executable.
pub fn bundle_program(
    dir: &Path,
    entry: Option<&str>,
    what: &str,
) -> Result<PathBuf, ProblemError> {
    let path = bundle_file(dir, entry, what)?;
    let mode = std::fs::metadata(&path)
        .map(|m| m.permissions().mode())
        .unwrap_or(0);
    if mode & 0o111 == 0 {
        return Err(ProblemError::InvalidParams(format!(
            "exec: the {what} {} is not executable: `chmod +x` it (scripts start with a #! \
             line) and add the campaign again",
            path.strip_prefix(dir).unwrap_or(&path).display()
        )));
    }
    Ok(path)
}

/// The path inside an instance bundle: its only file, or the bundle directory itself.
pub fn instance_path(dir: &Path) -> PathBuf {
    match bundle_file(dir, None, "instance") {
        Ok(file) => file,
        Err(_) => dir.to_path_buf(),
    }
}

/// A [`BundleSource`] over a local [`BundleCache`]: bundles are added from local paths
/// ([`LocalBundles::add`]) and served from the cache; nothing is fetched. `grind run exec`
/// (all in one process) and tests use it.
#[derive(Clone, Debug)]
pub struct LocalBundles {
    cache: BundleCache,
}

impl LocalBundles {
    /// A source over the cache directory `root` (created if missing).
    pub fn open(root: impl Into<PathBuf>) -> Result<LocalBundles, ProblemError> {
        let cache = BundleCache::open(root)
            .map_err(|e| ProblemError::Unsupported(format!("exec: bundle cache: {e}")))?;
        Ok(LocalBundles { cache })
    }

    /// Packs the file or directory `path` as a bundle, installs it, and returns its
    /// `sha256:<hex>` digest.
    pub fn add(&self, path: &Path) -> Result<String, ProblemError> {
        let fail = |e: grind_exec::Error| {
            ProblemError::InvalidParams(format!("exec: packing {}: {e}", path.display()))
        };
        let mut bytes = Vec::new();
        let digest = bundle::pack(path, &mut bytes).map_err(fail)?;
        self.cache
            .install(&digest, bytes.as_slice())
            .map_err(fail)?;
        Ok(format!("{}{}", attachments::DIGEST_PREFIX, digest.hex()))
    }
}

impl BundleSource for LocalBundles {
    fn materialise(&self, digest: &str) -> Result<PathBuf, ProblemError> {
        let parsed: Digest = digest
            .parse()
            .map_err(|e| ProblemError::InvalidParams(format!("exec: {e}")))?;
        self.cache.get(&parsed).ok_or_else(|| {
            ProblemError::Unsupported(format!(
                "exec: bundle {digest} is not in the local bundle cache {}",
                self.cache.root().display()
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(byte: &str) -> String {
        format!("sha256:{}", byte.repeat(32))
    }

    #[test]
    fn attachments_parse_with_and_without_labels() {
        let d = digest("0f");
        assert_eq!(
            parse_attachment(&d),
            Some(Attachment {
                label: None,
                digest: d.clone()
            })
        );
        let labelled = parse_attachment(&format!("x86_64-unknown-linux-gnu={d}")).unwrap();
        assert_eq!(labelled.label.as_deref(), Some("x86_64-unknown-linux-gnu"));
        assert_eq!(parse_attachment("./solve"), None);
        assert_eq!(parse_attachment("a=./solve"), None);
        assert_eq!(parse_attachment(&format!("={d}")), None);
    }

    #[test]
    fn variants_are_picked_by_platform() {
        let one = [parse_attachment(&digest("01")).unwrap()];
        assert_eq!(variant_for(&one, "anything").unwrap().digest, digest("01"));
        let two = [
            parse_attachment(&format!("a-b={}", digest("02"))).unwrap(),
            parse_attachment(&format!("c-d={}", digest("03"))).unwrap(),
        ];
        assert_eq!(variant_for(&two, "c-d").unwrap().digest, digest("03"));
        let err = variant_for(&two, "e-f").unwrap_err().to_string();
        assert!(
            err.contains("no variant for platform e-f (it has: a-b, c-d)"),
            "{err}"
        );
    }

    #[test]
    fn entries_stay_inside_and_programs_must_be_executable() {
        assert!(check_entry("bin/solve").is_ok());
        for bad in ["", "/bin/sh", "../x", "a/../../b"] {
            assert!(check_entry(bad).is_err(), "{bad}");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("solve"), "#!/bin/sh\n").unwrap();
        let err = bundle_program(dir.path(), None, "solver")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not executable"), "{err}");
        std::fs::set_permissions(
            dir.path().join("solve"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        assert_eq!(
            bundle_program(dir.path(), None, "solver").unwrap(),
            dir.path().join("solve")
        );
        std::fs::write(dir.path().join("data"), "x").unwrap();
        let err = bundle_program(dir.path(), None, "solver")
            .unwrap_err()
            .to_string();
        assert!(err.contains("--solver-entry"), "{err}");
        assert!(bundle_program(dir.path(), Some("solve"), "solver").is_ok());
        let err = bundle_file(dir.path(), Some("nope"), "checker")
            .unwrap_err()
            .to_string();
        assert!(err.contains("has no file nope"), "{err}");
        assert_eq!(instance_path(dir.path()), dir.path());
    }

    #[test]
    fn local_bundles_serve_what_was_added() {
        let root = tempfile::tempdir().unwrap();
        let src = tempfile::tempdir().unwrap();
        let file = src.path().join("inst.txt");
        std::fs::write(&file, "12\n").unwrap();
        let bundles = LocalBundles::open(root.path().join("cache")).unwrap();
        let digest = bundles.add(&file).unwrap();
        assert!(attachments::is_digest(&digest), "{digest}");
        let dir = bundles.materialise(&digest).unwrap();
        assert_eq!(
            std::fs::read_to_string(instance_path(&dir)).unwrap(),
            "12\n"
        );
        let missing = bundles
            .materialise(&super::tests::digest("ee"))
            .unwrap_err();
        assert!(
            missing
                .to_string()
                .contains("not in the local bundle cache"),
            "{missing}"
        );
    }
}
