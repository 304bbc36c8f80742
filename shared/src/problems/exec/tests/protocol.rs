//! The protocol mapped onto the context: MaxSAT Evaluation output as real solvers print it,
//! checkpoints and resume, the bound feed, progress and counts.

use serde_json::json;

use super::{first_unit, solve_first, toy, Recorder};
use crate::attachments;
use crate::problem::{Objective, Problem, ProblemError, UnitOutcome, Verification};
use crate::problems::exec::{fixtures, Exec};
use crate::registry::ProblemDef;

/// A weighted MaxSAT instance (2022 WCNF): hard (x1 or x2), (not x1 or not x2 or x3); soft
/// 3: not x1, 2: not x2, 4: not x3, 1: (x1 or x3). By brute force over the 8 assignments
/// (x1 x2 x3): 010 and 100 cost 3 (optimal), 011 costs 6, 101 costs 7, 111 costs 9; 000,
/// 001 and 110 break a hard clause.
const WCNF: &str = "c tiny\nh 1 2 0\nh -1 -2 3 0\n3 -1 0\n2 -2 0\n4 -3 0\n1 1 3 0\n";

/// A MaxSAT checker in the MaxSAT Evaluation's sense: re-scores the `v` line (0/1 per
/// variable, 2020+ format), exit 43 when a hard clause is broken.
const MAXSAT_CHECKER: &str = r#"#!/usr/bin/env python3
import sys
hard, soft, n = [], [], 0
for line in open(sys.argv[1]):
    f = line.split()
    if not f or f[0] == "c":
        continue
    lits = [int(x) for x in f[1:-1]]
    n = max([n] + [abs(l) for l in lits])
    (hard if f[0] == "h" else soft).append((0 if f[0] == "h" else int(f[0]), lits))
bits = "".join(l[2:].strip() for l in open(sys.argv[2]) if l.startswith("v "))
if len(bits) != n or set(bits) - set("01"):
    print("need %d bits, got %r" % (n, bits)); sys.exit(43)
sat = lambda c: any((bits[abs(l) - 1] == "1") == (l > 0) for l in c)
if not all(sat(c) for _, c in hard):
    print("a hard clause is broken"); sys.exit(43)
print(sum(w for w, c in soft if not sat(c)))
"#;

fn maxsat(solver: &str) -> Exec {
    fixtures::install();
    let params = json!({
        "solver": [fixtures::add_script("maxsat-solver", solver, true)],
        "checker": fixtures::add_script("maxsat-check.py", MAXSAT_CHECKER, true),
        "instance": fixtures::add_script("tiny.wcnf", WCNF, false),
        "objective": "min",
        "units": "seeds:1",
        "unit_seconds": 30,
    });
    Exec::from_params(serde_json::from_value(params).unwrap()).unwrap()
}

/// Runs a MaxSAT-style solver and checks every improvement it reported with the checker.
fn run_maxsat(output: &str, exit: u8) -> (Vec<i64>, Vec<String>, serde_json::Value) {
    let solver = format!("#!/bin/sh\n# a MaxSAT solver's output, unmodified\ncat <<'END'\n{output}END\nexit {exit}\n");
    let problem = maxsat(&solver);
    let ctx = Recorder::new(Objective::Min).following();
    let outcome = solve_first(&problem, &ctx).unwrap();
    for found in ctx.improvements.lock().unwrap().iter() {
        assert_eq!(
            problem.score(&found.solution).unwrap(),
            found.score,
            "the checker agrees with the claim {}",
            found.solution
        );
    }
    let UnitOutcome::Searched { best, .. } = outcome else {
        panic!("not searched: {outcome:?}");
    };
    assert_eq!(best.map(|b| b.score), ctx.claimed().last().copied());
    (ctx.claimed(), ctx.models(), ctx.record())
}

