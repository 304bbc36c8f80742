//! Hostile and broken solvers and checkers: each ends in a clear message, and nothing false
//! is passed on as a score.

use serde_json::json;

use super::{solve_first, toy, Recorder};
use crate::problem::{Objective, ProblemError, UnitOutcome, Verification};
use crate::problems::exec::fixtures;

#[test]
fn a_false_claim_is_refused_by_the_checker() {
    // x = 40 is not below the modulus 31: the checker says invalid (exit 43), a strike.
    let problem = toy("#!/bin/sh\necho 'o 0'; echo 'v 40'\n", json!({})).unwrap();
    let ctx = Recorder::new(Objective::Min);
    solve_first(&problem, &ctx).unwrap();
    let found = ctx.improvements.lock().unwrap()[0].clone();
    assert_eq!(found.score, 0, "the claim is passed on as claimed");
    let err = problem.score(&found.solution).unwrap_err();
    assert!(matches!(err, ProblemError::InvalidSolution(_)), "{err}");
    assert!(err.to_string().contains("not below 31"), "{err}");
    // A claim with a wrong cost but a valid model scores what the checker says.
    assert_eq!(problem.score(&json!({"model": "v 2\n"})).unwrap(), 11);
}

#[test]
fn garbage_output_claims_nothing() {
    let solver = r#"#!/bin/sh
echo 'hello world'
printf '\377\376 binary\n'
echo 'v 1'
echo 'o 2.5'; echo 'v 3'
echo 'o 99999999999999999999'; echo 'v 4'
echo 'g progress 7'
echo 's MAYBE'
printf 'o 1\nv 5'
"#;
    let problem = toy(solver, json!({})).unwrap();
    let ctx = Recorder::new(Objective::Min);
    let outcome = solve_first(&problem, &ctx).unwrap();
    assert_eq!(
        outcome,
        UnitOutcome::Searched {
            best: None,
            hits: Vec::new()
        }
    );
    assert!(ctx.claimed().is_empty(), "{:?}", ctx.claimed());
    let record = ctx.record();
    assert!(
        record["diagnostics"]["count"].as_u64().unwrap() >= 8,
        "{record}"
    );
    assert!(record["diagnostics"]["first"][0]
        .as_str()
        .unwrap()
        .contains("unknown line"));
}

#[test]
fn a_solver_ignoring_sigterm_is_killed_and_keeps_its_last_solution() {
    let solver = r#"#!/bin/sh
trap '' TERM
echo 'o 8'; echo 'v 1'
echo 'o 1'; echo 'v 5'
while :; do sleep 1; done
"#;
    let problem = toy(solver, json!({"unit_seconds": 1, "grace_seconds": 1})).unwrap();
    let ctx = Recorder::new(Objective::Min);
    let started = std::time::Instant::now();
    let outcome = solve_first(&problem, &ctx).unwrap();
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    let UnitOutcome::Searched {
        best: Some(best), ..
    } = outcome
    else {
        panic!("{outcome:?}");
    };
    assert_eq!((best.score, ctx.claimed()), (1, vec![8, 1]));
    let record = ctx.record();
    assert_eq!(record["killed"], true, "{record}");
    assert!(
        record["end"].as_str().unwrap().contains("SIGKILL"),
        "{record}"
    );
}

#[test]
fn a_model_cut_by_a_kill_is_withheld_unless_it_is_one_line() {
    // Killed by a signal right after its last model: a one-line model is whole.
    let one = toy(
        "#!/bin/sh\necho 'o 8'; echo 'v 1'\nkill -KILL $$\n",
        json!({}),
    )
    .unwrap();
    let ctx = Recorder::new(Objective::Min);
    let err = solve_first(&one, &ctx).unwrap_err();
    assert!(
        err.to_string().contains("signal 9"),
        "a crash is an error: {err}"
    );
    assert_eq!(ctx.claimed(), vec![8]);
    assert_eq!(ctx.record()["last_solution_cut_by_kill"], true);
    // Two lines: the second could be missing its rest.
    let two = toy(
        "#!/bin/sh\necho 'o 8'; echo 'v 1'; echo 'v 2'\nkill -KILL $$\n",
        json!({}),
    )
    .unwrap();
    let ctx = Recorder::new(Objective::Min);
    solve_first(&two, &ctx).unwrap_err();
    assert!(ctx.claimed().is_empty());
    let record = ctx.record();
    assert!(
        record["improvements"]["withheld"]
            .as_str()
            .unwrap()
            .contains("may be cut"),
        "{record}"
    );
}

