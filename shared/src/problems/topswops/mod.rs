//! `topswops`: Conway's card-flipping game, exact. A deck holds cards 1..n; while the top card
//! is k > 1, reverse the top k cards. f(n) is the most flips any deck of n cards takes.
//!
//! Discovery mode (`--n N`) looks for decks beating f(n-1) (f(n) >= f(n-1) + 1), raising the
//! shared bound as it finds them; proof mode (`--n N --target T`) collects every deck with at
//! least T flips. Units are subtrees of the forward search, named by a prefix of branch
//! choices (and, after a donation, an exclusive upper limit); the splitter enumerates prefixes
//! lazily, and long units donate their untried subtrees when workers go idle.
//!
//! Heuristic mode (`--heuristic`, see [`heuristic`]) hunts records for large n instead, and
//! `--contest primes` names the 2011 contest's family (one campaign per prime n in 2..97).
//!
//! Exact mode on the `Problem` interface: the splitter lists the path prefixes of the chosen
//! direction's tree lazily, at a depth chosen from n (`--split-depth` overrides), and units are
//! the subtrees below them ([`search`] holds the searcher: its two trees, pruning, deck kernels,
//! ranges, checkpoints and donation). `--direction` picks the tree, by default from the target's
//! distance to f(n-1) ([`search::Direction`]). Discovery starts from f(n-1) (the initial bound:
//! only decks beating it matter); proof mode returns every deck reaching the target as a hit
//! (a sample, checked by `verify_sample`). The coordinator re-scores every deck with the plain
//! replay [`search::count_flips`].

mod donation;
mod drawing;
pub mod heads;
pub mod heuristic;
pub mod replay;
pub mod scorer;
pub mod search;

use clap::Args;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::Mutex;

use crate::coverage::{check_range_donation, RangeUnit};
use crate::premise::Premise;
use crate::problem::{
    Chains, Objective, Placement, Presentation, Problem, ProblemError, Scored, SolveContext,
    SplitBatch, UnitOutcome, UnitSpec, Units, Verification,
};
use crate::registry::ProblemDef;
use search::{count_flips, Mode, Observer, SearchEnd, Searcher};

/// Largest n whose f(1..n-1) the problem computes itself when `--known` is absent.
pub const AUTO_KNOWN_MAX_N: u32 = 14;

/// Parameters of exact Topswops.
#[derive(Args, Serialize, Deserialize, Clone, Debug)]
pub struct TopswopsParams {
    /// Number of cards (required unless --contest names a family).
    #[arg(long, default_value_t = 0)]
    #[serde(default)]
    pub n: u32,
    /// Proof mode: collect every deck with at least this many flips.
    #[arg(long)]
    #[serde(default)]
    pub target: Option<u32>,
    /// Proven f(1), ..., f(n-1), comma separated (e.g. from earlier grind campaigns); used as
    /// pruning bounds. Computed here when absent and n <= 14.
    #[arg(long, value_delimiter = ',')]
    #[serde(default)]
    pub known: Option<Vec<u32>>,
    /// Not a flag: set by construction when `known` holds values this problem's own search
    /// computed (n <= 14 without --known), so that they are no premises of the proof. Stated
    /// values (--known) are premises: see [`crate::problem::Chains::premises`].
    #[arg(skip)]
    #[serde(default)]
    pub known_computed: bool,
    /// Branch-path depth of the root split into units (default: chosen from n).
    #[arg(long)]
    #[serde(default)]
    pub split_depth: Option<u32>,
    /// Heuristic mode and contest families.
    #[command(flatten)]
    #[serde(flatten)]
    pub heuristic: heuristic::HeuristicArgs,
    /// Search direction: forward or backward (default: chosen from n, target and f(n-1)).
    #[arg(long)]
    #[serde(default)]
    pub direction: Option<String>,
}

