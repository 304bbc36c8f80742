//! Serving: binds the gRPC services (grind.v1 Worker and Admin, grpc.health.v1, server
//! reflection v1 and v1alpha) and the web UI (HTTP/1.1 or HTTP/2) on one listener, runs the lease-expiry sweep, and stops on a
//! shutdown future.

use grind_proto::v1::admin_server::AdminServer;
use grind_proto::v1::worker_server::WorkerServer;
use std::future::Future;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;

use crate::core::Coordinator;
use crate::error::Error;
use crate::service::{AdminService, WorkerService};

/// Largest gRPC message accepted or sent (sample batches can be large).
pub const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// Serves `coordinator` on `listener` until `shutdown` resolves.
pub async fn serve(
    coordinator: Coordinator,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    coordinator.start().await?;
    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    health_reporter
        .set_serving::<WorkerServer<WorkerService>>()
        .await;
    health_reporter
        .set_serving::<AdminServer<AdminService>>()
        .await;
    let reflection_v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(grind_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()
        .map_err(|e| Error::Internal(format!("reflection: {e}")))?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(grind_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()
        .map_err(|e| Error::Internal(format!("reflection: {e}")))?;

    // The web UI shares the port; its live streams end when shutdown begins.
    let (closing_tx, closing) = tokio::sync::watch::channel(false);
    let shutdown = async move {
        shutdown.await;
        let _ = closing_tx.send(true);
    };
    let web = tonic::service::Routes::from(crate::web::router(coordinator.clone(), closing));
    let sweeper = tokio::spawn(sweep_forever(coordinator.clone()));
    let worker = WorkerServer::new(WorkerService(coordinator.clone()))
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
    let admin = AdminServer::new(AdminService(coordinator.clone()))
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
    let served = tonic::transport::Server::builder()
        .tcp_nodelay(true)
        .accept_http1(true)
        .add_routes(web)
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(worker)
        .add_service(admin)
        .serve_with_incoming_shutdown(TcpListenerStream::new(listener), shutdown)
        .await;
    sweeper.abort();
    served.map_err(|e| Error::Unavailable(format!("server failed: {e}")))
}

async fn sweep_forever(coordinator: Coordinator) {
    let period = Duration::from_millis(coordinator.config().sweep_interval_ms.max(10));
    let mut ticker = tokio::time::interval(period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        if let Err(e) = coordinator.sweep().await {
            tracing::warn!("lease sweep failed: {e}");
        }
    }
}
