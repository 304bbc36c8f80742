//! k-arrangements of a pool of p values (ordered choices of k distinct values), numbered in
//! lexicographic order of the pool indices: a stage of block growth tries all of them, and
//! its units are ranges of these numbers.

/// Number of k-arrangements of p items, p! / (p - k)!, or `None` above `u64`.
pub fn count(p: usize, k: usize) -> Option<u64> {
    if k > p {
        return Some(0);
    }
    (p - k + 1..=p).try_fold(1u64, |acc, f| acc.checked_mul(f as u64))
}

/// Leaves below each child of a depth-`depth` node: arrangements of the rest.
pub fn subtree(p: usize, k: usize, depth: usize) -> u64 {
    count(p - depth - 1, k - depth - 1).unwrap_or(u64::MAX)
}

/// The arrangement numbered `index` (pool indices), or `None` when out of range.
pub fn unrank(p: usize, k: usize, mut index: u64) -> Option<Vec<usize>> {
    if index >= count(p, k)? {
        return None;
    }
    let mut free: Vec<usize> = (0..p).collect();
    let mut out = Vec::with_capacity(k);
    for depth in 0..k {
        let block = subtree(p, k, depth);
        let digit = (index / block) as usize;
        index %= block;
        out.push(free.remove(digit));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_order_match_a_direct_enumeration() {
        assert_eq!(count(8, 8), Some(40_320));
        assert_eq!(count(11, 6), Some(332_640));
        assert_eq!(count(3, 4), Some(0));
        // All 2-arrangements of 4 items in lexicographic order.
        let mut direct = Vec::new();
        for a in 0..4 {
            for b in 0..4 {
                if a != b {
                    direct.push(vec![a, b]);
                }
            }
        }
        let ranked: Vec<_> = (0..12).map(|i| unrank(4, 2, i).unwrap()).collect();
        assert_eq!(ranked, direct);
        assert_eq!(unrank(4, 2, 12), None);
    }
}
