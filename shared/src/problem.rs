//! The interface every problem implements, for all three kinds of search:
//! optimisation (max/min with a shared incumbent bound), exact counting (unit results add up)
//! and sampling (units produce many verified objects).
//!
//! The coordinator uses a problem to split a campaign into units (lazily, through a cursor)
//! and to verify what workers claim; the worker uses it to solve units. Neither side names a
//! specific problem: they go through [`crate::registry`].

use num_bigint::BigUint;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// What a campaign computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Objective {
    /// Find a solution of maximum score.
    Max,
    /// Find a solution of minimum score.
    Min,
    /// Count exactly: unit results add up to the campaign's total.
    Count,
    /// Produce many valid objects (each verified by the coordinator).
    Sample,
}

impl Objective {
    /// The lowercase name used on the wire and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Objective::Max => "max",
            Objective::Min => "min",
            Objective::Count => "count",
            Objective::Sample => "sample",
        }
    }

    /// Parses [`Objective::as_str`] back.
    pub fn parse(text: &str) -> Option<Objective> {
        match text {
            "max" => Some(Objective::Max),
            "min" => Some(Objective::Min),
            "count" => Some(Objective::Count),
            "sample" => Some(Objective::Sample),
            _ => None,
        }
    }

    /// True for the optimisation objectives (max and min).
    pub fn is_optimisation(self) -> bool {
        matches!(self, Objective::Max | Objective::Min)
    }

    /// True when `candidate` is strictly better than `incumbent` under this objective.
    /// Always false for count and sample objectives.
    pub fn improves(self, candidate: i64, incumbent: Option<i64>) -> bool {
        match (self, incumbent) {
            (Objective::Max | Objective::Min, None) => true,
            (Objective::Max, Some(best)) => candidate > best,
            (Objective::Min, Some(best)) => candidate < best,
            _ => false,
        }
    }
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything that can go wrong inside a problem: bad parameters, undecodable units or
/// cursors, invalid solutions, solver failures.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProblemError {
    /// No problem of that name is registered.
    #[error("unknown problem {0:?}")]
    UnknownProblem(String),
    /// The campaign parameters are malformed or out of range.
    #[error("invalid parameters: {0}")]
    InvalidParams(String),
    /// A unit payload or checkpoint cursor does not decode.
    #[error("invalid unit: {0}")]
    InvalidUnit(String),
    /// A claimed solution is malformed or breaks the problem's rules.
    #[error("invalid solution: {0}")]
    InvalidSolution(String),
    /// A claimed result (count, sample batch) is malformed.
    #[error("invalid result: {0}")]
    InvalidResult(String),
    /// The problem does not support this operation.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The solver failed.
    #[error("solver failed: {0}")]
    Solver(String),
    /// The verifier itself failed (a user's checker crashed, hung or printed nonsense): the
    /// claim is neither accepted nor held against the worker who made it.
    #[error("verifier failed: {0}")]
    VerifierFailed(String),
}

/// One piece of a campaign's search space: an opaque payload plus a human-readable label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitSpec {
    /// Shown to people (logs, status, the web UI).
    pub label: String,
    /// Problem-defined encoding of the piece.
    pub payload: Vec<u8>,
}

/// The next units of a campaign, produced lazily by [`Problem::split`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitBatch {
    /// Units in order; never more than asked for.
    pub units: Vec<UnitSpec>,
    /// Cursor to continue from, or `None` when the space is exhausted.
    pub next: Option<Vec<u8>>,
}

/// A solution with the score its finder claims (optimisation objectives).
#[derive(Clone, Debug, PartialEq)]
pub struct Scored {
    /// The problem-defined solution document.
    pub solution: Value,
    /// Its score as computed by the finder; the coordinator recomputes it.
    pub score: i64,
}

/// How a unit's solve ended.
#[derive(Clone, Debug, PartialEq)]
pub enum UnitOutcome {
    /// Count objective: the unit's exact count.
    Count(BigUint),
    /// Optimisation: the whole unit was searched.
    Searched {
        /// Its best solution, if it found one that beat the bound it was given.
        best: Option<Scored>,
        /// In proof mode, every solution of the unit that reaches the target (each is
        /// checked by [`Verification::verify_sample`]).
        hits: Vec<Value>,
    },
    /// Sample objective: the unit's objects.
    Samples(Vec<Value>),
    /// Optimisation by expansion (best-first searches whose results create new units): the
    /// unit was searched, and these follow-up units join the campaign. The coordinator
    /// checks each child with [`Units::child_priority`], drops children it has seen
    /// before (same payload), and grants pending units lowest priority first.
    Expanded {
        /// The unit's best solution, if it beat the bound it was given.
        best: Option<Scored>,
        /// Follow-up units (for example a frontier entry's neighbours).
        children: Vec<UnitSpec>,
    },
    /// The solver stopped early because [`SolveContext::stop_requested`] said so; its last
    /// checkpoint (if any) was passed to [`SolveContext::checkpoint`].
    Stopped,
}

