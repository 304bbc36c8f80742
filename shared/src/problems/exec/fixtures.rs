//! Tiny example campaigns for the conformance test ([`crate::conformance`]) and tests: POSIX
//! shell solvers and a shell checker for a toy problem, packed as bundles.
//!
//! The toy problem: the instance is a modulus `m`; a solution is one line `v <x>` with
//! `0 <= x < m`; its score is `(x * x + 7) mod m`. `anytime.sh` tries values from
//! its seed (eight values) and prints each improvement (max); `slices.sh MODE INSTANCE LO HI` searches the
//! slice `LO..=HI` to the end, saving a checkpoint after every value, for the smallest score
//! (`min`) or the number of values scoring below `m / 2` (`count`).
//!
//! Bundles are installed in a cache directory under the system's temporary directory
//! (`grind-exec-fixtures`), shared by test processes: it is content-addressed, so it holds
//! each script once, and installs are atomic. [`install`] makes it the process's bundle
//! source; tests add their own scripts with [`add_script`].

use std::path::Path;
use std::sync::{Arc, OnceLock};

use serde_json::{json, Value};

use super::attached::LocalBundles;
use crate::attachments;

/// The toy problem's instance: the modulus.
pub const MODULUS: i64 = 31;

/// The checker of the toy problem.
pub const CHECKER: &str = r#"#!/bin/sh
# Toy checker: instance = modulus m; solution = one line `v <x>`, 0 <= x < m.
# Shell built-ins only (no forks): it runs for every claim.
read -r m < "$1"
n=0; x=
while IFS= read -r line || [ -n "$line" ]; do
  [ -z "$line" ] && continue
  n=$((n + 1))
  case $line in "v "*) x=${line#v } ;; esac
done < "$2"
case $x in ''|*[!0-9]*|0?*) echo "expected one line: v <x>"; exit 43 ;; esac
if [ $n -ne 1 ] || [ ${#x} -gt 9 ]; then echo "expected one line: v <x>"; exit 43; fi
if [ "$x" -ge "$m" ]; then echo "x = $x is not below $m"; exit 43; fi
echo $(( (x * x + 7) % m ))
"#;

/// An anytime solver of the toy problem (max): eight values from its seed.
pub const ANYTIME: &str = r#"#!/bin/sh
read -r m < "$1"
best=-1
i=0
while [ $i -lt 8 ]; do
  x=$(( (GRIND_SEED * 7 + i * 5) % m ))
  s=$(( (x * x + 7) % m ))
  if [ $s -gt $best ]; then best=$s; echo "o $s"; echo "v $x"; fi
  i=$((i + 1))
done
echo "s SATISFIABLE"
"#;

/// An exhaustive slice search of the toy problem (min or count), checkpointing every value.
pub const SLICES: &str = r#"#!/bin/sh
# slices.sh MODE INSTANCE LO HI
mode=$1; read -r m < "$2"; lo=$3; hi=$4
trap 'echo "c stopped"; exit 0' TERM
state="$GRIND_CHECKPOINT_DIR/state"
x=$lo; best=-1; count=0
if [ -f "$state" ]; then read x best count < "$state"; echo "c resumed at $x"; fi
while [ $x -le $hi ]; do
  s=$(( (x * x + 7) % m ))
  if [ $mode = min ] && { [ $best -lt 0 ] || [ $s -lt $best ]; }; then
    best=$s; echo "o $s"; echo "v $x"
  fi
  if [ $s -lt $(( m / 2 )) ]; then count=$((count + 1)); fi
  x=$((x + 1))
  echo "$x $best $count" > "$state.tmp" && mv "$state.tmp" "$state"
  echo "g checkpoint"
  p=$(( (x - lo) * 1000 / (hi - lo + 1) ))
  if [ $p -ge 1000 ]; then echo "g progress 1"; else printf 'g progress 0.%03d\n' $p; fi
done
if [ $mode = count ]; then echo "g count $count"; fi
echo "s SATISFIABLE"
"#;

/// The units file of the slice examples: `0..=11` in three slices.
pub const UNITS: &str = "# lo hi\n0 3\n4 7\n\n8 11\n";

/// The local bundle cache the fixtures live in.
pub fn bundles() -> &'static LocalBundles {
    static BUNDLES: OnceLock<LocalBundles> = OnceLock::new();
    BUNDLES.get_or_init(|| {
        let root = std::env::temp_dir().join("grind-exec-fixtures");
        LocalBundles::open(root).expect("the fixture bundle cache can be created")
    })
}

/// Makes the fixtures' cache this process's bundle source (once).
pub fn install() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| attachments::install(Arc::new(bundles().clone())));
}

