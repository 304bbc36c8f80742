//! How a campaign's wall time scales with the number of workers, simulated against a real
//! coordinator: every unit "takes" a duration drawn from a recorded campaign's unit times
//! (the `wall_seconds` of its results), simulated workers hold each unit that long (sleeping,
//! heartbeating on schedule) and complete it over real gRPC. Efficiency is the ideal wall
//! time (total work / workers: perfect packing, no overhead) over the measured one; the
//! critical-path bound (the longest unit) and the coordinator's per-unit round trips say what
//! limits it.

use grind_kit::rpc::register_with_retries;
use grind_proto::v1 as pb;
use grind_proto::v1::admin_client::AdminClient;
use grind_proto::v1::worker_client::WorkerClient;
use grind_shared::problems::primes::{base_primes, count_primes_in, isqrt};
use grind_shared::rng::{Random, SplitMix64};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tonic::transport::Channel;
use tonic::Code;

use crate::embedded::BenchError;
use crate::stats::Samples;

/// Numbers per simulated unit (counting them is negligible next to the hold time).
const UNIT: u64 = 1000;

/// Parses unit times: one number of seconds per line; blank lines and `#` comments skipped.
pub fn parse_unit_times(text: &str) -> Result<Vec<f64>, BenchError> {
    let mut times = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let value: f64 = line
            .parse()
            .map_err(|e| BenchError::Setup(format!("line {}: {line:?}: {e}", index + 1)))?;
        if !(value.is_finite() && value >= 0.0) {
            return Err(BenchError::Setup(format!(
                "line {}: {value} is not a duration",
                index + 1
            )));
        }
        times.push(value);
    }
    if times.is_empty() || times.iter().sum::<f64>() <= 0.0 {
        return Err(BenchError::Setup("no unit times".into()));
    }
    Ok(times)
}

/// `times` rescaled so that their mean is `mean` seconds.
pub fn scaled(times: &[f64], mean: f64) -> Vec<f64> {
    let current = times.iter().sum::<f64>() / times.len() as f64;
    times.iter().map(|t| t * mean / current).collect()
}

/// `n` durations drawn with replacement from `times` (seeded: the same seed, the same draw).
pub fn draw(times: &[f64], n: usize, seed: u64) -> Vec<f64> {
    let mut rng = SplitMix64::new(seed);
    (0..n)
        .map(|_| times[rng.modulo(times.len() as u64) as usize])
        .collect()
}

/// The wall time of handing `durations`, in order, to whichever of `workers` is free first,
/// with no overhead at all (greedy list scheduling, as the coordinator grants lowest units
/// first): what the order and the spread of unit times alone cost.
pub fn greedy_makespan(durations: &[f64], workers: usize) -> f64 {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    // Free times in nanoseconds (integers order totally).
    let mut free: BinaryHeap<Reverse<u64>> = (0..workers.max(1)).map(|_| Reverse(0)).collect();
    let mut end = 0u64;
    for d in durations {
        let Reverse(at) = free.pop().unwrap_or(Reverse(0));
        let done = at + (d * 1e9) as u64;
        end = end.max(done);
        free.push(Reverse(done));
    }
    end as f64 / 1e9
}

/// One simulated run: what it took and what limited it.
#[derive(Clone, Debug, Serialize)]
pub struct ScalingRun {
    /// Label of the campaign shape (e.g. `recorded` or `20 per worker`).
    pub shape: String,
    /// Simulated workers.
    pub workers: usize,
    /// Units in the campaign.
    pub units: usize,
    /// Sum of the unit durations (seconds of work).
    pub work_seconds: f64,
    /// The longest unit.
    pub longest_unit_seconds: f64,
    /// Work / workers: the wall time with perfect packing and no overhead.
    pub ideal_seconds: f64,
    /// max(ideal, longest unit): no schedule can beat it.
    pub bound_seconds: f64,
    /// Greedy list scheduling of the same units in the same order with zero overhead: the
    /// cost of the unit-time spread alone (the tail).
    pub greedy_seconds: f64,
    /// Measured: from the campaign's creation (workers registered and waiting) to its end.
    pub actual_seconds: f64,
    /// ideal / actual.
    pub efficiency: f64,
    /// bound / actual: how close the scheduler came to the best possible.
    pub efficiency_vs_bound: f64,
    /// Lease call latency, median and 99th percentile (ms).
    pub lease_p50_ms: f64,
    /// See `lease_p50_ms`.
    pub lease_p99_ms: f64,
    /// Complete call latency, median and 99th percentile (ms).
    pub complete_p50_ms: f64,
    /// See `complete_p50_ms`.
    pub complete_p99_ms: f64,
    /// Mean Lease + Complete time per unit (the coordinator's share of a unit's cycle), ms.
    pub round_trip_per_unit_ms: f64,
    /// Grants + completions per second the coordinator sustained.
    pub pairs_per_sec: f64,
    /// Failed calls.
    pub errors: u64,
}

