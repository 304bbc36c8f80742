//! The gRPC services: thin handlers that take the request, call the [`Coordinator`] and map
//! its error to a status. No scheduling logic lives here.

use grind_proto::v1 as pb;
use grind_proto::v1::admin_server::Admin;
use grind_proto::v1::worker_server::Worker;
use tonic::{Request, Response, Status};

use crate::auth::Caller;
use crate::core::Coordinator;
use crate::scheduler::Action;

/// Implements `grind.v1.Worker`.
pub struct WorkerService(pub Coordinator);

/// Implements `grind.v1.Admin`.
pub struct AdminService(pub Coordinator);

/// The authenticated caller (when the coordinator requires tokens) and the message.
fn split<T>(request: Request<T>) -> (Option<Caller>, T) {
    let caller = request.extensions().get::<Caller>().copied();
    (caller, request.into_inner())
}

fn reply<T>(result: Result<T, crate::error::Error>) -> Result<Response<T>, Status> {
    result.map(Response::new).map_err(Status::from)
}

/// The stream type of `WatchBounds`.
pub type BoundsStream =
    std::pin::Pin<Box<dyn tokio_stream::Stream<Item = Result<pb::BoundsUpdate, Status>> + Send>>;

#[tonic::async_trait]
impl Worker for WorkerService {
    type WatchBoundsStream = BoundsStream;

    async fn watch_bounds(
        &self,
        request: Request<pb::WatchBoundsRequest>,
    ) -> Result<Response<BoundsStream>, Status> {
        use tokio_stream::StreamExt;
        let (caller, req) = split(request);
        self.0.admit(req.worker_id, caller).await?;
        let updates = tokio_stream::wrappers::WatchStream::new(self.0.watch_bounds())
            .map(|bounds| Ok(pb::BoundsUpdate { bounds }));
        Ok(Response::new(Box::pin(updates)))
    }

    async fn register(
        &self,
        request: Request<pb::RegisterRequest>,
    ) -> Result<Response<pb::RegisterReply>, Status> {
        let peer = request.remote_addr().map(|addr| addr.ip());
        let (caller, req) = split(request);
        reply(self.0.register(req, caller, peer).await)
    }

    async fn lease(
        &self,
        request: Request<pb::LeaseRequest>,
    ) -> Result<Response<pb::LeaseReply>, Status> {
        let (caller, req) = split(request);
        self.0.admit(req.worker_id, caller).await?;
        reply(self.0.lease(req).await)
    }

    async fn heartbeat(
        &self,
        request: Request<pb::HeartbeatRequest>,
    ) -> Result<Response<pb::HeartbeatReply>, Status> {
        let (caller, req) = split(request);
        self.0.admit(req.worker_id, caller).await?;
        reply(self.0.heartbeat(req).await)
    }

    async fn report_improvement(
        &self,
        request: Request<pb::ImprovementRequest>,
    ) -> Result<Response<pb::ImprovementReply>, Status> {
        let (caller, req) = split(request);
        self.0.admit(req.worker_id, caller).await?;
        reply(self.0.improve(req).await)
    }

    async fn donate(
        &self,
        request: Request<pb::DonateRequest>,
    ) -> Result<Response<pb::DonateReply>, Status> {
        let (caller, req) = split(request);
        self.0.admit(req.worker_id, caller).await?;
        reply(self.0.donate(req).await)
    }

    async fn complete(
        &self,
        request: Request<pb::CompleteRequest>,
    ) -> Result<Response<pb::CompleteReply>, Status> {
        let (caller, req) = split(request);
        self.0.admit(req.worker_id, caller).await?;
        reply(self.0.complete(req).await)
    }

    async fn complete_batch(
        &self,
        request: Request<pb::CompleteBatchRequest>,
    ) -> Result<Response<pb::CompleteBatchReply>, Status> {
        let (caller, req) = split(request);
        self.0.admit(req.worker_id, caller).await?;
        reply(self.0.complete_batch(req).await)
    }

