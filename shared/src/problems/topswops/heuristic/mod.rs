//! Heuristic Topswops (`--heuristic`): anytime record hunting for large n, objective max,
//! never exhaustive. Every campaign runs in stages; the coordinator waits at each stage
//! boundary for all of the stage's units, then starts the next stage from the incumbent.
//!
//! * Growth stages (strategy `block`): the incumbent's unique heads up to 1 are the prefix
//!   (values 2..); the stage tries every ordered choice of `k` values out of the next `pool`
//!   unused values (`pool = k`: all k! orders of the next k values, the 2011 winner's
//!   method) as the next heads, then 1. The decks scored put the values not used yet in
//!   slots that never reach the top, so a stage's deck is a genuine n-card deck whose flips
//!   are the grown prefix's: the coordinator's maximum is the stage winner. A stage's
//!   arrangements are split into units of arrangement-number ranges.
//! * Polish rounds (after growth, or strategy `polish` from the start): for every window of
//!   `window` consecutive heads, all orders of the window are tried with the rest kept,
//!   re-scored from the state before the window. A round without improvement widens the
//!   window; after [`MAX_STALL`] such rounds polishing is over.
//! * Climb rounds (after polishing, or strategy `climb` from the start; anytime): every
//!   unit is a seeded hill climb of `budget` random moves (see [`moves`]: shift a head
//!   anywhere, swap two heads, reverse a short segment) from the round's incumbent, each
//!   re-scored from the checkpoint state before its first change (see [`climb`]); the
//!   coordinator's maximum over the round's units is the next round's incumbent. Rounds go
//!   on until `--rounds` (forever by default), whether or not a round improved: every round draws
//!   new seeds. A unit depends on its payload only (seed and budget are in it and in its
//!   label), so a replica run returns the same deck.
//!
//! Units carry their prefix (compact ranks, see [`codec`]); each worker keeps the states of
//! recent prefixes, so a stage continues from the previous stage's state instead of
//! replaying the whole prefix. The verifier is the plain replay of [`super::replay`].
//!
//! # Flags and defaults
//!
//! * Polishing ends after `--polish-stall` idle rounds (default and maximum [`MAX_STALL`]);
//!   `--polish-stall 0 --rounds R` climbs right after growth.
//! * Climb rounds run for as long as the campaign is given; `--rounds R` limits them and
//!   `--strategy climb` starts with them (for example from an imported deck). A unit makes
//!   `--budget` moves, by default [`default_budget`] (about 8e9 / n^2.3: some 5 s of a core);
//!   its seed mixes the stage and the unit number ([`moves::mix`]), and seed and budget are in
//!   its label.
//! * Units checkpoint every 10 s, each time after reporting their best deck, so they resume.
//! * `--contest primes` is `ProblemDef::family`: one member per prime n in 2..97, exact up to
//!   `--exact-up-to` (default 11), heuristic above; `parse_submission` reads `c1,c2,...` lines
//!   and `render` writes them.

pub mod arrangement;
pub mod climb;
mod climb_unit;
pub mod codec;
pub mod moves;
pub mod stage;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::heads::{to_deck, to_heads, visited};
use super::replay::replay_flips;
use super::scorer::{Card, HeadState, Kernel, MAX_CARDS};
use crate::problem::{ProblemError, Scored, SolveContext, SplitBatch, UnitOutcome, UnitSpec};
use codec::{Reader, Writer};
use stage::Stage;

/// Polish rounds in a row without improvement (each with a wider window) before a campaign
/// ends.
pub const MAX_STALL: u32 = 3;

/// Largest k and pool (a stage has at most pool!/(pool-k)! arrangements).
pub const MAX_POOL: u32 = 16;

/// How often a unit checkpoints (and reports its best first, so nothing is lost).
const CHECKPOINT_EVERY: Duration = Duration::from_secs(10);

/// Prefix states a worker keeps per campaign.
const CACHED_STATES: usize = 4;

