//! How many leases to queue per thread: enough to cover the units that finish during the
//! round trips that fetch more, from moving averages of unit and round-trip times.

use std::time::Duration;

/// Most leases queued per thread ahead of free threads (tiny units, long round trips).
const MAX_QUEUE_PER_THREAD: usize = 128;

/// Moving averages of how long units take and how long a round trip to the coordinator
/// takes: the queue of leased units must cover the units finished during a round trip.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pace {
    unit_seconds: f64,
    round_trip_seconds: f64,
}

impl Default for Pace {
    fn default() -> Self {
        // Until measured: units are assumed long (one queued per thread, as before).
        Pace {
            unit_seconds: 1.0,
            round_trip_seconds: 0.001,
        }
    }
}

impl Pace {
    const WEIGHT: f64 = 0.2;

    /// A unit took `seconds` of wall time.
    pub(super) fn unit_took(&mut self, seconds: f64) {
        if seconds.is_finite() && seconds >= 0.0 {
            self.unit_seconds += Self::WEIGHT * (seconds - self.unit_seconds);
        }
    }

    /// A round trip to the coordinator took `elapsed`.
    pub(super) fn round_trip_took(&mut self, elapsed: Duration) {
        self.round_trip_seconds += Self::WEIGHT * (elapsed.as_secs_f64() - self.round_trip_seconds);
    }

    /// Leases to hold queued per thread: enough for two round trips' worth of units.
    pub(super) fn queue_per_thread(&self) -> usize {
        let units = 2.0 * self.round_trip_seconds / self.unit_seconds.max(1e-6);
        (units.ceil() as usize).clamp(1, MAX_QUEUE_PER_THREAD)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_covers_two_round_trips_within_limits() {
        let mut pace = Pace::default();
        assert_eq!(pace.queue_per_thread(), 1);
        // Units of 1 ms and round trips of 9.7 ms: 19.4, so 20 units per thread, once the
        // averages have moved there.
        for _ in 0..200 {
            pace.unit_took(0.001);
            pace.round_trip_took(Duration::from_micros(9_700));
        }
        assert_eq!(pace.queue_per_thread(), 20);
        // Nonsense times are ignored; tiny units are capped.
        pace.unit_took(f64::NAN);
        pace.unit_took(-1.0);
        assert_eq!(pace.queue_per_thread(), 20);
        for _ in 0..200 {
            pace.unit_took(0.0);
        }
        assert_eq!(pace.queue_per_thread(), MAX_QUEUE_PER_THREAD);
    }
}
