//! The unique heads representation: the cards in the order they first reach the top, up to
//! and including 1, followed by the cards that never reach the top in their deck order.
//! It is a bijection between decks of n cards and permutations of 1..=n (both directions
//! are exact). When every card reaches the top (the decks worth growing), the sequence
//! ends with 1, and a prefix of heads followed by 1 is itself a valid deck whose flips are
//! the prefix's share of the whole game: the basis of block growth.

use super::scorer::{check_deck, Card, Kernel};

/// The unique heads sequence of `deck` (a permutation of 1..=n).
pub fn to_heads(deck: &[Card]) -> Result<Vec<Card>, String> {
    check_deck(deck)?;
    let n = deck.len();
    let kernel = Kernel::detect();
    let mut seen = vec![false; n + 1];
    let mut heads = Vec::with_capacity(n);
    let mut cards = deck.to_vec();
    loop {
        let top = cards[0];
        if !std::mem::replace(&mut seen[top as usize], true) {
            heads.push(top);
        }
        if top == 1 {
            break;
        }
        kernel.reverse(&mut cards, top as usize);
    }
    heads.extend(deck.iter().copied().filter(|&c| !seen[c as usize]));
    Ok(heads)
}

/// The deck whose unique heads are `heads` (a permutation of 1..=n).
pub fn to_deck(heads: &[Card]) -> Result<Vec<Card>, String> {
    check_deck(heads).map_err(|e| format!("unique heads: {e}"))?;
    let n = heads.len();
    let kernel = Kernel::detect();
    // cards: the deck now (0 = hole); origin: each slot's position in the original deck.
    let mut cards: Vec<Card> = vec![0; n];
    let mut origin: Vec<Card> = (0..n).map(|p| p as Card).collect();
    let mut deck: Vec<Card> = vec![0; n];
    let mut next = 0;
    loop {
        if cards[0] == 0 {
            let value = heads[next];
            next += 1;
            cards[0] = value;
            deck[origin[0] as usize] = value;
            if value == 1 {
                break;
            }
        }
        let top = cards[0] as usize;
        kernel.reverse(&mut cards, top);
        kernel.reverse(&mut origin, top);
    }
    // The holes left never reach the top: they take the remaining values in deck order.
    let mut untouched: Vec<usize> = (0..n)
        .filter(|&p| cards[p] == 0)
        .map(|p| origin[p] as usize)
        .collect();
    untouched.sort_unstable();
    for (position, &value) in untouched.iter().zip(&heads[next..]) {
        deck[*position] = value;
    }
    Ok(deck)
}

/// The length of the heads prefix that ends with 1 (the cards that reach the top).
pub fn visited(heads: &[Card]) -> usize {
    heads
        .iter()
        .position(|&c| c == 1)
        .map_or(heads.len(), |p| p + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problems::topswops::replay::replay_flips;
    use proptest::prelude::*;

    #[test]
    fn the_classic_deck_has_heads_3_4_5_2_1() {
        assert_eq!(to_heads(&[3, 1, 4, 5, 2]).unwrap(), vec![3, 4, 5, 2, 1]);
        assert_eq!(to_deck(&[3, 4, 5, 2, 1]).unwrap(), vec![3, 1, 4, 5, 2]);
        assert_eq!(replay_flips(&[3, 1, 4, 5, 2]), Ok(7));
    }

    #[test]
    fn cards_that_never_reach_the_top_keep_their_order() {
        // 2 1 4 3: one flip, then 1 is on top; 4 and 3 never move to the top.
        assert_eq!(to_heads(&[2, 1, 4, 3]).unwrap(), vec![2, 1, 4, 3]);
        assert_eq!(to_deck(&[2, 1, 4, 3]).unwrap(), vec![2, 1, 4, 3]);
        assert_eq!(to_heads(&[1, 3, 2]).unwrap(), vec![1, 3, 2]);
        assert_eq!(visited(&[2, 1, 4, 3]), 2);
    }

    #[test]
    fn every_deck_of_six_cards_round_trips_and_heads_are_distinct() {
        let mut deck: Vec<Card> = (1..=6).collect();
        let mut all = std::collections::HashSet::new();
        fn each(deck: &mut Vec<Card>, at: usize, all: &mut std::collections::HashSet<Vec<Card>>) {
            if at == deck.len() {
                let heads = to_heads(deck).unwrap();
                assert_eq!(&to_deck(&heads).unwrap(), deck);
                assert!(all.insert(heads));
                return;
            }
            for i in at..deck.len() {
                deck.swap(at, i);
                each(deck, at + 1, all);
                deck.swap(at, i);
            }
        }
        each(&mut deck, 0, &mut all);
        assert_eq!(all.len(), 720);
    }

    #[test]
    fn malformed_sequences_are_errors() {
        assert!(to_deck(&[2, 2, 1]).unwrap_err().contains("unique heads"));
        assert!(to_deck(&[]).is_err());
        assert!(to_heads(&[4, 1, 2]).is_err());
    }

    fn permutation(n: usize) -> impl Strategy<Value = Vec<Card>> {
        Just((1..=n as Card).collect::<Vec<_>>()).prop_shuffle()
    }

    proptest! {
        #[test]
        fn decks_round_trip(deck in (1usize..600).prop_flat_map(permutation)) {
            let heads = to_heads(&deck).unwrap();
            prop_assert_eq!(to_deck(&heads).unwrap(), deck);
        }

        #[test]
        fn heads_round_trip(heads in (1usize..600).prop_flat_map(permutation)) {
            let deck = to_deck(&heads).unwrap();
            prop_assert_eq!(to_heads(&deck).unwrap(), heads);
        }

        #[test]
        fn heads_ending_in_one_visit_every_card(heads in (2usize..400).prop_flat_map(permutation)) {
            let mut heads = heads;
            let one = heads.iter().position(|&c| c == 1).unwrap();
            heads.remove(one);
            heads.push(1);
            let deck = to_deck(&heads).unwrap();
            prop_assert_eq!(visited(&to_heads(&deck).unwrap()), deck.len());
        }
    }
}
