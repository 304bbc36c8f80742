//! Progress and ETA for campaigns whose units differ in size by orders of magnitude.
//!
//! Counting units is not enough for tree searches: one unit may take a millisecond and its
//! neighbour an hour. The estimate therefore works in *lease-seconds* (wall seconds one lease
//! spends on a unit) and combines three sources:
//!
//! 1. **Finished units**: every result's wall time is one sample of "how long a unit takes".
//! 2. **Completed-fraction reports**: a running lease that reports fraction `f` after `e`
//!    seconds will need about `e (1 - f) / f` more, and `e / f` is one more size sample
//!    (taken once `f >= MIN_FRACTION`, so early noisy reports do not dominate).
//! 3. **Pending units** are assumed to be drawn from the same size distribution: with `n`
//!    size samples of mean `m` and standard deviation `s`, the `P` pending units need
//!    `P m` lease-seconds with variance `P s^2 (1 + P / n)` (the prediction variance of a sum
//!    of `P` new draws when the mean itself is estimated from `n` samples).
//!
//! A running lease without a fraction report is expected to need `max(m - e, m / 10)` more,
//! with variance `s^2`; one with a fraction report carries a spread of `(1 - f)` times its
//! extrapolated residual (the extrapolation is exact at the end and least sure at the start).
//!
//! Remaining work `R` with standard deviation `σ` gives the interval `R ± 2σ` (clamped at
//! zero). The ETA divides by the number of parallel lanes of work: the lease-seconds finished
//! per wall second over the last few minutes when enough results came in, else the leases
//! running now, at most as many per worker as it has cores (workers hold one queued lease
//! per thread beside the running ones). Progress is `done / (done + remaining)` where
//! `done` is the wall time already spent (finished results plus running leases' elapsed
//! time). While the splitter has not produced every unit yet, the total is unknown and the
//! estimate is flagged `open_ended` (a lower bound on the remaining time).

use serde::Serialize;

/// Fraction reports below this are too early to extrapolate a unit's size from.
pub const MIN_FRACTION: f64 = 0.05;

/// A running lease, as the estimate sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunningLease {
    /// Seconds since the lease was granted.
    pub elapsed: f64,
    /// The worker's last completed-fraction report, when it made one.
    pub fraction: Option<f64>,
}

/// What the estimate is computed from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Inputs {
    /// Units finished (done) and failed: no work left in them.
    pub finished_units: u64,
    /// Units waiting for a lease (including replica runs still wanted).
    pub pending_units: u64,
    /// Whether the splitter has produced every unit.
    pub split_complete: bool,
    /// Number of finished results whose wall times are summarised below.
    pub results: u64,
    /// Sum of the finished results' wall seconds.
    pub result_seconds: f64,
    /// Sum of the squares of the finished results' wall seconds.
    pub result_seconds_sq: f64,
    /// Leases running now.
    pub running: Vec<RunningLease>,
    /// Parallel lanes of work (see the module documentation); 0 when nothing runs.
    pub lanes: f64,
}

/// A value with a lower and upper end (about two standard deviations each way).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Interval {
    /// The central estimate.
    pub value: f64,
    /// The low end.
    pub low: f64,
    /// The high end.
    pub high: f64,
}

/// Progress and time left for one campaign.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// Fraction of the work done, 0..1, with its interval.
    pub progress: Interval,
    /// Lease-seconds of work left, with its interval; `None` when nothing is known yet.
    pub remaining_seconds: Option<Interval>,
    /// Wall seconds until the end at the current parallelism; `None` when unknown (no size
    /// sample yet, or nothing running).
    pub eta_seconds: Option<Interval>,
    /// The splitter may still produce units: the remaining work is a lower bound.
    pub open_ended: bool,
    /// How the estimate was made: `finished` (nothing left), `sizes` (unit-size samples and
    /// fraction reports), or `units` (units counted, sizes unknown).
    pub method: &'static str,
    /// Unit-size samples the estimate rests on.
    pub samples: u64,
}

