//! The verifier's scorer: a plain replay of the game, written independently of the fast
//! scorer ([`super::scorer`]) so that each checks the other.

/// Flips `deck` takes, by replaying the game with `slice::reverse`. The deck must be a
/// permutation of 1..=n with 1 <= n <= [`super::scorer::MAX_CARDS`].
pub fn replay_flips(deck: &[u16]) -> Result<u64, String> {
    let n = deck.len();
    if n == 0 || n > super::scorer::MAX_CARDS {
        return Err(format!(
            "a deck has 1..={} cards, got {n}",
            super::scorer::MAX_CARDS
        ));
    }
    let mut present = vec![false; n];
    for &card in deck {
        let slot = (card as usize)
            .checked_sub(1)
            .filter(|&s| s < n)
            .ok_or_else(|| format!("card {card} is not in 1..={n}"))?;
        if present[slot] {
            return Err(format!("card {card} appears twice"));
        }
        present[slot] = true;
    }
    let mut cards = deck.to_vec();
    let mut flips = 0u64;
    while cards[0] != 1 {
        let top = cards[0] as usize;
        cards[..top].reverse();
        flips += 1;
    }
    Ok(flips)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every deck of up to 7 cards, scored by a replay on i64 values written here.
    #[test]
    fn agrees_with_a_brute_force_over_small_decks() {
        fn naive(deck: &[u16]) -> u64 {
            let mut d: Vec<i64> = deck.iter().map(|&c| i64::from(c)).collect();
            let mut count = 0;
            while d[0] != 1 {
                let k = d[0] as usize;
                let mut flipped: Vec<i64> = d[..k].iter().rev().copied().collect();
                flipped.extend_from_slice(&d[k..]);
                d = flipped;
                count += 1;
            }
            count
        }
        fn each(deck: &mut Vec<u16>, at: usize, best: &mut u64) {
            if at == deck.len() {
                let f = replay_flips(deck).unwrap();
                assert_eq!(f, naive(deck));
                *best = (*best).max(f);
                return;
            }
            for i in at..deck.len() {
                deck.swap(at, i);
                each(deck, at + 1, best);
                deck.swap(at, i);
            }
        }
        // OEIS A000375: 0, 1, 2, 4, 7, 10, 16.
        for (n, expected) in [(1, 0), (2, 1), (3, 2), (4, 4), (5, 7), (6, 10), (7, 16)] {
            let mut deck: Vec<u16> = (1..=n).collect();
            let mut best = 0;
            each(&mut deck, 0, &mut best);
            assert_eq!(best, expected, "n = {n}");
        }
    }

    #[test]
    fn malformed_decks_are_errors() {
        assert!(replay_flips(&[]).is_err());
        assert!(replay_flips(&[2, 2]).unwrap_err().contains("twice"));
        assert!(replay_flips(&[0]).unwrap_err().contains("not in"));
        assert!(replay_flips(&[1, 5, 2]).unwrap_err().contains("not in"));
    }
}
