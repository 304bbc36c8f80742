//! Server-side rendered pages: campaigns, one campaign, workers. Each function returns the
//! page's body (what `<main>` holds); `html::layout` wraps it for a full page load, and the
//! live-update script fetches the body alone. Cells that tests read carry `data-k` names
//! equal to the JSON keys of `grind status --json`.

use std::fmt::Write;

use super::data::{CampaignRow, Event, Improvement, WorkerRow};
use super::estimate::{Estimate, Interval};
use super::html::{esc, fmt_duration, fmt_rate, fmt_time};
use super::svg;

/// Everything the campaign page shows.
pub struct CampaignDetail {
    /// The campaign with its estimate.
    pub row: CampaignRow,
    /// Every improvement, oldest first.
    pub improvements: Vec<Improvement>,
    /// The latest events, newest first.
    pub events: Vec<Event>,
    /// The problem's own text rendering of the result (its export format).
    pub rendering: Option<String>,
    /// A drawing of the incumbent (HTML/SVG), when one fits.
    pub drawing: Option<String>,
}

fn badge(state: &str) -> String {
    format!(
        "<span class=\"badge s-{s}\" data-k=\"state\">{s}</span>",
        s = esc(state)
    )
}

fn proven(yes: bool) -> &'static str {
    if yes {
        "<span class=\"proven\" data-k=\"proven\" data-v=\"true\">proven</span>"
    } else {
        "<span class=\"muted\" data-k=\"proven\" data-v=\"false\">no</span>"
    }
}

fn percent(x: f64) -> String {
    format!("{:.1}%", (x * 100.0).clamp(0.0, 100.0))
}

fn progress_bar(e: &Estimate) -> String {
    let p = e.progress;
    let title = if e.open_ended {
        format!(
            "{} done so far (more units may still be split off)",
            percent(p.value)
        )
    } else {
        format!(
            "{} done (between {} and {})",
            percent(p.value),
            percent(p.low),
            percent(p.high)
        )
    };
    format!(
        "<div class=\"bar\" title=\"{t}\" data-k=\"progress\" data-v=\"{v:.4}\">\
         <div class=\"band\" style=\"left:{lo:.2}%;width:{w:.2}%\"></div>\
         <div class=\"fill\" style=\"width:{v100:.2}%\"></div></div>\
         <span class=\"small\">{pv}</span>",
        t = esc(&title),
        v = p.value,
        lo = p.low * 100.0,
        w = (p.high - p.low).max(0.0) * 100.0,
        v100 = p.value * 100.0,
        pv = percent(p.value),
    )
}

fn interval_text(i: &Interval, open_ended: bool) -> String {
    let prefix = if open_ended { "≥ " } else { "" };
    if (i.high - i.low) < 0.5 {
        format!("{prefix}{}", fmt_duration(i.value))
    } else {
        format!(
            "{prefix}{} <span class=\"small\">({}–{})</span>",
            fmt_duration(i.value),
            fmt_duration(i.low),
            fmt_duration(i.high)
        )
    }
}

fn eta(row: &CampaignRow) -> String {
    let state = row.status.state.as_str();
    if state != "running" {
        return "<span class=\"muted\">—</span>".into();
    }
    match &row.estimate.eta_seconds {
        Some(i) => interval_text(i, row.estimate.open_ended),
        None => "<span class=\"muted\">unknown</span>".into(),
    }
}

fn value_text(row: &CampaignRow) -> String {
    if row.status.value.is_empty() {
        "—".into()
    } else {
        esc(&row.status.value)
    }
}

