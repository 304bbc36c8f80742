//! A fast incumbent: the best walk is a shortest Hamiltonian path with free ends in the
//! metric closure, i.e. a tour through the cities plus a dummy city at distance 0 from all.
//! Iterated local search: 2-opt and Or-opt moves to a local optimum, double-bridge kicks.

use super::closure::Closure;
use crate::rng::{Random, SplitMix64};

/// Span of a double-bridge kick (positions along the tour).
const KICK_WINDOW: usize = 30;

/// Dense distances of the closure plus the dummy city (index `cities`).
struct Matrix {
    size: usize,
    d: Vec<u64>,
}

impl Matrix {
    fn new(closure: &Closure) -> Matrix {
        let cities = closure.cities();
        let size = cities + 1;
        let mut d = vec![0; size * size];
        for a in 0..cities {
            for b in 0..cities {
                d[a * size + b] = closure.dist(a, b);
            }
        }
        Matrix { size, d }
    }

    #[inline]
    fn at(&self, a: usize, b: usize) -> u64 {
        self.d[a * self.size + b]
    }

    fn tour_cost(&self, tour: &[usize]) -> u64 {
        (0..tour.len())
            .map(|i| self.at(tour[i], tour[(i + 1) % tour.len()]))
            .sum()
    }
}

/// One improving 2-opt move (first improvement); true when the tour changed.
fn two_opt(tour: &mut [usize], m: &Matrix) -> bool {
    let len = tour.len();
    for i in 0..len - 2 {
        let (a, b) = (tour[i], tour[i + 1]);
        let ab = m.at(a, b);
        for j in i + 2..len {
            let (c, e) = (tour[j], tour[(j + 1) % len]);
            if e == a {
                continue;
            }
            if m.at(a, c) + m.at(b, e) < ab + m.at(c, e) {
                tour[i + 1..=j].reverse();
                return true;
            }
        }
    }
    false
}

/// One improving Or-opt move (a segment of 1 to 3 cities moved elsewhere, either way round).
fn or_opt(tour: &mut Vec<usize>, m: &Matrix) -> bool {
    let len = tour.len();
    for seg in 1..=3.min(len.saturating_sub(3)) {
        for start in 0..len {
            // The segment tour[start..start+seg] (cyclically); rotate so it does not wrap.
            if start + seg > len {
                continue;
            }
            let prev = tour[(start + len - 1) % len];
            let next = tour[(start + seg) % len];
            let first = tour[start];
            let last = tour[start + seg - 1];
            let removed =
                m.at(prev, first) as i64 + m.at(last, next) as i64 - m.at(prev, next) as i64;
            for k in 0..len {
                let (p, q) = (tour[k], tour[(k + 1) % len]);
                // Skip edges touching the segment.
                let in_seg = |i: usize| i >= start && i < start + seg;
                if in_seg(k) || in_seg((k + 1) % len) || (k + 1) % len == start {
                    continue;
                }
                let forward = m.at(p, first) + m.at(last, q);
                let backward = m.at(p, last) + m.at(first, q);
                let added = forward.min(backward) as i64 - m.at(p, q) as i64;
                if added < removed {
                    let segment: Vec<usize> = tour[start..start + seg].to_vec();
                    let p_city = p;
                    tour.drain(start..start + seg);
                    let at = tour.iter().position(|&c| c == p_city).expect("p in tour") + 1;
                    if forward <= backward {
                        tour.splice(at..at, segment);
                    } else {
                        tour.splice(at..at, segment.into_iter().rev());
                    }
                    return true;
                }
            }
        }
    }
    false
}

fn local_search(tour: &mut Vec<usize>, m: &Matrix) {
    loop {
        if two_opt(tour, m) {
            continue;
        }
        if or_opt(tour, m) {
            continue;
        }
        break;
    }
}

/// A city order (Hamiltonian path in the closure) found by iterated local search with
/// `kicks` double-bridge perturbations, and its cost.
pub fn best_order(closure: &Closure, kicks: usize, seed: u64) -> (Vec<usize>, u64) {
    let cities = closure.cities();
    if cities <= 2 {
        let order: Vec<usize> = (0..cities).collect();
        let cost = if cities == 2 { closure.dist(0, 1) } else { 0 };
        return (order, cost);
    }
    let m = Matrix::new(closure);
    // Nearest-neighbour start from the dummy's side: begin at city 0.
    let mut tour = Vec::with_capacity(cities + 1);
    let mut used = vec![false; cities];
    let mut here = 0;
    used[0] = true;
    tour.push(0);
    for _ in 1..cities {
        let next = (0..cities)
            .filter(|&c| !used[c])
            .min_by_key(|&c| m.at(here, c))
            .expect("a city is left");
        used[next] = true;
        tour.push(next);
        here = next;
    }
    tour.push(cities);
    iterate(&m, tour, kicks, seed)
}

