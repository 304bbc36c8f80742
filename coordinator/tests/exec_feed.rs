//! The bound feed of an exec campaign crosses workers: a solver on one `grind-worker`
//! receives, as a `b` line on its stdin, the score a solver printed on another (issue 29,
//! "a solver on one worker is seen receiving the bound found on the other"), with real
//! `grind serve` and `grind-worker --allow-exec` processes on loopback.

mod common;

use common::cluster::Cluster;
use common::exec::{add_exec_campaign, script, start_exec_worker};
use common::processes::Proc;
use common::waiting::wait_for;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(120);

/// Each unit claims 100 + its seed, then waits up to 6 s for a `b` line above its own score
/// (another unit's) and says on stderr what it received (kept in its provenance).
const SOLVER: &str = r#"#!/bin/bash
v=$((100 + GRIND_SEED))
echo "o $v"; echo "v $v"
SECONDS=0
while [ $SECONDS -lt 6 ]; do
  if read -t 1 -r tag b; then
    if [ "$tag" = b ] && [ "$b" -gt "$v" ]; then echo "received $b" >&2; exit 0; fi
  elif [ $? -le 128 ]; then
    sleep 0.2 # end of input (not a timeout): wait out the time
  fi
done
"#;

/// The score is the `v` value (0 for the empty solution `add` checks with).
const CHECKER: &str = r#"#!/bin/sh
x=
while IFS= read -r line; do case $line in "v "*) x=${line#v } ;; esac; done < "$2"
echo "${x:-0}"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_solver_receives_the_bound_found_on_another_worker() {
    let mut cluster = Cluster::start(5_000, &[]).await;
    let files = tempfile::tempdir().unwrap();
    let workers: Vec<Proc> = ["a", "b"]
        .iter()
        .map(|name| {
            let cache = files.path().join(format!("cache-{name}"));
            start_exec_worker(&cluster.coord.url, name, &cache)
        })
        .collect();
    // Both ask for work before there is any, so the units are shared out between them and
    // two solvers run at once, one on each worker (one thread each).
    let admin = cluster.admin.clone();
    wait_for("both workers registered", WAIT, || {
        let mut admin = admin.clone();
        async move { (common::campaigns::workers(&mut admin).await.len() == 2).then_some(()) }
    })
    .await;
    let campaign = add_exec_campaign(
        &cluster.coord.url,
        &[
            "--solver",
            &script(files.path(), "solve.sh", SOLVER),
            "--checker",
            &script(files.path(), "check.sh", CHECKER),
            "--instance",
            &script(files.path(), "instance.txt", "none\n"),
            "--objective",
            "max",
            "--units",
            "seeds:4",
            "--unit-seconds",
            "30",
            "--grace-seconds",
            "1",
            "--bound-feed",
            "--verify-rate",
            "0",
        ],
    );
    let done = cluster.wait_finished(campaign, WAIT).await;
    assert_eq!((done.state.as_str(), done.value.as_str()), ("done", "103"));

    let status = cluster.status(campaign).await;
    let worker_of_value = |value: &str| {
        status
            .results
            .iter()
            .find(|r| r.value == value)
            .map(|r| common::campaigns::provenance(r).worker_id)
    };
    let mut crossed = Vec::new();
    for result in &status.results {
        let record: serde_json::Value = serde_json::from_str(&result.provenance_json).unwrap();
        let tail = record["stderr_tail"].as_str().unwrap_or_default();
        let Some(got) = tail.lines().find_map(|l| l.strip_prefix("received ")) else {
            continue;
        };
        let here = common::campaigns::provenance(result).worker_id;
        let from = worker_of_value(got.trim()).expect("a received bound is a unit's score");
        if from != here {
            crossed.push((result.value.clone(), got.trim().to_string()));
        }
    }
    assert!(
        !crossed.is_empty(),
        "no solver received a score found on the other worker: {:?}",
        status
            .results
            .iter()
            .map(|r| (&r.value, &r.provenance_json))
            .collect::<Vec<_>>()
    );
    drop(workers);
}