/// Largest provenance record ([`SolveContext::provenance`]) stored with a result, bytes of
/// JSON: a worker replaces a larger record by a marker saying so, and a coordinator refuses
/// a result carrying one.
pub const MAX_PROVENANCE_BYTES: usize = 64 << 10;

/// Largest checkpoint cursor ([`SolveContext::checkpoint`]) a unit may hand in, bytes (a
/// user's solver may checkpoint a few MB of files): a worker drops a larger checkpoint with
/// an error in its log (keeping the previous one), and a coordinator refuses a heartbeat,
/// release or donation carrying one.
pub const MAX_CHECKPOINT_BYTES: usize = 16 << 20;

/// What a running solver can see and say. Implemented by the worker (and by simple
/// in-memory contexts in tests). All methods are cheap and callable from any thread.
pub trait SolveContext: Sync {
    /// The checkpoint to resume from, when the unit ran before.
    fn resume_cursor(&self) -> Option<&[u8]>;
    /// The freshest campaign bound known (optimisation): prune what cannot beat it.
    fn bound(&self) -> Option<i64>;
    /// Reports an improved solution at once (it is verified and shared by the coordinator).
    fn improve(&self, found: Scored);
    /// Reports work done so far in this unit (nodes) and, when known, the fraction done.
    fn progress(&self, nodes: u64, fraction: Option<f64>);
    /// Records a checkpoint from which the unit can resume.
    fn checkpoint(&self, cursor: Vec<u8>);
    /// True when the solver should save a checkpoint and return [`UnitOutcome::Stopped`].
    fn stop_requested(&self) -> bool;
    /// True when the coordinator would like this unit to donate part of its work.
    fn split_requested(&self) -> bool {
        false
    }
    /// Hands untouched parts of the unit to the coordinator as new units; from now on this
    /// solve covers only `remaining` (a payload of the same problem), and must not search
    /// what it donated. The default refuses (returns false): nothing was donated.
    fn donate(&self, units: Vec<UnitSpec>, remaining: Vec<u8>) -> bool {
        let _ = (units, remaining);
        false
    }
    /// Records facts about how this solve ran (for a user's solver: bundle digests, limits,
    /// sandbox applied, exit status, stderr tail) to store with the unit's result as
    /// provenance. The default drops them.
    fn provenance(&self, record: Value) {
        let _ = record;
    }
    /// Reports CPU seconds used by processes this solve started and reaped (a user's solver
    /// with the descendants it waited for, as `wait4` measures them), which the solving
    /// thread's own CPU clock does not see; the worker adds them to the unit's CPU time.
    /// Calls add up. The default drops them.
    fn child_cpu(&self, seconds: f64) {
        let _ = seconds;
    }
}

