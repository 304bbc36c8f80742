//! The sandbox with real processes: Landlock, the network namespace, rlimits, the report.

mod common;

use common::*;
use grind_exec::process::{ExitKind, StopReason};
use grind_exec::runner;
use grind_exec::sandbox::{LandlockMode, LandlockReport, Network};
use std::time::Duration;

#[test]
fn writing_outside_the_work_directory_is_refused_under_landlock() {
    let landlock = landlock_or_skip("writing_outside_the_work_directory");
    for mode in [LandlockMode::BestEffort, LandlockMode::Off] {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let target = elsewhere.path().join("escaped.txt");
        let mut s = spec("write_outside.sh", dir.path());
        s.args = vec![target.clone().into()];
        s.sandbox.landlock = mode;
        let (events, out) = run(s);
        let c = comments(&events);
        assert!(c.contains(&"inside: written".to_string()), "{c:?}");
        assert!(c.contains(&"tmpdir: written".to_string()), "{c:?}");
        if mode == LandlockMode::Off {
            // The control: without Landlock the same script does write there.
            assert_eq!(out.sandbox.landlock, LandlockReport::Off);
            assert!(c.contains(&"outside: written".to_string()), "{c:?}");
            assert!(target.exists());
        } else if landlock {
            assert!(out.sandbox.landlock.applied(), "{:?}", out.sandbox.landlock);
            assert!(c.contains(&"outside: denied".to_string()), "{c:?}");
            assert!(!target.exists());
        }
    }
}

#[test]
fn landlock_required_without_support_is_an_error_and_with_support_applies() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec("env_dump.sh", dir.path());
    s.sandbox.landlock = LandlockMode::Required;
    match grind_exec::sandbox::kernel_landlock_abi() {
        Ok(abi) => {
            let (_, out) = run(s);
            match &out.sandbox.landlock {
                LandlockReport::Applied {
                    kernel_abi,
                    read_only,
                    read_write,
                    scoped,
                } => {
                    assert_eq!(*kernel_abi, abi);
                    assert!(read_only.contains(&fixtures()));
                    assert!(read_write.contains(&dir.path().join("work")));
                    assert_eq!(*scoped, abi >= 6);
                }
                other => panic!("{other:?}"),
            }
            assert!(out.sandbox.summary().contains("landlock abi"));
        }
        Err(why) => {
            let err = runner::spawn(s, |_| {}).unwrap_err();
            assert!(err.to_string().contains("Landlock required"), "{err}");
            eprintln!("Landlock unsupported ({why}): checked the error only");
        }
    }
}

#[test]
fn an_isolated_solver_cannot_reach_the_network() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    for network in [Network::Host, Network::Isolated] {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec("connect.py", dir.path());
        s.args = vec![port.clone().into()];
        s.sandbox.network = network;
        let (events, out) = run(s);
        let c = comments(&events);
        match network {
            Network::Host => assert_eq!(c, vec!["connect: ok".to_string()], "control"),
            Network::Isolated => {
                assert!(out.sandbox.network_isolated);
                assert_eq!(c.len(), 1, "{c:?} {}", out.stderr_tail);
                assert!(c[0].starts_with("connect: failed"), "{c:?}");
            }
        }
    }
}

#[test]
fn the_cpu_time_limit_stops_a_spinning_solver() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec("spin.sh", dir.path());
    s.sandbox.limits.cpu_time = Some(Duration::from_secs(1));
    let (_, out) = run(s);
    assert_eq!(out.stop, StopReason::Exited, "{}", out.describe());
    assert_eq!(out.exit, ExitKind::Signal(libc::SIGXCPU));
    assert!(
        out.describe().contains("CPU time limit"),
        "{}",
        out.describe()
    );
    // One second of CPU for a single-threaded shell takes at least a second of wall time (its
    // rusage CPU time is sampled and was once seen below 0.9 s under heavy load).
    assert!(
        out.wall_time >= Duration::from_millis(950),
        "{:?}",
        out.wall_time
    );
    assert!(out.cpu_time > Duration::ZERO);
    assert_eq!(out.last_solution.map(|s| s.claimed), Some(1));
}

#[test]
fn the_file_size_limit_stops_a_large_write() {
    for (limit, expected) in [(1u64 << 20, "big: failed"), (8 << 20, "big: written")] {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec("big_file.sh", dir.path());
        s.sandbox.limits.file_size_bytes = Some(limit);
        let (events, _) = run(s);
        assert_eq!(comments(&events), vec![expected.to_string()]);
        let size = std::fs::metadata(dir.path().join("work/big"))
            .unwrap()
            .len();
        assert!(size <= limit);
    }
}

