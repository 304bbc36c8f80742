//! Heuristic campaigns driven locally: stages, units, verification and resume, checked
//! against an independent greedy written here with the plain replay.

use super::*;
use crate::local::{self, Drive};
use crate::problem::{LocalContext, Presentation, Problem, Verification};
use crate::problems::topswops::heads::to_deck;
use crate::problems::topswops::replay::replay_flips;
use crate::problems::topswops::{Topswops, TopswopsParams};
use crate::registry::ProblemDef;
use proptest::prelude::*;

fn heuristic(n: u32, k: u32, units: u32) -> Topswops {
    with(json!({"n": n, "k": k, "units": units}))
}

/// A heuristic campaign with these parameters (plus `"heuristic": true`).
fn with(mut params: Value) -> Topswops {
    params["heuristic"] = json!(true);
    Topswops::from_params(serde_json::from_value(params).unwrap()).unwrap()
}

/// The score of heads `prefix ++ [1] ++ unused`, by building the deck and replaying it.
fn grown_score(n: usize, prefix: &[Card]) -> u64 {
    let mut heads = prefix.to_vec();
    heads.push(1);
    heads.extend((2..=n as Card).filter(|v| !prefix.contains(v)));
    replay_flips(&to_deck(&heads).unwrap()).unwrap()
}

/// Greedy block growth by brute force: each stage tries every order of the next k values
/// (first maximum in lexicographic order wins); returns the score after each stage.
fn independent_greedy(n: usize, k: usize) -> Vec<u64> {
    let mut prefix: Vec<Card> = Vec::new();
    let mut scores = Vec::new();
    while prefix.len() < n - 1 {
        let next: Vec<Card> = (prefix.len() + 2..=(prefix.len() + 1 + k).min(n))
            .map(|v| v as Card)
            .collect();
        let mut order = next.clone();
        let mut best: Option<(u64, Vec<Card>)> = None;
        loop {
            let mut candidate = prefix.clone();
            candidate.extend(&order);
            let score = grown_score(n, &candidate);
            if best.as_ref().is_none_or(|(b, _)| score > *b) {
                best = Some((score, candidate));
            }
            // Next permutation in lexicographic order.
            let Some(i) = (0..order.len().saturating_sub(1))
                .rev()
                .find(|&i| order[i] < order[i + 1])
            else {
                break;
            };
            let j = (i + 1..order.len())
                .rev()
                .find(|&j| order[j] > order[i])
                .unwrap();
            order.swap(i, j);
            order[i + 1..].reverse();
        }
        let (score, grown) = best.unwrap();
        prefix = grown;
        scores.push(score);
    }
    scores
}

/// Runs a campaign locally with the generic driver, stage by stage (each stage split whole:
/// a stage is far below 1000 units), every unit solved with the incumbent's score as bound
/// and every result verified; returns the best score after each stage (once there is one)
/// and the final solution.
fn drive(problem: &Topswops, max_stages: usize) -> (Vec<i64>, Option<Value>) {
    let run = local::run(
        problem,
        &Drive {
            batch: 1_000,
            max_stages: Some(max_stages),
            ..Drive::default()
        },
    )
    .unwrap();
    // Every stage but the last ends at a boundary the coordinator waits at.
    assert!(
        run.waits + 1 >= run.stage_bests.len(),
        "a stage is split whole at 1000 units"
    );
    let per_stage = run.stage_bests.into_iter().flatten().collect();
    (per_stage, run.best.map(|b| b.solution))
}

#[test]
fn block_growth_matches_an_independent_greedy_stage_by_stage() {
    for (n, k, units) in [(13usize, 4usize, 3u32), (17, 4, 5), (11, 3, 1)] {
        let problem = heuristic(n as u32, k as u32, units);
        let expected = independent_greedy(n, k);
        let (scores, _) = drive(&problem, expected.len());
        let expected: Vec<i64> = expected.iter().map(|&s| s as i64).collect();
        assert_eq!(scores, expected, "n = {n}, k = {k}");
    }
}

#[test]
fn polish_and_climb_rounds_never_lose_ground_and_the_campaign_ends() {
    let problem = with(json!({"n": 13, "k": 3, "units": 4, "rounds": 2, "budget": 300}));
    let (scores, best) = drive(&problem, 200);
    assert!(scores.windows(2).all(|w| w[1] >= w[0]));
    let best = best.unwrap();
    let deck = problem.heuristic.as_ref().unwrap().deck_of(&best).unwrap();
    // Every card reaches the top once growth is over.
    assert_eq!(
        crate::problems::topswops::heads::visited(&to_heads(&deck).unwrap()),
        13
    );
    // f(13) = 80 (OEIS A000375) bounds every heuristic deck.
    assert!(*scores.last().unwrap() <= 80);
    assert!(
        scores.len() < 200,
        "polishing stops after {MAX_STALL} idle rounds, climbing after --rounds"
    );
}

