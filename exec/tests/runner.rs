//! The runner with real processes: a MaxSAT-style solver unmodified, broken and hostile
//! solvers, stop requests, the bound feed.

mod common;

use common::*;
use grind_exec::bound::{Delivery, Objective};
use grind_exec::checker::{self, CheckerSpec, Verdict};
use grind_exec::process::{ExitKind, StopReason};
use grind_exec::protocol::{Diagnostic, Event, Status};
use grind_exec::runner::{self, BoundSpec};
use grind_exec::sandbox::MemoryLimitKind;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

/// The optimum of a WCNF file by enumeration (independent of the fixtures' Python).
fn brute_force_optimum(path: &Path) -> i64 {
    let mut hard: Vec<Vec<i64>> = Vec::new();
    let mut soft: Vec<(i64, Vec<i64>)> = Vec::new();
    let mut n = 0;
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.is_empty() || f[0] == "c" {
            continue;
        }
        let lits: Vec<i64> = f[1..f.len() - 1]
            .iter()
            .map(|x| x.parse().unwrap())
            .collect();
        n = lits.iter().map(|l| l.abs()).fold(n, i64::max);
        if f[0] == "h" {
            hard.push(lits);
        } else {
            soft.push((f[0].parse().unwrap(), lits));
        }
    }
    let sat = |a: u32, c: &[i64]| {
        c.iter()
            .any(|&l| ((a >> (l.abs() - 1)) & 1 == 1) == (l > 0))
    };
    (0..1u32 << n)
        .filter(|&a| hard.iter().all(|c| sat(a, c)))
        .map(|a| {
            soft.iter()
                .filter(|(_, c)| !sat(a, c))
                .map(|(w, _)| w)
                .sum()
        })
        .min()
        .unwrap()
}

fn check(dir: &Path, solution: &str) -> Verdict {
    let sol = dir.join("solution.txt");
    std::fs::write(&sol, solution).unwrap();
    let mut spec = CheckerSpec {
        program: fixture("maxsat_check.py"),
        args: vec![],
        instance: fixture("tiny.wcnf"),
        solution: sol,
        scratch_dir: dir.join("check"),
        time_limit: Duration::from_secs(30),
        sandbox: Default::default(),
    };
    spec.sandbox.read_only.push(fixtures());
    checker::check(&spec).unwrap().verdict
}

#[test]
fn maxsat_solver_unmodified_model_once_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec("maxsat_ls.py", dir.path());
    s.args = vec![fixture("tiny.wcnf").into()];
    let (events, out) = run(s);
    assert_eq!(out.stop, StopReason::Exited, "{}", out.describe());
    assert_eq!(out.exit, ExitKind::Code(10), "MSE exit code for a solution");
    assert!(
        out.describe().contains("solution found"),
        "{}",
        out.describe()
    );
    let costs: Vec<i64> = events
        .iter()
        .filter_map(|e| match e.event {
            Event::Cost(c) => Some(c),
            _ => None,
        })
        .collect();
    assert!(!costs.is_empty());
    assert!(
        costs.windows(2).all(|w| w[1] < w[0]),
        "improving: {costs:?}"
    );
    let sols = solutions(&events);
    assert_eq!(sols.len(), 1, "the model is printed once, at the end");
    let best = &sols[0];
    assert_eq!(best.claimed, *costs.last().unwrap());
    assert_eq!(out.last_solution.as_ref(), Some(best));
    assert_eq!(out.status, Some(Status::Satisfiable));
    let optimum = brute_force_optimum(&fixture("tiny.wcnf"));
    assert!(best.claimed >= optimum);
    // The checker's score agrees with the claim.
    match check(dir.path(), &best.text) {
        Verdict::Valid { score, .. } => assert_eq!(score, best.claimed),
        v => panic!("checker: {v:?}"),
    }
}

