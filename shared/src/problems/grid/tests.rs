//! End-to-end checks of the grid problem against an independent brute force.

use super::*;
use crate::problem::LocalContext;
use crate::registry::lookup;
use crate::rng::Random;
use serde_json::json;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const TRAP3: &str = "3\n4 8\n3 2\n6 1\n2 1 3\n9 2 6\n";
const BAILEY4: &str = "4\n9 1 1\n9 9 9\n9 1 1\n1 1 1\n1 1 9 1\n1 1 5 1\n1 9 1 9\n";

/// The optimum by Dijkstra over (visited set, position): written here, independent of the
/// library's solver (it only uses the instance's bridge list).
fn brute_force(grid: &Instance) -> u64 {
    let cities = grid.cities();
    assert!(cities <= 16);
    let mut adjacency = vec![Vec::new(); cities];
    for b in grid.bridges() {
        adjacency[b.a].push((b.b, u64::from(b.cost)));
        adjacency[b.b].push((b.a, u64::from(b.cost)));
    }
    let full = (1usize << cities) - 1;
    let mut dist = vec![u64::MAX; (full + 1) * cities];
    let mut heap = BinaryHeap::new();
    for v in 0..cities {
        dist[(1 << v) * cities + v] = 0;
        heap.push(Reverse((0u64, 1usize << v, v)));
    }
    while let Some(Reverse((d, set, v))) = heap.pop() {
        if set == full {
            return d;
        }
        if d > dist[set * cities + v] {
            continue;
        }
        for &(u, c) in &adjacency[v] {
            let next = set | 1 << u;
            let nd = d + c;
            if nd < dist[next * cities + u] {
                dist[next * cities + u] = nd;
                heap.push(Reverse((nd, next, u)));
            }
        }
    }
    unreachable!("the grid is connected")
}

/// A local context with a fixed bound, a resume cursor and a stop after some checkpoints.
#[allow(clippy::field_reassign_with_default)]
fn context(bound: Option<i64>, resume: Option<Vec<u8>>, stop_after: Option<usize>) -> LocalContext {
    let mut ctx = LocalContext::default();
    ctx.fixed_bound = bound;
    ctx.resume = resume;
    ctx.stop_after_checkpoints = stop_after;
    ctx
}

fn campaign(params: serde_json::Value) -> Grid {
    Grid::from_params(serde_json::from_value(params).unwrap()).unwrap()
}

fn solved_cost(grid: &Instance) -> u64 {
    let solved = solve_instance(grid, None).unwrap();
    assert!(solved.proven);
    assert_eq!(verify::walk_cost(grid, &solved.walk).unwrap(), solved.cost);
    solved.cost
}

#[test]
fn counterexamples_have_their_published_optima() {
    let trap = Instance::parse(TRAP3).unwrap();
    assert_eq!(brute_force(&trap), 25);
    assert_eq!(solved_cost(&trap), 25);
    let bailey = Instance::parse(BAILEY4).unwrap();
    assert_eq!(brute_force(&bailey), 21);
    assert_eq!(solved_cost(&bailey), 21);
}

#[test]
fn exact_matches_brute_force_on_random_small_grids() {
    for seed in 0..60u64 {
        let n = 1 + (seed % 3) as usize;
        let grid = Instance::generate(n, seed).unwrap();
        assert_eq!(solved_cost(&grid), brute_force(&grid), "n {n} seed {seed}");
    }
    for seed in 0..6u64 {
        let grid = Instance::generate(4, 1000 + seed).unwrap();
        assert_eq!(
            solved_cost(&grid),
            brute_force(&grid),
            "4x4 seed {}",
            1000 + seed
        );
    }
}

/// Grids with costs drawn from {1, 9} only: many ties, many repeated bridges.
#[test]
fn exact_matches_brute_force_on_lopsided_grids() {
    for seed in 0..12u64 {
        let mut rng = crate::rng::SplitMix64::new(seed);
        let n = 3 + (seed % 2) as usize;
        let mut draw = |count: usize| -> Vec<u32> {
            (0..count)
                .map(|_| {
                    if rng.next_u64().is_multiple_of(3) {
                        9
                    } else {
                        1
                    }
                })
                .collect()
        };
        let h = (0..n).map(|_| draw(n - 1)).collect();
        let v = (0..n - 1).map(|_| draw(n)).collect();
        let grid = Instance::new(h, v).unwrap();
        assert_eq!(solved_cost(&grid), brute_force(&grid), "seed {seed}");
    }
}

