/// f(m) for m = 0..=19, published (OEIS A000375; f(0) = 0 by convention): test
/// expectations only, never used by the search.
const KNOWN_F: [u32; 20] = [
    0, 0, 1, 2, 4, 7, 10, 16, 22, 30, 38, 51, 65, 80, 101, 113, 139, 159, 191, 221,
];

use super::tree::next_permutation;
use super::*;
use proptest::prelude::*;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};

/// Donations received: (prefixes, new limit).
type Donations = Vec<(Vec<Vec<u8>>, Vec<u8>)>;

/// A recording observer with a scripted stop / split schedule (counted in checkpoints).
struct Rec {
    found: RefCell<Vec<(Vec<u8>, u32)>>,
    bound: Cell<Option<u32>>,
    raise: bool,
    checks: Cell<u64>,
    stop_at: Option<u64>,
    split_every: Option<u64>,
    last_checkpoint: RefCell<Option<Vec<u8>>>,
    donated: RefCell<Donations>,
}

impl Rec {
    fn new() -> Rec {
        Rec {
            found: RefCell::new(Vec::new()),
            bound: Cell::new(None),
            raise: true,
            checks: Cell::new(0),
            stop_at: None,
            split_every: None,
            last_checkpoint: RefCell::new(None),
            donated: RefCell::new(Vec::new()),
        }
    }
}

impl Observer for Rec {
    fn bound(&self) -> Option<u32> {
        self.bound.get()
    }
    fn found(&self, deck: &[u8], flips: u32) {
        assert_eq!(count_flips(deck).unwrap(), flips as u64, "{deck:?}");
        if self.raise && self.bound.get().is_none_or(|b| flips > b) {
            self.bound.set(Some(flips));
        }
        self.found.borrow_mut().push((deck.to_vec(), flips));
    }
    fn checkpoint(&self, path: &[u8]) {
        self.checks.set(self.checks.get() + 1);
        *self.last_checkpoint.borrow_mut() = Some(path.to_vec());
    }
    fn should_stop(&self) -> bool {
        self.stop_at == Some(self.checks.get())
    }
    fn should_split(&self) -> bool {
        self.split_every
            .is_some_and(|k| self.checks.get().is_multiple_of(k))
    }
    fn donate(&self, prefixes: Vec<Vec<u8>>, new_limit: Vec<u8>) {
        self.donated.borrow_mut().push((prefixes, new_limit));
    }
}

fn permutations(n: usize) -> Vec<Vec<u8>> {
    let mut p: Vec<u8> = (1..=n as u8).collect();
    let mut all = vec![p.clone()];
    while next_permutation(&mut p) {
        all.push(p.clone());
    }
    all
}

fn has_fixed_point(deck: &[u8]) -> bool {
    deck.iter()
        .enumerate()
        .any(|(i, &v)| v >= 2 && v as usize == i + 1)
}

fn kernels(n: usize) -> Vec<Kernel> {
    [Kernel::Portable, Kernel::Narrow, Kernel::Wide]
        .into_iter()
        .filter(|k| k.supports(n))
        .collect()
}

/// f(1..n-1) computed by this search, index m (0 unused).
fn tails(n: usize) -> Vec<u32> {
    let mut t = vec![0u32; n];
    for m in 1..n {
        t[m] = max_by_search(m, &t[..m], Kernel::Portable);
    }
    t
}

fn max_by_search(n: usize, tails: &[u32], kernel: Kernel) -> u32 {
    max_in(n, tails, kernel, Direction::Forward)
}

fn max_in(n: usize, tails: &[u32], kernel: Kernel, dir: Direction) -> u32 {
    let mut s = Searcher::new(n, tails.to_vec()).unwrap();
    s.set_kernel(kernel).unwrap();
    s.set_direction(dir);
    let obs = Rec::new();
    assert_eq!(
        s.search(&[], None, None, Mode::Discover, &obs).unwrap(),
        SearchEnd::Exhausted
    );
    obs.bound.get().unwrap()
}

