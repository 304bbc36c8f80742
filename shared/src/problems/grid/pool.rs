//! Cuts of the exact model and their codec. Units carry the cuts their creator found (the
//! root's connectivity cuts and blossom combs), so a subtree unit starts from a strong LP
//! instead of separating everything again.
//!
//! A cut is a list of city sets whose cut values `x(delta(S)) + y(S)` sum to at least its
//! right-hand side: one set (connectivity, `>= 2`) or a handle and an odd number `t >= 3` of
//! teeth (blossom comb, `>= 3t + 1`). Decoding checks that shape, so a payload can only name
//! valid inequalities.

use super::instance::Instance;
use crate::problem::ProblemError;

/// Most cuts one payload may carry.
pub const MAX_CUTS: usize = 1 << 16;
/// Most set members (summed over every set of every cut) one payload may carry: a bitset
/// expands eightfold and more, so the payload's length alone does not bound the memory.
pub const MAX_MEMBERS: usize = 1 << 22;

/// A valid inequality: the cut values of `sets` (sorted sets of cities) sum to at least `rhs`.
#[derive(Clone, Debug, PartialEq)]
pub struct Cut {
    /// The sets (for a comb: the handle, then the teeth).
    pub sets: Vec<Vec<usize>>,
    /// The right-hand side (fixed by the number of sets).
    pub rhs: f64,
}

impl Cut {
    /// The connectivity cut of `set`.
    pub fn connectivity(set: Vec<usize>) -> Cut {
        Cut {
            sets: vec![set],
            rhs: 2.0,
        }
    }

    /// The comb with `handle` and `teeth`.
    pub fn comb(handle: Vec<usize>, teeth: Vec<Vec<usize>>) -> Cut {
        let rhs = (3 * teeth.len() + 1) as f64;
        let mut sets = vec![handle];
        sets.extend(teeth);
        Cut { sets, rhs }
    }

    /// The left-hand side at the LP point (`inside` is all false, and left so).
    pub fn value(&self, grid: &Instance, inside: &mut [bool], xs: &[f64], ys: &[f64]) -> f64 {
        self.sets
            .iter()
            .map(|set| cut_value(grid, inside, set, xs, ys))
            .sum()
    }

    /// Checks the shape of a cut over `cities` cities: proper non-empty sets; for a comb,
    /// an odd number (at least 3) of disjoint two-vertex teeth (a tooth holding the dummy
    /// vertex is stored as its complement, `cities - 1` cities) each with exactly one
    /// vertex in the handle.
    pub fn check(&self, cities: usize) -> Result<(), String> {
        for set in &self.sets {
            if set.is_empty() || set.len() >= cities {
                return Err(format!("a cut set of {} cities", set.len()));
            }
            if set.windows(2).any(|w| w[0] >= w[1]) || set.iter().any(|&v| v >= cities) {
                return Err("a cut set is not sorted, repeats or leaves the grid".into());
            }
        }
        let teeth = self.sets.len() - 1;
        if teeth == 0 {
            return Ok(());
        }
        if teeth < 3 || teeth.is_multiple_of(2) {
            return Err(format!("a comb with {teeth} teeth"));
        }
        let dummy = cities;
        let mut in_handle = vec![false; cities + 1];
        for &v in &self.sets[0] {
            in_handle[v] = true;
        }
        let mut used = vec![false; cities + 1];
        for tooth in &self.sets[1..] {
            let pair = match tooth.len() {
                2 => [tooth[0], tooth[1]],
                n if n + 1 == cities => {
                    let missing = (0..cities)
                        .zip(tooth.iter().copied().chain(std::iter::once(cities)))
                        .find(|(want, got)| want != got)
                        .map_or(cities - 1, |(want, _)| want);
                    [missing, dummy]
                }
                n => return Err(format!("a comb tooth of {n} cities")),
            };
            if pair.iter().any(|&v| std::mem::replace(&mut used[v], true)) {
                return Err("comb teeth overlap".into());
            }
            if usize::from(in_handle[pair[0]]) + usize::from(in_handle[pair[1]]) != 1 {
                return Err("a comb tooth does not cross the handle".into());
            }
        }
        Ok(())
    }
}

