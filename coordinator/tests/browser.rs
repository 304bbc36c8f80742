//! End to end in a real browser: headless Chromium driven over WebDriver (chromedriver)
//! opens the pages of a coordinator whose workers finished real campaigns (one or more of
//! every problem; for `exec`, the LABS example uploaded by `grind campaign add exec` and run
//! by `--allow-exec` workers), checks that the numbers shown equal `grind status --json`, that a new
//! campaign appears without a reload (live updates), and looks at the layout of every page
//! kind (campaigns, each problem's campaign page, workers) at 1400 px and on a 390 px phone:
//! no horizontal overflow, and no visible text box (nor a list's number) overlapping another
//! or running off the screen, measured from the boxes the page itself lays out. Screenshots
//! of every page at both widths go to `target/test-artifacts/` (the test prints each path).
//!
//! Also: parameters show as short text in the command line's words (the JSON one click away
//! in a closed `<details>`), no JSON is visible that the user did not open, the WORKERS
//! column and each worker's leases agree with `grind status --json` while a campaign runs,
//! and a running anytime campaign shows the time it has run, never a progress bar or an ETA
//! (on the pages, in `grind watch` and in `grind status`).
//!
//! Needs the Debian packages `chromium` and `chromium-driver` (or GRIND_CHROMIUM and
//! GRIND_CHROMEDRIVER naming the binaries); without them the test prints why and skips, except
//! under `CI=true`, where a missing browser fails it (as `deploy/check.sh` does for its tools).

mod common;

use common::*;
use fantoccini::{ClientBuilder, Locator};
use grind_kit::net::free_port;
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

