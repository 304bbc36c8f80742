//! End to end in a real browser: headless Chromium driven over WebDriver (chromedriver)
//! opens the pages of a coordinator whose workers finished real campaigns, checks that the
//! numbers shown equal `grind status --json`, that a new campaign appears without a reload
//! (live updates), and that every page fits 1280x800 and a 390x844 phone screen without
//! horizontal overflow. Screenshots go to `target/test-artifacts/`.
//!
//! Also: parameters show as short text in the command line's words (the JSON one click away
//! in a closed `<details>`), no JSON is visible that the user did not open, the WORKERS
//! column and each worker's leases agree with `grind status --json` while a campaign runs,
//! and an anytime campaign's ETA says it is open-ended.
//!
//! Needs the Debian packages `chromium` and `chromium-driver` (or GRIND_CHROMIUM and
//! GRIND_CHROMEDRIVER naming the binaries); without them the test prints why and skips, except
//! under `CI=true`, where a missing browser fails it (as `deploy/check.sh` does for its tools).

mod common;

use common::*;
use fantoccini::{ClientBuilder, Locator};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

fn find_binary(env: &str, names: &[&str]) -> Option<PathBuf> {
    if let Ok(path) = std::env::var(env) {
        return Some(PathBuf::from(path)).filter(|p| p.exists());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| p.exists())
}

fn artifacts_dir() -> PathBuf {
    // target/<profile>/grind -> target/test-artifacts
    let dir = grind_bin()
        .parent()
        .and_then(|p| p.parent())
        .expect("target directory")
        .join("test-artifacts");
    std::fs::create_dir_all(&dir).expect("create target/test-artifacts");
    dir
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn status_json(url: &str) -> Value {
    let out = Command::new(grind_bin())
        .args(["status", "--coordinator", url, "--json"])
        .output()
        .expect("run grind status");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("status JSON")
}

/// The text of the element `css` inside the element `scope` (both CSS selectors).
async fn text_in(client: &fantoccini::Client, scope: &str, key: &str) -> String {
    let selector = format!("{scope} [data-k=\"{key}\"]");
    client
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css(&selector))
        .await
        .unwrap_or_else(|e| panic!("no {selector}: {e}"))
        .text()
        .await
        .expect("element text")
        .trim()
        .to_string()
}

/// Visible text holding `{"` (JSON), outside closed `<details>` elements (whose content is
/// shown only when the user opens them).
async fn visible_json(client: &fantoccini::Client) -> Vec<String> {
    let found = client
        .execute(
            "const out = [];
             const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
             while (walk.nextNode()) {
               const node = walk.currentNode, parent = node.parentElement;
               const details = parent.closest('details');
               if (details && !details.open && !parent.closest('summary')) continue;
               if (node.textContent.includes('{\"')) out.push(node.textContent.slice(0, 120));
             }
             return out;",
            vec![],
        )
        .await
        .expect("look for visible JSON");
    serde_json::from_value(found).expect("strings")
}