/// Like [`best_order`], starting from the city order `start` (every city once).
pub fn improve_order(
    closure: &Closure,
    start: &[usize],
    kicks: usize,
    seed: u64,
) -> (Vec<usize>, u64) {
    let cities = closure.cities();
    if cities <= 2 || start.len() != cities {
        return best_order(closure, kicks, seed);
    }
    let mut tour = start.to_vec();
    tour.push(cities);
    iterate(&Matrix::new(closure), tour, kicks, seed)
}

/// A cheaper walk than `walk` (of cost `cost`), if local search from its order of first
/// visits finds one: turns each walk the branch-and-cut finds into a heuristic start.
pub fn polish_walk(
    closure: &Closure,
    walk: &[usize],
    cost: u64,
    kicks: usize,
) -> Option<(Vec<usize>, u64)> {
    let mut seen = vec![false; closure.cities()];
    let mut order = Vec::with_capacity(closure.cities());
    for &city in walk {
        if !std::mem::replace(seen.get_mut(city)?, true) {
            order.push(city);
        }
    }
    let (order, _) = improve_order(closure, &order, kicks, cost);
    let (better, better_cost) = closure.walk_of(&order);
    (better_cost < cost).then_some((better, better_cost))
}

/// Iterated local search from `tour` (every city once, then the dummy city).
fn iterate(m: &Matrix, mut tour: Vec<usize>, kicks: usize, seed: u64) -> (Vec<usize>, u64) {
    let cities = m.size - 1;
    let mut rng = SplitMix64::new(seed);
    local_search(&mut tour, m);
    let mut best_cost = m.tour_cost(&tour);
    let mut best = tour.clone();
    let len = best.len();
    if len >= 8 {
        for _ in 0..kicks {
            // A local double bridge: three cuts within a short window of the tour.
            let window = (len - 2).min(KICK_WINDOW) as u64;
            let first = 1 + (rng.next_u64() % (len as u64 - 1 - window)) as usize;
            let mut cuts = [
                first,
                first + 1 + (rng.next_u64() % window) as usize,
                first + 1 + (rng.next_u64() % window) as usize,
            ];
            cuts.sort_unstable();
            if cuts[0] == cuts[1] || cuts[1] == cuts[2] {
                continue;
            }
            let mut kicked = Vec::with_capacity(len);
            kicked.extend_from_slice(&best[..cuts[0]]);
            kicked.extend_from_slice(&best[cuts[1]..cuts[2]]);
            kicked.extend_from_slice(&best[cuts[0]..cuts[1]]);
            kicked.extend_from_slice(&best[cuts[2]..]);
            local_search(&mut kicked, m);
            let cost = m.tour_cost(&kicked);
            if cost <= best_cost {
                best_cost = cost;
                best = kicked;
            }
        }
    }
    let dummy = best
        .iter()
        .position(|&c| c == cities)
        .expect("dummy in tour");
    best.rotate_left(dummy);
    let order = best[1..].to_vec();
    (order, best_cost)
}

#[cfg(test)]
mod tests {
    use super::super::instance::Instance;
    use super::*;

    #[test]
    fn orders_are_permutations_whose_walks_cost_what_they_say() {
        for seed in 0..20 {
            let grid = Instance::generate(2 + (seed as usize % 6), seed).unwrap();
            let closure = Closure::new(&grid);
            let (order, cost) = best_order(&closure, 30, seed);
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..grid.cities()).collect::<Vec<_>>());
            let (walk, walk_cost) = closure.walk_of(&order);
            assert_eq!(walk_cost, cost);
            assert_eq!(super::super::verify::walk_cost(&grid, &walk).unwrap(), cost);
        }
    }

    #[test]
    fn polishing_a_snake_walk_finds_a_cheaper_legal_walk() {
        for seed in 0..10 {
            let n = 6;
            let grid = Instance::generate(n, seed).unwrap();
            let closure = Closure::new(&grid);
            // Row by row, alternating direction: a legal walk that ignores the costs.
            let snake: Vec<usize> = (0..n)
                .flat_map(|r| {
                    let row: Vec<usize> = (0..n).map(|c| r * n + c).collect();
                    if r % 2 == 0 {
                        row
                    } else {
                        row.into_iter().rev().collect()
                    }
                })
                .collect();
            let cost = super::super::verify::walk_cost(&grid, &snake).unwrap();
            let Some((walk, better)) = polish_walk(&closure, &snake, cost, 20) else {
                panic!("seed {seed}: the snake is never a local optimum here");
            };
            assert!(better < cost);
            assert_eq!(
                super::super::verify::walk_cost(&grid, &walk).unwrap(),
                better
            );
        }
    }
}
