//! `nimsquare`: Project Euler 310, Nim Square. Counts the losing positions
//! 0 <= a <= b <= c <= N of three-heap Nim where a move removes a square number of stones.
//!
//! A position loses exactly when the XOR of the heaps' Grundy values is 0, so the work is
//! the Grundy sequence g(x) = mex{ g(x - k^2) : k >= 1, k^2 <= x } for every x <= N (about
//! (2/3) N^1.5 option look-ups: 2.1e10 for N = 1e7), followed by a cheap count over the
//! histogram of Grundy values. The sequence is inherently sequential, so one N is one unit;
//! the parallelism is inside the solver (rayon, on the worker's CPU pool).
//!
//! # How the Grundy sequence is computed
//!
//! Heaps are processed in macro-blocks of `MACRO` (4096) consecutive sizes, each made of
//! blocks of `BLOCK` (32) sizes. For a heap x in a block starting at `x0`, at offset `o` into
//! a macro-block starting at `X`, the options `x - k^2` split by k:
//!
//! * *far* (k^2 >= MACRO + o + BLOCK): every option lies below `X - MACRO`, in a macro-block
//!   finished before the previous one. These are ~97% of the look-ups at N = 1e7. They are
//!   gathered in parallel (phase 1), block by block: for a fixed k the options of the block's
//!   heaps are one contiguous run of the table, scattered into per-heap byte rows
//!   (`row[i][g] = 1`: one load and one store per look-up, the rows staying in L1). The runs
//!   are spread over the whole table, so they are prefetched ahead (the next runs of the same
//!   k, and the runs of k + 12). The rows are then packed into per-heap bitsets of the values
//!   seen.
//! * *near* (the rest): done in order (phase 2) on a copy of the recent values, again with
//!   byte rows: first the k with k^2 >= BLOCK (options below the block), block-wise; then,
//!   heap by heap, the k^2 < BLOCK whose options may lie inside the block. The mex is the
//!   first zero bit of the far bitset OR the packed near row.
//!
//! Phase 1 of macro-block j+1 only reads heaps below macro-block j, so it runs concurrently
//! with phase 2 of macro-block j (`rayon::join`): the sequential phase 2 stays off the
//! critical path. Nothing spawns threads: all of it runs on the caller's rayon pool.
//!
//! Values never truncate: the kernels are instantiated for value widths 64, 128, ... 32768
//! (a power of two bounding the values a row holds). The computation starts narrow; when a
//! heap's options cover every value of the width, its macro-block is redone with twice the
//! width. g(x) <= sqrt(x), so 32768 covers every x < 2^30 (N <= [`MAX_N`]); beyond that the
//! solver reports an error instead of a wrong value.
//!
//! A unit has no checkpoints: when asked to stop, the solver drops its table and returns
//! [`UnitOutcome::Stopped`]; the unit restarts from scratch (N = 1e7 takes seconds).
//!
//! # The count and `--table`
//!
//! The count is Burnside over the histogram of Grundy values ([`count_losing`]: the ordered
//! triples with XOR 0, plus those with a repeated heap, plus the all-equal ones). With `--table`
//! the unit instead keeps a running count of pairs by the XOR of their values
//! ([`answer_table`]) and emits the answer for every n in 1..=N as samples of [`TABLE_CHUNK`]
//! answers each; `render_samples` writes them as `n answer` lines.

use clap::Args;
use num_bigint::BigUint;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::problem::{
    codec, Chains, Objective, Placement, Presentation, Problem, ProblemError, SolveContext,
    SplitBatch, UnitOutcome, UnitSpec, Units, Verification,
};
use crate::registry::ProblemDef;

/// Largest accepted N: the Grundy table takes 2 bytes per heap size.
pub const MAX_N: u64 = 1_000_000_000;

/// Heap sizes per block: the width of the scatter kernel (its byte rows stay in L1).
const BLOCK: usize = 32;
/// Heap sizes per macro-block: the unit of parallel work, progress reports and stop checks.
/// Also the lag of the far phase, so the near phase does about sqrt(1.5 * MACRO) look-ups
/// per heap.
const MACRO: usize = 4096;
/// How many k ahead the runs of the current block are prefetched.
const PREFETCH_K_AHEAD: usize = 12;

