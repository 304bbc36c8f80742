//! Where the binaries under test are: given paths, or the ones cargo built beside the
//! running executable (`target/<profile>/`, also from `target/<profile>/deps/` where test
//! executables live).

use crate::KitError;
use std::path::PathBuf;

/// The binaries under test.
#[derive(Clone, Debug)]
pub struct Binaries {
    /// `grind`.
    pub grind: PathBuf,
    /// `grind-worker`.
    pub worker: PathBuf,
}

impl Binaries {
    /// The given paths (each must exist), or the binaries beside this executable.
    pub fn locate(grind: Option<PathBuf>, worker: Option<PathBuf>) -> Result<Binaries, KitError> {
        Ok(Binaries {
            grind: find(grind, "grind")?,
            worker: find(worker, "grind-worker")?,
        })
    }
}

/// `given` when it is a file, else the binary `name` beside this executable.
pub fn find(given: Option<PathBuf>, name: &str) -> Result<PathBuf, KitError> {
    if let Some(path) = given {
        return if path.is_file() {
            Ok(path)
        } else {
            Err(KitError::Missing(format!(
                "{} does not exist",
                path.display()
            )))
        };
    }
    let here = std::env::current_exe().map_err(|source| KitError::Os {
        what: "cannot find this executable".into(),
        source,
    })?;
    let mut dirs = Vec::new();
    if let Some(dir) = here.parent() {
        dirs.push(dir.to_path_buf());
        if let Some(up) = dir.parent() {
            dirs.push(up.to_path_buf());
        }
    }
    dirs.iter()
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
        .ok_or_else(|| {
            KitError::Missing(format!(
                "cannot find `{name}` beside {}: build the workspace first \
                 (cargo build --workspace) or pass its path",
                here.display()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_path_must_exist() {
        let missing = find(Some(PathBuf::from("/nonexistent/grind")), "grind").unwrap_err();
        assert_eq!(missing.to_string(), "/nonexistent/grind does not exist");
        let this = std::env::current_exe().unwrap();
        assert_eq!(find(Some(this.clone()), "grind").unwrap(), this);
        let name = this.file_name().unwrap().to_str().unwrap();
        assert_eq!(find(None, name).unwrap(), this);
        let absent = find(None, "no-such-binary").unwrap_err().to_string();
        assert!(
            absent.contains("cannot find `no-such-binary` beside"),
            "{absent}"
        );
    }
}
