//! The web front: HTML pages, a JSON API behind every page, live updates (server-sent
//! events) and Prometheus metrics, served on the gRPC port beside tonic (see
//! [`crate::server`]).
//!
//! Layout: [`routes`] (the URL table and the page handlers), [`api`] (JSON and metrics
//! handlers), [`events`] (the live-update stream), [`gate`] (admin tokens when required), [`data`] (what pages show, read from the
//! store), [`estimate`] (progress and ETA), [`pages`] and [`html`] (HTML rendering),
//! [`svg`] (plots and figures), [`incumbent`] (the problem's drawing of its solution), [`assets`]
//! (the embedded stylesheet and script).
//!
//! HTML is written with `maud` (escaped by construction) and served with a
//! `Content-Security-Policy` allowing only the embedded assets (see [`routes`]).

pub mod api;
pub mod assets;
pub mod data;
pub mod estimate;
pub mod events;
pub mod gate;
pub mod html;
pub mod incumbent;
pub mod pages;
pub mod routes;
pub mod svg;

use grind_shared::problem::{Objective, Problem};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

use crate::core::Coordinator;
use crate::error::Error;
use crate::metrics::Metrics;

pub use routes::router;

/// Events shown on a campaign page.
const EVENTS_ON_PAGE: u32 = 100;
/// Samples rendered on a sample campaign's page (the export has them all).
const SAMPLES_ON_PAGE: u32 = 20;
/// Longest text rendering shown on a page.
const MAX_RENDERING_CHARS: usize = 20_000;

/// What every handler shares.
pub struct WebState {
    coordinator: Coordinator,
    metrics: Metrics,
    problems: Mutex<HashMap<i64, Arc<dyn Problem>>>,
    closing: watch::Receiver<bool>,
}

impl WebState {
    /// State for `coordinator`; `closing` turns true when the server starts shutting down
    /// (live-update streams end then, so graceful shutdown does not wait for browsers).
    pub fn new(coordinator: Coordinator, closing: watch::Receiver<bool>) -> WebState {
        WebState {
            coordinator,
            metrics: Metrics::new(),
            problems: Mutex::new(HashMap::new()),
            closing,
        }
    }

    /// Silence after which a worker counts as stale: three heartbeat intervals.
    pub fn stale_ms(&self) -> i64 {
        3 * self.coordinator.config().heartbeat_interval_ms.max(100)
    }

    /// Every campaign with its estimate.
    pub async fn campaigns(&self) -> Result<Vec<data::CampaignRow>, Error> {
        let now = self.coordinator.now();
        self.coordinator
            .store()
            .read(move |conn| data::campaign_rows(conn, now))
            .await
    }

    /// Every worker with its leases and tallies.
    pub async fn workers(self: &Arc<Self>) -> Result<Vec<data::WorkerRow>, Error> {
        let (now, stale) = (self.coordinator.now(), self.stale_ms());
        let this = self.clone();
        self.coordinator
            .store()
            .read(move |conn| {
                let tallies = this.metrics.catch_up_on(conn)?;
                data::worker_rows(conn, now, stale, &tallies)
            })
            .await
    }

    /// The metrics in the Prometheus text format.
    pub async fn metrics_text(self: &Arc<Self>) -> Result<String, Error> {
        let (now, stale) = (self.coordinator.now(), self.stale_ms());
        let this = self.clone();
        self.coordinator
            .store()
            .read(move |conn| this.metrics.gather(conn, now, stale))
            .await
    }

    /// One campaign's page data, with the incumbent rendered.
    pub async fn campaign(self: &Arc<Self>, id: i64) -> Result<pages::CampaignDetail, Error> {
        let now = self.coordinator.now();
        let this = self.clone();
        self.coordinator
            .store()
            .read(move |conn| {
                let status = crate::views::campaign(conn, id)?;
                let row = data::campaign_row(conn, status, now)?;
                let improvements = data::improvements(conn, id)?;
                let events = data::events(conn, id, None, EVENTS_ON_PAGE)?;
                let problem = this.problem(&row.status)?;
                let (rendering, drawing) = render_incumbent(conn, problem.as_ref(), &row.status)?;
                Ok(pages::CampaignDetail {
                    row,
                    improvements,
                    events,
                    rendering,
                    drawing,
                })
            })
            .await
    }

    /// The problem instance of a campaign (built once; building may be costly).
    fn problem(&self, status: &grind_proto::v1::CampaignStatus) -> Result<Arc<dyn Problem>, Error> {
        let mut cache = self
            .problems
            .lock()
            .map_err(|_| Error::Internal("problem cache poisoned".into()))?;
        if let Some(found) = cache.get(&status.campaign_id) {
            return Ok(found.clone());
        }
        let problem = grind_shared::registry::instantiate(&status.problem, &status.params_json)?;
        cache.insert(status.campaign_id, problem.clone());
        Ok(problem)
    }
}

/// The problem's own text rendering of a campaign's result and, when one fits, a drawing.
fn render_incumbent(
    conn: &rusqlite::Connection,
    problem: &dyn Problem,
    status: &grind_proto::v1::CampaignStatus,
) -> Result<(Option<String>, Option<maud::Markup>), Error> {
    if status.value.is_empty() && status.solution_json.is_empty() {
        return Ok((None, None));
    }
    let solution: Option<serde_json::Value> = serde_json::from_str(&status.solution_json).ok();
    let mut text = if problem.objective() == Objective::Sample {
        let mut stmt = conn.prepare_cached(
            "SELECT data FROM samples WHERE campaign_id = ?1 ORDER BY id LIMIT ?2",
        )?;
        let samples: Vec<serde_json::Value> = stmt
            .query_map(
                rusqlite::params![status.campaign_id, SAMPLES_ON_PAGE],
                |r| r.get::<_, String>(0),
            )?
            .filter_map(|s| s.ok().and_then(|s| serde_json::from_str(&s).ok()))
            .collect();
        let mut text = problem.render_samples(&samples);
        if status.samples > u64::from(SAMPLES_ON_PAGE) {
            text += &format!(
                "… first {SAMPLES_ON_PAGE} of {} samples (export for all)\n",
                status.samples
            );
        }
        text
    } else {
        problem.render(&status.value, solution.as_ref())
    };
    if text.len() > MAX_RENDERING_CHARS {
        let cut = (0..=MAX_RENDERING_CHARS)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        text.truncate(cut);
        text.push_str("\n… (export for the whole result)\n");
    }
    let drawing = solution.as_ref().and_then(|s| incumbent::draw(problem, s));
    Ok((Some(text), drawing))
}