/// Polls until `read` (the page's number) equals `expected` (from `grind status --json`) in
/// two status snapshots around one page read, so a count that changes between the two reads
/// is read again; returns the agreed value.
async fn agreed<F, Fut, G>(
    what: &str,
    mut read: F,
    mut expected: G,
    accept: impl Fn(&str) -> bool,
) -> String
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = String>,
    G: FnMut() -> String,
{
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut last = Vec::new();
    while std::time::Instant::now() < deadline {
        let before = expected();
        let shown = read().await;
        let after = expected();
        if before == after && shown == before && accept(&shown) {
            return shown;
        }
        last = vec![before, shown, after];
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    panic!("{what}: the page never agreed with grind status (status, page, status: {last:?})");
}

/// Checks the page has no horizontal overflow and readable text; saves a screenshot.
async fn check_layout(client: &fantoccini::Client, name: &str, width: u32) {
    let metrics = client
        .execute(
            "return [document.documentElement.scrollWidth, window.innerWidth,
                     parseFloat(getComputedStyle(document.body).fontSize),
                     document.querySelector('h1').getBoundingClientRect().right];",
            vec![],
        )
        .await
        .expect("measure the page");
    let m: Vec<f64> = serde_json::from_value(metrics).expect("numbers");
    let (scroll_width, inner_width, font, h1_right) = (m[0], m[1], m[2], m[3]);
    assert!(
        scroll_width <= inner_width + 1.0,
        "{name} at {width} px overflows horizontally: content {scroll_width} px, window {inner_width} px"
    );
    assert!(font >= 14.0, "{name}: body text is {font} px");
    assert!(h1_right <= inner_width, "{name}: the heading is cut off");
    let json = visible_json(client).await;
    assert!(json.is_empty(), "{name} at {width} px shows JSON: {json:?}");
    let png = client.screenshot().await.expect("screenshot");
    let path = artifacts_dir().join(format!("web-{name}-{width}.png"));
    std::fs::write(&path, png).expect("write screenshot");
    println!("screenshot: {}", path.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_show_the_status_numbers_and_fit_desktop_and_phone() {
    let (Some(chromium), Some(driver)) = (
        find_binary(
            "GRIND_CHROMIUM",
            &["chromium", "chromium-browser", "google-chrome"],
        ),
        find_binary("GRIND_CHROMEDRIVER", &["chromedriver"]),
    ) else {
        let why = "chromium and chromedriver not found \
             (apt-get install -y chromium chromium-driver, or set GRIND_CHROMIUM and GRIND_CHROMEDRIVER)";
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true and the browser test cannot run: {why}"
        );
        println!("SKIPPED browser test: {why}");
        return;
    };

    let dir = tempfile::tempdir().unwrap();
    let coordinator = start_coordinator(dir.path(), 3000, &[]);
    let url = coordinator.url.clone();
    let mut admin = admin(&url).await;
    let primes = create(
        &mut admin,
        "primes",
        json!({"from": 0, "to": 300_000, "unit": 10_000}),
        0.2,
    )
    .await;
    let topswops = create(&mut admin, "topswops", json!({"n": 7}), 0.0).await;
    let _w1 = start_worker(&url, "browser-a", 1);
    let _w2 = start_worker(&url, "browser-b", 1);
    for id in [primes, topswops] {
        let c = wait_finished(&mut admin, id, Duration::from_secs(120)).await;
        assert_eq!(c.state, "done");
    }

    let port = free_port();
    let mut chromedriver = Command::new(&driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromedriver");
    let webdriver = format!("http://127.0.0.1:{port}");
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1280,800"],
        }),
    );
    let client = wait_for(
        "chromedriver to accept a session",
        Duration::from_secs(60),
        || {
            let caps = caps.clone();
            let webdriver = webdriver.clone();
            async move {
                ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
                    .capabilities(caps)
                    .connect(&webdriver)
                    .await
                    .ok()
            }
        },
    )
    .await;

    let result = async {
        let status = status_json(&url);

        // Campaigns page at 1280x800: every number equals `grind status --json`.
        client
            .set_window_size(1280, 800)
            .await
            .expect("window size");
        client.goto(&format!("{url}/")).await.expect("open /");
        for c in status["campaigns"].as_array().unwrap() {
            let row = format!("tr[data-campaign=\"{}\"]", c["campaign"]);
            let u = &c["units"];
            assert_eq!(
                text_in(&client, &row, "state").await,
                c["state"].as_str().unwrap()
            );
            assert_eq!(
                text_in(&client, &row, "value").await,
                c["value"].as_str().unwrap()
            );
            assert_eq!(text_in(&client, &row, "done").await, u["done"].to_string());
            assert_eq!(
                text_in(&client, &row, "pending").await,
                u["pending"].to_string()
            );
            assert_eq!(
                text_in(&client, &row, "verifying").await,
                u["verifying"].to_string()
            );
            assert_eq!(
                text_in(&client, &row, "leased").await,
                u["leased"].to_string()
            );
            assert_eq!(
                text_in(&client, &row, "failed").await,
                u["failed"].to_string()
            );
            assert_eq!(
                text_in(&client, &row, "workers").await,
                c["workers"].to_string()
            );
            // The outcome in the CLI's words, its code and whether it is a full proof.
            let outcome = client
                .find(Locator::Css(&format!("{row} [data-k=\"outcome\"]")))
                .await
                .unwrap();
            assert_eq!(
                outcome.attr("data-v").await.unwrap().as_deref(),
                c["outcome"].as_str()
            );
            assert_eq!(
                outcome.attr("data-proven").await.unwrap().as_deref(),
                Some(if c["proven"] == true { "true" } else { "false" })
            );
            assert_eq!(
                outcome.text().await.unwrap(),
                grind_coordinator::views::outcome_words(c["outcome"].as_str().unwrap())
            );
        }
        // Parameters in the command line's words: only what differs from the defaults
        // (`--from` is 0 by default).
        assert_eq!(
            text_in(
                &client,
                &format!("tr[data-campaign=\"{primes}\"]"),
                "params-short"
            )
            .await,
            "to=300000 unit=10000"
        );
        // Live updates: the stream connects, and a new campaign shows up without a reload.
        client
            .wait()
            .at_most(Duration::from_secs(20))
            .for_element(Locator::Css("#live-state.on"))
            .await
            .expect("the live-update stream connects");
        let third = create(
            &mut admin,
            "primes",
            json!({"from": 0, "to": 1000, "unit": 1000}),
            0.0,
        )
        .await;
        client
            .wait()
            .at_most(Duration::from_secs(30))
            .for_element(Locator::Css(&format!("tr[data-campaign=\"{third}\"]")))
            .await
            .expect("a new campaign appears without a reload");
        wait_finished(&mut admin, third, Duration::from_secs(60)).await;

        // A running anytime campaign with busy workers: parameters as short text with the
        // JSON one click away, the ETA open-ended, the WORKERS cell as `grind status` says.
        let hunt = create(
            &mut admin,
            "topswops",
            json!({"n": 97, "heuristic": true}),
            0.0,
        )
        .await;
        let row = format!("tr[data-campaign=\"{hunt}\"]");
        let (page, row_ref, url_ref) = (&client, row.as_str(), url.as_str());
        let busy = agreed(
            "workers on the running campaign",
            move || async move {
                page.goto(&format!("{url_ref}/")).await.expect("open /");
                text_in(page, row_ref, "workers").await
            },
            || {
                status_json(&url)["campaigns"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|c| c["campaign"] == hunt)
                    .expect("the campaign in grind status")["workers"]
                    .to_string()
            },
            |shown| shown != "0",
        )
        .await;
        println!("workers busy on campaign {hunt}: {busy} (page and grind status agree)");
        let short = text_in(&client, &row, "params-short").await;
        assert!(short.starts_with("n=97 heuristic"), "{short}");
        assert!(!short.contains('{'), "{short}");
        assert_eq!(text_in(&client, &row, "eta").await, "open-ended");
        // The JSON is in a closed <details>: hidden until opened (which the checker sees).
        assert!(visible_json(&client).await.is_empty());
        client
            .find(Locator::Css(&format!("{row} details.params summary")))
            .await
            .expect("the parameters' details")
            .click()
            .await
            .expect("open the details");
        assert!(
            !visible_json(&client).await.is_empty(),
            "opened, the parameters' JSON shows"
        );
        client.goto(&format!("{url}/")).await.unwrap();
        check_layout(&client, "campaigns", 1280).await;

        // Campaign page: numbers, the incumbent drawn, the plot.
        let one = status["campaigns"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["campaign"] == topswops)
            .unwrap();
        client
            .goto(&format!("{url}/campaigns/{topswops}"))
            .await
            .unwrap();
        assert_eq!(
            text_in(&client, "main", "value").await,
            one["value"].as_str().unwrap()
        );
        assert_eq!(
            text_in(&client, "main", "done").await,
            one["units"]["done"].to_string()
        );
        client
            .find(Locator::Css("svg.deck"))
            .await
            .expect("the deck is drawn");
        client
            .find(Locator::Css("svg.plot"))
            .await
            .expect("the plot is drawn");
        client
            .find(Locator::Css("#improvements"))
            .await
            .expect("provenance table");
        check_layout(&client, "campaign", 1280).await;

        // The running campaign's page: the 97-card incumbent drawn in rows.
        client
            .goto(&format!("{url}/campaigns/{hunt}"))
            .await
            .unwrap();
        client
            .wait()
            .at_most(Duration::from_secs(60))
            .for_element(Locator::Css("svg.deck"))
            .await
            .expect("the 97-card deck is drawn");
        assert_eq!(text_in(&client, "main", "eta").await, "open-ended");
        check_layout(&client, "campaign-anytime", 1280).await;

        // Workers page: per-worker numbers equal the status (the counts that change while
        // the campaign runs are compared as `agreed` describes).
        client.goto(&format!("{url}/workers")).await.unwrap();
        let status = status_json(&url);
        for w in status["workers"].as_array().unwrap() {
            let id = w["worker_id"].clone();
            let row = format!("tr[data-worker=\"{id}\"]");
            assert_eq!(
                text_in(&client, &row, "name").await,
                w["name"].as_str().unwrap()
            );
            assert_eq!(
                text_in(&client, &row, "cores").await,
                w["cores"].to_string()
            );
            for key in ["active_leases", "units_done"] {
                let (page, row_ref, url_ref) = (&client, row.as_str(), url.as_str());
                agreed(
                    &format!("{key} of worker {id}"),
                    move || async move {
                        page.goto(&format!("{url_ref}/workers"))
                            .await
                            .expect("open /workers");
                        text_in(page, row_ref, key).await
                    },
                    || {
                        status_json(&url)["workers"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .find(|x| x["worker_id"] == id)
                            .expect("the worker in grind status")[key]
                            .to_string()
                    },
                    |_| true,
                )
                .await;
            }
        }
        check_layout(&client, "workers", 1280).await;

        // A phone: every page fits its width.
        client.set_window_size(390, 844).await.expect("phone size");
        for (name, path) in [
            ("campaigns", "/".to_string()),
            ("campaign", format!("/campaigns/{topswops}")),
            ("campaign-anytime", format!("/campaigns/{hunt}")),
            ("workers", "/workers".to_string()),
        ] {
            client.goto(&format!("{url}{path}")).await.unwrap();
            client.find(Locator::Css("h1")).await.expect("a heading");
            check_layout(&client, name, 390).await;
        }
    }
    .await;
    let _ = client.close().await;
    let _ = chromedriver.kill();
    let _ = chromedriver.wait();
    result
}
