//! End to end in a real browser: headless Chromium driven over WebDriver (chromedriver)
//! opens the pages of a coordinator whose workers finished real campaigns, checks that the
//! numbers shown equal `grind status --json`, that a new campaign appears without a reload
//! (live updates), and that every page fits 1280x800 and a 390x844 phone screen without
//! horizontal overflow. Screenshots go to `target/test-artifacts/`.
//!
//! Needs the Debian packages `chromium` and `chromium-driver` (or GRIND_CHROMIUM and
//! GRIND_CHROMEDRIVER naming the binaries); without them the test prints why and skips.

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
        println!(
            "SKIPPED browser test: chromium and chromedriver not found \
             (apt-get install -y chromium chromium-driver, or set GRIND_CHROMIUM and GRIND_CHROMEDRIVER)"
        );
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
                (u["pending"].as_u64().unwrap() + u["verifying"].as_u64().unwrap()).to_string()
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
            let proven = client
                .find(Locator::Css(&format!("{row} [data-k=\"proven\"]")))
                .await
                .unwrap()
                .attr("data-v")
                .await
                .unwrap();
            assert_eq!(
                proven.as_deref(),
                Some(if c["proven"] == true { "true" } else { "false" })
            );
        }
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

        // Workers page: per-worker numbers equal the status.
        client.goto(&format!("{url}/workers")).await.unwrap();
        let status = status_json(&url);
        for w in status["workers"].as_array().unwrap() {
            let row = format!("tr[data-worker=\"{}\"]", w["worker_id"]);
            assert_eq!(
                text_in(&client, &row, "name").await,
                w["name"].as_str().unwrap()
            );
            assert_eq!(
                text_in(&client, &row, "cores").await,
                w["cores"].to_string()
            );
            assert_eq!(
                text_in(&client, &row, "units_done").await,
                w["units_done"].to_string()
            );
            assert_eq!(
                text_in(&client, &row, "active_leases").await,
                w["active_leases"].to_string()
            );
        }
        check_layout(&client, "workers", 1280).await;

        // A phone: every page fits its width.
        client.set_window_size(390, 844).await.expect("phone size");
        for (name, path) in [
            ("campaigns", "/".to_string()),
            ("campaign", format!("/campaigns/{topswops}")),
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
