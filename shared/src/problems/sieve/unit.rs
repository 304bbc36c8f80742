//! Unit payloads and checkpoint cursors of the sieve, and their codec.
//!
//! An exact unit is a subtree of the search ([`super::search`]) named by the path of its
//! root, with an optional exclusive limit path after a donation; a checkpoint is the same
//! shape, its path being the next node to evaluate. A heuristic unit is one run of the
//! neighbourhood search ([`super::lns`]): its round, seed, step budget and starting game
//! (none in round 0, which builds its own).

use crate::problem::ProblemError;

/// Longest path a payload may carry (far deeper than any search goes).
pub const MAX_PATH: usize = 4096;
/// Most moves a starting game may have (a game on 1..=N has at most N/2).
pub const MAX_MOVES: usize = super::MAX_N as usize / 2;

/// What a unit asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SieveUnit {
    /// The subtree at `path`, up to (excluding) `limit`.
    Exact {
        /// Child indices from the root.
        path: Vec<u16>,
        /// Exclusive upper limit in depth-first order.
        limit: Option<Vec<u16>>,
    },
    /// A neighbourhood search run.
    Heuristic {
        /// The campaign's round (0: build a start; later: improve the round's incumbent).
        round: u32,
        /// Seed of the run's random choices.
        seed: u64,
        /// Steps (destroy-and-repair moves) to make.
        steps: u64,
        /// The starting game, in play order (empty in round 0).
        start: Vec<u32>,
    },
}

const EXACT: u8 = 1;
const HEURISTIC: u8 = 2;

fn put_path(out: &mut Vec<u8>, path: &[u16]) {
    out.extend_from_slice(&(path.len() as u16).to_le_bytes());
    for step in path {
        out.extend_from_slice(&step.to_le_bytes());
    }
}

fn bad(why: impl std::fmt::Display) -> ProblemError {
    ProblemError::InvalidUnit(format!("sieve unit: {why}"))
}

fn take_path(bytes: &mut &[u8]) -> Result<Vec<u16>, ProblemError> {
    let (len, rest) = bytes
        .split_first_chunk::<2>()
        .ok_or_else(|| bad("truncated path length"))?;
    let len = u16::from_le_bytes(*len) as usize;
    if len > MAX_PATH {
        return Err(bad(format!("path of {len} steps is too long")));
    }
    if rest.len() < 2 * len {
        return Err(bad("truncated path"));
    }
    let path = rest[..2 * len]
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    *bytes = &rest[2 * len..];
    Ok(path)
}