/// The search strategy of a heuristic campaign.
#[derive(ValueEnum, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// Grow the unique heads a block of k values per stage (choosing them out of the next
    /// `pool` values), then polish.
    Block,
    /// Only polish: local improvement of the incumbent (for example an imported deck).
    Polish,
    /// Only climb: seeded hill climbs with long-distance moves from the incumbent (for
    /// example an imported deck), round after round.
    Climb,
}

/// Contest families topswops can enter.
#[derive(ValueEnum, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ContestFamily {
    /// Al Zimmermann 2011: one campaign per prime n from 2 to 97.
    Primes,
}

/// The heuristic flags of `topswops` (all stored with the campaign: they are part of every
/// result's provenance).
#[derive(Args, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct HeuristicArgs {
    /// Heuristic record hunting for large n (anytime, not exhaustive; n up to 32,768).
    #[arg(long)]
    #[serde(default)]
    pub heuristic: bool,
    /// Heuristic strategy (default block).
    #[arg(long, value_enum)]
    #[serde(default)]
    pub strategy: Option<Strategy>,
    /// Block size: heads chosen per growth stage (default 8, or fewer for small n).
    #[arg(long)]
    #[serde(default)]
    pub k: Option<u32>,
    /// Choose each block's k values out of the next POOL unused values (default k).
    #[arg(long)]
    #[serde(default)]
    pub pool: Option<u32>,
    /// Units per stage (default 16).
    #[arg(long)]
    #[serde(default)]
    pub units: Option<u32>,
    /// Polish window: consecutive heads reordered together (default 5).
    #[arg(long)]
    #[serde(default)]
    pub window: Option<u32>,
    /// Polish rounds in a row without improvement (each with a wider window) before
    /// climbing starts (default 3; 0 = no polishing: the campaign ends when growth does,
    /// or climbs right after growth when --rounds is given).
    #[arg(long)]
    #[serde(default)]
    pub polish_stall: Option<u32>,
    /// Climb rounds before the campaign ends (default: none given = never ends, anytime;
    /// 0 = no climbing).
    #[arg(long)]
    #[serde(default)]
    pub rounds: Option<u32>,
    /// Move evaluations per climb unit (default: about a few seconds of one core, from n).
    #[arg(long)]
    #[serde(default)]
    pub budget: Option<u32>,
    /// A contest family: `primes` = one campaign per prime n in 2..97.
    #[arg(long, value_enum)]
    #[serde(default)]
    pub contest: Option<ContestFamily>,
    /// In a contest family, run exact campaigns up to this n (default 11), heuristic above.
    #[arg(long)]
    #[serde(default)]
    pub exact_up_to: Option<u32>,
}

/// The default move evaluations of a climb unit: about 5 s of one core (measured: an
/// evaluation takes about 22 us at n = 97 and 4.5 ms at n = 1,000, AVX-512, so ~ n^2.3).
pub fn default_budget(n: u32) -> u32 {
    let cost = f64::from(n).powf(2.3);
    (8e9 / cost).clamp(16.0, 1e6) as u32
}

/// The primes of the 2011 contest.
pub fn contest_primes() -> Vec<u32> {
    (2..=97u32)
        .filter(|&n| (2..n).take_while(|d| d * d <= n).all(|d| n % d != 0))
        .collect()
}

/// A heuristic Topswops instance.
pub struct Heuristic {
    n: usize,
    args: HeuristicArgs,
    strategy: Strategy,
    k: usize,
    pool: usize,
    units: u64,
    window: usize,
    polish_stall: u64,
    /// Climb rounds (`None`: forever).
    rounds: Option<u64>,
    budget: u64,
    kernel: Kernel,
    /// Recent prefix states (tracked), most recent last.
    cache: Mutex<Vec<(Vec<Card>, HeadState)>>,
}

/// What a split cursor or unit is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Grow = 0,
    Polish = 1,
    Climb = 2,
}

impl Phase {
    fn from_byte(byte: u64) -> Option<Phase> {
        match byte {
            0 => Some(Phase::Grow),
            1 => Some(Phase::Polish),
            2 => Some(Phase::Climb),
            _ => None,
        }
    }
}

