//! `Problem::check_donation` against real donations: every donation the topswops and sieve
//! solvers make while splitting as eagerly as they can is accepted, and the same donations
//! tampered with (shrunk with nothing donated, a piece twice, a piece outside the unit, a
//! piece holding the unit's best dropped) are refused.

use grind_shared::problem::Problem;
use grind_shared::problems::topswops::search::Direction;
use grind_shared::registry::lookup;
use serde_json::{json, Value};
use std::sync::Arc;

/// Where an eager observer hands its donations (true: accepted).
type Donor<'a, T> = &'a mut dyn FnMut(Vec<Vec<T>>, Vec<T>) -> bool;

/// One donation as the coordinator receives it.
#[derive(Clone, Debug)]
struct Donation {
    old: Vec<u8>,
    remaining: Vec<u8>,
    donated: Vec<Vec<u8>>,
}

fn build(name: &str, params: Value) -> Arc<dyn Problem> {
    lookup(name).unwrap().build(&params).unwrap().1
}

/// Drives a path-range search from the root, asking for a split at every look (at most
/// `per_unit` per unit), and records every donation as payloads.
fn drive<T: Clone>(
    root: Vec<T>,
    per_unit: usize,
    mut search: impl FnMut(&[T], Option<&[T]>, &mut dyn FnMut(Vec<Vec<T>>, Vec<T>) -> bool),
    encode: impl Fn(&[T], Option<&[T]>) -> Vec<u8>,
) -> Vec<Donation> {
    let mut queue = vec![root];
    let mut all = Vec::new();
    while let Some(path) = queue.pop() {
        let mut limit: Option<Vec<T>> = None;
        let mut made = 0;
        search(
            &path,
            None,
            &mut |prefixes: Vec<Vec<T>>, new_limit: Vec<T>| {
                if made >= per_unit || all.len() >= 300 {
                    return false;
                }
                made += 1;
                all.push(Donation {
                    old: encode(&path, limit.as_deref()),
                    remaining: encode(&path, Some(&new_limit)),
                    donated: prefixes.iter().map(|p| encode(p, None)).collect(),
                });
                queue.extend(prefixes);
                limit = Some(new_limit);
                true
            },
        );
    }
    all
}

mod topswops_driver {
    use super::*;
    use grind_shared::problems::topswops::search::{Direction, Mode, Observer, Searcher};
    use grind_shared::problems::topswops::TopswopsUnit;
    use std::cell::RefCell;

    struct Eager<'a> {
        bound: u32,
        donate: RefCell<Donor<'a, u8>>,
    }

    impl Observer for Eager<'_> {
        fn bound(&self) -> Option<u32> {
            Some(self.bound)
        }
        fn found(&self, _deck: &[u8], _flips: u32) {}
        fn should_split(&self) -> bool {
            true
        }
        fn donate(&self, prefixes: Vec<Vec<u8>>, new_limit: Vec<u8>) {
            (self.donate.borrow_mut())(prefixes, new_limit);
        }
    }

    /// Every donation of an eager n = 8 search (f(1..7) = 0 1 2 4 7 10 16, OEIS A000375).
    pub fn donations(direction: Direction) -> Vec<Donation> {
        let mut searcher = Searcher::new(8, vec![0, 0, 1, 2, 4, 7, 10, 16]).unwrap();
        searcher.set_direction(direction);
        searcher.set_skip_fixed_points(true);
        searcher.set_check_interval(32);
        drive(
            Vec::new(),
            4,
            |path, limit, donate| {
                let eager = Eager {
                    bound: 16,
                    donate: RefCell::new(donate),
                };
                searcher
                    .search(path, None, limit, Mode::Discover, &eager)
                    .unwrap();
            },
            |path, limit| {
                TopswopsUnit {
                    prefix: path.to_vec(),
                    limit: limit.map(<[u8]>::to_vec),
                }
                .encode()
            },
        )
    }
}

mod sieve_driver {
    use super::*;
    use grind_shared::problems::sieve::search::{Observer, Searcher};
    use grind_shared::problems::sieve::unit::SieveUnit;
    use std::cell::RefCell;