#[test]
fn an_unfinished_or_silent_exhaustive_unit_is_an_error() {
    let units = fixtures::add_script("one-unit.txt", "all\n", false);
    let slow = toy(
        "#!/bin/sh\nsleep 30\n",
        json!({"units_file": units, "unit_seconds": 1, "grace_seconds": 0}),
    )
    .unwrap();
    let err = solve_first(&slow, &Recorder::new(Objective::Min)).unwrap_err();
    assert!(matches!(err, ProblemError::Solver(_)), "{err}");
    assert!(
        err.to_string()
            .contains("did not finish within --unit-seconds 1"),
        "{err}"
    );
    let silent = toy(
        "#!/bin/sh\necho 'c done'\n",
        json!({"units_file": units, "objective": "count"}),
    )
    .unwrap();
    let err = solve_first(&silent, &Recorder::new(Objective::Count)).unwrap_err();
    assert!(err.to_string().contains("without a `g count"), "{err}");
    let crash = toy("#!/bin/sh\necho oops >&2; exit 3\n", json!({})).unwrap();
    let err = solve_first(&crash, &Recorder::new(Objective::Min)).unwrap_err();
    assert!(
        err.to_string().contains("exit code 3") && err.to_string().contains("oops"),
        "{err}"
    );
}

#[test]
fn too_much_output_kills_the_solver() {
    // The model of `o 7` is still open when the flood of comments starts: a model is
    // complete only at the next `o` or `s` line, a quiet pause or the end of output, and
    // output cut by the limit has no end. The model of `o 8` counts.
    let solver = "#!/bin/sh\necho 'o 8'; echo 'v 1'; echo 'o 7'; echo 'v 5'\nwhile :; do echo 'c chatter chatter chatter'; done\n";
    let problem = toy(solver, json!({"output_mb": 1})).unwrap();
    let ctx = Recorder::new(Objective::Min);
    let err = solve_first(&problem, &ctx).unwrap_err();
    assert!(err.to_string().contains("limit"), "{err}");
    assert_eq!(ctx.claimed(), vec![8], "what came before still counts");
}

#[test]
fn broken_and_hanging_checkers_are_verifier_failures() {
    let doc = json!({"model": "v 5\n"});
    let hanging = fixtures::add_script("hang.sh", "#!/bin/sh\nsleep 30\n", true);
    let crashing = fixtures::add_script("crash.sh", "#!/bin/sh\necho boom >&2; exit 1\n", true);
    let wordy = fixtures::add_script("wordy.sh", "#!/bin/sh\necho 'score: 5'\n", true);
    for (checker, expected) in [
        (hanging, "time limit"),
        (crashing, "boom"),
        (wordy, "not an integer score"),
    ] {
        let problem = toy(
            fixtures::ANYTIME,
            json!({"checker": checker, "checker_seconds": 1}),
        )
        .unwrap();
        let started = std::time::Instant::now();
        let err = problem.score(&doc).unwrap_err();
        assert!(matches!(err, ProblemError::VerifierFailed(_)), "{err}");
        assert!(err.to_string().contains(expected), "{expected}: {err}");
        assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    }
    let not_a_doc = toy(fixtures::ANYTIME, json!({}))
        .unwrap()
        .score(&json!({"x": 1}));
    assert!(matches!(not_a_doc, Err(ProblemError::InvalidSolution(_))));
}