/// The best cost of a campaign run by the generic local driver (every unit sharing the best
/// cost found, every walk reported verified).
fn run_campaign(problem: &Grid) -> Option<u64> {
    let run = crate::local::run(
        problem,
        &crate::local::Drive {
            batch: 7,
            ..Default::default()
        },
    )
    .unwrap();
    run.best.map(|b| b.score as u64)
}

#[test]
fn endpoint_units_cover_the_space() {
    for seed in 0..8u64 {
        let n = 2 + (seed % 3) as usize;
        let grid = Instance::generate(n, seed).unwrap();
        let problem = campaign(json!({"size": n, "seed": seed, "split": "endpoints"}));
        assert_eq!(
            run_campaign(&problem),
            Some(brute_force(&grid)),
            "seed {seed}"
        );
    }
    let problem = campaign(json!({"instance": BAILEY4, "split": "endpoints"}));
    assert_eq!(run_campaign(&problem), Some(21));
}

#[test]
fn stopped_units_resume_from_their_checkpoint() {
    let mut stopped = 0;
    for seed in 0..10u64 {
        let problem = campaign(json!({"size": 7, "seed": seed}));
        let optimum = solve_instance(problem.instance(), None).unwrap().cost;
        // Start from a bound one above the optimum, so the search must find it itself.
        let payload = ExactUnit::root().encode(problem.instance().cities());
        let ctx = context(Some(optimum as i64 + 1), None, Some(1));
        let first = problem.solve(&payload, &ctx).unwrap();
        if first != UnitOutcome::Stopped {
            continue;
        }
        stopped += 1;
        let cursor = ctx.checkpoints().last().unwrap().clone();
        let resumed = context(Some(optimum as i64 + 1), Some(cursor), None);
        // Whatever the first run already reported counts too.
        let mut found: Vec<i64> = ctx.improvements().iter().map(|s| s.score).collect();
        if let UnitOutcome::Searched { best: Some(b), .. } =
            problem.solve(&payload, &resumed).unwrap()
        {
            found.push(b.score);
        }
        found.extend(resumed.improvements().iter().map(|s| s.score));
        assert_eq!(found.into_iter().min(), Some(optimum as i64), "seed {seed}");
    }
    assert!(stopped > 0, "no instance needed more than one node");
}

/// A context that donates as soon as it can and records what it was given; with `quiet`
/// it never asks for a donation (but accepts the ones offered).
#[derive(Default)]
struct Donating {
    inner: LocalContext,
    donated: Mutex<Vec<UnitSpec>>,
    quiet: bool,
}

impl SolveContext for Donating {
    fn resume_cursor(&self) -> Option<&[u8]> {
        None
    }
    fn bound(&self) -> Option<i64> {
        self.inner.bound()
    }
    fn improve(&self, found: Scored) {
        self.inner.improve(found)
    }
    fn progress(&self, _nodes: u64, _fraction: Option<f64>) {}
    fn checkpoint(&self, _cursor: Vec<u8>) {}
    fn stop_requested(&self) -> bool {
        false
    }
    fn split_requested(&self) -> bool {
        !self.quiet && self.donated.lock().unwrap().is_empty()
    }
    fn donate(&self, units: Vec<UnitSpec>, _remaining: Vec<u8>) -> bool {
        self.donated.lock().unwrap().extend(units);
        true
    }
}

#[test]
fn the_root_splits_into_subtree_units_carrying_its_cuts() {
    let mut splits = 0;
    for seed in 0..8u64 {
        let problem = campaign(json!({"size": 8, "seed": seed, "subtrees": 4}));
        let grid = problem.instance();
        let solved = solve_instance(grid, None).unwrap();
        let optimum = solved.cost as i64;
        let ctx = Donating {
            inner: context(Some(optimum + 1), None, None),
            quiet: true,
            ..Default::default()
        };
        let mut found = Vec::new();
        if let UnitOutcome::Searched { best: Some(b), .. } = problem
            .solve(&ExactUnit::root().encode(grid.cities()), &ctx)
            .unwrap()
        {
            found.push(b.score);
        }
        let donated = ctx.donated.into_inner().unwrap();
        if !donated.is_empty() {
            splits += 1;
            assert_eq!(donated.len(), 3, "all open nodes but one, seed {seed}");
        }
        for spec in donated {
            let unit =
                ExactUnit::decode(&spec.payload, grid.bridges().len(), grid.cities()).unwrap();
            assert!(!unit.cuts.is_empty(), "the root's cuts travel along");
            let root = solved.root_bound.unwrap();
            assert!((root..=solved.cost).contains(&unit.lower), "seed {seed}");
            let other = context(Some(optimum + 1), None, None);
            if let UnitOutcome::Searched { best: Some(b), .. } =
                problem.solve(&spec.payload, &other).unwrap()
            {
                found.push(b.score);
            }
        }
        assert_eq!(found.into_iter().min(), Some(optimum), "seed {seed}");
    }
    assert!(splits > 0, "no root split");
}