#[test]
fn the_report_says_what_was_applied() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec("env_dump.sh", dir.path());
    s.sandbox.limits.memory_bytes = Some(1 << 30);
    s.sandbox.limits.cpu_time = Some(Duration::from_secs(60));
    s.sandbox.network = Network::Isolated;
    let (_, out) = run(s);
    let r = &out.sandbox;
    assert!(r.process_group && r.no_new_privs && r.parent_death_signal);
    assert!(r.network_isolated);
    let summary = r.summary();
    for part in [
        "cpu 60s",
        "mem(as) 1024 MiB",
        "nofile 1024",
        "network isolated",
    ] {
        assert!(summary.contains(part), "{summary}");
    }
}

#[test]
fn the_resident_memory_limit_kills_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec("rss_hog.py", dir.path());
    s.sandbox.limits.rss_bytes = Some(256 << 20);
    let (events, out) = run(s);
    assert_eq!(
        out.stop,
        StopReason::MemoryLimit(256 << 20),
        "{}",
        out.describe()
    );
    assert!(out.killed);
    assert!(
        out.describe().contains("resident memory"),
        "{}",
        out.describe()
    );
    // It was stopped soon after passing the limit (polled every 200 ms), long before 2 GiB.
    let held: Vec<u64> = comments(&events)
        .iter()
        .filter_map(|c| {
            c.strip_prefix("holding ")?
                .strip_suffix(" MiB")?
                .parse()
                .ok()
        })
        .collect();
    let most = held.iter().max().copied().unwrap_or(0);
    assert!((128..2048).contains(&most), "{held:?}");
    assert_eq!(out.last_solution.map(|s| s.claimed), Some(2));
}

#[test]
fn a_sandboxed_solver_cannot_read_the_workers_environment() {
    let landlock = landlock_or_skip("a_sandboxed_solver_cannot_read_the_workers_environment");
    // Capabilities are kept in these runs: for a root worker, dropping them alone already
    // denies this (a capability-less process may not inspect one with capabilities); the
    // point here is what Landlock does.
    for (mode, proc_fs) in [
        (LandlockMode::Off, false),
        (LandlockMode::BestEffort, false),
        (LandlockMode::BestEffort, true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec("read_parent_env.sh", dir.path());
        s.sandbox.landlock = mode;
        s.sandbox.proc_fs = proc_fs;
        s.sandbox.drop_capabilities = false;
        let (events, _) = run(s);
        let c = comments(&events);
        if mode == LandlockMode::Off || proc_fs {
            // Same user: without Landlock, or with /proc granted (Landlock's ptrace rules
            // refuse only attach-class access such as /proc/<pid>/mem, not environ), the
            // worker's environment is readable. This is why /proc is not granted by default.
            assert_eq!(
                c,
                vec!["parent environ: read".to_string()],
                "{mode:?} {proc_fs}"
            );
        } else if landlock {
            assert_eq!(c, vec!["parent environ: denied".to_string()]);
        }
    }
}

#[test]
fn a_sandboxed_solver_cannot_signal_the_worker() {
    let scoped = grind_exec::sandbox::kernel_landlock_abi().is_ok_and(|abi| abi >= 6);
    if !scoped {
        eprintln!("a_sandboxed_solver_cannot_signal_the_worker: SKIPPED (Landlock ABI < 6)");
    }
    for mode in [LandlockMode::Off, LandlockMode::BestEffort] {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec("signal_parent.sh", dir.path());
        s.sandbox.landlock = mode;
        let (events, _) = run(s);
        let c = comments(&events);
        if mode == LandlockMode::Off {
            assert_eq!(c, vec!["signal parent: allowed".to_string()], "control");
        } else if scoped {
            assert_eq!(c, vec!["signal parent: denied".to_string()]);
        }
    }
}

#[test]
fn capabilities_are_dropped_even_for_a_root_worker() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    for drop in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec("capabilities.sh", dir.path());
        s.sandbox.proc_fs = true;
        s.sandbox.drop_capabilities = drop;
        let (events, out) = run(s);
        assert_eq!(out.sandbox.capabilities_dropped, drop);
        let c = comments(&events);
        let effective = c
            .iter()
            .find_map(|l| l.strip_prefix("CapEff "))
            .unwrap()
            .to_string();
        let bounding = c
            .iter()
            .find_map(|l| l.strip_prefix("CapBnd "))
            .unwrap()
            .to_string();
        let zero = |v: &str| u64::from_str_radix(v.trim(), 16).unwrap() == 0;
        if drop {
            assert!(zero(&effective) && zero(&bounding), "{c:?}");
        } else if root {
            // The control: a root worker's solver keeps root's capabilities without the drop.
            assert!(!zero(&effective), "{c:?}");
        }
    }
}
