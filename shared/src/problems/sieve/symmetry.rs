//! Symmetry breaking: edges that some optimal game never uses, proven so.
//!
//! # Families of a prime
//!
//! For a prime p with k p <= N < (k + 1) p and p > k, the *family* of p is its multiples
//! m p (m = 1..k): every divisor of m p is d or d p with d | m, and every multiple of m p up
//! to N is again in the family. A member m p >= 2p has edges to the *internal* factors
//! (m / r) p (r a prime of m) and one *helper* edge, to the small number m. p itself is
//! never selected (its only proper divisor is 1, which (P, 1) takes at the root), and no
//! pair outside the family touches a member (its number would be a multiple of p).
//!
//! **Sorting.** For two primes p < p' of the same k, the map swapping m p with m p' for
//! every m maps edges to edges and keeps every precedence between pairs (a pair's factor
//! divides another's number exactly when it did before), so it turns a game into a game,
//! changing the score by (c(p) - c(p')) (p' - p), where c(p) is the sum of the m whose m p
//! the game selects. Swapping neighbours whose c is out of order never lowers the score:
//! some optimal game has c non-decreasing in p within each k. (P, 1) is untouched (P > N/2
//! is in no family of k >= 2.)
//!
//! **Helper-free families.** Let I_k be the largest c of a *pattern* (a family's pairs)
//! that uses internal edges only and has no precedence cycle. Such a pattern's factors
//! divide only members, so none of its pairs precedes a pair outside the family, and it
//! lies on no cycle: replacing a family's pairs in a game by it gives a game again. So in
//! an optimal game every family with c <= I_k can be given that pattern at no loss (and
//! c < I_k does not occur).
//!
//! **Few helped families.** A family with c > I_k uses at least one helper edge, and the
//! helpers m are each one pair's factor at most, so the families with c > I_k use pairwise
//! disjoint helper sets: at most t_k of them, the most pairwise disjoint sets among the
//! helper sets of the patterns with c > I_k (found here by enumerating every pattern). In a
//! sorted optimal game they are the t_k largest primes of the range.
//!
//! Sorting, then the rewrites (each within one family, c unchanged), keep the game optimal
//! and (P, 1) in place: **one optimal game uses no helper edge of a family below the t_k
//! largest of its k**, for every k at once. The exact search excludes those edges at the
//! root. For k = 2 (families {q, 2q}), I_2 = 2 = the most any pattern gets, t_2 = 0: (2q, 2)
//! is never needed; for k = 3, I_3 = 3 and t_3 = 2 ({2} and {3}).

use super::family::is_prime;

/// The largest k whose families are analysed (their patterns enumerated).
pub const LARGEST_K: u32 = 12;

/// The edges (big, small) some optimal game with (P, 1) fixed avoids (see the module docs).
pub fn needless_edges(n: u32) -> Vec<(u32, u32)> {
    let mut edges = Vec::new();
    for k in 2..=LARGEST_K {
        let primes: Vec<u32> = (k + 1..=n / k)
            .filter(|&p| (k + 1) * p > n && is_prime(p))
            .collect();
        let helped = helped_by_k()[k as usize];
        let unhelped = primes.len().saturating_sub(helped);
        for &p in &primes[..unhelped] {
            edges.extend((2..=k).map(|m| (m * p, m)));
        }
    }
    edges
}

/// t_k for every k up to [`LARGEST_K`], enumerated once.
fn helped_by_k() -> &'static [usize] {
    static TABLE: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| (0..=LARGEST_K).map(helped_families).collect())
}

/// t_k: the most families of one k that can use helper edges in a game (see the module
/// docs).
pub fn helped_families(k: u32) -> usize {
    let mut best_by_helpers: std::collections::HashMap<u32, u32> = Default::default();
    let mut chosen = Vec::new();
    patterns(k, 2, 0, &mut chosen, &mut |c, helpers| {
        let best = best_by_helpers.entry(helpers).or_insert(0);
        *best = (*best).max(c);
    });
    let internal = best_by_helpers.get(&0).copied().unwrap_or(0);
    let high: Vec<u32> = best_by_helpers
        .iter()
        .filter(|&(_, &c)| c > internal)
        .map(|(&h, _)| h)
        .collect();
    let minimal: Vec<u32> = high
        .iter()
        .copied()
        .filter(|&h| !high.iter().any(|&o| o != h && o & h == o))
        .collect();
    most_disjoint(&minimal, 0)
}

/// One member's pair in a pattern: the member's multiplier m and its factor's, g (the
/// internal factor g p, or the helper g = m).
#[derive(Clone, Copy)]
struct Pair {
    m: u32,
    g: u32,
    helper: bool,
}

