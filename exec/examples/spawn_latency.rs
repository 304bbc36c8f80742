//! Measures what the runner adds per solver run on this machine: the time from the call to
//! `runner::spawn` to the solver's first instruction (its `main`), and the whole cost of a
//! run of a solver that exits at once (spawn, sandbox, supervision, reaping, output
//! collection), for several sandbox settings.
//!
//! The solver is a tiny C program compiled here with `cc` (static if possible, so dynamic
//! loading is not counted as grind's cost; the report says which). It prints
//! `CLOCK_MONOTONIC` at the start of `main` as a comment line; the parent reads the same
//! clock just before `spawn`.
//!
//! Run: `cargo run --release -p grind-exec --example spawn_latency [runs]`

use grind_exec::protocol::Event;
use grind_exec::runner::{self, SolverSpec};
use grind_exec::sandbox::{LandlockMode, Network};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const SOLVER_C: &str = r#"
#include <stdio.h>
#include <time.h>
int main(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    printf("c t %lld\n", (long long)t.tv_sec * 1000000000LL + t.tv_nsec);
    return 0;
}
"#;

fn monotonic_ns() -> i64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec * 1_000_000_000 + t.tv_nsec
}

/// Compiles the solver; returns its path and whether it is static.
fn compile(dir: &Path) -> (PathBuf, bool) {
    let src = dir.join("first.c");
    std::fs::write(&src, SOLVER_C).expect("write C source");
    let bin = dir.join("first");
    for (flags, is_static) in [(&["-O2", "-static"][..], true), (&["-O2"][..], false)] {
        let ok = Command::new("cc")
            .args(flags)
            .arg(&src)
            .arg("-o")
            .arg(&bin)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if ok {
            return (bin, is_static);
        }
    }
    panic!("cc could not compile the test solver");
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200);
    let tmp = tempfile::tempdir().expect("tempdir");
    let (bin, is_static) = compile(tmp.path());
    println!(
        "solver: {} C program; {runs} runs per setting; median / p90 / p99 in ms",
        if is_static { "static" } else { "dynamic" }
    );
    let settings = [
        (
            "no Landlock, host network",
            LandlockMode::Off,
            Network::Host,
        ),
        (
            "Landlock, host network",
            LandlockMode::BestEffort,
            Network::Host,
        ),
        (
            "Landlock, isolated network",
            LandlockMode::BestEffort,
            Network::Isolated,
        ),
    ];
    // Settings are interleaved run by run, so that load from other processes on the machine
    // falls on all of them alike.
    let mut first = vec![Vec::new(); settings.len()];
    let mut whole = vec![Vec::new(); settings.len()];
    for i in 0..runs {
        for (k, (_, landlock, network)) in settings.iter().enumerate() {
            let run_dir = tmp.path().join(format!("run{i}-{k}"));
            let mut spec = SolverSpec::new(&bin, &run_dir);
            spec.bundle_dir = Some(tmp.path().to_path_buf());
            spec.sandbox.landlock = *landlock;
            spec.sandbox.network = *network;
            spec.time_limit = Some(Duration::from_secs(60));
            let (tx, rx) = mpsc::channel();
            let t0 = monotonic_ns();
            let start = Instant::now();
            let running = runner::spawn(spec, move |e| {
                let _ = tx.send(e);
            })
            .expect("spawn");
            let outcome = running.wait().expect("run");
            whole[k].push(start.elapsed().as_secs_f64() * 1e3);
            let t_child = rx
                .try_iter()
                .find_map(|e| match e.event {
                    Event::Comment(c) => c.strip_prefix("t ").and_then(|t| t.parse::<i64>().ok()),
                    _ => None,
                })
                .unwrap_or_else(|| panic!("no timestamp: {}", outcome.describe()));
            first[k].push((t_child - t0) as f64 / 1e6);
            let _ = std::fs::remove_dir_all(&run_dir);
        }
    }
    for (k, (name, _, _)) in settings.iter().enumerate() {
        first[k].sort_by(f64::total_cmp);
        whole[k].sort_by(f64::total_cmp);
        let (f, w) = (&first[k], &whole[k]);
        println!(
            "{name:28} spawn -> first instruction {:6.2} {:6.2} {:6.2} (min {:5.2})   whole run {:6.2} {:6.2} {:6.2} (min {:5.2})",
            percentile(f, 0.5),
            percentile(f, 0.9),
            percentile(f, 0.99),
            f[0],
            percentile(w, 0.5),
            percentile(w, 0.9),
            percentile(w, 0.99),
            w[0],
        );
    }
}