/// An exact Topswops instance.
pub struct Topswops {
    params: TopswopsParams,
    /// f(m) for m < n, index m (index 0 unused).
    tail_bounds: Vec<u32>,
    /// Set in heuristic mode: every Problem method is delegated to it.
    heuristic: Option<heuristic::Heuristic>,
    direction: search::Direction,
    /// True when f(1..n-1) came from the parameters (`--known`), not from this problem's own
    /// search: then they are premises of the proof (see [`crate::problem::Chains::premises`]).
    known_stated: bool,
}

impl ProblemDef for Topswops {
    const NAME: &'static str = "topswops";
    const ABOUT: &'static str =
        "exact maximum flips f(n) of Conway's Topswops, or every deck reaching --target";
    // 2: heuristic campaigns go on with climb rounds after polishing.
    const SOLVER_VERSION: u32 = 2;
    type Params = TopswopsParams;

    fn from_params(mut params: TopswopsParams) -> Result<Self, ProblemError> {
        let n = params.n;
        if params.heuristic.contest.is_some() {
            return Err(ProblemError::InvalidParams(
                "--contest names a family of campaigns; create it with `grind contest add`".into(),
            ));
        }
        if n == 0 {
            return Err(ProblemError::InvalidParams(
                "topswops needs --n N (or --contest primes for the contest family)".into(),
            ));
        }
        if params.heuristic != heuristic::HeuristicArgs::default() {
            if !params.heuristic.heuristic {
                return Err(ProblemError::InvalidParams(
                    "--strategy, --k, --pool, --units and --window need --heuristic".into(),
                ));
            }
            if params.target.is_some()
                || params.known.is_some()
                || params.split_depth.is_some()
                || params.direction.is_some()
            {
                return Err(ProblemError::InvalidParams(
                    "--target, --known, --split-depth and --direction are exact-search flags; \
                     not with --heuristic"
                        .into(),
                ));
            }
            let found = heuristic::Heuristic::new(n, params.heuristic.clone())?;
            params.heuristic = found.args().clone();
            return Ok(Topswops {
                params,
                tail_bounds: Vec::new(),
                heuristic: Some(found),
                // Unused: every Problem method goes to the heuristic.
                direction: search::Direction::Forward,
                known_stated: false,
            });
        }
        if n == 0 || n as usize > search::MAX_N {
            return Err(ProblemError::InvalidParams(format!(
                "--n {n} is out of range: 1..={}",
                search::MAX_N
            )));
        }
        if params.known_computed && (params.known.is_none() || n > AUTO_KNOWN_MAX_N) {
            return Err(ProblemError::InvalidParams(format!(
                "known_computed marks f(m) this problem computed itself: only with known, and \
                 only up to n = {AUTO_KNOWN_MAX_N}"
            )));
        }
        let known = match params.known.take() {
            Some(known) => {
                validate_known(n, &known)?;
                known
            }
            None if n <= AUTO_KNOWN_MAX_N => {
                params.known_computed = true;
                maxima_below(n)?
            }
            None => {
                return Err(ProblemError::InvalidParams(format!(
                    "--n {n} needs --known f(1),...,f({}) (prove them first, e.g. with \
                     `grind run topswops --n {}`); they are computed automatically only up \
                     to n = {AUTO_KNOWN_MAX_N}",
                    n - 1,
                    n - 1
                )))
            }
        };
        if let Some(depth) = params.split_depth {
            if depth > 8 {
                return Err(ProblemError::InvalidParams(format!(
                    "--split-depth {depth} is too deep (at most 8)"
                )));
            }
        }
        let mut tail_bounds = vec![0];
        tail_bounds.extend_from_slice(&known);
        params.known = Some(known);
        let direction = search::Direction::choose(
            params.direction.as_deref(),
            n as usize,
            &tail_bounds,
            params.target,
        )
        .map_err(|e| ProblemError::InvalidParams(format!("--direction: {e}")))?;
        // Pinned in the canonical parameters: the units' paths mean different things in the two
        // trees, so a campaign keeps its direction even if the default rule changes.
        params.direction = Some(direction.to_string());
        Ok(Topswops {
            known_stated: !params.known_computed,
            params,
            tail_bounds,
            heuristic: None,
            direction,
        })
    }

