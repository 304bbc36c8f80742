//! A checkpoint moves between runs (and so machines): packed as a bundle after one run,
//! verified and unpacked into the next run's checkpoint directory.

mod common;

use common::*;
use grind_exec::bundle::{self, Digest};
use grind_exec::protocol::Event;

#[test]
fn a_resumed_run_starts_from_the_last_checkpoint() {
    let first = tempfile::tempdir().unwrap();
    let (events, out) = run(spec("counter.py", first.path()));
    assert_eq!(comments(&events), vec!["resumed from 0".to_string()]);
    let checkpoints = events
        .iter()
        .filter(|e| e.event == Event::Checkpoint)
        .count();
    assert_eq!(checkpoints, 5);
    assert_eq!(out.last_solution.map(|s| s.claimed), Some(95));

    // Ship the checkpoint directory as a bundle, as a worker would with its heartbeat.
    let mut packed = Vec::new();
    let digest = bundle::pack(&first.path().join("checkpoint"), &mut packed).unwrap();
    assert_eq!(digest, Digest::of(&packed));

    // Another run directory (another machine): verify, unpack, run again.
    let second = tempfile::tempdir().unwrap();
    bundle::unpack(&packed[..], &second.path().join("checkpoint"), &digest).unwrap();
    let (events, out) = run(spec("counter.py", second.path()));
    assert_eq!(comments(&events), vec!["resumed from 5".to_string()]);
    assert_eq!(out.last_solution.map(|s| s.claimed), Some(90));
    assert_eq!(
        std::fs::read_to_string(second.path().join("checkpoint/state")).unwrap(),
        "10"
    );
}
