//! Units of the exact strategy: lists of branch-and-bound subproblems, each a list of
//! restrictions (variable bounds and vertex-degree bounds) added to the root LP. Checkpoints
//! and donations use the same encoding: the open subproblems still to search, plus the cuts
//! found so far (see [`super::pool`]) and the best lower bound their creator knew.

use super::pool::{self, Cut};
use crate::problem::ProblemError;

/// Version tag of the encoding (subproblems only; still decoded).
const TAG_PLAIN: u8 = 0x47;
/// Version tag of the encoding with a lower bound and a cut pool.
const TAG: u8 = 0x48;
/// Most subproblems in one unit.
pub const MAX_SUBPROBLEMS: usize = 1 << 16;
/// Most restrictions in one subproblem.
pub const MAX_RESTRICTIONS: usize = 1 << 14;
/// Largest degree bound a restriction may name (an optimal walk's multigraph, dummy edge
/// included, has degree at most 2 * 4 + 1 at any city).
pub const MAX_DEGREE: u8 = 10;

/// What a restriction bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// The number of crossings of bridge `i` (0..=2).
    Bridge(u32),
    /// Whether city `i` is an end of the walk (0..=1).
    End(u32),
    /// The degree of city `i` in the walk's multigraph (dummy edge included).
    Degree(u32),
}

/// `target <= value` (`upper`) or `target >= value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Restriction {
    /// What is bounded.
    pub target: Target,
    /// True for an upper bound.
    pub upper: bool,
    /// The bound.
    pub value: u8,
}

/// One subproblem: the root problem with these restrictions.
pub type Subproblem = Vec<Restriction>;

/// A unit: subproblems searched one after the other.
#[derive(Clone, Debug, PartialEq)]
pub struct ExactUnit {
    /// The subproblems (their union is the unit's space).
    pub subproblems: Vec<Subproblem>,
    /// Valid cuts to start the LP with (found by whoever created the unit).
    pub cuts: Vec<Cut>,
    /// A lower bound on every walk of the instance known when the unit was made (for the
    /// solution document only: the search never trusts it).
    pub lower: u64,
}

fn bad(why: String) -> ProblemError {
    ProblemError::InvalidUnit(format!("grid unit: {why}"))
}

impl ExactUnit {
    /// The unit covering the whole problem.
    pub fn root() -> ExactUnit {
        ExactUnit::of(vec![Vec::new()])
    }

    /// A unit of `subproblems`, without cuts or bound.
    pub fn of(subproblems: Vec<Subproblem>) -> ExactUnit {
        ExactUnit {
            subproblems,
            cuts: Vec::new(),
            lower: 0,
        }
    }

    /// The endpoint class `k`: walks with an end at city `k` and none at cities below `k`.
    pub fn endpoint_class(k: usize) -> ExactUnit {
        let mut restrictions: Subproblem = (0..k)
            .map(|j| Restriction {
                target: Target::End(j as u32),
                upper: true,
                value: 0,
            })
            .collect();
        restrictions.push(Restriction {
            target: Target::End(k as u32),
            upper: false,
            value: 1,
        });
        ExactUnit::of(vec![restrictions])
    }

    /// Encodes as `[TAG, lower u64, count u32, (len u16, (kind u8, index u32, value u8)*)*,
    /// cuts]` (cuts as [`pool::encode`] writes them for a grid of `cities` cities).
    pub fn encode(&self, cities: usize) -> Vec<u8> {
        let mut out = vec![TAG];
        out.extend_from_slice(&self.lower.to_le_bytes());
        out.extend_from_slice(&(self.subproblems.len() as u32).to_le_bytes());
        for sub in &self.subproblems {
            out.extend_from_slice(&(sub.len() as u16).to_le_bytes());
            for r in sub {
                let (kind, index) = match r.target {
                    Target::Bridge(i) => (0u8, i),
                    Target::End(i) => (2, i),
                    Target::Degree(i) => (4, i),
                };
                out.push(kind | u8::from(r.upper));
                out.extend_from_slice(&index.to_le_bytes());
                out.push(r.value);
            }
        }
        pool::encode(&self.cuts, cities, &mut out);
        out
    }

