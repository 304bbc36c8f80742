//! The seed's method (`--strategy tree`): best-first search over spanning trees of the grid.
//! A tree's score is its best walk, `2 w(T)` minus its longest (weighted) path; a tree's
//! neighbours differ by one bridge (add a non-tree bridge, drop a bridge of the cycle it
//! closes). It only sees walks whose bridges form a tree, so it can miss the optimum.

use super::instance::Instance;
use crate::problem::ProblemError;

/// Version tag of a tree payload.
const TAG: u8 = 0x54;

/// A spanning tree as a set of bridges.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Tree {
    bridges: Vec<bool>,
}

fn bad(why: String) -> ProblemError {
    ProblemError::InvalidUnit(format!("grid tree unit: {why}"))
}

fn find(parent: &mut [usize], mut v: usize) -> usize {
    while parent[v] != v {
        parent[v] = parent[parent[v]];
        v = parent[v];
    }
    v
}

impl Tree {
    /// The minimum spanning tree (Kruskal; ties by bridge index).
    pub fn minimum(grid: &Instance) -> Tree {
        let mut order: Vec<usize> = (0..grid.bridges().len()).collect();
        order.sort_by_key(|&i| (grid.bridges()[i].cost, i));
        let mut parent: Vec<usize> = (0..grid.cities()).collect();
        let mut bridges = vec![false; grid.bridges().len()];
        for i in order {
            let b = grid.bridges()[i];
            let (ra, rb) = (find(&mut parent, b.a), find(&mut parent, b.b));
            if ra != rb {
                parent[ra] = rb;
                bridges[i] = true;
            }
        }
        Tree { bridges }
    }

    /// The total cost of the tree's bridges (a lower bound on every walk: a walk's bridges
    /// connect all cities, so they hold a spanning tree).
    pub fn weight(&self, grid: &Instance) -> u64 {
        grid.bridges()
            .iter()
            .zip(&self.bridges)
            .filter(|(_, &b)| b)
            .map(|(b, _)| u64::from(b.cost))
            .sum()
    }

    /// Checks that `bridges` is a spanning tree of `grid`.
    pub fn new(grid: &Instance, bridges: Vec<bool>) -> Result<Tree, ProblemError> {
        if bridges.len() != grid.bridges().len() {
            return Err(bad("wrong number of bridges".into()));
        }
        let used = bridges.iter().filter(|&&b| b).count();
        if used + 1 != grid.cities() {
            return Err(bad(format!(
                "{used} bridges, a spanning tree has {}",
                grid.cities() - 1
            )));
        }
        let mut parent: Vec<usize> = (0..grid.cities()).collect();
        for (i, _) in bridges.iter().enumerate().filter(|(_, &b)| b) {
            let b = grid.bridges()[i];
            let (ra, rb) = (find(&mut parent, b.a), find(&mut parent, b.b));
            if ra == rb {
                return Err(bad("the bridges contain a cycle".into()));
            }
            parent[ra] = rb;
        }
        Ok(Tree { bridges })
    }

