//! A small seeded random number generator (SplitMix64): the same seed always gives the same
//! fault plan and the same workload, with no dependency on a random-number crate's stream
//! stability across versions.

/// A deterministic pseudo-random generator.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng {
            state: seed ^ 0x6368_616f_735f_6772,
        }
    }

    /// An independent generator for a named purpose (so adding draws for one purpose does
    /// not shift the draws of another).
    pub fn fork(&self, purpose: u64) -> Rng {
        let mut base = Rng::new(self.state ^ purpose.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        base.next_u64();
        base
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let out = grind_shared::rng::splitmix64(self.state);
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        out
    }

    /// A uniform float in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniform integer in `[lo, hi]` (inclusive); `lo` when `hi < lo`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        let span = hi - lo + 1;
        lo + self.next_u64() % span
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// An exponentially distributed value with the given mean (for fault inter-arrival times).
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.unit()).ln()
    }

    /// One element of a non-empty slice, uniformly; `None` for an empty one.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            return None;
        }
        let index = self.range(0, items.len() as u64 - 1) as usize;
        items.get(index)
    }

    /// An index drawn with the given non-negative weights; `None` when they sum to zero.
    pub fn weighted(&mut self, weights: &[f64]) -> Option<usize> {
        let total: f64 = weights.iter().filter(|w| **w > 0.0).sum();
        if total <= 0.0 {
            return None;
        }
        let mut draw = self.unit() * total;
        for (index, weight) in weights.iter().enumerate() {
            if *weight <= 0.0 {
                continue;
            }
            if draw < *weight {
                return Some(index);
            }
            draw -= weight;
        }
        weights.iter().rposition(|w| *w > 0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(Rng::new(7).next_u64(), Rng::new(8).next_u64());
    }

    #[test]
    fn ranges_and_weights_stay_in_bounds() {
        let mut rng = Rng::new(1);
        for _ in 0..1000 {
            let v = rng.range(3, 9);
            assert!((3..=9).contains(&v));
            let u = rng.unit();
            assert!((0.0..1.0).contains(&u));
            let i = rng.weighted(&[0.0, 1.0, 0.0, 2.0]).unwrap();
            assert!(i == 1 || i == 3);
        }
        assert_eq!(rng.weighted(&[0.0, 0.0]), None);
        assert_eq!(rng.range(5, 5), 5);
        assert!(rng.pick::<u8>(&[]).is_none());
    }
}
