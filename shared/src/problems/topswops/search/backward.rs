//! Pepperdine's backward search (see the parent module's docs, "Backward search"): the game
//! run in reverse from its last deck `1 ? ... ?`. A node is a deck of known and unknown cards
//! with its depth (the flips its decks take); child `k >= 2` un-flips position k (card k, or an
//! unknown card that becomes k when k is unused), child 1 is the leaf "this deck is the start".

use super::bits::{below, bit, top_bit};
use super::core::{Node, Tree};
use super::simd::Deck;
use super::tree::{Cards, LeafCards, PlainNode, Step};
use super::{NO_BOUND, UNKNOWN};

/// Entries of the backward DFS stack (a power of two): paths are as long as the games, at
/// most 2 f(n-1) + 2 (see [`max_depth`]).
pub(super) const STACK: usize = 512;

/// The longest backward path: until card n is un-flipped every un-flip is at most n - 1, so
/// the depth is at most f(n-1) (the top n - 1 positions play an (n-1)-card game); after it,
/// at most f(n-1) more (the frozen-tail bound with s <= n - 1); plus the un-flip and the leaf.
pub(super) fn max_depth(n: usize, tail: &[u32; 64]) -> u64 {
    if n < 2 {
        return 1;
    }
    2 * u64::from(tail[n - 1]) + 2
}

/// Fails when the paths of the backward tree for `n` cards, or `prefix`, may not fit the
/// stack.
pub(super) fn check_depth(n: usize, tail: &[u32; 64], prefix: &[u8]) -> Result<(), String> {
    let deepest = max_depth(n, tail);
    if deepest >= STACK as u64 || prefix.len() >= STACK {
        return Err(format!(
            "backward search: paths may reach {deepest} steps (2 f(n-1) + 2), more than the \
             {} it supports",
            STACK - 1
        ));
    }
    Ok(())
}

/// A node of the backward tree in plain bytes (used off the hot path).
#[derive(Clone, Debug)]
pub(super) struct Plain {
    /// The deck (unknown cards are `UNKNOWN`), its depth, values not on any known card (1 is
    /// always used), and the smallest `flips + tail[s]` on the way.
    cards: Cards,
}

impl PlainNode for Plain {
    const STEP: &'static str = "un-flip";
    const ALLOWED: &'static str = "legal";

    fn root(n: usize) -> Plain {
        let mut deck = [0u8; 32];
        deck[0] = 1;
        for b in deck.iter_mut().take(n).skip(1) {
            *b = UNKNOWN;
        }
        Plain {
            cards: Cards {
                deck,
                n,
                flips: 0,
                unused: below(n as u32 + 1) & !3,
                cap: NO_BOUND,
            },
        }
    }

    /// The legal un-flips, and the leaf (bit 1).
    fn branches(&self) -> u64 {
        let mut out = 2;
        for k in 2..=self.cards.n {
            let c = self.cards.deck[k - 1];
            if c as usize == k || (c == UNKNOWN && self.cards.unused & bit(k as u32) != 0) {
                out |= bit(k as u32);
            }
        }
        out
    }

    fn child(&self, v: u8, tail: &[u32; 64]) -> Step<Plain> {
        let mut c = self.clone();
        if v == 1 {
            return Step::Leaf(c);
        }
        let k = v as usize;
        c.cards.deck[k - 1] = v;
        c.cards.deck[..k].reverse();
        c.cards.unused &= !bit(k as u32);
        c.cards.flips += 1;
        let s = top_bit(c.branches() & !3);
        c.cards.cap = c.cards.cap.min(c.cards.flips + tail[s as usize & 63]);
        Step::Branch(c)
    }

    fn hopeless(&self, need: u32, _skip: bool) -> bool {
        self.cards.cap < need
    }

    fn cards(&self) -> &Cards {
        &self.cards
    }

    /// The unknown positions get the unused values.
    fn leaf_cards(&self) -> LeafCards {
        let n = self.cards.n;
        LeafCards {
            deck: self.cards.deck[..n].to_vec(),
            free: (0..n).filter(|&i| self.cards.deck[i] == UNKNOWN).collect(),
            values: (2..=n as u8)
                .filter(|&v| self.cards.unused & bit(v as u32) != 0)
                .collect(),
        }
    }
}