fn searcher(n: usize) -> Searcher {
    Searcher::new(n, KNOWN_F[..n].to_vec()).unwrap()
}

const DIRS: [Direction; 2] = [Direction::Forward, Direction::Backward];

fn searcher_in(n: usize, dir: Direction) -> Searcher {
    let mut s = searcher(n);
    s.set_direction(dir);
    s
}

/// The leaf path of a concrete deck in the tree of `dir`.
fn path_in(deck: &[u8], dir: Direction) -> (Vec<u8>, u64) {
    match dir {
        Direction::Forward => leaf_path(deck).unwrap(),
        Direction::Backward => backward::leaf_path(deck).unwrap(),
    }
}

/// Every deck of a full search, once each (fails on duplicates).
fn as_set(found: &[(Vec<u8>, u32)]) -> BTreeSet<Vec<u8>> {
    let mut set = BTreeSet::new();
    for (deck, _) in found {
        assert!(set.insert(deck.clone()), "deck {deck:?} reported twice");
    }
    set
}

#[test]
fn count_flips_examples_and_errors() {
    assert_eq!(count_flips(&[3, 1, 4, 5, 2]), Ok(7));
    assert_eq!(count_flips(&[1]), Ok(0));
    assert_eq!(count_flips(&[2, 1]), Ok(1));
    assert!(count_flips(&[]).is_err());
    assert!(count_flips(&[1, 1]).is_err());
    assert!(count_flips(&[0, 1]).is_err());
    assert!(count_flips(&[3, 1]).is_err());
    assert_eq!(
        leaf_path(&[3, 1, 4, 5, 2]).unwrap(),
        (vec![3, 4, 5, 2, 1], 7)
    );
}

#[test]
fn bad_arguments_are_errors() {
    assert!(Searcher::new(0, vec![]).is_err());
    assert!(Searcher::new(MAX_N + 1, vec![0; MAX_N + 1]).is_err());
    assert!(Searcher::new(5, vec![0; 4]).is_err());
    let mut s = searcher(6);
    let obs = Rec::new();
    for bad in [&[0u8][..], &[7], &[2, 2], &[1, 2], &[255]] {
        assert!(
            s.search(bad, None, None, Mode::Prove(0), &obs).is_err(),
            "{bad:?}"
        );
    }
    // Arbitrary resume / limit bytes are fine.
    assert!(s
        .search(
            &[],
            Some(&[200, 0]),
            Some(&[255, 255, 255]),
            Mode::Prove(0),
            &obs
        )
        .is_ok());
    // A proof target so low that one leaf is 11! decks.
    let mut s = searcher(12);
    assert!(s.search(&[], None, None, Mode::Prove(0), &obs).is_err());
    assert!(Searcher::new(32, vec![1000; 32]).is_ok());
    let mut s = searcher(6);
    assert!(s.set_kernel(Kernel::Portable).is_ok());
}

#[test]
fn maximum_matches_brute_force() {
    let t = tails(8);
    for n in 1..=8 {
        let brute = permutations(n)
            .iter()
            .map(|d| count_flips(d).unwrap() as u32)
            .max()
            .unwrap();
        assert_eq!(brute, KNOWN_F[n]);
        for k in kernels(n) {
            for dir in DIRS {
                assert_eq!(max_in(n, &t[..n], k, dir), brute, "n = {n}, {k}, {dir:?}");
            }
        }
    }
}

