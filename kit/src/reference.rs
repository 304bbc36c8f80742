//! Reference answers computed the plain way, independently of grind's solvers (never by
//! the code under test): a plain sieve of Eratosthenes for `primes`, the Grundy recurrence
//! and a triple loop for `nimsquare`, replay and every permutation of the deck for
//! `topswops`.

use grind_proto::v1 as pb;

/// Primes `p` with `lo <= p < hi`, by a plain sieve of Eratosthenes over `[0, hi)`.
pub fn primes_between(lo: u64, hi: u64) -> u64 {
    if hi <= 2 || lo >= hi {
        return 0;
    }
    let n = hi as usize;
    let mut composite = vec![false; n];
    let mut i = 2usize;
    while i * i < n {
        if !composite[i] {
            let mut j = i * i;
            while j < n {
                composite[j] = true;
                j += i;
            }
        }
        i += 1;
    }
    (lo.max(2) as usize..n).filter(|&k| !composite[k]).count() as u64
}

/// Decodes a `primes` unit payload (two little-endian u64: start, end); `None` when it is
/// shorter than 16 bytes.
pub fn primes_unit(payload: &[u8]) -> Option<(u64, u64)> {
    let start = u64::from_le_bytes(payload.get(0..8)?.try_into().ok()?);
    let end = u64::from_le_bytes(payload.get(8..16)?.try_into().ok()?);
    Some((start, end))
}

/// The true count of a leased `primes` unit. Panics when the grant is not one.
pub fn primes_in(grant: &pb::LeaseGrant) -> u64 {
    let (lo, hi) = primes_unit(&grant.unit_payload).expect("a primes unit payload");
    primes_between(lo, hi)
}

/// Project Euler 310 by brute force: Grundy values of one heap where a move removes a
/// non-zero square, then every triple `0 <= a <= b <= c <= n` whose values XOR to zero.
/// Cubic in `n`: meant for `n` up to a few hundred.
pub fn nimsquare_losing(n: u64) -> u64 {
    let n = n as usize;
    let mut grundy = vec![0usize; n + 1];
    for heap in 1..=n {
        let mut seen = vec![false; heap + 2];
        let mut s = 1;
        while s * s <= heap {
            let g = grundy[heap - s * s];
            if g < seen.len() {
                seen[g] = true;
            }
            s += 1;
        }
        grundy[heap] = seen.iter().position(|taken| !taken).unwrap_or(seen.len());
    }
    let mut losing = 0u64;
    for a in 0..=n {
        for b in a..=n {
            let ab = grundy[a] ^ grundy[b];
            losing += grundy[b..=n].iter().filter(|&&g| g == ab).count() as u64;
        }
    }
    losing
}

/// Flips Conway's Topswops takes on `deck` (cards `1..=n`, top first), by plain replay.
/// Panics on a card that is not an index.
pub fn topswops_flips<T: Copy + TryInto<usize>>(deck: &[T]) -> u64 {
    let mut deck: Vec<usize> = deck
        .iter()
        .map(|&card| {
            card.try_into()
                .unwrap_or_else(|_| panic!("card out of range"))
        })
        .collect();
    let mut flips = 0;
    while deck[0] != 1 {
        let k = deck[0];
        deck[..k].reverse();
        flips += 1;
    }
    flips
}

/// Calls `visit` with every deck of `n` cards (Heap's algorithm); stops when it returns
/// false.
pub fn for_each_deck(n: u8, mut visit: impl FnMut(&[u8]) -> bool) {
    let mut deck: Vec<u8> = (1..=n).collect();
    if !visit(&deck) {
        return;
    }
    let len = deck.len();
    let mut counters = vec![0usize; len];
    let mut i = 1;
    while i < len {
        if counters[i] < i {
            if i % 2 == 0 {
                deck.swap(0, i);
            } else {
                deck.swap(counters[i], i);
            }
            if !visit(&deck) {
                return;
            }
            counters[i] += 1;
            i = 1;
        } else {
            counters[i] = 0;
            i += 1;
        }
    }
}

/// f(n): the most flips over all `n!` decks of `n` cards.
pub fn topswops_max(n: u8) -> u64 {
    if n == 0 {
        return 0;
    }
    let mut best = 0;
    for_each_deck(n, |deck| {
        best = best.max(topswops_flips(deck));
        true
    });
    best
}

/// Some deck of `n` cards taking exactly `flips` flips, if there is one.
pub fn topswops_deck_with(n: u8, flips: u64) -> Option<Vec<u8>> {
    let mut found = None;
    for_each_deck(n, |deck| {
        if topswops_flips(deck) == flips {
            found = Some(deck.to_vec());
        }
        found.is_none()
    });
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primes_match_published_counts() {
        assert_eq!(primes_between(0, 100), 25);
        assert_eq!(primes_between(0, 1_000_000), 78_498);
        assert_eq!(primes_between(100, 200), 21);
        assert_eq!(primes_between(2, 3), 1);
        assert_eq!(primes_between(0, 2), 0);
    }

    #[test]
    fn nimsquare_matches_the_problem_statement() {
        // Project Euler 310: N = 29 gives 1160.
        assert_eq!(nimsquare_losing(29), 1160);
    }

    #[test]
    fn topswops_matches_oeis_a000375() {
        let expected = [0, 1, 2, 4, 7, 10, 16, 22];
        for (n, f) in (1..=8).zip(expected) {
            assert_eq!(topswops_max(n), f, "f({n})");
        }
        assert_eq!(topswops_flips(&[3, 1, 4, 5, 2]), 7);
        let deck = topswops_deck_with(6, 9).unwrap();
        assert_eq!(topswops_flips(&deck), 9);
        assert_eq!(topswops_deck_with(6, 11), None);
        assert_eq!(topswops_flips(&[3u64, 1, 4, 5, 2]), 7);
    }

    #[test]
    fn primes_units_decode() {
        let mut payload = 100u64.to_le_bytes().to_vec();
        payload.extend(200u64.to_le_bytes());
        assert_eq!(primes_unit(&payload), Some((100, 200)));
        assert_eq!(primes_unit(&payload[..15]), None);
    }
}