/// A problem instance with validated parameters: splitter, solver and verifier.
///
/// Three methods are required ([`Problem::objective`], [`Problem::split`],
/// [`Problem::solve`]); the others here describe the search and have defaults. What a
/// problem may do beyond that is grouped into capabilities, each a supertrait whose methods
/// all have defaults, so a problem states every capability (`impl Units for X {}` when it
/// has nothing to add) and overrides only what it supports:
///
/// | capability | methods | what it is for |
/// |---|---|---|
/// | [`Verification`] | `score`, `verify_sample`, `self_check` | the coordinator checks every claim (and, at `add`, its verifier) |
/// | [`Units`] | `check_donation`, `child_priority`, `join_units`, `bound_of_unit` | units beyond split and solve: donation, expansion, joining, per-unit bounds |
/// | [`Chains`] | `premises`, `predecessor`, `inherit`, `proven_solution` | results that build on other campaigns' results |
/// | [`Presentation`] | `render`, `render_samples`, `parse_submission`, `drawing` | showing results to people and reading submissions back |
/// | [`Placement`] | `requirements` | which workers may run the units (opt-in to native code, platforms) |
///
/// Callers holding a `dyn Problem` (or a `P: Problem`) call every method directly; code
/// naming a concrete problem type imports the capability traits it calls.
pub trait Problem:
    Verification + Units + Chains + Presentation + Placement + Send + Sync + 'static
{
    /// What the campaign computes.
    fn objective(&self) -> Objective;

    /// True when finishing every unit proves the result (exact optimum or exact count);
    /// false for heuristic, anytime searches.
    fn exhaustive(&self) -> bool {
        true
    }

    /// True when grind itself checks that the units cover the search space (it made the
    /// split), so that finishing every unit of an exhaustive campaign proves its result.
    /// False for a split grind cannot check (a user's own units file): a finished campaign
    /// is then recorded as the solver's claim, never as proven.
    fn coverage_checked(&self) -> bool {
        true
    }

    /// True when every solution a unit's solve reports lies in that unit's part of the
    /// search space (its own tree search found it there): then a replica's verified find in
    /// a unit contradicts another run's claim of "nothing better" about the same unit, and
    /// the coordinator judges the runs. The default, false, suits searches whose finds may
    /// leave the unit (a local search polishing a find, a heuristic): their runs are only
    /// compared.
    fn finds_stay_in_unit(&self) -> bool {
        false
    }

    /// The bound to prune with before any solution is known (for example a proven lower
    /// bound on the optimum minus one). `None` means no pruning until an incumbent exists.
    fn initial_bound(&self) -> Option<i64> {
        None
    }

    /// Produces up to `max_units` further units, continuing from `cursor` (`None` = start).
    fn split(&self, cursor: Option<&[u8]>, max_units: usize) -> Result<SplitBatch, ProblemError>;

    /// Like [`Problem::split`], for splitters whose later units depend on earlier results
    /// (staged searches): also sees the campaign's current best solution, if any. The
    /// coordinator always calls this one; the default ignores the incumbent.
    fn split_from(
        &self,
        cursor: Option<&[u8]>,
        max_units: usize,
        incumbent: Option<&Value>,
    ) -> Result<SplitBatch, ProblemError> {
        let _ = incumbent;
        self.split(cursor, max_units)
    }

    /// True when the split cursor `cursor` is a stage boundary: the coordinator splits no
    /// further until every unit created so far has finished, then calls
    /// [`Problem::split_from`] with the incumbent those units produced. The default: never.
    fn waits_at(&self, cursor: &[u8]) -> bool {
        let _ = cursor;
        false
    }

    /// Solves one unit. Runs on a worker's CPU pool; may use rayon inside.
    fn solve(&self, payload: &[u8], ctx: &dyn SolveContext) -> Result<UnitOutcome, ProblemError>;
}

/// Capability: checking what workers claim. Workers are untrusted; the coordinator accepts
/// a solution or a sample only once this says it is valid.
pub trait Verification {
    /// Verifies an optimisation solution and returns its true score.
    fn score(&self, solution: &Value) -> Result<i64, ProblemError> {
        let _ = solution;
        Err(ProblemError::Unsupported(
            "this problem has no solutions to score".into(),
        ))
    }

    /// Verifies one sampled object (sample objective), or one proof-mode hit (optimisation
    /// objective: a solution that must reach the campaign's target).
    fn verify_sample(&self, sample: &Value) -> Result<(), ProblemError> {
        let _ = sample;
        Err(ProblemError::Unsupported(
            "this problem produces no samples".into(),
        ))
    }

    /// Checks once, when a campaign is created (the coordinator's `add`, off the async
    /// runtime), that the verifier itself works, so that a broken one is caught before any
    /// worker starts: for a user's checker, a run on an empty solution, and on `sample` (a
    /// solution document, e.g. a file read with [`Presentation::parse_submission`]) when
    /// given, which must then be valid. `Ok` with what it found, for the operator;
    /// [`ProblemError::VerifierFailed`] when the verifier is broken. The default: nothing to
    /// check.
    fn self_check(&self, sample: Option<&Value>) -> Result<Option<String>, ProblemError> {
        let _ = sample;
        Ok(None)
    }
}

