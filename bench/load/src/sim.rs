//! The simulated workers: lightweight tokio tasks that speak the real `grind.v1.Worker`
//! protocol. Each registers, then loops Lease -> (Heartbeat) -> count the unit's primes ->
//! Complete, recording latencies and what the coordinator answered. With a hold time
//! ([`Shared::with_hold`]) a worker keeps each unit that long before completing it, as if it
//! computed, and heartbeats on its own schedule meanwhile (the realistic cycle of a worker).

use grind_kit::rpc::register_with_retries;
use grind_proto::v1 as pb;
use grind_proto::v1::worker_client::WorkerClient;
use grind_shared::problem::codec;
use grind_shared::problems::primes::{base_primes, count_primes_in, isqrt};
use std::fmt::Display;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tonic::transport::Channel;
use tonic::Code;

use crate::stats::Samples;

/// Pause after a failed call before the next one.
const ERROR_BACKOFF: Duration = Duration::from_millis(50);
/// Attempts at delivering one result when the call itself fails.
const COMPLETE_ATTEMPTS: u32 = 3;

/// Where a run is: latencies and pairs are only counted while measuring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Workers run but nothing is counted towards the figures.
    WarmUp = 0,
    /// The measured window.
    Measure = 1,
    /// Workers deliver what they hold and stop.
    Stop = 2,
}

/// What every simulated worker of a run shares: the phase, the campaign and its range.
pub struct Shared {
    phase: AtomicU8,
    campaign_id: i64,
    from: u64,
    to: u64,
    base: Vec<u64>,
    heartbeat: Option<Duration>,
    capacity: u32,
    hold: Duration,
}

impl Shared {
    /// Settings for workers of the `primes` campaign `campaign_id` over `[from, to)`, leasing
    /// `capacity` units per call and heartbeating every `heartbeat` when given.
    pub fn new(
        campaign_id: i64,
        from: u64,
        to: u64,
        heartbeat: Option<Duration>,
        capacity: u32,
    ) -> Shared {
        Shared {
            phase: AtomicU8::new(Phase::WarmUp as u8),
            campaign_id,
            from,
            to,
            base: base_primes(isqrt(to.saturating_sub(1)) + 1),
            heartbeat,
            capacity: capacity.max(1),
            hold: Duration::ZERO,
        }
    }

    /// Every worker keeps each unit for `hold` (sleeping, as if computing) before it
    /// completes it, heartbeating meanwhile when heartbeats are on.
    pub fn with_hold(mut self, hold: Duration) -> Shared {
        self.hold = hold;
        self
    }

    /// Moves every worker to `phase`.
    pub fn set_phase(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::SeqCst);
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        match self.phase.load(Ordering::SeqCst) {
            0 => Phase::WarmUp,
            1 => Phase::Measure,
            _ => Phase::Stop,
        }
    }

    fn measuring(&self) -> bool {
        self.phase() == Phase::Measure
    }

    /// Decodes a `primes` unit payload (two little-endian u64, `[start, end)`) and counts its
    /// primes exactly; returns (numbers in the unit, primes among them).
    pub fn count_unit(&self, payload: &[u8]) -> Result<(u64, u64), String> {
        let [start, end] =
            codec::decode_u64s::<2>(payload, "primes unit").map_err(|e| e.to_string())?;
        if start >= end || start < self.from || end > self.to {
            return Err(format!(
                "unit [{start}, {end}) is not inside the campaign's [{}, {})",
                self.from, self.to
            ));
        }
        Ok((end - start, count_primes_in(start, end, &self.base)))
    }
}

/// What one or more simulated workers saw.
#[derive(Debug, Default)]
pub struct Tally {
    /// Lease call latencies (calls started in the measured window).
    pub lease: Samples,
    /// Complete call latencies (calls started in the measured window).
    pub complete: Samples,
    /// Heartbeat call latencies (calls started in the measured window).
    pub heartbeat: Samples,
    /// Accepted completions whose answer arrived in the measured window.
    pub pairs_in_window: u64,
    /// Lease calls started in the measured window.
    pub lease_calls_in_window: u64,
    /// Heartbeat calls started in the measured window.
    pub heartbeats_in_window: u64,
    /// Lease calls that granted nothing (the campaign ran dry).
    pub empty_leases: u64,
    /// Completions the coordinator accepted, over the whole run.
    pub accepted: u64,
    /// Sum of the counts of the accepted completions.
    pub accepted_sum: u128,
    /// Completions answered as duplicates.
    pub duplicates: u64,
    /// Completions neither accepted nor duplicate.
    pub rejected: u64,
    /// Leases a heartbeat told the worker to drop.
    pub cancelled: u64,
    /// Leases of other campaigns handed back untouched (shared coordinator).
    pub foreign_released: u64,
    /// Failed calls (every RPC error, retried or not).
    pub errors: u64,
    /// The first error seen, for the report.
    pub first_error: Option<String>,
}

