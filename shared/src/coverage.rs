//! Donation coverage for searches whose units are path ranges: a unit is the subtree of a
//! tree node named by its `path`, cut at an optional exclusive `limit` path, where depth-first
//! order is the lexicographic order of paths (a proper prefix sorts before its extensions;
//! Rust's `Vec` ordering is exactly that). Topswops and the sieve name their units this way.
//!
//! A donation replaces a unit `old` by `remaining` (the same path, a lower limit) plus whole
//! subtrees `donated`. [`check_range_donation`] accepts it only when those pieces lie inside
//! `old`, do not overlap, and every path of `old` they leave out (the *gaps*) provably holds
//! nothing: the problem checks each gap subtree with its own search under the campaign's
//! bound, so a gap is "searched by code the coordinator trusts".

use crate::problem::ProblemError;
use std::fmt::Debug;

/// A unit of a path-range search: the subtree at `path`, below `limit` when given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeUnit<T> {
    /// The root of the unit's subtree.
    pub path: Vec<T>,
    /// Exclusive upper limit in depth-first (lexicographic) order.
    pub limit: Option<Vec<T>>,
}

/// What [`check_range_donation`] asks of the problem's tree.
pub trait RangeTree<T> {
    /// The children of the node at `parent`, in increasing order (empty for a leaf or a path
    /// that names no node).
    fn children(&mut self, parent: &[T]) -> Result<Vec<T>, ProblemError>;
    /// True when the subtree at `path` (a node) holds nothing the campaign still wants (no
    /// solution beating the campaign's bound), established by the problem's own search within
    /// a small budget; false when it holds something or the budget ran out.
    fn holds_nothing(&mut self, path: &[T]) -> Result<bool, ProblemError>;
}

fn refuse(why: String) -> ProblemError {
    ProblemError::InvalidResult(format!("donation refused: {why}"))
}

/// True when `prefix` is a prefix of `path` (or equal to it).
fn extends<T: PartialEq>(path: &[T], prefix: &[T]) -> bool {
    path.len() >= prefix.len() && path[..prefix.len()] == *prefix
}

/// Checks that `remaining` plus the `donated` subtrees cover exactly the unit `old`: nothing
/// outside it, no overlap, and every gap between them empty (checked through `tree`).
/// Honest donors (topswops, sieve) keep `[path, q1)` and donate whole subtrees `q1 < q2 <
/// ...`, so the first donated path must be the new limit.
pub fn check_range_donation<T: Ord + Copy + Debug>(
    old: &RangeUnit<T>,
    remaining: &RangeUnit<T>,
    donated: &[RangeUnit<T>],
    tree: &mut dyn RangeTree<T>,
) -> Result<(), ProblemError> {
    let root = &old.path;
    if remaining.path != *root {
        return Err(refuse(format!(
            "the donor keeps the subtree {:?}, not its unit's {root:?}",
            remaining.path
        )));
    }
    // The old limit as an end inside the subtree: None = the subtree's end.
    let old_end: Option<&[T]> = match &old.limit {
        Some(l) if extends(l, root) && l.len() > root.len() => Some(l),
        Some(l) if l.as_slice() <= root.as_slice() => {
            return Err(refuse("the unit is empty: nothing to donate".into()));
        }
        _ => None,
    };
    let Some(new_limit) = &remaining.limit else {
        return Err(refuse(
            "the donor keeps its whole unit (no new limit)".into(),
        ));
    };
    let Some(first) = donated.first() else {
        return Err(refuse(
            "nothing was donated, yet the donor's unit shrank".into(),
        ));
    };
    if first.path != *new_limit {
        return Err(refuse(format!(
            "the donor keeps paths below {new_limit:?}, but the first donated subtree is {:?}",
            first.path
        )));
    }
    for (i, piece) in donated.iter().enumerate() {
        if piece.limit.is_some() {
            return Err(refuse(format!(
                "donated unit {i} has a limit: donations are whole subtrees"
            )));
        }
        let q = &piece.path;
        if !extends(q, root) || q.len() == root.len() {
            return Err(refuse(format!(
                "donated unit {i} ({q:?}) lies outside the unit {root:?}"
            )));
        }
        if let Some(end) = old_end {
            // The whole subtree at q must sort before the old limit.
            if q.as_slice() >= end || extends(end, q) {
                return Err(refuse(format!(
                    "donated unit {i} ({q:?}) reaches past the unit's limit {end:?}"
                )));
            }
        }
        if let Some(next) = donated.get(i + 1) {
            if next.path <= *q || extends(&next.path, q) {
                return Err(refuse(format!(
                    "donated units {i} ({q:?}) and {} ({:?}) overlap or are out of order",
                    i + 1,
                    next.path
                )));
            }
        }
        if !is_node(tree, root, q)? {
            return Err(refuse(format!("donated unit {i} ({q:?}) names no node")));
        }
    }
    for (i, piece) in donated.iter().enumerate() {
        let before = donated
            .get(i + 1)
            .map(|next| next.path.as_slice())
            .or(old_end);
        check_gap(tree, root, &piece.path, before)?;
    }
    Ok(())
}