/// Parameters of Nim Square.
#[derive(Args, Serialize, Deserialize, Clone, Debug)]
pub struct NimSquareParams {
    /// Largest heap size N.
    #[arg(long)]
    pub n: u64,
    /// Every answer for 1..=N in one pass (a table, exported as "n answer" lines) instead of
    /// the count for N alone.
    #[arg(long)]
    #[serde(default)]
    pub table: bool,
}

/// Largest N accepted with `--table` (the table travels to the coordinator as samples).
pub const MAX_TABLE_N: u64 = 2_000_000;
/// Answers per table sample.
pub const TABLE_CHUNK: usize = 10_000;

/// A Nim Square instance.
pub struct NimSquare {
    params: NimSquareParams,
}

impl ProblemDef for NimSquare {
    const NAME: &'static str = "nimsquare";
    const ABOUT: &'static str =
        "count losing positions 0<=a<=b<=c<=N of three-heap Nim Square (Project Euler 310)";
    const SOLVER_VERSION: u32 = 1;
    type Params = NimSquareParams;

    fn from_params(params: NimSquareParams) -> Result<Self, ProblemError> {
        if params.n > MAX_N {
            return Err(ProblemError::InvalidParams(format!(
                "--n {} is too large: the Grundy table needs 2 bytes per heap size; the maximum is {MAX_N}",
                params.n
            )));
        }
        if params.table && (params.n > MAX_TABLE_N || params.n == 0) {
            return Err(ProblemError::InvalidParams(format!(
                "--n {} with --table must be between 1 and {MAX_TABLE_N}",
                params.n
            )));
        }
        Ok(NimSquare { params })
    }

    /// The count for one N, and a small table.
    fn examples() -> Vec<serde_json::Value> {
        vec![
            serde_json::json!({"n": 3_000}),
            serde_json::json!({"n": 15_000, "table": true}),
        ]
    }
}

impl Problem for NimSquare {
    fn objective(&self) -> Objective {
        if self.params.table {
            Objective::Sample
        } else {
            Objective::Count
        }
    }

    fn split(&self, cursor: Option<&[u8]>, _max_units: usize) -> Result<SplitBatch, ProblemError> {
        if cursor.is_some() {
            return Ok(SplitBatch {
                units: vec![],
                next: None,
            });
        }
        Ok(SplitBatch {
            units: vec![UnitSpec {
                label: format!("N={}", self.params.n),
                payload: codec::encode_u64s(&[self.params.n]),
            }],
            next: None,
        })
    }

    /// Computes the whole Grundy table (no checkpoints: a stopped unit restarts from scratch).
    fn solve(&self, payload: &[u8], ctx: &dyn SolveContext) -> Result<UnitOutcome, ProblemError> {
        let [n] = codec::decode_u64s::<1>(payload, "nimsquare unit")?;
        if n != self.params.n {
            return Err(ProblemError::InvalidUnit(format!(
                "nimsquare unit N={n} does not belong to campaign N={}",
                self.params.n
            )));
        }
        let n = usize::try_from(n)
            .map_err(|_| ProblemError::InvalidUnit(format!("nimsquare N={n} exceeds memory")))?;
        let grundy = grundy_table(n, &mut |done, total| {
            ctx.progress(done as u64, Some(done as f64 / total as f64));
            !ctx.stop_requested()
        })?;
        match grundy {
            Some(grundy) if self.params.table => {
                Ok(UnitOutcome::Samples(table_samples(&answer_table(&grundy)?)))
            }
            Some(grundy) => Ok(UnitOutcome::Count(BigUint::from(count_losing(&grundy)?))),
            None => Ok(UnitOutcome::Stopped),
        }
    }
}

impl Verification for NimSquare {
    fn verify_sample(&self, sample: &serde_json::Value) -> Result<(), ProblemError> {
        let chunk = TableChunk::parse(sample, self.params.n)?;
        // Spot check: the first answer of the chunk, recounted independently, when cheap.
        if chunk.from <= 5_000 {
            let grundy = grundy_values(chunk.from as usize)?;
            let expected = count_losing(&grundy)?;
            if chunk.answers[0] != expected {
                return Err(ProblemError::InvalidSolution(format!(
                    "table entry for n = {} is {}, not {expected}",
                    chunk.from, chunk.answers[0]
                )));
            }
        }
        Ok(())
    }
}

impl Units for NimSquare {}

impl Chains for NimSquare {}

impl Placement for NimSquare {}

