//! `GET /api/events`: server-sent events telling pages when to refresh.
//!
//! A `change` event goes out when the coordinator reports a change (units finished, leases
//! expired, campaigns changed, improvements), at most once a second, and at least every
//! five seconds anyway (heartbeat ages and lease progress change without a report). The
//! stream ends when the server starts shutting down, so graceful shutdown never waits for an
//! open browser tab.

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::WebState;

/// Shortest time between two `change` events on one stream.
pub const MIN_INTERVAL: Duration = Duration::from_secs(1);
/// Longest time without a `change` event.
pub const MAX_INTERVAL: Duration = Duration::from_secs(5);

/// The live-update stream.
pub async fn stream(State(web): State<Arc<WebState>>) -> impl axum::response::IntoResponse {
    let (tx, rx) = mpsc::channel::<Result<Event, Infallible>>(4);
    let mut changes = web.coordinator.subscribe();
    let mut closing = web.closing.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(MIN_INTERVAL) => {}
                _ = closing.wait_for(|c| *c) => break,
                _ = tx.closed() => break,
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { break },
                _ = tokio::time::sleep(MAX_INTERVAL - MIN_INTERVAL) => {}
                _ = closing.wait_for(|c| *c) => break,
                _ = tx.closed() => break,
            }
            let generation = *changes.borrow_and_update();
            let event = Event::default()
                .event("change")
                .data(generation.to_string());
            if tx.send(Ok(event)).await.is_err() {
                break;
            }
        }
    });
    Sse::new(ReceiverStream::new(rx)).keep_alive(KeepAlive::default())
}
