//! Upper-bound certificates for Ginnow's sieve, and their checker: integer arithmetic only,
//! independent of the matching, the LP and the cut finder that produce them (it shares no
//! code with [`super::matching`], [`super::cuts`] or [`super::regions`]; it works the
//! divisibility graph out itself).
//!
//! # What a certificate proves
//!
//! Let P be the largest prime <= N. Some optimal game plays P first: P > N/2 (Bertrand), so
//! P is selectable only while 1 is in the list, that is as the first move; a game whose
//! first move is another prime q can play P in q's place (q staying in the list harms no
//! later move: every later move keeps the divisor it had), and a game starting with a
//! composite can play P in front of it; both gain. So opt(N) is the best game that starts
//! with P, whose pairs (each move with a principal factor k/p, p prime) are (P, 1) plus a
//! matching M of the graph G' on 2..=N without P, edges k - k/p.
//!
//! A certificate lists *cuts* (S, T, λ): numbers S and factors T, disjoint, of one size,
//! such that every bijection of S onto T along edges has a precedence cycle (pair i before
//! pair j whenever i's factor divides j's number), so no game holds all |S| of them and
//! every game has at most |S| - 1 edges from S into T; and *potentials* y_v >= 0 with
//!
//! ```text
//! y_k + y_b + Σ_{cuts c with k in S_c, b in T_c} λ_c  >=  k     for every edge k - b of G'.
//! ```
//!
//! Then for every such game, with M its edges in G',
//! `score = P + Σ_{e in M} w_e <= P + Σ_{e in M} (y_k + y_b) + Σ_c λ_c |M ∩ E_c|
//! <= P + Σ_v y_v + Σ_c λ_c (|S_c| - 1)` (M is a matching, y >= 0, λ >= 0), which is the
//! certified bound ([`check`]).
//!
//! # Text form
//!
//! ```text
//! # comment lines
//! n 1500
//! bound 355555
//! cut 6,10,15 2,3,5 4          (S, T, λ)
//! y 2:1 3:2 7:7 ...            (number:potential, potentials of 0 left out)
//! ```
//!
//! With a line `derive upper` the potentials of the numbers above N/2 are left out: those
//! numbers are never a factor (2k > N), so no two of them share an edge and every neighbour
//! of one is at most N/2; the checker gives each the least potential its edges allow,
//! `max(0, max_b (k - λ(k, b) - y_b))`, which keeps every constraint and the argument above
//! (and roughly halves the file).

use std::collections::HashMap;
use std::fmt::Write as _;

/// Most numbers in a cut's S (bijections are enumerated, cut short at the first cycle; the
/// cut finder has produced clusters of 14 at N = 1019).
pub const MAX_CUT: usize = 32;

/// A cluster cut with its penalty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertCut {
    /// S, increasing.
    pub numbers: Vec<u32>,
    /// T, increasing.
    pub factors: Vec<u32>,
    /// λ >= 0.
    pub penalty: i64,
}

/// An upper-bound certificate for one N (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Certificate {
    /// N.
    pub n: u32,
    /// The bound it claims.
    pub bound: i64,
    /// The cuts.
    pub cuts: Vec<CertCut>,
    /// Potentials y_v > 0 as (v, y_v), v increasing; numbers not listed have potential 0.
    pub potentials: Vec<(u32, i64)>,
    /// Potentials of the numbers above N/2 are not listed but derived (module docs).
    pub derive_upper: bool,
}

/// Whether `k` is prime (trial division).
fn is_prime(k: u32) -> bool {
    k >= 2
        && (2..)
            .take_while(|d| d * d <= k)
            .all(|d| !k.is_multiple_of(d))
}

/// Largest prime <= n (n >= 2).
fn largest_prime_upto(n: u32) -> u32 {
    (2..=n).rev().find(|&k| is_prime(k)).unwrap_or(2)
}

