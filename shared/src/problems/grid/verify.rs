//! The verifier: a walk is legal when consecutive cities are joined by a bridge and every
//! city is visited; its cost is recomputed from the instance. Solutions are
//! `{"walk": [cities], "cost": c, "lower_bound": b}` (`lower_bound` optional).

use serde_json::{json, Value};

use super::instance::Instance;
use crate::problem::ProblemError;

/// Longest walk accepted: an optimal walk crosses each bridge at most twice.
pub fn max_walk_len(grid: &Instance) -> usize {
    4 * grid.bridges().len() + 1
}

/// The solution document of a walk.
pub fn solution(walk: &[usize], cost: u64, lower_bound: u64) -> Value {
    json!({"walk": walk, "cost": cost, "lower_bound": lower_bound})
}

fn bad(why: String) -> ProblemError {
    ProblemError::InvalidSolution(format!("grid: {why}"))
}

/// Reads the walk of a solution document (without checking it).
pub fn walk_of(grid: &Instance, solution: &Value) -> Result<Vec<usize>, ProblemError> {
    let walk = solution
        .get("walk")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("expected {\"walk\": [cities], \"cost\": c}".into()))?;
    if walk.len() > max_walk_len(grid) {
        return Err(bad(format!(
            "the walk has {} cities, more than the {} any optimal walk needs",
            walk.len(),
            max_walk_len(grid)
        )));
    }
    walk.iter()
        .map(|city| {
            city.as_u64()
                .filter(|&c| c < grid.cities() as u64)
                .map(|c| c as usize)
                .ok_or_else(|| bad(format!("city {city} is not in 0..{}", grid.cities())))
        })
        .collect()
}

/// The cost of a legal walk visiting every city.
pub fn walk_cost(grid: &Instance, walk: &[usize]) -> Result<u64, ProblemError> {
    if walk.is_empty() {
        return Err(bad("the walk is empty".into()));
    }
    let mut seen = vec![false; grid.cities()];
    let mut cost = 0u64;
    for (step, &city) in walk.iter().enumerate() {
        let Some(slot) = seen.get_mut(city) else {
            return Err(bad(format!("city {city} is not in 0..{}", grid.cities())));
        };
        *slot = true;
        if step > 0 {
            let from = walk[step - 1];
            let bridge = grid.bridge_between(from, city).ok_or_else(|| {
                bad(format!(
                    "step {step}: no bridge between cities {from} and {city}"
                ))
            })?;
            cost += u64::from(grid.bridges()[bridge].cost);
        }
    }
    if let Some(missing) = seen.iter().position(|&s| !s) {
        return Err(bad(format!("city {missing} is never visited")));
    }
    Ok(cost)
}

/// Verifies a solution document and returns its true cost: the walk must be legal, the
/// claimed `cost` (if present) must match, and `lower_bound` (if present) must not exceed it.
pub fn score(grid: &Instance, solution: &Value) -> Result<u64, ProblemError> {
    let walk = walk_of(grid, solution)?;
    let cost = walk_cost(grid, &walk)?;
    if let Some(claimed) = solution.get("cost") {
        if claimed.as_u64() != Some(cost) {
            return Err(bad(format!("the walk costs {cost}, not {claimed}")));
        }
    }
    if let Some(bound) = solution.get("lower_bound") {
        match bound.as_u64() {
            Some(b) if b <= cost => {}
            _ => {
                return Err(bad(format!(
                    "lower_bound {bound} is not an integer in 0..={cost}"
                )))
            }
        }
    }
    Ok(cost)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Random;
    use proptest::prelude::*;

    fn trap() -> Instance {
        Instance::parse("3\n4 8\n3 2\n6 1\n2 1 3\n9 2 6\n").unwrap()
    }

    #[test]
    fn the_issue_walk_costs_25() {
        let grid = trap();
        let walk = [6, 7, 8, 7, 4, 1, 0, 3, 4, 5, 2];
        assert_eq!(walk_cost(&grid, &walk).unwrap(), 25);
        assert_eq!(score(&grid, &solution(&walk, 25, 25)).unwrap(), 25);
    }

    #[test]
    fn bad_walks_are_named() {
        let grid = trap();
        for (doc, why) in [
            (
                json!({"walk": [6, 7, 8, 7, 4, 1, 0, 3, 4, 5, 2], "cost": 24}),
                "not 24",
            ),
            (
                json!({"walk": [6, 7, 8, 7, 4, 1, 0, 3, 4, 5], "cost": 19}),
                "never visited",
            ),
            (json!({"walk": [6, 8, 7, 4, 1, 0, 3, 4, 5, 2]}), "no bridge"),
            (json!({"walk": [6, 7, 9]}), "not in 0..9"),
            (json!({"walk": [6, -7]}), "not in 0..9"),
            (json!({"walk": []}), "empty"),
            (json!({"path": [1]}), "expected"),
            (
                json!({"walk": [6, 7, 8, 7, 4, 1, 0, 3, 4, 5, 2], "lower_bound": 26}),
                "lower_bound",
            ),
        ] {
            let err = score(&grid, &doc).expect_err(why);
            assert!(err.to_string().contains(why), "{doc}: {err}");
        }
        let long = json!({"walk": vec![0; 100]});
        assert!(score(&grid, &long)
            .unwrap_err()
            .to_string()
            .contains("more than"));
    }

    proptest! {
        #[test]
        fn arbitrary_documents_never_panic(
            walk in proptest::collection::vec(0i64..12, 0..60),
            cost in proptest::option::of(0i64..80),
        ) {
            let grid = trap();
            let doc = json!({"walk": walk, "cost": cost});
            if let Ok(c) = score(&grid, &doc) {
                // A verified walk really is legal and covers every city.
                let cities: Vec<usize> = walk.iter().map(|&c| c as usize).collect();
                prop_assert_eq!(walk_cost(&grid, &cities).unwrap(), c);
            }
        }

        #[test]
        fn random_legal_walks_are_scored_exactly(seed: u64, steps in 0usize..200) {
            let grid = Instance::generate(3, seed).unwrap();
            let mut rng = crate::rng::SplitMix64::new(seed);
            let mut walk = vec![0usize];
            let mut expected = 0u64;
            for _ in 0..steps {
                let here = *walk.last().unwrap();
                let options = grid.neighbours(here);
                let (next, bridge) = options[(rng.next_u64() % options.len() as u64) as usize];
                expected += u64::from(grid.bridges()[bridge].cost);
                walk.push(next);
            }
            let covers = (0..9).all(|c| walk.contains(&c));
            match walk_cost(&grid, &walk) {
                Ok(cost) => { prop_assert!(covers); prop_assert_eq!(cost, expected); }
                Err(_) => prop_assert!(!covers),
            }
        }
    }
}
