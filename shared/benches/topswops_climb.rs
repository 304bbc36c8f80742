//! Climb rounds in-process, from a stored deck: best versus rounds and CPU time, without
//! the coordinator (one thread; units of a round run one after another).
//!
//! `cargo bench -p grind-shared --bench topswops_climb -- DECK.json ROUNDS [UNITS [BUDGET]]`
//! (DECK.json: a solution document `{"deck": [...]}`, e.g. a campaign's best).

use grind_shared::problem::{LocalContext, Problem, UnitOutcome, Verification};
use grind_shared::problems::topswops::{Topswops, TopswopsParams};
use grind_shared::registry::ProblemDef;
use serde_json::{json, Value};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let Some(path) = args.first() else {
        eprintln!("usage: topswops_climb DECK.json ROUNDS [UNITS [BUDGET]]");
        return;
    };
    let mut best: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let rounds: usize = args.get(1).map_or(10, |a| a.parse().unwrap());
    let n = best["deck"].as_array().unwrap().len();
    let mut params = json!({"n": n, "heuristic": true, "strategy": "climb", "rounds": rounds});
    if let Some(units) = args.get(2) {
        params["units"] = json!(units.parse::<u32>().unwrap());
    }
    if let Some(budget) = args.get(3) {
        params["budget"] = json!(budget.parse::<u32>().unwrap());
    }
    let params: TopswopsParams = serde_json::from_value(params).unwrap();
    let problem = Topswops::from_params(params).unwrap();
    let mut score = problem.score(&best).unwrap();
    best["flips"] = json!(score);
    println!("start {score} (n = {n})");
    let started = Instant::now();
    let mut cursor: Option<Vec<u8>> = None;
    for round in 0.. {
        let batch = problem
            .split_from(cursor.as_deref(), 100_000, Some(&best))
            .unwrap();
        if batch.units.is_empty() {
            break;
        }
        for unit in &batch.units {
            if let UnitOutcome::Searched {
                best: Some(found), ..
            } = problem
                .solve(&unit.payload, &LocalContext::default())
                .unwrap()
            {
                if found.score > score {
                    score = problem.score(&found.solution).unwrap();
                    best = found.solution;
                }
            }
        }
        println!(
            "round {round} {:.1} s best {score}",
            started.elapsed().as_secs_f64()
        );
        cursor = batch.next;
    }
}