/// Distinct primes of `k`.
fn primes_of(mut k: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut d = 2;
    while d * d <= k {
        if k.is_multiple_of(d) {
            out.push(d);
            while k.is_multiple_of(d) {
                k /= d;
            }
        }
        d += 1;
    }
    if k > 1 {
        out.push(k);
    }
    out
}

/// Whether k - b is an edge of the graph: b divides k and k / b is prime.
fn is_edge(k: u32, b: u32) -> bool {
    b >= 1 && b < k && k.is_multiple_of(b) && is_prime(k / b)
}

/// Whether the last of the pairs lies on a precedence cycle among them (pair i before pair
/// j when i's factor divides j's number, i != j): some pair reachable from the last one
/// along that order has a factor dividing the last one's number. When the pairs before the
/// last have no cycle, this is whether the pairs have one (a new cycle runs through the new
/// pair).
fn closes_cycle(pairs: &[(u32, u32)]) -> bool {
    let Some((&(number, _), _)) = pairs.split_last() else {
        return false;
    };
    let last = pairs.len() - 1;
    let mut seen = vec![false; pairs.len()];
    let mut stack = vec![last];
    seen[last] = true;
    while let Some(u) = stack.pop() {
        let factor = pairs[u].1;
        if u != last && number.is_multiple_of(factor) {
            return true;
        }
        for (v, &(k, _)) in pairs.iter().enumerate() {
            if v != u && !seen[v] && k.is_multiple_of(factor) {
                seen[v] = true;
                stack.push(v);
            }
        }
    }
    false
}

/// True when some bijection of `numbers[at..]` onto the unused factors along edges, with
/// `chosen`, has no precedence cycle.
fn some_acyclic_bijection(
    numbers: &[u32],
    factors: &[u32],
    at: usize,
    used: &mut [bool],
    chosen: &mut Vec<(u32, u32)>,
) -> bool {
    // A cycle among the pairs chosen so far is in every completion. The pairs before the
    // last had none (else the search would not have gone on), so a cycle runs through the
    // last.
    if closes_cycle(chosen) {
        return false;
    }
    if at == numbers.len() {
        return true;
    }
    for (i, &b) in factors.iter().enumerate() {
        if used[i] || !is_edge(numbers[at], b) {
            continue;
        }
        used[i] = true;
        chosen.push((numbers[at], b));
        let found = some_acyclic_bijection(numbers, factors, at + 1, used, chosen);
        chosen.pop();
        used[i] = false;
        if found {
            return true;
        }
    }
    false
}

/// Checks one cut: shape, range, and that every bijection S -> T along edges is cyclic.
fn check_cut(n: u32, cut: &CertCut) -> Result<(), String> {
    let (s, t) = (&cut.numbers, &cut.factors);
    let increasing = |v: &[u32]| v.windows(2).all(|w| w[0] < w[1]);
    if s.len() != t.len() || s.len() < 2 || s.len() > MAX_CUT {
        return Err(format!("cut {s:?} {t:?}: sizes must match, 2..={MAX_CUT}"));
    }
    if !increasing(s) || !increasing(t) {
        return Err(format!("cut {s:?} {t:?}: not increasing"));
    }
    if s.iter().chain(t).any(|&v| v < 1 || v > n) {
        return Err(format!("cut {s:?} {t:?}: a number outside 1..={n}"));
    }
    if s.iter().any(|k| t.contains(k)) {
        return Err(format!("cut {s:?} {t:?}: S and T overlap"));
    }
    if cut.penalty < 0 {
        return Err(format!("cut {s:?} {t:?}: negative penalty {}", cut.penalty));
    }
    let mut used = vec![false; t.len()];
    if some_acyclic_bijection(s, t, 0, &mut used, &mut Vec::new()) {
        return Err(format!(
            "cut {s:?} {t:?}: not a cluster (an acyclic bijection)"
        ));
    }
    Ok(())
}

/// The edges k - b of G' (numbers 2..=n without `p`).
fn edges(n: u32, p: u32) -> impl Iterator<Item = (u32, u32)> {
    (2..=n).filter(move |&k| k != p).flat_map(move |k| {
        primes_of(k)
            .into_iter()
            .map(move |q| (k, k / q))
            .filter(move |&(_, b)| b != 1 && b != p)
    })
}