impl SieveUnit {
    /// The binary payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            SieveUnit::Exact { path, limit } => {
                out.push(EXACT);
                put_path(&mut out, path);
                match limit {
                    Some(limit) => {
                        out.push(1);
                        put_path(&mut out, limit);
                    }
                    None => out.push(0),
                }
            }
            SieveUnit::Heuristic {
                round,
                seed,
                steps,
                start,
            } => {
                out.push(HEURISTIC);
                out.extend_from_slice(&round.to_le_bytes());
                out.extend_from_slice(&seed.to_le_bytes());
                out.extend_from_slice(&steps.to_le_bytes());
                out.extend_from_slice(&(start.len() as u16).to_le_bytes());
                for m in start {
                    out.extend_from_slice(&(*m as u16).to_le_bytes());
                }
            }
        }
        out
    }

    /// Decodes [`SieveUnit::encode`]; anything else is an error.
    pub fn decode(bytes: &[u8]) -> Result<SieveUnit, ProblemError> {
        let (&kind, mut rest) = bytes.split_first().ok_or_else(|| bad("empty payload"))?;
        let unit = match kind {
            EXACT => {
                let path = take_path(&mut rest)?;
                let (&flag, after) = rest
                    .split_first()
                    .ok_or_else(|| bad("missing limit flag"))?;
                rest = after;
                let limit = match flag {
                    0 => None,
                    1 => Some(take_path(&mut rest)?),
                    other => return Err(bad(format!("limit flag {other}"))),
                };
                SieveUnit::Exact { path, limit }
            }
            HEURISTIC => {
                let (round, after) = rest
                    .split_first_chunk::<4>()
                    .ok_or_else(|| bad("truncated round"))?;
                let (seed, after) = after
                    .split_first_chunk::<8>()
                    .ok_or_else(|| bad("truncated seed"))?;
                let (steps, after) = after
                    .split_first_chunk::<8>()
                    .ok_or_else(|| bad("truncated steps"))?;
                let (len, after) = after
                    .split_first_chunk::<2>()
                    .ok_or_else(|| bad("truncated game length"))?;
                let len = u16::from_le_bytes(*len) as usize;
                if len > MAX_MOVES {
                    return Err(bad(format!("a game of {len} moves is too long")));
                }
                if after.len() < 2 * len {
                    return Err(bad("truncated game"));
                }
                let start = after[..2 * len]
                    .chunks_exact(2)
                    .map(|c| u32::from(u16::from_le_bytes([c[0], c[1]])))
                    .collect();
                rest = &after[2 * len..];
                SieveUnit::Heuristic {
                    round: u32::from_le_bytes(*round),
                    seed: u64::from_le_bytes(*seed),
                    steps: u64::from_le_bytes(*steps),
                    start,
                }
            }
            other => return Err(bad(format!("unknown kind {other}"))),
        };
        if !rest.is_empty() {
            return Err(bad(format!("{} trailing bytes", rest.len())));
        }
        Ok(unit)
    }

    /// A label for people: `[3,0,1]`, `[3,0,1] < [3,1]` or `round 2 #7` (the seed).
    pub fn label(&self) -> String {
        let show = |p: &[u16]| {
            p.iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        match self {
            SieveUnit::Exact { path, limit: None } => format!("[{}]", show(path)),
            SieveUnit::Exact {
                path,
                limit: Some(limit),
            } => format!("[{}] < [{}]", show(path), show(limit)),
            SieveUnit::Heuristic { round, seed, .. } => format!("round {round} #{seed:x}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn unit() -> impl Strategy<Value = SieveUnit> {
        prop_oneof![
            (
                proptest::collection::vec(any::<u16>(), 0..20),
                proptest::option::of(proptest::collection::vec(any::<u16>(), 0..20))
            )
                .prop_map(|(path, limit)| SieveUnit::Exact { path, limit }),
            (
                any::<u32>(),
                any::<u64>(),
                any::<u64>(),
                proptest::collection::vec(0u32..65_536, 0..20)
            )
                .prop_map(|(round, seed, steps, start)| SieveUnit::Heuristic {
                    round,
                    seed,
                    steps,
                    start
                }),
        ]
    }

    proptest! {
        #[test]
        fn round_trips(u in unit()) {
            prop_assert_eq!(SieveUnit::decode(&u.encode()), Ok(u));
        }

        #[test]
        fn garbage_is_an_error_never_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(u) = SieveUnit::decode(&bytes) {
                // Whatever decodes must be canonical.
                prop_assert_eq!(u.encode(), bytes);
            }
        }

        #[test]
        fn truncations_are_errors(u in unit(), cut in 0usize..64) {
            let bytes = u.encode();
            if cut < bytes.len() {
                prop_assert!(SieveUnit::decode(&bytes[..cut]).is_err());
            }
        }
    }

    #[test]
    fn labels() {
        let u = SieveUnit::Exact {
            path: vec![3, 0, 1],
            limit: Some(vec![3, 1]),
        };
        assert_eq!(u.label(), "[3,0,1] < [3,1]");
        let h = SieveUnit::Heuristic {
            round: 2,
            seed: 255,
            steps: 10,
            start: vec![7, 4, 6],
        };
        assert_eq!(h.label(), "round 2 #ff");
    }
}