#[test]
fn maxsat_evaluation_output_works_unmodified() {
    // `v` after every `o`, then `s OPTIMUM FOUND` and exit 30.
    let (claimed, models, record) = run_maxsat(
        "c solving\no 7\nv 101\no 6\nv 011\no 3\nv 010\ns OPTIMUM FOUND\n",
        30,
    );
    assert_eq!(claimed, vec![7, 6, 3]);
    assert_eq!(models, vec!["v 101\n", "v 011\n", "v 010\n"]);
    // The provenance lists the costs reported, in order.
    assert_eq!(record["improvements"]["costs"], json!([7, 6, 3]));
    assert_eq!(record["claims"]["status"], "OPTIMUM FOUND");
    assert_eq!(record["exit"], "exit code 30");
    // `o` lines as they improve, the model only once at the end (after `s`).
    let (claimed, models, _) = run_maxsat("o 7\no 6\no 3\ns OPTIMUM FOUND\nv 100\n", 30);
    assert_eq!((claimed, models), (vec![3], vec!["v 100\n".to_string()]));
    // `s` before `o`; exit 10 (MaxSAT Evaluation: solution found).
    let (claimed, _, record) = run_maxsat("s SATISFIABLE\no 6\nv 011\n", 10);
    assert_eq!(claimed, vec![6]);
    assert_eq!(record["claims"]["status"], "SATISFIABLE");
    // The pre-2020 model: several `v` lines of literals form one model.
    let problem = maxsat("#!/bin/sh\n");
    let doc = json!({"model": "v 0\nv 1\nv 0\n"});
    assert_eq!(problem.score(&doc).unwrap(), 3);
}

#[test]
fn improvements_that_do_not_beat_the_bound_are_not_reported() {
    let solver = "#!/bin/sh\necho 'o 9'; echo 'v 8'\necho 'o 1'; echo 'v 5'\n";
    let problem = toy(solver, json!({})).unwrap();
    let ctx = Recorder::new(Objective::Min).with_bound(4);
    solve_first(&problem, &ctx).unwrap();
    assert_eq!(ctx.claimed(), vec![1]);
    assert_eq!(ctx.record()["improvements"]["not_better"], 1);
    assert_eq!(ctx.record()["improvements"]["costs"], json!([1]));
}

/// Counts 1..=5 in steps, a checkpoint after each; after its first checkpoint of a fresh
/// run it waits (so a stop request always finds it running).
const STEPS: &str = r#"#!/bin/sh
trap 'echo "c stopping"; exit 0' TERM
state="$GRIND_CHECKPOINT_DIR/state"
i=0; total=0
if [ -f "$state" ]; then read i total < "$state"; echo "c resumed at $i"; fresh=0; else fresh=1; fi
while [ $i -lt 5 ]; do
  i=$((i + 1)); total=$((total + i))
  printf 'g progress %d.%d\n' $((i / 5)) $((i * 2 % 10))
  echo "$i $total" > "$state.tmp" && mv "$state.tmp" "$state"
  echo "g checkpoint"
  if [ $fresh = 1 ]; then fresh=0; sleep 30 & wait $!; fi
done
echo "g count $total"
"#;

#[test]
fn a_stopped_unit_ships_its_checkpoint_and_resumes_from_it() {
    let units = fixtures::add_script("one-unit.txt", "all\n", false);
    let problem = toy(STEPS, json!({"objective": "count", "units_file": units})).unwrap();
    let ctx = Recorder::new(Objective::Count).stopping_after(1);
    let started = std::time::Instant::now();
    let outcome = solve_first(&problem, &ctx).unwrap();
    assert_eq!(outcome, UnitOutcome::Stopped);
    assert!(
        started.elapsed().as_secs() < 10,
        "stopped promptly: {:?}",
        started.elapsed()
    );
    let record = ctx.record();
    assert!(
        record["end"]
            .as_str()
            .unwrap()
            .contains("stopped on request"),
        "{record}"
    );
    let cursor = ctx
        .checkpoints
        .lock()
        .unwrap()
        .last()
        .cloned()
        .expect("a checkpoint");
    assert!(cursor.starts_with(b"grind-bundle 1\n"));
    assert_eq!(*ctx.progress.lock().unwrap(), vec![0.2]);

    let resumed = Recorder::new(Objective::Count).resuming(cursor);
    let outcome = solve_first(&problem, &resumed).unwrap();
    // 1 + 2 + 3 + 4 + 5: the steps before the stop were not counted twice or lost.
    assert_eq!(outcome, UnitOutcome::Count(15u32.into()));
    assert_eq!(resumed.record()["resumed"], true);
    assert_eq!(*resumed.progress.lock().unwrap(), vec![0.4, 0.6, 0.8, 1.0]);

    let broken = Recorder::new(Objective::Count).resuming(b"not a bundle".to_vec());
    let err = solve_first(&problem, &broken).unwrap_err();
    assert!(matches!(err, ProblemError::InvalidUnit(_)), "{err}");
}