/// The campaigns page.
pub fn campaigns(rows: &[CampaignRow]) -> String {
    let mut out = String::from("<h1>Campaigns</h1>");
    if rows.is_empty() {
        out.push_str(
            "<p class=\"muted\">No campaigns yet: <code>grind campaign add --coordinator URL PROBLEM ...</code></p>",
        );
        return out;
    }
    out.push_str(
        "<div class=\"scroll\"><table id=\"campaigns\"><thead><tr><th>#</th><th>Problem</th>\
         <th class=\"params hide-sm\">Parameters</th><th>State</th><th class=\"num\">Best</th><th>Proven</th>\
         <th>Progress</th><th class=\"num\">Pending</th><th class=\"num\">Leased</th>\
         <th class=\"num\">Done</th><th class=\"num\">Failed</th><th class=\"num\">Workers</th>\
         <th class=\"num\">Units/s</th><th>ETA</th></tr></thead><tbody>",
    );
    for row in rows {
        let s = &row.status;
        let u = s.units.unwrap_or_default();
        let _ = write!(
            out,
            "<tr data-campaign=\"{id}\"><td><a href=\"/campaigns/{id}\">{id}</a></td>\
             <td><a href=\"/campaigns/{id}\" data-k=\"problem\">{problem}</a>{name}</td>\
             <td class=\"params hide-sm\"><code>{params}</code></td><td>{state}</td>\
             <td class=\"num\" data-k=\"value\">{value}</td><td>{proven}</td><td>{bar}</td>\
             <td class=\"num\" data-k=\"pending\">{pending}</td><td class=\"num\" data-k=\"leased\">{leased}</td>\
             <td class=\"num\" data-k=\"done\">{done}</td><td class=\"num\" data-k=\"failed\">{failed}</td>\
             <td class=\"num\" data-k=\"workers\">{workers}</td><td class=\"num\">{rate}</td><td>{eta}</td></tr>",
            id = s.campaign_id,
            problem = esc(&s.problem),
            name = if s.name.is_empty() || s.name == format!("{} {}", s.problem, s.params_json) {
                String::new()
            } else {
                format!("<div class=\"small\">{}</div>", esc(&s.name))
            },
            params = esc(&s.params_json),
            state = badge(&s.state),
            value = value_text(row),
            proven = proven(s.proven),
            bar = progress_bar(&row.estimate),
            pending = u.pending + u.verifying,
            leased = u.leased,
            done = u.done,
            failed = u.failed,
            workers = s.workers,
            rate = fmt_rate(row.throughput.units_per_second),
            eta = eta(row),
        );
    }
    out.push_str("</tbody></table></div>");
    out
}

fn card(key: &str, value: &str) -> String {
    format!("<div class=\"card\"><div class=\"k\">{key}</div><div class=\"v\">{value}</div></div>")
}

/// One campaign's page.
pub fn campaign(d: &CampaignDetail) -> String {
    let s = &d.row.status;
    let u = s.units.unwrap_or_default();
    let id = s.campaign_id;
    let mut out = String::new();
    let _ = write!(
        out,
        "<h1 data-campaign=\"{id}\">Campaign {id} · {problem} {state}</h1><div class=\"cards\">",
        problem = esc(&s.problem),
        state = badge(&s.state),
    );
    let total = u.pending + u.verifying + u.leased + u.done + u.failed;
    for (k, v) in [
        (
            "best value",
            format!("<span data-k=\"value\">{}</span>", value_text(&d.row)),
        ),
        ("proven", proven(s.proven).to_string()),
        ("progress", progress_bar(&d.row.estimate)),
        ("ETA", eta(&d.row)),
        (
            "units done",
            format!(
                "<span data-k=\"done\">{}</span> / {total}{}",
                u.done,
                if u.split_complete { "" } else { "+" }
            ),
        ),
        (
            "pending · leased · failed",
            format!(
                "<span data-k=\"pending\">{}</span> · <span data-k=\"leased\">{}</span> · <span data-k=\"failed\">{}</span>",
                u.pending + u.verifying,
                u.leased,
                u.failed
            ),
        ),
        ("workers", format!("<span data-k=\"workers\">{}</span>", s.workers)),
        (
            "throughput",
            format!(
                "{} units/s · {} CPU",
                fmt_rate(d.row.throughput.units_per_second),
                fmt_rate(d.row.throughput.cpu_seconds_per_second)
            ),
        ),
        ("CPU time", fmt_duration(s.cpu_seconds)),
        ("disputed", u.disputed.to_string()),
    ] {
        out.push_str(&card(k, &v));
    }
    let _ = write!(
        out,
        "</div><p class=\"small\">Objective {objective} · created {created} UTC{finished} · \
         estimate from {samples} unit-size sample(s), method “{method}”</p>\
         <h2>Parameters</h2><pre>{params}</pre>",
        objective = esc(&s.objective),
        created = fmt_time(s.created_ms),
        finished = if s.finished_ms > 0 {
            format!(" · finished {} UTC", fmt_time(s.finished_ms))
        } else {
            String::new()
        },
        samples = d.row.estimate.samples,
        method = d.row.estimate.method,
        params = esc(&s.params_json),
    );
    out.push_str("<h2>Incumbent</h2>");
    if let Some(drawing) = &d.drawing {
        let _ = write!(out, "<div class=\"scroll\">{drawing}</div>");
    }
    match &d.rendering {
        Some(text) => {
            let _ = write!(out, "<pre id=\"rendering\">{}</pre>", esc(text));
        }
        None => out.push_str("<p class=\"muted\">No result yet.</p>"),
    }
    let _ = write!(
        out,
        "<p>Export: <a href=\"/api/campaigns/{id}/export\">submission</a> · \
         <a href=\"/api/campaigns/{id}/provenance\">provenance record</a> · \
         <a href=\"/api/campaigns/{id}\">status JSON</a> · \
         <a href=\"/api/campaigns/{id}/events\">events JSON</a></p>"
    );
    if s.objective == "max" || s.objective == "min" {
        let points: Vec<svg::Point> = d
            .improvements
            .iter()
            .map(|i| svg::Point {
                at_ms: i.at_ms,
                score: i.score,
            })
            .collect();
        let end = if s.finished_ms > 0 {
            s.finished_ms
        } else {
            d.improvements
                .last()
                .map_or(s.created_ms, |i| i.at_ms)
                .max(d.events.first().map_or(0, |e| e.at_ms))
        };
        let _ = write!(
            out,
            "<h2>Best value over time</h2>{}",
            svg::best_over_time(&points, s.created_ms, end)
        );
    }
    improvements_table(&mut out, &d.improvements, s.solver_version);
    events_table(&mut out, id, &d.events);
    out
}