#[derive(Default)]
struct WorkerTally {
    lease: Samples,
    complete: Samples,
    round_trips: Duration,
    units: u64,
    errors: u64,
}

/// Runs a campaign of `durations.len()` units (unit `i` held `durations[i]` seconds) on
/// `workers` simulated workers sharing `channels`, heartbeating every `heartbeat`.
pub async fn simulate(
    channels: &[Channel],
    shape: &str,
    durations: Arc<Vec<f64>>,
    workers: usize,
    heartbeat: Duration,
) -> Result<ScalingRun, BenchError> {
    let units = durations.len();
    let to = units as u64 * UNIT;
    let base = Arc::new(base_primes(isqrt(to.saturating_sub(1)) + 1));
    let (go_tx, go) = watch::channel(None::<i64>);
    let registered = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let mut tasks = tokio::task::JoinSet::new();
    for index in 0..workers {
        let client = WorkerClient::new(channels[index % channels.len()].clone());
        let (go, registered, done) = (go.clone(), registered.clone(), done.clone());
        let (durations, base) = (durations.clone(), base.clone());
        tasks.spawn(async move {
            let worker = register(client.clone(), index).await;
            registered.fetch_add(1, Ordering::SeqCst);
            let worker = worker?;
            Some(work(client, worker, go, done, &durations, &base, heartbeat).await)
        });
    }
    while registered.load(Ordering::SeqCst) < workers {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut admin = AdminClient::new(channels[0].clone());
    let started = Instant::now();
    let campaign_id = admin
        .create_campaign(pb::CreateCampaignRequest {
            problem: "primes".into(),
            params_json: serde_json::json!({"from": 0, "to": to, "unit": UNIT}).to_string(),
            name: format!("grind-scaling {shape} {workers}"),
            verify_rate: 0.0,
            max_attempts: 0,
            family: String::new(),
            // Units as split, one per slot: the benchmark measures the cost per unit.
            target_lease_ms: -1,
        })
        .await
        .map_err(|e| BenchError::Setup(format!("cannot create the campaign: {e}")))?
        .into_inner()
        .campaign_id;
    go_tx.send_replace(Some(campaign_id));
    loop {
        let status = admin
            .show_campaign(pb::CampaignRef { campaign_id })
            .await
            .map_err(|e| BenchError::Setup(format!("cannot read the campaign: {e}")))?
            .into_inner();
        if status.state != "running" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let actual = started.elapsed().as_secs_f64();
    done.store(true, Ordering::SeqCst);
    let mut all = WorkerTally::default();
    while let Some(joined) = tasks.join_next().await {
        if let Ok(Some(tally)) = joined {
            all.lease.merge(tally.lease);
            all.complete.merge(tally.complete);
            all.round_trips += tally.round_trips;
            all.units += tally.units;
            all.errors += tally.errors;
        } else {
            all.errors += 1;
        }
    }
    let work: f64 = durations.iter().sum();
    let longest = durations.iter().copied().fold(0.0, f64::max);
    let ideal = work / workers as f64;
    let bound = ideal.max(longest);
    let lease = all.lease.summary();
    let complete = all.complete.summary();
    Ok(ScalingRun {
        shape: shape.to_string(),
        workers,
        units,
        work_seconds: work,
        longest_unit_seconds: longest,
        ideal_seconds: ideal,
        bound_seconds: bound,
        greedy_seconds: greedy_makespan(&durations, workers),
        actual_seconds: actual,
        efficiency: ideal / actual,
        efficiency_vs_bound: bound / actual,
        lease_p50_ms: lease.p50_ms,
        lease_p99_ms: lease.p99_ms,
        complete_p50_ms: complete.p50_ms,
        complete_p99_ms: complete.p99_ms,
        round_trip_per_unit_ms: if all.units > 0 {
            all.round_trips.as_secs_f64() * 1000.0 / all.units as f64
        } else {
            0.0
        },
        pairs_per_sec: all.units as f64 / actual,
        errors: all.errors,
    })
}

async fn register(mut client: WorkerClient<Channel>, index: usize) -> Option<i64> {
    let request = pb::RegisterRequest {
        name: format!("scaling-{index}"),
        host: "grind-scaling".into(),
        cores: 1,
        version: grind_shared::VERSION.into(),
        git_commit: String::new(),
        previous_worker_id: 0,
        ..Default::default()
    };
    register_with_retries(&mut client, request, 50, Duration::from_millis(20), |_| {}).await
}

/// One worker's loop: lease, hold the unit for its duration (heartbeating), complete.
async fn work(
    mut client: WorkerClient<Channel>,
    worker_id: i64,
    mut go: watch::Receiver<Option<i64>>,
    done: Arc<AtomicBool>,
    durations: &[f64],
    base: &[u64],
    heartbeat: Duration,
) -> WorkerTally {
    let mut tally = WorkerTally::default();
    let Ok(campaign) = go.wait_for(Option::is_some).await.map(|c| c.unwrap_or(0)) else {
        return tally;
    };
    let mut next_beat = Instant::now() + heartbeat;
    while !done.load(Ordering::SeqCst) {
        let asked = Instant::now();
        let reply = client
            .lease(pb::LeaseRequest {
                worker_id,
                capacity: 1,
                max_units: 0,
                wait_ms: 0,
            })
            .await;
        let lease_time = asked.elapsed();
        tally.lease.record(lease_time);
        let grant = match reply.map(|r| r.into_inner()) {
            Ok(reply) => match reply.leases.into_iter().next() {
                Some(grant) if grant.campaign_id == campaign => grant,
                _ => {
                    // Nothing left for now (others hold the last units): wait as long as
                    // the coordinator asks, as a real worker does.
                    let wait = reply.retry_after_ms.clamp(10, 10_000) as u64;
                    tokio::time::sleep(Duration::from_millis(wait)).await;
                    continue;
                }
            },
            Err(_) => {
                tally.errors += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let start = u64::from_le_bytes(grant.unit_payload[0..8].try_into().unwrap_or([0; 8]));
        let end = u64::from_le_bytes(grant.unit_payload[8..16].try_into().unwrap_or([0; 8]));
        let index = (start / UNIT) as usize;
        let hold = Duration::from_secs_f64(durations.get(index).copied().unwrap_or(0.0));
        let finish = Instant::now() + hold;
        while next_beat < finish {
            tokio::time::sleep_until(next_beat.into()).await;
            let beat = client
                .heartbeat(pb::HeartbeatRequest {
                    worker_id,
                    leases: vec![pb::LeaseProgress {
                        lease_id: grant.lease_id,
                        ..Default::default()
                    }],
                    ..Default::default()
                })
                .await;
            if beat.is_err() {
                tally.errors += 1;
            }
            next_beat = Instant::now() + heartbeat;
        }
        tokio::time::sleep_until(finish.into()).await;
        let count = count_primes_in(start, end, base);
        let mut round_trip = lease_time;
        for _ in 0..5 {
            let sent = Instant::now();
            let reply = client
                .complete(pb::CompleteRequest {
                    worker_id,
                    lease_id: grant.lease_id,
                    unit_payload: grant.unit_payload.clone(),
                    result: Some(pb::UnitResult {
                        count: count.to_string(),
                        wall_seconds: hold.as_secs_f64(),
                        ..Default::default()
                    }),
                })
                .await;
            tally.complete.record(sent.elapsed());
            round_trip += sent.elapsed();
            match reply {
                Ok(_) => break,
                Err(status) if matches!(status.code(), Code::Unavailable | Code::Unknown) => {
                    tally.errors += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(_) => {
                    tally.errors += 1;
                    break;
                }
            }
        }
        tally.round_trips += round_trip;
        tally.units += 1;
    }
    tally
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_schedules_in_order() {
        assert_eq!(greedy_makespan(&[1.0, 1.0, 1.0, 1.0], 2), 2.0);
        assert_eq!(greedy_makespan(&[3.0, 1.0, 1.0, 1.0], 2), 3.0);
        assert_eq!(greedy_makespan(&[1.0, 1.0, 3.0], 2), 4.0);
        assert_eq!(greedy_makespan(&[2.0], 100), 2.0);
    }

    #[test]
    fn parses_scales_and_draws() {
        let times = parse_unit_times("# unit seconds\n1.0\n\n3.0 # slow\n").unwrap();
        assert_eq!(times, vec![1.0, 3.0]);
        assert_eq!(scaled(&times, 1.0), vec![0.5, 1.5]);
        let a = draw(&times, 100, 7);
        assert_eq!(a, draw(&times, 100, 7));
        assert!(a.iter().all(|t| *t == 1.0 || *t == 3.0));
        assert!(a.contains(&1.0) && a.contains(&3.0));
        // As the hand-written generator drew them before `grind_shared::rng` (commit ef890e3).
        let table: Vec<f64> = (0..10).map(f64::from).collect();
        assert_eq!(
            draw(&table, 8, 99),
            [3.0, 4.0, 7.0, 7.0, 6.0, 9.0, 5.0, 5.0]
        );
        assert!(parse_unit_times("x").is_err());
        assert!(parse_unit_times("").is_err());
        assert!(parse_unit_times("-1").is_err());
    }
}