    fn canonical(&self) -> Option<TopswopsParams> {
        Some(self.params.clone())
    }

    fn family(params: &TopswopsParams) -> Result<Option<Vec<TopswopsParams>>, ProblemError> {
        let Some(heuristic::ContestFamily::Primes) = params.heuristic.contest else {
            return Ok(None);
        };
        if params.n != 0 || params.target.is_some() || params.known.is_some() {
            return Err(ProblemError::InvalidParams(
                "--contest primes chooses n itself: no --n, --target or --known".into(),
            ));
        }
        let exact_up_to = params.heuristic.exact_up_to.unwrap_or(11);
        let members = heuristic::contest_primes()
            .into_iter()
            .map(|n| {
                let mut member = params.clone();
                member.n = n;
                member.heuristic.contest = None;
                member.heuristic.exact_up_to = None;
                if n <= exact_up_to {
                    member.heuristic = heuristic::HeuristicArgs::default();
                } else {
                    member.split_depth = None;
                    member.heuristic.heuristic = true;
                }
                member
            })
            .collect();
        Ok(Some(members))
    }

    /// Discovery and proof mode on small decks, and a short heuristic campaign (block
    /// growth in stages, then one climb round).
    fn examples() -> Vec<Value> {
        vec![
            json!({"n": 7}),
            json!({"n": 7, "target": 15}),
            json!({"n": 13, "heuristic": true, "k": 4, "units": 3, "polish_stall": 0,
                   "rounds": 1, "budget": 2000}),
        ]
    }
}

fn validate_known(n: u32, known: &[u32]) -> Result<(), ProblemError> {
    if known.len() != n as usize - 1 {
        return Err(ProblemError::InvalidParams(format!(
            "--known must list f(1)..f({}) ({} values), got {}",
            n - 1,
            n - 1,
            known.len()
        )));
    }
    if known.first().is_some_and(|&f1| f1 != 0) {
        return Err(ProblemError::InvalidParams("--known: f(1) is 0".into()));
    }
    if known.windows(2).any(|w| w[1] <= w[0]) {
        return Err(ProblemError::InvalidParams(
            "--known must increase strictly (f(m+1) >= f(m) + 1)".into(),
        ));
    }
    Ok(())
}

/// Computes f(1), ..., f(n-1) with the exact search itself, each proven in turn.
///
/// Each f(m) is first searched from a guess: the last step f(m-1) - f(m-2) repeated, minus
/// one. A discovery search from bound B visits only what could beat B, so when it finds a
/// deck above B it has found the maximum (every better deck is above B too); when it finds
/// none, f(m) <= B and the search runs again from f(m-1), which is a proven lower bound.
///
/// From m = [`PARALLEL_FROM`] on, each search runs on every core (rayon): the subtrees of
/// the root's prefixes in parallel, sharing the best flip count found. Nothing else runs
/// while a campaign's parameters are being computed, and f(n-1) costs about a tenth of
/// the campaign for n itself.
pub fn maxima_below(n: u32) -> Result<Vec<u32>, ProblemError> {
    let mut known: Vec<u32> = Vec::new();
    for m in 1..n {
        let mut tails = vec![0];
        tails.extend_from_slice(&known);
        let floor = known.last().copied();
        let guess = match known.as_slice() {
            [.., before, last] => Some((2 * last).saturating_sub(before + 1).max(*last)),
            _ => floor,
        };
        known.push(maximum_from_guess(m as usize, &tails, guess, floor)?.unwrap_or(0));
    }
    Ok(known)
}

/// The deck size from which [`maxima_below`] searches on every core (below it a whole
/// search takes well under a millisecond).
pub const PARALLEL_FROM: usize = 10;

/// Depth of the prefixes a parallel search of [`maxima_below`] hands out (about m² of them).
const PARALLEL_DEPTH: usize = 2;

