//! Seeded random numbers for the whole workspace: the one place a generator is written.
//!
//! Three generators, each a published algorithm: [`SplitMix64`] (Steele, Lea and Flood 2014:
//! one word of state, checkpointable as that word), [`Xoshiro256PlusPlus`] (Blackman and
//! Vigna: four words, seeded through splitmix64) and [`XorShift64Star`] (Vigna 2016: one
//! word; the Taxman LNS has always drawn from it, and its recorded games replay from it). Both are fixed by their seed alone, on
//! every platform and build, with no dependency on a random-number crate's stream stability.
//! The draws built on them ([`Random`]) are written once for both; the three bounded draws
//! differ on purpose, because recorded streams (housie books, Topswops heuristic runs, chaos
//! fault plans) depend on which one a caller has always used.

/// splitmix64's increment: the golden ratio in 64 bits.
pub const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// splitmix64's finaliser alone: a bijective scramble of 64 bits (no increment added).
pub fn mix64(z: u64) -> u64 {
    let z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// splitmix64's output function applied to `x`: adds the golden-ratio increment, then mixes
/// (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014). A
/// bijection of `u64` and a strong 64-bit mixer; calling it on `seed`, `seed + γ`,
/// `seed + 2γ`, ... (γ = [`GAMMA`]) gives the splitmix64 generator's stream.
pub fn splitmix64(x: u64) -> u64 {
    mix64(x.wrapping_add(GAMMA))
}

/// Draws on a source of uniform 64-bit words. Only [`Random::next_u64`] is the generator's
/// own; everything else is derived from it the same way for every generator.
pub trait Random {
    /// The next 64 uniform random bits.
    fn next_u64(&mut self) -> u64;

    /// A uniform integer in `0..bound` (`bound` >= 1), exactly: Lemire's multiply-shift with
    /// rejection of the biased low products (one draw, rarely more).
    #[inline]
    fn below(&mut self, bound: u64) -> u64 {
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
    fn below_u128(&mut self, bound: u128) -> u128 {
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

    /// An index in `0..len` (`len` >= 1) from exactly one draw, by multiply-shift without
    /// rejection: biased by less than `len / 2^64`, for hot loops where that is nothing.
    #[inline]
    fn quick_index(&mut self, len: usize) -> usize {
        ((u128::from(self.next_u64()) * len as u128) >> 64) as usize
    }

    /// `next_u64() % bound` (`bound` >= 1): one draw, with modulo bias (below
    /// `bound / 2^64`).
    #[inline]
    fn modulo(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }

    /// Shuffles `items` uniformly (Fisher-Yates over [`Random::below`]).
    #[inline]
    fn shuffle<T>(&mut self, items: &mut [T]) {
        for last in (1..items.len()).rev() {
            let pick = self.below(last as u64 + 1) as usize;
            items.swap(last, pick);
        }
    }

    /// A uniform float in `[0, 1)` (the top 53 bits of one draw).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniform integer in `[lo, hi]` (inclusive, by [`Random::modulo`]); `lo` when
    /// `hi <= lo`.
    fn range_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        let span = hi - lo + 1;
        lo + self.modulo(span)
    }

    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// An exponentially distributed value with the given mean.
    fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.unit()).ln()
    }

    /// One element of a slice, uniformly; `None` for an empty one.
    fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            return None;
        }
        let index = self.range_inclusive(0, items.len() as u64 - 1) as usize;
        items.get(index)
    }

    /// An index drawn with the given non-negative weights; `None` when they sum to zero.
    fn weighted(&mut self, weights: &[f64]) -> Option<usize> {
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

/// The splitmix64 generator: its whole state is one word (see [`SplitMix64::state`]), so a
/// checkpoint stores it as that word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// The generator whose state is `seed` (its first output is `splitmix64(seed)`).
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The current state: [`SplitMix64::new`] of it continues the same stream.
    pub fn state(&self) -> u64 {
        self.state
    }
}

impl Random for SplitMix64 {
    #[inline]
    fn next_u64(&mut self) -> u64 {
        let out = splitmix64(self.state);
        self.state = self.state.wrapping_add(GAMMA);
        out
    }
}

