//! A grid instance: n x n cities, bridge costs, the file format and the seeded generator
//! fixed by issue 6.
//!
//! File: line 1 `n`; then n lines of n-1 integers (`H[r][c]` joins (r,c)-(r,c+1)); then
//! n-1 lines of n integers (`V[r][c]` joins (r,c)-(r+1,c)). City index is `r*n + c`.

use crate::problem::ProblemError;
use crate::rng::{Random, SplitMix64};

/// Largest side accepted (the heuristic keeps an n^2 x n^2 distance matrix).
pub const MAX_SIDE: usize = 32;
/// Largest bridge cost accepted (keeps every walk's cost far inside i64 and f64 exactness).
pub const MAX_COST: u32 = 1_000_000;

/// One bridge: its two cities (`a < b`) and its cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bridge {
    /// The smaller city index.
    pub a: usize,
    /// The larger city index.
    pub b: usize,
    /// What one crossing costs.
    pub cost: u32,
}

/// A validated grid instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    n: usize,
    /// `n` rows of `n-1` horizontal costs.
    h: Vec<Vec<u32>>,
    /// `n-1` rows of `n` vertical costs.
    v: Vec<Vec<u32>>,
    /// Every bridge: horizontal ones row-major, then vertical ones row-major.
    bridges: Vec<Bridge>,
    /// For each city, its (neighbour, bridge index) pairs.
    adjacency: Vec<Vec<(usize, usize)>>,
}

fn invalid(why: String) -> ProblemError {
    ProblemError::InvalidParams(format!("grid: {why}"))
}

impl Instance {
    /// Builds an instance from its cost tables, checking shapes and ranges.
    pub fn new(h: Vec<Vec<u32>>, v: Vec<Vec<u32>>) -> Result<Instance, ProblemError> {
        let n = h.len();
        if !(1..=MAX_SIDE).contains(&n) {
            return Err(invalid(format!("side {n} is out of range 1..={MAX_SIDE}")));
        }
        if let Some(row) = h.iter().position(|row| row.len() != n - 1) {
            return Err(invalid(format!(
                "horizontal row {row} has {} costs, expected {}",
                h[row].len(),
                n - 1
            )));
        }
        if v.len() != n - 1 {
            return Err(invalid(format!(
                "{} vertical rows, expected {}",
                v.len(),
                n - 1
            )));
        }
        if let Some(row) = v.iter().position(|row| row.len() != n) {
            return Err(invalid(format!(
                "vertical row {row} has {} costs, expected {n}",
                v[row].len()
            )));
        }
        if let Some(&bad) = h
            .iter()
            .chain(v.iter())
            .flatten()
            .find(|&&c| c == 0 || c > MAX_COST)
        {
            return Err(invalid(format!(
                "bridge cost {bad} is out of range 1..={MAX_COST}"
            )));
        }
        let mut bridges = Vec::with_capacity(2 * n * (n - 1));
        for (r, row) in h.iter().enumerate() {
            for (c, &cost) in row.iter().enumerate() {
                bridges.push(Bridge {
                    a: r * n + c,
                    b: r * n + c + 1,
                    cost,
                });
            }
        }
        for (r, row) in v.iter().enumerate() {
            for (c, &cost) in row.iter().enumerate() {
                bridges.push(Bridge {
                    a: r * n + c,
                    b: (r + 1) * n + c,
                    cost,
                });
            }
        }
        let mut adjacency = vec![Vec::new(); n * n];
        for (index, bridge) in bridges.iter().enumerate() {
            adjacency[bridge.a].push((bridge.b, index));
            adjacency[bridge.b].push((bridge.a, index));
        }
        Ok(Instance {
            n,
            h,
            v,
            bridges,
            adjacency,
        })
    }

