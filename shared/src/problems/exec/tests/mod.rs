//! Solve and score tests with real solver and checker processes (shell and Python scripts,
//! and the repository's examples), served by the fixtures' local bundle cache.

mod examples;
mod hostile;
mod protocol;

use std::sync::Mutex;

use serde_json::{json, Value};

use super::{fixtures, Exec};
use crate::problem::{
    Objective, Placement, Presentation, Scored, SolveContext, UnitOutcome, UnitSpec, Verification,
};
use crate::problem::{Problem, ProblemError};
use crate::registry::ProblemDef;

/// A [`SolveContext`] that records everything; with `follow`, the bound follows the unit's
/// own improvements (as on a worker).
pub(super) struct Recorder {
    objective: Objective,
    follow: bool,
    resume: Option<Vec<u8>>,
    bound: Mutex<Option<i64>>,
    stop_after_checkpoints: Option<usize>,
    pub improvements: Mutex<Vec<Scored>>,
    pub checkpoints: Mutex<Vec<Vec<u8>>>,
    pub provenance: Mutex<Vec<Value>>,
    pub progress: Mutex<Vec<f64>>,
    pub child_cpu: Mutex<f64>,
}

impl Recorder {
    pub fn new(objective: Objective) -> Recorder {
        Recorder {
            objective,
            follow: false,
            resume: None,
            bound: Mutex::new(None),
            stop_after_checkpoints: None,
            improvements: Mutex::default(),
            checkpoints: Mutex::default(),
            provenance: Mutex::default(),
            progress: Mutex::default(),
            child_cpu: Mutex::default(),
        }
    }
    pub fn following(mut self) -> Recorder {
        self.follow = true;
        self
    }
    pub fn with_bound(self, bound: i64) -> Recorder {
        *self.bound.lock().unwrap() = Some(bound);
        self
    }
    pub fn resuming(mut self, cursor: Vec<u8>) -> Recorder {
        self.resume = Some(cursor);
        self
    }
    pub fn stopping_after(mut self, checkpoints: usize) -> Recorder {
        self.stop_after_checkpoints = Some(checkpoints);
        self
    }
    pub fn claimed(&self) -> Vec<i64> {
        self.improvements
            .lock()
            .unwrap()
            .iter()
            .map(|s| s.score)
            .collect()
    }
    pub fn models(&self) -> Vec<String> {
        let found = self.improvements.lock().unwrap();
        found
            .iter()
            .map(|s| s.solution["model"].as_str().unwrap().to_string())
            .collect()
    }
    /// The one provenance record.
    pub fn record(&self) -> Value {
        let records = self.provenance.lock().unwrap();
        assert_eq!(
            records.len(),
            1,
            "one provenance record per run: {records:?}"
        );
        records[0].clone()
    }
}

impl SolveContext for Recorder {
    fn resume_cursor(&self) -> Option<&[u8]> {
        self.resume.as_deref()
    }
    fn bound(&self) -> Option<i64> {
        *self.bound.lock().unwrap()
    }
    fn improve(&self, found: Scored) {
        if self.follow {
            let mut bound = self.bound.lock().unwrap();
            if self.objective.improves(found.score, *bound) {
                *bound = Some(found.score);
            }
        }
        self.improvements.lock().unwrap().push(found);
    }
    fn progress(&self, _nodes: u64, fraction: Option<f64>) {
        self.progress.lock().unwrap().extend(fraction);
    }
    fn checkpoint(&self, cursor: Vec<u8>) {
        self.checkpoints.lock().unwrap().push(cursor);
    }
    fn stop_requested(&self) -> bool {
        self.stop_after_checkpoints
            .is_some_and(|n| self.checkpoints.lock().unwrap().len() >= n)
    }
    fn provenance(&self, record: Value) {
        self.provenance.lock().unwrap().push(record);
    }
    fn child_cpu(&self, seconds: f64) {
        *self.child_cpu.lock().unwrap() += seconds;
    }
}

/// The toy problem's instance and checker ([`fixtures`]) with `solver` (a shell script) and
/// `extra` parameters (seeds:1, min, unless given).
pub(super) fn toy(solver: &str, extra: Value) -> Result<Exec, ProblemError> {
    let params = fixtures::toy_params(solver, extra);
    Exec::from_params(serde_json::from_value(params).unwrap())
}