/// The largest flip count of decks of `m` cards (tail bounds `tails`): searched from `guess`
/// first, and from the proven lower bound `floor` again only when no deck beats the guess.
fn maximum_from_guess(
    m: usize,
    tails: &[u32],
    guess: Option<u32>,
    floor: Option<u32>,
) -> Result<Option<u32>, ProblemError> {
    let searcher = || Searcher::new(m, tails.to_vec()).map_err(ProblemError::Solver);
    let discover_from = |start: Option<u32>| -> Result<Option<u32>, ProblemError> {
        let best = BestSoFar::new(start);
        if m < PARALLEL_FROM {
            searcher()?
                .search(&[], None, None, Mode::Discover, &best)
                .map_err(ProblemError::Solver)?;
        } else {
            use rayon::prelude::*;
            let prefixes = searcher()?.prefixes(PARALLEL_DEPTH);
            prefixes
                .par_iter()
                .try_for_each_init(searcher, |s, prefix| {
                    let s = s.as_mut().map_err(|e| e.clone())?;
                    s.search(prefix, None, None, Mode::Discover, &best)
                        .map(|_| ())
                        .map_err(ProblemError::Solver)
                })?;
        }
        Ok(best.best())
    };
    if let Some(guess) = guess.filter(|&g| Some(g) != floor) {
        let best = discover_from(Some(guess))?;
        if best != Some(guess) {
            return Ok(best);
        }
    }
    discover_from(floor)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// f(1..=11), published (OEIS A000375).
    const PUBLISHED: [u32; 11] = [0, 1, 2, 4, 7, 10, 16, 22, 30, 38, 51];

    #[test]
    fn maxima_below_match_the_published_values() {
        assert_eq!(maxima_below(12).unwrap(), PUBLISHED);
    }

    #[test]
    fn a_guess_too_high_or_too_low_still_gives_the_maximum() {
        // f(9) = 30 with f(1..8) as tail bounds, whatever the guess.
        let tails: Vec<u32> = std::iter::once(0)
            .chain(PUBLISHED[..8].iter().copied())
            .collect();
        for guess in [
            Some(22),
            Some(25),
            Some(29),
            Some(30),
            Some(31),
            Some(45),
            None,
        ] {
            assert_eq!(
                maximum_from_guess(9, &tails, guess, Some(22)).unwrap(),
                Some(30),
                "guess {guess:?}"
            );
        }
        // f(10) = 38 on the parallel path (m >= PARALLEL_FROM), from either side too.
        const { assert!(10 >= PARALLEL_FROM) };
        let tails: Vec<u32> = std::iter::once(0)
            .chain(PUBLISHED[..9].iter().copied())
            .collect();
        for guess in [Some(30), Some(36), Some(37), Some(38), Some(39), None] {
            assert_eq!(
                maximum_from_guess(10, &tails, guess, Some(30)).unwrap(),
                Some(38),
                "guess {guess:?}"
            );
        }
    }
}

/// An observer that only keeps the best flip count (for computing f(m) locally).
struct BestSoFar {
    best: Mutex<Option<u32>>,
}

impl BestSoFar {
    fn new(start: Option<u32>) -> Self {
        BestSoFar {
            best: Mutex::new(start),
        }
    }
    fn best(&self) -> Option<u32> {
        *self.best.lock().expect("poisoned")
    }
}

impl Observer for BestSoFar {
    fn bound(&self) -> Option<u32> {
        self.best()
    }
    fn found(&self, _deck: &[u8], flips: u32) {
        let mut best = self.best.lock().expect("poisoned");
        if best.is_none_or(|b| flips > b) {
            *best = Some(flips);
        }
    }
    fn donate(&self, _prefixes: Vec<Vec<u8>>, _new_limit: Vec<u8>) {}
}

/// A unit: the subtree under `prefix`, up to (excluding) `limit` in DFS order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopswopsUnit {
    /// Branch choices leading to the subtree.
    pub prefix: Vec<u8>,
    /// Exclusive upper limit (set after a donation).
    pub limit: Option<Vec<u8>>,
}

