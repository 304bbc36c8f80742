//! Separation of connectivity cuts `x(delta(S)) >= 2` on the LP's support graph: the
//! cities plus the dummy end vertex, weighted by the LP values. Disconnected components give
//! cuts of weight 0 at once; otherwise Stoer-Wagner's minimum-cut phases give every phase
//! cut lighter than 2.

/// A weighted undirected graph on `size` vertices (dense; sizes here are at most a few
/// thousand vertices).
pub struct Support {
    size: usize,
    w: Vec<f64>,
}

impl Support {
    /// An empty graph on `size` vertices.
    pub fn new(size: usize) -> Support {
        Support {
            size,
            w: vec![0.0; size * size],
        }
    }

    /// Adds `weight` to the edge `a`-`b`.
    pub fn add(&mut self, a: usize, b: usize, weight: f64) {
        if a != b && weight > 0.0 {
            self.w[a * self.size + b] += weight;
            self.w[b * self.size + a] += weight;
        }
    }

    /// Connected components over edges heavier than `eps`, as vertex lists.
    pub fn components(&self, eps: f64) -> Vec<Vec<usize>> {
        let mut label = vec![usize::MAX; self.size];
        let mut out = Vec::new();
        for start in 0..self.size {
            if label[start] != usize::MAX {
                continue;
            }
            let id = out.len();
            let mut members = vec![start];
            label[start] = id;
            let mut head = 0;
            while head < members.len() {
                let v = members[head];
                head += 1;
                let row = &self.w[v * self.size..(v + 1) * self.size];
                for (u, &weight) in row.iter().enumerate() {
                    if label[u] == usize::MAX && weight > eps {
                        label[u] = id;
                        members.push(u);
                    }
                }
            }
            out.push(members);
        }
        out
    }

    /// The weight of the cut around `set`.
    pub fn cut_weight(&self, set: &[usize]) -> f64 {
        let mut inside = vec![false; self.size];
        for &v in set {
            inside[v] = true;
        }
        let mut total = 0.0;
        for &v in set {
            let row = &self.w[v * self.size..(v + 1) * self.size];
            for (&weight, &within) in row.iter().zip(&inside) {
                if !within {
                    total += weight;
                }
            }
        }
        total
    }

    /// Stoer-Wagner: every phase cut of weight below `limit`, as vertex sets (the side the
    /// phase's last vertex merged into).
    pub fn light_cuts(&self, limit: f64) -> Vec<Vec<usize>> {
        let size = self.size;
        let mut w = self.w.clone();
        let mut members: Vec<Vec<usize>> = (0..size).map(|v| vec![v]).collect();
        let mut alive: Vec<usize> = (0..size).collect();
        let mut found = Vec::new();
        let mut key = vec![0.0f64; size];
        let mut added = vec![false; size];
        while alive.len() > 1 {
            for &v in &alive {
                key[v] = 0.0;
                added[v] = false;
            }
            let mut prev = alive[0];
            let mut last = alive[0];
            added[last] = true;
            for &u in &alive {
                key[u] += w[last * size + u];
            }
            for _ in 1..alive.len() {
                let mut best = usize::MAX;
                let mut best_key = f64::NEG_INFINITY;
                for &u in &alive {
                    if !added[u] && key[u] > best_key {
                        best_key = key[u];
                        best = u;
                    }
                }
                prev = last;
                last = best;
                added[last] = true;
                for &u in &alive {
                    if !added[u] {
                        key[u] += w[last * size + u];
                    }
                }
            }
            // The cut of the phase: `last` against the rest.
            if key[last] < limit {
                found.push(members[last].clone());
            }
            // Merge `last` into `prev`.
            let moved = std::mem::take(&mut members[last]);
            members[prev].extend(moved);
            for &u in &alive {
                let add = w[last * size + u];
                w[prev * size + u] += add;
                w[u * size + prev] += add;
            }
            w[prev * size + prev] = 0.0;
            alive.retain(|&v| v != last);
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Random;

    #[test]
    fn finds_the_light_cut_of_two_triangles() {
        let mut g = Support::new(6);
        for (a, b) in [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3)] {
            g.add(a, b, 1.0);
        }
        g.add(2, 3, 0.5);
        assert_eq!(g.components(1e-9).len(), 1);
        let cuts = g.light_cuts(1.0);
        assert!(!cuts.is_empty());
        let min = cuts
            .iter()
            .map(|c| g.cut_weight(c))
            .fold(f64::INFINITY, f64::min);
        assert!((min - 0.5).abs() < 1e-9, "{cuts:?}");
    }

    #[test]
    fn minimum_cut_matches_brute_force() {
        let mut rng = crate::rng::SplitMix64::new(7);
        for _ in 0..50 {
            let size = 2 + (rng.next_u64() % 7) as usize;
            let mut g = Support::new(size);
            for a in 0..size {
                for b in a + 1..size {
                    if rng.next_u64().is_multiple_of(2) {
                        g.add(a, b, (rng.next_u64() % 5) as f64 * 0.5);
                    }
                }
            }
            let mut brute = f64::INFINITY;
            for mask in 1..(1u32 << size) - 1 {
                let set: Vec<usize> = (0..size).filter(|&v| mask >> v & 1 == 1).collect();
                brute = brute.min(g.cut_weight(&set));
            }
            let found = g
                .light_cuts(f64::INFINITY)
                .iter()
                .map(|c| g.cut_weight(c))
                .fold(f64::INFINITY, f64::min);
            assert!((found - brute).abs() < 1e-9, "{found} vs {brute}");
        }
    }
}