impl Presentation for NimSquare {
    fn render_samples(&self, samples: &[serde_json::Value]) -> String {
        let mut out = String::new();
        for sample in samples {
            if let Ok(chunk) = TableChunk::parse(sample, self.params.n) {
                for (offset, answer) in chunk.answers.iter().enumerate() {
                    out += &format!("{} {answer}\n", chunk.from + offset as u64);
                }
            }
        }
        out
    }
}

/// The answer for every n in 1..=N in one pass over a Grundy table of heaps 0..=N: each
/// multiset a <= b <= c is counted when its largest heap c is added, from a running count of
/// pairs a <= b <= c by the XOR of their Grundy values.
pub fn answer_table(grundy: &[u16]) -> Result<Vec<u128>, ProblemError> {
    let width = (grundy.iter().copied().max().unwrap_or(0) as usize + 1).next_power_of_two();
    let mut heaps_by_value = vec![0u64; width];
    let mut pairs_by_xor = vec![0u64; width];
    let mut total: u128 = 0;
    let mut answers = Vec::with_capacity(grundy.len().saturating_sub(1));
    for (c, &gc) in grundy.iter().enumerate() {
        let gc = gc as usize;
        heaps_by_value[gc] += 1;
        for (value, &count) in heaps_by_value.iter().enumerate() {
            pairs_by_xor[value ^ gc] += count;
        }
        total += u128::from(pairs_by_xor[gc]);
        if c > 0 {
            answers.push(total);
        }
    }
    Ok(answers)
}

/// A slice of the answer table as it travels: answers for n = from, from + 1, ...
struct TableChunk {
    from: u64,
    answers: Vec<u128>,
}

impl TableChunk {
    fn parse(sample: &serde_json::Value, n: u64) -> Result<TableChunk, ProblemError> {
        let bad = |why: &str| ProblemError::InvalidResult(format!("table chunk: {why}"));
        let from = sample
            .get("from")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| bad("missing \"from\""))?;
        let answers = sample
            .get("answers")
            .and_then(serde_json::Value::as_array)
            .ok_or_else(|| bad("missing \"answers\""))?;
        if answers.is_empty() || answers.len() > TABLE_CHUNK {
            return Err(bad("wrong number of answers"));
        }
        if from == 0 || (from - 1) % TABLE_CHUNK as u64 != 0 || from + answers.len() as u64 - 1 > n
        {
            return Err(bad("chunk outside 1..=N or misaligned"));
        }
        let answers: Vec<u128> = answers
            .iter()
            .map(|a| a.as_str().and_then(|t| t.parse::<u128>().ok()))
            .collect::<Option<_>>()
            .ok_or_else(|| bad("answers must be decimal strings"))?;
        if answers.windows(2).any(|w| w[1] < w[0]) {
            return Err(bad("answers must not decrease"));
        }
        Ok(TableChunk { from, answers })
    }
}

fn table_samples(answers: &[u128]) -> Vec<serde_json::Value> {
    answers
        .chunks(TABLE_CHUNK)
        .enumerate()
        .map(|(index, chunk)| {
            serde_json::json!({
                "from": 1 + index * TABLE_CHUNK,
                "answers": chunk.iter().map(|a| a.to_string()).collect::<Vec<_>>(),
            })
        })
        .collect()
}

/// Grundy values of single heaps 0..=n (moves remove a positive square), computed in
/// parallel on the current rayon pool. Errors when the table cannot be allocated or when a
/// value would not fit (only possible for n >= 2^30).
pub fn grundy_values(n: usize) -> Result<Vec<u16>, ProblemError> {
    grundy_table(n, &mut |_, _| true)?
        .ok_or_else(|| ProblemError::Solver("nimsquare: stopped without a stop request".into()))
}