#[test]
fn donated_subtrees_and_the_rest_find_the_optimum() {
    let mut donations = 0;
    for seed in 0..10u64 {
        let problem = campaign(json!({"size": 7, "seed": seed}));
        let optimum = solve_instance(problem.instance(), None).unwrap().cost as i64;
        let ctx = Donating {
            inner: context(Some(optimum + 1), None, None),
            ..Default::default()
        };
        let mut found = Vec::new();
        if let UnitOutcome::Searched { best: Some(b), .. } = problem
            .solve(&ExactUnit::root().encode(problem.instance().cities()), &ctx)
            .unwrap()
        {
            found.push(b.score);
        }
        let donated = ctx.donated.into_inner().unwrap();
        donations += donated.len();
        for unit in donated {
            let other = context(Some(optimum + 1), None, None);
            if let UnitOutcome::Searched { best: Some(b), .. } =
                problem.solve(&unit.payload, &other).unwrap()
            {
                found.push(b.score);
            }
        }
        assert_eq!(found.into_iter().min(), Some(optimum), "seed {seed}");
    }
    assert!(donations > 0, "no search donated");
}

#[test]
fn tree_strategy_expands_into_checked_children() {
    let problem = campaign(json!({"instance": TRAP3, "strategy": "tree"}));
    assert!(!problem.exhaustive());
    let batch = problem.split(None, 10).unwrap();
    assert_eq!(batch.units.len(), 1);
    let root = &batch.units[0].payload;
    let outcome = problem.solve(root, &LocalContext::default()).unwrap();
    let UnitOutcome::Expanded { best, children } = outcome else {
        panic!("a tree unit expands");
    };
    let best = best.unwrap();
    assert_eq!(problem.score(&best.solution).unwrap(), best.score);
    assert!(!children.is_empty());
    let mut last = i64::MIN;
    for child in &children {
        let priority = problem.child_priority(root, &child.payload).unwrap();
        assert!(priority >= last, "children come best first");
        last = priority;
    }
    // A child's child is not a child of the root; garbage is refused.
    let grandchild = match problem.solve(&children[0].payload, &LocalContext::default()) {
        Ok(UnitOutcome::Expanded { children, .. }) => children
            .into_iter()
            .find(|c| problem.child_priority(root, &c.payload).is_err())
            .expect("some grandchild is two swaps away"),
        other => panic!("{other:?}"),
    };
    assert!(problem.child_priority(root, &grandchild.payload).is_err());
    assert!(problem.child_priority(root, &[0x54, 1, 2]).is_err());
    assert!(problem.child_priority(root, root).is_err());
}