/// Calls `found(c, helpers)` for every acyclic pattern of a family of `k` (helpers as a bit
/// mask of the m used), choosing members `m..=k` given the factors `used` so far.
fn patterns(k: u32, m: u32, used: u32, chosen: &mut Vec<Pair>, found: &mut dyn FnMut(u32, u32)) {
    if m > k {
        if acyclic(chosen) {
            let c = chosen.iter().map(|p| p.m).sum();
            let helpers = chosen
                .iter()
                .filter(|p| p.helper)
                .fold(0, |acc, p| acc | 1 << p.m);
            found(c, helpers);
        }
        return;
    }
    // m not selected.
    patterns(k, m + 1, used, chosen, found);
    // m selected with an internal factor (m / r) p, unused and itself not selected.
    for r in (2..=m).filter(|&r| m.is_multiple_of(r) && is_prime(r)) {
        let g = m / r;
        let selected = |x: u32| chosen.iter().any(|p| p.m == x);
        if used & 1 << g != 0 || selected(g) || used & 1 << m != 0 {
            continue;
        }
        chosen.push(Pair {
            m,
            g,
            helper: false,
        });
        patterns(k, m + 1, used | 1 << g, chosen, found);
        chosen.pop();
    }
    // m selected with its helper m, unless m p is some member's factor already.
    if used & 1 << m == 0 {
        chosen.push(Pair {
            m,
            g: m,
            helper: true,
        });
        patterns(k, m + 1, used, chosen, found);
        chosen.pop();
    }
}

/// True when the pattern's pairs have no precedence cycle: pair i precedes pair j when i's
/// factor (g_i p, or the helper g_i) divides j's number m_j p, that is when g_i | m_j.
fn acyclic(pairs: &[Pair]) -> bool {
    let n = pairs.len();
    let edge = |i: usize, j: usize| i != j && pairs[j].m.is_multiple_of(pairs[i].g);
    let mut indegree: Vec<usize> = (0..n)
        .map(|j| (0..n).filter(|&i| edge(i, j)).count())
        .collect();
    let mut ready: Vec<usize> = (0..n).filter(|&j| indegree[j] == 0).collect();
    let mut seen = 0;
    while let Some(i) = ready.pop() {
        seen += 1;
        for (j, degree) in indegree.iter_mut().enumerate() {
            if edge(i, j) {
                *degree -= 1;
                if *degree == 0 {
                    ready.push(j);
                }
            }
        }
    }
    seen == n
}

/// The most pairwise disjoint sets (bit masks) among `sets`, none meeting `taken`.
fn most_disjoint(sets: &[u32], taken: u32) -> usize {
    sets.iter()
        .enumerate()
        .filter(|(_, &s)| s & taken == 0)
        .map(|(i, &s)| 1 + most_disjoint(&sets[i + 1..], taken | s))
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problems::sieve::local::{self, ProofOptions};

    #[test]
    fn helped_families_as_the_module_docs_derive_them() {
        assert_eq!(helped_families(2), 0);
        assert_eq!(helped_families(3), 2);
        // k = 4: helper-free, 3p takes p and 4p takes 2p (c = 7); only c = 9 is higher, and
        // it needs (4p, 4): one family at most.
        assert_eq!(helped_families(4), 1);
    }

    #[test]
    fn needless_edges_at_785() {
        let edges = needless_edges(785);
        // k = 2: every 2q with q prime in (261.7, 392.5].
        for q in [263, 389] {
            assert!(edges.contains(&(2 * q, 2)), "q = {q}");
        }
        // k = 3 (196.25, 261.7]: 257 and 251 keep their helpers, 241 and below lose them.
        for p in [257, 251] {
            assert!(!edges.contains(&(2 * p, 2)) && !edges.contains(&(3 * p, 3)));
        }
        for p in [241, 197] {
            assert!(edges.contains(&(2 * p, 2)) && edges.contains(&(3 * p, 3)));
        }
        // k = 4 (157, 196.25]: 193 keeps them, 191 loses all three.
        assert!(!edges.contains(&(4 * 193, 4)));
        for m in 2..=4 {
            assert!(edges.contains(&(m * 191, m)));
        }
        // Every edge is a helper edge m p -> m of a prime p > m.
        for &(big, small) in &edges {
            assert!(big % small == 0 && is_prime(big / small) && big / small > small);
        }
    }

    #[test]
    fn the_tree_without_needless_edges_keeps_the_optimum() {
        // The reference is version 7's tree, which searches every edge.
        for n in (130..=330).step_by(10) {
            assert!(!needless_edges(n).is_empty());
            let prove = |solver| {
                local::prove_with(
                    n,
                    ProofOptions {
                        threads: 1,
                        solver: Some(solver),
                        ..ProofOptions::default()
                    },
                )
                .unwrap()
            };
            let (old, new) = (prove(7), prove(8));
            assert_eq!(new.score, old.score, "N = {n}");
        }
    }
}