/// `x(delta(S)) + y(S)` at the LP point (`inside` is all false, and left so).
pub fn cut_value(
    grid: &Instance,
    inside: &mut [bool],
    set: &[usize],
    xs: &[f64],
    ys: &[f64],
) -> f64 {
    for &v in set {
        inside[v] = true;
    }
    let mut total = 0.0;
    for &v in set {
        total += ys[v];
        for &(u, bridge) in grid.neighbours(v) {
            if !inside[u] {
                total += xs[bridge];
            }
        }
    }
    for &v in set {
        inside[v] = false;
    }
    total
}

/// Appends `cuts` as `count u32, (sets u16, set*)*`; a set is `0, len u16, city u16*` or, when
/// shorter, `1, bitset of cities`.
pub fn encode(cuts: &[Cut], cities: usize, out: &mut Vec<u8>) {
    out.extend_from_slice(&(cuts.len() as u32).to_le_bytes());
    let bitset_len = cities.div_ceil(8);
    for cut in cuts {
        out.extend_from_slice(&(cut.sets.len() as u16).to_le_bytes());
        for set in &cut.sets {
            if 2 + 2 * set.len() <= bitset_len {
                out.push(0);
                out.extend_from_slice(&(set.len() as u16).to_le_bytes());
                for &v in set {
                    out.extend_from_slice(&(v as u16).to_le_bytes());
                }
            } else {
                out.push(1);
                let mut bits = vec![0u8; bitset_len];
                for &v in set {
                    bits[v / 8] |= 1 << (v % 8);
                }
                out.extend_from_slice(&bits);
            }
        }
    }
}