/// Counts multisets {a, b, c} of heap sizes with g(a) ^ g(b) ^ g(c) = 0 (Burnside over the
/// orderings: ordered triples, plus the triples with a repeated heap, plus the all-equal ones).
///
/// Exact for up to 2^42 heaps (every intermediate is at most len^3 < 2^128); longer tables
/// are refused.
pub fn count_losing(grundy: &[u16]) -> Result<u128, ProblemError> {
    const MAX_HEAPS: usize = 1 << 42;
    if grundy.len() > MAX_HEAPS {
        return Err(ProblemError::Solver(format!(
            "nimsquare: {} heap sizes are too many to count exactly in 128 bits",
            grundy.len()
        )));
    }
    let width = (grundy.iter().copied().max().unwrap_or(0) as usize + 1).next_power_of_two();
    let mut hist = vec![0u64; width];
    for &v in grundy {
        hist[v as usize] += 1;
    }
    // Sum over u, v of hist[u] hist[v] hist[u ^ v] <= (sum of hist)^3 = len^3 < 2^126.
    let mut ordered = 0u128;
    for (u, &hu) in hist.iter().enumerate() {
        if hu == 0 {
            continue;
        }
        let mut row = 0u128;
        for (v, &hv) in hist.iter().enumerate() {
            row += u128::from(hv) * u128::from(hist[u ^ v]);
        }
        ordered += u128::from(hu) * row;
    }
    let heaps = grundy.len() as u128;
    let zeros = u128::from(hist[0]);
    let with_pair = heaps * zeros;
    Ok((ordered + 3 * with_pair + 2 * zeros) / 6)
}

/// The Grundy table for heaps 0..=n, or `None` when `report(done, total)` returned false
/// (it is called after every macro-block with the heaps finished so far).
fn grundy_table(
    n: usize,
    report: &mut dyn FnMut(usize, usize) -> bool,
) -> Result<Option<Vec<u16>>, ProblemError> {
    let too_large = || ProblemError::Solver(format!("nimsquare: N={n} is too large"));
    let len = n
        .checked_add(1)
        .and_then(|heaps| heaps.checked_next_multiple_of(MACRO))
        .ok_or_else(too_large)?;
    let mut g: Vec<u16> = Vec::new();
    g.try_reserve_exact(len).map_err(|_| {
        ProblemError::Solver(format!(
            "nimsquare: cannot allocate the Grundy table for N={n} ({} MB)",
            len / 500_000
        ))
    })?;
    advise_huge_pages(&mut g, len);
    g.resize(len, 0);

    let mut width = 64;
    let mut first = 0;
    loop {
        let run = match width {
            64 => Kernel::<64, 1, 128>::run(&mut g, first, report)?,
            128 => Kernel::<128, 2, 192>::run(&mut g, first, report)?,
            256 => Kernel::<256, 4, 320>::run(&mut g, first, report)?,
            512 => Kernel::<512, 8, 576>::run(&mut g, first, report)?,
            1024 => Kernel::<1024, 16, 1088>::run(&mut g, first, report)?,
            2048 => Kernel::<2048, 32, 2112>::run(&mut g, first, report)?,
            4096 => Kernel::<4096, 64, 4160>::run(&mut g, first, report)?,
            8192 => Kernel::<8192, 128, 8256>::run(&mut g, first, report)?,
            16384 => Kernel::<16384, 256, 16448>::run(&mut g, first, report)?,
            32768 => Kernel::<32768, 512, 32832>::run(&mut g, first, report)?,
            _ => {
                return Err(ProblemError::Solver(format!(
                    "nimsquare: a Grundy value below N={n} exceeds {}",
                    width / 2 - 1
                )))
            }
        };
        match run {
            Run::Done => break,
            Run::Stopped => return Ok(None),
            Run::Overflow(macro_block) => {
                width *= 2;
                first = macro_block;
            }
        }
    }
    g.truncate(n + 1);
    Ok(Some(g))
}

/// How a kernel's run over the remaining macro-blocks ended.
enum Run {
    /// Every macro-block is done.
    Done,
    /// The report callback asked to stop.
    Stopped,
    /// A heap in this macro-block has a Grundy value of at least the kernel's width; the
    /// macro-blocks before it are done.
    Overflow(usize),
}

/// The Grundy computation for values below `S` (a power of two). `W` = S / 64 words per
/// bitset; `P` = S + 64 bytes per scatter row (the padding keeps the rows of a block off
/// the same cache sets).
struct Kernel<const S: usize, const W: usize, const P: usize>;

/// Per-heap bitset of the option values seen so far.
type Bits<const W: usize> = [u64; W];

impl<const S: usize, const W: usize, const P: usize> Kernel<S, W, P> {
    const VALID: () = assert!(S.is_power_of_two() && S == 64 * W && P == S + 64);

