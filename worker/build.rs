//! Tells `grind-worker --version` what the binary was built for: the target triple and the
//! oldest glibc it runs on. A portable build (`deploy/portable-worker.sh`) names its floor in
//! `GRIND_GLIBC_FLOOR` (e.g. `2.17`); any other build needs the glibc of the machine that
//! built it, or newer.

fn main() {
    println!("cargo:rerun-if-env-changed=GRIND_GLIBC_FLOOR");
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown target".into());
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let libc = match (env.as_str(), std::env::var("GRIND_GLIBC_FLOOR")) {
        ("gnu", Ok(floor)) if !floor.trim().is_empty() => format!("glibc >= {}", floor.trim()),
        ("gnu", _) => "glibc of the build machine or newer".to_string(),
        ("musl", _) => "static, musl".to_string(),
        (other, _) => format!("libc {other}"),
    };
    println!("cargo:rustc-env=GRIND_WORKER_BUILT_FOR={target}, {libc}");
}