/// Reads [`encode`] from `bytes` at `*at` (advanced past it) for a grid of `cities` cities,
/// checking every cut with [`Cut::check`].
pub fn decode(bytes: &[u8], at: &mut usize, cities: usize) -> Result<Vec<Cut>, ProblemError> {
    let bad = |why: String| ProblemError::InvalidUnit(format!("grid unit cuts: {why}"));
    let mut take = |len: usize| -> Result<&[u8], ProblemError> {
        let slice = bytes
            .get(*at..*at + len)
            .ok_or_else(|| bad("payload ends early".into()))?;
        *at += len;
        Ok(slice)
    };
    let count = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
    if count > MAX_CUTS {
        return Err(bad(format!("{count} cuts (at most {MAX_CUTS})")));
    }
    let bitset_len = cities.div_ceil(8);
    let mut members = 0usize;
    let mut cuts = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        let set_count = u16::from_le_bytes(take(2)?.try_into().expect("2 bytes")) as usize;
        if set_count == 0 {
            return Err(bad("a cut without sets".into()));
        }
        let mut sets = Vec::with_capacity(set_count);
        for _ in 0..set_count {
            let set: Vec<usize> = match take(1)?[0] {
                0 => {
                    let len = u16::from_le_bytes(take(2)?.try_into().expect("2 bytes")) as usize;
                    take(2 * len)?
                        .chunks_exact(2)
                        .map(|c| u16::from_le_bytes([c[0], c[1]]) as usize)
                        .collect()
                }
                1 => {
                    let bits = take(bitset_len)?;
                    (0..bitset_len * 8)
                        .filter(|&v| bits[v / 8] >> (v % 8) & 1 == 1)
                        .collect()
                }
                kind => return Err(bad(format!("unknown set kind {kind}"))),
            };
            members += set.len();
            if members > MAX_MEMBERS {
                return Err(bad(format!("more than {MAX_MEMBERS} set members")));
            }
            sets.push(set);
        }
        let cut = if set_count == 1 {
            Cut::connectivity(sets.pop().expect("one set"))
        } else {
            let teeth = sets.split_off(1);
            Cut::comb(sets.pop().expect("a handle"), teeth)
        };
        cut.check(cities).map_err(bad)?;
        cuts.push(cut);
    }
    Ok(cuts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const CITIES: usize = 25;

    fn set() -> impl Strategy<Value = Vec<usize>> {
        proptest::collection::btree_set(0..CITIES, 1..CITIES).prop_map(|s| s.into_iter().collect())
    }

    /// A valid comb: handle {0..k}, teeth (i, k + i) for i < t, one tooth with the dummy
    /// (stored as the complement of city 0) when `dummy_tooth`.
    fn comb(t: usize, dummy_tooth: bool) -> Cut {
        let handle: Vec<usize> = (0..t).collect();
        let mut teeth: Vec<Vec<usize>> = (0..t).map(|i| vec![i, t + i]).collect();
        if dummy_tooth {
            teeth[0] = (1..CITIES).collect();
        }
        Cut::comb(handle, teeth)
    }

    proptest! {
        #[test]
        fn connectivity_cuts_round_trip(sets in proptest::collection::vec(set(), 0..20)) {
            let cuts: Vec<Cut> = sets.into_iter().map(Cut::connectivity).collect();
            let mut bytes = Vec::new();
            encode(&cuts, CITIES, &mut bytes);
            let mut at = 0;
            prop_assert_eq!(decode(&bytes, &mut at, CITIES).unwrap(), cuts);
            prop_assert_eq!(at, bytes.len());
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
            let mut at = 0;
            let _ = decode(&bytes, &mut at, CITIES);
        }

        #[test]
        fn mutated_payloads_never_panic(
            flips in proptest::collection::vec((0usize..400, any::<u8>()), 1..6),
        ) {
            let mut bytes = Vec::new();
            encode(&[comb(3, true), comb(5, false), Cut::connectivity(vec![1, 2])], CITIES, &mut bytes);
            for (at, byte) in flips {
                let len = bytes.len();
                bytes[at % len] = byte;
            }
            let mut at = 0;
            if let Ok(cuts) = decode(&bytes, &mut at, CITIES) {
                for cut in cuts {
                    prop_assert!(cut.check(CITIES).is_ok());
                }
            }
        }
    }

    #[test]
    fn payloads_expanding_past_the_member_cap_are_refused() {
        let cities = 1024;
        let big = Cut::connectivity((0..cities - 1).collect());
        let under = vec![big.clone(); MAX_MEMBERS / (cities - 1)];
        let mut bytes = Vec::new();
        encode(&under, cities, &mut bytes);
        assert!(decode(&bytes, &mut 0, cities).is_ok());
        let over = vec![big; MAX_MEMBERS / (cities - 1) + 1];
        let mut bytes = Vec::new();
        encode(&over, cities, &mut bytes);
        assert!(decode(&bytes, &mut 0, cities).is_err());
    }

    #[test]
    fn combs_round_trip_and_bad_shapes_are_refused() {
        let cuts = vec![comb(3, false), comb(3, true), comb(5, false)];
        for cut in &cuts {
            assert_eq!(cut.check(CITIES), Ok(()));
        }
        let mut bytes = Vec::new();
        encode(&cuts, CITIES, &mut bytes);
        assert_eq!(decode(&bytes, &mut 0, CITIES).unwrap(), cuts);
        let refused = |cut: Cut| {
            let mut bytes = Vec::new();
            encode(&[cut], CITIES, &mut bytes);
            decode(&bytes, &mut 0, CITIES).is_err()
        };
        // Even tooth count, overlapping teeth, a tooth inside the handle, a whole-grid set.
        let even = comb(4, false);
        assert!(refused(even));
        let mut overlap = comb(3, false);
        overlap.sets[2] = vec![0, 3];
        assert!(refused(overlap));
        let mut inside = comb(3, false);
        inside.sets[1] = vec![0, 1];
        inside.sets[2] = vec![5, 6];
        assert!(refused(inside));
        assert!(refused(Cut::connectivity((0..CITIES).collect())));
        let mut ends_early = Vec::new();
        encode(&[comb(3, false)], CITIES, &mut ends_early);
        ends_early.pop();
        assert!(decode(&ends_early, &mut 0, CITIES).is_err());
    }
}