    /// Computes macro-blocks `first..` of `g` (whose length is a multiple of [`MACRO`]),
    /// assuming every heap below macro-block `first` is done.
    fn run(
        g: &mut [u16],
        first: usize,
        report: &mut dyn FnMut(usize, usize) -> bool,
    ) -> Result<Run, ProblemError> {
        let () = Self::VALID;
        let macros = g.len() / MACRO;
        if first >= macros {
            return Ok(Run::Done);
        }
        let alloc_bits = || -> Result<Vec<Bits<W>>, ProblemError> {
            let mut bits = Vec::new();
            bits.try_reserve_exact(MACRO).map_err(|_| {
                ProblemError::Solver("nimsquare: cannot allocate the option bitsets".into())
            })?;
            bits.resize(MACRO, [0u64; W]);
            Ok(bits)
        };
        let mut far = [alloc_bits()?, alloc_bits()?];
        let mut scratch = NearScratch {
            window: Vec::with_capacity(2 * MACRO + BLOCK),
            rows: scatter_rows()?,
        };
        let mut max_value = g[..first * MACRO].iter().copied().max().unwrap_or(0);
        Self::far_phase(&g[..first * MACRO], first, max_value, &mut far[first % 2])?;
        for j in first..macros {
            let base = j * MACRO;
            let (done, rest) = g.split_at_mut(base);
            let current = &mut rest[..MACRO];
            let [even, odd] = &mut far;
            let (bits, next_bits) = if j % 2 == 0 { (even, odd) } else { (odd, even) };
            let done = &*done;
            let scratch = &mut scratch;
            let (near, far_next) = rayon::join(
                || Self::near_phase(done, current, max_value, bits, scratch),
                || match j + 1 < macros {
                    true => Self::far_phase(done, j + 1, max_value, next_bits),
                    false => Ok(()),
                },
            );
            far_next?;
            match near {
                Some(block_max) => max_value = max_value.max(block_max),
                None => return Ok(Run::Overflow(j)),
            }
            if !report(base + MACRO, g.len()) {
                return Ok(Run::Stopped);
            }
        }
        Ok(Run::Done)
    }

    /// Phase 1 for macro-block `j`: the options with k^2 >= MACRO + o + BLOCK (all below
    /// macro-block j - 1, so within `done`), as bitsets in `out` (one per heap). Every value
    /// in `done` is at most `max_value`.
    fn far_phase(
        done: &[u16],
        j: usize,
        max_value: u16,
        out: &mut [Bits<W>],
    ) -> Result<(), ProblemError> {
        let base = j * MACRO;
        let words = (usize::from(max_value) >> 6) + 1;
        out.par_chunks_exact_mut(BLOCK)
            .enumerate()
            .try_for_each_init(scatter_rows::<P>, |rows, (b, out)| {
                let rows = rows.as_mut().map_err(|e| e.clone())?;
                let out = <&mut [Bits<W>; BLOCK]>::try_from(out)
                    .map_err(|_| ProblemError::Solver("nimsquare: a partial block".into()))?;
                let o = b * BLOCK;
                Self::far_block(
                    done,
                    base + o,
                    ceil_sqrt(MACRO + o + BLOCK),
                    words,
                    rows,
                    out,
                );
                Ok(())
            })
    }

    /// Phase 1 for the block of heaps `x0..x0 + BLOCK`: scatters the options of every k >= klo
    /// into `rows`, then packs them into `out`. Values are below `64 * words`.
    fn far_block(
        done: &[u16],
        x0: usize,
        klo: usize,
        words: usize,
        rows: &mut [[u8; P]; BLOCK],
        out: &mut [Bits<W>; BLOCK],
    ) {
        let khi = (x0 + BLOCK - 1).isqrt();
        if klo > khi {
            out.fill([0; W]);
            return;
        }
        for row in rows.iter_mut() {
            row[..64 * words].fill(0);
        }
        // k with k^2 <= x0: every heap of the block has the option; the runs are prefetched
        // twice: the part of the run the block after next needs (the next block's run
        // starts in a line this block touches), and this block's run for k + ahead.
        let kfull = x0.isqrt().min(khi);
        let mut sq = klo * klo;
        let mut ahead_sq = (klo + PREFETCH_K_AHEAD) * (klo + PREFETCH_K_AHEAD);
        for k in klo..=kfull {
            let start = x0 - sq;
            prefetch(done, start + 2 * BLOCK);
            if let Some(at) = x0.checked_sub(ahead_sq) {
                prefetch(done, at);
                prefetch(done, at + BLOCK - 1);
            }
            let run = done[start..]
                .first_chunk::<BLOCK>()
                .expect("far options lie in finished macro-blocks");
            for (row, &v) in rows.iter_mut().zip(run) {
                row[usize::from(v) & (S - 1)] = 1;
            }
            sq += 2 * k + 1;
            ahead_sq += 2 * (k + PREFETCH_K_AHEAD) + 1;
        }
        // k with x0 < k^2 < x0 + BLOCK: only heaps x >= k^2 have the option.
        for k in kfull.max(klo - 1) + 1..=khi {
            let sq = k * k;
            for (row, &v) in rows[sq - x0..].iter_mut().zip(done) {
                row[usize::from(v) & (S - 1)] = 1;
            }
        }
        for (row, bits) in rows.iter().zip(out.iter_mut()) {
            for (w, word) in bits.iter_mut().enumerate() {
                *word = if w < words {
                    pack_bytes(&row[64 * w..64 * w + 64])
                } else {
                    0
                };
            }
        }
    }