    /// Encodes as `[TAG, bitset of bridges]`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![TAG];
        out.extend(self.bridges.chunks(8).map(|chunk| {
            chunk
                .iter()
                .enumerate()
                .fold(0u8, |byte, (i, &b)| byte | (u8::from(b) << i))
        }));
        out
    }

    /// Decodes [`Tree::encode`] and checks that it is a spanning tree of `grid`.
    pub fn decode(grid: &Instance, bytes: &[u8]) -> Result<Tree, ProblemError> {
        let count = grid.bridges().len();
        let (&tag, bits) = bytes.split_first().ok_or_else(|| bad("empty".into()))?;
        if tag != TAG || bits.len() != count.div_ceil(8) {
            return Err(bad("not a tree of this grid".into()));
        }
        let bridges: Vec<bool> = (0..bits.len() * 8)
            .map(|i| bits[i / 8] >> (i % 8) & 1 == 1)
            .collect();
        if bridges[count..].iter().any(|&b| b) {
            return Err(bad("bits past the last bridge".into()));
        }
        Tree::new(grid, bridges[..count].to_vec())
    }

    /// True when `other` differs from this tree by exactly one swapped bridge.
    pub fn is_neighbour(&self, other: &Tree) -> bool {
        let (mut gone, mut came) = (0, 0);
        for (&a, &b) in self.bridges.iter().zip(&other.bridges) {
            match (a, b) {
                (true, false) => gone += 1,
                (false, true) => came += 1,
                _ => {}
            }
        }
        gone == 1 && came == 1
    }

    /// The tree's adjacency lists: (neighbour, bridge).
    fn adjacency(&self, grid: &Instance) -> Vec<Vec<(usize, usize)>> {
        (0..grid.cities())
            .map(|city| {
                grid.neighbours(city)
                    .iter()
                    .copied()
                    .filter(|&(_, bridge)| self.bridges[bridge])
                    .collect()
            })
            .collect()
    }

    /// The best walk along the tree's bridges and its cost: twice the tree's weight minus
    /// its longest path, walking every branch off that path out and back.
    pub fn best_walk(&self, grid: &Instance) -> (Vec<usize>, u64) {
        let adj = self.adjacency(grid);
        let weight = self.weight(grid);
        // Two sweeps find a longest path s..t.
        let (s, _) = farthest(grid, &adj, 0);
        let (t, parent_from_s) = farthest(grid, &adj, s);
        let dist = distances(grid, &adj, s);
        // Mark the s..t path.
        let mut on_path = vec![false; grid.cities()];
        let mut v = t;
        on_path[v] = true;
        while v != s {
            v = parent_from_s[v];
            on_path[v] = true;
        }
        // DFS from s, visiting the path child last, so the walk ends at t.
        let mut walk = vec![s];
        let mut stack: Vec<(usize, usize, usize)> = vec![(s, usize::MAX, 0)];
        let mut order_cache: Vec<Option<Vec<usize>>> = vec![None; grid.cities()];
        while let Some(top) = stack.last_mut() {
            let (v, from, index) = *top;
            let order = order_cache[v].get_or_insert_with(|| {
                let mut kids: Vec<usize> = adj[v]
                    .iter()
                    .map(|&(u, _)| u)
                    .filter(|&u| u != from)
                    .collect();
                kids.sort_by_key(|&u| on_path[u]);
                kids
            });
            if index < order.len() {
                top.2 += 1;
                let u = order[index];
                walk.push(u);
                stack.push((u, v, 0));
            } else {
                stack.pop();
                if !on_path[v] {
                    if let Some(&(parent, _, _)) = stack.last() {
                        walk.push(parent);
                    }
                }
            }
        }
        (walk, 2 * weight - dist[t])
    }

    /// Every neighbouring tree (one bridge swapped).
    pub fn neighbours(&self, grid: &Instance) -> Vec<Tree> {
        let adj = self.adjacency(grid);
        let mut out = Vec::new();
        for (index, bridge) in grid.bridges().iter().enumerate() {
            if self.bridges[index] {
                continue;
            }
            // The tree path from a to b: walk parents from a BFS rooted at b.
            let parent = bfs_parents(grid, &adj, bridge.b);
            let mut v = bridge.a;
            while v != bridge.b {
                let (p, via) = parent[v];
                let mut bridges = self.bridges.clone();
                bridges[via] = false;
                bridges[index] = true;
                out.push(Tree { bridges });
                v = p;
            }
        }
        out
    }
}

fn bfs_parents(grid: &Instance, adj: &[Vec<(usize, usize)>], root: usize) -> Vec<(usize, usize)> {
    let mut parent = vec![(usize::MAX, usize::MAX); grid.cities()];
    parent[root] = (root, usize::MAX);
    let mut queue = vec![root];
    let mut head = 0;
    while head < queue.len() {
        let v = queue[head];
        head += 1;
        for &(u, bridge) in &adj[v] {
            if parent[u].0 == usize::MAX {
                parent[u] = (v, bridge);
                queue.push(u);
            }
        }
    }
    parent
}

