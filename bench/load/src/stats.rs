//! Latency samples and their percentiles (exact: sorted samples, nearest rank).

use serde::Serialize;
use std::time::Duration;

/// Latency samples of one kind of call, in microseconds.
#[derive(Clone, Debug, Default)]
pub struct Samples(Vec<u32>);

impl Samples {
    /// Records one call's latency.
    pub fn record(&mut self, latency: Duration) {
        let micros = u32::try_from(latency.as_micros()).unwrap_or(u32::MAX);
        self.0.push(micros);
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: Samples) {
        self.0.extend(other.0);
    }

    /// How many samples there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is no sample.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The percentiles of the samples (all zero when there is none).
    pub fn summary(mut self) -> LatencySummary {
        self.0.sort_unstable();
        let sorted = &self.0;
        let ms = |micros: u32| f64::from(micros) / 1000.0;
        let count = sorted.len() as u64;
        let mean_ms = if sorted.is_empty() {
            0.0
        } else {
            sorted.iter().map(|&v| f64::from(v)).sum::<f64>() / sorted.len() as f64 / 1000.0
        };
        LatencySummary {
            count,
            mean_ms,
            p50_ms: ms(percentile(sorted, 50.0)),
            p90_ms: ms(percentile(sorted, 90.0)),
            p99_ms: ms(percentile(sorted, 99.0)),
            max_ms: ms(sorted.last().copied().unwrap_or(0)),
        }
    }
}

/// The nearest-rank percentile `p` (0..=100) of sorted samples; 0 when there is none.
pub fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Latency percentiles of one kind of call, in milliseconds.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct LatencySummary {
    /// Calls measured.
    pub count: u64,
    /// Mean latency.
    pub mean_ms: f64,
    /// Median latency.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Slowest call.
    pub max_ms: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let sorted: Vec<u32> = (1..=100).collect();
        assert_eq!(percentile(&sorted, 50.0), 50);
        assert_eq!(percentile(&sorted, 90.0), 90);
        assert_eq!(percentile(&sorted, 99.0), 99);
        assert_eq!(percentile(&sorted, 100.0), 100);
        assert_eq!(percentile(&sorted, 0.0), 1);
        assert_eq!(percentile(&[], 50.0), 0);
        assert_eq!(percentile(&[7], 99.0), 7);
    }

    #[test]
    fn summary_in_milliseconds() {
        let mut samples = Samples::default();
        for micros in [1000u64, 2000, 3000, 4000] {
            samples.record(Duration::from_micros(micros));
        }
        let s = samples.summary();
        assert_eq!(s.count, 4);
        assert_eq!(s.p50_ms, 2.0);
        assert_eq!(s.max_ms, 4.0);
        assert!((s.mean_ms - 2.5).abs() < 1e-9);
    }
}