#[test]
fn maxsat_solver_model_after_every_o_and_false_claims_are_caught() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec("maxsat_ls.py", dir.path());
    s.args = vec![fixture("tiny.wcnf").into(), "--model-each".into()];
    s.unit.seed = 7;
    let (events, out) = run(s);
    let costs = events
        .iter()
        .filter(|e| matches!(e.event, Event::Cost(_)))
        .count();
    let sols = solutions(&events);
    assert_eq!(sols.len(), costs, "one model per o line");
    for sol in &sols {
        match check(dir.path(), &sol.text) {
            Verdict::Valid { score, .. } => assert_eq!(score, sol.claimed),
            v => panic!("checker: {v:?}"),
        }
    }
    assert_eq!(out.last_solution.as_ref(), sols.last());
    // A tampered model: the checker refuses it or scores it differently from the claim.
    let last = sols.last().unwrap();
    let flipped: String = last
        .text
        .trim_end()
        .chars()
        .map(|c| match c {
            '0' => '1',
            '1' => '0',
            c => c,
        })
        .collect();
    match check(dir.path(), &format!("{flipped}\n")) {
        Verdict::Invalid { reason } => assert!(reason.contains("hard clause"), "{reason}"),
        Verdict::Valid { score, .. } => assert_ne!(score, last.claimed),
        v => panic!("checker: {v:?}"),
    }
}

#[test]
fn sigterm_at_the_time_limit_keeps_the_final_model() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec("maxsat_ls.py", dir.path());
    s.args = vec![fixture("tiny.wcnf").into(), "--forever".into()];
    s.time_limit = Some(Duration::from_secs(3));
    s.grace = Duration::from_secs(10);
    let (events, out) = run(s);
    assert_eq!(out.stop, StopReason::TimeLimit);
    assert!(!out.killed, "it exits on SIGTERM: {}", out.describe());
    assert_eq!(out.exit, ExitKind::Code(10));
    assert!(!out.last_solution_cut_by_kill);
    let sol = out.last_solution.expect("model printed at SIGTERM");
    assert_eq!(solutions(&events).last(), Some(&sol));
}

#[test]
fn a_solver_ignoring_sigterm_is_killed_after_the_grace_period() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec("ignore_term.sh", dir.path());
    s.time_limit = Some(Duration::from_secs(2));
    s.grace = Duration::from_millis(300);
    let (events, out) = run(s);
    assert_eq!(out.stop, StopReason::TimeLimit);
    assert!(out.killed);
    assert_eq!(out.exit, ExitKind::Signal(libc::SIGKILL));
    assert!(out.describe().contains("SIGKILL"), "{}", out.describe());
    assert!(out.wall_time >= Duration::from_millis(2300));
    // Its model was completed when its output went quiet (its lines were whole), long
    // before the kill: it is not flagged as possibly cut.
    assert_eq!(out.last_solution.map(|s| s.claimed), Some(5));
    assert!(!out.last_solution_cut_by_kill);
    assert_eq!(solutions(&events).len(), 1, "completed once");
    assert!(comments(&events).contains(&"ready".to_string()));
}

#[test]
fn children_that_outlive_the_solver_are_killed() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out) = run(spec("forker.sh", dir.path()));
    assert_eq!(out.stop, StopReason::Exited);
    assert_eq!(out.exit, ExitKind::Code(0));
    assert!(
        !out.output_held_open,
        "the children held stdout; they are dead now"
    );
    assert_eq!(out.last_solution.map(|s| s.claimed), Some(4));
    let pids: Vec<i32> = std::fs::read_to_string(dir.path().join("work/children"))
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 3);
    for pid in pids {
        assert!(
            wait_for(Duration::from_secs(10), || !alive(pid)),
            "child {pid} survived"
        );
    }
}

#[test]
fn a_child_leaving_the_process_group_but_holding_stdout_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out) = run(spec("escapee.sh", dir.path()));
    assert_eq!(out.stop, StopReason::Exited);
    let pid: i32 = std::fs::read_to_string(dir.path().join("work/escapee"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // It held stdout, so it was found and killed, and the output reached its end.
    assert_eq!(out.strays_killed, 1, "{out:?}");
    assert!(!out.output_held_open);
    assert!(
        wait_for(Duration::from_secs(10), || !alive(pid)),
        "escapee {pid} survived"
    );
    assert_eq!(out.last_solution.map(|s| s.claimed), Some(1));
}

#[test]
fn garbage_output_gives_diagnostics_and_no_false_solution() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec("garbage.sh", dir.path());
    s.output.max_line = 1000;
    let (events, out) = run(s);
    let diags: Vec<&Diagnostic> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Diagnostic(d) => Some(d),
            _ => None,
        })
        .collect();
    let has = |f: fn(&Diagnostic) -> bool| diags.iter().any(|d| f(d));
    assert!(has(|d| matches!(d, Diagnostic::UnknownLine { .. })));
    assert!(has(|d| matches!(d, Diagnostic::InvalidCost { .. })));
    assert!(has(|d| matches!(d, Diagnostic::InvalidUtf8 { .. })));
    assert!(has(|d| matches!(d, Diagnostic::LineTooLong { .. })));
    assert!(has(|d| matches!(d, Diagnostic::UnknownStatus { .. })));
    assert!(has(|d| matches!(d, Diagnostic::InvalidGrindLine { .. })));
    assert!(has(|d| matches!(d, Diagnostic::UnterminatedLine { .. })));
    // Only the one well-formed model counts; the cut-off one at the end does not.
    let sols = solutions(&events);
    assert_eq!(sols.len(), 1, "{sols:?}");
    assert_eq!((sols[0].claimed, sols[0].text.as_str()), (3, "v 111\n"));
    assert_eq!(out.diagnostics as usize, diags.len());
    for d in diags {
        assert!(!d.to_string().is_empty());
    }
}

