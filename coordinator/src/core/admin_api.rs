//! The admin API: campaigns created, listed and changed, the cluster's status, the
//! leaderboard, exports (a campaign's submission rendered by its problem, with its
//! provenance record) and imports (known solutions, proof records).

use grind_proto::v1 as pb;

use super::verify::verify_solution;
use super::Coordinator;
use crate::error::Error;
use crate::scheduler::{self, Action, NewCampaign};
use crate::views;

impl Coordinator {
    /// Creates a campaign, or one per member when the parameters name a family; returns
    /// their ids. Each instance's verifier is checked first, off the async runtime
    /// (`Verification::self_check` with no sample: a user's checker run once), and a failing check
    /// refuses the campaign.
    pub async fn create_campaigns(
        &self,
        req: pb::CreateCampaignRequest,
    ) -> Result<Vec<i64>, Error> {
        let (problem, params_json) = (req.problem.clone(), req.params_json.clone());
        tokio::task::spawn_blocking(move || check_at_creation(&problem, &params_json))
            .await
            .map_err(|e| Error::Internal(format!("the creation check panicked: {e}")))??;
        let ids = self
            .write(move |ctx| {
                scheduler::create_campaigns(
                    ctx,
                    &NewCampaign {
                        problem: &req.problem,
                        params_json: &req.params_json,
                        name: &req.name,
                        verify_rate: (req.verify_rate >= 0.0).then_some(req.verify_rate),
                        max_attempts: (req.max_attempts > 0).then_some(req.max_attempts),
                        family: (!req.family.is_empty()).then_some(req.family.as_str()),
                        target_lease_ms: (req.target_lease_ms != 0)
                            .then_some(req.target_lease_ms.max(-1)),
                    },
                )
            })
            .await?;
        Ok(ids)
    }

    /// One campaign's status.
    pub async fn campaign(&self, campaign_id: i64) -> Result<pb::CampaignStatus, Error> {
        self.inner
            .store
            .read(move |conn| views::campaign(conn, campaign_id))
            .await
    }

    /// Every campaign.
    pub async fn campaigns(&self) -> Result<Vec<pb::CampaignStatus>, Error> {
        self.inner.store.read(views::campaigns).await
    }

    /// Pauses, resumes or cancels a campaign and returns its new status.
    pub async fn change_state(
        &self,
        campaign_id: i64,
        action: Action,
    ) -> Result<pb::CampaignStatus, Error> {
        self.write(move |ctx| scheduler::change_state(ctx, campaign_id, action))
            .await?;
        self.campaign(campaign_id).await
    }

    /// Cluster or campaign status.
    pub async fn status(&self, req: pb::StatusRequest) -> Result<pb::StatusReply, Error> {
        self.inner
            .store
            .read(move |conn| {
                let campaigns = if req.campaign_id > 0 {
                    vec![views::campaign(conn, req.campaign_id)?]
                } else {
                    views::campaigns(conn)?
                };
                let results = if req.with_results && req.campaign_id > 0 {
                    views::results(conn, req.campaign_id)?
                } else {
                    Vec::new()
                };
                Ok(pb::StatusReply {
                    campaigns,
                    workers: views::workers(conn)?,
                    results,
                    coordinator_version: grind_shared::VERSION.to_string(),
                })
            })
            .await
    }

    /// The leaderboard.
    pub async fn leaderboard(&self) -> Result<pb::LeaderboardReply, Error> {
        let entries = self.inner.store.read(views::leaderboard).await?;
        Ok(pb::LeaderboardReply { entries })
    }

    /// Exports a campaign's result in its submission format plus a provenance record.
    pub async fn export(&self, campaign_id: i64) -> Result<pb::ExportReply, Error> {
        let problem = self.problem(campaign_id).await?;
        let (status, record, samples) = self
            .inner
            .store
            .read(move |conn| {
                let status = views::campaign(conn, campaign_id)?;
                let record = views::provenance_record(conn, &status)?;
                let samples = if status.objective == "sample" {
                    views::samples(conn, campaign_id)?
                } else {
                    Vec::new()
                };
                Ok((status, record, samples))
            })
            .await?;
        let submission = if status.objective == "sample" {
            let values: Vec<serde_json::Value> = samples
                .iter()
                .filter_map(|s| serde_json::from_str(s).ok())
                .collect();
            problem.render_samples(&values)
        } else {
            let solution = serde_json::from_str(&status.solution_json).ok();
            problem.render(&status.value, solution.as_ref())
        };
        Ok(pb::ExportReply {
            submission,
            provenance_json: serde_json::to_string_pretty(&record)
                .map_err(|e| Error::Internal(e.to_string()))?,
            file_name: format!("{}-{}.txt", status.problem, campaign_id),
        })
    }

    /// Imports another grind database's export provenance record of a proven optimum (kept
    /// whole) to back the premises of this database's campaigns
    /// (`scheduler::premises::import_record`: refused unless it states a proven optimum whose
    /// solution re-scores to its value here).
    pub async fn import_proof_record(
        &self,
        req: pb::ImportProofRecordRequest,
    ) -> Result<pb::ImportProofRecordReply, Error> {
        if req.record_json.len() > 16 << 20 || req.source.len() > 1000 {
            return Err(Error::InvalidArgument(
                "a proof record is at most 16 MiB and its source at most 1,000 bytes".into(),
            ));
        }
        let record: serde_json::Value = serde_json::from_str(&req.record_json)
            .map_err(|e| Error::InvalidArgument(format!("the proof record is not JSON: {e}")))?;
        let record_id = self
            .write(move |ctx| scheduler::import_record(ctx, &record, &req.source))
            .await?;
        Ok(pb::ImportProofRecordReply { record_id })
    }

    /// Imports a known solution as a campaign's starting incumbent (after verifying it).
    pub async fn import(&self, req: pb::ImportRequest) -> Result<pb::ImportReply, Error> {
        let problem = self.problem(req.campaign_id).await?;
        let score = verify_solution(problem, &req.solution_json)
            .await
            .map_err(|reason| Error::InvalidArgument(format!("import rejected: {reason}")))?;
        let source = if req.source.is_empty() {
            "import".to_string()
        } else {
            format!("import: {}", req.source)
        };
        let (_, accepted) = self
            .write(move |ctx| {
                scheduler::improve(
                    ctx,
                    req.campaign_id,
                    &req.solution_json,
                    score,
                    scheduler::Origin {
                        source: &source,
                        ..Default::default()
                    },
                )
            })
            .await?;
        Ok(pb::ImportReply {
            accepted,
            verified_score: score,
            reason: if accepted {
                String::new()
            } else {
                "not better than the campaign's best".into()
            },
        })
    }
}

/// Runs every instance's creation-time check (`Verification::self_check` with no sample) of a
/// campaign (or of each family member) about to be created. Parameters that do not build
/// pass here: the creation itself refuses them with their own error.
fn check_at_creation(problem: &str, params_json: &str) -> Result<(), Error> {
    let Ok(entry) = grind_shared::registry::lookup(problem) else {
        return Ok(());
    };
    let Ok(params) = serde_json::from_str::<serde_json::Value>(params_json) else {
        return Ok(());
    };
    let members = match entry.family(&params) {
        Ok(Some(members)) => members,
        Ok(None) => vec![params],
        Err(_) => return Ok(()),
    };
    for member in &members {
        if let Ok((_, instance)) = entry.build(member) {
            instance.self_check(None).map_err(|e| {
                Error::InvalidArgument(format!(
                    "campaign refused: its verifier failed the check at creation: {e}"
                ))
            })?;
        }
    }
    Ok(())
}
