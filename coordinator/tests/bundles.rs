//! Content-addressed bundles (issue 29) between the CLI, a real `grind serve` and a worker's
//! bundle source: round trips, refusals that leave nothing behind, the size limit, uploads
//! that send nothing twice, a large upload beside other clients' calls, and the worker's
//! cache (hits need no coordinator; bytes that do not match their digest are refused).

mod common;

use common::*;
use grind_exec::bundle::{bundle_digest, Digest};
use grind_proto::v1 as pb;
use grind_proto::v1::bundles_client::BundlesClient;
use grind_shared::attachments::BundleSource;
use grind_shared::rng::{Random, SplitMix64};
use grind_worker::bundles::WorkerBundles;
use grind_worker::connect::Access;
use sha2::Digest as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tonic::transport::Channel;
use tonic::{Code, Status};

/// A small tree: a script, a data file in a subdirectory, a link.
fn solver_tree(root: &Path) -> PathBuf {
    let tree = root.join("solver");
    std::fs::create_dir_all(tree.join("data")).unwrap();
    std::fs::write(tree.join("solve.sh"), "#!/bin/sh\necho o 42\n").unwrap();
    std::fs::set_permissions(
        tree.join("solve.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    std::fs::write(tree.join("data/weights.txt"), "1 2 3\n".repeat(1000)).unwrap();
    std::os::unix::fs::symlink("data/weights.txt", tree.join("weights")).unwrap();
    tree
}

/// `grind bundle add` as a user types it; its stdout's last line (the digest) and stderr.
fn bundle_add(url: &str, path: &Path, env: &[(&str, &str)]) -> (Option<String>, String) {
    let mut cmd = Command::new(grind_bin());
    cmd.args(["bundle", "add", "--coordinator", url]).arg(path);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run grind bundle add");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let digest = out
        .status
        .success()
        .then(|| stdout.lines().last().unwrap_or_default().to_string());
    (digest, stderr)
}

async fn bundles_client(url: &str) -> BundlesClient<Channel> {
    wait_for("the bundles API", Duration::from_secs(20), || async {
        BundlesClient::connect(url.to_string()).await.ok()
    })
    .await
    .max_decoding_message_size(8 << 20)
}

/// Uploads `data` in chunks of `chunk` bytes, claiming `digest` and `size`.
async fn raw_upload(
    client: &mut BundlesClient<Channel>,
    digest: &Digest,
    size: u64,
    data: &[u8],
    chunk: usize,
) -> Result<pb::BundleReceipt, Status> {
    let mut messages: Vec<pb::BundleChunk> = data
        .chunks(chunk.max(1))
        .map(|c| pb::BundleChunk {
            data: c.to_vec(),
            ..Default::default()
        })
        .collect();
    if messages.is_empty() {
        messages.push(pb::BundleChunk::default());
    }
    messages[0].digest = format!("sha256:{digest}");
    messages[0].size = size;
    client
        .upload(tokio_stream::iter(messages))
        .await
        .map(|r| r.into_inner())
}

/// A worker's bundle source on `url` caching in `cache`, made on this runtime.
fn worker_source(url: &str, cache: &Path, token: Option<&str>) -> Arc<WorkerBundles> {
    let access = Access {
        token: token.map(str::to_string),
        ca_pem: None,
    };
    Arc::new(
        WorkerBundles::new(
            cache.to_path_buf(),
            url,
            &access,
            tokio::runtime::Handle::current(),
        )
        .unwrap(),
    )
}

/// Materialises `digest` as a solving thread would: off the runtime's threads.
async fn materialise(source: &Arc<WorkerBundles>, digest: &str) -> Result<PathBuf, String> {
    let source = source.clone();
    let digest = digest.to_string();
    tokio::task::spawn_blocking(move || source.materialise(&digest).map_err(|e| e.to_string()))
        .await
        .unwrap()
}

fn files_under(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn bundles_dir(coord: &Coordinator) -> PathBuf {
    let mut name = coord.db.as_os_str().to_owned();
    name.push(".bundles");
    PathBuf::from(name)
}

/// Pseudo-random bytes (the workspace's seeded generator), so that nothing compresses or
/// repeats.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    out.truncate(len);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bundle_goes_up_once_and_comes_back_verified_and_cached() {
    let dir = tempfile::tempdir().unwrap();
    let mut coord = start_coordinator(dir.path(), 5_000, &[]);
    let tree = solver_tree(dir.path());

    let (digest, log) = bundle_add(&coord.url, &tree, &[]);
    let digest = digest.unwrap_or_else(|| panic!("grind bundle add failed: {log}"));
    assert!(log.contains("uploaded"), "{log}");
    assert_eq!(digest, format!("sha256:{}", bundle_digest(&tree).unwrap()));
    // Stored as its packed bytes, whose SHA-256 is the digest.
    let hex = digest.trim_start_matches("sha256:");
    let blob = std::fs::read(bundles_dir(&coord).join("blobs").join(hex)).unwrap();
    assert_eq!(format!("{:x}", sha2::Sha256::digest(&blob)), hex);
    assert!(files_under(&bundles_dir(&coord).join("incoming")).is_empty());

    // The second time nothing is sent.
    let (again, log) = bundle_add(&coord.url, &tree, &[]);
    assert_eq!(again.as_deref(), Some(digest.as_str()));
    assert!(log.contains("already stored"), "{log}");
    let listed = grind_ok(&["bundle", "list", "--json", "--coordinator", &coord.url]);
    let listed = String::from_utf8(listed.stdout).unwrap();
    assert_eq!(listed.lines().count(), 1, "{listed}");
    assert!(listed.contains(&digest), "{listed}");

    // `grind bundle get` brings it back as it was.
    let got = dir.path().join("got");
    grind_ok(&[
        "bundle",
        "get",
        "--coordinator",
        &coord.url,
        &digest,
        got.to_str().unwrap(),
    ]);
    assert_eq!(
        std::fs::read(got.join("data/weights.txt")).unwrap(),
        std::fs::read(tree.join("data/weights.txt")).unwrap()
    );

    // A worker fetches it once, unpacked as it was.
    let cache = dir.path().join("worker-cache");
    let source = worker_source(&coord.url, &cache, None);
    let unpacked = materialise(&source, &digest).await.unwrap();
    for file in ["solve.sh", "data/weights.txt", "weights"] {
        assert_eq!(
            std::fs::read(unpacked.join(file)).unwrap(),
            std::fs::read(tree.join(file)).unwrap(),
            "{file}"
        );
    }
    assert_eq!(source.fetches(), 1);
    assert_eq!(materialise(&source, &digest).await.unwrap(), unpacked);
    assert_eq!(source.fetches(), 1, "a cache hit fetched again");

    // With the coordinator gone, a new worker process (a fresh source on the same cache)
    // checks the cached files against the digest and uses them without a fetch.
    coord.proc.kill();
    let restarted = worker_source(&coord.url, &cache, None);
    assert_eq!(materialise(&restarted, &digest).await.unwrap(), unpacked);
    assert_eq!(restarted.fetches(), 0);
    // A bundle it does not have cannot be fetched now: a clear error, not a hang.
    let missing = format!("sha256:{}", "0".repeat(64));
    let err = materialise(&restarted, &missing).await.unwrap_err();
    assert!(err.contains("fetching bundle"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_that_do_not_match_their_claim_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let coord = start_coordinator(dir.path(), 5_000, &["--max-bundle-mib", "1"]);
    let mut client = bundles_client(&coord.url).await;
    let data = noise(300_000, 7);
    let digest = Digest::of(&data);

    let mut wrong = data.clone();
    wrong[123_456] ^= 1;
    let refused = raw_upload(&mut client, &digest, data.len() as u64, &wrong, 65_536).await;
    let status = assert_refused(refused, Code::InvalidArgument);
    assert!(status.message().contains("digest mismatch"), "{status:?}");
    let short = raw_upload(&mut client, &digest, data.len() as u64, &data[..1000], 500).await;
    let status = assert_refused(short, Code::InvalidArgument);
    assert!(status.message().contains("ended after 1000"), "{status:?}");
    let long = raw_upload(&mut client, &digest, 1000, &data, 65_536).await;
    let status = assert_refused(long, Code::InvalidArgument);
    assert!(status.message().contains("more bytes"), "{status:?}");
    let bad = pb::BundleRef {
        digest: "sha256:xyz".into(),
    };
    assert_refused(client.stat(bad).await, Code::InvalidArgument);

    // Over the limit (1 MiB): refused before any byte is kept, naming the flag.
    let big = noise(1_500_000, 9);
    let over = raw_upload(
        &mut client,
        &Digest::of(&big),
        big.len() as u64,
        &big,
        1 << 20,
    )
    .await;
    let status = assert_refused(over, Code::ResourceExhausted);
    assert!(status.message().contains("--max-bundle-mib"), "{status:?}");
    let big_file = dir.path().join("big.bin");
    std::fs::write(&big_file, &big).unwrap();
    let (none, log) = bundle_add(&coord.url, &big_file, &[]);
    assert_eq!(none, None);
    assert!(log.contains("over this coordinator's limit"), "{log}");

    // Nothing of any of them was stored.
    let stat = client
        .stat(pb::BundleRef {
            digest: format!("sha256:{digest}"),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!stat.present);
    let bundles = bundles_dir(&coord);
    wait_for(
        "the refused uploads' files to go",
        Duration::from_secs(10),
        || {
            let left = files_under(&bundles.join("incoming"));
            async move { left.is_empty().then_some(()) }
        },
    )
    .await;
    assert!(files_under(&bundles.join("blobs")).is_empty());
    let listed = client.list(pb::ListBundlesRequest {}).await.unwrap();
    assert!(listed.into_inner().bundles.is_empty());

    // The right bytes in odd chunks are accepted.
    let receipt = raw_upload(&mut client, &digest, data.len() as u64, &data, 77_777)
        .await
        .unwrap();
    assert!(!receipt.already_stored);
    assert_eq!(receipt.size, data.len() as u64);
    let second = raw_upload(&mut client, &digest, data.len() as u64, &data, 77_777)
        .await
        .unwrap();
    assert!(second.already_stored);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_refuses_bytes_that_do_not_match_the_digest() {
    let dir = tempfile::tempdir().unwrap();
    let coord = start_coordinator(dir.path(), 5_000, &[]);
    let tree = solver_tree(dir.path());
    let (digest, log) = bundle_add(&coord.url, &tree, &[]);
    let digest = digest.unwrap_or_else(|| panic!("grind bundle add failed: {log}"));
    // The coordinator's copy is damaged on disk: it now serves the wrong bytes.
    let blob = bundles_dir(&coord)
        .join("blobs")
        .join(digest.trim_start_matches("sha256:"));
    let mut bytes = std::fs::read(&blob).unwrap();
    let last = bytes.len() - 10;
    bytes[last] ^= 0x20;
    std::fs::write(&blob, &bytes).unwrap();

    let got = dir.path().join("got");
    let out = Command::new(grind_bin())
        .args(["bundle", "get", "--coordinator", &coord.url, &digest])
        .arg(&got)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && log.contains("digest mismatch"),
        "{log}"
    );
    assert!(!got.exists());

    let cache = dir.path().join("worker-cache");
    let source = worker_source(&coord.url, &cache, None);
    let err = materialise(&source, &digest).await.unwrap_err();
    assert!(err.contains("digest mismatch"), "{err}");
    assert!(err.contains(digest.trim_start_matches("sha256:")), "{err}");
    // Nothing unverified is left in the cache to be used.
    let left: Vec<String> = files_under(&cache)
        .into_iter()
        .filter(|name| !name.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // The coordinator's own source refuses it too (it would run a checker from it).
    let source = grind_coordinator::bundles::source::StoreBundles::new(
        grind_coordinator::bundles::BundleStore::open(
            dir.path().join("other.bundles"),
            grind_coordinator::store::Store::open(&dir.path().join("other.db")).unwrap(),
            1 << 20,
        )
        .unwrap(),
    );
    let err = source.materialise(&digest).unwrap_err().to_string();
    assert!(err.contains("not stored on this coordinator"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_need_an_admin_token_and_fetches_a_worker_token() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("grind.db");
    // Create the database (and its tokens) before the coordinator starts.
    let admin_token = create_token(&db, true);
    let worker_token = create_token(&db, false);
    let coord = start_coordinator(dir.path(), 5_000, &["--require-auth"]);
    let tree = solver_tree(dir.path());

    let (none, log) = bundle_add(&coord.url, &tree, &[("GRIND_ADMIN_TOKEN", &worker_token)]);
    assert_eq!(none, None);
    assert!(log.contains("admin token"), "{log}");
    let (none, log) = bundle_add(&coord.url, &tree, &[]);
    assert_eq!(none, None);
    assert!(log.contains("requires a token"), "{log}");
    let (digest, log) = bundle_add(&coord.url, &tree, &[("GRIND_ADMIN_TOKEN", &admin_token)]);
    let digest = digest.unwrap_or_else(|| panic!("grind bundle add failed: {log}"));

    let anonymous = worker_source(&coord.url, &dir.path().join("c1"), None);
    let err = materialise(&anonymous, &digest).await.unwrap_err();
    assert!(
        err.contains("Unauthenticated") || err.contains("token"),
        "{err}"
    );
    let worker = worker_source(&coord.url, &dir.path().join("c2"), Some(&worker_token));
    let unpacked = materialise(&worker, &digest).await.unwrap();
    assert!(unpacked.join("solve.sh").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_upload_does_not_hold_up_other_clients() {
    const SIZE: usize = 200 << 20;
    let dir = tempfile::tempdir().unwrap();
    let coord = start_coordinator(dir.path(), 5_000, &[]);
    let data = Arc::new(noise(SIZE, 3));
    let digest = Digest::of(&data);

    // Another client's calls, timed while the upload runs: an admin's Status and a
    // worker's heartbeat-sized Lease.
    let url = coord.url.clone();
    let (done_tx, done_rx) = tokio::sync::watch::channel(false);
    let prober = tokio::spawn(async move {
        let mut admin = admin(&url).await;
        let mut worker = RawWorker::register(&raw_worker(&url).await, "prober").await;
        let mut worst = Duration::ZERO;
        let mut calls = 0u32;
        while !*done_rx.borrow() {
            let started = Instant::now();
            admin.status(pb::StatusRequest::default()).await.unwrap();
            worker.lease(1).await.unwrap();
            worst = worst.max(started.elapsed());
            calls += 1;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        (worst, calls)
    });

    let mut client = bundles_client(&coord.url).await;
    let started = Instant::now();
    let receipt = raw_upload(&mut client, &digest, SIZE as u64, &data, 1 << 20)
        .await
        .unwrap();
    let upload = started.elapsed();
    done_tx.send(true).unwrap();
    let (worst, calls) = prober.await.unwrap();
    assert_eq!(receipt.size, SIZE as u64);
    eprintln!(
        "200 MiB upload in {upload:?} ({:.0} MiB/s); {calls} probe rounds, the slowest {worst:?}",
        200.0 / upload.as_secs_f64()
    );
    assert!(
        calls >= 3,
        "only {calls} probe rounds ran during the upload"
    );
    assert!(
        worst < Duration::from_secs(2),
        "a Status + Lease round took {worst:?} during the upload"
    );
    let blob = bundles_dir(&coord).join("blobs").join(digest.hex());
    assert_eq!(std::fs::metadata(blob).unwrap().len(), SIZE as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attachment_paths_become_digests_keeping_their_labels() {
    use grind_coordinator::cli::attachments::{attach, Destination};
    let dir = tempfile::tempdir().unwrap();
    let coord = start_coordinator(dir.path(), 5_000, &[]);
    let tree = solver_tree(dir.path());
    let instance = dir.path().join("inst=1.txt");
    std::fs::write(&instance, "5 3\n").unwrap();
    let tree_digest = format!("sha256:{}", bundle_digest(&tree).unwrap());
    let instance_digest = format!("sha256:{}", bundle_digest(&instance).unwrap());
    let keys = ["solver", "instance", "units_file"];
    let mut params = serde_json::json!({
        "solver": [
            format!("x86_64-unknown-linux-gnu={}", tree.display()),
            format!("aarch64-unknown-linux-gnu={}", tree.display()),
        ],
        // A path holding `=` that exists as a whole is a path, not LABEL=path.
        "instance": instance.to_str().unwrap(),
        "units_file": null,
        "seeds": 4,
    });
    let mut remote = Destination::Remote(
        grind_coordinator::cli::attachments::connect(
            &grind_coordinator::cli::admin::CoordinatorUrl {
                coordinator: coord.url.clone(),
                token: None,
                token_file: None,
                ca_file: None,
            },
        )
        .await
        .unwrap(),
    );
    let attached = attach(&keys, &mut params, &mut remote).await.unwrap();
    assert_eq!(
        params,
        serde_json::json!({
            "solver": [
                format!("x86_64-unknown-linux-gnu={tree_digest}"),
                format!("aarch64-unknown-linux-gnu={tree_digest}"),
            ],
            "instance": instance_digest,
            "units_file": null,
            "seeds": 4,
        })
    );
    // The same tree under two labels went up once.
    let sent: Vec<bool> = attached.iter().map(|a| a.sent).collect();
    assert_eq!(sent, vec![true, false, true]);
    // Attaching the result again changes nothing (digests stay, if stored).
    let before = params.clone();
    assert!(attach(&keys, &mut params, &mut remote)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(params, before);

    // Errors name the parameter.
    let mut missing = serde_json::json!({"solver": "./no-such-solver"});
    let err = attach(&keys, &mut missing, &mut remote).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("solver: ./no-such-solver: no such file"),
        "{err}"
    );
    let mut unknown = serde_json::json!({"checker": format!("sha256:{}", "1".repeat(64))});
    let err = attach(&["checker"], &mut unknown, &mut remote)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("checker: bundle sha256:111"),
        "{err}"
    );
    let mut number = serde_json::json!({"instance": 3});
    let err = attach(&keys, &mut number, &mut remote).await.unwrap_err();
    assert!(
        err.to_string().contains("instance: expected a path"),
        "{err}"
    );

    // A file changed between its measuring and its upload is refused, and not stored.
    use grind_coordinator::cli::attachments::{measure, store};
    let script = dir.path().join("moving.sh");
    std::fs::write(&script, "echo o 1\n").unwrap();
    let measured = measure(script.clone()).await.unwrap();
    std::fs::write(&script, "echo o 2\n").unwrap();
    let err = store(&mut remote, &measured).await.unwrap_err();
    assert!(err.to_string().contains("did it change"), "{err}");
    let stat = bundles_client(&coord.url)
        .await
        .stat(pb::BundleRef {
            digest: format!("sha256:{}", measured.digest),
        })
        .await
        .unwrap();
    assert!(!stat.into_inner().present);

    // `grind run`'s embedded coordinator stores them directly, with the same checks.
    let local_db = dir.path().join("local.db");
    let database = grind_coordinator::store::Store::open(&local_db).unwrap();
    let local = grind_coordinator::bundles::BundleStore::open(
        grind_coordinator::bundles::BundleStore::beside(&local_db),
        database,
        1 << 30,
    )
    .unwrap();
    let err = store(&mut Destination::Local(&local), &measured)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("did it change"), "{err}");
    let mut params = serde_json::json!({"solver": tree.to_str().unwrap()});
    attach(&keys, &mut params, &mut Destination::Local(&local))
        .await
        .unwrap();
    assert_eq!(params["solver"], serde_json::json!(tree_digest));
    let stored = local
        .stat(&tree_digest.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.uploader_token, None);
    let source = grind_coordinator::bundles::source::StoreBundles::new(local);
    let unpacked = tokio::task::spawn_blocking(move || source.materialise(&tree_digest))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        std::fs::read(unpacked.join("solve.sh")).unwrap(),
        std::fs::read(tree.join("solve.sh")).unwrap()
    );
}