#[test]
fn proof_sets_match_brute_force() {
    let t = tails(8);
    for n in 1..=8 {
        let all: Vec<(Vec<u8>, u32)> = permutations(n)
            .into_iter()
            .map(|d| {
                let f = count_flips(&d).unwrap() as u32;
                (d, f)
            })
            .collect();
        let f = KNOWN_F[n];
        for target in [f, f.saturating_sub(1), f.saturating_sub(3)] {
            for skip in [false, true] {
                let want: BTreeSet<Vec<u8>> = all
                    .iter()
                    .filter(|(d, fl)| *fl >= target && !(skip && has_fixed_point(d)))
                    .map(|(d, _)| d.clone())
                    .collect();
                for (k, dir) in kernels(n).into_iter().flat_map(|k| DIRS.map(|d| (k, d))) {
                    let mut s = Searcher::new(n, t[..n].to_vec()).unwrap();
                    s.set_kernel(k).unwrap();
                    s.set_direction(dir);
                    s.set_skip_fixed_points(skip);
                    let obs = Rec::new();
                    s.search(&[], None, None, Mode::Prove(target), &obs)
                        .unwrap();
                    let got = as_set(&obs.found.borrow());
                    assert_eq!(
                        got, want,
                        "n = {n}, target {target}, skip {skip}, {k}, {dir:?}"
                    );
                    assert_eq!(s.stats().decks as usize, want.len());
                }
            }
        }
    }
}

#[test]
fn direction_choice() {
    let f = |n: usize| KNOWN_F[..n].to_vec();
    let choose = |given, n, target| Direction::choose(given, n, &f(n), target);
    assert_eq!(choose(None, 15, Some(113)), Ok(Direction::Backward));
    assert_eq!(choose(None, 14, Some(101)), Ok(Direction::Forward));
    assert_eq!(choose(None, 15, None), Ok(Direction::Forward));
    assert_eq!(choose(None, 1, Some(0)), Ok(Direction::Forward));
    assert_eq!(
        choose(Some("forward"), 15, Some(113)),
        Ok(Direction::Forward)
    );
    assert_eq!(choose(Some("backward"), 4, None), Ok(Direction::Backward));
    assert!(choose(Some("sideways"), 4, None).is_err());
    for dir in DIRS {
        let name = dir.to_string();
        assert_eq!(Direction::choose(Some(&name), 4, &f(4), None), Ok(dir));
    }
}

#[test]
fn optimal_decks_have_no_fixed_points() {
    for (n, &f) in KNOWN_F.iter().enumerate().take(9).skip(2) {
        for d in permutations(n) {
            if has_fixed_point(&d) {
                assert!(count_flips(&d).unwrap() < f as u64, "{d:?}");
            }
        }
    }
}

#[test]
fn leaf_paths_name_search_leaves() {
    for dir in DIRS {
        leaf_paths_name_leaves_in(dir);
    }
}