impl TopswopsUnit {
    /// Encodes as `[len(prefix), prefix.., has_limit, limit..]`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![self.prefix.len() as u8];
        out.extend_from_slice(&self.prefix);
        match &self.limit {
            Some(limit) => {
                out.push(1);
                out.extend_from_slice(limit);
            }
            None => out.push(0),
        }
        out
    }

    /// Decodes [`TopswopsUnit::encode`], checking every value is a card of an n-card deck.
    pub fn decode(bytes: &[u8], n: u32) -> Result<TopswopsUnit, ProblemError> {
        let bad = |why: &str| ProblemError::InvalidUnit(format!("topswops unit: {why}"));
        let (&len, rest) = bytes.split_first().ok_or_else(|| bad("empty payload"))?;
        let len = len as usize;
        if rest.len() < len + 1 {
            return Err(bad("payload shorter than its prefix"));
        }
        let prefix = rest[..len].to_vec();
        let limit = match rest[len] {
            0 if rest.len() == len + 1 => None,
            1 => Some(rest[len + 1..].to_vec()),
            _ => return Err(bad("malformed limit")),
        };
        let in_range = |v: &u8| *v >= 1 && u32::from(*v) <= n;
        if !prefix.iter().all(in_range) || !limit.iter().flatten().all(in_range) {
            return Err(bad("branch value outside 1..=n"));
        }
        Ok(TopswopsUnit { prefix, limit })
    }

    fn label(&self) -> String {
        let path = |p: &[u8]| {
            p.iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        match &self.limit {
            Some(limit) => format!("[{}] < [{}]", path(&self.prefix), path(limit)),
            None => format!("[{}]", path(&self.prefix)),
        }
    }
}

impl Topswops {
    fn n(&self) -> u32 {
        self.params.n
    }

    fn split_depth(&self) -> usize {
        match self.params.split_depth {
            Some(depth) => depth as usize,
            None => match self.n() {
                0..=6 => 0,
                7..=10 => 1,
                11..=15 => 2,
                _ => 3,
            },
        }
    }

    fn searcher(&self) -> Result<Searcher, ProblemError> {
        let mut searcher = Searcher::new(self.n() as usize, self.tail_bounds.clone())
            .map_err(ProblemError::Solver)?;
        searcher.set_direction(self.direction);
        Ok(searcher)
    }

    fn deck_of(&self, solution: &Value) -> Result<Vec<u8>, ProblemError> {
        let bad = |why: String| ProblemError::InvalidSolution(why);
        let deck = solution
            .get("deck")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("expected {\"deck\": [cards, top first], \"flips\": f}".into()))?;
        if deck.len() != self.n() as usize {
            return Err(bad(format!(
                "deck has {} cards, the campaign has n = {}",
                deck.len(),
                self.n()
            )));
        }
        deck.iter()
            .map(|card| {
                card.as_u64()
                    .filter(|&c| c >= 1 && c <= u64::from(self.n()))
                    .map(|c| c as u8)
                    .ok_or_else(|| bad(format!("card {card} is not in 1..={}", self.n())))
            })
            .collect()
    }
}

/// Renders a deck and its flip count as the solution document.
pub fn solution(deck: &[u8], flips: u32) -> Value {
    json!({"deck": deck, "flips": flips})
}

impl Problem for Topswops {
    fn objective(&self) -> Objective {
        Objective::Max
    }

    fn exhaustive(&self) -> bool {
        self.heuristic.is_none()
    }

    /// The exact search reports decks of its unit's own leaves.
    fn finds_stay_in_unit(&self) -> bool {
        self.heuristic.is_none()
    }

    fn split_from(
        &self,
        cursor: Option<&[u8]>,
        max_units: usize,
        incumbent: Option<&Value>,
    ) -> Result<SplitBatch, ProblemError> {
        match &self.heuristic {
            Some(h) => h.split_from(cursor, max_units, incumbent),
            None => self.split(cursor, max_units),
        }
    }

