//! Heuristic campaigns driven locally: stages, units, verification and resume, checked
//! against an independent greedy written here with the plain replay.

use super::*;
use crate::problem::{LocalContext, Problem};
use crate::problems::topswops::heads::to_deck;
use crate::problems::topswops::replay::replay_flips;
use crate::problems::topswops::{Topswops, TopswopsParams};
use crate::registry::ProblemDef;
use proptest::prelude::*;

fn heuristic(n: u32, k: u32, units: u32) -> Topswops {
    let params: TopswopsParams = serde_json::from_value(json!({
        "n": n, "heuristic": true, "k": k, "units": units
    }))
    .unwrap();
    Topswops::from_params(params).unwrap()
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

/// Runs a campaign locally like the coordinator does: stage by stage, every unit solved
/// with the incumbent's score as bound, results verified; returns the best score after each
/// stage and the final solution.
fn drive(problem: &Topswops, max_stages: usize) -> (Vec<i64>, Option<Value>) {
    let mut cursor: Option<Vec<u8>> = None;
    let mut best: Option<(i64, Value)> = None;
    let mut per_stage = Vec::new();
    for _ in 0..max_stages {
        let batch = problem
            .split_from(cursor.as_deref(), 1_000, best.as_ref().map(|(_, s)| s))
            .unwrap();
        for unit in &batch.units {
            let mut ctx = LocalContext::default();
            ctx.fixed_bound = best.as_ref().map(|(s, _)| *s);
            match problem.solve(&unit.payload, &ctx).unwrap() {
                UnitOutcome::Searched {
                    best: Some(found), ..
                } => {
                    let verified = problem.score(&found.solution).unwrap();
                    assert_eq!(verified, found.score);
                    if best.as_ref().is_none_or(|(s, _)| verified > *s) {
                        best = Some((verified, found.solution));
                    }
                }
                UnitOutcome::Searched { best: None, .. } => {}
                other => panic!("unexpected outcome {other:?}"),
            }
        }
        if let Some((score, _)) = &best {
            per_stage.push(*score);
        }
        match batch.next {
            Some(next) => {
                assert!(
                    problem.waits_at(&next),
                    "a stage is split whole at 1000 units"
                );
                cursor = Some(next);
            }
            None => break,
        }
    }
    (per_stage, best.map(|(_, s)| s))
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
fn polish_rounds_never_lose_ground_and_the_campaign_ends() {
    let problem = heuristic(13, 3, 4);
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
        "polishing stops after {MAX_STALL} idle rounds"
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
