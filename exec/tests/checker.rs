//! The checker runner with real checkers: valid, invalid, hanging, crashing, garbled.

mod common;

use common::*;
use grind_exec::checker::{self, CheckerFailure, CheckerSpec, Verdict, EXIT_INVALID};
use grind_exec::process::ExitKind;
use std::path::Path;
use std::time::{Duration, Instant};

fn spec(dir: &Path, program: &str, solution: &str) -> CheckerSpec {
    let sol = dir.join("solution.txt");
    std::fs::write(&sol, solution).unwrap();
    let mut s = CheckerSpec {
        program: fixture(program),
        args: vec![],
        instance: fixture("tiny.wcnf"),
        solution: sol,
        scratch_dir: dir.join("scratch"),
        time_limit: Duration::from_secs(30),
        sandbox: Default::default(),
    };
    s.sandbox.read_only.push(fixtures());
    s
}

/// A model of the tiny instance satisfying every hard clause, and its cost, found by the
/// test itself (every hard clause of tiny.wcnf is satisfied by this assignment; its soft
/// clause weights are summed by hand below).
const MODEL: &str = "v 100010011110\n";

#[test]
fn a_valid_solution_gets_the_checkers_score() {
    let dir = tempfile::tempdir().unwrap();
    let report = checker::check(&spec(dir.path(), "maxsat_check.py", MODEL)).unwrap();
    // Falsified soft clauses of 100010011110 (x1..x12): -4? x4=0 ok; 6 (x6=0) w3; -7 (x7=0)
    // ok; -8 (x8=1) w2; 9 (x9=1) ok; -10 (x10=1) w3; 11 (x11=1) ok; 12 (x12=0) w5; 3 (x3=0)
    // w2; 5 ok; -2 ok; -6 7 ok; 8 -11 ok; -1 -12 ok; 1 ok => 3+2+3+5+2 = 15.
    assert_eq!(
        report.verdict,
        Verdict::Valid {
            score: 15,
            message: String::new()
        }
    );
    assert!(report.sandbox.unwrap().landlock.applied() || landlock_or_skip("checker"));
}

#[test]
fn a_checker_outside_the_allowed_directories_can_still_start() {
    // Only the checker program is copied out of the fixtures; nothing else names its
    // directory in the sandbox, so under Landlock it starts only if `check` allows it.
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("own_check.sh");
    std::fs::write(&program, "#!/bin/sh\necho 7\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut s = spec(dir.path(), "maxsat_check.py", MODEL);
    s.program = program;
    let report = checker::check(&s).unwrap();
    assert_eq!(
        report.verdict,
        Verdict::Valid {
            score: 7,
            message: String::new()
        }
    );
}

#[test]
fn an_invalid_solution_is_invalid_with_the_checkers_reason() {
    let dir = tempfile::tempdir().unwrap();
    // x1 = x2 = 1 violates the hard clause -1 -2.
    let report = checker::check(&spec(dir.path(), "maxsat_check.py", "v 110010011110\n")).unwrap();
    assert_eq!(
        report.verdict,
        Verdict::Invalid {
            reason: "hard clause 2 violated".into()
        }
    );
    let report = checker::check(&spec(dir.path(), "maxsat_check.py", "v 01\n")).unwrap();
    assert!(matches!(report.verdict, Verdict::Invalid { .. }));
    assert_eq!(EXIT_INVALID, 43);
}

#[test]
fn a_hanging_checker_is_killed_at_its_limit_and_is_a_checker_failure() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec(dir.path(), "check_hang.sh", MODEL);
    s.time_limit = Duration::from_millis(500);
    let start = Instant::now();
    let report = checker::check(&s).unwrap();
    assert_eq!(
        report.verdict,
        Verdict::CheckerFailed(CheckerFailure::TimedOut(Duration::from_millis(500)))
    );
    assert!(start.elapsed() < Duration::from_secs(20));
    let Verdict::CheckerFailed(f) = report.verdict else {
        unreachable!()
    };
    assert!(f.to_string().contains("time limit"), "{f}");
}

#[test]
fn a_crashing_checker_is_a_checker_failure_not_an_invalid_solution() {
    let dir = tempfile::tempdir().unwrap();
    let report = checker::check(&spec(dir.path(), "check_crash.py", MODEL)).unwrap();
    match report.verdict {
        Verdict::CheckerFailed(CheckerFailure::Exit { exit, stderr }) => {
            assert_eq!(exit, ExitKind::Code(1));
            assert!(stderr.contains("checker bug"), "{stderr}");
        }
        v => panic!("{v:?}"),
    }
}

#[test]
fn a_checker_without_a_score_or_program_is_a_checker_failure() {
    let dir = tempfile::tempdir().unwrap();
    let report = checker::check(&spec(dir.path(), "check_garbled.sh", MODEL)).unwrap();
    assert!(
        matches!(
            report.verdict,
            Verdict::CheckerFailed(CheckerFailure::UnparsableScore { ref stdout }) if stdout.contains("looks fine")
        ),
        "{:?}",
        report.verdict
    );
    let report = checker::check(&spec(dir.path(), "no-such-checker", MODEL)).unwrap();
    match report.verdict {
        Verdict::CheckerFailed(CheckerFailure::Spawn(why)) => {
            assert!(why.contains("no-such-checker"), "{why}")
        }
        v => panic!("{v:?}"),
    }
}
