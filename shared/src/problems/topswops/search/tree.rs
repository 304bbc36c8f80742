//! The search trees node by node in plain bytes, off the hot path: what both directions'
//! trees share (replaying a path, listing prefixes, the concrete decks of a leaf). Each
//! direction describes its nodes through [`PlainNode`]; the hot path has its own
//! representation ([`super::core::Tree`]).

use super::bits::bit;
use super::range::{push_prefix, relation, Rel};

/// One child of a plain node.
pub(super) enum Step<N> {
    /// The child is a leaf (its path ends with 1).
    Leaf(N),
    /// The child is a branch node.
    Branch(N),
}

/// What the plain nodes of both trees keep.
#[derive(Clone, Debug)]
pub(super) struct Cards {
    /// Position i holds a card value or an unknown card (`UNKNOWN`, forward: `UNKNOWN |
    /// origin`); bytes from n on are 0.
    pub(super) deck: [u8; 32],
    /// The deck size.
    pub(super) n: usize,
    /// The flips every deck of the node takes so far.
    pub(super) flips: u32,
    /// Values no known card has (bit v).
    pub(super) unused: u64,
    /// The most flips the node's leaves can reach (the smallest tail bound on the way).
    pub(super) cap: u32,
}

/// A node of one direction's tree in plain bytes.
pub(super) trait PlainNode: Sized {
    /// How errors name a step of a path (`"value"`, `"un-flip"`).
    const STEP: &'static str;
    /// How errors say that a step cannot be taken (`"available"`, `"legal"`).
    const ALLOWED: &'static str;
    /// The root of the tree for decks of `n` cards.
    fn root(n: usize) -> Self;
    /// The children of the full structural tree (bit v = child v), no pruning applied.
    fn branches(&self) -> u64;
    /// The child `v`, which must be one of [`PlainNode::branches`].
    fn child(&self, v: u8, tail: &[u32; 64]) -> Step<Self>;
    /// Whether no leaf below (or at) this node can have `need` flips; with `skip`, decks with
    /// a fixed point do not count.
    fn hopeless(&self, need: u32, skip: bool) -> bool;
    /// What every plain node keeps.
    fn cards(&self) -> &Cards;
    /// The decks of this node, which must be a leaf.
    fn leaf_cards(&self) -> LeafCards;
}

/// The node named by `path` (the root for an empty path) and whether it is a leaf, checked
/// to exist.
pub(super) fn replay<N: PlainNode>(
    n: usize,
    tail: &[u32; 64],
    path: &[u8],
) -> Result<(N, bool), String> {
    let mut node = N::root(n);
    for (i, &v) in path.iter().enumerate() {
        if v == 0 || v as usize > n || node.branches() & bit(v as u32) == 0 {
            return Err(format!(
                "prefix {path:?} is not a node: {} {v} at index {i} is not {}",
                N::STEP,
                N::ALLOWED
            ));
        }
        match node.child(v, tail) {
            Step::Leaf(leaf) => {
                if i + 1 != path.len() {
                    return Err(format!("prefix {path:?} continues past a leaf"));
                }
                return Ok((leaf, true));
            }
            Step::Branch(b) => node = b,
        }
    }
    Ok((node, false))
}

/// Lists the prefixes of length `depth` below `node` (whose path is `path`) that sort after
/// `after`, at most `max` in all in `out`; false when `max` cut the listing short (see
/// `Searcher::prefixes_after`).
pub(super) fn enumerate<N: PlainNode>(
    tail: &[u32; 64],
    node: &N,
    path: &mut Vec<u8>,
    depth: usize,
    after: Option<&[u8]>,
    max: usize,
    out: &mut Vec<Vec<u8>>,
) -> bool {
    if path.len() >= depth {
        return push_prefix(path, after, max, out);
    }
    let mut todo = node.branches();
    while todo != 0 {
        let v = todo.trailing_zeros() as u8;
        todo &= todo - 1;
        path.push(v);
        let keep_going = match after.map(|a| relation(path, a)) {
            // Entirely at or before `after`: nothing of it comes after.
            Some(Rel::Before) => true,
            _ => match node.child(v, tail) {
                Step::Leaf(_) => push_prefix(path, after, max, out),
                Step::Branch(child) => enumerate(tail, &child, path, depth, after, max, out),
            },
        };
        path.pop();
        if !keep_going {
            return false;
        }
    }
    true
}

/// The concrete decks of one leaf: all fillings of its unknown cards with the values left.
pub(super) struct LeafCards {
    /// The deck (values 1..=n, top first) with its known cards; the others are overwritten.
    pub(super) deck: Vec<u8>,
    /// Indices of `deck` that hold unknown cards, increasing.
    pub(super) free: Vec<usize>,
    /// The values left for them, increasing.
    pub(super) values: Vec<u8>,
}

impl LeafCards {
    /// How many decks the leaf stands for (`values.len()!`).
    pub(super) fn count(&self) -> u64 {
        (1..=self.values.len() as u64).product()
    }

    /// Calls `each` with the fillings in lexicographic order of the values given to the free
    /// indices (`all`), or with the first only (the values in increasing order); with
    /// `skip_fixed`, decks with a fixed point k >= 2 (card k at position k) are passed over.
    /// Returns how many decks `each` saw.
    pub(super) fn fill(mut self, all: bool, skip_fixed: bool, mut each: impl FnMut(&[u8])) -> u64 {
        let mut count = 0;
        loop {
            for (&i, &v) in self.free.iter().zip(&self.values) {
                self.deck[i] = v;
            }
            let fixed = skip_fixed
                && self
                    .deck
                    .iter()
                    .enumerate()
                    .any(|(i, &v)| v >= 2 && v as usize == i + 1);
            if !fixed {
                each(&self.deck);
                count += 1;
            }
            if !all || !next_permutation(&mut self.values) {
                return count;
            }
        }
    }
}

/// Rearranges into the next permutation in lexicographic order; false after the last one.
pub(super) fn next_permutation(a: &mut [u8]) -> bool {
    if a.len() < 2 {
        return false;
    }
    let mut i = a.len() - 1;
    while i > 0 && a[i - 1] >= a[i] {
        i -= 1;
    }
    if i == 0 {
        return false;
    }
    let mut j = a.len() - 1;
    while a[j] <= a[i - 1] {
        j -= 1;
    }
    a.swap(i - 1, j);
    a[i..].reverse();
    true
}