/// Capability: units beyond split and solve. A running unit may donate parts of itself,
/// expand into follow-up units, be joined with its neighbours, or carry a bound of its own.
pub trait Units {
    /// Checks a donation before the coordinator accepts it: a worker holding the unit `old`
    /// keeps `remaining` and hands `donated` back as new units. Accepts only when they cover
    /// exactly `old` (nothing outside it, no overlap, and nothing of it dropped unless the
    /// problem's own search shows the dropped part holds nothing better than `bound`, the
    /// campaign's best as the coordinator knows it). The default refuses: the problem never
    /// donates.
    fn check_donation(
        &self,
        old: &[u8],
        remaining: &[u8],
        donated: &[Vec<u8>],
        bound: Option<i64>,
    ) -> Result<(), ProblemError> {
        let _ = (old, remaining, donated, bound);
        Err(ProblemError::Unsupported(
            "this problem's units are never split by donation".into(),
        ))
    }

    /// Checks that `child` is a legitimate follow-up unit of the unit `parent` (see
    /// [`UnitOutcome::Expanded`]) and returns its priority: pending units are granted
    /// smallest priority first. The default refuses: the problem spawns no units.
    fn child_priority(&self, parent: &[u8], child: &[u8]) -> Result<i64, ProblemError> {
        let _ = (parent, child);
        Err(ProblemError::Unsupported(
            "this problem does not expand units into new units".into(),
        ))
    }

    /// Joins consecutive units of one split batch (in splitter order) into one unit that
    /// covers exactly their union, so that a campaign of tiny units costs fewer leases; the
    /// coordinator joins only what the splitter just produced, never units already granted.
    /// `None` (the default) keeps them apart.
    fn join_units(&self, units: &[UnitSpec]) -> Option<UnitSpec> {
        let _ = units;
        None
    }

    /// A bound on every solution of the unit `payload` (for `min`: a lower bound; for
    /// `max`: an upper bound) that the problem proves from the payload alone, without
    /// taking any worker's word (a bound a unit's creator wrote into it is not one). The
    /// coordinator stores it when the unit is created and shows the open campaign's bound as
    /// the weakest over its open units. The default: none.
    fn bound_of_unit(&self, payload: &[u8]) -> Option<i64> {
        let _ = payload;
        None
    }
}

/// Capability: results that build on other results. An instance may state premises, build
/// on a predecessor's proven result, and restate its best solution once proven.
pub trait Chains {
    /// The results this instance's proof takes as given because its parameters state them
    /// (for example Topswops `--known` f(m), used as pruning bounds). The coordinator asks
    /// once, when it creates the campaign from the parameters as given, stores the answer
    /// and backs each premise with a proven campaign of the same database; while one is not
    /// backed, a finished campaign is a conditional proof. Values the problem computed itself
    /// are not premises. The default: none.
    fn premises(&self) -> Vec<crate::premise::Premise> {
        Vec::new()
    }

    /// The instance whose proven result this one builds on (for example the sieve's N - 1,
    /// whose optimal game and value give N a starting game and a ceiling). The coordinator
    /// asks once, at creation, and links the campaign to a matching campaign of the same
    /// database; see [`Chains::inherit`]. The default: none.
    fn predecessor(&self) -> Option<crate::premise::Predecessor> {
        None
    }

    /// What this instance takes from its predecessor's finished campaign: `value`, the
    /// optimum that campaign states, and `solution`, its best solution (both verified by the
    /// coordinator on the predecessor). The coordinator verifies the returned starting
    /// solution, and takes the ceiling only as a premise ("the predecessor's optimum is
    /// `value`"), so the result is proven only when the predecessor's is. The default:
    /// nothing.
    fn inherit(
        &self,
        value: i64,
        solution: &Value,
    ) -> Result<crate::premise::Inherited, ProblemError> {
        let _ = (value, solution);
        Ok(crate::premise::Inherited::default())
    }

    /// The best solution restated once an exhaustive campaign has finished and so proven it
    /// optimal (for example with a stated lower bound raised to its score). `None` (the
    /// default) keeps it as it is.
    fn proven_solution(&self, solution: &Value) -> Option<Value> {
        let _ = solution;
        None
    }
}

/// Capability: showing results to people (text for export and contest submissions, a
/// drawing for the web pages) and reading submissions back.
pub trait Presentation {
    /// Renders a result for people and contest submissions: the best solution (optimisation),
    /// the total (count), or nothing special. The default is the JSON text or the value.
    fn render(&self, value: &str, solution: Option<&Value>) -> String {
        match solution {
            Some(sol) => format!("{value}\n{sol}\n"),
            None => format!("{value}\n"),
        }
    }

