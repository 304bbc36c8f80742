//! Knuth's forward search (see the parent module's docs, "The search tree" and "Pruning"): a
//! node is a deck of known cards and unknown ones (labelled by origin) after some flips; child
//! `v` gives the unknown top card the unused value v and plays on until an unknown card is on
//! top again, child 1 is the leaf "the top card is 1".

use super::bits::{below, bit};
use super::core::{Node, Tree};
use super::simd::{lower, Deck};
use super::tree::{Cards, LeafCards, PlainNode, Step};
use super::{check_permutation, NO_BOUND, UNKNOWN};

/// Entries of the forward DFS stack (a power of two > MAX_N + 1: paths are at most n + 1 long).
pub(super) const STACK: usize = 64;

/// A node of the forward tree in plain bytes (used off the hot path).
#[derive(Clone, Debug)]
pub(super) struct Plain {
    /// The deck (unknown cards are `UNKNOWN | origin`), flips, values not assigned yet, and
    /// the smallest `flips + tail[m]` seen on the way.
    cards: Cards,
    /// The frozen boundary: positions m+1..n hold exactly the cards m+1..n.
    m: u32,
    /// Whether a branch on the way assigned v >= 2 to origin v (a fixed point).
    fixed: bool,
    /// Value assigned to each origin (0 = unknown).
    assigned: [u8; 32],
}

impl PlainNode for Plain {
    const STEP: &'static str = "value";
    const ALLOWED: &'static str = "available";

    fn root(n: usize) -> Plain {
        let mut deck = [0u8; 32];
        for (i, b) in deck.iter_mut().enumerate().take(n) {
            *b = UNKNOWN | i as u8;
        }
        Plain {
            cards: Cards {
                deck,
                n,
                flips: 0,
                unused: (below(n as u32 + 1)) & !1,
                cap: NO_BOUND,
            },
            m: n as u32,
            fixed: false,
            assigned: [0; 32],
        }
    }

    fn branches(&self) -> u64 {
        self.cards.unused
    }

    fn child(&self, v: u8, tail: &[u32; 64]) -> Step<Plain> {
        let mut c = self.clone();
        let o = (c.cards.deck[0] & !UNKNOWN) as usize;
        c.assigned[o] = v;
        c.cards.unused &= !bit(v as u32);
        if v >= 2 && o + 1 == v as usize {
            c.fixed = true;
        }
        if v == 1 {
            c.cards.deck[0] = 1;
            return Step::Leaf(c);
        }
        c.cards.deck[0] = v;
        let mut t = v as usize;
        loop {
            c.cards.deck[..t].reverse();
            c.cards.flips += 1;
            if t as u32 == c.m {
                c.m = lower(&c.cards.deck, c.m);
                c.cards.cap = c.cards.cap.min(c.cards.flips + tail[c.m as usize & 63]);
            }
            let top = c.cards.deck[0];
            if top & UNKNOWN != 0 {
                return Step::Branch(c);
            }
            t = (top as usize).clamp(1, c.cards.n);
        }
    }

    fn hopeless(&self, need: u32, skip: bool) -> bool {
        self.cards.cap < need || (skip && self.fixed)
    }

    fn cards(&self) -> &Cards {
        &self.cards
    }

    /// The origins never assigned get the values never used.
    fn leaf_cards(&self) -> LeafCards {
        let n = self.cards.n;
        LeafCards {
            deck: self.assigned[..n].to_vec(),
            free: (0..n).filter(|&o| self.assigned[o] == 0).collect(),
            values: (1..=n as u8)
                .filter(|&v| self.cards.unused & bit(v as u32) != 0)
                .collect(),
        }
    }
}

/// The forward tree on the hot path: its tail bounds.
#[derive(Clone, Copy)]
pub(super) struct Forward {
    pub(super) tail: [u32; 64],
}

impl Tree for Forward {
    type Plain = Plain;
    type Extra = u32;

    #[inline(always)]
    fn extra(plain: &Plain) -> u32 {
        plain.m
    }

    #[inline(always)]
    fn children<D: Deck, const SKIP: bool>(&self, node: &Node<D, u32>, need: u32) -> u64 {
        children::<SKIP>(
            node.deck.top(),
            node.unused,
            node.flips,
            node.extra,
            need,
            &self.tail,
        )
    }

    #[inline(always)]
    fn branch<D: Deck, const SKIP: bool>(
        &self,
        node: &Node<D, u32>,
        v: u32,
        need: u32,
    ) -> Option<(Node<D, u32>, u64)> {
        let tail = &self.tail;
        // v is a child (< 64).
        let unused = node.unused & !(1u64 << v);
        let mut x = node.deck.assign_flip(v);
        let mut c = node.flips + 1;
        let mut m = node.extra;
        if v == m {
            m = x.lower(m);
            if c + tail[m as usize & 63] < need {
                return None;
            }
        }
        let mut top = x.top();
        loop {
            if top & UNKNOWN as u32 != 0 {
                let todo = children::<SKIP>(top, unused, c, m, need, tail);
                let child = Node {
                    deck: x,
                    flips: c,
                    unused,
                    extra: m, // the frozen boundary
                };
                return Some((child, todo));
            }
            // Card 1 is never known before the end (it is only assigned by a leaf), so
            // top >= 2.
            x = x.flip_top(top);
            c += 1;
            if top == m {
                m = x.lower(m);
                if c + tail[m as usize & 63] < need {
                    return None;
                }
            }
            top = x.top();
        }
    }
}

/// The children worth trying at a branch node whose top byte is `top` (unknown).
#[inline(always)]
fn children<const SKIP: bool>(
    top: u32,
    unused: u64,
    flips: u32,
    m: u32,
    need: u32,
    tail: &[u32; 64],
) -> u64 {
    // The top is unknown: `top & 0x3f` is its origin (< 32), so the shift is in range.
    let fixed = (1u64 << ((top & 0x3f) + 1)) & !3 & (SKIP as u64).wrapping_neg();
    let useless_leaf = if flips < need { 2 } else { 0 };
    // Choosing v = m (m >= 2) flips card m onto position m: the boundary drops to at most
    // m - 1, so the child is pruned when even tail[m - 1] cannot reach the goal.
    let doomed_m = if flips + 1 + tail[(m as usize).wrapping_sub(1) & 63] < need {
        (1u64 << (m & 63)) & !3
    } else {
        0
    };
    unused & !(fixed | useless_leaf | doomed_m)
}

/// The leaf path of a concrete deck: the values of its cards the first time each reaches the
/// top, ending with 1 (its unique heads), together with its flip count. This is the path of
/// the leaf of the forward tree whose decks include this one. Fails for non-permutations.
pub fn leaf_path(deck: &[u8]) -> Result<(Vec<u8>, u64), String> {
    check_permutation(deck)?;
    let n = deck.len();
    // Positions hold origins; `seen` marks origins that reached the top.
    let mut origins: Vec<usize> = (0..n).collect();
    let mut seen = vec![false; n];
    let mut path = Vec::new();
    let mut flips = 0u64;
    loop {
        let o = origins[0];
        let value = deck[o];
        if !seen[o] {
            seen[o] = true;
            path.push(value);
        }
        if value == 1 {
            return Ok((path, flips));
        }
        origins[..value as usize].reverse();
        flips += 1;
    }
}