    /// Parses the text format of issue 6 (whitespace-separated; blank lines ignored).
    pub fn parse(text: &str) -> Result<Instance, ProblemError> {
        let mut lines = text
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with('#'));
        let numbers = |line: &str, what: &str| -> Result<Vec<u32>, ProblemError> {
            line.split_whitespace()
                .map(|word| {
                    word.parse::<u32>()
                        .map_err(|_| invalid(format!("{what}: {word:?} is not a cost")))
                })
                .collect()
        };
        let first = lines
            .next()
            .ok_or_else(|| invalid("empty instance".into()))?;
        let n = match numbers(first, "first line")?.as_slice() {
            [n] => *n as usize,
            _ => return Err(invalid("the first line must hold n alone".into())),
        };
        if !(1..=MAX_SIDE).contains(&n) {
            return Err(invalid(format!("side {n} is out of range 1..={MAX_SIDE}")));
        }
        // n = 1 has n lines of zero costs: empty lines, which the filter dropped.
        if n == 1 {
            if lines.next().is_some() {
                return Err(invalid("a 1 x 1 grid has no bridges".into()));
            }
            return Instance::new(vec![Vec::new()], Vec::new());
        }
        let mut h = Vec::with_capacity(n);
        for r in 0..n {
            let line = lines
                .next()
                .ok_or_else(|| invalid(format!("missing horizontal row {r}")))?;
            h.push(numbers(line, &format!("horizontal row {r}"))?);
        }
        let mut v = Vec::with_capacity(n.saturating_sub(1));
        for r in 0..n - 1 {
            let line = lines
                .next()
                .ok_or_else(|| invalid(format!("missing vertical row {r}")))?;
            v.push(numbers(line, &format!("vertical row {r}"))?);
        }
        if lines.next().is_some() {
            return Err(invalid("text after the last vertical row".into()));
        }
        Instance::new(h, v)
    }

    /// The instance of `--size n --seed S`: costs `1 + next() mod 9`, every H cost
    /// row-major, then every V cost row-major.
    pub fn generate(n: usize, seed: u64) -> Result<Instance, ProblemError> {
        if !(1..=MAX_SIDE).contains(&n) {
            return Err(invalid(format!(
                "--size {n} is out of range 1..={MAX_SIDE}"
            )));
        }
        let mut rng = SplitMix64::new(seed);
        let mut draw = |count: usize| -> Vec<u32> {
            (0..count)
                .map(|_| 1 + (rng.next_u64() % 9) as u32)
                .collect()
        };
        let h = (0..n).map(|_| draw(n - 1)).collect();
        let v = (0..n - 1).map(|_| draw(n)).collect();
        Instance::new(h, v)
    }

    /// The instance in the file format (parses back to an equal instance).
    pub fn to_text(&self) -> String {
        let mut out = format!("{}\n", self.n);
        for row in self.h.iter().chain(self.v.iter()) {
            let words: Vec<String> = row.iter().map(u32::to_string).collect();
            out.push_str(&words.join(" "));
            out.push('\n');
        }
        out
    }

    /// The side n.
    pub fn side(&self) -> usize {
        self.n
    }

    /// The number of cities, n^2.
    pub fn cities(&self) -> usize {
        self.n * self.n
    }

    /// Every bridge (horizontal row-major, then vertical row-major).
    pub fn bridges(&self) -> &[Bridge] {
        &self.bridges
    }

    /// The (neighbour, bridge index) pairs of `city`.
    pub fn neighbours(&self, city: usize) -> &[(usize, usize)] {
        &self.adjacency[city]
    }

    /// The bridge joining `a` and `b`, if they are adjacent.
    pub fn bridge_between(&self, a: usize, b: usize) -> Option<usize> {
        self.adjacency
            .get(a)?
            .iter()
            .find(|&&(other, _)| other == b)
            .map(|&(_, index)| index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_the_trap_and_indexes_bridges() {
        let grid = Instance::parse("3\n4 8\n3 2\n6 1\n2 1 3\n9 2 6\n").unwrap();
        assert_eq!(grid.side(), 3);
        assert_eq!(grid.bridges().len(), 12);
        let cost = |a, b| grid.bridges()[grid.bridge_between(a, b).unwrap()].cost;
        assert_eq!(cost(0, 1), 4);
        assert_eq!(cost(7, 8), 1);
        assert_eq!(cost(0, 3), 2);
        assert_eq!(cost(5, 8), 6);
        assert_eq!(grid.bridge_between(0, 4), None);
    }

    #[test]
    fn bad_files_are_errors() {
        for text in [
            "",
            "0\n",
            "x\n",
            "2\n1\n",
            "2\n1\n1\n1\n",
            "2\n1\n1\n1 1\n9\n",
            "2\n1 2\n1\n1 1\n",
            "2\n0\n1\n1 1\n",
            "2\n1\n1\n1 -1\n",
            "33\n",
        ] {
            let err = Instance::parse(text).expect_err(text);
            assert!(err.to_string().contains("grid"), "{err}");
        }
    }

    proptest! {
        #[test]
        fn generated_instances_round_trip(n in 1usize..9, seed: u64) {
            let grid = Instance::generate(n, seed).unwrap();
            prop_assert_eq!(grid.bridges().len(), 2 * n * (n - 1));
            prop_assert!(grid.bridges().iter().all(|b| (1..=9).contains(&b.cost)));
            prop_assert_eq!(Instance::parse(&grid.to_text()).unwrap(), grid);
        }

        #[test]
        fn parser_never_panics(text in "[0-9 \n-]{0,60}") {
            let _ = Instance::parse(&text);
        }
    }
}
