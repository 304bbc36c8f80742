//! `grind backup` on a running coordinator (real processes): the snapshot and, beside it,
//! the bundle blobs it refers to, so that a coordinator served from the backup alone serves
//! every bundle its `exec` campaigns name.

mod common;

use common::*;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// Every file under `root` (relative path and bytes), sorted.
fn tree_contents(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let name = path.strip_prefix(root).unwrap().display().to_string();
                out.push((name, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// The digests `grind bundle list --json` prints.
fn listed_digests(url: &str) -> BTreeSet<String> {
    let out = grind_ok(&["bundle", "list", "--json", "--coordinator", url]);
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            row["digest"].as_str().unwrap().to_string()
        })
        .collect()
}

/// Every `sha256:` digest among the strings of a campaign's parameters.
fn digests_in(params: &serde_json::Value, out: &mut BTreeSet<String>) {
    match params {
        serde_json::Value::String(s) => {
            if let Some(at) = s.find("sha256:") {
                out.insert(s[at..].to_string());
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| digests_in(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| digests_in(v, out)),
        _ => {}
    }
}

/// `grind bundle get` of `digest` from `url` into a new directory `dir`.
fn bundle_get(url: &str, digest: &str, dir: &Path) {
    grind_ok(&[
        "bundle",
        "get",
        "--coordinator",
        url,
        digest,
        dir.to_str().unwrap(),
    ]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coordinator_restored_from_a_backup_serves_its_campaigns_bundles() {
    let dir = tempfile::tempdir().unwrap();
    let coord = start_coordinator(dir.path(), 5_000, &[]);
    // An exec campaign as a user adds one: solver, checker and instance go up as bundles.
    let campaign = add_labs_campaign(&coord.url, &[]);
    let mut admin_client = admin(&coord.url).await;
    let shown = status(&mut admin_client, campaign).await;
    let mut named = BTreeSet::new();
    digests_in(&params(&shown.campaigns[0]), &mut named);
    assert_eq!(named.len(), 3, "solver, checker, instance: {named:?}");
    let stored = listed_digests(&coord.url);
    assert!(named.is_subset(&stored), "{named:?} not in {stored:?}");

    // Backed up while the coordinator runs.
    let backup = dir.path().join("backup").join("grind.db");
    std::fs::create_dir_all(backup.parent().unwrap()).unwrap();
    let out = grind_ok(&[
        "backup",
        "--db",
        coord.db.to_str().unwrap(),
        "--out",
        backup.to_str().unwrap(),
    ]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("backed up 3 bundle blobs"), "{said}");
    // A second backup to the same place is refused, the first left as it was.
    let again = Command::new(grind_bin())
        .args(["backup", "--db", coord.db.to_str().unwrap(), "--out"])
        .arg(&backup)
        .output()
        .unwrap();
    assert!(!again.status.success());

    // A coordinator served from the backup alone (the original's store untouched by it)
    // lists the same bundles and serves each one as the original does.
    let restored = start_coordinator_on(backup.clone(), "127.0.0.1:0", 5_000, &[]);
    assert_eq!(listed_digests(&restored.url), stored);
    let mut restored_admin = admin(&restored.url).await;
    let restored_shown = status(&mut restored_admin, campaign).await;
    assert_eq!(
        params(&restored_shown.campaigns[0]),
        params(&shown.campaigns[0])
    );
    for (i, digest) in named.iter().enumerate() {
        let from_original = dir.path().join(format!("original-{i}"));
        let from_restored = dir.path().join(format!("restored-{i}"));
        bundle_get(&coord.url, digest, &from_original);
        bundle_get(&restored.url, digest, &from_restored);
        let contents = tree_contents(&from_restored);
        assert!(!contents.is_empty(), "bundle {digest} came back empty");
        assert_eq!(contents, tree_contents(&from_original), "bundle {digest}");
    }
}
