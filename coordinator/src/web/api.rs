//! The JSON API (`/api/...`), the exports and `/metrics`. Every page has its JSON here; the
//! README lists the endpoints.

use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;

use super::data;
use super::WebState;
use crate::error::Error;

/// An error as an HTTP response: 404 for unknown things, 400 for bad requests, 500 otherwise.
pub struct WebError(pub Error);

impl From<Error> for WebError {
    fn from(e: Error) -> Self {
        WebError(e)
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        let status = match &self.0 {
            Error::NotFound(_) => StatusCode::NOT_FOUND,
            Error::InvalidArgument(_) => StatusCode::BAD_REQUEST,
            Error::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        (status, Json(json!({"error": self.0.to_string()}))).into_response()
    }
}

/// `GET /api`: the endpoints.
pub async fn index() -> Json<Value> {
    Json(json!({
        "campaigns": "/api/campaigns",
        "campaign": "/api/campaigns/{id}",
        "events": "/api/campaigns/{id}/events?before={event_id}&limit={n}",
        "export": "/api/campaigns/{id}/export",
        "provenance": "/api/campaigns/{id}/provenance",
        "workers": "/api/workers",
        "live": "/api/events",
        "metrics": "/metrics",
    }))
}

/// `GET /api/campaigns`: every campaign as `grind status --json` shows it, plus `estimate`
/// and `throughput`.
pub async fn campaigns(State(web): State<Arc<WebState>>) -> Result<Json<Value>, WebError> {
    let rows = web.campaigns().await?;
    Ok(Json(json!({
        "now_ms": web.coordinator.now(),
        "campaigns": rows.iter().map(data::CampaignRow::to_json).collect::<Vec<_>>(),
    })))
}

/// `GET /api/campaigns/{id}`: the campaign, its incumbent's text rendering, every improvement
/// with its provenance, and the latest events.
pub async fn campaign(
    State(web): State<Arc<WebState>>,
    Path(id): Path<i64>,
) -> Result<Json<Value>, WebError> {
    let d = web.campaign(id).await?;
    let mut value = d.row.to_json();
    value["rendering"] = json!(d.rendering);
    value["improvements"] = json!(d.improvements);
    value["events"] = json!(d.events);
    value["exports"] = json!({
        "submission": format!("/api/campaigns/{id}/export"),
        "provenance": format!("/api/campaigns/{id}/provenance"),
    });
    Ok(Json(value))
}

/// Query of `GET /api/campaigns/{id}/events`.
#[derive(serde::Deserialize)]
pub struct EventsQuery {
    /// Only events with a smaller id (for paging back).
    pub before: Option<i64>,
    /// At most this many (default 100, at most 1000).
    pub limit: Option<u32>,
}

/// `GET /api/campaigns/{id}/events`: the event log, newest first.
pub async fn events(
    State(web): State<Arc<WebState>>,
    Path(id): Path<i64>,
    Query(q): Query<EventsQuery>,
) -> Result<Json<Value>, WebError> {
    let limit = q.limit.unwrap_or(100);
    let events = web
        .coordinator
        .store()
        .read(move |conn| {
            crate::views::campaign(conn, id)?;
            data::events(conn, id, q.before, limit)
        })
        .await?;
    Ok(Json(json!({"campaign": id, "events": events})))
}

/// `GET /api/campaigns/{id}/export`: the result in the problem's submission format.
pub async fn export(
    State(web): State<Arc<WebState>>,
    Path(id): Path<i64>,
) -> Result<Response, WebError> {
    let export = web.coordinator.export(id).await?;
    let disposition = format!(
        "attachment; filename=\"{}\"",
        export.file_name.replace('"', "")
    );
    Ok((
        [
            (
                header::CONTENT_TYPE,
                "text/plain; charset=utf-8".to_string(),
            ),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        export.submission,
    )
        .into_response())
}

/// `GET /api/campaigns/{id}/provenance`: the export's provenance record.
pub async fn provenance(
    State(web): State<Arc<WebState>>,
    Path(id): Path<i64>,
) -> Result<Response, WebError> {
    let export = web.coordinator.export(id).await?;
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        export.provenance_json,
    )
        .into_response())
}

/// `GET /api/workers`: every worker as `grind status --json` shows it, plus heartbeat age,
/// staleness, current leases, improvements and rejected results.
pub async fn workers(State(web): State<Arc<WebState>>) -> Result<Json<Value>, WebError> {
    let rows = web.workers().await?;
    Ok(Json(json!({
        "now_ms": web.coordinator.now(),
        "stale_after_ms": web.stale_ms(),
        "workers": rows.iter().map(data::WorkerRow::to_json).collect::<Vec<_>>(),
    })))
}

/// `GET /metrics`: Prometheus text exposition format 0.0.4.
pub async fn metrics(State(web): State<Arc<WebState>>) -> Result<Response, WebError> {
    let text = web.metrics_text().await?;
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response())
}
