//! Mikero's grid puzzle with real processes: a small instance proven optimal across two
//! workers (checked against a brute force written here), the spanning-tree strategy run
//! through expansion units, and a campaign finishing after the coordinator was restarted.

mod common;

use common::*;
use serde_json::json;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(180);
const TRAP3: &str = "3\n4 8\n3 2\n6 1\n2 1 3\n9 2 6\n";

/// splitmix64 as issue 6 fixes it (an independent copy of the generator).
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The bridges (a, b, cost) of `--size n --seed S`.
fn generated_bridges(n: usize, seed: u64) -> Vec<(usize, usize, u64)> {
    let mut state = seed;
    let mut bridges = Vec::new();
    for r in 0..n {
        for c in 0..n - 1 {
            bridges.push((r * n + c, r * n + c + 1, 1 + splitmix(&mut state) % 9));
        }
    }
    for r in 0..n - 1 {
        for c in 0..n {
            bridges.push((r * n + c, (r + 1) * n + c, 1 + splitmix(&mut state) % 9));
        }
    }
    bridges
}

/// The optimum by Dijkstra over (visited set, position).
fn brute_force(cities: usize, bridges: &[(usize, usize, u64)]) -> u64 {
    let mut adjacency = vec![Vec::new(); cities];
    for &(a, b, c) in bridges {
        adjacency[a].push((b, c));
        adjacency[b].push((a, c));
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
            if d + c < dist[next * cities + u] {
                dist[next * cities + u] = d + c;
                heap.push(Reverse((d + c, next, u)));
            }
        }
    }
    unreachable!("connected")
}