    /// Phase 2 for the macro-block of heaps `base..base + MACRO` (`current`): adds the
    /// options with k^2 < MACRO + o + BLOCK to the phase-1 bitsets `bits` and takes the mex,
    /// in order. Every value in `done` is at most `max_value`. Returns the largest value of
    /// the macro-block, or `None` when a value reaches `S`.
    fn near_phase(
        done: &[u16],
        current: &mut [u16],
        max_value: u16,
        bits: &[Bits<W>],
        scratch: &mut NearScratch<P>,
    ) -> Option<u16> {
        let base = done.len();
        // The near options of this macro-block lie at or above `wbase`: a contiguous copy of
        // g from there on, extended heap by heap.
        let wbase = base.saturating_sub(MACRO + BLOCK);
        let NearScratch { window, rows } = scratch;
        window.clear();
        window.extend_from_slice(&done[wbase..]);
        let kmid = ceil_sqrt(BLOCK);
        let mut max_value = max_value;
        let mut block_max = 0;
        for (b, bits) in bits.chunks_exact(BLOCK).enumerate() {
            let o = b * BLOCK;
            let x0 = base + o;
            let klo = ceil_sqrt(MACRO + o + BLOCK);
            // A heap's value is at most one more than its options', so no value of this
            // block reaches max_value + BLOCK.
            let words = ((usize::from(max_value) + BLOCK) >> 6).min(W - 1) + 1;
            for row in rows.iter_mut() {
                row[..64 * words].fill(0);
            }
            // Options below the block (k^2 >= BLOCK), block-wise.
            for k in kmid..klo {
                let sq = k * k;
                if sq >= x0 + BLOCK {
                    break;
                }
                let first = sq.saturating_sub(x0);
                let run = &window[x0 + first - sq - wbase..];
                for (row, &v) in rows[first..].iter_mut().zip(run) {
                    row[usize::from(v) & (S - 1)] = 1;
                }
            }
            // Options that may lie inside the block (k^2 < BLOCK), heap by heap, and the mex.
            for (i, (row, far)) in rows.iter_mut().zip(bits).enumerate() {
                let x = x0 + i;
                for k in 1..kmid {
                    let Some(y) = x.checked_sub(k * k) else { break };
                    row[usize::from(window[y - wbase]) & (S - 1)] = 1;
                }
                let mut mex = S;
                for (w, &far_word) in far.iter().enumerate() {
                    let word = if w < words {
                        far_word | pack_bytes(&row[64 * w..64 * w + 64])
                    } else {
                        far_word
                    };
                    if word != u64::MAX {
                        mex = 64 * w + word.trailing_ones() as usize;
                        break;
                    }
                }
                if mex >= S {
                    return None;
                }
                let mex = mex as u16;
                window.push(mex);
                block_max = block_max.max(mex);
            }
            max_value = max_value.max(block_max);
        }
        current.copy_from_slice(&window[base - wbase..]);
        Some(block_max)
    }
}

/// Phase 2's working memory: the recent Grundy values and one block's scatter rows.
struct NearScratch<const P: usize> {
    window: Vec<u16>,
    rows: Box<[[u8; P]; BLOCK]>,
}

/// Zeroed scatter rows for one block, on the heap (up to 1 MB for the widest kernel).
fn scatter_rows<const P: usize>() -> Result<Box<[[u8; P]; BLOCK]>, ProblemError> {
    vec![[0u8; P]; BLOCK]
        .into_boxed_slice()
        .try_into()
        .map_err(|_| ProblemError::Solver("nimsquare: scatter rows of the wrong length".into()))
}