fn leaf_paths_name_leaves_in(dir: Direction) {
    let n = 7;
    let s = searcher_in(n, dir);
    // The longest path: n + 1 forward, f(n) + 1 backward.
    let full = match dir {
        Direction::Forward => n + 1,
        Direction::Backward => KNOWN_F[n] as usize + 1,
    };
    let leaves: BTreeSet<Vec<u8>> = s
        .prefixes(full)
        .into_iter()
        .inspect(|p| assert_eq!(p.last(), Some(&1)))
        .collect();
    let mut seen = BTreeSet::new();
    for d in permutations(n) {
        let (path, flips) = path_in(&d, dir);
        assert!(leaves.contains(&path), "{d:?} -> {path:?}");
        assert_eq!(flips, count_flips(&d).unwrap());
        seen.insert(path);
    }
    assert_eq!(seen, leaves);
    // Depth-first order is lexicographic order.
    let listed = s.prefixes(full);
    assert!(listed.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn prefixes_partition_the_tree() {
    let n = 7;
    let everything: BTreeSet<Vec<u8>> = permutations(n).into_iter().collect();
    for (depth, dir) in (0..=n + 1).flat_map(|d| DIRS.map(|dir| (d, dir))) {
        let mut s = searcher_in(n, dir);
        // Lazily, in batches of 5.
        let mut after: Option<Vec<u8>> = None;
        let mut all = Vec::new();
        loop {
            let (batch, done) = s.prefixes_after(depth, after.as_deref(), 5);
            assert!(batch.len() <= 5);
            all.extend(batch.iter().cloned());
            if let Some(last) = batch.last() {
                after = Some(last.clone());
            }
            if done {
                break;
            }
            assert!(!batch.is_empty());
        }
        assert_eq!(all, s.prefixes(depth));
        assert!(all.windows(2).all(|w| w[0] < w[1]));
        let obs = Rec::new();
        for p in &all {
            assert!(p.len() <= depth);
            assert_eq!(
                s.search(p, None, None, Mode::Prove(0), &obs).unwrap(),
                SearchEnd::Exhausted
            );
        }
        assert_eq!(
            as_set(&obs.found.borrow()),
            everything,
            "depth {depth} {dir:?}"
        );
    }
}

/// Runs `units` (prefix, limit) to completion with stops every `stop_every` checkpoints
/// and splits every `split_every`, resuming from checkpoints and queueing donations.
fn drive(
    s: &mut Searcher,
    mode: Mode,
    units: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    stop_every: Option<u64>,
    split_every: Option<u64>,
) -> (Vec<(Vec<u8>, u32)>, usize) {
    let mut queue = units;
    let mut found = Vec::new();
    let mut donations = 0;
    let mut calls = 0u64;
    while let Some((prefix, mut limit)) = queue.pop() {
        let mut resume: Option<Vec<u8>> = None;
        loop {
            calls += 1;
            assert!(calls < 1_000_000, "no progress");
            let mut obs = Rec::new();
            obs.raise = false;
            obs.stop_at = stop_every;
            obs.split_every = split_every;
            let end = s
                .search(&prefix, resume.as_deref(), limit.as_deref(), mode, &obs)
                .unwrap();
            found.extend(obs.found.borrow().iter().cloned());
            for (prefixes, new_limit) in obs.donated.borrow().iter() {
                donations += 1;
                assert_eq!(&prefixes[0], new_limit);
                assert!(prefixes.windows(2).all(|w| w[0] < w[1]));
                if let Some(l) = &limit {
                    assert!(new_limit < l);
                }
                if let Some(r) = &resume {
                    assert!(new_limit > r);
                }
                limit = Some(new_limit.clone());
                queue.extend(prefixes.iter().map(|p| (p.clone(), None)));
            }
            match end {
                SearchEnd::Exhausted => break,
                SearchEnd::Stopped => {
                    let cp = obs.last_checkpoint.borrow().clone().unwrap();
                    if let Some(r) = &resume {
                        assert!(&cp > r, "checkpoint {cp:?} does not advance past {r:?}");
                    }
                    resume = Some(cp);
                }
            }
        }
    }
    (found, donations)
}

#[test]
fn stops_resumes_and_donations_cover_exactly_once() {
    let n = 7;
    let everything: BTreeSet<Vec<u8>> = permutations(n).into_iter().collect();
    for (k, dir) in kernels(n).into_iter().flat_map(|k| DIRS.map(|d| (k, d))) {
        for interval in [1, 3, 17] {
            for (stop, split) in [(Some(1), None), (None, Some(1)), (Some(3), Some(2))] {
                let mut s = searcher_in(n, dir);
                s.set_kernel(k).unwrap();
                s.set_check_interval(interval);
                let (found, donations) =
                    drive(&mut s, Mode::Prove(0), vec![(vec![], None)], stop, split);
                assert_eq!(
                    as_set(&found),
                    everything,
                    "{k} {dir:?} {interval} {stop:?} {split:?}"
                );
                if split.is_some() {
                    assert!(donations > 0);
                }
            }
        }
    }
}

#[test]
fn donation_under_a_limit_that_cuts_a_subtree() {
    let n = 7;
    let all = permutations(n);
    for (dir, limit) in [
        (Direction::Forward, vec![4u8, 2, 6, 3]),
        (Direction::Forward, vec![2, 7, 5]),
        (Direction::Forward, vec![6, 1]),
        (Direction::Forward, vec![3, 4, 2, 5, 7, 1]),
        (Direction::Backward, vec![4u8, 2, 6, 3]),
        (Direction::Backward, vec![3, 7, 5]),
        (Direction::Backward, vec![6, 1]),
        (Direction::Backward, vec![3, 4, 2, 5, 3, 1]),
    ] {
        let mut s = searcher_in(n, dir);
        s.set_check_interval(1);
        let want: BTreeSet<Vec<u8>> = all
            .iter()
            .filter(|d| path_in(d, dir).0 < limit)
            .cloned()
            .collect();
        let (found, donations) = drive(
            &mut s,
            Mode::Prove(0),
            vec![(vec![], Some(limit.clone()))],
            None,
            Some(1),
        );
        assert!(donations > 0);
        assert_eq!(as_set(&found), want, "limit {limit:?} {dir:?}");
    }
}

#[test]
fn discovery_finds_the_maximum_with_stops_and_donations() {
    let n = 8;
    for dir in DIRS {
        let mut s = searcher_in(n, dir);
        s.set_check_interval(50);
        let (found, _) = drive(
            &mut s,
            Mode::Discover,
            vec![(vec![], None)],
            Some(2),
            Some(3),
        );
        assert_eq!(found.iter().map(|f| f.1).max(), Some(KNOWN_F[n]), "{dir:?}");
    }
}

fn path_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(0u8..=8, 0..7)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Range restriction: exactly the decks whose leaf path is in [resume, limit) under
    /// the prefix, for a pruned proof search too.
    #[test]
    fn ranges_select_exactly_their_leaves(
        resume in prop::option::of(path_strategy()),
        limit in prop::option::of(path_strategy()),
        prefix_pick in 0usize..1000,
        depth in 0usize..4,
        target in prop::sample::select(vec![0u32, 4, 9]),
        skip in any::<bool>(),
        backward in any::<bool>(),
    ) {
        let n = 6;
        let dir = if backward { Direction::Backward } else { Direction::Forward };
        let mut s = searcher_in(n, dir);
        s.set_skip_fixed_points(skip);
        let prefixes = s.prefixes(depth);
        let prefix = prefixes[prefix_pick % prefixes.len()].clone();
        let want: BTreeSet<Vec<u8>> = permutations(n)
            .into_iter()
            .filter(|d| {
                let (p, f) = path_in(d, dir);
                p.starts_with(&prefix)
                    && resume.as_ref().is_none_or(|r| &p >= r)
                    && limit.as_ref().is_none_or(|l| &p < l)
                    && f as u32 >= target
                    && !(skip && has_fixed_point(d))
            })
            .collect();
        let obs = Rec::new();
        s.search(&prefix, resume.as_deref(), limit.as_deref(), Mode::Prove(target), &obs)
            .unwrap();
        prop_assert_eq!(as_set(&obs.found.borrow()), want);
    }

    /// Random stop / split schedules over random units: every deck exactly once.
    #[test]
    fn schedules_cover_exactly_once(
        interval in 1u64..40,
        stop in prop::option::of(1u64..4),
        split in prop::option::of(1u64..4),
        depth in 0usize..3,
        target in prop::sample::select(vec![0u32, 6, 12]),
        backward in any::<bool>(),
    ) {
        let n = 7;
        let dir = if backward { Direction::Backward } else { Direction::Forward };
        let mut s = searcher_in(n, dir);
        s.set_check_interval(interval);
        let units = s.prefixes(depth).into_iter().map(|p| (p, None)).collect();
        let (found, _) = drive(&mut s, Mode::Prove(target), units, stop, split);
        let mut count: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
        for (d, _) in found {
            *count.entry(d).or_default() += 1;
        }
        let want: BTreeMap<Vec<u8>, usize> = permutations(n)
            .into_iter()
            .filter(|d| count_flips(d).unwrap() as u32 >= target)
            .map(|d| (d, 1))
            .collect();
        prop_assert_eq!(count, want);
    }
}
