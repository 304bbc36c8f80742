//! Independent reference answers, computed here the plain way (never by the code under test).

use grind_proto::v1 as pb;

/// Topswops flips of a deck by plain replay (independent of the coordinator's verifier).
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

/// Primes in [lo, hi) by trial division: an independent reference for the calibration problem.
pub fn primes_between(lo: u64, hi: u64) -> u64 {
    (lo..hi)
        .filter(|&n| {
            n >= 2
                && (2..)
                    .take_while(|d| d * d <= n)
                    .all(|d| !n.is_multiple_of(d))
        })
        .count() as u64
}

/// Decodes a primes unit payload (two little-endian u64: start, end).
pub fn primes_unit(payload: &[u8]) -> (u64, u64) {
    let start = u64::from_le_bytes(payload[0..8].try_into().unwrap());
    let end = u64::from_le_bytes(payload[8..16].try_into().unwrap());
    (start, end)
}

/// The true count of a leased primes unit.
pub fn primes_in(grant: &pb::LeaseGrant) -> u64 {
    let (lo, hi) = primes_unit(&grant.unit_payload);
    primes_between(lo, hi)
}
