//! Server-side rendered pages: campaigns, one campaign, workers. Each function returns the
//! page's body (what `<main>` holds); `html::layout` wraps it for a full page load, and the
//! live-update script fetches the body alone. Cells that tests read carry `data-k` names
//! equal to the JSON keys of `grind status --json`.
//!
//! Written with `maud`: every interpolated value is escaped, so worker-controlled text
//! (names, hosts, versions, unit labels) cannot add markup. Nothing here uses inline styles
//! or scripts (the `Content-Security-Policy` forbids them): bars are SVG shapes whose sizes
//! are attributes.

use grind_proto::v1 as pb;
use maud::{html, Markup};

use super::data::{CampaignRow, Event, Improvement, WorkerRow};
use super::estimate::{Estimate, Interval};
use super::html::{fmt_duration, fmt_rate, fmt_time};
use super::svg;
use crate::cli::render;

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
    /// A drawing of the incumbent, when one fits.
    pub drawing: Option<Markup>,
}

fn badge(state: &str) -> Markup {
    html! { span class={ "badge s-" (state) } data-k="state" { (state) } }
}

/// What the value means, in the CLI's words (`views::outcome_words`); the code of the
/// outcome and whether it is a full proof as data attributes.
fn outcome(s: &pb::CampaignStatus) -> Markup {
    let words = crate::views::outcome_words(&s.outcome);
    let words = if words.is_empty() { "—" } else { words };
    html! {
        span class=(if s.proven { "proven" } else { "muted" }) data-k="outcome"
            data-v=(s.outcome) data-proven=(s.proven) { (words) }
    }
}