    /// Decodes [`ExactUnit::encode`] for a grid with `bridges` bridges and `cities` cities,
    /// checking every index and value.
    pub fn decode(bytes: &[u8], bridges: usize, cities: usize) -> Result<ExactUnit, ProblemError> {
        let mut at = 0usize;
        let mut take = |len: usize| -> Result<&[u8], ProblemError> {
            let slice = bytes
                .get(at..at + len)
                .ok_or_else(|| bad("payload ends early".into()))?;
            at += len;
            Ok(slice)
        };
        let tag = take(1)?[0];
        let lower = match tag {
            TAG => u64::from_le_bytes(take(8)?.try_into().expect("8 bytes")),
            TAG_PLAIN => 0,
            _ => return Err(bad("not an exact-strategy unit".into())),
        };
        let count = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
        if count == 0 || count > MAX_SUBPROBLEMS {
            return Err(bad(format!("{count} subproblems (1..={MAX_SUBPROBLEMS})")));
        }
        let mut subproblems = Vec::with_capacity(count.min(1024));
        for _ in 0..count {
            let len = u16::from_le_bytes(take(2)?.try_into().expect("2 bytes")) as usize;
            if len > MAX_RESTRICTIONS {
                return Err(bad(format!("{len} restrictions in a subproblem")));
            }
            let mut sub = Vec::with_capacity(len);
            for _ in 0..len {
                let kind = take(1)?[0];
                let index = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes"));
                let value = take(1)?[0];
                let upper = kind & 1 == 1;
                let (target, limit, max_value) = match kind >> 1 {
                    0 => (Target::Bridge(index), bridges, 2),
                    1 => (Target::End(index), cities, 1),
                    2 => (Target::Degree(index), cities, MAX_DEGREE),
                    _ => return Err(bad(format!("unknown restriction kind {kind}"))),
                };
                if index as usize >= limit {
                    return Err(bad(format!("{target:?} is out of range")));
                }
                if value > max_value {
                    return Err(bad(format!("{target:?} bound {value} exceeds {max_value}")));
                }
                sub.push(Restriction {
                    target,
                    upper,
                    value,
                });
            }
            subproblems.push(sub);
        }
        let cuts = if tag == TAG {
            pool::decode(bytes, &mut at, cities)?
        } else {
            Vec::new()
        };
        if at != bytes.len() {
            return Err(bad("trailing bytes".into()));
        }
        Ok(ExactUnit {
            subproblems,
            cuts,
            lower,
        })
    }

    /// A short description for people.
    pub fn label(&self) -> String {
        match self.subproblems.as_slice() {
            [only] if only.is_empty() => "whole problem".into(),
            [only] => {
                let ends: Vec<u32> = only
                    .iter()
                    .filter_map(|r| match r.target {
                        Target::End(i) if !r.upper => Some(i),
                        _ => None,
                    })
                    .collect();
                match ends.as_slice() {
                    [k] => format!("end at city {k}, {} restrictions", only.len()),
                    _ => format!("subproblem with {} restrictions", only.len()),
                }
            }
            many => format!("{} subproblems", many.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn restriction() -> impl Strategy<Value = Restriction> {
        (0u8..3, 0u32..12, any::<bool>(), 0u8..=2).prop_map(|(kind, index, upper, value)| {
            Restriction {
                target: match kind {
                    0 => Target::Bridge(index),
                    1 => Target::End(index % 9),
                    _ => Target::Degree(index % 9),
                },
                upper,
                value: if kind == 1 { value.min(1) } else { value },
            }
        })
    }

    proptest! {
        #[test]
        fn units_round_trip(subs in proptest::collection::vec(
            proptest::collection::vec(restriction(), 0..10), 1..5),
            cut_sets in proptest::collection::vec(
                proptest::collection::btree_set(0usize..9, 1..9), 0..6),
            lower in any::<u64>()) {
            let cuts = cut_sets
                .into_iter()
                .map(|s| Cut::connectivity(s.into_iter().collect()))
                .collect();
            let unit = ExactUnit { subproblems: subs, cuts, lower };
            prop_assert_eq!(ExactUnit::decode(&unit.encode(9), 12, 9).unwrap(), unit);
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = ExactUnit::decode(&bytes, 12, 9);
        }
    }

    #[test]
    fn out_of_range_restrictions_are_refused() {
        let unit = ExactUnit::endpoint_class(9);
        assert!(ExactUnit::decode(&unit.encode(9), 12, 9).is_err());
        assert!(ExactUnit::decode(&ExactUnit::endpoint_class(8).encode(9), 12, 9).is_ok());
        let mut bytes = ExactUnit::root().encode(9);
        bytes.push(0);
        assert!(ExactUnit::decode(&bytes, 12, 9).is_err());
    }

    #[test]
    fn plain_units_still_decode() {
        // The first encoding: tag, one subproblem with one restriction (bridge 3 <= 1).
        let bytes = [0x47, 1, 0, 0, 0, 1, 0, 1, 3, 0, 0, 0, 1];
        let unit = ExactUnit::decode(&bytes, 12, 9).unwrap();
        assert_eq!(
            unit,
            ExactUnit::of(vec![vec![Restriction {
                target: Target::Bridge(3),
                upper: true,
                value: 1
            }]])
        );
    }
}