/// Every visible text box (each line of each text node, as the browser laid it out) and
/// every list number drawn outside its item, checked for overlaps and for running off the
/// screen; text scrolled away inside a scrolling box (a wide table) does not count. Returns
/// the problems found, at most 20.
const LAYOUT_PROBLEMS: &str = r#"
const vw = document.documentElement.clientWidth;
const problems = [];
const px = (x) => Math.round(x);
function clipOf(el) {
  const r = {l: -1e9, t: -1e9, r: 1e9, b: 1e9};
  for (let a = el; a && a !== document.body && a !== document.documentElement; a = a.parentElement) {
    const cs = getComputedStyle(a), b = a.getBoundingClientRect();
    if (cs.overflowX !== 'visible') { r.l = Math.max(r.l, b.left); r.r = Math.min(r.r, b.right); }
    if (cs.overflowY !== 'visible') { r.t = Math.max(r.t, b.top); r.b = Math.min(r.b, b.bottom); }
  }
  return r;
}
function shown(el) {
  for (let a = el; a; a = a.parentElement) {
    const cs = getComputedStyle(a);
    if (cs.display === 'none' || cs.visibility === 'hidden' || cs.opacity === '0') return false;
  }
  const d = el.closest('details');
  return !(d && !d.open && !el.closest('summary'));
}
function name(el, text) {
  const cls = typeof el.className === 'string' && el.className ? '.' + el.className.split(' ').join('.') : '';
  return el.tagName.toLowerCase() + cls + ' "' + text.trim().slice(0, 24) + '"';
}
const boxes = [];
function add(box) {
  if (box.r - box.l < 1 || box.b - box.t < 1) return;
  if (box.l < -1 || box.r > vw + 1)
    problems.push('off the screen: ' + box.what + ' spans x ' + px(box.l) + '..' + px(box.r) + ' of ' + vw);
  boxes.push(box);
}
const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
while (walk.nextNode()) {
  const node = walk.currentNode, el = node.parentElement;
  if (!el || !node.textContent.trim() || el.closest('title,script,style') || !shown(el)) continue;
  const range = document.createRange();
  range.selectNodeContents(node);
  const c = clipOf(el);
  for (const q of range.getClientRects()) {
    add({l: Math.max(q.left, c.l), r: Math.min(q.right, c.r), t: Math.max(q.top, c.t),
         b: Math.min(q.bottom, c.b), owner: node, what: name(el, node.textContent)});
  }
}
// A list item's number (its marker) is drawn outside the item, to its left, in the item's
// font: it must not land on text or on another item.
const ctx = document.createElement('canvas').getContext('2d');
const items = [];
for (const li of document.querySelectorAll('li')) {
  const cs = getComputedStyle(li);
  if (!shown(li)) continue;
  const b = li.getBoundingClientRect();
  items.push({li: li, l: b.left, r: b.right, t: b.top, b: b.bottom});
  if (cs.display !== 'list-item' || cs.listStyleType === 'none' || cs.listStylePosition !== 'outside') continue;
  const list = li.parentElement;
  const marker = list && list.tagName === 'OL'
    ? (Array.prototype.indexOf.call(list.children, li) + (list.start || 1)) + '. ' : '\u2022 ';
  ctx.font = cs.fontStyle + ' ' + cs.fontWeight + ' ' + cs.fontSize + ' ' + cs.fontFamily;
  const w = ctx.measureText(marker).width;
  const left = b.left + parseFloat(cs.borderLeftWidth) + parseFloat(cs.paddingLeft);
  const top = b.top + parseFloat(cs.borderTopWidth) + parseFloat(cs.paddingTop);
  const c = clipOf(li.parentElement);
  add({l: Math.max(left - w, c.l), r: Math.min(left, c.r), t: top, b: top + parseFloat(cs.fontSize),
       owner: li, marker: true, what: 'the number "' + marker.trim() + '" of ' + name(li, li.textContent)});
}
boxes.sort((a, b) => a.t - b.t);
const overlap = (a, b) => Math.min(a.r, b.r) - Math.max(a.l, b.l) > 1 && Math.min(a.b, b.b) - Math.max(a.t, b.t) > 1;
for (let i = 0; i < boxes.length && problems.length < 20; i++) {
  const a = boxes[i];
  for (let j = i + 1; j < boxes.length && boxes[j].t < a.b; j++) {
    const b = boxes[j];
    if (a.owner === b.owner || (a.marker && a.owner.contains(b.owner)) || (b.marker && b.owner.contains(a.owner))) continue;
    if (overlap(a, b))
      problems.push('overlap: ' + a.what + ' at (' + px(a.l) + ',' + px(a.t) + ') and ' + b.what + ' at (' + px(b.l) + ',' + px(b.t) + ')');
  }
  if (a.marker) for (const it of items) {
    if (it.li !== a.owner && !it.li.contains(a.owner) && overlap(a, it))
      problems.push('overlap: ' + a.what + ' lies on another item, ' + name(it.li, it.li.textContent));
  }
}
return problems.slice(0, 20);
"#;

/// Checks the page has no horizontal overflow, readable text, no JSON shown unasked, and
/// no overlapping or cut-off text (see [`LAYOUT_PROBLEMS`]); saves a screenshot first (so a
/// failure has one to look at). Returns the layout problems found.
async fn check_layout(client: &fantoccini::Client, name: &str, width: u32) -> Vec<String> {
    // The whole page in the screenshot: the window as tall as the page (at most 8000 px;
    // the width, which the layout depends on, stays).
    let (_, _, _, window_height) = client.get_window_rect().await.expect("window size");
    let page_height = client
        .execute("return document.documentElement.scrollHeight;", vec![])
        .await
        .expect("page height")
        .as_f64()
        .unwrap_or(0.0);
    let tall = (page_height as u32 + 120).clamp(window_height as u32, 8000);
    client
        .set_window_size(width, tall)
        .await
        .expect("window size");
    let png = client.screenshot().await.expect("screenshot");
    let path = artifacts_dir().join(format!("web-{name}-{width}.png"));
    std::fs::write(&path, png).expect("write screenshot");
    println!("screenshot: {}", path.display());
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
    let found = client
        .execute(LAYOUT_PROBLEMS, vec![])
        .await
        .expect("measure the text boxes");
    let problems: Vec<String> = serde_json::from_value(found).expect("strings");
    client
        .set_window_size(width, window_height as u32)
        .await
        .expect("window size");
    problems
        .into_iter()
        .map(|p| format!("{name} at {width} px: {p}"))
        .collect()
}

