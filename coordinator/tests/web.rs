//! The web front against a real `grind serve` with real workers: the JSON API agrees with
//! `grind status --json`, pages and exports are served on the gRPC port, live events flow,
//! `/metrics` is valid Prometheus text exposition, and `grind watch --once` reports.

mod common;

use common::http::{get, get_with, post_form, stream_until};
use common::*;
use grind_coordinator::web::routes::CONTENT_SECURITY_POLICY;
use grind_proto::v1 as pb;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::process::Command;
use std::time::Duration;

fn grind_json(args: &[&str]) -> Value {
    let out = grind_ok(args);
    serde_json::from_slice(&out.stdout).expect("grind prints JSON")
}

/// Checks the Prometheus text exposition format (version 0.0.4) line by line: comments are
/// HELP or TYPE lines naming a valid metric, TYPE comes once and before the family's samples,
/// samples are `name{label="value",...} value` with valid names, escapes and numbers, and
/// histograms have increasing cumulative buckets ending at `+Inf` equal to `_count`.
fn check_exposition(text: &str) -> HashMap<String, f64> {
    fn valid_name(name: &str) -> bool {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    }
    fn value(text: &str) -> f64 {
        match text {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            "NaN" => f64::NAN,
            _ => text
                .parse()
                .unwrap_or_else(|_| panic!("bad sample value {text:?}")),
        }
    }
    assert!(text.ends_with('\n'), "the exposition ends with a newline");
    let mut types: HashMap<String, String> = HashMap::new();
    let mut sampled: HashSet<String> = HashSet::new();
    let mut samples = HashMap::new();
    let mut buckets: HashMap<String, Vec<(f64, f64)>> = HashMap::new();
    for line in text.lines() {
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            let (keyword, name) = (parts.next().unwrap(), parts.next().unwrap_or(""));
            assert!(valid_name(name), "bad metric name in {line:?}");
            match keyword {
                "HELP" => {}
                "TYPE" => {
                    let kind = parts.next().unwrap_or("");
                    assert!(
                        ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
                        "bad type in {line:?}"
                    );
                    assert!(!sampled.contains(name), "TYPE after samples: {line:?}");
                    assert!(
                        types.insert(name.to_string(), kind.to_string()).is_none(),
                        "TYPE given twice: {line:?}"
                    );
                }
                _ => panic!("unknown comment {line:?}"),
            }
            continue;
        }
        assert!(!line.starts_with('#'), "bad comment {line:?}");
        let (series, number) = line.rsplit_once(' ').expect("a sample has a value");
        let v = value(number);
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => (name, rest.strip_suffix('}').expect("labels end with }")),
            None => (series, ""),
        };
        assert!(valid_name(name), "bad sample name in {line:?}");
        // Labels: name="value" pairs, values with \\ \" \n escapes only.
        let mut rest = labels;
        let mut le = None;
        let mut others = Vec::new();
        while !rest.is_empty() {
            let (label, after) = rest.split_once("=\"").expect("label=\"value\"");
            assert!(valid_name(label), "bad label name in {line:?}");
            let mut end = None;
            let mut escaped = false;
            for (i, c) in after.char_indices() {
                match (escaped, c) {
                    (true, '\\' | '"' | 'n') => escaped = false,
                    (true, _) => panic!("bad escape in {line:?}"),
                    (false, '\\') => escaped = true,
                    (false, '"') => {
                        end = Some(i);
                        break;
                    }
                    (false, '\n') => panic!("raw newline in {line:?}"),
                    _ => {}
                }
            }
            let end = end.expect("closing quote");
            if label == "le" {
                le = Some(value(&after[..end]));
            } else {
                others.push(format!("{label}=\"{}\"", &after[..end]));
            }
            rest = &after[end + 1..];
            rest = rest.strip_prefix(',').unwrap_or(rest);
        }
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| {
                name.strip_suffix(s)
                    .filter(|base| types.get(*base).map(String::as_str) == Some("histogram"))
            })
            .unwrap_or(name);
        assert!(
            types.contains_key(family),
            "sample before its TYPE: {line:?}"
        );
        sampled.insert(family.to_string());
        if name.ends_with("_bucket") {
            buckets
                .entry(format!("{family}{{{}}}", others.join(",")))
                .or_default()
                .push((le.expect("a bucket has le"), v));
        }
        samples.insert(series.to_string(), v);
    }
    for (series, list) in &buckets {
        assert!(
            list.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
            "{series}: {list:?}"
        );
        assert_eq!(
            list.last().unwrap().0,
            f64::INFINITY,
            "{series} ends at +Inf"
        );
    }
    for (name, kind) in &types {
        if kind == "histogram" {
            let count = samples[&format!("{name}_count")];
            let inf = buckets
                .iter()
                .find(|(k, _)| k.starts_with(&format!("{name}{{")))
                .map(|(_, l)| l.last().unwrap().1)
                .expect("buckets");
            assert_eq!(count, inf, "{name}: +Inf bucket equals _count");
        }
    }
    samples
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_api_pages_events_and_metrics_agree_with_status() {
    let dir = tempfile::tempdir().unwrap();
    let coordinator = start_coordinator(dir.path(), 3000, &[]);
    let base = coordinator.url.clone();
    let mut admin = admin(&base).await;
    // A count campaign (every unit replicated, so results are checked) and an optimisation one.
    let primes = create(
        &mut admin,
        "primes",
        json!({"from": 0, "to": 200_000, "unit": 10_000}),
        1.0,
    )
    .await;
    let topswops = create(&mut admin, "topswops", json!({"n": 7}), 0.0).await;
    let _w1 = start_worker(&base, "web-a", 1);
    let _w2 = start_worker(&base, "web-b", 1);
    for id in [primes, topswops] {
        let c = wait_finished(&mut admin, id, Duration::from_secs(120)).await;
        assert_eq!(c.state, "done", "campaign {id}");
    }
    let url = base.trim_start_matches("http://").to_string();
    let coordinator_flag = format!("--coordinator=http://{url}");

    // /api/campaigns carries what `grind status --json` says, plus estimates.
    let status = grind_json(&["status", &coordinator_flag, "--json"]);
    let api = get(&base, "/api/campaigns").await;
    assert_eq!(api.status, 200);
    assert!(api.content_type.starts_with("application/json"));
    let api = api.json();
    for (ours, theirs) in api["campaigns"]
        .as_array()
        .unwrap()
        .iter()
        .zip(status["campaigns"].as_array().unwrap())
    {
        for key in [
            "campaign", "problem", "state", "value", "proven", "units", "workers", "params",
        ] {
            assert_eq!(ours[key], theirs[key], "{key}");
        }
        assert_eq!(ours["estimate"]["progress"]["value"], 1.0);
        assert_eq!(ours["estimate"]["method"], "finished");
    }
    assert_eq!(
        api["campaigns"][0]["value"],
        primes_between(0, 200_000).to_string()
    );

    // One campaign: improvements with provenance, events, exports.
    let one = get(&base, &format!("/api/campaigns/{topswops}"))
        .await
        .json();
    assert_eq!(one["value"], "16", "f(7) = 16");
    let improvements = one["improvements"].as_array().unwrap();
    assert!(!improvements.is_empty());
    let last = improvements.last().unwrap();
    assert_eq!(last["score"], 16);
    assert!(
        ["web-a", "web-b"].contains(&last["worker"].as_str().unwrap()),
        "{last}"
    );
    assert!(!last["worker_version"].as_str().unwrap().is_empty());
    // The rendering is the submission line: the deck, cards separated by commas, which a
    // plain replay plays for f(7) = 16 flips.
    let deck: Vec<usize> = one["rendering"]
        .as_str()
        .unwrap()
        .trim()
        .split(',')
        .map(|card| card.parse().unwrap())
        .collect();
    let mut sorted = deck.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (1..=7).collect::<Vec<_>>(), "{deck:?}");
    assert_eq!(topswops_flips(&deck), 16, "{deck:?}");
    assert!(!one["events"].as_array().unwrap().is_empty());
    let export = get(&base, &format!("/api/campaigns/{topswops}/export")).await;
    assert_eq!(export.status, 200);
    assert_eq!(export.body, one["rendering"].as_str().unwrap());
    let provenance = get(&base, &format!("/api/campaigns/{topswops}/provenance"))
        .await
        .json();
    assert_eq!(provenance["value"], "16");
    let events = get(&base, &format!("/api/campaigns/{primes}/events?limit=5"))
        .await
        .json();
    let events = events["events"].as_array().unwrap();
    assert_eq!(events.len(), 5);
    assert!(
        events[0]["id"].as_i64() > events[4]["id"].as_i64(),
        "newest first"
    );
    assert_eq!(get(&base, "/api/campaigns/999").await.status, 404);
    assert_eq!(get(&base, "/no/such/page").await.status, 404);

    // Workers agree with `grind status --json`.
    let workers = get(&base, "/api/workers").await.json();
    let theirs = status["workers"].as_array().unwrap();
    let ours = workers["workers"].as_array().unwrap();
    assert_eq!(ours.len(), 2);
    for (o, t) in ours.iter().zip(theirs) {
        for key in [
            "worker_id",
            "name",
            "host",
            "cores",
            "units_done",
            "cpu_seconds",
            "version",
        ] {
            assert_eq!(o[key], t[key], "{key}");
        }
        assert_eq!(o["stale"], false);
    }
    let found: u64 = ours
        .iter()
        .map(|w| w["improvements"].as_u64().unwrap())
        .sum();
    assert_eq!(found as usize, improvements.len());

    // Pages and drawings.
    let page = get(&base, "/").await;
    assert!(page.content_type.starts_with("text/html"));
    assert!(page.body.contains(&format!("data-campaign=\"{primes}\"")));
    assert!(
        page.body
            .contains("data-v=\"exact_count\" data-proven=\"true\">exact count<"),
        "the campaigns page says what a value means in the CLI's words"
    );
    let page = get(&base, &format!("/campaigns/{topswops}")).await;
    assert!(
        page.body.contains("class=\"figure deck\""),
        "the deck is drawn"
    );
    assert!(
        page.body
            .contains("data-v=\"proven_optimum\" data-proven=\"true\">proven optimum<"),
        "the campaign page says what its value means in the CLI's words"
    );
    assert!(
        page.body.contains("class=\"plot\""),
        "the best-value plot is drawn"
    );
    let svg = get(&base, &format!("/campaigns/{topswops}/best.svg")).await;
    assert_eq!(svg.content_type, "image/svg+xml");
    assert!(get(&base, "/workers").await.body.contains("web-a"));
    assert!(get(&base, "/static/grind.css")
        .await
        .body
        .contains("--accent"));
    assert!(get(&base, "/static/grind.js")
        .await
        .body
        .contains("EventSource"));

    // Live events: a change event arrives on the stream.
    let text = stream_until(&base, "/api/events", Duration::from_secs(15), |t| {
        t.contains("event: change")
    })
    .await;
    assert!(text.contains("data: "), "{text}");

    // Metrics: valid exposition, and the numbers match the campaigns.
    let metrics = get(&base, "/metrics").await;
    assert!(metrics
        .content_type
        .starts_with("text/plain; version=0.0.4"));
    let samples = check_exposition(&metrics.body);
    let done: u64 = api["campaigns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["units"]["done"].as_u64().unwrap())
        .sum();
    assert_eq!(samples["grind_units_done_total"], done as f64);
    assert!(samples["grind_leases_granted_total"] >= done as f64);
    assert!(samples["grind_results_total"] >= done as f64);
    assert_eq!(
        samples["grind_improvements_accepted_total"],
        improvements.len() as f64
    );
    assert_eq!(samples["grind_workers_registered"], 2.0);
    assert!(samples["grind_leases_renewed_total"] >= 0.0);
    assert!(samples["grind_store_transaction_seconds_count"] > 0.0);
    assert_eq!(
        samples[&format!(
            "grind_campaign_best_value{{campaign=\"{topswops}\",objective=\"max\",problem=\"topswops\"}}"
        )],
        16.0
    );
    assert!(samples.contains_key("grind_replication_disagreements_total"));
    assert!(samples.contains_key("grind_leases_expired_total"));
    assert!(samples.contains_key("grind_units_failed_total"));
    assert!(samples.contains_key("grind_improvements_rejected_total"));
    assert!(samples.contains_key("grind_workers_connected"));

    // `grind watch --once` prints one line per campaign from the same API.
    let out = Command::new(grind_bin())
        .args(["watch", &coordinator_flag, "--once"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(&format!("#{primes} primes")), "{text}");
    assert!(text.contains("best 16 (proven optimum)"), "{text}");
    assert!(text.contains("best 17984 (exact count)"), "{text}");
}

#[test]
fn exposition_checker_refuses_bad_text() {
    let good = "# HELP a_total x\n# TYPE a_total counter\na_total{k=\"v\\\"\"} 3\n";
    assert_eq!(check_exposition(good)["a_total{k=\"v\\\"\"}"], 3.0);
    for bad in [
        "a_total 3\n",                               // no TYPE
        "# TYPE a counter\na{k=v} 1\n",              // unquoted label
        "# TYPE a counter\na 1x\n",                  // bad number
        "# TYPE a counter\n# TYPE a counter\na 1\n", // TYPE twice
        "# TYPE 1a counter\n",                       // bad name
        "# TYPE a counter\na 1",                     // no final newline
    ] {
        assert!(
            std::panic::catch_unwind(|| check_exposition(bad)).is_err(),
            "accepted {bad:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_required_tokens_the_web_front_needs_an_admin_token() {
    let dir = tempfile::tempdir().unwrap();
    let coordinator = start_coordinator(dir.path(), 30_000, &["--require-auth"]);
    let base = coordinator.url.clone();
    let admin_token = create_token(&coordinator.db, true);
    let worker_token = create_token(&coordinator.db, false);
    let bearer = format!("Bearer {admin_token}");
    // Tokens are reloaded every 500 ms: wait until the admin token is known.
    wait_for(
        "the admin token to be accepted",
        Duration::from_secs(20),
        || {
            let (base, bearer) = (base.clone(), bearer.clone());
            async move {
                (get_with(&base, "/api/campaigns", &[("authorization", &bearer)])
                    .await
                    .status
                    == 200)
                    .then_some(())
            }
        },
    )
    .await;
    for path in [
        "/",
        "/api/campaigns",
        "/api/workers",
        "/metrics",
        "/static/grind.css",
    ] {
        let refused = get(&base, path).await;
        assert_eq!(refused.status, 401, "{path} without a token");
        assert!(
            refused.body.contains("admin token"),
            "{path}: {}",
            refused.body
        );
        let worker = format!("Bearer {worker_token}");
        assert_eq!(
            get_with(&base, path, &[("authorization", &worker)])
                .await
                .status,
            401,
            "{path} with a worker token"
        );
        assert_eq!(
            get_with(&base, path, &[("authorization", &bearer)])
                .await
                .status,
            200,
            "{path} with the admin token"
        );
    }
    // The token form posts to /login, which checks the token and sets an HttpOnly cookie.
    let form = format!("token={admin_token}&next=%2Fworkers");
    let login = post_form(&base, "/login", &form).await;
    assert_eq!(login.status, 303, "{}", login.body);
    assert_eq!(login.headers["location"], "/workers");
    let set = login.headers["set-cookie"].to_str().unwrap();
    assert_eq!(
        set,
        format!("grind_token={admin_token}; Path=/; HttpOnly; SameSite=Strict")
    );
    let refused = post_form(&base, "/login", &format!("token={worker_token}&next=%2F")).await;
    assert_eq!(refused.status, 401, "a worker token opens no page");
    assert!(refused.headers.get("set-cookie").is_none());
    let elsewhere = post_form(
        &base,
        "/login",
        &format!("token={admin_token}&next=https%3A%2F%2Fevil.example%2F"),
    )
    .await;
    assert_eq!(
        elsewhere.headers["location"], "/",
        "no redirect off the site"
    );
    let page = get(&base, "/workers").await;
    assert!(
        page.body
            .contains("<form method=\"post\" action=\"/login\">")
            && page.body.contains("name=\"next\" value=\"/workers\""),
        "{}",
        page.body
    );
    assert!(
        !page.body.contains("document.cookie"),
        "no script sets the cookie"
    );
    let cookie = format!("theme=dark; grind_token={admin_token}");
    assert_eq!(
        get_with(&base, "/workers", &[("cookie", &cookie)])
            .await
            .status,
        200
    );
    // `grind watch` sends the admin token like the other admin commands.
    let out = Command::new(grind_bin())
        .args([
            "watch",
            "--coordinator",
            &base,
            "--once",
            "--token",
            &admin_token,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(grind_bin())
        .args(["watch", "--coordinator", &base, "--once"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "watch without a token is refused");
}

/// Worker-controlled text (name, host, version, commit) reaches every page escaped, and the
/// pages carry a content security policy that allows no inline script or style.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_text_reaches_the_pages_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let coordinator = start_coordinator(dir.path(), 30_000, &[]);
    let base = coordinator.url.clone();
    let mut admin = admin(&base).await;
    let campaign = create(&mut admin, "topswops", json!({"n": 5}), 0.0).await;
    let script = "<script>alert(1)</script>";
    let host = format!("{script}\"><img src=x onerror=alert(2)>");
    let mut client = raw_worker(&base).await;
    let worker = client
        .register(pb::RegisterRequest {
            name: script.into(),
            host: host.clone(),
            cores: 1,
            version: format!("{script}'"),
            git_commit: script.into(),
            previous_worker_id: 0,
            ..Default::default()
        })
        .await
        .expect("register")
        .into_inner()
        .worker_id;
    // A lease and an accepted improvement put the worker on the campaign page too: 3 1 4 5 2
    // takes 7 flips.
    let grant = lease_one(&mut client, worker).await;
    let reply = client
        .report_improvement(pb::ImprovementRequest {
            worker_id: worker,
            lease_id: grant.lease_id,
            campaign_id: campaign,
            solution_json: json!({"deck": [3, 1, 4, 5, 2], "flips": 7}).to_string(),
            claimed_score: 7,
            ..Default::default()
        })
        .await
        .expect("report the improvement")
        .into_inner();
    assert!(reply.accepted, "{reply:?}");

    let escaped = "&lt;script&gt;alert(1)&lt;/script&gt;";
    for (path, shows) in [
        (
            "/workers",
            vec![
                escaped.to_string(),
                format!("{escaped}&quot;&gt;&lt;img src=x onerror=alert(2)&gt;"),
                format!("{escaped}'"),
            ],
        ),
        (
            &*format!("/campaigns/{campaign}"),
            vec![escaped.to_string(), "&lt;script&gt;aler".to_string()],
        ),
        ("/", vec![]),
    ] {
        for partial in [false, true] {
            let headers: &[(&str, &str)] = if partial {
                &[("x-grind-partial", "1")]
            } else {
                &[]
            };
            let page = get_with(&base, path, headers).await;
            assert_eq!(page.status, 200, "{path}");
            assert_eq!(
                page.headers["content-security-policy"], CONTENT_SECURITY_POLICY,
                "{path}"
            );
            assert!(CONTENT_SECURITY_POLICY.starts_with("default-src 'self'"));
            assert!(
                !page.body.contains("<script>alert"),
                "{path}: {}",
                page.body
            );
            assert!(!page.body.contains("<img"), "{path}: {}", page.body);
            assert!(!page.body.contains(" style="), "{path}: inline style");
            let scripts = if partial { 0 } else { 1 };
            assert_eq!(page.body.matches("<script").count(), scripts, "{path}");
            if !partial {
                assert!(page
                    .body
                    .contains("<script src=\"/static/grind.js\"></script>"));
            }
            for text in &shows {
                assert!(
                    page.body.contains(text.as_str()),
                    "{path} shows {text}: {}",
                    page.body
                );
            }
        }
    }
    // The JSON API gives the text as it is (JSON, not HTML, and not sniffed as HTML).
    let api = get(&base, "/api/workers").await;
    assert_eq!(api.headers["x-content-type-options"], "nosniff");
    assert_eq!(api.json()["workers"][0]["name"], script);
    assert_eq!(api.json()["workers"][0]["host"], host.as_str());
}

/// Units done once and waiting for a replica run are "verifying", not "pending", on the
/// campaigns table and the campaign page, as in `grind status`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verifying_units_have_their_own_cell_on_the_pages() {
    let dir = tempfile::tempdir().unwrap();
    // A lone worker may re-check its own results only after the self-check delay (60 s by
    // default): until then every unit of a fully replicated campaign waits, verifying.
    let coordinator = start_coordinator(dir.path(), 30_000, &[]);
    let base = coordinator.url.clone();
    let mut admin = admin(&base).await;
    let campaign = create(
        &mut admin,
        "primes",
        json!({"from": 0, "to": 30_000, "unit": 10_000}),
        1.0,
    )
    .await;
    let _alone = start_worker(&base, "alone", 1);
    let flag = format!("--coordinator={base}");
    let units = wait_for("every unit verifying", Duration::from_secs(60), || {
        let status = grind_json(&["status", &flag, "--json"]);
        let units = status["campaigns"][0]["units"].clone();
        async move { (units["verifying"] == 3).then_some(units) }
    })
    .await;
    assert_eq!(units["pending"], 0, "{units}");
    let cell = |html: &str, key: &str| -> String {
        let at = html
            .find(&format!("data-k=\"{key}\""))
            .unwrap_or_else(|| panic!("no {key} cell"));
        let rest = &html[at..];
        let start = rest.find('>').unwrap() + 1;
        rest[start..start + rest[start..].find('<').unwrap()].to_string()
    };
    let table = get(&base, "/").await.body;
    let row = &table[table
        .find(&format!("<tr data-campaign=\"{campaign}\""))
        .expect("the campaign's row")..];
    assert_eq!(cell(row, "pending"), "0");
    assert_eq!(cell(row, "verifying"), "3");
    assert!(table.contains(">Verifying</th>"), "a Verifying column");
    let page = get(&base, &format!("/campaigns/{campaign}")).await.body;
    assert_eq!(cell(&page, "pending"), "0");
    assert_eq!(cell(&page, "verifying"), "3");
}