#[test]
fn the_bound_feed_reaches_the_running_solver() {
    // Claims one better than every bound it reads on stdin, until the bound reaches 5;
    // the bound follows its own improvements (as on a worker), so each claim brings the
    // next `b` line. The file holds the last one.
    let solver = r#"#!/bin/sh
while read -r b v; do
  [ "$b" = b ] || continue
  echo "c got $v, file $(cat "$GRIND_BOUND_FILE")"
  [ "$v" -le 5 ] && break
  echo "o $((v - 1))"; echo "v 1"
done
echo "s SATISFIABLE"
"#;
    let problem = toy(solver, json!({"bound_feed": true})).unwrap();
    let ctx = Recorder::new(Objective::Min).following().with_bound(10);
    solve_first(&problem, &ctx).unwrap();
    assert_eq!(ctx.claimed(), vec![9, 8, 7, 6, 5]);
    let record = ctx.record();
    assert_eq!(record["bound_feed"]["last"], 5, "{record}");
    // Without the opt-in the solver's stdin is empty and it claims nothing.
    let quiet = toy(solver, json!({})).unwrap();
    let ctx = Recorder::new(Objective::Min).following().with_bound(10);
    solve_first(&quiet, &ctx).unwrap();
    assert!(ctx.claimed().is_empty());
    assert!(ctx.record()["bound_feed"].is_null());
}

#[test]
fn arguments_and_environment_reach_the_solver() {
    let solver = r#"#!/bin/sh
echo "c args: $*"
echo "c unit=$GRIND_UNIT seed=$GRIND_SEED threads=$GRIND_THREADS"
[ "$1" = "-x" ] && [ "$2" = "seed=3" ] && [ "$3" = "$GRIND_INSTANCE" ] && [ "$4" = 3 ] || exit 1
[ "$GRIND_SEED" = 3 ] && [ "$GRIND_UNIT" = 3 ] && [ "$GRIND_THREADS" = 2 ] || exit 1
echo "o 11"; echo "v 2"
"#;
    let problem = toy(
        solver,
        json!({"units": "seeds:3..4", "threads": 2, "args": ["-x", "seed={seed}", "{instance}", "{unit}"]}),
    )
    .unwrap();
    let ctx = Recorder::new(Objective::Min);
    solve_first(&problem, &ctx).unwrap();
    assert_eq!(ctx.claimed(), vec![11]);
    // Default arguments of a units-file campaign: the instance, then the line's words.
    let solver = "#!/bin/sh\n[ \"$1\" = \"$GRIND_INSTANCE\" ] && [ \"$2 $3\" = 'a b' ] && [ $# = 3 ] || exit 1\necho 'g count 1'\n";
    let units = fixtures::add_script("ab.txt", "a  b\n", false);
    let problem = toy(solver, json!({"objective": "count", "units_file": units})).unwrap();
    let unit = first_unit(&problem);
    let outcome = problem
        .solve(&unit.payload, &Recorder::new(Objective::Count))
        .unwrap();
    assert_eq!(outcome, UnitOutcome::Count(1u32.into()));
}