/// Penalty of each edge: the sum of the penalties of the cuts holding it.
fn edge_penalties(cuts: &[CertCut]) -> HashMap<(u32, u32), i64> {
    let mut out: HashMap<(u32, u32), i64> = HashMap::new();
    for c in cuts {
        for &k in &c.numbers {
            for &b in &c.factors {
                if is_edge(k, b) {
                    *out.entry((k, b)).or_default() += c.penalty;
                }
            }
        }
    }
    out
}

/// Checks a certificate (see the module docs) and returns the bound it proves, which must
/// equal the bound it claims. Errors name the first thing wrong.
pub fn check(cert: &Certificate) -> Result<i64, String> {
    let bound = proven_bound(cert)?;
    if bound != cert.bound {
        return Err(format!(
            "N = {}: the certificate proves {bound}, it claims {}",
            cert.n, cert.bound
        ));
    }
    Ok(bound)
}

/// Checks everything but the claimed bound and returns the bound the certificate proves.
pub fn proven_bound(cert: &Certificate) -> Result<i64, String> {
    let n = cert.n;
    if !(2..=100_000).contains(&n) {
        return Err(format!("N = {n} outside 2..=100000"));
    }
    let p = largest_prime_upto(n);
    for cut in &cert.cuts {
        check_cut(n, cut)?;
    }
    let mut y = vec![0i64; n as usize + 1];
    let mut last = 0;
    for &(v, value) in &cert.potentials {
        if v <= last || v > n {
            return Err(format!(
                "potential of {v}: numbers must increase within 2..={n}"
            ));
        }
        if v == 1 || v == p {
            return Err(format!(
                "potential of {v}: 1 and P = {p} are not in the graph"
            ));
        }
        if cert.derive_upper && v > n / 2 {
            return Err(format!("potential of {v}: derived above N/2, not listed"));
        }
        if value < 0 {
            return Err(format!("potential of {v} is negative"));
        }
        y[v as usize] = value;
        last = v;
    }
    let penalties = edge_penalties(&cert.cuts);
    // Each edge with its penalty (looked up only for the numbers some cut holds).
    let mut in_cut = vec![false; n as usize + 1];
    for c in &cert.cuts {
        for &k in &c.numbers {
            in_cut[k as usize] = true;
        }
    }
    let all: Vec<(u32, u32, i64)> = edges(n, p)
        .map(|(k, b)| {
            let lambda = if in_cut[k as usize] {
                penalties.get(&(k, b)).copied().unwrap_or(0)
            } else {
                0
            };
            (k, b, lambda)
        })
        .collect();
    if cert.derive_upper {
        // Numbers above N/2 are only ever the larger end; their neighbours' potentials are
        // all listed.
        for &(k, b, lambda) in all.iter().filter(|e| e.0 > n / 2) {
            let need = i64::from(k) - lambda - y[b as usize];
            y[k as usize] = y[k as usize].max(need);
        }
    }
    for &(k, b, lambda) in &all {
        if y[k as usize] + y[b as usize] + lambda < i64::from(k) {
            return Err(format!(
                "edge {k} - {b}: y = {} + {} and penalties {lambda} fall short of {k}",
                y[k as usize], y[b as usize]
            ));
        }
    }
    let promise: i64 = cert
        .cuts
        .iter()
        .map(|c| c.penalty * (c.numbers.len() as i64 - 1))
        .sum();
    Ok(i64::from(p) + y.iter().sum::<i64>() + promise)
}

fn numbers(text: &str) -> Result<Vec<u32>, String> {
    text.split(',')
        .map(|x| x.parse().map_err(|_| format!("not a number: {x:?}")))
        .collect()
}