/// The split cursor: the stage being split and how far.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Cursor {
    phase: Phase,
    stage: u64,
    /// Grow: the prefix (heads before 1). Polish: the whole heads sequence.
    heads: Vec<Card>,
    next: u64,
    total: u64,
    window: u64,
    stall: u64,
    start_flips: u64,
    /// Climb rounds started before this stage (written last, absent in older cursors).
    climbed: u64,
}

/// One unit: a range of a stage (climb: move evaluations `0..budget` with a seed).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Unit {
    phase: Phase,
    stage: u64,
    from: u64,
    to: u64,
    window: u64,
    heads: Vec<Card>,
    /// The climb's seed (written last, climb units only).
    seed: u64,
}

impl Cursor {
    fn encode(&self, n: usize) -> Vec<u8> {
        let mut w = Writer::default();
        for v in [
            self.phase as u64,
            self.stage,
            self.next,
            self.total,
            self.window,
            self.stall,
            self.start_flips,
        ] {
            w.varint(v);
        }
        w.heads(n, &self.heads);
        w.varint(self.climbed);
        w.0
    }

    fn decode(bytes: &[u8], n: usize) -> Result<Cursor, ProblemError> {
        let mut r = Reader::new(bytes, "cursor");
        let phase = Phase::from_byte(r.varint()?).ok_or_else(|| r.bad("unknown phase"))?;
        let stage = r.varint()?;
        let next = r.varint()?;
        let total = r.varint()?;
        let window = r.bounded(n as u64, "window")?;
        let stall = r.bounded(u64::from(MAX_STALL), "stall")?;
        let start_flips = r.varint()?;
        let heads = r.heads(n)?;
        let climbed = if r.at_end() { 0 } else { r.varint()? };
        r.finish()?;
        if next > total {
            return Err(ProblemError::InvalidUnit(
                "topswops cursor: next beyond total".into(),
            ));
        }
        Ok(Cursor {
            phase,
            stage,
            heads,
            next,
            total,
            window,
            stall,
            start_flips,
            climbed,
        })
    }
}

impl Unit {
    fn encode(&self, n: usize) -> Vec<u8> {
        let mut w = Writer::default();
        for v in [
            self.phase as u64,
            self.stage,
            self.from,
            self.to,
            self.window,
        ] {
            w.varint(v);
        }
        w.heads(n, &self.heads);
        if self.phase == Phase::Climb {
            w.varint(self.seed);
        }
        w.0
    }

    fn decode(bytes: &[u8], n: usize) -> Result<Unit, ProblemError> {
        let mut r = Reader::new(bytes, "unit");
        let phase = Phase::from_byte(r.varint()?).ok_or_else(|| r.bad("unknown phase"))?;
        let stage = r.varint()?;
        let from = r.varint()?;
        let to = r.varint()?;
        let window = r.bounded(n as u64, "window")?;
        let heads = r.heads(n)?;
        let seed = if phase == Phase::Climb {
            r.varint()?
        } else {
            0
        };
        r.finish()?;
        if from >= to {
            return Err(ProblemError::InvalidUnit(
                "topswops unit: empty range".into(),
            ));
        }
        Ok(Unit {
            phase,
            stage,
            from,
            to,
            window,
            heads,
            seed,
        })
    }

    fn label(&self) -> String {
        match self.phase {
            Phase::Grow => format!(
                "grow stage {} (prefix {}) orders {}..{}",
                self.stage,
                self.heads.len(),
                self.from,
                self.to
            ),
            Phase::Polish => format!(
                "polish round {} window {} positions {}..{}",
                self.stage, self.window, self.from, self.to
            ),
            Phase::Climb => format!(
                "climb round {} seed {:#018x} budget {} moves",
                self.stage, self.seed, self.to
            ),
        }
    }
}

