//! A small, fast, seedable random generator with exactly uniform bounded draws.
//!
//! xoshiro256++ (Blackman and Vigna, public domain algorithm), seeded through splitmix64.
//! Bounded draws reject instead of rounding, so every value below the bound is exactly
//! equally likely (given uniform random bits); no floating point anywhere. The output
//! depends only on the seed, so books are reproducible on every platform.

use crate::rng::splitmix64;

/// xoshiro256++ state.
#[derive(Clone, Debug)]
pub struct Rng {
    state: [u64; 4],
}

impl Rng {
    /// A generator whose whole stream is determined by `seed`.
    pub fn seeded(seed: u64) -> Rng {
        let mut x = seed;
        let mut state = [0u64; 4];
        for word in &mut state {
            *word = splitmix64(x);
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        }
        // splitmix64 is a bijection of consecutive inputs, so the state is never all zero.
        Rng { state }
    }

    /// The generator of unit `unit` of a campaign with seed `campaign_seed`: distinct units
    /// get unrelated streams, and the same pair always gives the same stream.
    pub fn for_unit(campaign_seed: u64, unit: u64) -> Rng {
        Rng::seeded(splitmix64(splitmix64(campaign_seed) ^ unit.rotate_left(32)) ^ unit)
    }

    /// 64 uniform random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.state;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// A uniform integer in `0..bound` (`bound` >= 1), exactly: Lemire's multiply-shift with
    /// rejection of the biased low products.
    #[inline]
    pub fn below(&mut self, bound: u64) -> u64 {
        debug_assert!(bound > 0);
        let mut product = u128::from(self.next_u64()) * u128::from(bound);
        if (product as u64) < bound {
            let threshold = bound.wrapping_neg() % bound;
            while (product as u64) < threshold {
                product = u128::from(self.next_u64()) * u128::from(bound);
            }
        }
        (product >> 64) as u64
    }

    /// A uniform integer in `0..bound` (`bound` >= 1), exactly: random bits masked to the
    /// bound's width, rejected when not below it (fewer than two tries on average).
    #[inline]
    pub fn below_u128(&mut self, bound: u128) -> u128 {
        debug_assert!(bound > 0);
        if let Ok(small) = u64::try_from(bound) {
            return u128::from(self.below(small));
        }
        let mask = u128::MAX >> (bound - 1).leading_zeros();
        loop {
            let bits = (u128::from(self.next_u64()) << 64 | u128::from(self.next_u64())) & mask;
            if bits < bound {
                return bits;
            }
        }
    }

    /// Shuffles `items` uniformly (Fisher-Yates).
    #[inline]
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for last in (1..items.len()).rev() {
            let pick = self.below(last as u64 + 1) as usize;
            items.swap(last, pick);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_units_differ() {
        let a: Vec<u64> = (0..4).map(|_| Rng::for_unit(7, 3).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let mut x = Rng::for_unit(7, 3);
        let mut y = Rng::for_unit(7, 4);
        let mut z = Rng::for_unit(8, 3);
        let (x, y, z) = (x.next_u64(), y.next_u64(), z.next_u64());
        assert!(x != y && x != z && y != z);
    }

    #[test]
    fn bounded_draws_stay_below_and_cover_small_ranges() {
        let mut rng = Rng::seeded(1);
        let mut seen = [0u32; 7];
        for _ in 0..7_000 {
            seen[rng.below(7) as usize] += 1;
        }
        // Each value expected 1000 times; 5 sigma is about 150.
        assert!(seen.iter().all(|&s| (850..1150).contains(&s)), "{seen:?}");
        let big = (1u128 << 100) + 12_345;
        let mut high = 0;
        for _ in 0..2_000 {
            let x = rng.below_u128(big);
            assert!(x < big);
            if x >= big / 2 {
                high += 1;
            }
        }
        assert!((850..1150).contains(&high), "{high}");
        assert_eq!(rng.below(1), 0);
        assert_eq!(rng.below_u128(1), 0);
    }

    #[test]
    fn shuffles_are_permutations() {
        let mut rng = Rng::seeded(2);
        let mut items: Vec<u8> = (0..50).collect();
        rng.shuffle(&mut items);
        let mut sorted = items.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..50).collect::<Vec<u8>>());
        assert_ne!(items, sorted);
    }
}