    struct Eager<'a> {
        bound: Option<i64>,
        donate: RefCell<Donor<'a, u16>>,
    }

    impl Observer for Eager<'_> {
        fn bound(&self) -> Option<i64> {
            self.bound
        }
        fn found(&self, _moves: &[u32], _score: i64) {}
        fn should_split(&self) -> bool {
            true
        }
        fn donate(&self, prefixes: Vec<Vec<u16>>, limit: Vec<u16>) -> bool {
            (self.donate.borrow_mut())(prefixes, limit)
        }
    }

    /// Every donation of an eager search of the sieve for `n` under `bound`.
    pub fn donations(n: u32, bound: Option<i64>) -> Vec<Donation> {
        let mut searcher = Searcher::new(n);
        searcher.set_check_interval(2);
        drive(
            Vec::new(),
            4,
            |path, limit, donate| {
                let eager = Eager {
                    bound,
                    donate: RefCell::new(donate),
                };
                searcher.search(path, None, limit, &eager).unwrap();
            },
            |path, limit| {
                SieveUnit::Exact {
                    path: path.to_vec(),
                    limit: limit.map(<[u16]>::to_vec),
                }
                .encode()
            },
        )
    }
}

/// `dropping_matters`: some donated piece holds work past the campaign's bound, so dropping
/// it must be refused at least once (the sieve's strong starting bound prunes every piece of
/// small instances at once: dropping one is then rightly accepted).
fn check_real_donations(problem: &dyn Problem, donations: Vec<Donation>, dropping_matters: bool) {
    assert!(donations.len() >= 5, "only {} donations", donations.len());
    let bound = problem.initial_bound();
    let mut dropped_refused = 0;
    for d in &donations {
        problem
            .check_donation(&d.old, &d.remaining, &d.donated, bound)
            .unwrap_or_else(|e| panic!("honest donation {d:?} refused: {e}"));
        // Shrunk, nothing donated.
        assert!(problem
            .check_donation(&d.old, &d.remaining, &[], bound)
            .is_err());
        // A piece twice.
        let mut twice = d.donated.clone();
        twice.push(twice.last().unwrap().clone());
        assert!(problem
            .check_donation(&d.old, &d.remaining, &twice, bound)
            .is_err());
        // The donor's whole unit donated again (it contains the kept part: overlap/outside).
        let mut whole = d.donated.clone();
        whole.push(d.old.clone());
        assert!(problem
            .check_donation(&d.old, &d.remaining, &whole, bound)
            .is_err());
        // A piece dropped: refused unless the coordinator's own gap search shows it empty.
        if d.donated.len() >= 2 {
            let mut fewer = d.donated.clone();
            fewer.remove(1);
            if problem
                .check_donation(&d.old, &d.remaining, &fewer, bound)
                .is_err()
            {
                dropped_refused += 1;
            }
        }
    }
    assert!(
        !dropping_matters || dropped_refused > 0,
        "no dropped piece was ever refused"
    );
}

#[test]
fn topswops_forward_donations_are_checked_exactly() {
    let problem = build("topswops", json!({"n": 8, "direction": "forward"}));
    let donations = topswops_driver::donations(Direction::Forward);
    check_real_donations(problem.as_ref(), donations, true);
}

#[test]
fn topswops_backward_donations_are_checked_exactly() {
    let problem = build("topswops", json!({"n": 8, "direction": "backward"}));
    let donations = topswops_driver::donations(Direction::Backward);
    check_real_donations(problem.as_ref(), donations, true);
}

#[test]
fn sieve_donations_are_checked_exactly() {
    let problem = build("sieve", json!({"n": 200}));
    let donations = sieve_driver::donations(200, problem.initial_bound().map(|b| b - 3));
    check_real_donations(problem.as_ref(), donations, false);
}

#[test]
fn problems_that_never_donate_refuse_every_donation() {
    let nim = build("nimsquare", json!({"n": 10}));
    let unit = nim.split(None, 1).unwrap().units[0].payload.clone();
    assert!(nim
        .check_donation(&unit, &unit, std::slice::from_ref(&unit), None)
        .is_err());
}

#[test]
fn primes_ranges_must_be_tiled_exactly() {
    let primes = build("primes", json!({"to": 1000}));
    let range = |a: u64, b: u64| [a.to_le_bytes(), b.to_le_bytes()].concat();
    let old = range(0, 100);
    let check =
        |kept: Vec<u8>, donated: Vec<Vec<u8>>| primes.check_donation(&old, &kept, &donated, None);
    assert!(check(range(0, 50), vec![range(50, 80), range(80, 100)]).is_ok());
    assert!(
        check(range(0, 50), vec![]).is_err(),
        "shrunk, nothing donated"
    );
    assert!(check(range(0, 50), vec![range(50, 90)]).is_err(), "a gap");
    assert!(
        check(range(0, 50), vec![range(40, 100)]).is_err(),
        "overlap"
    );
    assert!(
        check(range(0, 50), vec![range(50, 120)]).is_err(),
        "outside"
    );
}
