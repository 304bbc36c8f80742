//! The URL table and the HTML page handlers.
//!
//! A page request with the `X-Grind-Partial: 1` header gets the page's body alone: that is
//! how the live-update script refreshes a page in place. Every response carries a
//! `Content-Security-Policy` that allows only this site's own assets (no inline script or
//! style, no other origin), so even text that escaped escaping could not run.

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use maud::Markup;
use std::sync::Arc;
use tokio::sync::watch;

use super::api::{self, WebError};
use super::html::{layout, Nav};
use super::{assets, events, pages, svg, WebState};
use crate::auth::Authenticator;
use crate::core::Coordinator;

/// The web routes of `coordinator`, ready to merge with the gRPC services. `closing` turns
/// true when the server starts shutting down; with `auth`, every route needs an admin token
/// (see [`super::gate`]).
pub fn router(
    coordinator: Coordinator,
    closing: watch::Receiver<bool>,
    auth: Option<Arc<Authenticator>>,
) -> Router {
    let state = Arc::new(WebState::new(coordinator, closing));
    let router = Router::new()
        .route("/", get(campaigns_page))
        .route("/campaigns/{id}", get(campaign_page))
        .route("/campaigns/{id}/best.svg", get(best_svg))
        .route("/workers", get(workers_page))
        .route("/static/grind.css", get(css))
        .route("/static/grind.js", get(js))
        .route("/api", get(api::index))
        .route("/api/campaigns", get(api::campaigns))
        .route("/api/campaigns/{id}", get(api::campaign))
        .route("/api/campaigns/{id}/events", get(api::events))
        .route("/api/campaigns/{id}/export", get(api::export))
        .route("/api/campaigns/{id}/provenance", get(api::provenance))
        .route("/api/workers", get(api::workers))
        .route("/api/events", get(events::stream))
        .route("/metrics", get(api::metrics))
        .fallback(not_found)
        .with_state(state);
    let router = match auth {
        Some(auth) => router.layer(axum::middleware::from_fn_with_state(
            auth,
            super::gate::require_admin,
        )),
        None => router,
    };
    router.layer(axum::middleware::map_response(security_headers))
}

/// The content security policy of every page: this site's own assets only (stylesheet,
/// script, fetches, the event stream), no inline script or style, no framing, and forms that
/// post only here.
pub const CONTENT_SECURITY_POLICY: &str =
    "default-src 'self'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

async fn security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// Unknown paths: gRPC's `UNIMPLEMENTED` for gRPC requests (an unknown service or method), a
/// plain 404 for everyone else.
async fn not_found(headers: HeaderMap) -> Response {
    let grpc = headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
    if grpc {
        tonic::Status::unimplemented("no such service or method")
            .into_http::<axum::body::Body>()
            .into_response()
    } else {
        (StatusCode::NOT_FOUND, "not found\n").into_response()
    }
}

/// A page: the body alone for the live-update script, else the whole document.
fn page(headers: &HeaderMap, title: &str, nav: Nav, api: &str, body: Markup) -> Response {
    let partial = headers
        .get("x-grind-partial")
        .is_some_and(|v| v.as_bytes() == b"1");
    let html = if partial {
        body
    } else {
        layout(title, nav, api, body)
    };
    (
        [(header::CACHE_CONTROL, "no-store")],
        Html(html.into_string()),
    )
        .into_response()
}

async fn campaigns_page(
    State(web): State<Arc<WebState>>,
    headers: HeaderMap,
) -> Result<Response, WebError> {
    let rows = web.campaigns().await?;
    Ok(page(
        &headers,
        "Campaigns",
        Nav::Campaigns,
        "/api/campaigns",
        pages::campaigns(&rows),
    ))
}

async fn campaign_page(
    State(web): State<Arc<WebState>>,
    Path(id): Path<i64>,
    headers: HeaderMap,
) -> Result<Response, WebError> {
    let detail = web.campaign(id).await?;
    let title = format!("Campaign {id} · {}", detail.row.status.problem);
    Ok(page(
        &headers,
        &title,
        Nav::Campaigns,
        &format!("/api/campaigns/{id}"),
        pages::campaign(&detail),
    ))
}

async fn workers_page(
    State(web): State<Arc<WebState>>,
    headers: HeaderMap,
) -> Result<Response, WebError> {
    let rows = web.workers().await?;
    Ok(page(
        &headers,
        "Workers",
        Nav::Workers,
        "/api/workers",
        pages::workers(&rows, web.stale_ms()),
    ))
}

async fn best_svg(
    State(web): State<Arc<WebState>>,
    Path(id): Path<i64>,
) -> Result<Response, WebError> {
    let d = web.campaign(id).await?;
    let points: Vec<svg::Point> = d
        .improvements
        .iter()
        .map(|i| svg::Point {
            at_ms: i.at_ms,
            score: i.score,
        })
        .collect();
    let end = if d.row.status.finished_ms > 0 {
        d.row.status.finished_ms
    } else {
        web.coordinator.now()
    };
    let body = svg::best_over_time(&points, d.row.status.created_ms, end);
    Ok((
        [(header::CONTENT_TYPE, "image/svg+xml")],
        body.into_string(),
    )
        .into_response())
}

async fn css() -> Response {
    static_asset("text/css; charset=utf-8", assets::CSS)
}

async fn js() -> Response {
    static_asset("text/javascript; charset=utf-8", assets::JS)
}

fn static_asset(content_type: &'static str, body: &'static str) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "max-age=300"),
        ],
        body,
    )
        .into_response()
}
