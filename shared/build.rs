//! Records the git commit the binaries were built from (provenance), or "unknown", and the
//! target triple they were built for (`GRIND_TARGET`, a worker's platform). A
//! `GRIND_GIT_COMMIT` environment variable wins (container builds have no `.git`).
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=GRIND_GIT_COMMIT");
    let given = std::env::var("GRIND_GIT_COMMIT")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let commit = given.unwrap_or_else(|| from_git().unwrap_or_else(|| "unknown".to_string()));
    println!("cargo:rustc-env=GRIND_GIT_COMMIT={commit}");
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".to_string());
    println!("cargo:rustc-env=GRIND_TARGET={target}");
    for path in ["../.git/HEAD", "../.git/refs/heads"] {
        if std::path::Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}

fn from_git() -> Option<String> {
    Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}
