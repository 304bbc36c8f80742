//! The repository's examples (examples/labs in Python, examples/golomb in C) as exec
//! campaigns, through the generic local driver: found, checked by their own checkers, and
//! equal to the published values (OEIS A102780, A003022).

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::local::{self, Drive};
use crate::problems::exec::{fixtures, Exec};
use crate::registry::ProblemDef;

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn text_bundle(name: &str, text: &str) -> String {
    fixtures::add_script(name, text, false)
}

#[test]
fn labs_in_python_finds_the_published_optimum() {
    fixtures::install();
    let labs = examples_dir().join("labs");
    // A102780(13) = 6: the solver stops when it reaches the target (`s OPTIMUM FOUND`).
    let params = json!({
        "solver": [fixtures::add_path(&labs.join("solve.py"))],
        "checker": fixtures::add_path(&labs.join("check.py")),
        "instance": text_bundle("labs-13.txt", "13\ntarget 6\n"),
        "objective": "min",
        "units": "seeds:2",
        "unit_seconds": 60,
        "bound_feed": true,
    });
    let problem = Exec::from_params(serde_json::from_value(params).unwrap()).unwrap();
    let run = local::run(&problem, &Drive::default()).unwrap();
    assert_eq!(run.best.map(|b| b.score), Some(6));
    assert_eq!(run.units, 2);
}

#[test]
fn golomb_in_c_over_a_units_file_finds_the_published_optimum() {
    fixtures::install();
    let golomb = examples_dir().join("golomb");
    let build = tempfile::tempdir().unwrap();
    let binary = build.path().join("golomb");
    let cc = std::process::Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&binary)
        .arg(golomb.join("golomb.c"))
        .status()
        .expect("cc runs (examples/test.sh needs it too)");
    assert!(cc.success());
    let instance = build.path().join("8.txt");
    std::fs::write(&instance, "8\n").unwrap();
    let units = std::process::Command::new(&binary)
        .arg("--units")
        .arg(&instance)
        .output()
        .unwrap();
    assert!(units.status.success());
    let units_file = build.path().join("units-8.txt");
    std::fs::write(&units_file, &units.stdout).unwrap();
    let params = json!({
        "solver": [fixtures::add_path(&binary)],
        "checker": fixtures::add_path(&golomb.join("check.py")),
        "instance": fixtures::add_path(&instance),
        "objective": "min",
        "units_file": fixtures::add_path(&units_file),
        "bound_feed": true,
    });
    let problem = Exec::from_params(serde_json::from_value(params).unwrap()).unwrap();
    let run = local::run(&problem, &Drive::default()).unwrap();
    // A003022(8) = 34: the shortest 8-mark Golomb ruler.
    assert_eq!(run.best.map(|b| b.score), Some(34));
    let lines = String::from_utf8(units.stdout).unwrap();
    assert_eq!(
        run.units,
        lines.lines().filter(|l| !l.trim().is_empty()).count()
    );
}