#[test]
fn sanity_check_catches_broken_checkers_and_counts_units() {
    fixtures::install();
    let units = fixtures::add_script("units.txt", fixtures::UNITS, false);
    let good = toy(fixtures::SLICES, json!({"units_file": units})).unwrap();
    let params = serde_json::to_value(&good.config.params).unwrap();
    let report = crate::problems::exec::sanity_check(&params, Some("v 5\n")).unwrap();
    assert!(report.empty_solution.starts_with("invalid"), "{report:?}");
    assert_eq!((report.sample_score, report.units), (Some(1), Some(3)));
    let refused = crate::problems::exec::sanity_check(&params, Some("v 99\n")).unwrap_err();
    assert!(
        matches!(refused, ProblemError::InvalidSolution(_)),
        "{refused}"
    );
    // The generic way in, as the coordinator calls it for every problem.
    let said = good
        .self_check(Some(&json!({"model": "v 5\n"})))
        .unwrap()
        .unwrap();
    assert!(
        said.contains("the sample scores 1") && said.contains("3 units"),
        "{said}"
    );

    let mut broken = params.clone();
    broken["checker"] = json!(fixtures::add_script(
        "crash.py",
        "#!/usr/bin/env python3\nraise SystemExit(open('/nonexistent').read())\n",
        true
    ));
    let err = crate::problems::exec::sanity_check(&broken, None).unwrap_err();
    assert!(matches!(err, ProblemError::VerifierFailed(_)), "{err}");
    assert!(err.to_string().contains("empty solution"), "{err}");

    let mut no_exec = params.clone();
    no_exec["solver"] = json!([fixtures::add_script("solve.sh", fixtures::SLICES, false)]);
    let err = crate::problems::exec::sanity_check(&no_exec, None).unwrap_err();
    assert!(err.to_string().contains("not executable"), "{err}");

    let mut empty = params;
    empty["units_file"] = json!(fixtures::add_script("empty.txt", "# nothing\n", false));
    let err = crate::problems::exec::sanity_check(&empty, None).unwrap_err();
    assert!(err.to_string().contains("no units"), "{err}");
    assert!(attachments::is_digest(
        empty["units_file"].as_str().unwrap()
    ));
}

#[test]
fn a_model_streams_while_the_solver_waits_and_an_extension_follows_whole() {
    // `o 9` + `v 1`, then the solver waits for the bound on stdin: the `b 9` line comes only
    // if the model was passed on while the solver printed nothing more. Then a model whose
    // second line comes after a pause: its first line alone went out at the pause (print a
    // several-line model in one go), and the whole model follows with the same cost.
    let solver = r#"#!/bin/sh
echo 'o 9'; echo 'v 1'
read -r b v
echo "c got $v"
[ "$v" = 9 ] || exit 1
echo 'o 5'; echo 'v 0'
sleep 0.5
echo 'v 1'
echo 'c done'
"#;
    let problem = toy(solver, json!({"bound_feed": true, "unit_seconds": 10})).unwrap();
    let ctx = Recorder::new(Objective::Min).following();
    let started = std::time::Instant::now();
    solve_first(&problem, &ctx).unwrap();
    assert!(
        started.elapsed().as_secs() < 10,
        "not stuck at the time limit"
    );
    assert_eq!(ctx.claimed(), vec![9, 5, 5]);
    assert_eq!(ctx.models(), vec!["v 1\n", "v 0\n", "v 0\nv 1\n"]);
}

#[test]
fn the_sandbox_is_applied_and_recorded() {
    // Writing next to its work directory is refused where the kernel has Landlock.
    let solver = r#"#!/bin/sh
if echo x > "$GRIND_WORK_DIR/../escaped" 2>/dev/null; then echo 'c escaped'; fi
echo 'o 11'; echo 'v 2'
"#;
    let problem = toy(solver, json!({"no_network": true, "memory_mb": 256})).unwrap();
    let ctx = Recorder::new(Objective::Min);
    solve_first(&problem, &ctx).unwrap();
    let record = ctx.record();
    assert_eq!(record["network_isolated"], true, "{record}");
    assert!(
        record["sandbox"].as_str().unwrap().contains("rss 256 MiB"),
        "{record}"
    );
    assert_eq!(record["limits"]["memory_mb"], 256);
    if grind_exec::sandbox::kernel_landlock_abi().is_ok() {
        assert_eq!(record["landlock"], true, "{record}");
        assert_eq!(
            record["comments"], 0,
            "the write outside was refused: {record}"
        );
    }
    assert_eq!(ctx.claimed(), vec![11]);
}