    fn waits_at(&self, cursor: &[u8]) -> bool {
        self.heuristic.as_ref().is_some_and(|h| h.waits_at(cursor))
    }

    fn initial_bound(&self) -> Option<i64> {
        if self.heuristic.is_some() {
            return None;
        }
        // f(n) >= f(n-1) + 1: only decks beating f(n-1) are interesting. In proof mode the
        // target plays that role (decks reaching T beat T - 1).
        match self.params.target {
            Some(target) => Some(i64::from(target) - 1),
            None if self.n() >= 2 => Some(i64::from(self.tail_bounds[self.n() as usize - 1])),
            None => None,
        }
    }

    fn split(&self, cursor: Option<&[u8]>, max_units: usize) -> Result<SplitBatch, ProblemError> {
        if let Some(h) = &self.heuristic {
            return h.split_from(cursor, max_units, None);
        }
        let searcher = self.searcher()?;
        let after = match cursor {
            Some(bytes) => Some(TopswopsUnit::decode(bytes, self.n())?.prefix),
            None => None,
        };
        let (prefixes, done) =
            searcher.prefixes_after(self.split_depth(), after.as_deref(), max_units);
        let units: Vec<UnitSpec> = prefixes
            .iter()
            .map(|prefix| {
                let unit = TopswopsUnit {
                    prefix: prefix.clone(),
                    limit: None,
                };
                UnitSpec {
                    label: unit.label(),
                    payload: unit.encode(),
                }
            })
            .collect();
        let next = match (done, prefixes.last()) {
            (true, _) | (false, None) => None,
            (false, Some(last)) => Some(
                TopswopsUnit {
                    prefix: last.clone(),
                    limit: None,
                }
                .encode(),
            ),
        };
        Ok(SplitBatch { units, next })
    }

    fn solve(&self, payload: &[u8], ctx: &dyn SolveContext) -> Result<UnitOutcome, ProblemError> {
        if let Some(h) = &self.heuristic {
            return h.solve(payload, ctx);
        }
        let unit = TopswopsUnit::decode(payload, self.n())?;
        let resume = match ctx.resume_cursor() {
            Some(bytes) => Some(TopswopsUnit::decode(bytes, self.n())?.prefix),
            None => None,
        };
        let mode = match self.params.target {
            Some(target) => Mode::Prove(target),
            None => Mode::Discover,
        };
        let observer = UnitObserver {
            ctx,
            unit: Mutex::new(unit.clone()),
            proving: self.params.target.is_some(),
            refused: std::sync::atomic::AtomicBool::new(false),
            best: Mutex::new(None),
            hits: Mutex::new(Vec::new()),
        };
        let mut searcher = self.searcher()?;
        // A deck with card k >= 2 at position k is beaten by reversing its top k cards, so
        // no such deck is optimal: proof runs skip them (the hit list is then complete
        // whenever no deck beats the target, i.e. when the campaign's value is the target).
        searcher.set_skip_fixed_points(true);
        let end = searcher
            .search(
                &unit.prefix,
                resume.as_deref(),
                unit.limit.as_deref(),
                mode,
                &observer,
            )
            .map_err(ProblemError::Solver)?;
        // A refused donation left subtrees unsearched here: hand the unit back from its last
        // checkpoint (which precedes them) instead of claiming it whole.
        if end == SearchEnd::Stopped || observer.refused.load(std::sync::atomic::Ordering::Acquire)
        {
            return Ok(UnitOutcome::Stopped);
        }
        let best = observer.best.into_inner().expect("poisoned");
        let hits = observer.hits.into_inner().expect("poisoned");
        Ok(UnitOutcome::Searched {
            best: best.map(|(deck, flips)| Scored {
                solution: solution(&deck, flips),
                score: i64::from(flips),
            }),
            hits,
        })
    }
}