/// The first unit of `problem`.
pub(super) fn first_unit(problem: &Exec) -> UnitSpec {
    problem.split(None, 1).unwrap().units.remove(0)
}

/// Solves the first unit with `ctx`.
pub(super) fn solve_first(problem: &Exec, ctx: &Recorder) -> Result<UnitOutcome, ProblemError> {
    problem.solve(&first_unit(problem).payload, ctx)
}

#[test]
fn the_campaign_describes_itself() {
    let seeds = toy(fixtures::ANYTIME, json!({"objective": "max"})).unwrap();
    assert_eq!(seeds.objective(), Objective::Max);
    assert!(!seeds.exhaustive(), "seed runs are anytime");
    assert!(!seeds.coverage_checked());
    let needs = seeds.requirements();
    assert!(needs.native_code);
    assert_eq!(needs.platforms, None);
    let units = fixtures::add_script("units.txt", fixtures::UNITS, false);
    let split = toy(fixtures::SLICES, json!({"units_file": units})).unwrap();
    assert!(split.exhaustive(), "a units file is an exhaustive split");
    assert!(!split.coverage_checked(), "but grind cannot check it");
    let batch = split.split(None, 2).unwrap();
    assert_eq!(batch.units[0].label, "line 2: 0 3");
    let rest = split.split(batch.next.as_deref(), 2).unwrap();
    assert_eq!((rest.units.len(), rest.next), (1, None));
    assert_eq!(rest.units[0].label, "line 5: 8 11");

    let digest = fixtures::add_script("solve.sh", fixtures::ANYTIME, true);
    let mut params = serde_json::to_value(&seeds.config.params).unwrap();
    params["solver"] = json!([
        format!("aarch64-unknown-linux-gnu={digest}"),
        format!("riscv64gc-unknown-linux-gnu={digest}"),
    ]);
    let elsewhere = Exec::from_params(serde_json::from_value(params).unwrap()).unwrap();
    assert_eq!(
        elsewhere.requirements().platforms,
        Some(vec![
            "aarch64-unknown-linux-gnu".to_string(),
            "riscv64gc-unknown-linux-gnu".to_string()
        ])
    );
    if !crate::placement::PLATFORM.starts_with("aarch64-")
        && !crate::placement::PLATFORM.starts_with("riscv64gc-")
    {
        let err = solve_first(&elsewhere, &Recorder::new(Objective::Max)).unwrap_err();
        assert!(err.to_string().contains("no variant for platform"), "{err}");
    }
}

#[test]
fn the_cpu_of_the_solvers_children_is_reported() {
    // The shell solver burns half a second of CPU (not of wall time) in a child process it
    // waits for; neither the solving thread's clock nor the solver's own rusage sees it.
    let solver = r#"#!/bin/sh
python3 -c '
import time
t = time.process_time()
while time.process_time() - t < 0.5:
    pass
'
echo 'o 1'; echo 'v 5'
"#;
    let problem = toy(solver, json!({})).unwrap();
    let ctx = Recorder::new(Objective::Min);
    solve_first(&problem, &ctx).unwrap();
    let reported = *ctx.child_cpu.lock().unwrap();
    assert!(reported >= 0.45, "child CPU reported: {reported} s");
    let cpu_ms = ctx.record()["cpu_ms"].as_u64().unwrap();
    assert!(cpu_ms >= 450, "provenance cpu_ms: {cpu_ms}");
}

#[test]
fn render_writes_the_model_and_import_reads_it_back() {
    let problem = toy(fixtures::ANYTIME, json!({})).unwrap();
    let doc = json!({"model": "v 5\n"});
    assert_eq!(problem.render("1", Some(&doc)), "v 5\n");
    assert_eq!(problem.parse_submission("v 5\n").unwrap(), doc);
    assert_eq!(
        problem
            .parse_submission("c x\no 1\nv 5\ns SATISFIABLE\n")
            .unwrap(),
        doc
    );
    assert_eq!(problem.render("14", None), "14\n");
    // The checker scores the imported text.
    assert_eq!(problem.score(&doc).unwrap(), 1);
}