#[test]
fn without_polish_the_campaign_ends_when_growth_does() {
    let params: TopswopsParams = serde_json::from_value(json!({
        "n": 13, "heuristic": true, "k": 4, "units": 2, "polish_stall": 0
    }))
    .unwrap();
    let problem = Topswops::from_params(params).unwrap();
    let (scores, _) = drive(&problem, 100);
    // One entry per growth stage, plus the final (empty) split that ends the campaign.
    let greedy: Vec<i64> = independent_greedy(13, 4)
        .iter()
        .map(|&s| s as i64)
        .collect();
    assert_eq!(scores[..scores.len() - 1], greedy[..]);
    assert_eq!(scores.len(), greedy.len() + 1);

    // With --rounds, climb rounds follow growth directly (no polishing).
    let climbing = with(json!({"n": 13, "k": 4, "units": 2, "polish_stall": 0,
                               "rounds": 3, "budget": 50}));
    let growth = greedy.len();
    let (scores, _) = drive(&climbing, 100);
    assert_eq!(scores[..growth], greedy[..]);
    assert_eq!(scores.len(), growth + 3 + 1);
    let batch = climbing.split_from(None, 10, None).unwrap();
    assert!(batch.units[0].label.starts_with("grow stage 0"));
}

#[test]
fn a_stopped_unit_resumes_from_its_checkpoint_with_the_same_result() {
    let problem = heuristic(14, 6, 1);
    let batch = problem.split_from(None, 10, None).unwrap();
    let payload = &batch.units[0].payload;
    let whole = match problem.solve(payload, &LocalContext::default()).unwrap() {
        UnitOutcome::Searched { best: Some(b), .. } => b.score,
        other => panic!("{other:?}"),
    };
    // Asked to stop from the start: checkpoints after 256 orders and stops.
    let first = LocalContext::stopping_after(0);
    assert_eq!(
        problem.solve(payload, &first).unwrap(),
        UnitOutcome::Stopped
    );
    let cursor = first.checkpoints().pop().expect("a checkpoint");
    let reported = first.improvements().iter().map(|s| s.score).max();
    let second = LocalContext::resuming(cursor);
    let rest = match problem.solve(payload, &second).unwrap() {
        UnitOutcome::Searched { best, .. } => best.map(|b| b.score),
        other => panic!("{other:?}"),
    };
    assert_eq!(reported.max(rest), Some(whole));
}

#[test]
fn bad_parameters_and_solutions_are_refused() {
    let build = |v: Value| {
        serde_json::from_value::<TopswopsParams>(v)
            .map_err(|e| e.to_string())
            .and_then(|p| {
                Topswops::from_params(p)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            })
    };
    assert!(build(json!({"n": 1, "heuristic": true})).is_err());
    assert!(build(json!({"heuristic": true}))
        .unwrap_err()
        .contains("--n"));
    assert!(build(json!({})).unwrap_err().contains("--n"));
    assert!(build(json!({"n": 50_000, "heuristic": true})).is_err());
    assert!(build(json!({"n": 20, "heuristic": true, "k": 20})).is_err());
    assert!(build(json!({"n": 20, "heuristic": true, "k": 5, "pool": 4})).is_err());
    assert!(build(json!({"n": 20, "k": 5}))
        .unwrap_err()
        .contains("--heuristic"));
    assert!(build(json!({"n": 20, "heuristic": true, "target": 3})).is_err());
    assert!(build(json!({"n": 20, "heuristic": true, "window": 1})).is_err());
    assert!(build(json!({"n": 200, "heuristic": true, "k": 6, "pool": 9})).is_ok());

    let problem = heuristic(5, 2, 1);
    assert_eq!(problem.score(&json!({"deck": [3, 1, 4, 5, 2]})), Ok(7));
    assert_eq!(
        problem.score(&json!({"deck": [3, 1, 4, 5, 2], "flips": 7})),
        Ok(7)
    );
    for bad in [
        json!({"deck": [3, 1, 4, 5, 2], "flips": 8}),
        json!({"deck": [3, 1, 4, 5]}),
        json!({"deck": [3, 1, 4, 5, 5]}),
        json!({"deck": [3, 1, 4, 5, 6]}),
        json!({"deck": [3, 1, 4, 5, -2]}),
        json!({"cards": [3, 1, 4, 5, 2]}),
        json!([3, 1, 4, 5, 2]),
    ] {
        assert!(problem.score(&bad).is_err(), "{bad}");
    }
    assert!(problem
        .verify_sample(&json!({"deck": [3, 1, 4, 5, 2]}))
        .is_err());
}

