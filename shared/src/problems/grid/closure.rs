//! The metric closure of a grid: shortest-path distances between every pair of cities and
//! the paths themselves (to turn a city order into a walk of bridges).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::instance::Instance;

/// All-pairs shortest paths on the grid's bridges.
#[derive(Clone, Debug)]
pub struct Closure {
    cities: usize,
    dist: Vec<u64>,
    /// `pred[s * cities + v]`: the city before `v` on a shortest path from `s`.
    pred: Vec<u32>,
}

impl Closure {
    /// Runs Dijkstra from every city.
    pub fn new(grid: &Instance) -> Closure {
        let cities = grid.cities();
        let mut dist = vec![u64::MAX; cities * cities];
        let mut pred = vec![u32::MAX; cities * cities];
        let mut heap = BinaryHeap::new();
        for source in 0..cities {
            let row = source * cities;
            dist[row + source] = 0;
            pred[row + source] = source as u32;
            heap.push(Reverse((0u64, source)));
            while let Some(Reverse((d, city))) = heap.pop() {
                if d > dist[row + city] {
                    continue;
                }
                for &(next, bridge) in grid.neighbours(city) {
                    let nd = d + u64::from(grid.bridges()[bridge].cost);
                    if nd < dist[row + next] {
                        dist[row + next] = nd;
                        pred[row + next] = city as u32;
                        heap.push(Reverse((nd, next)));
                    }
                }
            }
        }
        Closure { cities, dist, pred }
    }

    /// The number of cities.
    pub fn cities(&self) -> usize {
        self.cities
    }

    /// The shortest distance between `a` and `b`.
    pub fn dist(&self, a: usize, b: usize) -> u64 {
        self.dist[a * self.cities + b]
    }

    /// Appends a shortest path from `a` to `b` to `walk`, excluding `a` itself.
    pub fn extend_path(&self, a: usize, b: usize, walk: &mut Vec<usize>) {
        let start = walk.len();
        let row = a * self.cities;
        let mut city = b;
        while city != a {
            walk.push(city);
            city = self.pred[row + city] as usize;
        }
        walk[start..].reverse();
    }

    /// The walk through the cities of `order` (a permutation), joining consecutive ones by
    /// shortest paths, and its cost.
    pub fn walk_of(&self, order: &[usize]) -> (Vec<usize>, u64) {
        let mut walk = Vec::with_capacity(order.len() * 2);
        let mut cost = 0;
        if let Some(&first) = order.first() {
            walk.push(first);
        }
        for pair in order.windows(2) {
            cost += self.dist(pair[0], pair[1]);
            self.extend_path(pair[0], pair[1], &mut walk);
        }
        (walk, cost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::needless_range_loop)]
    fn distances_are_shortest_and_paths_realise_them() {
        let grid = Instance::parse("3\n4 8\n3 2\n6 1\n2 1 3\n9 2 6\n").unwrap();
        let closure = Closure::new(&grid);
        // 0 -> 2: 0-3-4-5-2 costs 2+3+2+6... check by Floyd-Warshall.
        let n = grid.cities();
        let mut fw = vec![vec![u64::MAX / 4; n]; n];
        for (i, row) in fw.iter_mut().enumerate() {
            row[i] = 0;
        }
        for b in grid.bridges() {
            fw[b.a][b.b] = u64::from(b.cost);
            fw[b.b][b.a] = u64::from(b.cost);
        }
        for k in 0..n {
            for i in 0..n {
                for j in 0..n {
                    fw[i][j] = fw[i][j].min(fw[i][k] + fw[k][j]);
                }
            }
        }
        for a in 0..n {
            for b in 0..n {
                assert_eq!(closure.dist(a, b), fw[a][b]);
                let mut walk = vec![a];
                closure.extend_path(a, b, &mut walk);
                let cost: u64 = walk
                    .windows(2)
                    .map(|w| {
                        u64::from(grid.bridges()[grid.bridge_between(w[0], w[1]).unwrap()].cost)
                    })
                    .sum();
                assert_eq!(cost, fw[a][b]);
                assert_eq!(*walk.last().unwrap(), b);
            }
        }
    }
}