impl Tally {
    /// Adds `other` into this tally.
    pub fn merge(&mut self, other: Tally) {
        self.lease.merge(other.lease);
        self.complete.merge(other.complete);
        self.heartbeat.merge(other.heartbeat);
        self.pairs_in_window += other.pairs_in_window;
        self.lease_calls_in_window += other.lease_calls_in_window;
        self.heartbeats_in_window += other.heartbeats_in_window;
        self.empty_leases += other.empty_leases;
        self.accepted += other.accepted;
        self.accepted_sum += other.accepted_sum;
        self.duplicates += other.duplicates;
        self.rejected += other.rejected;
        self.cancelled += other.cancelled;
        self.foreign_released += other.foreign_released;
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }

    fn error(&mut self, what: &str, error: impl Display) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(format!("{what}: {error}"));
        }
    }
}

/// Runs one simulated worker over `channel`, starting after `delay` (to ramp up many
/// workers), until the phase is [`Phase::Stop`]; a lease it holds then is still completed,
/// so every grant ends in a completion. Its heartbeats are offset by `phase` (a fraction of
/// the interval) so that many workers do not heartbeat in step.
pub async fn run_worker(
    index: usize,
    channel: Channel,
    shared: Arc<Shared>,
    delay: Duration,
    phase: f64,
) -> Tally {
    tokio::time::sleep(delay).await;
    let mut client = WorkerClient::new(channel);
    let mut tally = Tally::default();
    let Some(worker_id) = register(&mut client, index, &mut tally).await else {
        return tally;
    };
    let offset = shared
        .heartbeat
        .map_or(Duration::ZERO, |every| every.mul_f64(phase.clamp(0.0, 1.0)));
    let mut last_heartbeat = Instant::now() - offset;
    while shared.phase() != Phase::Stop {
        let measured = shared.measuring();
        let started = Instant::now();
        let reply = client
            .lease(pb::LeaseRequest {
                worker_id,
                capacity: shared.capacity,
                max_units: 0,
                wait_ms: 0,
            })
            .await;
        if measured {
            tally.lease.record(started.elapsed());
            tally.lease_calls_in_window += 1;
        }
        let reply = match reply {
            Ok(reply) => reply.into_inner(),
            Err(status) => {
                tally.error("lease", status);
                tokio::time::sleep(ERROR_BACKOFF).await;
                continue;
            }
        };
        if reply.leases.is_empty() {
            tally.empty_leases += 1;
            let wait = reply.retry_after_ms.clamp(10, 1000) as u64;
            tokio::time::sleep(Duration::from_millis(wait)).await;
            continue;
        }
        for grant in reply.leases {
            work_on(
                &mut client,
                worker_id,
                grant,
                &shared,
                &mut tally,
                &mut last_heartbeat,
            )
            .await;
        }
    }
    tally
}

async fn register(
    client: &mut WorkerClient<Channel>,
    index: usize,
    tally: &mut Tally,
) -> Option<i64> {
    // Ramped-up workers may still meet the per-address registration limit: keep trying.
    let request = pb::RegisterRequest {
        name: format!("loadgen-{index}"),
        host: "grind-loadgen".into(),
        cores: 1,
        version: grind_shared::VERSION.into(),
        git_commit: String::new(),
        previous_worker_id: 0,
        ..Default::default()
    };
    register_with_retries(client, request, 30, ERROR_BACKOFF, |status| {
        tally.error("register", status)
    })
    .await
}