impl Heuristic {
    /// Validates the flags for an `n`-card campaign and fills in the defaults.
    pub fn new(n: u32, mut args: HeuristicArgs) -> Result<Heuristic, ProblemError> {
        let bad = |why: String| ProblemError::InvalidParams(format!("topswops --heuristic: {why}"));
        if n < 2 || n as usize > MAX_CARDS {
            return Err(bad(format!("--n {n} is out of range: 2..={MAX_CARDS}")));
        }
        if args.contest.is_some() || args.exact_up_to.is_some() {
            return Err(bad(
                "--contest names a family of campaigns, not one campaign".into(),
            ));
        }
        let strategy = *args.strategy.get_or_insert(Strategy::Block);
        let k = *args.k.get_or_insert((n - 1).min(8));
        let pool = *args.pool.get_or_insert(k);
        let units = *args.units.get_or_insert(16);
        let window = *args.window.get_or_insert(5);
        let polish_stall = *args.polish_stall.get_or_insert(MAX_STALL);
        let rounds = args.rounds;
        let budget = *args.budget.get_or_insert(default_budget(n));
        if polish_stall > MAX_STALL || (polish_stall == 0 && strategy == Strategy::Polish) {
            return Err(bad(format!(
                "--polish-stall {polish_stall} is out of range: 0..={MAX_STALL} (1.. with \
                 --strategy polish)"
            )));
        }
        if budget == 0 {
            return Err(bad("--budget must be at least 1".into()));
        }
        if rounds == Some(0) && strategy == Strategy::Climb {
            return Err(bad(
                "--rounds 0 leaves --strategy climb nothing to do".into()
            ));
        }
        if k == 0 || k > MAX_POOL || pool < k || pool > MAX_POOL {
            return Err(bad(format!(
                "need 1 <= k <= pool <= {MAX_POOL}, got k = {k}, pool = {pool}"
            )));
        }
        if units == 0 || units > 100_000 {
            return Err(bad(format!("--units {units} is out of range: 1..=100000")));
        }
        if !(2..=6).contains(&window) {
            return Err(bad(format!("--window {window} is out of range: 2..=6")));
        }
        Ok(Heuristic {
            n: n as usize,
            args,
            strategy,
            k: k as usize,
            pool: pool as usize,
            units: u64::from(units),
            window: window as usize,
            polish_stall: u64::from(polish_stall),
            rounds: rounds.map(u64::from),
            budget: u64::from(budget),
            kernel: Kernel::detect(),
            cache: Mutex::new(Vec::new()),
        })
    }

    /// The flags with every default filled in.
    pub fn args(&self) -> &HeuristicArgs {
        &self.args
    }