/// The results the proof takes as given and what backs each (nothing when none).
fn rests_on(s: &pb::CampaignStatus) -> Markup {
    html! {
        @if !s.premises.is_empty() {
            h2 { "Rests on" }
            p.small {
                "Values the parameters state. Each is backed by a finished, proven campaign "
                "of this database that proved exactly that value; while one is not, the "
                "result is proven only given them."
            }
            table data-k="premises" {
                thead { tr { th { "Value" } th.num { "Stated" } th { "Backed by" } } }
                tbody {
                    @for p in &s.premises {
                        tr data-premise=(p.label) {
                            td { (p.label) }
                            td.num { (p.value) }
                            td {
                                @if p.backed_by > 0 {
                                    a href={ "/campaigns/" (p.backed_by) } data-k="backed-by" {
                                        "campaign " (p.backed_by)
                                    }
                                } @else if p.backed_by_record > 0 {
                                    span data-k="backed-by" {
                                        "imported proof record " (p.backed_by_record)
                                    }
                                } @else if p.contradicted_by > 0 {
                                    span.muted data-k="backed-by" {
                                        "not backed: campaign " (p.contradicted_by)
                                        " proved another value"
                                    }
                                } @else {
                                    span.muted data-k="backed-by" { "not backed" }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn percent(x: f64) -> String {
    format!("{:.1}%", (x * 100.0).clamp(0.0, 100.0))
}

/// A progress bar with its uncertainty band, drawn as SVG (sizes as attributes, so no inline
/// style is needed).
fn progress_bar(e: &Estimate) -> Markup {
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
    let clamp = |x: f64| (x * 100.0).clamp(0.0, 100.0);
    html! {
        svg.bar viewBox="0 0 100 10" preserveAspectRatio="none" role="img"
            aria-label=(title) data-k="progress" data-v=(format!("{:.4}", p.value))
            xmlns="http://www.w3.org/2000/svg" {
            title { (title) }
            rect.track width="100" height="10" {}
            rect.band x=(format!("{:.2}", clamp(p.low)))
                width=(format!("{:.2}", (clamp(p.high) - clamp(p.low)).max(0.0))) height="10" {}
            rect.fill width=(format!("{:.2}", clamp(p.value))) height="10" {}
        }
        span.small { (percent(p.value)) }
    }
}

/// The progress cell: the bar for searches with an end to measure; for a running anytime
/// search without one, the time it has run (and the limit its parameters set), since a
/// fraction of an unknown total would be made up.
fn progress(row: &CampaignRow) -> Markup {
    if !row.open_ended_search() {
        return progress_bar(&row.estimate);
    }
    html! {
        span data-k="elapsed" title="an anytime search keeps improving its best value: the time it has run, not a fraction of a known total" {
            "running " (fmt_duration(row.elapsed_seconds))
        }
        div.small {
            @match &row.limit {
                Some(limit) => { "anytime search · ends after " (limit) }
                None => { "anytime search · no end to estimate" }
            }
        }
    }
}

fn interval_text(i: &Interval, lower_bound: bool) -> Markup {
    html! {
        @if lower_bound { "≥ " }
        (fmt_duration(i.value))
        @if i.high - i.low >= 0.5 {
            " " span.small { "(" (fmt_duration(i.low)) "–" (fmt_duration(i.high)) ")" }
        }
    }
}

/// The ETA cell: the estimate; for an anytime search (never exhaustive) whose splitter may
/// still add work, that it is open-ended (campaigns carry no deadline: it runs until its
/// search ends or it is cancelled).
fn eta(row: &CampaignRow) -> Markup {
    let state = row.status.state.as_str();
    html! {
        @if state != "running" {
            span.muted { "—" }
        } @else if row.open_ended_search() {
            span data-k="eta" title="an anytime search: it keeps improving its best value until its search ends or it is cancelled (grind campaign cancel); it has no deadline" {
                "open-ended"
            }
            div.small {
                @match &row.limit {
                    Some(limit) => { "at most " (limit) }
                    None => { "no deadline" }
                }
            }
        } @else {
            @match &row.estimate.eta_seconds {
                Some(i) => span data-k="eta" { (interval_text(i, row.estimate.open_ended)) },
                None => span.muted data-k="eta" { "no estimate yet" },
            }
        }
    }
}

fn value_text(row: &CampaignRow) -> Markup {
    html! {
        @if row.status.value.is_empty() { "—" } @else { (row.status.value) }
    }
}

/// Parameters as short text in the command line's words, the full JSON one click away.
fn params_cell(problem: &str, params_json: &str) -> Markup {
    let short = render::params_short(problem, params_json);
    html! {
        details.params {
            summary data-k="params-short" {
                @if short.is_empty() { span.muted { "defaults" } } @else { (short) }
            }
            pre.json { (params_json) }
        }
    }
}

/// The campaigns page.
pub fn campaigns(rows: &[CampaignRow]) -> Markup {
    html! {
        h1 { "Campaigns" }
        @if rows.is_empty() {
            p.muted { "No campaigns yet: " code { "grind campaign add --coordinator URL PROBLEM ..." } }
        } @else {
            div.scroll {
                table #campaigns {
                    thead { tr {
                        th { "#" } th { "Problem" } th.params { "Parameters" } th { "State" }
                        th.num { "Best" } th { "Outcome" } th { "Progress" }
                        th.num { "Pending" }
                        th.num title="done once, waiting for a replica run on another worker" { "Verifying" }
                        th.num { "Leased" } th.num { "Done" } th.num { "Failed" }
                        th.num title="workers holding a lease of this campaign now" { "Workers" }
                        th.num { "Units/s" } th { "ETA" }
                    } }
                    tbody {
                        @for row in rows { (campaign_row(row)) }
                    }
                }
            }
        }
    }
}

fn campaign_row(row: &CampaignRow) -> Markup {
    let s = &row.status;
    let u = s.units.unwrap_or_default();
    let id = s.campaign_id;
    let href = format!("/campaigns/{id}");
    let default_name = s.name.is_empty() || s.name == format!("{} {}", s.problem, s.params_json);
    html! {
        tr data-campaign=(id) {
            td { a href=(href) { (id) } }
            td {
                a href=(href) data-k="problem" { (s.problem) }
                @if !default_name { div.small { (s.name) } }
            }
            td.params { (params_cell(&s.problem, &s.params_json)) }
            td { (badge(&s.state)) }
            td.num data-k="value" { (value_text(row)) }
            td { (outcome(s)) }
            td { (progress(row)) }
            td.num data-k="pending" { (u.pending) }
            td.num data-k="verifying" { (u.verifying) }
            td.num data-k="leased" { (u.leased) }
            td.num data-k="done" { (u.done) }
            td.num data-k="failed" { (u.failed) }
            td.num data-k="workers" { (s.workers) }
            td.num { (fmt_rate(row.throughput.units_per_second)) }
            td { (eta(row)) }
        }
    }
}

fn card(key: &str, value: Markup) -> Markup {
    html! { div.card { div.k { (key) } div.v { (value) } } }
}

/// One campaign's page.
pub fn campaign(d: &CampaignDetail) -> Markup {
    let s = &d.row.status;
    let u = s.units.unwrap_or_default();
    let id = s.campaign_id;
    let total = u.pending + u.verifying + u.leased + u.done + u.failed;
    html! {
        h1 data-campaign=(id) { "Campaign " (id) " · " (s.problem) " " (badge(&s.state)) }
        div.cards {
            (card("best value", html! { span data-k="value" { (value_text(&d.row)) } }))
            (card("outcome", outcome(s)))
            @if let Some(words) = render::bound_words(s) {
                (card("bound", html! { span data-k="bound" { (words) } }))
            }
            (card("progress", progress(&d.row)))
            (card("ETA", eta(&d.row)))
            (card("units done", html! {
                span data-k="done" { (u.done) } " / " (total) @if !u.split_complete { "+" }
            }))
            (card("pending · verifying · leased · failed", html! {
                span data-k="pending" { (u.pending) } " · "
                span data-k="verifying" { (u.verifying) } " · "
                span data-k="leased" { (u.leased) } " · "
                span data-k="failed" { (u.failed) }
            }))
            @if u.verifying > 0 {
                (card("verifying", html! {
                    (u.verifying)
                    div.small {
                        "unit(s) done once wait for a replica run on another worker"
                        @if u.verifying_since_ms > 0 {
                            " (since " (fmt_time(u.verifying_since_ms)) " UTC)"
                        }
                        "; a lone worker re-checks its own after the coordinator's self-check delay"
                    }
                }))
            }
            (card("workers", html! { span data-k="workers" { (s.workers) } }))
            (card("throughput", html! {
                (fmt_rate(d.row.throughput.units_per_second)) " units/s · "
                (fmt_rate(d.row.throughput.cpu_seconds_per_second)) " CPU"
            }))
            (card("CPU time", html! { (fmt_duration(s.cpu_seconds)) }))
            (card("disputed", html! { (u.disputed) }))
        }
        p.small {
            "Objective " (s.objective) " · created " (fmt_time(s.created_ms)) " UTC"
            @if s.finished_ms > 0 { " · finished " (fmt_time(s.finished_ms)) " UTC" }
            " · estimate from " (d.row.estimate.samples) " unit-size sample(s), method “"
            (d.row.estimate.method) "”"
        }
        h2 { "Parameters" }
        (params_cell(&s.problem, &s.params_json))
        (rests_on(s))
        (held_claims(s))
        h2 { "Incumbent" }
        @if let Some(drawing) = &d.drawing { div.drawing { (drawing) } }
        @match &d.rendering {
            Some(text) => pre #rendering { (text) },
            None => p.muted { "No result yet." },
        }
        p {
            "Export: " a href={ "/api/campaigns/" (id) "/export" } { "submission" }
            " · " a href={ "/api/campaigns/" (id) "/provenance" } { "provenance record" }
            " · " a href={ "/api/campaigns/" (id) } { "status JSON" }
            " · " a href={ "/api/campaigns/" (id) "/events" } { "events JSON" }
        }
        @if s.objective == "max" || s.objective == "min" {
            h2 { "Best value over time" }
            (best_plot(d))
        }
        (improvements_table(&d.improvements, s.solver_version))
        (events_table(id, &d.events))
    }
}

fn best_plot(d: &CampaignDetail) -> Markup {
    let s = &d.row.status;
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
    } else if s.state == "running" {
        // A running search's line reaches now: flat since its last improvement.
        s.created_ms + (d.row.elapsed_seconds * 1000.0) as i64
    } else {
        d.improvements
            .last()
            .map_or(s.created_ms, |i| i.at_ms)
            .max(d.events.first().map_or(0, |e| e.at_ms))
    };
    svg::best_over_time(&points, s.created_ms, end)
}

/// Most improvements listed on the page (the API has them all).
const MAX_IMPROVEMENTS_SHOWN: usize = 200;

/// The improvements with their provenance; solver versions older than the campaign's
/// `current_solver` are marked "older".
fn improvements_table(improvements: &[Improvement], current_solver: u32) -> Markup {
    html! {
        h2 { "Provenance of improvements (" (improvements.len()) ")" }
        @if improvements.is_empty() {
            p.muted { "None." }
        } @else {
            div.scroll { table #improvements {
                thead { tr {
                    th { "When (UTC)" } th.num { "Score" } th { "Source" } th { "Worker" }
                    th { "Host" } th { "Version" } th { "Commit" } th.num { "Solver" }
                    th.num { "Unit" } th.num { "Lease" } th.num { "Lease CPU" }
                } }
                tbody {
                    @for i in improvements.iter().rev().take(MAX_IMPROVEMENTS_SHOWN) {
                        tr {
                            td { (fmt_time(i.at_ms)) }
                            td.num { (i.score) }
                            td { (i.source) }
                            td { (i.worker) }
                            td { (i.host) }
                            td { (i.worker_version) }
                            td { code { (i.git_commit.chars().take(12).collect::<String>()) } }
                            td.num {
                                (i.solver_version)
                                @if i.solver_version < current_solver { " (older)" }
                            }
                            td.num { @if let Some(u) = i.unit { (u) } }
                            td.num { @if let Some(l) = i.lease { (l) } }
                            td.num {
                                @match i.lease_cpu_seconds {
                                    Some(cpu) => { (fmt_duration(cpu)) }
                                    None => { "running" }
                                }
                            }
                        }
                    }
                }
            } }
        }
    }
}

/// Claims held because the verifier itself failed on them (nothing when none).
fn held_claims(s: &pb::CampaignStatus) -> Markup {
    html! {
        @if !s.held_claims.is_empty() {
            h2 { "Held claims (the checker failed; not accepted, not held against the worker)" }
            div.scroll { table #held {
                thead { tr {
                    th.num { "#" } th { "When (UTC)" } th { "Source" } th.num { "Worker" }
                    th.num { "Claimed" } th { "Why" }
                } }
                tbody {
                    @for h in &s.held_claims {
                        tr {
                            td.num { (h.id) }
                            td { (fmt_time(h.at_ms)) }
                            td { (h.source) }
                            td.num { (h.worker_id) }
                            td.num { (h.claimed_score) }
                            td.wrap { (shorten(&h.reason, MAX_DETAIL_CHARS)) }
                        }
                    }
                }
            } }
        }
    }
}

/// Longest event detail shown in the table (the events JSON has it whole).
const MAX_DETAIL_CHARS: usize = 240;

fn events_table(campaign: i64, events: &[Event]) -> Markup {
    html! {
        h2 { "Event log (latest " (events.len()) ")" }
        div.scroll { table #events {
            thead { tr {
                th.num { "#" } th { "When (UTC)" } th { "Kind" } th.num { "Unit" }
                th.num { "Lease" } th.num { "Worker" } th { "Detail" }
            } }
            tbody {
                @for e in events {
                    tr {
                        td.num { (e.id) }
                        td { (fmt_time(e.at_ms)) }
                        td { (e.kind) }
                        td.num { @if let Some(v) = e.unit { (v) } }
                        td.num { @if let Some(v) = e.lease { (v) } }
                        td.num { @if let Some(v) = e.worker { (v) } }
                        td.wrap { (shorten(&render::json_words(&e.detail), MAX_DETAIL_CHARS)) }
                    }
                }
            }
        } }
        @if let Some(last) = events.last() {
            p.small {
                a href={ "/api/campaigns/" (campaign) "/events?before=" (last.id) } { "older events (JSON)" }
            }
        }
    }
}

/// `text` cut to at most `max` bytes (on a character boundary), with `…` when cut.
fn shorten(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let cut = (0..=max)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    format!("{}…", &text[..cut])
}

/// Leases listed per worker on the workers page (the rest counted).
const LEASES_LISTED: usize = 4;

/// The workers page; `stale_ms` is the silence after which a worker is highlighted.
pub fn workers(rows: &[WorkerRow], stale_ms: i64) -> Markup {
    let stale = rows.iter().filter(|w| w.stale).count();
    html! {
        h1 { "Workers" }
        p.small {
            span data-k="registered" { (rows.len()) } " registered · "
            span data-k="connected" { (rows.len() - stale) } " connected · "
            (stale) " silent for more than " (fmt_duration(stale_ms as f64 / 1000.0))
        }
        @if rows.is_empty() {
            p.muted { "No worker has registered yet." }
        } @else {
            div.scroll { table #workers {
                thead { tr {
                    th.num { "#" } th { "Name" } th { "Host" } th.num { "Cores" }
                    th.hide-sm { "Version" } th { "Leases now" } th.num { "Last heard" }
                    th.num { "Units done" } th.num { "CPU" } th.num { "Improvements" }
                    th.num { "Rejected" }
                } }
                tbody { @for w in rows { (worker_row(w)) } }
            } }
        }
    }
}

fn worker_row(w: &WorkerRow) -> Markup {
    let i = &w.info;
    let more = w.leases.len().saturating_sub(LEASES_LISTED);
    html! {
        tr.stale[w.stale] data-worker=(i.worker_id) {
            td.num { (i.worker_id) }
            td data-k="name" { (i.name) }
            td data-k="host" { (i.host) }
            td.num data-k="cores" { (i.cores) }
            td.hide-sm data-k="version" { (i.version) }
            td.wrap {
                span data-k="active_leases" { (i.active_leases) }
                " "
                @if w.leases.is_empty() {
                    span.muted { "idle" }
                } @else {
                    span.small {
                        @for (n, l) in w.leases.iter().take(LEASES_LISTED).enumerate() {
                            @if n > 0 { ", " }
                            a href={ "/campaigns/" (l.campaign) } { "c" (l.campaign) }
                            ":" (l.label)
                            @if let Some(f) = l.fraction { " " (format!("{:.0}%", f * 100.0)) }
                        }
                        @if more > 0 { " +" (more) }
                    }
                }
            }
            td.num.age { (fmt_duration(w.heartbeat_age_ms as f64 / 1000.0)) " ago" }
            td.num data-k="units_done" { (i.units_done) }
            td.num { (fmt_duration(i.cpu_seconds)) }
            td.num { (w.tally.improvements) }
            td.num title="results outvoted by replication · improvements refused" {
                (w.rejected_results) " · " (w.tally.rejected_improvements)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortens_on_character_boundaries() {
        assert_eq!(shorten("abc", 3), "abc");
        assert_eq!(shorten("abcd", 3), "abc…");
        assert_eq!(shorten("aé", 2), "a…");
    }
}