/// xoshiro256++ (Blackman and Vigna, public domain algorithm), seeded through splitmix64.
#[derive(Clone, Debug)]
pub struct Xoshiro256PlusPlus {
    state: [u64; 4],
}

impl Xoshiro256PlusPlus {
    /// A generator whose whole stream is determined by `seed`: its four words are the
    /// splitmix64 stream from `seed`.
    pub fn seeded(seed: u64) -> Xoshiro256PlusPlus {
        let mut words = SplitMix64::new(seed);
        // splitmix64 is a bijection of consecutive inputs, so the state is never all zero.
        let state = [(); 4].map(|()| words.next_u64());
        Xoshiro256PlusPlus { state }
    }
}

impl Random for Xoshiro256PlusPlus {
    #[inline]
    fn next_u64(&mut self) -> u64 {
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
}

/// xorshift64* (Marsaglia's xorshift with Vigna's multiplier, "An experimental exploration
/// of Marsaglia's xorshift generators, scrambled", 2016): one word of state, never zero.
#[derive(Clone, Debug)]
pub struct XorShift64Star {
    state: u64,
}

impl XorShift64Star {
    /// A generator from `seed` (any value, zero included): the state is `seed` times the
    /// golden ratio with the low bit set, so it is never zero.
    pub fn new(seed: u64) -> XorShift64Star {
        XorShift64Star {
            state: seed.wrapping_mul(GAMMA) | 1,
        }
    }
}

impl Random for XorShift64Star {
    #[inline]
    fn next_u64(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The splitmix64 generator's stream from seed 1234567 as issue 6 quotes it (the
    /// widely published reference values), and its well-known first output from seed 0.
    #[test]
    fn matches_the_reference_stream() {
        let expected = [
            6457827717110365317u64,
            3203168211198807973,
            9817491932198370423,
            4593380528125082431,
            16408922859458223821,
        ];
        let mut state = 1234567u64;
        for value in expected {
            assert_eq!(splitmix64(state), value);
            state = state.wrapping_add(GAMMA);
        }
        assert_eq!(splitmix64(0), 0xE220_A839_7B1D_CDAF);
        let mut rng = SplitMix64::new(1234567);
        assert_eq!(rng.next_u64(), expected[0]);
        assert_eq!(rng.next_u64(), expected[1]);
        assert_eq!(mix64(GAMMA), 0xE220_A839_7B1D_CDAF);
    }

    /// xoshiro256++ from the state {1, 2, 3, 4}: its first two outputs, worked by hand from
    /// the published recurrence (Vigna's xoshiro256plusplus.c).
    #[test]
    fn xoshiro_matches_the_reference_recurrence() {
        let mut rng = Xoshiro256PlusPlus {
            state: [1, 2, 3, 4],
        };
        // result = rotl(s0 + s3, 23) + s0 = rotl(5, 23) + 1.
        assert_eq!(rng.next_u64(), (5u64 << 23) + 1);
        // The state is now {7, 0, 262146, 211106232532992}: rotl(7 + s3, 23) + 7.
        assert_eq!(
            rng.next_u64(),
            7u64.wrapping_add(211_106_232_532_992).rotate_left(23) + 7
        );
    }

    // The streams below were printed by the generators as they were before this module
    // took them over (commit ef890e3: shared/src/problems/housie/rng.rs,
    // shared/src/problems/topswops/heuristic/moves.rs, bench/chaos/src/rng.rs and
    // bench/load/src/scaling.rs's `draw`), so recorded runs stay reproducible.

    /// housie's books: xoshiro256++ seeded through splitmix64, exact bounded draws, shuffle.
    #[test]
    fn pins_the_housie_stream() {
        let mut rng = Xoshiro256PlusPlus::seeded(1);
        let words: Vec<u64> = (0..4).map(|_| rng.next_u64()).collect();
        assert_eq!(
            words,
            [
                14971601782005023387,
                13781649495232077965,
                1847458086238483744,
                13765271635752736470
            ]
        );
        let mut rng = Xoshiro256PlusPlus::seeded(2);
        let small: Vec<u64> = (0..8).map(|_| rng.below(7)).collect();
        assert_eq!(small, [5, 3, 4, 2, 3, 5, 2, 5]);
        let big = (1u128 << 100) + 12_345;
        let large: Vec<u128> = (0..3).map(|_| rng.below_u128(big)).collect();
        assert_eq!(
            large,
            [
                214583182323321462789406312158,
                13880831001168976919670197665,
                267500695721980285876543711831
            ]
        );
        let mut items: Vec<u8> = (0..10).collect();
        rng.shuffle(&mut items);
        assert_eq!(items, [3, 2, 9, 7, 1, 0, 8, 4, 5, 6]);
    }

    /// The Topswops heuristic's moves: splitmix64 from the seed, multiply-shift indices.
    #[test]
    fn pins_the_topswops_heuristic_stream() {
        let mut rng = SplitMix64::new(7);
        let words: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        assert_eq!(
            words,
            [
                7191089600892374487,
                309689372594955804,
                16616101746815609346
            ]
        );
        let indices: Vec<usize> = (0..8).map(|_| rng.quick_index(10)).collect();
        assert_eq!(indices, [5, 4, 2, 4, 3, 1, 4, 1]);
        assert_eq!(mix64(12345), 17540659726606785873);
    }

    /// The chaos harness's draws (its seeding is its own, in `grind-chaos`): words, inclusive
    /// ranges, floats, weights and picks from splitmix64 with state 4242 ^ its salt.
    #[test]
    fn pins_the_chaos_draws() {
        let mut rng = SplitMix64::new(4242 ^ 0x6368_616f_735f_6772);
        let words: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        assert_eq!(
            words,
            [25369886916382213, 4211337706520139961, 12639338275244814788]
        );
        let ranged: Vec<u64> = (0..6).map(|_| rng.range_inclusive(3, 9)).collect();
        assert_eq!(ranged, [6, 9, 9, 8, 8, 5]);
        assert_eq!(rng.unit().to_bits(), 0x3fe1_8027_c4c8_ab2f);
        assert_eq!(rng.exponential(2.0).to_bits(), 0x4019_d033_4f27_ee8c);
        assert!(rng.chance(0.5));
        let weighted: Vec<Option<usize>> = (0..6)
            .map(|_| rng.weighted(&[0.0, 1.0, 0.0, 2.0, 0.5]))
            .collect();
        assert_eq!(weighted, [1, 1, 1, 3, 3, 3].map(Some));
        let items = [10u8, 20, 30, 40];
        let picked: Vec<u8> = (0..6).map(|_| *rng.pick(&items).unwrap()).collect();
        assert_eq!(picked, [10, 10, 30, 30, 10, 40]);
    }

    /// The scaling simulation's duration draws: splitmix64 words modulo the table's length.
    #[test]
    fn pins_the_scaling_draws() {
        let mut rng = SplitMix64::new(99);
        let drawn: Vec<u64> = (0..8).map(|_| rng.modulo(10)).collect();
        assert_eq!(drawn, [3, 4, 7, 7, 6, 9, 5, 5]);
    }

    #[test]
    fn bounded_draws_stay_in_bounds_and_cover_small_ranges() {
        let mut rng = Xoshiro256PlusPlus::seeded(1);
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
        let mut rng = SplitMix64::new(1);
        for _ in 0..1000 {
            assert!((3..=9).contains(&rng.range_inclusive(3, 9)));
            assert!((0.0..1.0).contains(&rng.unit()));
            assert!(rng.quick_index(5) < 5);
            let i = rng.weighted(&[0.0, 1.0, 0.0, 2.0]).unwrap();
            assert!(i == 1 || i == 3);
        }
        assert_eq!(rng.weighted(&[0.0, 0.0]), None);
        assert_eq!(rng.range_inclusive(5, 5), 5);
        assert!(rng.pick::<u8>(&[]).is_none());
    }

    #[test]
    fn shuffles_are_permutations_and_states_resume() {
        let mut rng = Xoshiro256PlusPlus::seeded(2);
        let mut items: Vec<u8> = (0..50).collect();
        rng.shuffle(&mut items);
        let mut sorted = items.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..50).collect::<Vec<u8>>());
        assert_ne!(items, sorted);
        let mut a = SplitMix64::new(5);
        a.next_u64();
        let mut b = SplitMix64::new(a.state());
        assert_eq!(a.next_u64(), b.next_u64());
    }
}