    async fn release(
        &self,
        request: Request<pb::ReleaseRequest>,
    ) -> Result<Response<pb::ReleaseReply>, Status> {
        let (caller, req) = split(request);
        self.0.admit(req.worker_id, caller).await?;
        reply(self.0.release(req).await)
    }
}

#[tonic::async_trait]
impl Admin for AdminService {
    async fn create_campaign(
        &self,
        request: Request<pb::CreateCampaignRequest>,
    ) -> Result<Response<pb::CreateCampaignReply>, Status> {
        reply(
            self.0
                .create_campaigns(request.into_inner())
                .await
                .map(|campaign_ids| pb::CreateCampaignReply {
                    campaign_id: campaign_ids[0],
                    campaign_ids,
                }),
        )
    }

    async fn list_campaigns(
        &self,
        _request: Request<pb::ListCampaignsRequest>,
    ) -> Result<Response<pb::ListCampaignsReply>, Status> {
        reply(
            self.0
                .campaigns()
                .await
                .map(|campaigns| pb::ListCampaignsReply { campaigns }),
        )
    }

    async fn show_campaign(
        &self,
        request: Request<pb::CampaignRef>,
    ) -> Result<Response<pb::CampaignStatus>, Status> {
        reply(self.0.campaign(request.into_inner().campaign_id).await)
    }

    async fn pause_campaign(
        &self,
        request: Request<pb::CampaignRef>,
    ) -> Result<Response<pb::CampaignStatus>, Status> {
        let id = request.into_inner().campaign_id;
        reply(self.0.change_state(id, Action::Pause).await)
    }

    async fn resume_campaign(
        &self,
        request: Request<pb::CampaignRef>,
    ) -> Result<Response<pb::CampaignStatus>, Status> {
        let id = request.into_inner().campaign_id;
        reply(self.0.change_state(id, Action::Resume).await)
    }

    async fn cancel_campaign(
        &self,
        request: Request<pb::CampaignRef>,
    ) -> Result<Response<pb::CampaignStatus>, Status> {
        let id = request.into_inner().campaign_id;
        reply(self.0.change_state(id, Action::Cancel).await)
    }

    async fn status(
        &self,
        request: Request<pb::StatusRequest>,
    ) -> Result<Response<pb::StatusReply>, Status> {
        reply(self.0.status(request.into_inner()).await)
    }

    async fn leaderboard(
        &self,
        _request: Request<pb::LeaderboardRequest>,
    ) -> Result<Response<pb::LeaderboardReply>, Status> {
        reply(self.0.leaderboard().await)
    }

    async fn export(
        &self,
        request: Request<pb::CampaignRef>,
    ) -> Result<Response<pb::ExportReply>, Status> {
        reply(self.0.export(request.into_inner().campaign_id).await)
    }

    async fn import(
        &self,
        request: Request<pb::ImportRequest>,
    ) -> Result<Response<pb::ImportReply>, Status> {
        reply(self.0.import(request.into_inner()).await)
    }

    async fn import_proof_record(
        &self,
        request: Request<pb::ImportProofRecordRequest>,
    ) -> Result<Response<pb::ImportProofRecordReply>, Status> {
        reply(self.0.import_proof_record(request.into_inner()).await)
    }

    async fn list_problems(
        &self,
        _request: Request<pb::ListProblemsRequest>,
    ) -> Result<Response<pb::ListProblemsReply>, Status> {
        let problems = grind_shared::registry::registry()
            .iter()
            .map(|entry| pb::ProblemInfo {
                name: entry.name.to_string(),
                about: entry.about.to_string(),
                solver_version: entry.solver_version,
            })
            .collect();
        Ok(Response::new(pb::ListProblemsReply { problems }))
    }

    async fn ban_worker(
        &self,
        request: Request<pb::BanWorkerRequest>,
    ) -> Result<Response<pb::BanWorkerReply>, Status> {
        let req = request.into_inner();
        reply(
            self.0
                .ban_worker(req.worker_id, req.reason)
                .await
                .map(|taken| pb::BanWorkerReply {
                    leases_taken_back: taken as u32,
                }),
        )
    }
}