/// Mean and variance of a sample given its count, sum and sum of squares.
fn mean_var(n: f64, sum: f64, sum_sq: f64) -> (f64, f64) {
    let mean = sum / n;
    let var = if n > 1.0 {
        ((sum_sq - n * mean * mean) / (n - 1.0)).max(0.0)
    } else {
        0.0
    };
    (mean, var)
}

fn clamp_interval(value: f64, sd: f64) -> Interval {
    Interval {
        value: value.max(0.0),
        low: (value - 2.0 * sd).max(0.0),
        high: (value + 2.0 * sd).max(0.0),
    }
}

/// Estimates a campaign's progress and time left (see the module documentation).
pub fn estimate(inputs: &Inputs) -> Estimate {
    let open_ended = !inputs.split_complete;
    let running = inputs.running.len() as u64;
    let total_units = inputs.finished_units + inputs.pending_units + running;
    let unit_fraction = if total_units == 0 {
        0.0
    } else {
        inputs.finished_units as f64 / total_units as f64
    };
    if !open_ended && inputs.pending_units == 0 && running == 0 {
        let one = Interval {
            value: 1.0,
            low: 1.0,
            high: 1.0,
        };
        let zero = Interval {
            value: 0.0,
            low: 0.0,
            high: 0.0,
        };
        return Estimate {
            progress: one,
            remaining_seconds: Some(zero),
            eta_seconds: Some(zero),
            open_ended,
            method: "finished",
            samples: inputs.results,
        };
    }

    // Unit-size samples: finished results plus running leases far enough along.
    let (mut n, mut sum, mut sum_sq) = (
        inputs.results as f64,
        inputs.result_seconds,
        inputs.result_seconds_sq,
    );
    for lease in &inputs.running {
        if let Some(f) = lease.fraction.filter(|f| *f >= MIN_FRACTION) {
            let size = lease.elapsed / f;
            n += 1.0;
            sum += size;
            sum_sq += size * size;
        }
    }
    if n < 1.0 {
        let progress = Interval {
            value: unit_fraction,
            low: if open_ended { 0.0 } else { unit_fraction },
            high: unit_fraction,
        };
        return Estimate {
            progress,
            remaining_seconds: None,
            eta_seconds: None,
            open_ended,
            method: "units",
            samples: 0,
        };
    }
    let (mean, var) = mean_var(n, sum, sum_sq);

    let pending = inputs.pending_units as f64;
    let mut remaining = pending * mean;
    let mut remaining_var = pending * var * (1.0 + pending / n);
    let mut spent = inputs.result_seconds;
    for lease in &inputs.running {
        spent += lease.elapsed;
        match lease.fraction.filter(|f| *f > 0.0) {
            Some(f) => {
                let residual = lease.elapsed * (1.0 - f.min(1.0)) / f;
                remaining += residual;
                let spread = (1.0 - f.min(1.0)) * residual;
                remaining_var += spread * spread;
            }
            None => {
                remaining += (mean - lease.elapsed).max(mean / 10.0);
                remaining_var += var;
            }
        }
    }
    let sd = remaining_var.sqrt();
    let left = clamp_interval(remaining, sd);
    let progress_of = |rest: f64| {
        if spent + rest <= 0.0 {
            unit_fraction
        } else {
            spent / (spent + rest)
        }
    };
    let progress = Interval {
        value: progress_of(left.value),
        low: if open_ended {
            0.0
        } else {
            progress_of(left.high)
        },
        high: progress_of(left.low),
    };
    let eta_seconds = (running > 0 && inputs.lanes > 0.0).then(|| {
        let lanes = inputs.lanes;
        Interval {
            value: left.value / lanes,
            low: left.low / lanes,
            high: left.high / lanes,
        }
    });
    Estimate {
        progress,
        remaining_seconds: Some(left),
        eta_seconds,
        open_ended,
        method: "sizes",
        samples: n as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(sizes: &[f64]) -> (u64, f64, f64) {
        (
            sizes.len() as u64,
            sizes.iter().sum(),
            sizes.iter().map(|s| s * s).sum(),
        )
    }

    #[test]
    fn a_finished_campaign_is_complete() {
        let e = estimate(&Inputs {
            finished_units: 10,
            split_complete: true,
            ..Inputs::default()
        });
        assert_eq!(e.progress.value, 1.0);
        assert_eq!(e.eta_seconds.unwrap().value, 0.0);
        assert_eq!(e.method, "finished");
    }

    #[test]
    fn without_sizes_units_are_counted() {
        let e = estimate(&Inputs {
            finished_units: 1,
            pending_units: 3,
            split_complete: true,
            running: vec![RunningLease {
                elapsed: 1.0,
                fraction: None,
            }],
            ..Inputs::default()
        });
        assert_eq!(e.method, "units");
        assert!((e.progress.value - 0.2).abs() < 1e-9);
        assert!(e.eta_seconds.is_none());
    }

    #[test]
    fn equal_units_give_a_tight_estimate() {
        let (n, s, sq) = results(&[2.0; 50]);
        let e = estimate(&Inputs {
            finished_units: 50,
            pending_units: 48,
            split_complete: true,
            results: n,
            result_seconds: s,
            result_seconds_sq: sq,
            running: vec![
                RunningLease {
                    elapsed: 1.0,
                    fraction: Some(0.5),
                },
                RunningLease {
                    elapsed: 1.0,
                    fraction: Some(0.5),
                },
            ],
            lanes: 2.0,
        });
        // 48 pending x 2 s + 2 x 1 s left, on two lanes: 49 s.
        let eta = e.eta_seconds.unwrap();
        assert!((eta.value - 49.0).abs() < 1e-6, "{eta:?}");
        assert!(eta.high - eta.low < 2.0, "{eta:?}");
        assert!(
            (e.progress.value - 102.0 / 200.0).abs() < 1e-6,
            "{:?}",
            e.progress
        );
    }

    #[test]
    fn skewed_units_widen_the_interval() {
        let (n, s, sq) = results(&[0.01, 0.01, 0.02, 10.0, 0.01, 0.03]);
        let e = estimate(&Inputs {
            finished_units: 6,
            pending_units: 20,
            split_complete: true,
            results: n,
            result_seconds: s,
            result_seconds_sq: sq,
            running: vec![RunningLease {
                elapsed: 0.5,
                fraction: None,
            }],
            lanes: 1.0,
        });
        let eta = e.eta_seconds.unwrap();
        assert!(eta.low < eta.value && eta.value < eta.high, "{eta:?}");
        assert!(eta.high > 3.0 * eta.value, "{eta:?}");
        assert!(e.progress.low <= e.progress.value && e.progress.value <= e.progress.high);
    }

    #[test]
    fn fraction_reports_alone_give_a_size() {
        let e = estimate(&Inputs {
            pending_units: 3,
            split_complete: true,
            running: vec![RunningLease {
                elapsed: 10.0,
                fraction: Some(0.25),
            }],
            lanes: 1.0,
            ..Inputs::default()
        });
        // One sample of 40 s: 30 s left on the lease, 3 x 40 s pending, one lane.
        let eta = e.eta_seconds.unwrap();
        assert!((eta.value - 150.0).abs() < 1e-6, "{eta:?}");
        assert_eq!(e.samples, 1);
    }

    #[test]
    fn an_unfinished_split_is_open_ended() {
        let (n, s, sq) = results(&[1.0, 1.0]);
        let e = estimate(&Inputs {
            finished_units: 2,
            pending_units: 2,
            split_complete: false,
            results: n,
            result_seconds: s,
            result_seconds_sq: sq,
            running: vec![],
            lanes: 0.0,
        });
        assert!(e.open_ended);
        assert_eq!(e.progress.low, 0.0);
        assert!(e.eta_seconds.is_none(), "nothing running: no ETA");
    }
}