    /// The deck of a solution document (a permutation of 1..=n).
    pub fn deck_of(&self, solution: &Value) -> Result<Vec<Card>, ProblemError> {
        let bad = |why: String| ProblemError::InvalidSolution(format!("topswops: {why}"));
        let deck = solution
            .get("deck")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("expected {\"deck\": [cards, top first], \"flips\": f}".into()))?;
        if deck.len() != self.n {
            return Err(bad(format!(
                "deck has {} cards, the campaign has n = {}",
                deck.len(),
                self.n
            )));
        }
        deck.iter()
            .map(|card| {
                card.as_u64()
                    .filter(|&c| c >= 1 && c <= self.n as u64)
                    .map(|c| c as Card)
                    .ok_or_else(|| bad(format!("card {card} is not in 1..={}", self.n)))
            })
            .collect()
    }

    /// Verifies a solution by plain replay; returns its flips.
    pub fn score(&self, solution: &Value) -> Result<i64, ProblemError> {
        let deck = self.deck_of(solution)?;
        let flips = replay_flips(&deck).map_err(ProblemError::InvalidSolution)?;
        if let Some(claimed) = solution.get("flips") {
            if claimed.as_u64() != Some(flips) {
                return Err(ProblemError::InvalidSolution(format!(
                    "topswops: the deck takes {flips} flips, not {claimed}"
                )));
            }
        }
        i64::try_from(flips).map_err(|_| ProblemError::InvalidSolution("too many flips".into()))
    }

    /// True at a stage boundary (the whole stage was split).
    pub fn waits_at(&self, cursor: &[u8]) -> bool {
        Cursor::decode(cursor, self.n).is_ok_and(|c| c.next >= c.total)
    }

    /// The next units: continues the stage in `cursor`, or starts the next stage from the
    /// incumbent when the stage was wholly split (the coordinator calls then only once all
    /// its units are done).
    pub fn split_from(
        &self,
        cursor: Option<&[u8]>,
        max_units: usize,
        incumbent: Option<&Value>,
    ) -> Result<SplitBatch, ProblemError> {
        let previous = cursor.map(|c| Cursor::decode(c, self.n)).transpose()?;
        let mut cursor = match previous {
            Some(c) if c.next < c.total => c,
            previous => {
                let best = match incumbent {
                    Some(solution) => {
                        let deck = self.deck_of(solution)?;
                        let flips = solution.get("flips").and_then(Value::as_u64);
                        let heads = to_heads(&deck).map_err(ProblemError::InvalidSolution)?;
                        Some((heads, flips))
                    }
                    None => None,
                };
                match self.next_stage(previous.as_ref(), best)? {
                    Some(c) => c,
                    None => {
                        return Ok(SplitBatch {
                            units: Vec::new(),
                            next: None,
                        })
                    }
                }
            }
        };
        let per_unit = cursor.total.div_ceil(self.units).max(1);
        let mut units = Vec::new();
        while units.len() < max_units.max(1) && cursor.next < cursor.total {
            let unit = if cursor.phase == Phase::Climb {
                // One seeded climb per unit: the seed depends on the stage and the unit.
                let seed = moves::mix(cursor.stage << 32 | cursor.next);
                cursor.next += 1;
                Unit {
                    phase: Phase::Climb,
                    stage: cursor.stage,
                    from: 0,
                    to: self.budget,
                    window: 0,
                    heads: cursor.heads.clone(),
                    seed,
                }
            } else {
                let to = cursor.total.min(cursor.next + per_unit);
                let unit = Unit {
                    phase: cursor.phase,
                    stage: cursor.stage,
                    from: cursor.next,
                    to,
                    window: cursor.window,
                    heads: cursor.heads.clone(),
                    seed: 0,
                };
                cursor.next = to;
                unit
            };
            units.push(UnitSpec {
                label: unit.label(),
                payload: unit.encode(self.n),
            });
        }
        Ok(SplitBatch {
            units,
            next: Some(cursor.encode(self.n)),
        })
    }

    /// Plans the stage after `previous` from the incumbent's heads (and flips); `None` when
    /// the campaign is done.
    fn next_stage(
        &self,
        previous: Option<&Cursor>,
        best: Option<(Vec<Card>, Option<u64>)>,
    ) -> Result<Option<Cursor>, ProblemError> {
        let stage = previous.map_or(0, |c| c.stage + 1);
        let (heads, flips) = match best {
            Some((heads, flips)) => (heads, flips.unwrap_or(0)),
            None => (Vec::new(), 0),
        };
        let prefix: Vec<Card> = heads[..visited(&heads).saturating_sub(1)].to_vec();
        if self.strategy == Strategy::Block && prefix.len() < self.n - 1 {
            let (pool, k) = self.pool_after(&prefix);
            let total = arrangement::count(pool.len(), k)
                .ok_or_else(|| ProblemError::InvalidParams("stage too large".into()))?;
            return Ok(Some(Cursor {
                phase: Phase::Grow,
                stage,
                heads: prefix,
                next: 0,
                total,
                window: 0,
                stall: 0,
                start_flips: flips,
                climbed: 0,
            }));
        }
        let heads = if heads.is_empty() {
            (2..=self.n as Card).chain([1]).collect()
        } else {
            heads
        };
        let movable = (visited(&heads) as u64).saturating_sub(1);
        let climb = |climbed: u64, heads: Vec<Card>| {
            let over = self.rounds.is_some_and(|r| climbed >= r);
            (!over && movable >= 2).then_some(Cursor {
                phase: Phase::Climb,
                stage,
                heads,
                next: 0,
                total: self.units,
                window: 0,
                stall: 0,
                start_flips: flips,
                climbed,
            })
        };
        match previous {
            Some(c) if c.phase == Phase::Climb => return Ok(climb(c.climbed + 1, heads)),
            _ if self.strategy == Strategy::Climb => return Ok(climb(0, heads)),
            // No polishing: growth ends the campaign, unless climb rounds were asked for.
            _ if self.polish_stall == 0 => {
                return Ok(self.rounds.and_then(|_| climb(0, heads)));
            }
            _ => {}
        }
        let stall = match previous {
            Some(c) if c.phase == Phase::Polish && flips <= c.start_flips => c.stall + 1,
            _ => 0,
        };
        let window = self.window as u64 + stall;
        if stall > self.polish_stall || movable < window {
            return Ok(climb(0, heads));
        }
        Ok(Some(Cursor {
            phase: Phase::Polish,
            stage,
            heads,
            next: 0,
            total: movable - window + 1,
            window,
            stall,
            start_flips: flips,
            climbed: 0,
        }))
    }

    /// The growth pool after `prefix`: the smallest unused values from 2 up, and the block.
    fn pool_after(&self, prefix: &[Card]) -> (Vec<Card>, usize) {
        let mut used = vec![false; self.n + 1];
        for &h in prefix {
            used[h as usize] = true;
        }
        let remaining = self.n - 1 - prefix.len();
        let pool: Vec<Card> = (2..=self.n)
            .filter(|&v| !used[v])
            .take(self.pool.min(remaining))
            .map(|v| v as Card)
            .collect();
        (pool, self.k.min(remaining))
    }

    /// The tracked state after feeding `prefix`, from the nearest cached state.
    fn prefix_state(&self, prefix: &[Card]) -> Result<HeadState, ProblemError> {
        let cached = {
            let cache = self.cache.lock().expect("poisoned");
            cache
                .iter()
                .filter(|(p, _)| prefix.starts_with(p))
                .max_by_key(|(p, _)| p.len())
                .cloned()
        };
        let (done, mut state) = match cached {
            Some((p, state)) => (p.len(), state),
            None => (0, HeadState::tracked(self.n).map_err(ProblemError::Solver)?),
        };
        for &h in &prefix[done..] {
            state
                .feed(self.kernel, h)
                .map_err(|e| ProblemError::InvalidUnit(format!("topswops unit: {e}")))?;
        }
        let mut cache = self.cache.lock().expect("poisoned");
        cache.retain(|(p, _)| p.as_slice() != prefix);
        cache.push((prefix.to_vec(), state.clone()));
        if cache.len() > CACHED_STATES {
            cache.remove(0);
        }
        Ok(state)
    }

    /// Solves one unit.
    pub fn solve(
        &self,
        payload: &[u8],
        ctx: &dyn SolveContext,
    ) -> Result<UnitOutcome, ProblemError> {
        let unit = Unit::decode(payload, self.n)?;
        if unit.phase == Phase::Climb {
            return self.climb(&unit, ctx);
        }
        let resume = match ctx.resume_cursor() {
            Some(bytes) => {
                let mut r = Reader::new(bytes, "checkpoint");
                let at = r.varint()?;
                if !(unit.from..=unit.to).contains(&at) {
                    return Err(r.bad("outside the unit"));
                }
                r.finish()?;
                at
            }
            None => unit.from,
        };
        let mut run = Run {
            ctx,
            best: None,
            last_checkpoint: Instant::now(),
            done: 0,
            total: unit.to - unit.from,
        };
        let stopped = match unit.phase {
            Phase::Grow => self.grow(&unit, resume, &mut run)?,
            // Climb units were sent to `climb` above.
            Phase::Polish | Phase::Climb => self.polish(&unit, resume, &mut run)?,
        };
        if stopped {
            return Ok(UnitOutcome::Stopped);
        }
        Ok(UnitOutcome::Searched {
            best: run.best.take().filter(|b| run.beats_bound(b.score)),
            hits: Vec::new(),
        })
    }

    fn grow(&self, unit: &Unit, from: u64, run: &mut Run) -> Result<bool, ProblemError> {
        let bad = |why: &str| ProblemError::InvalidUnit(format!("topswops grow unit: {why}"));
        if unit.heads.len() >= self.n - 1 || unit.heads.contains(&1) {
            return Err(bad("the prefix leaves nothing to grow"));
        }
        let (pool, k) = self.pool_after(&unit.heads);
        let total = arrangement::count(pool.len(), k).unwrap_or(u64::MAX);
        if unit.to > total {
            return Err(bad("range beyond the stage's arrangements"));
        }
        let base = self.prefix_state(&unit.heads)?;
        let stage = Stage {
            base: &base,
            pool: &pool,
            k,
            kernel: self.kernel,
        };
        let mut best: Option<(u64, Vec<Card>)> = None;
        let mut failure = None;
        let completed = stage.run(from, unit.to, &mut |index, values, state| {
            if best.as_ref().is_none_or(|(f, _)| state.flips() > *f) {
                best = Some((state.flips(), values.to_vec()));
            }
            run.done += 1;
            if run.done.is_multiple_of(256) && run.checkpoint_due() {
                match self.grown_solution(&base, best.as_ref()) {
                    Ok(found) => run.checkpoint(found, index + 1),
                    Err(e) => {
                        failure = Some(e);
                        return false;
                    }
                }
                return !run.ctx.stop_requested();
            }
            true
        });
        if let Some(e) = failure {
            return Err(e);
        }
        run.offer(self.grown_solution(&base, best.as_ref())?);
        Ok(!completed)
    }

    /// The deck of a grown prefix: base, then `values`, then 1; unused values never reach
    /// the top.
    fn grown_solution(
        &self,
        base: &HeadState,
        best: Option<&(u64, Vec<Card>)>,
    ) -> Result<Option<Scored>, ProblemError> {
        let Some((flips, values)) = best else {
            return Ok(None);
        };
        let mut state = base.clone();
        for &v in values.iter().chain(&[1]) {
            state.feed(self.kernel, v).map_err(ProblemError::Solver)?;
        }
        let deck = state
            .deck()
            .ok_or_else(|| ProblemError::Solver("untracked state".into()))?;
        Ok(Some(solution(&deck, *flips)))
    }

    fn polish(&self, unit: &Unit, from: u64, run: &mut Run) -> Result<bool, ProblemError> {
        let bad = |why: &str| ProblemError::InvalidUnit(format!("topswops polish unit: {why}"));
        let heads = &unit.heads;
        let window = unit.window as usize;
        if heads.len() != self.n || window < 2 {
            return Err(bad(
                "needs the whole heads sequence and a window of 2 or more",
            ));
        }
        let movable = visited(heads) - 1;
        if unit.to as usize + window - 1 > movable {
            return Err(bad("window beyond the heads that reach the top"));
        }
        let mut base = self.prefix_state(&heads[..from as usize])?.untracked();
        let mut scratch = base.clone();
        let mut best: Option<(u64, usize, Vec<Card>)> = None;
        for position in from..unit.to {
            let i = position as usize;
            let window_values = &heads[i..i + window];
            let tail = &heads[i + window..movable];
            let stage = Stage {
                base: &base,
                pool: window_values,
                k: window,
                kernel: self.kernel,
            };
            stage.run(1, u64::MAX, &mut |_, values, state| {
                scratch.copy_from(state);
                for &h in tail {
                    scratch.feed_unchecked(self.kernel, h);
                }
                let flips = scratch.flips();
                if best.as_ref().is_none_or(|(f, _, _)| flips > *f) {
                    best = Some((flips, i, values.to_vec()));
                }
                true
            });
            base.feed_unchecked(self.kernel, heads[i]);
            run.done += 1;
            if run.checkpoint_due() {
                run.checkpoint(self.polished_solution(heads, best.as_ref())?, position + 1);
                if run.ctx.stop_requested() {
                    return Ok(true);
                }
            }
        }
        run.offer(self.polished_solution(heads, best.as_ref())?);
        Ok(false)
    }

    fn polished_solution(
        &self,
        heads: &[Card],
        best: Option<&(u64, usize, Vec<Card>)>,
    ) -> Result<Option<Scored>, ProblemError> {
        let Some((flips, at, values)) = best else {
            return Ok(None);
        };
        let mut changed = heads.to_vec();
        changed[*at..*at + values.len()].copy_from_slice(values);
        let deck = to_deck(&changed).map_err(ProblemError::Solver)?;
        Ok(Some(solution(&deck, *flips)))
    }
}