#[test]
fn submissions_render_and_parse_back() {
    let problem = heuristic(5, 2, 1);
    let solution = json!({"deck": [3, 1, 4, 5, 2], "flips": 7});
    let line = problem.render("7", Some(&solution));
    assert_eq!(line, "3,1,4,5,2\n");
    let parsed = problem.parse_submission(&line).unwrap();
    assert_eq!(problem.score(&parsed), Ok(7));
    assert_eq!(problem.parse_submission("3 1 4 5 2").unwrap(), parsed);
    assert!(problem.parse_submission("3,x,4").is_err());
    assert!(problem.parse_submission("   ").is_err());
}

#[test]
fn the_primes_contest_is_a_family_of_25_campaigns() {
    assert_eq!(contest_primes().len(), 25);
    let params: TopswopsParams =
        serde_json::from_value(json!({"contest": "primes", "k": 6})).unwrap();
    let members = Topswops::family(&params).unwrap().unwrap();
    assert_eq!(members.len(), 25);
    for member in &members {
        let built = Topswops::from_params(member.clone()).unwrap();
        assert_eq!(built.exhaustive(), member.n <= 11, "n = {}", member.n);
        if member.n > 11 {
            assert_eq!(built.params.heuristic.k, Some(6));
        }
    }
    // The family itself is not a campaign.
    assert!(Topswops::from_params(params).is_err());
}

proptest! {
    #[test]
    fn hostile_payloads_and_cursors_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..40),
    ) {
        let problem = heuristic(12, 3, 2);
        let _ = problem.solve(&bytes, &LocalContext::default());
        let _ = problem.waits_at(&bytes);
        let _ = problem.split_from(Some(&bytes), 4, None);
        let ctx = LocalContext::resuming(bytes.clone());
        let unit = problem.split_from(None, 1, None).unwrap().units.remove(0);
        let _ = problem.solve(&unit.payload, &ctx);
    }
}

/// The flips of a solution by plain replay.
fn replayed(solution: &Value) -> u64 {
    let deck: Vec<Card> = serde_json::from_value(solution["deck"].clone()).unwrap();
    replay_flips(&deck).unwrap()
}

/// The units of the next stage after `cursor` (all of them), with `incumbent`.
fn next_units(problem: &Topswops, cursor: Option<&[u8]>, incumbent: &Value) -> SplitBatch {
    problem.split_from(cursor, 1_000, Some(incumbent)).unwrap()
}

/// Solves a unit to the end in a fresh context.
fn solve_whole(problem: &Topswops, payload: &[u8]) -> Option<Scored> {
    match problem.solve(payload, &LocalContext::default()).unwrap() {
        UnitOutcome::Searched { best, .. } => best,
        other => panic!("{other:?}"),
    }
}

#[test]
fn climb_units_are_deterministic_beat_their_start_and_resume_exactly() {
    let problem = with(json!({"n": 60, "strategy": "climb", "units": 3, "budget": 4000}));
    let start = json!({"deck": to_deck(&(2..=60).chain([1]).collect::<Vec<Card>>()).unwrap()});
    let start_flips = replayed(&start);
    let batch = next_units(&problem, None, &start);
    assert_eq!(batch.units.len(), 3);
    for unit in &batch.units {
        assert!(
            unit.label.starts_with("climb round 0 seed 0x"),
            "{}",
            unit.label
        );
        assert!(unit.label.ends_with("budget 4000 moves"), "{}", unit.label);
    }
    let labels: std::collections::HashSet<_> = batch.units.iter().map(|u| &u.label).collect();
    assert_eq!(labels.len(), 3, "every unit has its own seed");
    for unit in &batch.units {
        let first = solve_whole(&problem, &unit.payload).expect("2..n then 1 is easy to beat");
        let again = solve_whole(&problem, &unit.payload).unwrap();
        assert_eq!(first, again, "same unit twice, same deck");
        assert_eq!(replayed(&first.solution), first.score as u64);
        assert!(first.score as u64 > start_flips);
        // The result does not depend on the bound the unit is given.
        let mut bounded = LocalContext::default();
        bounded.fixed_bound = Some(i64::MAX - 1);
        match problem.solve(&unit.payload, &bounded).unwrap() {
            UnitOutcome::Searched { best, .. } => assert_eq!(best, Some(first.clone())),
            other => panic!("{other:?}"),
        }
        // Stopped at once, then resumed from the checkpoint: the same deck in the end.
        let stopped = LocalContext::stopping_after(0);
        assert_eq!(
            problem.solve(&unit.payload, &stopped).unwrap(),
            UnitOutcome::Stopped
        );
        let cursor = stopped.checkpoints().pop().expect("a checkpoint");
        let resumed = LocalContext::resuming(cursor.clone());
        match problem.solve(&unit.payload, &resumed).unwrap() {
            UnitOutcome::Searched { best, .. } => assert_eq!(best, Some(first)),
            other => panic!("{other:?}"),
        }
        // A forged checkpoint (other heads) is refused.
        let mut forged = cursor;
        let last = forged.len() - 1;
        forged[last] ^= 1;
        assert!(problem
            .solve(&unit.payload, &LocalContext::resuming(forged))
            .is_err());
    }
}