/// Fails with every layout problem found on every page (all pages are looked at first).
fn assert_no_layout_problems(problems: &[String]) {
    assert!(
        problems.is_empty(),
        "{} layout problem(s) (screenshots in {}):\n{}",
        problems.len(),
        artifacts_dir().display(),
        problems.join("\n")
    );
}

/// A child process killed (and reaped) when dropped.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A small campaign of every problem, so every problem's campaign page is looked at (with
/// its incumbent drawn); the test fails when a problem is added without one here.
fn one_of_each_problem() -> Vec<(&'static str, Value)> {
    let campaigns = vec![
        ("nimsquare", json!({"n": 1000})),
        ("housie", json!({"mode": "books", "count": 2})),
        ("sieve", json!({"n": 40})),
        ("grid", json!({"size": 4, "seed": 1})),
    ];
    for entry in grind_shared::registry::registry() {
        assert!(
            // primes, topswops and exec (whose bundles `grind campaign add` uploads, see
            // add_labs_campaign) are created in the test itself.
            ["primes", "topswops", "exec"].contains(&entry.name)
                || campaigns.iter().any(|(p, _)| *p == entry.name),
            "the browser test has no campaign of problem {}: add one to one_of_each_problem",
            entry.name
        );
    }
    campaigns
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
    let mut pages = vec![
        (
            "campaign-primes".to_string(),
            format!("/campaigns/{primes}"),
        ),
        (
            "campaign-topswops".to_string(),
            format!("/campaigns/{topswops}"),
        ),
    ];
    let mut finished = vec![primes, topswops];
    for (problem, params) in one_of_each_problem() {
        let id = create(&mut admin, problem, params, 0.0).await;
        pages.push((format!("campaign-{problem}"), format!("/campaigns/{id}")));
        finished.push(id);
    }
    let exec = add_labs_campaign(&url, &["--bound-feed"]);
    pages.push(("campaign-exec".to_string(), format!("/campaigns/{exec}")));
    finished.push(exec);
    let cache = tempfile::tempdir().unwrap();
    let _w1 = start_exec_worker(&url, "browser-a", cache.path());
    let _w2 = start_exec_worker(&url, "browser-b", cache.path());
    for id in finished {
        let c = wait_finished(&mut admin, id, Duration::from_secs(120)).await;
        assert_eq!(c.state, "done", "campaign {id} ({})", c.problem);
    }

    let port = free_port();
    // Killed when dropped, also when an assertion fails (a panic unwinds past the end).
    let _chromedriver = KillOnDrop(
        Command::new(&driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver"),
    );
    let webdriver = format!("http://127.0.0.1:{port}");
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1400,900"],
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

        // Campaigns page at 1400 px: every number equals `grind status --json`.
        client
            .set_window_size(1400, 900)
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
        // What is true of a search with no end: the time it has run, no bar, no ETA.
        let elapsed = text_in(&client, &row, "elapsed").await;
        assert!(elapsed.starts_with("running "), "{elapsed}");
        assert!(
            client
                .find(Locator::Css(&format!("{row} svg.bar")))
                .await
                .is_err(),
            "a running anytime campaign shows no progress bar"
        );
        let watch = Command::new(grind_bin())
            .args(["watch", "--once", "--coordinator", &url])
            .output()
            .expect("run grind watch");
        let watch = String::from_utf8_lossy(&watch.stdout).to_string();
        let line = watch
            .lines()
            .find(|l| l.starts_with(&format!("#{hunt} ")))
            .unwrap_or_else(|| panic!("no line for campaign {hunt}: {watch}"));
        assert!(
            line.contains("running ") && line.contains("anytime search"),
            "{line}"
        );
        assert!(
            !line.contains("ETA") && !line.contains('%'),
            "grind watch shows a fraction or an ETA for an anytime search: {line}"
        );
        let status_text = Command::new(grind_bin())
            .args(["status", "--coordinator", &url])
            .output()
            .expect("run grind status");
        let status_text = String::from_utf8_lossy(&status_text.stdout).to_string();
        let line = status_text
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{hunt} ")))
            .unwrap_or_else(|| panic!("no line for campaign {hunt}: {status_text}"));
        assert!(line.contains("n=97 heuristic"), "{line}");
        assert!(line.contains("(running "), "{line}");
        assert!(!line.contains('{'), "{line}");
        // The JSON is in a closed <details>: hidden until opened (which the checker sees).
        assert!(visible_json(&client).await.is_empty());
        // A live update may swap the page (closing the details) between the click and the
        // look: open them again until the look sees them open. The swap may also come
        // between finding the summary and clicking it (a stale element): click again.
        let mut shown = false;
        for _ in 0..20 {
            let summary = client
                .find(Locator::Css(&format!("{row} details.params summary")))
                .await
                .expect("the parameters' details");
            if summary.click().await.is_err() {
                continue;
            }
            if !visible_json(&client).await.is_empty() {
                shown = true;
                break;
            }
        }
        assert!(shown, "opened, the parameters' JSON shows");
        client.goto(&format!("{url}/")).await.unwrap();

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

        // The exec campaign's page: its numbers, the solution exactly as the solver printed
        // it (what `grind export` writes), the best-over-time plot and who found what.
        let one = status["campaigns"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["campaign"] == exec)
            .unwrap();
        client
            .goto(&format!("{url}/campaigns/{exec}"))
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
        let export = Command::new(grind_bin())
            .args(["export", "--coordinator", &url, &exec.to_string()])
            .output()
            .expect("run grind export");
        assert!(export.status.success(), "grind export {exec}");
        let export = String::from_utf8_lossy(&export.stdout).trim().to_string();
        assert!(export.starts_with("v "), "exported: {export}");
        let shown = client
            .find(Locator::Css("#rendering"))
            .await
            .expect("the exec solution is shown")
            .text()
            .await
            .unwrap();
        assert_eq!(shown.trim(), export, "the page shows the exported solution");
        client
            .find(Locator::Css("svg.plot"))
            .await
            .expect("the exec plot is drawn");
        client
            .find(Locator::Css("#improvements"))
            .await
            .expect("the exec provenance table");
        let params = text_in(&client, "main", "params-short").await;
        assert!(params.contains("seeds:2"), "{params}");

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
        assert!(text_in(&client, "main", "elapsed")
            .await
            .starts_with("running "));
        assert!(
            client.find(Locator::Css("main svg.bar")).await.is_err(),
            "no progress bar on the running anytime campaign's page"
        );
        client
            .find(Locator::Css("svg.plot"))
            .await
            .expect("the best-over-time curve is drawn");

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

        // Every page kind at 1400 px and on a 390 px phone: it fits, and no text box
        // overlaps another or runs off the screen.
        pages.insert(0, ("campaigns".to_string(), "/".to_string()));
        pages.push((
            "campaign-topswops-anytime".to_string(),
            format!("/campaigns/{hunt}"),
        ));
        pages.push(("workers".to_string(), "/workers".to_string()));
        let mut problems = Vec::new();
        for (width, height) in [(1400, 900), (390, 844)] {
            client
                .set_window_size(width, height)
                .await
                .expect("window size");
            for (name, path) in &pages {
                client.goto(&format!("{url}{path}")).await.unwrap();
                client.find(Locator::Css("h1")).await.expect("a heading");
                problems.extend(check_layout(&client, name, width).await);
            }
        }
        assert_no_layout_problems(&problems);
    }
    .await;
    let _ = client.close().await;
    result
}