/// A unit's bookkeeping: its best, progress and checkpoints.
struct Run<'a> {
    ctx: &'a dyn SolveContext,
    best: Option<Scored>,
    last_checkpoint: Instant,
    done: u64,
    total: u64,
}

impl Run<'_> {
    fn beats_bound(&self, score: i64) -> bool {
        self.ctx.bound().is_none_or(|b| score > b)
    }

    fn offer(&mut self, found: Option<Scored>) {
        if let Some(found) = found {
            if self.best.as_ref().is_none_or(|b| found.score > b.score) {
                self.best = Some(found);
            }
        }
    }

    fn checkpoint_due(&self) -> bool {
        self.last_checkpoint.elapsed() >= CHECKPOINT_EVERY || self.ctx.stop_requested()
    }

    /// Reports the best so far (when it beats the bound), then checkpoints at `next`.
    fn checkpoint(&mut self, found: Option<Scored>, next: u64) {
        let mut w = Writer::default();
        w.varint(next);
        self.checkpoint_with(found, w.0);
    }

    /// Reports the best so far (when it beats the bound), then checkpoints `cursor`.
    fn checkpoint_with(&mut self, found: Option<Scored>, cursor: Vec<u8>) {
        self.offer(found);
        if let Some(best) = &self.best {
            if self.beats_bound(best.score) {
                self.ctx.improve(best.clone());
            }
        }
        self.ctx.checkpoint(cursor);
        self.ctx
            .progress(self.done, Some(self.done as f64 / self.total.max(1) as f64));
        self.last_checkpoint = Instant::now();
    }
}