/// Most improvements listed on the page (the API has them all).
const MAX_IMPROVEMENTS_SHOWN: usize = 200;

/// The improvements with their provenance; solver versions older than the campaign's
/// `current_solver` are marked "older".
fn improvements_table(out: &mut String, improvements: &[Improvement], current_solver: u32) {
    let _ = write!(
        out,
        "<h2>Provenance of improvements ({})</h2>",
        improvements.len()
    );
    if improvements.is_empty() {
        out.push_str("<p class=\"muted\">None.</p>");
        return;
    }
    out.push_str(
        "<div class=\"scroll\"><table id=\"improvements\"><thead><tr><th>When (UTC)</th>\
         <th class=\"num\">Score</th><th>Source</th><th>Worker</th><th>Host</th><th>Version</th>\
         <th>Commit</th><th class=\"num\">Solver</th><th class=\"num\">Unit</th><th class=\"num\">Lease</th>\
         <th class=\"num\">Lease CPU</th></tr></thead><tbody>",
    );
    for i in improvements.iter().rev().take(MAX_IMPROVEMENTS_SHOWN) {
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td><code>{}</code></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            fmt_time(i.at_ms),
            i.score,
            esc(&i.source),
            esc(&i.worker),
            esc(&i.host),
            esc(&i.worker_version),
            esc(&i.git_commit.chars().take(12).collect::<String>()),
            if i.solver_version < current_solver {
                format!("{} (older)", i.solver_version)
            } else {
                i.solver_version.to_string()
            },
            i.unit.map(|u| u.to_string()).unwrap_or_default(),
            i.lease.map(|l| l.to_string()).unwrap_or_default(),
            i.lease_cpu_seconds
                .map(fmt_duration)
                .unwrap_or_else(|| "running".into()),
        );
    }
    out.push_str("</tbody></table></div>");
}