/// Replays a walk over `bridges`: its cost, or `None` if a step has no bridge or a city is
/// never visited.
fn replay(cities: usize, bridges: &[(usize, usize, u64)], walk: &[u64]) -> Option<u64> {
    let mut seen = vec![false; cities];
    let mut cost = 0;
    for (i, &city) in walk.iter().enumerate() {
        *seen.get_mut(city as usize)? = true;
        if i > 0 {
            let (a, b) = (walk[i - 1] as usize, city as usize);
            cost += bridges
                .iter()
                .find(|&&(x, y, _)| (x, y) == (a.min(b), a.max(b)))?
                .2;
        }
    }
    seen.iter().all(|&s| s).then_some(cost)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_grid_is_proven_optimal_across_two_workers() {
    let dir = tempfile::tempdir().unwrap();
    let coord = start_coordinator(dir.path(), 5_000, &[]);
    let mut admin = admin(&coord.url).await;
    let _w1 = start_worker(&coord.url, "w1", 1);
    let _w2 = start_worker(&coord.url, "w2", 1);
    let campaign = create(
        &mut admin,
        "grid",
        json!({"size": 4, "seed": 2026, "split": "endpoints"}),
        0.0,
    )
    .await;
    let done = wait_finished(&mut admin, campaign, LONG).await;
    let bridges = generated_bridges(4, 2026);
    let optimum = brute_force(16, &bridges);
    assert_eq!(done.state, "done");
    assert!(done.proven);
    assert_eq!(done.value, optimum.to_string());
    let solution: serde_json::Value = serde_json::from_str(&done.solution_json).unwrap();
    let walk: Vec<u64> = serde_json::from_value(solution["walk"].clone()).unwrap();
    assert_eq!(replay(16, &bridges, &walk), Some(optimum));
    let reply = status(&mut admin, campaign).await;
    assert_eq!(done.units.unwrap().done, 15, "one unit per smaller end");
    let workers: std::collections::BTreeSet<_> = reply
        .results
        .iter()
        .map(|r| r.provenance.as_ref().unwrap().worker_name.clone())
        .collect();
    assert_eq!(workers.len(), 2, "both workers solved units: {workers:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tree_strategy_runs_through_expansion_units() {
    let dir = tempfile::tempdir().unwrap();
    let coord = start_coordinator(dir.path(), 5_000, &[]);
    let mut admin = admin(&coord.url).await;
    let _w1 = start_worker(&coord.url, "w1", 1);
    let _w2 = start_worker(&coord.url, "w2", 1);
    // The 3x3 trap of issue 6 from a file: the coordinator stores its text, workers never
    // see the file.
    let path = dir.path().join("trap3.txt");
    std::fs::write(&path, TRAP3).unwrap();
    let campaign = create(
        &mut admin,
        "grid",
        json!({"file": path.to_str().unwrap(), "strategy": "tree"}),
        0.0,
    )
    .await;
    std::fs::remove_file(&path).unwrap();
    let done = wait_finished(&mut admin, campaign, LONG).await;
    // Every spanning tree is expanded once (the coordinator drops repeats); the best walk
    // along a tree costs 27, above the true optimum 25 that needs a cycle.
    assert_eq!(done.state, "done");
    assert_eq!(done.value, "27");
    assert!(!done.proven, "a tree search proves nothing");
    let units = done.units.unwrap();
    assert!(
        units.done > 100,
        "the frontier grew through expansions: {units:?}"
    );
    let trap = [
        (0, 1, 4),
        (1, 2, 8),
        (3, 4, 3),
        (4, 5, 2),
        (6, 7, 6),
        (7, 8, 1),
        (0, 3, 2),
        (1, 4, 1),
        (2, 5, 3),
        (3, 6, 9),
        (4, 7, 2),
        (5, 8, 6),
    ];
    assert_eq!(brute_force(9, &trap), 25);
    let solution: serde_json::Value = serde_json::from_str(&done.solution_json).unwrap();
    let walk: Vec<u64> = serde_json::from_value(solution["walk"].clone()).unwrap();
    assert_eq!(replay(9, &trap, &walk), Some(27));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grid_campaign_resumes_after_a_coordinator_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut coord = start_coordinator(dir.path(), 3_000, &[]);
    let mut admin_client = admin(&coord.url).await;
    let campaign = create(
        &mut admin_client,
        "grid",
        json!({"size": 6, "seed": 11, "split": "endpoints"}),
        0.0,
    )
    .await;
    let _w1 = start_worker(&coord.url, "w1", 1);
    let _w2 = start_worker(&coord.url, "w2", 1);
    wait_campaign(
        &admin_client,
        campaign,
        "a few units to finish",
        LONG,
        &|c| c.units.unwrap().done >= 3,
    )
    .await;
    coord.proc.kill();
    let coord = coord.start_again();
    let mut admin_client = admin(&coord.url).await;
    let done = wait_finished(&mut admin_client, campaign, LONG).await;
    assert_eq!(done.state, "done");
    assert!(done.proven);
    assert_eq!(done.units.unwrap().done, 35);
    // The same value as one uninterrupted local solve.
    let grid = grind_shared::problems::grid::instance::Instance::generate(6, 11).unwrap();
    let local = grind_shared::problems::grid::solve_instance(&grid, None).unwrap();
    assert!(local.proven);
    assert_eq!(done.value, local.cost.to_string());
    let solution: serde_json::Value = serde_json::from_str(&done.solution_json).unwrap();
    let walk: Vec<u64> = serde_json::from_value(solution["walk"].clone()).unwrap();
    assert_eq!(
        replay(36, &generated_bridges(6, 11), &walk),
        Some(local.cost)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_split_campaign_survives_coordinator_and_worker_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let mut coord = start_coordinator(dir.path(), 3_000, &[]);
    let mut admin_client = admin(&coord.url).await;
    // 10x10 seed 4 needs a few hundred branch-and-cut nodes: the root unit splits into
    // subtree units after its first nodes, and they spread over both workers.
    let campaign = create(
        &mut admin_client,
        "grid",
        json!({"size": 10, "seed": 4, "subtrees": 12}),
        0.0,
    )
    .await;
    let _w1 = start_worker(&coord.url, "w1", 1);
    let mut w2 = start_worker(&coord.url, "w2", 1);
    let before = wait_campaign(
        &admin_client,
        campaign,
        "the root to split and a subtree to finish",
        LONG,
        &|c| {
            let u = c.units.unwrap();
            c.state == "running" && u.done >= 1 && u.done + u.pending + u.leased >= 6
        },
    )
    .await;
    w2.kill();
    coord.proc.kill();
    assert_eq!(before.state, "running", "killed mid-campaign");
    let coord = coord.start_again();
    let _w2 = start_worker(&coord.url, "w2", 1);
    let mut admin_client = admin(&coord.url).await;
    let done = wait_finished(&mut admin_client, campaign, LONG).await;
    assert_eq!(done.state, "done");
    assert!(done.proven);
    assert!(done.units.unwrap().done >= 6, "{:?}", done.units);
    // The same value as one uninterrupted local solve.
    let grid = grind_shared::problems::grid::instance::Instance::generate(10, 4).unwrap();
    let local = grind_shared::problems::grid::solve_instance(&grid, None).unwrap();
    assert!(local.proven);
    assert_eq!(done.value, local.cost.to_string());
    let solution: serde_json::Value = serde_json::from_str(&done.solution_json).unwrap();
    let walk: Vec<u64> = serde_json::from_value(solution["walk"].clone()).unwrap();
    assert_eq!(
        replay(100, &generated_bridges(10, 4), &walk),
        Some(local.cost)
    );
    // Proven: the stored lower bound is the optimum itself.
    assert_eq!(solution["lower_bound"], json!(local.cost));
    let reply = status(&mut admin_client, campaign).await;
    let workers: std::collections::BTreeSet<_> = reply
        .results
        .iter()
        .map(|r| r.provenance.as_ref().unwrap().worker_name.clone())
        .collect();
    assert_eq!(workers.len(), 2, "both workers solved units: {workers:?}");
}
