//! `nimsquare`: Project Euler 310, Nim Square. Counts the losing positions
//! 0 <= a <= b <= c <= N of three-heap Nim where a move removes a square number of stones.
//!
//! A position loses exactly when the XOR of the heaps' Grundy values is 0. The Grundy
//! sequence is sequential, so one N is one unit, computed in parallel inside the worker.

use clap::Args;
use num_bigint::BigUint;
use serde::{Deserialize, Serialize};

use crate::problem::{
    codec, Objective, Problem, ProblemError, SolveContext, SplitBatch, UnitOutcome, UnitSpec,
};
use crate::registry::ProblemDef;

/// Largest accepted N: the Grundy table takes 2 bytes per heap size.
pub const MAX_N: u64 = 1_000_000_000;

/// Parameters of Nim Square.
#[derive(Args, Serialize, Deserialize, Clone, Debug)]
pub struct NimSquareParams {
    /// Largest heap size N.
    #[arg(long)]
    pub n: u64,
}

/// A Nim Square instance.
pub struct NimSquare {
    params: NimSquareParams,
}

impl ProblemDef for NimSquare {
    const NAME: &'static str = "nimsquare";
    const ABOUT: &'static str =
        "count losing positions 0<=a<=b<=c<=N of three-heap Nim Square (Project Euler 310)";
    const SOLVER_VERSION: u32 = 1;
    type Params = NimSquareParams;

    fn from_params(params: NimSquareParams) -> Result<Self, ProblemError> {
        if params.n > MAX_N {
            return Err(ProblemError::InvalidParams(format!(
                "--n {} is too large: the Grundy table needs 2 bytes per heap size; the maximum is {MAX_N}",
                params.n
            )));
        }
        Ok(NimSquare { params })
    }
}

impl Problem for NimSquare {
    fn objective(&self) -> Objective {
        Objective::Count
    }

    fn split(&self, cursor: Option<&[u8]>, _max_units: usize) -> Result<SplitBatch, ProblemError> {
        if cursor.is_some() {
            return Ok(SplitBatch {
                units: vec![],
                next: None,
            });
        }
        Ok(SplitBatch {
            units: vec![UnitSpec {
                label: format!("N={}", self.params.n),
                payload: codec::encode_u64s(&[self.params.n]),
            }],
            next: None,
        })
    }

    fn solve(&self, payload: &[u8], ctx: &dyn SolveContext) -> Result<UnitOutcome, ProblemError> {
        let [n] = codec::decode_u64s::<1>(payload, "nimsquare unit")?;
        if n != self.params.n {
            return Err(ProblemError::InvalidUnit(format!(
                "nimsquare unit N={n} does not belong to campaign N={}",
                self.params.n
            )));
        }
        let grundy = grundy_values(n as usize);
        ctx.progress(n + 1, Some(1.0));
        Ok(UnitOutcome::Count(BigUint::from(count_losing(&grundy))))
    }
}

/// Grundy values of single heaps 0..=n (moves remove a positive square).
pub fn grundy_values(n: usize) -> Vec<u16> {
    let mut g = vec![0u16; n + 1];
    let mut seen: Vec<usize> = Vec::new();
    for x in 1..=n {
        let mut k = 1;
        while k * k <= x {
            let v = g[x - k * k] as usize;
            if v >= seen.len() {
                seen.resize(v + 1, 0);
            }
            seen[v] = x;
            k += 1;
        }
        g[x] = seen.iter().position(|&stamp| stamp != x).unwrap_or(seen.len()) as u16;
    }
    g
}

/// Counts multisets {a, b, c} of heap sizes with g(a) ^ g(b) ^ g(c) = 0 (Burnside over the
/// orderings: ordered triples, plus the triples with a repeated heap, plus the all-equal ones).
pub fn count_losing(grundy: &[u16]) -> u128 {
    let width = (grundy.iter().copied().max().unwrap_or(0) as usize + 1).next_power_of_two();
    let mut hist = vec![0u128; width];
    for &v in grundy {
        hist[v as usize] += 1;
    }
    let mut ordered = 0u128;
    for u in 0..width {
        for v in 0..width {
            ordered += hist[u] * hist[v] * hist[u ^ v];
        }
    }
    let heaps = grundy.len() as u128;
    let with_pair = heaps * hist[0];
    let all_equal = hist[0];
    (ordered + 3 * with_pair + 2 * all_equal) / 6
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Independent brute force: Grundy by definition over game positions, then triples.
    fn brute_force(n: usize) -> u128 {
        let squares: Vec<usize> = (1..).map(|k| k * k).take_while(|&s| s <= n).collect();
        let mut g = vec![0usize; n + 1];
        for x in 1..=n {
            let options: Vec<usize> = squares.iter().filter(|&&s| s <= x).map(|&s| g[x - s]).collect();
            g[x] = (0..).find(|v| !options.contains(v)).unwrap();
        }
        let mut count = 0;
        for a in 0..=n {
            for b in a..=n {
                for c in b..=n {
                    if g[a] ^ g[b] ^ g[c] == 0 {
                        count += 1;
                    }
                }
            }
        }
        count
    }

    #[test]
    fn matches_the_published_small_case() {
        // Project Euler 310's statement: N = 29 gives 1160.
        assert_eq!(count_losing(&grundy_values(29)), 1160);
    }

    #[test]
    fn matches_brute_force() {
        for n in 0..60 {
            assert_eq!(count_losing(&grundy_values(n)), brute_force(n), "N={n}");
        }
    }
}
