//! The setup most scenarios start from: a coordinator on a fresh temporary database, its
//! admin client, and worker processes started on it.

use super::processes::{start_coordinator, start_worker, Coordinator, Proc};
use super::rpc::{admin, raw_worker, RawWorker};
use super::waiting::{wait_campaign, wait_finished};
use super::{campaigns, rpc};
use grind_proto::v1 as pb;
use grind_proto::v1::admin_client::AdminClient;
use std::path::Path;
use std::time::Duration;
use tonic::transport::Channel;

/// A coordinator process on a database in its own temporary directory, with an admin client.
pub struct Cluster {
    // Fields drop in order: the coordinator is killed before its directory is removed.
    /// The `grind serve` process, its address and database.
    pub coord: Coordinator,
    /// An admin client connected to it (reconnected after a restart).
    pub admin: AdminClient<Channel>,
    dir: tempfile::TempDir,
}

impl Cluster {
    /// Starts `grind serve` with lease time `ttl_ms` (and `extra` arguments) and connects.
    pub async fn start(ttl_ms: u64, extra: &[&str]) -> Cluster {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let coord = start_coordinator(dir.path(), ttl_ms, extra);
        let admin = admin(&coord.url).await;
        Cluster { coord, admin, dir }
    }

    /// The temporary directory (the database is in it).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Starts a one-thread `grind-worker` named `name`.
    pub fn worker(&self, name: &str) -> Proc {
        start_worker(&self.coord.url, name, 1)
    }

    /// Starts one one-thread `grind-worker` per name.
    pub fn workers(&self, names: &[&str]) -> Vec<Proc> {
        names.iter().map(|name| self.worker(name)).collect()
    }

    /// Registers a raw worker named `name` on a fresh worker client.
    pub async fn raw_worker(&self, name: &str) -> RawWorker {
        RawWorker::register(&raw_worker(&self.coord.url).await, name).await
    }

    /// Registers a raw worker named `name` that may run users' native code.
    pub async fn raw_exec_worker(&self, name: &str) -> RawWorker {
        RawWorker::register_exec(&raw_worker(&self.coord.url).await, name).await
    }

    /// Kills the coordinator (SIGKILL: a crash).
    pub fn kill(&mut self) {
        self.coord.proc.kill();
    }

    /// Starts the (killed) coordinator again on the same database and address, and
    /// reconnects the admin client.
    pub async fn start_again(&mut self) {
        self.coord = self.coord.start_again();
        self.admin = admin(&self.coord.url).await;
    }

    /// Kills the coordinator and starts it again: a crash and a restart.
    pub async fn restart(&mut self) {
        self.kill();
        self.start_again().await;
    }

    /// Creates a campaign from a problem and JSON parameters.
    pub async fn create(
        &mut self,
        problem: &str,
        params: serde_json::Value,
        verify_rate: f64,
    ) -> i64 {
        campaigns::create(&mut self.admin, problem, params, verify_rate).await
    }

    /// One campaign's status.
    pub async fn show(&mut self, campaign: i64) -> pb::CampaignStatus {
        rpc::show(&mut self.admin, campaign).await
    }

    /// One campaign's status with every unit result.
    pub async fn status(&mut self, campaign: i64) -> pb::StatusReply {
        campaigns::status(&mut self.admin, campaign).await
    }

    /// Polls a campaign's status until `until` holds, returning that status.
    pub async fn wait_campaign(
        &self,
        campaign: i64,
        what: &str,
        timeout: Duration,
        until: &(dyn Fn(&pb::CampaignStatus) -> bool + Sync),
    ) -> pb::CampaignStatus {
        wait_campaign(&self.admin, campaign, what, timeout, until).await
    }

    /// Waits until the campaign has left the running state, returning its final status.
    pub async fn wait_finished(&mut self, campaign: i64, timeout: Duration) -> pb::CampaignStatus {
        wait_finished(&mut self.admin, campaign, timeout).await
    }
}