impl Certificate {
    /// The text form (module docs).
    pub fn to_text(&self) -> String {
        let join = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        let mut out = format!("n {}\nbound {}\n", self.n, self.bound);
        if self.derive_upper {
            out.push_str("derive upper\n");
        }
        for c in &self.cuts {
            let _ = writeln!(
                out,
                "cut {} {} {}",
                join(&c.numbers),
                join(&c.factors),
                c.penalty
            );
        }
        out.push('y');
        for (v, value) in &self.potentials {
            let _ = write!(out, " {v}:{value}");
        }
        out.push('\n');
        out
    }

    /// Parses the text form; errors name the line.
    pub fn parse(text: &str) -> Result<Certificate, String> {
        let mut cert = Certificate {
            n: 0,
            bound: 0,
            cuts: Vec::new(),
            potentials: Vec::new(),
            derive_upper: false,
        };
        let (mut seen_n, mut seen_bound) = (false, false);
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |why: String| format!("certificate line {}: {why}", i + 1);
            let mut words = line.split_whitespace();
            match words.next() {
                Some("n") => {
                    cert.n = words
                        .next()
                        .and_then(|w| w.parse().ok())
                        .ok_or_else(|| bad("n needs a number".into()))?;
                    seen_n = true;
                }
                Some("bound") => {
                    cert.bound = words
                        .next()
                        .and_then(|w| w.parse().ok())
                        .ok_or_else(|| bad("bound needs a number".into()))?;
                    seen_bound = true;
                }
                Some("derive") if words.next() == Some("upper") => cert.derive_upper = true,
                Some("cut") => {
                    let parts: Vec<&str> = words.collect();
                    let [s, t, l] = parts[..] else {
                        return Err(bad("cut needs S, T and a penalty".into()));
                    };
                    cert.cuts.push(CertCut {
                        numbers: numbers(s).map_err(bad)?,
                        factors: numbers(t).map_err(bad)?,
                        penalty: l.parse().map_err(|_| bad(format!("penalty {l:?}")))?,
                    });
                }
                Some("y") => {
                    for w in words {
                        let (v, value) = w
                            .split_once(':')
                            .and_then(|(v, y)| Some((v.parse().ok()?, y.parse().ok()?)))
                            .ok_or_else(|| bad(format!("potential {w:?}")))?;
                        cert.potentials.push((v, value));
                    }
                }
                Some(other) => return Err(bad(format!("unknown line {other:?}"))),
                None => {}
            }
        }
        if !seen_n || !seen_bound {
            return Err("certificate: needs an n line and a bound line".into());
        }
        Ok(cert)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Opt(N) by brute force over move orders (small N only).
    fn brute_force(n: u32) -> i64 {
        fn go(list: &mut Vec<bool>, n: u32) -> i64 {
            let mut best = 0;
            for k in 2..=n {
                if !list[k as usize] {
                    continue;
                }
                let divisors: Vec<u32> =
                    (1..k).filter(|d| k % d == 0 && list[*d as usize]).collect();
                if divisors.is_empty() {
                    continue;
                }
                list[k as usize] = false;
                for &d in &divisors {
                    list[d as usize] = false;
                }
                best = best.max(i64::from(k) + go(list, n));
                list[k as usize] = true;
                for &d in &divisors {
                    list[d as usize] = true;
                }
            }
            best
        }
        go(&mut vec![true; n as usize + 1], n)
    }

    /// The trivial certificate: y_k = k on every number that has an edge as the larger
    /// end, no cuts.
    fn trivial(n: u32) -> Certificate {
        let p = largest_prime_upto(n);
        let potentials: Vec<(u32, i64)> = (2..=n)
            .filter(|&k| k != p && edges(n, p).any(|(big, _)| big == k))
            .map(|k| (k, i64::from(k)))
            .collect();
        let bound = i64::from(p) + potentials.iter().map(|x| x.1).sum::<i64>();
        Certificate {
            n,
            bound,
            cuts: Vec::new(),
            potentials,
            derive_upper: false,
        }
    }

