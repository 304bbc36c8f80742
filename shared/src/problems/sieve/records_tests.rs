//! Re-verifies `records/sieve-beyond-1000.tsv` (best known games past the published
//! optimum table) against the replay verifier, the bound certificates in
//! `records/sieve-bounds/` and the published best known values
//! (`records/bvchess-best-1001-2000.tsv`).

use std::collections::BTreeMap;

use super::certificate::{self, Certificate};
use super::game;
use super::search::largest_prime;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// One row of `records/sieve-beyond-1000.tsv`.
struct Row {
    n: u32,
    score: i64,
    published: Option<i64>,
    diff: Option<i64>,
    bound: i64,
    gap: i64,
    game: Vec<u64>,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{ROOT}/{path}")).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn rows() -> Vec<Row> {
    read("records/sieve-beyond-1000.tsv")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            assert_eq!(c.len(), 15, "row {l:.40}: 15 columns");
            let int = |i: usize| {
                c[i].parse::<i64>()
                    .unwrap_or_else(|_| panic!("{l:.40}: {i}"))
            };
            let opt = |i: usize| (c[i] != "-").then(|| int(i));
            Row {
                n: c[0].parse().expect("n"),
                score: int(1),
                published: opt(2),
                diff: opt(3),
                bound: int(4),
                gap: int(5),
                game: c[14]
                    .split_whitespace()
                    .map(|m| m.parse().expect("a move"))
                    .collect(),
            }
        })
        .collect()
}

/// The published best known values: n -> (score, their claim, their upper bound).
fn published() -> BTreeMap<u32, (i64, String, i64)> {
    read("records/bvchess-best-1001-2000.tsv")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            (
                c[0].parse().expect("n"),
                (
                    c[1].parse().expect("score"),
                    c[2].to_string(),
                    c[3].parse().expect("fm bound"),
                ),
            )
        })
        .collect()
}

#[test]
fn beyond_1000_games_replay_to_their_scores_and_columns_agree() {
    let published = published();
    for row in rows() {
        let score = game::replay(row.n, &row.game)
            .unwrap_or_else(|e| panic!("N = {}: not a finished game: {e}", row.n));
        assert_eq!(score as i64, row.score, "N = {}", row.n);
        assert_eq!(row.gap, row.bound - row.score, "N = {}: gap column", row.n);
        let reference = published.get(&row.n).map(|p| p.0);
        assert_eq!(row.published, reference, "N = {}: published column", row.n);
        assert_eq!(row.diff, reference.map(|p| row.score - p), "N = {}", row.n);
    }
}

#[test]
fn beyond_1000_bounds_are_certified_and_above_every_known_game() {
    let published = published();
    let mut best: BTreeMap<u32, i64> = BTreeMap::new();
    let mut bounds: BTreeMap<u32, i64> = BTreeMap::new();
    for row in rows() {
        let b = best.entry(row.n).or_insert(row.score);
        *b = (*b).max(row.score);
        if let Some(&old) = bounds.get(&row.n) {
            assert_eq!(old, row.bound, "N = {}: rows state different bounds", row.n);
        }
        bounds.insert(row.n, row.bound);
    }
    for (&n, &bound) in &bounds {
        let path = format!("records/sieve-bounds/{n}.txt");
        let cert = Certificate::parse(&read(&path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(cert.n, n, "{path}");
        let proven = certificate::check(&cert).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(proven, bound, "{path}: the row's bound");
        assert!(best[&n] <= proven, "N = {n}: a game above its bound");
        // A published game above a certified bound, or a recorded game above a published
        // bound, would be a contradiction.
        if let Some((p, _, fm)) = published.get(&n) {
            assert!(
                best[&n] <= *fm,
                "N = {n}: a game above the published bound {fm}"
            );
            assert!(
                *p <= proven,
                "N = {n}: published {p} above the certified bound {proven}"
            );
        }
    }
    // Where grind falls short of the published value: reported, never hidden.
    let short: Vec<(u32, i64)> = best
        .iter()
        .filter_map(|(&n, &s)| {
            let p = published.get(&n)?.0;
            (s < p).then_some((n, p - s))
        })
        .collect();
    println!(
        "beyond 1000: {} N recorded; short of the published value at {short:?}",
        best.len()
    );
}

#[test]
fn the_published_table_is_consistent_with_its_own_claims() {
    // Their "exact" and "prime" rows are their N - 1 value + N (- P'): a check of the
    // transcription, row by row.
    let published = published();
    assert_eq!(published.len(), 1000);
    let mut previous: Option<i64> = None;
    for (&n, (score, claim, fm)) in &published {
        assert!(score <= fm, "N = {n}: their game above their bound");
        if let Some(prev) = previous {
            match claim.as_str() {
                "exact" => assert_eq!(*score, prev + i64::from(n), "N = {n}"),
                "prime" => {
                    assert_eq!(largest_prime(n), n, "N = {n}");
                    let p = i64::from(largest_prime(n - 1));
                    assert_eq!(*score, prev + i64::from(n) - p, "N = {n}");
                }
                _ => assert!(*score > prev, "N = {n}"),
            }
        }
        previous = Some(*score);
    }
}

#[test]
fn the_seed_game_is_optimal_for_1000() {
    let text = read("records/sieve-seed-1000.txt");
    let moves: Vec<u64> = text
        .lines()
        .find_map(|l| l.strip_prefix("moves "))
        .expect("a moves line")
        .split_whitespace()
        .map(|m| m.parse().expect("a move"))
        .collect();
    let published: i64 =
        super::table::parse_terms(&read("records/a019312.txt")).expect("the published table")[999];
    assert_eq!(game::replay(1000, &moves).expect("legal") as i64, published);
}