#[test]
fn climb_rounds_go_on_after_idle_rounds_until_the_round_limit() {
    // Tiny budgets: many rounds find nothing, and the campaign goes on regardless.
    let rounds = 12;
    let problem = with(
        json!({"n": 20, "strategy": "climb", "units": 2, "budget": 3,
                              "rounds": rounds}),
    );
    let heads: Vec<Card> = (2..=20).chain([1]).collect();
    let mut best = json!({"deck": to_deck(&heads).unwrap()});
    best["flips"] = json!(replayed(&best));
    let mut cursor: Option<Vec<u8>> = None;
    let mut seen_rounds = 0;
    let mut idle_rounds = 0;
    let mut seeds = std::collections::HashSet::new();
    loop {
        let batch = next_units(&problem, cursor.as_deref(), &best);
        if batch.units.is_empty() {
            assert!(batch.next.is_none());
            break;
        }
        seen_rounds += 1;
        let before = best["flips"].as_u64().unwrap();
        for unit in &batch.units {
            assert!(seeds.insert(unit.label.clone()), "seeds change every round");
            if let Some(found) = solve_whole(&problem, &unit.payload) {
                assert!(
                    found.score as u64 > before,
                    "a unit only reports a better deck"
                );
                if found.score > best["flips"].as_i64().unwrap() {
                    best = found.solution;
                }
            }
        }
        let after = best["flips"].as_u64().unwrap();
        assert!(after >= before, "a round never loses ground");
        if after == before {
            idle_rounds += 1;
        }
        cursor = batch.next;
    }
    assert_eq!(seen_rounds, rounds as usize);
    assert!(
        idle_rounds > 0,
        "with 3 moves a unit, some rounds find nothing"
    );
    assert!(best["flips"].as_u64().unwrap() > replayed(&json!({"deck": to_deck(&heads).unwrap()})));
}

#[test]
fn a_block_campaign_climbs_after_polishing_and_keeps_improving() {
    // n = 40: growth, polish rounds, then climb rounds until the limit; the climb rounds
    // raise the best beyond where polishing stopped.
    let polished = with(json!({"n": 40, "k": 4, "units": 4, "window": 2, "rounds": 0}));
    let (polish_scores, _) = drive(&polished, 500);
    let problem =
        with(json!({"n": 40, "k": 4, "units": 4, "window": 2, "budget": 3000, "rounds": 8}));
    let (scores, best) = drive(&problem, 500);
    // (The polish campaign's last entry repeats its best: the split that ends it.)
    let polished_len = polish_scores.len() - 1;
    assert_eq!(scores[..polished_len], polish_scores[..polished_len]);
    assert!(scores.len() > polish_scores.len());
    assert!(scores.last() > polish_scores.last(), "{scores:?}");
    assert!(scores.windows(2).all(|w| w[1] >= w[0]));
    let best = best.unwrap();
    assert_eq!(replayed(&best) as i64, *scores.last().unwrap());
    let args = problem.heuristic.as_ref().unwrap().args();
    assert_eq!(args.rounds, Some(8));
    assert_eq!(args.budget, Some(3000));
    let stored = serde_json::to_value(args).unwrap();
    assert_eq!(stored["rounds"], 8);
    assert_eq!(stored["strategy"], "block");
}
