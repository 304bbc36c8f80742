//! The Topswops primes contest end to end with real processes: `grind contest add` creates
//! one campaign per prime n in 2..97 (exact for small n, heuristic above), workers fill
//! every entry, `grind contest show` scores it against a reference table, `export` writes the
//! submission (one deck a line) and `import` seeds a fresh coordinator's entry with it.
//! Also: a heuristic campaign survives a coordinator restart and keeps growing.

mod common;

use common::*;
use serde_json::{json, Value};
use std::process::Command;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(240);

/// The 25 primes of the contest, by trial division.
fn primes() -> Vec<usize> {
    (2..=97)
        .filter(|&n| (2..n).take_while(|d| d * d <= n).all(|d| n % d != 0))
        .collect()
}

/// Runs `grind contest ...` against `url`, returning stdout; panics on failure.
fn contest(url: &str, args: &[&str]) -> String {
    let out = Command::new(grind_bin())
        .arg("contest")
        .arg(args[0])
        .args(["--coordinator", url])
        .args(&args[1..])
        .output()
        .expect("run grind contest");
    assert!(
        out.status.success(),
        "grind contest {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The entry as `grind contest show --json` prints it.
fn show(url: &str, reference: Option<&std::path::Path>) -> Value {
    let mut args = vec!["show", "topswops-primes", "--json"];
    let reference = reference.map(|p| p.display().to_string());
    if let Some(path) = &reference {
        args.extend(["--reference", path]);
    }
    serde_json::from_str(contest(url, &args).trim()).expect("show prints JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn primes_entry_is_filled_scored_exported_and_imported() {
    let grind = Cluster::start(5_000, &[]).await;
    let url = &grind.coord.url;
    let added = contest(
        url,
        &[
            "add",
            "topswops-primes",
            "--exact-up-to",
            "7",
            "--k",
            "6",
            "--units",
            "2",
            "--polish-stall",
            "0",
        ],
    );
    assert_eq!(added.lines().count(), 25, "{added}");
    let _workers = grind.workers(&["w1", "w2"]);

    // Every entry gets a deck; the exact ones finish with the proven maximum.
    let entry = wait_for("a deck for every prime", LONG, || async {
        let entry = show(url, None);
        let rows = entry["entries"].as_array()?;
        let filled = rows.iter().all(|r| r["value"].is_number());
        let exact_done = rows
            .iter()
            .filter(|r| r["n"].as_str().unwrap().parse::<u32>().unwrap() <= 7)
            .all(|r| r["state"] == "done");
        (filled && exact_done).then_some(entry)
    })
    .await;
    let rows = entry["entries"].as_array().unwrap();
    assert_eq!(rows.len(), 25);
    // OEIS A000375: f(2), f(3), f(5), f(7) = 1, 2, 7, 16.
    for (n, f) in [("2", 1.0), ("3", 2.0), ("5", 7.0), ("7", 16.0)] {
        let row = rows.iter().find(|r| r["n"] == n).unwrap();
        assert_eq!(row["value"].as_f64(), Some(f), "n = {n}");
        assert_eq!(row["proven"], true);
    }

    // Scored against a reference table: 1.0 where the entry matches it.
    let table = grind.dir().join("reference.txt");
    std::fs::write(&table, "# best known\n5 7\n7 16\n97 10749\n").unwrap();
    let scored = show(url, Some(&table));
    let row = |n: &str| {
        scored["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["n"] == n)
            .unwrap()
            .clone()
    };
    assert_eq!(row("5")["score"].as_f64(), Some(1.0));
    let score97 = row("97")["score"].as_f64().unwrap();
    let value97 = row("97")["value"].as_f64().unwrap();
    assert!((score97 - value97 / 10749.0).abs() < 1e-9);
    assert!(row("11")["score"].is_null());

    // Export: one deck a line in the contest's order, each a permutation of 1..n whose
    // replayed flips match the entry's value at export time or later (campaigns keep
    // improving while we export, never worsen).
    let submission = grind.dir().join("primes.txt");
    contest(
        url,
        &[
            "export",
            "topswops-primes",
            "--out",
            &submission.display().to_string(),
        ],
    );
    let text = std::fs::read_to_string(&submission).unwrap();
    let decks: Vec<Vec<usize>> = text
        .lines()
        .map(|l| l.split(',').map(|c| c.trim().parse().unwrap()).collect())
        .collect();
    assert_eq!(decks.iter().map(Vec::len).collect::<Vec<_>>(), primes());
    let mut exported = Vec::new();
    for (deck, before) in decks.iter().zip(rows) {
        let mut sorted = deck.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (1..=deck.len()).collect::<Vec<_>>());
        let flips = topswops_flips(deck);
        assert!(flips as f64 >= before["value"].as_f64().unwrap());
        exported.push(flips);
    }
    let provenance: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{}.provenance.json", submission.display())).unwrap(),
    )
    .unwrap();
    assert_eq!(provenance["entries"].as_array().unwrap().len(), 25);
    assert_eq!(provenance["missing"], json!([]));

    // Import into a fresh entry on another coordinator (no workers): every line lands in
    // the campaign of its n, verified; a malformed line is skipped.
    let fresh = Cluster::start(5_000, &[]).await;
    contest(
        &fresh.coord.url,
        &["add", "topswops-primes", "--exact-up-to", "7", "--k", "4"],
    );
    let with_bad = grind.dir().join("with-bad-line.txt");
    std::fs::write(&with_bad, format!("{text}1,1,2\n3,1,4,5,9\n")).unwrap();
    contest(
        &fresh.coord.url,
        &["import", "topswops-primes", &with_bad.display().to_string()],
    );
    let imported = show(&fresh.coord.url, None);
    let values: Vec<u64> = imported["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["value"].as_f64().unwrap() as u64)
        .collect();
    assert_eq!(values, exported);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heuristic_campaign_resumes_after_a_coordinator_restart() {
    let mut grind = Cluster::start(3_000, &[]).await;
    let campaign = grind
        .create(
            "topswops",
            json!({"n": 400, "heuristic": true, "k": 5, "units": 3}),
            0.0,
        )
        .await;
    let mut worker = grind.worker("w1");
    let first = grind
        .wait_campaign(campaign, "a first deck", LONG, &|c| {
            c.value.parse::<u64>().is_ok_and(|v| v > 0)
        })
        .await;
    let before: u64 = first.value.parse().unwrap();
    let params = params(&first);
    // Strategy and parameters are part of the campaign (and of its results' provenance).
    assert_eq!(params["strategy"], "block");
    assert_eq!(params["pool"], 5);
    assert!(!first.proven);

    worker.kill();
    grind.kill();
    grind.coord = start_coordinator_on(grind.coord.db.clone(), "127.0.0.1:0", 3_000, &[]);
    grind.admin = admin(&grind.coord.url).await;
    let _worker = grind.worker("w2");
    let later = grind
        .wait_campaign(campaign, "growth after the restart", LONG, &|c| {
            c.value.parse::<u64>().is_ok_and(|v| v > before)
        })
        .await;
    let deck: Vec<usize> = solution_field(&later, "deck");
    assert_eq!(deck.len(), 400);
    assert_eq!(topswops_flips(&deck).to_string(), later.value);
}