/// Packs 64 bytes that are each 0 or 1 into a word (byte i -> bit i).
#[inline(always)]
fn pack_bytes(bytes: &[u8]) -> u64 {
    let (chunks, _) = bytes.as_chunks::<8>();
    let mut word = 0;
    for (c, chunk) in chunks.iter().enumerate() {
        // Byte j of the chunk (0 or 1) lands on bit 56 + j of the product.
        let bits = u64::from_le_bytes(*chunk).wrapping_mul(0x0102_0408_1020_4080) >> 56;
        word |= bits << (8 * c);
    }
    word
}

/// Asks Linux to back the (still untouched) table with transparent huge pages: the far
/// phase reads ~3000 runs scattered over the table per block, one TLB entry each with 4 KB
/// pages. Only advice: nothing happens elsewhere or when the kernel declines.
fn advise_huge_pages(table: &mut Vec<u16>, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        const MADV_HUGEPAGE: i32 = 14;
        unsafe extern "C" {
            fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
        }
        let start = table.as_mut_ptr() as usize;
        let first = start.next_multiple_of(PAGE);
        let end = (start + 2 * len) / PAGE * PAGE;
        if end > first {
            // SAFETY: the range lies inside the table's allocation (capacity >= len) and
            // MADV_HUGEPAGE only changes how the kernel backs it, never its contents.
            unsafe {
                madvise(first as *mut std::ffi::c_void, end - first, MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (table, len);
}

/// The least k with k * k >= a.
fn ceil_sqrt(a: usize) -> usize {
    match a {
        0 => 0,
        _ => (a - 1).isqrt() + 1,
    }
}

/// Hints the cache to fetch `table[at]` (nothing on other architectures than x86-64).
/// `at` may lie past the end: a prefetch never faults.
#[inline(always)]
fn prefetch(table: &[u16], at: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE (prefetch) is part of the x86-64 baseline; `wrapping_add` makes no
    // assumption about the address, and a prefetch neither faults nor changes memory.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            table.as_ptr().wrapping_add(at).cast::<i8>(),
        )
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (table, at);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::LocalContext;

    /// Grundy values straight from the definition (a mex over a stamp array per heap).
    fn grundy_reference(n: usize) -> Vec<u16> {
        let mut g = vec![0u16; n + 1];
        let mut seen: Vec<usize> = Vec::new();
        for x in 1..=n {
            let mut k = 1;
            while k * k <= x {
                let v = g[x - k * k] as usize;
                if v >= seen.len() {
                    seen.resize(v + 1, 0);
                }
                seen[v] = x;
                k += 1;
            }
            g[x] = seen
                .iter()
                .position(|&stamp| stamp != x)
                .unwrap_or(seen.len()) as u16;
        }
        g
    }

    /// Independent brute force: Grundy by definition over game positions, then triples.
    fn brute_force(n: usize) -> u128 {
        let squares: Vec<usize> = (1..).map(|k| k * k).take_while(|&s| s <= n).collect();
        let mut g = vec![0usize; n + 1];
        for x in 1..=n {
            let options: Vec<usize> = squares
                .iter()
                .filter(|&&s| s <= x)
                .map(|&s| g[x - s])
                .collect();
            g[x] = (0..).find(|v| !options.contains(v)).unwrap();
        }
        let mut count = 0;
        for a in 0..=n {
            for b in a..=n {
                for c in b..=n {
                    if g[a] ^ g[b] ^ g[c] == 0 {
                        count += 1;
                    }
                }
            }
        }
        count
    }

    fn losing(n: usize) -> u128 {
        count_losing(&grundy_values(n).unwrap()).unwrap()
    }

    #[test]
    fn matches_the_published_small_case() {
        // Project Euler 310's statement: N = 29 gives 1160.
        assert_eq!(losing(29), 1160);
    }

    #[test]
    fn matches_brute_force() {
        for n in 0..60 {
            assert_eq!(losing(n), brute_force(n), "N={n}");
        }
    }

    #[test]
    fn fast_grundy_values_match_the_definition() {
        let n = 200_000;
        let fast = grundy_values(n).unwrap();
        let reference = grundy_reference(n);
        assert_eq!(fast.len(), n + 1);
        if let Some(x) = (0..=n).find(|&x| fast[x] != reference[x]) {
            panic!(
                "g({x}) = {} but the definition gives {}",
                fast[x], reference[x]
            );
        }
        // Every length around the block and macro-block boundaries, and a wide table.
        for n in [0, 1, 31, 32, 33, 2047, 2048, 2049, 4095, 4096, 4097, 6000] {
            assert_eq!(grundy_values(n).unwrap(), reference[..=n], "N={n}");
        }
    }

    #[test]
    fn matches_the_published_answer() {
        // Project Euler 310's answer for N = 100000.
        assert_eq!(losing(100_000), 2_586_528_661_783);
    }

    #[test]
    fn the_table_agrees_with_the_direct_count_at_every_n() {
        let grundy = grundy_values(400).unwrap();
        let table = answer_table(&grundy).unwrap();
        assert_eq!(table.len(), 400);
        assert_eq!(table[28], 1160, "Project Euler 310: N = 29 gives 1160");
        for n in 1..=400 {
            assert_eq!(
                table[n - 1],
                count_losing(&grundy[..=n]).unwrap(),
                "n = {n}"
            );
        }
    }

    #[test]
    fn table_units_produce_verified_chunks() {
        let problem = NimSquare::from_params(NimSquareParams {
            n: 12_345,
            table: true,
        })
        .unwrap();
        assert_eq!(problem.objective(), Objective::Sample);
        let unit = problem.split(None, 1).unwrap().units.remove(0);
        let samples = match problem
            .solve(&unit.payload, &LocalContext::default())
            .unwrap()
        {
            UnitOutcome::Samples(samples) => samples,
            other => panic!("{other:?}"),
        };
        assert_eq!(samples.len(), 2);
        for sample in &samples {
            problem.verify_sample(sample).unwrap();
        }
        let rendered = problem.render_samples(&samples);
        assert_eq!(rendered.lines().count(), 12_345);
        assert!(rendered.lines().nth(28).unwrap() == "29 1160");
        let mut forged = samples[0].clone();
        forged["answers"][0] = serde_json::json!("7");
        assert!(problem.verify_sample(&forged).is_err());
        assert!(NimSquare::from_params(NimSquareParams {
            n: MAX_TABLE_N + 1,
            table: true
        })
        .is_err());
    }

    #[test]
    fn solves_a_unit_and_refuses_bad_input() {
        let problem = NimSquare::from_params(NimSquareParams {
            n: 29,
            table: false,
        })
        .unwrap();
        let batch = problem.split(None, 10).unwrap();
        assert_eq!(batch.units.len(), 1);
        let ctx = LocalContext::default();
        assert_eq!(
            problem.solve(&batch.units[0].payload, &ctx).unwrap(),
            UnitOutcome::Count(BigUint::from(1160u32))
        );
        assert!(problem.solve(&[1, 2, 3], &ctx).is_err());
        assert!(problem.solve(&codec::encode_u64s(&[30]), &ctx).is_err());
        assert!(NimSquare::from_params(NimSquareParams {
            n: MAX_N + 1,
            table: false
        })
        .is_err());
    }

    #[test]
    fn stops_when_asked() {
        struct StopNow;
        impl SolveContext for StopNow {
            fn resume_cursor(&self) -> Option<&[u8]> {
                None
            }
            fn bound(&self) -> Option<i64> {
                None
            }
            fn improve(&self, _found: crate::problem::Scored) {}
            fn progress(&self, _nodes: u64, _fraction: Option<f64>) {}
            fn checkpoint(&self, _cursor: Vec<u8>) {}
            fn stop_requested(&self) -> bool {
                true
            }
        }
        let problem = NimSquare::from_params(NimSquareParams {
            n: 100_000,
            table: false,
        })
        .unwrap();
        let payload = codec::encode_u64s(&[100_000]);
        assert_eq!(
            problem.solve(&payload, &StopNow).unwrap(),
            UnitOutcome::Stopped
        );
    }

    #[test]
    fn packs_bytes_in_order() {
        let mut bytes = [0u8; 64];
        for i in [0, 1, 7, 8, 30, 56, 63] {
            bytes[i] = 1;
        }
        let expected = [0, 1, 7, 8, 30, 56, 63]
            .iter()
            .fold(0u64, |word, &i| word | 1 << i);
        assert_eq!(pack_bytes(&bytes), expected);
        assert_eq!(pack_bytes(&[1; 64]), u64::MAX);
    }
}