    /// Renders a sample campaign's samples for export (default: one JSON document a line).
    fn render_samples(&self, samples: &[Value]) -> String {
        samples.iter().map(|s| format!("{s}\n")).collect()
    }

    /// Reads one entry of a submission file (what [`Presentation::render`] writes for a
    /// solution) back into a solution document, for importing previous submissions. The
    /// default reads a JSON document.
    fn parse_submission(&self, text: &str) -> Result<Value, ProblemError> {
        serde_json::from_str(text.trim())
            .map_err(|e| ProblemError::InvalidSolution(format!("not a JSON solution: {e}")))
    }

    /// A drawing of `solution` (a campaign's best solution, already verified) for the web
    /// pages, in the neutral vocabulary of [`crate::drawing`]; `None` (the default) when the
    /// text rendering says it all or the document is not one this problem draws.
    fn drawing(&self, solution: &Value) -> Option<crate::drawing::Drawing> {
        let _ = solution;
        None
    }
}

/// Capability: where the units may run. The default (built-in problems): on any worker.
pub trait Placement {
    /// What a worker needs to be granted this instance's units.
    fn requirements(&self) -> crate::placement::Requirements {
        crate::placement::Requirements::default()
    }
}

/// A [`SolveContext`] for running a unit alone: no bound sharing, no stop requests.
/// Used by tests, benchmarks and verifiers that re-run units locally.
#[derive(Default)]
pub struct LocalContext {
    /// The checkpoint to resume from.
    pub resume: Option<Vec<u8>>,
    /// A fixed bound to prune with.
    pub fixed_bound: Option<i64>,
    improvements: std::sync::Mutex<Vec<Scored>>,
    checkpoints: std::sync::Mutex<Vec<Vec<u8>>>,
    /// When set, `stop_requested` answers true once this many checkpoints were taken.
    pub stop_after_checkpoints: Option<usize>,
}

impl LocalContext {
    /// A context that resumes from `cursor`.
    pub fn resuming(cursor: Vec<u8>) -> Self {
        LocalContext {
            resume: Some(cursor),
            ..Default::default()
        }
    }

    /// A context that asks the solver to stop once `checkpoints` checkpoints were taken.
    pub fn stopping_after(checkpoints: usize) -> Self {
        LocalContext {
            stop_after_checkpoints: Some(checkpoints),
            ..Default::default()
        }
    }

    /// Improvements reported so far.
    pub fn improvements(&self) -> Vec<Scored> {
        self.improvements.lock().expect("poisoned").clone()
    }

    /// Checkpoints taken so far.
    pub fn checkpoints(&self) -> Vec<Vec<u8>> {
        self.checkpoints.lock().expect("poisoned").clone()
    }
}

impl SolveContext for LocalContext {
    fn resume_cursor(&self) -> Option<&[u8]> {
        self.resume.as_deref()
    }
    fn bound(&self) -> Option<i64> {
        self.fixed_bound
    }
    fn improve(&self, found: Scored) {
        self.improvements.lock().expect("poisoned").push(found);
    }
    fn progress(&self, _nodes: u64, _fraction: Option<f64>) {}
    fn checkpoint(&self, cursor: Vec<u8>) {
        self.checkpoints.lock().expect("poisoned").push(cursor);
    }
    fn stop_requested(&self) -> bool {
        match self.stop_after_checkpoints {
            Some(limit) => self.checkpoints.lock().expect("poisoned").len() >= limit,
            None => false,
        }
    }
}

/// Small helpers for fixed-width little-endian payload codecs.
pub mod codec {
    use super::ProblemError;

    /// Encodes a list of u64 values.
    pub fn encode_u64s(values: &[u64]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// Decodes exactly `N` u64 values, naming `what` in the error.
    pub fn decode_u64s<const N: usize>(bytes: &[u8], what: &str) -> Result<[u64; N], ProblemError> {
        if bytes.len() != N * 8 {
            return Err(ProblemError::InvalidUnit(format!(
                "{what}: expected {} bytes, got {}",
                N * 8,
                bytes.len()
            )));
        }
        let mut out = [0u64; N];
        for (slot, chunk) in out.iter_mut().zip(bytes.chunks_exact(8)) {
            *slot = u64::from_le_bytes(chunk.try_into().expect("chunk of 8"));
        }
        Ok(out)
    }
}