#[test]
fn output_floods_are_killed_with_a_clear_reason() {
    for stream in ["stdout", "stderr"] {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec("flood.sh", dir.path());
        s.args = vec![stream.into()];
        s.output.stdout_bytes = 1 << 20;
        s.output.stderr_bytes = 1 << 20;
        let (_, out) = run(s);
        assert_eq!(
            out.stop,
            StopReason::OutputLimit(stream),
            "{}",
            out.describe()
        );
        assert!(out.describe().contains(stream));
        assert!(out.killed);
        assert!(matches!(out.exit, ExitKind::Signal(_)), "{:?}", out.exit);
        if stream == "stderr" {
            assert!(out.stderr_tail.contains("spam spam spam"));
            assert!(out.stderr_tail.len() <= 8 << 10);
        }
    }
}

#[test]
fn a_solver_over_its_memory_limit_fails() {
    for kind in [MemoryLimitKind::AddressSpace, MemoryLimitKind::Data] {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec("memory_hog.py", dir.path());
        s.sandbox.limits.memory_bytes = Some(512 << 20);
        s.sandbox.limits.memory_kind = kind;
        let (events, out) = run(s);
        assert_eq!(out.stop, StopReason::Exited);
        assert_ne!(out.exit, ExitKind::Code(0), "{kind:?}");
        assert!(
            out.stderr_tail.contains("MemoryError"),
            "{}",
            out.stderr_tail
        );
        assert!(!comments(&events).iter().any(|c| c.starts_with("allocated")));
        assert!(out.max_rss_bytes < 512 << 20);
        // What it printed before still counts.
        assert_eq!(out.last_solution.map(|s| s.claimed), Some(9));
    }
}

#[test]
fn a_stop_request_ends_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec("ignore_term.sh", dir.path());
    s.time_limit = None;
    s.grace = Duration::from_millis(200);
    let (tx, rx) = mpsc::channel();
    let running = runner::spawn(s, move |e| {
        let _ = tx.send(e);
    })
    .unwrap();
    // Wait until it is up, then ask it to stop.
    loop {
        let e = rx.recv_timeout(Duration::from_secs(30)).expect("ready");
        if e.event == Event::Comment("ready".into()) {
            break;
        }
    }
    running
        .stop_handle()
        .stop(StopReason::Requested("lease lost".into()));
    let out = running.wait().unwrap();
    assert_eq!(out.stop, StopReason::Requested("lease lost".into()));
    assert!(out.killed);
    assert!(out.describe().contains("lease lost"));
}