#[cfg(test)]
/// The backward path of a concrete deck (its flips' sizes, last first, then 1) and its flip
/// count: the leaf of the backward tree whose decks include this one.
pub fn leaf_path(deck: &[u8]) -> Result<(Vec<u8>, u64), String> {
    super::check_permutation(deck)?;
    let mut d = deck.to_vec();
    let mut sizes = Vec::new();
    while d[0] != 1 {
        let k = d[0] as usize;
        sizes.push(d[0]);
        d[..k].reverse();
    }
    let flips = sizes.len() as u64;
    sizes.reverse();
    sizes.push(1);
    Ok((sizes, flips))
}

/// The backward tree on the hot path: its tail bounds and the positions 2..=n.
#[derive(Clone, Copy)]
pub(super) struct Backward {
    tail: [u32; 64],
    /// Positions 2..=n as a bit mask.
    pos: u64,
    /// Whether decks with a fixed point are skipped. The search's `SKIP` constant says the
    /// same; this flag is read instead because the test it guards then stays a branch behind
    /// `flips >= need` (measured: the constant made it branch-free and the search ~5% slower).
    skip: bool,
}

impl Backward {
    /// The backward tree for `n` cards; `skip`: decks with a fixed point are not wanted.
    pub(super) fn new(n: usize, tail: [u32; 64], skip: bool) -> Backward {
        Backward {
            tail,
            pos: below(n as u32 + 1) & !3,
            skip,
        }
    }
}

impl Tree for Backward {
    type Plain = Plain;
    type Extra = ();

    #[inline(always)]
    fn extra(_plain: &Plain) {}

    #[inline(always)]
    fn children<D: Deck, const SKIP: bool>(&self, node: &Node<D, ()>, need: u32) -> u64 {
        let moves = legal(node.deck, node.unused, self.pos);
        children(node.deck, moves, node.flips, need, self.skip, self.pos)
    }

    /// The child un-flipping position `k` (see the module docs: the child's highest legal
    /// position s caps what its leaves reach at `flips + 1 + f(s)`, one less when the un-flip
    /// dropped s below k and another card of positions 2..=s can never reach the top).
    #[inline(always)]
    fn branch<D: Deck, const SKIP: bool>(
        &self,
        node: &Node<D, ()>,
        k: u32,
        need: u32,
    ) -> Option<(Node<D, ()>, u64)> {
        let pos = self.pos;
        let x = node.deck.flip(k).set_top(k);
        let unused = node.unused & !bit(k);
        let moves = legal(x, unused, pos);
        let s = top_bit(moves);
        let flips = node.flips + 1;
        let reach = flips + self.tail[s as usize & 63];
        if reach < need || (reach == need && s < k && s >= 2 && second_inert(x, s, unused)) {
            return None;
        }
        let child = Node {
            deck: x,
            flips,
            unused,
            extra: (),
        };
        Some((child, children(x, moves, flips, need, self.skip, pos)))
    }
}

/// Legal un-flips of a SIMD deck (bit k = un-flip position k, k >= 2).
#[inline(always)]
fn legal<D: Deck>(deck: D, unused: u64, positions: u64) -> u64 {
    ((deck.matches() | (deck.unknowns() & (unused >> 1))) << 1) & positions
}

/// The children worth trying at a node with legal un-flips `moves`: those, and the leaf when
/// the flips reach the goal (and, when skipping fixed points, no known card k >= 2 is at
/// position k).
#[inline(always)]
fn children<D: Deck>(deck: D, moves: u64, flips: u32, need: u32, skip: bool, pos: u64) -> u64 {
    let fixed = skip && (deck.matches() << 1) & pos != 0;
    let leaf = if flips >= need && !fixed { 2 } else { 0 };
    moves | leaf
}

/// Whether positions 2..=s hold a card that can never reach the top again while the game stays
/// within the top s positions: card 1, a known card above s, or an unknown card beyond the
/// number of unused values 2..=s.
#[cold]
#[inline(never)]
fn second_inert<D: Deck>(x: D, s: u32, unused: u64) -> bool {
    let lanes = below(s) & !1;
    if x.inert(s) & lanes != 0 {
        return true;
    }
    (x.unknowns() & lanes).count_ones() > (unused & below(s + 1)).count_ones()
}