impl Verification for Topswops {
    fn score(&self, solution: &Value) -> Result<i64, ProblemError> {
        if let Some(h) = &self.heuristic {
            return h.score(solution);
        }
        let deck = self.deck_of(solution)?;
        let flips = count_flips(&deck).map_err(ProblemError::InvalidSolution)?;
        if let Some(claimed) = solution.get("flips") {
            if claimed.as_u64() != Some(flips) {
                return Err(ProblemError::InvalidSolution(format!(
                    "the deck takes {flips} flips, not {claimed}"
                )));
            }
        }
        Ok(flips as i64)
    }

    fn verify_sample(&self, sample: &Value) -> Result<(), ProblemError> {
        let target = self.params.target.ok_or_else(|| {
            ProblemError::InvalidResult("hits are only reported in proof mode (--target)".into())
        })?;
        let flips = self.score(sample)?;
        if flips < i64::from(target) {
            return Err(ProblemError::InvalidSolution(format!(
                "a hit must reach the target {target}; this deck takes {flips} flips"
            )));
        }
        Ok(())
    }
}

impl Units for Topswops {
    fn check_donation(
        &self,
        old: &[u8],
        remaining: &[u8],
        donated: &[Vec<u8>],
        bound: Option<i64>,
    ) -> Result<(), ProblemError> {
        if self.heuristic.is_some() {
            return Err(ProblemError::Unsupported(
                "heuristic topswops units are never split by donation".into(),
            ));
        }
        let range = |bytes: &[u8]| {
            TopswopsUnit::decode(bytes, self.n()).map(|u| RangeUnit {
                path: u.prefix,
                limit: u.limit,
            })
        };
        let donated = donated
            .iter()
            .map(|bytes| range(bytes))
            .collect::<Result<Vec<_>, _>>()?;
        let mode = match self.params.target {
            Some(target) => Mode::Prove(target),
            None => Mode::Discover,
        };
        let bound = bound.max(self.initial_bound());
        let mut gaps = donation::GapSearch::new(self.searcher()?, mode, bound);
        check_range_donation(&range(old)?, &range(remaining)?, &donated, &mut gaps)
    }
}

impl Chains for Topswops {
    /// Stated f(m) (`--known`) are premises: f(1) = 0 needs no proof, every other value is
    /// backed by a proven campaign `topswops --n m` or the result is a conditional proof.
    fn premises(&self) -> Vec<Premise> {
        if !self.known_stated || self.heuristic.is_some() {
            return Vec::new();
        }
        (2..self.n() as usize)
            .map(|m| Premise {
                label: format!("f({m})"),
                problem: <Topswops as ProblemDef>::NAME.to_string(),
                params: json!({ "n": m }),
                value: i64::from(self.tail_bounds[m]),
            })
            .collect()
    }
}

impl Placement for Topswops {}

impl Presentation for Topswops {
    fn parse_submission(&self, text: &str) -> Result<Value, ProblemError> {
        heuristic::parse_submission(text)
    }

    fn render(&self, value: &str, solution: Option<&Value>) -> String {
        if let Some(h) = &self.heuristic {
            return match solution.filter(|s| h.deck_of(s).is_ok()) {
                Some(s) => heuristic::render_deck(s).unwrap_or_default(),
                None => format!("# no deck found (value {value:?})\n"),
            };
        }
        match solution.and_then(|s| self.deck_of(s).ok()) {
            Some(deck) => {
                format!(
                    "{}\n",
                    deck.iter()
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                )
            }
            None => format!("# no deck found (value {value:?})\n"),
        }
    }

    fn drawing(&self, solution: &Value) -> Option<crate::drawing::Drawing> {
        drawing::draw(solution)
    }
}

/// Connects the search to the worker: bound, improvements, checkpoints, stop and donation.
struct UnitObserver<'a> {
    ctx: &'a dyn SolveContext,
    unit: Mutex<TopswopsUnit>,
    proving: bool,
    refused: std::sync::atomic::AtomicBool,
    best: Mutex<Option<(Vec<u8>, u32)>>,
    hits: Mutex<Vec<Value>>,
}