/// The solution document of a deck.
pub fn solution(deck: &[Card], flips: u64) -> Scored {
    Scored {
        solution: json!({"deck": deck, "flips": flips}),
        score: flips as i64,
    }
}

/// Reads a submission line (cards separated by commas or spaces, top first) or a JSON
/// solution document into a solution document.
pub fn parse_submission(text: &str) -> Result<Value, ProblemError> {
    let text = text.trim();
    if text.starts_with('{') {
        return serde_json::from_str(text)
            .map_err(|e| ProblemError::InvalidSolution(format!("topswops: bad JSON: {e}")));
    }
    let deck: Vec<u64> = text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|f| !f.is_empty())
        .map(|f| {
            f.parse::<u64>().map_err(|_| {
                ProblemError::InvalidSolution(format!("topswops: {f:?} is not a card number"))
            })
        })
        .collect::<Result<_, _>>()?;
    if deck.is_empty() {
        return Err(ProblemError::InvalidSolution(
            "topswops: an empty line is not a deck".into(),
        ));
    }
    Ok(json!({ "deck": deck }))
}

/// Renders a deck as one submission line: cards separated by commas.
pub fn render_deck(solution: &Value) -> Option<String> {
    let deck = solution.get("deck")?.as_array()?;
    let cards: Option<Vec<String>> = deck
        .iter()
        .map(|c| c.as_u64().map(|c| c.to_string()))
        .collect();
    Some(cards?.join(",") + "\n")
}

#[cfg(test)]
mod tests;