async fn work_on(
    client: &mut WorkerClient<Channel>,
    worker_id: i64,
    grant: pb::LeaseGrant,
    shared: &Shared,
    tally: &mut Tally,
    last_heartbeat: &mut Instant,
) {
    let lease_id = grant.lease_id;
    if grant.campaign_id != shared.campaign_id {
        tally.foreign_released += 1;
        release(client, worker_id, lease_id, tally).await;
        return;
    }
    let began = Instant::now();
    let (nodes, count) = match shared.count_unit(&grant.unit_payload) {
        Ok(counted) => counted,
        Err(e) => {
            tally.error("unit", e);
            release(client, worker_id, lease_id, tally).await;
            return;
        }
    };
    if shared.hold.is_zero() {
        if let Some(every) = shared.heartbeat {
            if last_heartbeat.elapsed() >= every {
                *last_heartbeat = Instant::now();
                heartbeat(client, worker_id, lease_id, nodes, shared, tally).await;
            }
        }
    } else {
        // Hold the unit as if computing it, heartbeating on schedule meanwhile.
        let done_at = began + shared.hold;
        loop {
            let next_beat = shared.heartbeat.map(|every| *last_heartbeat + every);
            match next_beat {
                Some(at) if at < done_at => {
                    tokio::time::sleep_until(at.into()).await;
                    *last_heartbeat = Instant::now();
                    heartbeat(client, worker_id, lease_id, nodes, shared, tally).await;
                }
                _ => {
                    tokio::time::sleep_until(done_at.into()).await;
                    break;
                }
            }
        }
    }
    let wall = began.elapsed().as_secs_f64();
    let result = pb::UnitResult {
        count: count.to_string(),
        nodes,
        cpu_seconds: wall,
        wall_seconds: wall,
        ..Default::default()
    };
    for attempt in 1..=COMPLETE_ATTEMPTS {
        let measured = shared.measuring();
        let started = Instant::now();
        let reply = client
            .complete(pb::CompleteRequest {
                worker_id,
                lease_id,
                result: Some(result.clone()),
                unit_payload: grant.unit_payload.clone(),
            })
            .await;
        if measured {
            tally.complete.record(started.elapsed());
        }
        match reply {
            Ok(reply) => {
                let reply = reply.into_inner();
                // A retry answered "already delivered" means an earlier attempt was taken.
                let taken_before =
                    attempt > 1 && reply.duplicate && reply.detail.contains("already delivered");
                if reply.accepted || taken_before {
                    tally.accepted += 1;
                    tally.accepted_sum += u128::from(count);
                    if shared.measuring() {
                        tally.pairs_in_window += 1;
                    }
                } else if reply.duplicate {
                    tally.duplicates += 1;
                } else {
                    tally.rejected += 1;
                    if tally.first_error.is_none() {
                        tally.first_error =
                            Some(format!("complete not accepted: {}", reply.detail));
                    }
                }
                return;
            }
            Err(status) => {
                let retry = matches!(
                    status.code(),
                    Code::Unavailable | Code::DeadlineExceeded | Code::Unknown | Code::Cancelled
                );
                tally.error("complete", status);
                if !retry {
                    return;
                }
                tokio::time::sleep(ERROR_BACKOFF).await;
            }
        }
    }
}

async fn heartbeat(
    client: &mut WorkerClient<Channel>,
    worker_id: i64,
    lease_id: i64,
    nodes: u64,
    shared: &Shared,
    tally: &mut Tally,
) {
    let measured = shared.measuring();
    let started = Instant::now();
    let reply = client
        .heartbeat(pb::HeartbeatRequest {
            worker_id,
            leases: vec![pb::LeaseProgress {
                lease_id,
                nodes,
                cursor: Vec::new(),
                fraction: 1.0,
            }],
            ..Default::default()
        })
        .await;
    if measured {
        tally.heartbeat.record(started.elapsed());
        tally.heartbeats_in_window += 1;
    }
    match reply {
        Ok(reply) => {
            let cancel = pb::LeaseVerdict::Cancel as i32;
            let reply = reply.into_inner();
            if reply.leases.iter().any(|status| status.verdict == cancel) {
                tally.cancelled += 1;
            }
        }
        Err(status) => tally.error("heartbeat", status),
    }
}

async fn release(
    client: &mut WorkerClient<Channel>,
    worker_id: i64,
    lease_id: i64,
    tally: &mut Tally,
) {
    let request = pb::ReleaseRequest {
        worker_id,
        lease_id,
        cursor: Vec::new(),
        nodes: 0,
        cpu_seconds: 0.0,
        reason: String::new(),
    };
    if let Err(status) = client.release(request).await {
        tally.error("release", status);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_units_exactly() {
        let shared = Shared::new(1, 0, 1_000_000_000, None, 1);
        // pi(10^6) = 78498, summed over units of 1000 as the campaign splits them.
        let total: u64 = (0..1000u64)
            .map(|i| {
                let payload = codec::encode_u64s(&[i * 1000, (i + 1) * 1000]);
                shared.count_unit(&payload).unwrap().1
            })
            .sum();
        assert_eq!(total, 78_498);
        // Near the top of the range: primes in [999_999_000, 1_000_000_000) by trial division.
        let payload = codec::encode_u64s(&[999_999_000, 1_000_000_000]);
        let expected = (999_999_000u64..1_000_000_000)
            .filter(|&n| (2..).take_while(|d| d * d <= n).all(|d| n % d != 0))
            .count() as u64;
        assert_eq!(shared.count_unit(&payload).unwrap(), (1000, expected));
    }

    #[test]
    fn rejects_foreign_payloads() {
        let shared = Shared::new(1, 0, 1000, None, 1);
        assert!(shared.count_unit(&[1, 2, 3]).is_err());
        assert!(shared
            .count_unit(&codec::encode_u64s(&[500, 2000]))
            .is_err());
        assert!(shared.count_unit(&codec::encode_u64s(&[9, 9])).is_err());
    }
}