impl Observer for UnitObserver<'_> {
    fn bound(&self) -> Option<u32> {
        self.ctx
            .bound()
            .map(|b| b.clamp(i64::from(i32::MIN), i64::from(u32::MAX)).max(0) as u32)
    }

    fn found(&self, deck: &[u8], flips: u32) {
        {
            let mut best = self.best.lock().expect("poisoned");
            if best.as_ref().is_none_or(|(_, b)| flips > *b) {
                *best = Some((deck.to_vec(), flips));
            } else if !self.proving {
                return;
            }
        }
        if self.proving {
            self.hits
                .lock()
                .expect("poisoned")
                .push(solution(deck, flips));
        }
        if self.ctx.bound().is_none_or(|b| i64::from(flips) > b) {
            self.ctx.improve(Scored {
                solution: solution(deck, flips),
                score: i64::from(flips),
            });
        }
    }

    fn progress(&self, nodes: u64) {
        self.ctx.progress(nodes, None);
    }

    fn checkpoint(&self, path: &[u8]) {
        let unit = self.unit.lock().expect("poisoned");
        self.ctx.checkpoint(
            TopswopsUnit {
                prefix: path.to_vec(),
                limit: unit.limit.clone(),
            }
            .encode(),
        );
    }

    fn should_stop(&self) -> bool {
        self.ctx.stop_requested()
    }

    fn should_split(&self) -> bool {
        self.ctx.split_requested()
    }

    fn donate(&self, prefixes: Vec<Vec<u8>>, new_limit: Vec<u8>) {
        let mut unit = self.unit.lock().expect("poisoned");
        let units = prefixes
            .into_iter()
            .map(|prefix| {
                let donated = TopswopsUnit {
                    prefix,
                    limit: None,
                };
                UnitSpec {
                    label: donated.label(),
                    payload: donated.encode(),
                }
            })
            .collect();
        let kept = TopswopsUnit {
            prefix: unit.prefix.clone(),
            limit: Some(new_limit),
        };
        if self.ctx.donate(units, kept.encode()) {
            *unit = kept;
        } else {
            self.refused
                .store(true, std::sync::atomic::Ordering::Release);
        }
    }
}

#[cfg(test)]
mod premise_tests {
    use super::*;

    fn build(params: Value) -> Topswops {
        Topswops::from_params(serde_json::from_value(params).unwrap()).unwrap()
    }

    #[test]
    fn stated_maxima_are_premises_and_computed_ones_are_not() {
        // f(1..5) = 0, 1, 2, 4, 7 (OEIS A000375).
        let stated = build(json!({"n": 6, "known": [0, 1, 2, 4, 7]}));
        let premises = stated.premises();
        let named: Vec<_> = premises
            .iter()
            .map(|p| (p.label.as_str(), p.params["n"].as_u64(), p.value))
            .collect();
        assert_eq!(
            named,
            [
                ("f(2)", Some(2), 1),
                ("f(3)", Some(3), 2),
                ("f(4)", Some(4), 4),
                ("f(5)", Some(5), 7)
            ]
        );
        assert!(premises.iter().all(|p| p.problem == "topswops"));
        // Without --known the problem proves f(1..5) itself: nothing is taken as given, also
        // when the instance is rebuilt from its stored (canonical) parameters.
        let computed = build(json!({"n": 6}));
        assert!(computed.premises().is_empty());
        assert_eq!(computed.params.known, stated.params.known);
        let rebuilt = build(serde_json::to_value(&computed.params).unwrap());
        assert!(rebuilt.premises().is_empty());
        // The mark is only for values computed here: not alone, not past n = 14.
        for bad in [
            json!({"n": 6, "known_computed": true}),
            json!({"n": 15, "known_computed": true,
                   "known": [0, 1, 2, 4, 7, 10, 16, 22, 30, 38, 51, 65, 80, 101]}),
        ] {
            let params = serde_json::from_value(bad).unwrap();
            assert!(Topswops::from_params(params).is_err());
        }
    }
}