/// True when every step of `path` below `root` is a child of the node before it.
fn is_node<T: Ord + Copy + Debug>(
    tree: &mut dyn RangeTree<T>,
    root: &[T],
    path: &[T],
) -> Result<bool, ProblemError> {
    for depth in root.len()..path.len() {
        if !tree.children(&path[..depth])?.contains(&path[depth]) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Checks the paths after the subtree at `x` and before `before` (the end of the subtree at
/// `root` when `None`): the subtrees making up that interval must all hold nothing.
fn check_gap<T: Ord + Copy + Debug>(
    tree: &mut dyn RangeTree<T>,
    root: &[T],
    x: &[T],
    before: Option<&[T]>,
) -> Result<(), ProblemError> {
    // Depth at which x and `before` part (before > x and does not extend x).
    let split = before.map(|b| x.iter().zip(b).take_while(|(p, q)| p == q).count());
    let stop = split.unwrap_or(root.len());
    for depth in (stop..x.len()).rev() {
        let parent = &x[..depth];
        let upper = match (split, before) {
            (Some(s), Some(b)) if s == depth => Some(b[depth]),
            _ => None,
        };
        empty_children(tree, parent, Some(x[depth]), upper)?;
    }
    if let (Some(s), Some(b)) = (split, before) {
        for depth in s + 1..b.len() {
            empty_children(tree, &b[..depth], None, Some(b[depth]))?;
        }
    }
    Ok(())
}

/// Checks that the children of `parent` strictly between `lower` and `upper` hold nothing.
fn empty_children<T: Ord + Copy + Debug>(
    tree: &mut dyn RangeTree<T>,
    parent: &[T],
    lower: Option<T>,
    upper: Option<T>,
) -> Result<(), ProblemError> {
    for child in tree.children(parent)? {
        if lower.is_some_and(|l| child <= l) || upper.is_some_and(|u| child >= u) {
            continue;
        }
        let mut path = parent.to_vec();
        path.push(child);
        if !tree.holds_nothing(&path)? {
            return Err(refuse(format!(
                "the subtree {path:?} of the unit is neither kept nor donated, and holds \
                 work the campaign still needs"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// A complete tree of the given branching and depth; `live` leaves hold solutions.
    #[derive(Debug)]
    struct Toy {
        branching: u8,
        depth: usize,
        live: BTreeSet<Vec<u8>>,
    }

    impl RangeTree<u8> for Toy {
        fn children(&mut self, parent: &[u8]) -> Result<Vec<u8>, ProblemError> {
            Ok(if parent.len() < self.depth {
                (0..self.branching).collect()
            } else {
                Vec::new()
            })
        }
        fn holds_nothing(&mut self, path: &[u8]) -> Result<bool, ProblemError> {
            Ok(!self.live.iter().any(|leaf| extends(leaf, path)))
        }
    }

    fn leaves(tree: &Toy, root: &[u8]) -> Vec<Vec<u8>> {
        let mut out = vec![root.to_vec()];
        while out[0].len() < tree.depth {
            out = out
                .into_iter()
                .flat_map(|p| {
                    (0..tree.branching).map(move |c| {
                        let mut q = p.clone();
                        q.push(c);
                        q
                    })
                })
                .collect();
        }
        out
    }

    /// An honest donation as the topswops and sieve donors make it: the untried children of
    /// the node at `cut[..depth]` after `cut[depth]` (those holding something, when `skip_dead`).
    fn honest(tree: &Toy, root: &[u8], cut: &[u8], skip_dead: bool) -> Option<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        for depth in root.len()..cut.len() {
            for c in cut[depth] + 1..tree.branching {
                let mut p = cut[..depth].to_vec();
                p.push(c);
                let dead = !tree.live.iter().any(|l| extends(l, &p));
                if !(skip_dead && dead) {
                    out.push(p);
                }
            }
            if !out.is_empty() {
                return Some(out);
            }
        }
        None
    }

    fn unit(path: &[u8], limit: Option<&Vec<u8>>) -> RangeUnit<u8> {
        RangeUnit {
            path: path.to_vec(),
            limit: limit.cloned(),
        }
    }

    fn arb_case() -> impl Strategy<Value = (Toy, Vec<u8>, bool)> {
        (2u8..4, 2usize..5, any::<u64>(), any::<bool>()).prop_map(|(b, d, seed, skip)| {
            let mut tree = Toy {
                branching: b,
                depth: d,
                live: BTreeSet::new(),
            };
            let all = leaves(&tree, &[]);
            for (i, leaf) in all.iter().enumerate() {
                if crate::rng::splitmix64(seed ^ i as u64).is_multiple_of(3) {
                    tree.live.insert(leaf.clone());
                }
            }
            let cut = all[(seed as usize) % all.len()].clone();
            (tree, cut, skip)
        })
    }

    proptest! {
        #[test]
        fn honest_donations_are_accepted((mut tree, cut, skip) in arb_case()) {
            let root: Vec<u8> = Vec::new();
            if let Some(pieces) = honest(&tree, &root, &cut, skip) {
                let old = unit(&root, None);
                let kept = unit(&root, Some(&pieces[0]));
                let donated: Vec<_> = pieces.iter().map(|p| unit(p, None)).collect();
                prop_assert!(check_range_donation(&old, &kept, &donated, &mut tree).is_ok());
            }
        }

        #[test]
        fn a_dropped_live_piece_is_refused((mut tree, cut, _skip) in arb_case(), drop in any::<prop::sample::Index>()) {
            let root: Vec<u8> = Vec::new();
            if let Some(pieces) = honest(&tree, &root, &cut, true) {
                let i = drop.index(pieces.len());
                // Dropping the first piece only moves the donor's limit up: it keeps it.
                prop_assume!(i > 0);
                let old = unit(&root, None);
                let mut left: Vec<Vec<u8>> = pieces.clone();
                left.remove(i);
                if let Some(first) = left.first().cloned() {
                    // The dropped piece holds a live leaf (dead ones were skipped): refused.
                    let kept = unit(&root, Some(&first));
                    let donated: Vec<_> = left.iter().map(|p| unit(p, None)).collect();
                    prop_assert!(check_range_donation(&old, &kept, &donated, &mut tree).is_err());
                }
            }
        }

        #[test]
        fn overlapping_and_outside_pieces_are_refused((mut tree, cut, skip) in arb_case()) {
            let root = cut[..1].to_vec();
            if let Some(pieces) = honest(&tree, &root, &cut, skip) {
                let old = unit(&root, None);
                let kept = unit(&root, Some(&pieces[0]));
                // The same piece twice.
                let mut twice: Vec<_> = pieces.iter().map(|p| unit(p, None)).collect();
                twice.push(twice.last().unwrap().clone());
                prop_assert!(check_range_donation(&old, &kept, &twice, &mut tree).is_err());
                // A piece outside the unit's subtree.
                let mut outside: Vec<_> = pieces.iter().map(|p| unit(p, None)).collect();
                let mut stranger = cut.clone();
                stranger[0] = (cut[0] + 1) % tree.branching;
                outside.push(unit(&stranger, None));
                prop_assert!(check_range_donation(&old, &kept, &outside, &mut tree).is_err());
                // A piece containing an earlier one (its parent).
                let mut nested: Vec<_> = pieces.iter().map(|p| unit(p, None)).collect();
                let last = nested.last().unwrap().path.clone();
                if last.len() > root.len() + 1 {
                    nested.push(unit(&last[..last.len() - 1], None));
                    prop_assert!(check_range_donation(&old, &kept, &nested, &mut tree).is_err());
                }
            }
        }
    }

    #[test]
    fn shrinking_without_donating_is_refused_and_a_limited_unit_keeps_its_limit() {
        let mut tree = Toy {
            branching: 3,
            depth: 2,
            live: [vec![2, 2]].into_iter().collect(),
        };
        let old = unit(&[], None);
        let kept = unit(&[], Some(&vec![1]));
        assert!(check_range_donation(&old, &kept, &[], &mut tree).is_err());
        // Donating [1] but not [2], which holds a live leaf.
        assert!(check_range_donation(&old, &kept, &[unit(&[1], None)], &mut tree).is_err());
        // Keeping less than the first donated piece starts.
        let shrunk = [unit(&[2], None)];
        assert!(check_range_donation(&old, &kept, &shrunk, &mut tree).is_err());
        // Donating both is exact.
        let both = [unit(&[1], None), unit(&[2], None)];
        assert!(check_range_donation(&old, &kept, &both, &mut tree).is_ok());
        // With the old limit [2]: donating [2] reaches past it.
        let limited = unit(&[], Some(&vec![2]));
        assert!(check_range_donation(&limited, &kept, &both, &mut tree).is_err());
        assert!(check_range_donation(&limited, &kept, &both[..1], &mut tree).is_ok());
        // A deeper old limit [2, 1]: [2, 0] may be donated, [2] may not.
        let deep = unit(&[], Some(&vec![2, 1]));
        let to_deep = [unit(&[1], None), unit(&[2, 0], None)];
        assert!(check_range_donation(&deep, &kept, &to_deep, &mut tree).is_ok());
        assert!(check_range_donation(&deep, &kept, &both, &mut tree).is_err());
        // Keeping another path is refused.
        let other = unit(&[0], Some(&vec![1]));
        assert!(check_range_donation(&old, &other, &both, &mut tree).is_err());
    }
}
