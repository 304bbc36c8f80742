//! Proof chains: a Topswops campaign that prunes with stated f(m) (`--known`) is proven only
//! when finished, proven campaigns of the same database proved those values; otherwise its
//! result is a conditional proof, in `grind run --json` and `grind run`'s words alike.
//! Small n, so that the whole chain runs in seconds (the mechanism does not depend on n).

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;

/// `grind run topswops --n N [--known ...] --db DB --json`: its summary line.
fn run_topswops(db: &Path, n: u32, known: Option<&str>) -> Value {
    run_topswops_exporting(db, n, known, None)
}

/// [`run_topswops`], also writing the export (and its provenance record) to `export`.
fn run_topswops_exporting(db: &Path, n: u32, known: Option<&str>, export: Option<&Path>) -> Value {
    let n = n.to_string();
    let mut args = vec![
        "run",
        "topswops",
        "--n",
        &n,
        "--workers",
        "1",
        "--threads",
        "1",
        "--db",
        db.to_str().unwrap(),
        "--json",
    ];
    if let Some(known) = known {
        args.extend(["--known", known]);
    }
    if let Some(export) = export {
        args.extend(["--out", export.to_str().unwrap()]);
    }
    let out = grind_ok(&args);
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

/// The premises of a summary: (label, stated value, backing campaign, contradicting one).
fn rests_on(summary: &Value) -> Vec<(String, i64, Option<i64>, Option<i64>)> {
    summary["rests_on"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["label"].as_str().unwrap().to_string(),
                p["value"].as_i64().unwrap(),
                p["backed_by"].as_i64(),
                p["contradicted_by"].as_i64(),
            )
        })
        .collect()
}

#[test]
fn stated_maxima_make_a_conditional_proof_until_proven_campaigns_back_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chain.db");
    // f(1..6) = 0, 1, 2, 4, 7, 10 (OEIS A000375).

    // f(5) lowered by one: the search prunes with a wrong bound, and nothing backs it.
    let lowered = run_topswops(&db, 6, Some("0,1,2,4,6"));
    assert_eq!(lowered["state"], "done");
    assert_eq!(lowered["outcome"], "conditional_proof", "{lowered}");
    assert_eq!(lowered["proven"], false);
    let lowered_id = lowered["campaign"].as_i64().unwrap();

    // f(5) from a campaign that itself states f(2..4): conditional as well, for now.
    let five = run_topswops(&db, 5, Some("0,1,2,4"));
    assert_eq!(five["value"], "7");
    assert_eq!(five["outcome"], "conditional_proof", "{five}");
    let five_id = five["campaign"].as_i64().unwrap();

    // f(2..4) proven here (f(1..m-1) computed by the problem itself: nothing stated).
    let mut provers = Vec::new();
    for (m, f) in [(2, "1"), (3, "2"), (4, "4")] {
        let proven = run_topswops(&db, m, None);
        assert_eq!(proven["value"], f, "f({m})");
        assert_eq!(proven["outcome"], "proven_optimum", "f({m}): {proven}");
        assert!(rests_on(&proven).is_empty());
        provers.push(proven["campaign"].as_i64().unwrap());
    }

    // Running the f(5) campaign's command again shows it proven now, with its chain.
    let five = run_topswops(&db, 5, Some("0,1,2,4"));
    assert_eq!(five["campaign"], five_id, "the same campaign");
    assert_eq!(
        (five["outcome"].as_str(), five["proven"].as_bool()),
        (Some("proven_optimum"), Some(true))
    );
    assert_eq!(
        rests_on(&five),
        [
            ("f(2)".to_string(), 1, Some(provers[0]), None),
            ("f(3)".to_string(), 2, Some(provers[1]), None),
            ("f(4)".to_string(), 4, Some(provers[2]), None),
        ]
    );

    // The lowered campaign stays conditional: its f(5) = 6 is contradicted, never backed.
    let lowered = run_topswops(&db, 6, Some("0,1,2,4,6"));
    assert_eq!(lowered["campaign"], lowered_id);
    assert_eq!(lowered["outcome"], "conditional_proof");
    let f5 = rests_on(&lowered).pop().unwrap();
    assert_eq!(f5, ("f(5)".to_string(), 6, None, Some(five_id)));

    // A new campaign stating f(5) = 6 now that f(5) = 7 is proven here is refused outright.
    let refused = std::process::Command::new(grind_bin())
        .args([
            "run",
            "topswops",
            "--n",
            "7",
            "--known",
            "0,1,2,4,6,10",
            "--db",
        ])
        .arg(&db)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(
        why.contains(&format!(
            "the parameters state f(5) = 6, but campaign {five_id} proved f(5) = 7"
        )),
        "{why}"
    );

    // The right values, every one backed by a proven campaign: plainly proven, f(6) = 10,
    // and the proof names the campaigns it rests on (f(5) through the chain above).
    let six = run_topswops(&db, 6, Some("0,1,2,4,7"));
    assert_eq!(six["value"], "10");
    assert_eq!(six["outcome"], "proven_optimum", "{six}");
    assert_eq!(six["proven"], true);
    let backers: Vec<Option<i64>> = rests_on(&six).iter().map(|p| p.2).collect();
    assert_eq!(
        backers,
        [
            Some(provers[0]),
            Some(provers[1]),
            Some(provers[2]),
            Some(five_id)
        ]
    );

    // People read the same: the outcome in words and the chain.
    let text = grind_ok(&[
        "run",
        "topswops",
        "--n",
        "6",
        "--known",
        "0,1,2,4,6",
        "--workers",
        "1",
        "--db",
        db.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("(conditional proof: proven given the stated values)"),
        "{text}"
    );
    assert!(
        text.contains(&format!("f(5) = 6 (contradicted by campaign {five_id})")),
        "{text}"
    );
}

