//! Serving: binds the gRPC services (grind.v1 Worker, Admin and Bundles, grpc.health.v1, server
//! reflection v1 and v1alpha) and the web UI (HTTP/1.1 or HTTP/2) on one listener, runs the lease-expiry sweep, and stops on a
//! shutdown future.

use grind_proto::v1::admin_server::AdminServer;
use grind_proto::v1::bundles_server::BundlesServer;
use grind_proto::v1::worker_server::WorkerServer;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio_stream::wrappers::TcpListenerStream;
use tokio_stream::{Stream, StreamExt};
use tonic::service::interceptor::InterceptedService;
use tonic::{Request, Status};

use crate::auth::{Authenticator, Role};
use crate::bundles::service::BundlesService;
use crate::core::Coordinator;
use crate::error::Error;
use crate::service::{AdminService, WorkerService};
use crate::tls::ServerIdentity;

/// Largest gRPC message accepted or sent (sample batches can be large).
pub const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// How long a stopping coordinator lets requests in flight finish. Connections are not waited
/// for beyond it: every worker holds one open (its bounds stream never ends), and a graceful
/// drain alone would wait for the workers to go first, until a service manager's SIGKILL.
pub const SHUTDOWN_DRAIN: Duration = Duration::from_secs(3);

/// How a coordinator is exposed: who may call it and whether the transport is encrypted.
#[derive(Clone, Default)]
pub struct ServeOptions {
    /// Require a valid token on every grind RPC (health and reflection stay open).
    pub auth: Option<Arc<Authenticator>>,
    /// Serve TLS with this identity.
    pub tls: Option<ServerIdentity>,
    /// Serve `grind.v1.Bundles` from this store (upload: admin; fetch, stat: worker).
    pub bundles: Option<crate::bundles::BundleStore>,
}

/// Serves `coordinator` on `listener` until `shutdown` resolves, without authentication or
/// TLS (loopback use: `grind run`, tests).
pub async fn serve(
    coordinator: Coordinator,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    serve_with(coordinator, listener, shutdown, ServeOptions::default()).await
}

/// Serves `coordinator` on `listener` with `options` until `shutdown` resolves.
pub async fn serve_with(
    coordinator: Coordinator,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
    options: ServeOptions,
) -> Result<(), Error> {
    coordinator.start().await?;
    if let Some(auth) = &options.auth {
        coordinator.reload_tokens(auth).await?;
    }
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

    // The web UI shares the port (behind the same admin tokens when they are required); its
    // live streams end when shutdown begins.
    let (closing_tx, closing) = tokio::sync::watch::channel(false);
    let mut stopping = closing.clone();
    let shutdown = async move {
        shutdown.await;
        let _ = closing_tx.send(true);
    };
    let web = tonic::service::Routes::from(crate::web::router(
        coordinator.clone(),
        closing,
        options.auth.clone(),
    ));
    let sweeper = tokio::spawn(sweep_forever(coordinator.clone(), options.auth.clone()));
    let worker = InterceptedService::new(
        WorkerServer::new(WorkerService(coordinator.clone()))
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES),
        gate(options.auth.clone(), Role::Worker),
    );
    let admin = InterceptedService::new(
        AdminServer::new(AdminService(coordinator.clone()))
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES),
        gate(options.auth.clone(), Role::Admin),
    );
    let bundles = options.bundles.clone().map(|store| {
        InterceptedService::new(
            BundlesServer::new(BundlesService(store))
                .max_decoding_message_size(crate::bundles::MAX_CHUNK_MESSAGE_BYTES)
                .max_encoding_message_size(crate::bundles::MAX_CHUNK_MESSAGE_BYTES),
            gate(options.auth.clone(), Role::Worker),
        )
    });
    if bundles.is_some() {
        health_reporter
            .set_serving::<BundlesServer<BundlesService>>()
            .await;
    }
    let mut builder = tonic::transport::Server::builder()
        .initial_stream_window_size(crate::bundles::STREAM_WINDOW_BYTES)
        .initial_connection_window_size(crate::bundles::CONNECTION_WINDOW_BYTES);
    if let Some(identity) = &options.tls {
        builder = builder
            .tls_config(tonic::transport::ServerTlsConfig::new().identity(identity.to_tonic()))
            .map_err(|e| Error::InvalidArgument(format!("TLS setup failed: {e}")))?;
    }
    let server = builder
        .accept_http1(true)
        .add_routes(web)
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(worker)
        .add_service(admin)
        .add_optional_service(bundles)
        .serve_with_incoming_shutdown(incoming(listener), shutdown);
    let drained = async move {
        let _ = stopping.wait_for(|closing| *closing).await;
        tokio::time::sleep(SHUTDOWN_DRAIN).await;
    };
    let served = tokio::select! {
        served = server => served,
        () = drained => {
            tracing::info!(
                "stopping: connections still open after {SHUTDOWN_DRAIN:?} (workers reconnect \
                 to the next coordinator); closing them"
            );
            Ok(())
        }
    };
    sweeper.abort();
    served.map_err(|e| Error::Unavailable(format!("server failed: {e}")))
}

/// The accepted connections of `listener`, each with Nagle's algorithm off.
///
/// The builder's `tcp_nodelay` applies only to listeners tonic binds itself, not to an
/// incoming stream handed to it. Without this, a small reply waits for the peer's delayed
/// ACK: about 40 ms per request/reply pair on Linux loopback, whatever the unit's size.
pub fn incoming(listener: TcpListener) -> impl Stream<Item = std::io::Result<TcpStream>> {
    TcpListenerStream::new(listener).map(|accepted| {
        let stream = accepted?;
        stream.set_nodelay(true)?;
        Ok(stream)
    })
}

/// The interceptor in front of a grind service: admits callers allowed to do `needed` when
/// tokens are required, everyone otherwise.
fn gate(
    auth: Option<Arc<Authenticator>>,
    needed: Role,
) -> impl FnMut(Request<()>) -> Result<Request<()>, Status> + Clone + Send + Sync + 'static {
    move |request: Request<()>| match &auth {
        Some(auth) => auth.interceptor(needed)(request),
        None => Ok(request),
    }
}

/// Expires overdue leases, forever; every second also re-reads the token table (new and
/// revoked tokens take effect within a second) and trims rate-limit state.
async fn sweep_forever(coordinator: Coordinator, auth: Option<Arc<Authenticator>>) {
    let period = Duration::from_millis(coordinator.config().sweep_interval_ms.max(10));
    let mut sweep = tokio::time::interval(period);
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut housekeeping = tokio::time::interval(Duration::from_millis(500));
    housekeeping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = sweep.tick() => {
                if let Err(e) = coordinator.sweep().await {
                    tracing::warn!("lease sweep failed: {e}");
                }
            }
            _ = housekeeping.tick() => {
                coordinator.trim_rate_limits();
                if let Some(auth) = &auth {
                    if let Err(e) = coordinator.reload_tokens(auth).await {
                        tracing::warn!("cannot reload tokens: {e}");
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn accepted_connections_have_nagle_off() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let client = tokio::spawn(TcpStream::connect(address));
        let mut accepted = std::pin::pin!(incoming(listener));
        let stream = accepted.next().await.unwrap().unwrap();
        assert!(
            stream.nodelay().unwrap(),
            "an accepted stream keeps Nagle's algorithm on"
        );
        client.await.unwrap().unwrap();
    }
}