fn events_table(out: &mut String, campaign: i64, events: &[Event]) {
    let _ = write!(out, "<h2>Event log (latest {})</h2>", events.len());
    out.push_str(
        "<div class=\"scroll\"><table id=\"events\"><thead><tr><th class=\"num\">#</th><th>When (UTC)</th>\
         <th>Kind</th><th class=\"num\">Unit</th><th class=\"num\">Lease</th><th class=\"num\">Worker</th>\
         <th>Detail</th></tr></thead><tbody>",
    );
    let opt = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
    for e in events {
        let mut detail = e.detail.to_string();
        if detail.len() > 240 {
            let cut = (0..=240)
                .rev()
                .find(|&i| detail.is_char_boundary(i))
                .unwrap_or(0);
            detail.truncate(cut);
            detail.push('…');
        }
        let _ = write!(
            out,
            "<tr><td class=\"num\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"wrap\"><code>{}</code></td></tr>",
            e.id,
            fmt_time(e.at_ms),
            esc(&e.kind),
            opt(e.unit),
            opt(e.lease),
            opt(e.worker),
            esc(&detail),
        );
    }
    out.push_str("</tbody></table></div>");
    if let Some(last) = events.last() {
        let _ = write!(
            out,
            "<p class=\"small\"><a href=\"/api/campaigns/{campaign}/events?before={}\">older events (JSON)</a></p>",
            last.id
        );
    }
}

/// The workers page; `stale_ms` is the silence after which a worker is highlighted.
pub fn workers(rows: &[WorkerRow], stale_ms: i64) -> String {
    let stale = rows.iter().filter(|w| w.stale).count();
    let mut out = format!(
        "<h1>Workers</h1><p class=\"small\"><span data-k=\"registered\">{}</span> registered · \
         <span data-k=\"connected\">{}</span> connected · {stale} silent for more than {}</p>",
        rows.len(),
        rows.len() - stale,
        fmt_duration(stale_ms as f64 / 1000.0)
    );
    if rows.is_empty() {
        out.push_str("<p class=\"muted\">No worker has registered yet.</p>");
        return out;
    }
    out.push_str(
        "<div class=\"scroll\"><table id=\"workers\"><thead><tr><th class=\"num\">#</th><th>Name</th>\
         <th>Host</th><th class=\"num\">Cores</th><th class=\"hide-sm\">Version</th><th>Leases now</th>\
         <th class=\"num\">Last heard</th><th class=\"num\">Units done</th><th class=\"num\">CPU</th>\
         <th class=\"num\">Improvements</th><th class=\"num\">Rejected</th></tr></thead><tbody>",
    );
    for w in rows {
        let i = &w.info;
        let leases = if w.leases.is_empty() {
            "<span data-k=\"active_leases\">0</span> <span class=\"muted\">idle</span>".to_string()
        } else {
            let shown: Vec<String> = w
                .leases
                .iter()
                .take(4)
                .map(|l| {
                    let f = l
                        .fraction
                        .map(|f| format!(" {:.0}%", f * 100.0))
                        .unwrap_or_default();
                    format!(
                        "<a href=\"/campaigns/{}\">c{}</a>:{}{}",
                        l.campaign,
                        l.campaign,
                        esc(&l.label),
                        f
                    )
                })
                .collect();
            let more = w.leases.len().saturating_sub(4);
            format!(
                "<span data-k=\"active_leases\">{}</span> <span class=\"small\">{}{}</span>",
                i.active_leases,
                shown.join(", "),
                if more > 0 {
                    format!(" +{more}")
                } else {
                    String::new()
                }
            )
        };
        let _ = write!(
            out,
            "<tr data-worker=\"{id}\"{cls}><td class=\"num\">{id}</td><td data-k=\"name\">{name}</td>\
             <td>{host}</td><td class=\"num\" data-k=\"cores\">{cores}</td><td class=\"hide-sm\">{version}</td>\
             <td class=\"wrap\">{leases}</td><td class=\"num age\">{age} ago</td>\
             <td class=\"num\" data-k=\"units_done\">{done}</td><td class=\"num\">{cpu}</td>\
             <td class=\"num\">{impr}</td><td class=\"num\" title=\"results outvoted by replication · improvements refused\">{rej} · {rejimp}</td></tr>",
            id = i.worker_id,
            cls = if w.stale { " class=\"stale\"" } else { "" },
            name = esc(&i.name),
            host = esc(&i.host),
            cores = i.cores,
            version = esc(&i.version),
            age = fmt_duration(w.heartbeat_age_ms as f64 / 1000.0),
            done = i.units_done,
            cpu = fmt_duration(i.cpu_seconds),
            impr = w.tally.improvements,
            rej = w.rejected_results,
            rejimp = w.tally.rejected_improvements,
        );
    }
    out.push_str("</tbody></table></div>");
    out
}