#[test]
fn a_proof_record_imported_from_another_database_backs_a_premise() {
    let dir = tempfile::tempdir().unwrap();
    let (here, there) = (dir.path().join("here.db"), dir.path().join("there.db"));
    // Elsewhere: f(2..4) proven, then f(5) = 7 on top of them, exported.
    for m in 2..=4 {
        run_topswops(&there, m, None);
    }
    let exported = dir.path().join("f5.txt");
    let five = run_topswops_exporting(&there, 5, Some("0,1,2,4"), Some(&exported));
    assert_eq!(five["outcome"], "proven_optimum");
    let record_path = dir.path().join("f5.txt.provenance.json");
    // A conditional result elsewhere is no proof record.
    let lowered_path = dir.path().join("lowered.txt");
    let lone = dir.path().join("lone.db");
    let lowered = run_topswops_exporting(&lone, 6, Some("0,1,2,4,6"), Some(&lowered_path));
    assert_eq!(lowered["outcome"], "conditional_proof");
    let refused = std::process::Command::new(grind_bin())
        .args(["proof", "import", "--db", here.to_str().unwrap()])
        .arg(dir.path().join("lowered.txt.provenance.json"))
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("proven optimum"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    // A record whose value was changed is refused: its solution scores otherwise here.
    let mut forged: Value =
        serde_json::from_str(&std::fs::read_to_string(&record_path).unwrap()).unwrap();
    forged["value"] = "8".into();
    let forged_path = dir.path().join("forged.json");
    std::fs::write(&forged_path, forged.to_string()).unwrap();
    let refused = std::process::Command::new(grind_bin())
        .args(["proof", "import", "--db", here.to_str().unwrap()])
        .arg(&forged_path)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("scores 7 here, not its stated 8"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );

    // Here: f(2..4) proven, f(6) on the stated f(5) = 7: conditional until the record comes.
    for m in 2..=4 {
        run_topswops(&here, m, None);
    }
    let six = run_topswops(&here, 6, Some("0,1,2,4,7"));
    assert_eq!(six["outcome"], "conditional_proof");
    let out = grind_ok(&[
        "proof",
        "import",
        "--db",
        here.to_str().unwrap(),
        record_path.to_str().unwrap(),
    ]);
    let record: i64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let six = run_topswops(&here, 6, Some("0,1,2,4,7"));
    assert_eq!(six["outcome"], "proven_optimum", "{six}");
    assert_eq!(six["value"], "10");
    let f5 = &six["rests_on"][3];
    assert_eq!(
        (f5["label"].as_str(), f5["backed_by_record"].as_i64()),
        (Some("f(5)"), Some(record))
    );
}