/// Best-first over trees, run locally to exhaustion: the best tree walk of the trap is 27,
/// above the true optimum 25.
#[test]
fn tree_strategy_cannot_reach_the_trap_optimum() {
    let problem = campaign(json!({"instance": TRAP3, "strategy": "tree"}));
    let root = problem.split(None, 1).unwrap().units.remove(0).payload;
    let mut seen = std::collections::HashSet::new();
    let mut frontier = vec![(0i64, root)];
    let mut best = i64::MAX;
    while let Some((_, payload)) = frontier.pop() {
        if !seen.insert(payload.clone()) {
            continue;
        }
        match problem.solve(&payload, &LocalContext::default()).unwrap() {
            UnitOutcome::Expanded { best: b, children } => {
                if let Some(b) = b {
                    best = best.min(b.score);
                }
                for c in children {
                    let p = problem.child_priority(&payload, &c.payload).unwrap();
                    frontier.push((p, c.payload));
                }
                frontier.sort_by_key(|(p, _)| Reverse(*p));
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(seen.len(), 192, "every spanning tree of the 3x3 grid");
    assert_eq!(best, 27);
}

#[test]
fn params_are_validated_and_files_embedded() {
    let entry = lookup("grid").unwrap();
    for bad in [
        json!({}),
        json!({"seed": 3}),
        json!({"size": 0, "seed": 3}),
        json!({"size": 33, "seed": 3}),
        json!({"file": "/nonexistent/grid.txt"}),
        json!({"instance": "2\n1\n1\n1\n"}),
        json!({"instance": TRAP3, "size": 4}),
        json!({"instance": TRAP3, "seed": 4}),
        json!({"size": 3, "seed": 1, "strategy": "magic"}),
    ] {
        let err = entry
            .build(&bad)
            .err()
            .unwrap_or_else(|| panic!("{bad} accepted"));
        assert!(
            err.to_string().contains("grid") || err.to_string().contains("unknown"),
            "{bad}: {err}"
        );
    }
    let dir = std::env::temp_dir().join(format!("grind-grid-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("trap3.txt");
    std::fs::write(&path, TRAP3).unwrap();
    let (canonical, _) = entry
        .build(&json!({"file": path.to_str().unwrap()}))
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(canonical["size"], 3);
    assert_eq!(canonical["instance"], TRAP3);
    // The canonical parameters rebuild without the file (as a worker does).
    let (again, problem) = entry.build(&canonical).unwrap();
    assert_eq!(again, canonical);
    let walk = json!({"walk": [6, 7, 8, 7, 4, 1, 0, 3, 4, 5, 2], "cost": 25});
    assert_eq!(problem.score(&walk).unwrap(), 25);
    assert!(problem
        .render("25", Some(&walk))
        .starts_with("6 7 8 7 4 1 0 3 4 5 2\n"));
}

#[test]
fn malformed_units_are_errors_not_panics() {
    let problem = campaign(json!({"size": 3, "seed": 9}));
    for payload in [vec![], vec![0x47], vec![0x54, 0, 0], vec![1, 2, 3]] {
        assert!(problem.solve(&payload, &LocalContext::default()).is_err());
    }
    assert!(problem.child_priority(&[], &[]).is_err());
    let endpoints = campaign(json!({"size": 3, "seed": 9, "split": "endpoints"}));
    assert!(endpoints.split(Some(&[1, 2]), 5).is_err());
    let all: Vec<_> = endpoints.split(None, 100).unwrap().units;
    assert_eq!(all.len(), 8);
}

#[test]
fn whole_problem_solutions_carry_the_root_bound() {
    for seed in 0..4u64 {
        let problem = campaign(json!({"size": 6, "seed": seed}));
        let solved = solve_instance(problem.instance(), None).unwrap();
        let tree_bound = Tree::minimum(problem.instance()).weight(problem.instance());
        let ctx = LocalContext::default();
        let outcome = problem
            .solve(&ExactUnit::root().encode(problem.instance().cities()), &ctx)
            .unwrap();
        // Every walk reported on the way (the heuristic's first) states at least the root
        // LP bound, never only the spanning tree's.
        for found in ctx.improvements() {
            let lower = found.solution["lower_bound"].as_u64().unwrap();
            let root = solved.root_bound.unwrap();
            assert!(lower >= root.min(found.score as u64), "seed {seed}");
        }
        let UnitOutcome::Searched {
            best: Some(best), ..
        } = outcome
        else {
            panic!("the root unit finds a walk");
        };
        assert_eq!(best.score as u64, solved.cost);
        let lower = best.solution["lower_bound"].as_u64().unwrap();
        let root = solved.root_bound.unwrap();
        assert_eq!(lower, root.max(tree_bound).min(solved.cost), "seed {seed}");
        assert!(lower > tree_bound, "the LP bound beats the spanning tree's");
    }
}

#[test]
fn a_proven_solution_states_its_cost_as_its_lower_bound() {
    let problem = campaign(json!({"instance": TRAP3}));
    let walk = [6, 7, 8, 7, 4, 1, 0, 3, 4, 5, 2];
    let claimed = json!({"walk": walk, "cost": 25, "lower_bound": 20});
    let restated = problem.proven_solution(&claimed).unwrap();
    assert_eq!(
        restated,
        json!({"walk": walk, "cost": 25, "lower_bound": 25})
    );
    assert_eq!(problem.score(&restated).unwrap(), 25);
    // An illegal walk is never restated.
    assert!(problem
        .proven_solution(&json!({"walk": [0, 2], "cost": 1}))
        .is_none());
    let tree = campaign(json!({"instance": TRAP3, "strategy": "tree"}));
    assert!(tree.proven_solution(&claimed).is_none());
}