/// Packs `text` as a one-file bundle named `name` (executable when asked) and returns its
/// digest.
pub fn add_script(name: &str, text: &str, executable: bool) -> String {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("the script is written");
    let mode = if executable { 0o755 } else { 0o644 };
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(mode))
        .expect("chmod");
    add_path(&path)
}

/// Packs the file or directory at `path` and returns its digest.
pub fn add_path(path: &Path) -> String {
    bundles().add(path).expect("the fixture packs")
}

/// The parameters of a toy-problem campaign (bundles in this process's fixture cache, see
/// [`install`]): the shell script `solver` with the toy checker and instance, one seed,
/// `min`, 30 s units and 1 s grace, with `extra` parameters over these.
pub fn toy_params(solver: &str, extra: Value) -> Value {
    install();
    let mut params = json!({
        "solver": [add_script("solve.sh", solver, true)],
        "checker": add_script("check.sh", CHECKER, true),
        "instance": add_script("instance.txt", &format!("{MODULUS}\n"), false),
        "units": "seeds:1",
        "unit_seconds": 30,
        "grace_seconds": 1,
    });
    for (k, v) in extra.as_object().expect("an object") {
        params[k] = v.clone();
    }
    if params.get("units_file").is_some_and(|u| !u.is_null()) {
        params["units"] = Value::Null;
    }
    params
}

/// The seed of a seed unit's run, from its provenance record, once the record shows a clean
/// run that said so: exit code 0 and `seed N ran here` on stderr (as tests' solvers print).
pub fn seed_of_clean_run(record: &Value) -> Result<u64, String> {
    let seed: u64 = record["unit"]
        .as_str()
        .and_then(|u| u.strip_prefix("seed "))
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("no seed unit in {record}"))?;
    if record["exit"] != "exit code 0" {
        return Err(format!("seed {seed} did not exit with 0: {record}"));
    }
    let tail = record["stderr_tail"].as_str().unwrap_or_default();
    if !tail.contains(&format!("seed {seed} ran here")) {
        return Err(format!("seed {seed} did not say it ran: {record}"));
    }
    Ok(seed)
}

/// The example parameters ([`crate::registry::ProblemDef::examples`]).
pub fn example_params() -> Vec<Value> {
    let checker = add_script("check.sh", CHECKER, true);
    let instance = add_script("instance.txt", &format!("{MODULUS}\n"), false);
    let anytime = add_script("anytime.sh", ANYTIME, true);
    let slices = add_script("slices.sh", SLICES, true);
    let units = add_script("units.txt", UNITS, false);
    let common = |solver: &str| {
        json!({
            "solver": [solver],
            "checker": checker,
            "instance": instance,
            "unit_seconds": 20,
            "grace_seconds": 2,
        })
    };
    let with = |mut base: Value, extra: Value| {
        for (k, v) in extra.as_object().expect("an object") {
            base[k] = v.clone();
        }
        base
    };
    vec![
        with(
            common(&anytime),
            json!({"objective": "max", "units": "seeds:2"}),
        ),
        with(
            common(&slices),
            json!({"objective": "min", "units_file": units, "args": ["min", "{instance}", "{unit}"]}),
        ),
        with(
            common(&slices),
            json!({"objective": "count", "units_file": units, "args": ["count", "{instance}", "{unit}"]}),
        ),
    ]
}