    /// Whether the pairs have a precedence cycle: pairs with no predecessor left are dropped
    /// until none is; a cycle is what remains.
    fn has_cycle(pairs: &[(u32, u32)]) -> bool {
        let m = pairs.len();
        let mut alive = vec![true; m];
        loop {
            let removable = (0..m).find(|&j| {
                alive[j]
                    && !(0..m).any(|i| i != j && alive[i] && pairs[j].0.is_multiple_of(pairs[i].1))
            });
            match removable {
                Some(j) => alive[j] = false,
                None => return alive.iter().any(|&a| a),
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn a_new_cycle_is_found_through_the_last_pair(
            raw in proptest::collection::vec((2u32..60, 2u32..30), 1..9)
        ) {
            // Grow the pairs one at a time while they stay acyclic, as the search does.
            let mut pairs: Vec<(u32, u32)> = Vec::new();
            for &(k, b) in &raw {
                pairs.push((k, b));
                proptest::prop_assert_eq!(closes_cycle(&pairs), has_cycle(&pairs), "{:?}", pairs);
                if has_cycle(&pairs) {
                    break;
                }
            }
        }
    }

    #[test]
    fn the_classic_cluster_is_a_cut_and_an_acyclic_set_is_not() {
        let cut = |s: Vec<u32>, t: Vec<u32>| CertCut {
            numbers: s,
            factors: t,
            penalty: 1,
        };
        assert!(check_cut(30, &cut(vec![6, 10, 15], vec![2, 3, 5])).is_ok());
        // (10, 2), (15, 5): 5 | 10 but 2 does not divide 15, acyclic.
        let err = check_cut(30, &cut(vec![10, 15], vec![2, 5])).unwrap_err();
        assert!(err.contains("not a cluster"), "{err}");
        assert!(check_cut(30, &cut(vec![6, 9], vec![3, 6])).is_err());
        assert!(check_cut(10, &cut(vec![6, 10, 15], vec![2, 3, 5])).is_err());
    }

    #[test]
    fn certified_bounds_are_at_least_the_brute_force_optimum() {
        for n in 2..=18 {
            let cert = trivial(n);
            let bound = check(&cert).unwrap();
            assert!(bound >= brute_force(n), "n = {n}");
        }
    }

    #[test]
    fn a_short_potential_or_a_wrong_claim_is_refused() {
        let mut cert = trivial(30);
        assert!(check(&cert).is_ok());
        cert.bound += 1;
        assert!(check(&cert).unwrap_err().contains("claims"));
        cert.bound -= 1;
        // 22's neighbours in G' (11 and 2, whose only other edge goes to 1) have potential 0.
        let at = cert.potentials.iter().position(|p| p.0 == 22).unwrap();
        cert.potentials[at].1 -= 1;
        assert!(check(&cert).unwrap_err().contains("fall short"));
    }

    #[test]
    fn upper_half_derived_is_a_valid_certificate_no_weaker() {
        let full = trivial(60);
        let bound = check(&full).unwrap();
        let mut half = full.clone();
        half.potentials.retain(|&(v, _)| v <= 30);
        half.derive_upper = true;
        let proven = proven_bound(&half).unwrap();
        assert!(proven <= bound && proven >= brute_force(18).min(proven));
        half.bound = proven;
        assert_eq!(check(&half), Ok(proven));
        // Listing a potential above N/2 as well is refused.
        half.potentials.push((58, 1));
        assert!(check(&half).unwrap_err().contains("derived above"));
    }

    #[test]
    fn text_form_round_trips_and_bad_lines_are_named() {
        let mut cert = trivial(30);
        cert.cuts.push(CertCut {
            numbers: vec![6, 10, 15],
            factors: vec![2, 3, 5],
            penalty: 0,
        });
        let parsed = Certificate::parse(&cert.to_text()).unwrap();
        assert_eq!(parsed, cert);
        assert!(Certificate::parse("n 30\nbound 5\ncut 1,2 3\n")
            .unwrap_err()
            .contains("line 3"));
        assert!(Certificate::parse("bound 5\n").is_err());
    }
}