#[test]
fn the_environment_is_clean_and_documented() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec("env_dump.sh", dir.path());
    s.args = vec!["unit line with spaces".into()];
    s.unit.unit = "17".into();
    s.unit.seed = 12345;
    s.unit.threads = 2;
    s.unit.instance = Some(fixture("tiny.wcnf"));
    s.unit.extra = vec![("MY_OPTION".into(), "x".into())];
    s.time_limit = Some(Duration::from_secs(60));
    s.bound = Some(BoundSpec {
        objective: Objective::Minimize,
        initial: Some(99),
    });
    let (events, _) = run(s);
    let c = comments(&events);
    let work = dir.path().join("work");
    for expected in [
        "env GRIND_PROTOCOL=1".to_string(),
        "env GRIND_UNIT=17".into(),
        "env GRIND_SEED=12345".into(),
        "env GRIND_THREADS=2".into(),
        "env GRIND_TIME_LIMIT=60".into(),
        format!("env GRIND_INSTANCE={}", fixture("tiny.wcnf").display()),
        format!("env GRIND_WORK_DIR={}", work.display()),
        format!(
            "env GRIND_CHECKPOINT_DIR={}",
            dir.path().join("checkpoint").display()
        ),
        format!(
            "env GRIND_BOUND_FILE={}",
            dir.path().join("control/bound").display()
        ),
        format!("env HOME={}", work.display()),
        format!("env TMPDIR={}", work.join("tmp").display()),
        "env MY_OPTION=x".into(),
        "arg unit line with spaces".into(),
    ] {
        assert!(c.contains(&expected), "missing {expected:?} in {c:?}");
    }
    // Nothing of the test process's own environment leaks in.
    assert!(!c.iter().any(|l| l.starts_with("env CARGO")), "{c:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("control/bound")).unwrap(),
        "99\n"
    );
    // Reserved names cannot be overridden.
    let mut bad = spec("env_dump.sh", dir.path());
    bad.unit.extra = vec![("GRIND_SEED".into(), "1".into())];
    let err = runner::spawn(bad, |_| {}).unwrap_err();
    assert!(err.to_string().contains("GRIND_SEED"), "{err}");
}

#[test]
fn a_missing_program_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let s = spec("no-such-solver", dir.path());
    let err = runner::spawn(s, |_| {}).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("no-such-solver"), "{msg}");
}

#[test]
fn bounds_reach_the_solver_monotonically_on_stdin_and_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec("bound_reader.py", dir.path());
    s.bound = Some(BoundSpec {
        objective: Objective::Minimize,
        initial: Some(10),
    });
    let (tx, rx) = mpsc::channel();
    let running = runner::spawn(s, move |e| {
        let _ = tx.send(e);
    })
    .unwrap();
    let feed = running.bound_feed().expect("bound feed").clone();
    let next_comment = || loop {
        let e = rx.recv_timeout(Duration::from_secs(30)).expect("event");
        if let Event::Comment(c) = e.event {
            return c;
        }
    };
    assert_eq!(next_comment(), "ready");
    assert_eq!(next_comment(), "got 10 file 10", "the initial bound");
    assert_eq!(feed.offer(8).unwrap(), Delivery::Delivered);
    assert_eq!(next_comment(), "got 8 file 8");
    assert_eq!(feed.offer(9).unwrap(), Delivery::NotBetter);
    assert_eq!(feed.offer(8).unwrap(), Delivery::NotBetter);
    assert_eq!(feed.offer(5).unwrap(), Delivery::Delivered);
    assert_eq!(next_comment(), "got 5 file 5");
    feed.close_stdin();
    assert_eq!(next_comment(), "stdin closed");
    let out = running.wait().unwrap();
    assert_eq!(out.stop, StopReason::Exited);
    // After the solver is gone, offers still update the file and say stdin is closed.
    assert_eq!(feed.offer(1).unwrap(), Delivery::FileOnly);
}

#[test]
fn dropping_the_handle_stops_the_solver() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec("ignore_term.sh", dir.path());
    s.time_limit = None;
    s.grace = Duration::from_millis(200);
    let running = runner::spawn(s, |_| {}).unwrap();
    let pid = running.pid() as i32;
    assert!(alive(pid));
    drop(running);
    assert!(
        wait_for(Duration::from_secs(20), || !alive(pid)),
        "solver {pid} kept running after its handle was dropped"
    );
}

#[test]
fn concurrent_runs_do_not_interfere() {
    let dirs: Vec<_> = (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
    let running: Vec<_> = dirs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let mut s = spec("maxsat_ls.py", d.path());
            s.args = vec![fixture("tiny.wcnf").into(), "--model-each".into()];
            s.unit.seed = i as u64;
            let (tx, rx) = mpsc::channel();
            let r = runner::spawn(s, move |e| {
                let _ = tx.send(e);
            })
            .unwrap();
            (r, rx)
        })
        .collect();
    for (r, rx) in running {
        let out = r.wait().unwrap();
        let events: Vec<_> = rx.try_iter().collect();
        assert_eq!(out.stop, StopReason::Exited, "{}", out.describe());
        assert_eq!(out.strays_killed, 0);
        assert_eq!(out.last_solution.as_ref(), solutions(&events).last());
        assert!(out.last_solution.is_some());
    }
}
