//! Turning an integral LP solution into a walk: the bridges crossed `x_e` times plus two
//! dummy edges to the walk's ends form a connected multigraph with even degrees; an Euler
//! tour through the dummy vertex, with the dummy removed, is the walk.

use super::instance::Instance;

/// The walk of an Eulerian multigraph given by `crossings` (per bridge) and the two `ends`
/// (the same city twice only for a one-city grid); `None` when the multigraph is not
/// connected or has an odd degree.
pub fn walk_from_crossings(
    grid: &Instance,
    crossings: &[u8],
    ends: [usize; 2],
) -> Option<Vec<usize>> {
    let cities = grid.cities();
    let dummy = cities;
    // Edge list: bridges repeated, then the two dummy edges.
    let mut edges: Vec<(usize, usize)> = Vec::new();
    for (bridge, &times) in grid.bridges().iter().zip(crossings) {
        for _ in 0..times {
            edges.push((bridge.a, bridge.b));
        }
    }
    edges.push((dummy, ends[0]));
    edges.push((dummy, ends[1]));
    let mut incident: Vec<Vec<usize>> = vec![Vec::new(); cities + 1];
    for (index, &(a, b)) in edges.iter().enumerate() {
        incident[a].push(index);
        incident[b].push(index);
    }
    if incident.iter().any(|list| list.len() % 2 == 1) {
        return None;
    }
    // Hierholzer from the dummy vertex.
    let mut used = vec![false; edges.len()];
    let mut next = vec![0usize; cities + 1];
    let mut stack = vec![dummy];
    let mut tour = Vec::with_capacity(edges.len() + 1);
    while let Some(&v) = stack.last() {
        let mut advanced = false;
        while next[v] < incident[v].len() {
            let e = incident[v][next[v]];
            next[v] += 1;
            if !used[e] {
                used[e] = true;
                let (a, b) = edges[e];
                stack.push(if a == v { b } else { a });
                advanced = true;
                break;
            }
        }
        if !advanced {
            tour.push(v);
            stack.pop();
        }
    }
    if tour.len() != edges.len() + 1 {
        return None;
    }
    let walk: Vec<usize> = tour.into_iter().filter(|&v| v != dummy).collect();
    let mut seen = vec![false; cities];
    for &v in &walk {
        seen[v] = true;
    }
    seen.iter().all(|&s| s).then_some(walk)
}

#[cfg(test)]
mod tests {
    use super::super::verify::walk_cost;
    use super::*;

    #[test]
    fn the_trap_walk_is_rebuilt_from_its_crossings() {
        let grid = Instance::parse("3\n4 8\n3 2\n6 1\n2 1 3\n9 2 6\n").unwrap();
        let walk = [6, 7, 8, 7, 4, 1, 0, 3, 4, 5, 2];
        let mut crossings = vec![0u8; grid.bridges().len()];
        for w in walk.windows(2) {
            crossings[grid.bridge_between(w[0], w[1]).unwrap()] += 1;
        }
        let rebuilt = walk_from_crossings(&grid, &crossings, [6, 2]).unwrap();
        assert_eq!(walk_cost(&grid, &rebuilt).unwrap(), 25);
        // Dropping a bridge disconnects or unbalances the multigraph.
        crossings[grid.bridge_between(7, 8).unwrap()] = 0;
        assert!(walk_from_crossings(&grid, &crossings, [6, 2]).is_none());
    }
}
