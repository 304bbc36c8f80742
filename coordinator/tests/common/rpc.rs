//! gRPC clients: the admin API, and raw worker clients for playing a worker (honest or not)
//! call by call.

use grind_proto::v1 as pb;
use grind_proto::v1::admin_client::AdminClient;
use grind_proto::v1::worker_client::WorkerClient;
use std::time::Duration;
use tonic::codegen::{Body, Bytes, StdError};
use tonic::transport::Channel;
use tonic::{Code, Status};

/// What the generated clients run on: a plain channel, or one that adds a bearer token.
pub trait Transport:
    tonic::client::GrpcService<
        tonic::body::Body,
        Error: Into<StdError>,
        ResponseBody: Body<Data = Bytes, Error: Into<StdError> + Send> + Send + 'static,
    > + Clone
{
}

impl<T> Transport for T where
    T: tonic::client::GrpcService<
            tonic::body::Body,
            Error: Into<StdError>,
            ResponseBody: Body<Data = Bytes, Error: Into<StdError> + Send> + Send + 'static,
        > + Clone
{
}

/// An admin client (retried until the coordinator answers, up to 20 s).
pub async fn admin(url: &str) -> AdminClient<Channel> {
    grind_kit::rpc::admin(url, Duration::from_secs(20))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A raw worker client (to play a worker, honest or not; retried up to 20 s).
pub async fn raw_worker(url: &str) -> WorkerClient<Channel> {
    grind_kit::rpc::worker(url, Duration::from_secs(20))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Registers a raw worker the old way (no host facts: no users' native code) and returns
/// its id.
pub async fn register<T: Transport>(client: &mut WorkerClient<T>, name: &str) -> i64 {
    register_as(client, registration(name)).await
}

/// Registers a raw worker whose owner lets it run users' native code (`--allow-exec`) on this
/// machine's platform, and returns its id.
pub async fn register_exec<T: Transport>(client: &mut WorkerClient<T>, name: &str) -> i64 {
    let request = pb::RegisterRequest {
        native_code_allowed: true,
        platform: grind_shared::placement::PLATFORM.into(),
        ..registration(name)
    };
    register_as(client, request).await
}

fn registration(name: &str) -> pb::RegisterRequest {
    pb::RegisterRequest {
        name: name.into(),
        host: "test-host".into(),
        cores: 1,
        version: "test".into(),
        git_commit: "test".into(),
        previous_worker_id: 0,
        ..Default::default()
    }
}

async fn register_as<T: Transport>(
    client: &mut WorkerClient<T>,
    request: pb::RegisterRequest,
) -> i64 {
    client
        .register(request)
        .await
        .expect("register")
        .into_inner()
        .worker_id
}

/// Leases exactly one unit for a raw worker (fails the test when none is granted).
pub async fn lease_one<T: Transport>(client: &mut WorkerClient<T>, worker: i64) -> pb::LeaseGrant {
    let mut leases = lease(client, worker, 1).await.expect("lease");
    assert_eq!(leases.len(), 1, "one lease granted");
    leases.remove(0)
}

async fn lease<T: Transport>(
    client: &mut WorkerClient<T>,
    worker: i64,
    capacity: u32,
) -> Result<Vec<pb::LeaseGrant>, Status> {
    let reply = client
        .lease(pb::LeaseRequest {
            worker_id: worker,
            capacity,
            max_units: 0,
            wait_ms: 0,
        })
        .await?;
    Ok(reply.into_inner().leases)
}

/// A unit result that is a count.
pub fn count(value: impl ToString) -> Option<pb::UnitResult> {
    Some(pb::UnitResult {
        count: value.to_string(),
        ..Default::default()
    })
}

/// Asserts a call was refused with `code`, returning the refusal (to check its message).
#[track_caller]
pub fn assert_refused<R: std::fmt::Debug>(answer: Result<R, Status>, code: Code) -> Status {
    match answer {
        Err(status) => {
            assert_eq!(status.code(), code, "{status:?}");
            status
        }
        Ok(reply) => panic!("accepted, expected {code:?}: {reply:?}"),
    }
}

/// A worker identity played call by call over a raw client: every call names `id` as the
/// worker, so a client may also pose as someone else's identity.
pub struct RawWorker<T = Channel> {
    /// The worker client the calls go through.
    pub client: WorkerClient<T>,
    /// The worker id every call names.
    pub id: i64,
}

impl<T: Transport> RawWorker<T> {
    /// Registers `name` over (a clone of) `client`.
    pub async fn register(client: &WorkerClient<T>, name: &str) -> Self {
        let mut client = client.clone();
        let id = register(&mut client, name).await;
        RawWorker { client, id }
    }

    /// Registers `name` over (a clone of) `client` as a worker that may run users' native
    /// code (see [`register_exec`]).
    pub async fn register_exec(client: &WorkerClient<T>, name: &str) -> Self {
        let mut client = client.clone();
        let id = register_exec(&mut client, name).await;
        RawWorker { client, id }
    }

    /// The same client posing as worker `id`.
    pub fn posing_as(&self, id: i64) -> Self {
        RawWorker {
            client: self.client.clone(),
            id,
        }
    }

    /// Asks for up to `capacity` leases.
    pub async fn lease(&mut self, capacity: u32) -> Result<Vec<pb::LeaseGrant>, Status> {
        lease(&mut self.client, self.id, capacity).await
    }

    /// Leases exactly one unit (fails the test when none is granted).
    pub async fn lease_one(&mut self) -> pb::LeaseGrant {
        lease_one(&mut self.client, self.id).await
    }

    /// Completes `grant` (its lease and unit) with `result`.
    pub async fn complete(
        &mut self,
        grant: &pb::LeaseGrant,
        result: Option<pb::UnitResult>,
    ) -> Result<pb::CompleteReply, Status> {
        let reply = self
            .client
            .complete(pb::CompleteRequest {
                worker_id: self.id,
                lease_id: grant.lease_id,
                unit_payload: grant.unit_payload.clone(),
                result,
            })
            .await?;
        Ok(reply.into_inner())
    }

    /// Hands a lease back with `cursor` as its checkpoint.
    pub async fn release(&mut self, lease_id: i64, cursor: Vec<u8>) -> Result<(), Status> {
        self.client
            .release(pb::ReleaseRequest {
                worker_id: self.id,
                lease_id,
                cursor,
                nodes: 0,
                cpu_seconds: 0.0,
                ..Default::default()
            })
            .await?;
        Ok(())
    }

    /// Sends a heartbeat with the progress of `leases`.
    pub async fn heartbeat(
        &mut self,
        leases: Vec<pb::LeaseProgress>,
    ) -> Result<pb::HeartbeatReply, Status> {
        let reply = self
            .client
            .heartbeat(pb::HeartbeatRequest {
                worker_id: self.id,
                leases,
                ..Default::default()
            })
            .await?;
        Ok(reply.into_inner())
    }

    /// The verdict of a heartbeat on one lease without progress.
    pub async fn verdict(&mut self, lease_id: i64) -> i32 {
        let beat = self
            .heartbeat(vec![pb::LeaseProgress {
                lease_id,
                ..Default::default()
            }])
            .await
            .expect("heartbeat");
        beat.leases[0].verdict
    }

    /// Reports an improvement found under `lease_id` for `campaign`.
    pub async fn report_improvement(
        &mut self,
        lease_id: i64,
        campaign: i64,
        solution_json: impl Into<String>,
        claimed_score: i64,
    ) -> Result<pb::ImprovementReply, Status> {
        let reply = self
            .client
            .report_improvement(pb::ImprovementRequest {
                worker_id: self.id,
                lease_id,
                campaign_id: campaign,
                solution_json: solution_json.into(),
                claimed_score,
                ..Default::default()
            })
            .await?;
        Ok(reply.into_inner())
    }
}

/// One campaign's status as the admin API shows it.
pub async fn try_show<T: Transport>(
    admin: &mut AdminClient<T>,
    campaign: i64,
) -> Result<pb::CampaignStatus, Status> {
    let reply = admin
        .show_campaign(pb::CampaignRef {
            campaign_id: campaign,
        })
        .await?;
    Ok(reply.into_inner())
}

/// One campaign's status (fails the test when the call does).
pub async fn show<T: Transport>(admin: &mut AdminClient<T>, campaign: i64) -> pb::CampaignStatus {
    try_show(admin, campaign).await.expect("show campaign")
}

/// The serving status (1: SERVING) the standard health service gives for `service`.
pub async fn health(channel: Channel, service: &str) -> Result<i32, Status> {
    let reply = tonic_health::pb::health_client::HealthClient::new(channel)
        .check(tonic_health::pb::HealthCheckRequest {
            service: service.into(),
        })
        .await?;
    Ok(reply.into_inner().status)
}

/// A plain channel to `url`, once the server answers (up to 60 s).
pub async fn channel(url: &str) -> Channel {
    grind_kit::rpc::channel(url, Duration::from_secs(60))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}