fn distances(grid: &Instance, adj: &[Vec<(usize, usize)>], root: usize) -> Vec<u64> {
    let parent = bfs_parents(grid, adj, root);
    let mut dist = vec![0u64; grid.cities()];
    // BFS order again to accumulate distances from parents.
    let mut queue = vec![root];
    let mut head = 0;
    let mut seen = vec![false; grid.cities()];
    seen[root] = true;
    while head < queue.len() {
        let v = queue[head];
        head += 1;
        for &(u, bridge) in &adj[v] {
            if !seen[u] && parent[u].0 == v {
                seen[u] = true;
                dist[u] = dist[v] + u64::from(grid.bridges()[bridge].cost);
                queue.push(u);
            }
        }
    }
    dist
}

/// The city farthest from `root` along the tree, and every city's parent towards `root`.
fn farthest(grid: &Instance, adj: &[Vec<(usize, usize)>], root: usize) -> (usize, Vec<usize>) {
    let dist = distances(grid, adj, root);
    let parent = bfs_parents(grid, adj, root);
    let far = (0..grid.cities())
        .max_by_key(|&v| (dist[v], std::cmp::Reverse(v)))
        .unwrap_or(root);
    (far, parent.into_iter().map(|(p, _)| p).collect())
}

#[cfg(test)]
mod tests {
    use super::super::verify::walk_cost;
    use super::*;
    use proptest::prelude::*;

    /// The best walk of a tree by brute force: every walk along tree bridges is at least
    /// 2 w(T) - d(s, t) for its ends s, t; so the best is 2 w(T) - max over pairs.
    fn brute_best(grid: &Instance, tree: &Tree) -> u64 {
        let adj = tree.adjacency(grid);
        let weight: u64 = grid
            .bridges()
            .iter()
            .zip(&tree.bridges)
            .filter(|(_, &b)| b)
            .map(|(b, _)| u64::from(b.cost))
            .sum();
        let longest = (0..grid.cities())
            .map(|s| *distances(grid, &adj, s).iter().max().unwrap())
            .max()
            .unwrap();
        2 * weight - longest
    }

    proptest! {
        #[test]
        fn tree_walks_are_legal_and_optimal_for_the_tree(n in 1usize..6, seed: u64) {
            let grid = Instance::generate(n, seed).unwrap();
            let tree = Tree::minimum(&grid);
            let (walk, cost) = tree.best_walk(&grid);
            prop_assert_eq!(walk_cost(&grid, &walk).unwrap(), cost);
            prop_assert_eq!(cost, brute_best(&grid, &tree));
            for next in tree.neighbours(&grid).into_iter().take(20) {
                prop_assert!(tree.is_neighbour(&next));
                let decoded = Tree::decode(&grid, &next.encode()).unwrap();
                let (walk, cost) = decoded.best_walk(&grid);
                prop_assert_eq!(walk_cost(&grid, &walk).unwrap(), cost);
                prop_assert_eq!(cost, brute_best(&grid, &decoded));
            }
        }

        #[test]
        fn garbage_is_not_a_tree(bytes in proptest::collection::vec(any::<u8>(), 0..20)) {
            let grid = Instance::generate(4, 1).unwrap();
            if let Ok(tree) = Tree::decode(&grid, &bytes) {
                prop_assert_eq!(tree.bridges.iter().filter(|&&b| b).count(), 15);
            }
        }
    }

    #[test]
    fn every_tree_of_the_trap_is_reached_and_the_best_walks_27() {
        // Enumerate all spanning trees of the 3x3 trap by closing the neighbour relation.
        let grid = Instance::parse("3\n4 8\n3 2\n6 1\n2 1 3\n9 2 6\n").unwrap();
        let mut seen = std::collections::HashSet::new();
        let mut todo = vec![Tree::minimum(&grid)];
        let mut best = u64::MAX;
        while let Some(tree) = todo.pop() {
            if !seen.insert(tree.clone()) {
                continue;
            }
            best = best.min(tree.best_walk(&grid).1);
            todo.extend(tree.neighbours(&grid));
        }
        // The 3x3 grid graph has 192 spanning trees (matrix-tree theorem).
        assert_eq!(seen.len(), 192);
        assert_eq!(best, 27);
    }
}
