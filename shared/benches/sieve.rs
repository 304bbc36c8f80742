//! Times exact sieve proofs (Ginnow's sieve / the Taxman game) the way a campaign runs them:
//! the splitter's units solved on a thread pool sharing one bound ([`local::prove`]), wall
//! time from parameters to a verified optimum. One row per N: N, optimum, matching bound at
//! the root, units, search nodes, seconds (best of R runs).
//!
//! `cargo bench -p grind-shared --bench sieve [-- N... [--threads T] [--repeat R]]`
//! (default: N = 120 200 300, 2 threads, 3 repeats).
//!
//! `cargo bench -p grind-shared --bench sieve -- --check A B FILE` proves every N in A..=B
//! and compares it with published terms (FILE: one term per line for N = 1, 2, ...; `#`
//! starts a comment), printing one row per N and a summary; it exits non-zero on any
//! mismatch. `bench/sieve.sh` runs it for N = 1..200 against `bench/sieve_a019312.txt`.
//!
//! `cargo bench -p grind-shared --bench sieve -- --probe N` times what creating an exact
//! campaign costs (the probe search that sets the starting bound, and the splitter).
//!
//! `cargo bench -p grind-shared --bench sieve -- --dump-units N` prints each exact unit's
//! root node as one JSON line (path, bound, fixed pairs, live edges), to measure other
//! bounds on the same nodes outside grind.
//!
//! `cargo bench -p grind-shared --bench sieve -- --unit-cuts N` prints, for each exact unit's
//! root node, its matching bound and the cluster cuts' Lagrangian bound derived at the node
//! (`sieve::cuts::derive_at`: clusters of the node's live graph with its fixed pairs, the dual
//! LP of its live edges), beside the published optimum: how much a cut bound re-derived per
//! unit could prune. With `--nodes` it also searches each unit with the optimum as the bar
//! and counts its nodes (how many of them lie in the units the cut bound closes).
//!
//! `cargo bench -p grind-shared --bench sieve -- --unit-search N PATH AFTER` searches one
//! exact unit (PATH: child indices, comma-separated) with the published optimum as the bar
//! and node cuts after AFTER nodes under a branching node (`Searcher::set_node_cuts`; `none`
//! turns them off), and prints its nodes, cut derivations and seconds. A fifth word `warm`
//! keeps the cut LP warm down the tree instead (`Searcher::set_warm_lp`); `--solver V`
//! searches solver version V's tree (as `Sieve::with_solver`); `--refresh AGE` solves a warm
//! LP afresh with new cuts once AGE nodes old (`Searcher::set_cut_refresh`; default: never);
//! `--microlp` keeps the warm LP in microlp's dual form instead of the primal form exact
//! searches with node cuts use (`Searcher::set_side_lp`).
//!
//! `cargo bench -p grind-shared --bench sieve -- --walk N AT` expands every node on the way
//! to AT (child indices, comma-separated, or a checkpoint cursor as a records journal
//! writes it, in hex) and prints, per depth, the children's bounds less the published value
//! and what each child excludes and fixes: where a large subtree spends its nodes.
//!
//! `cargo bench -p grind-shared --bench sieve -- --record A B COMMIT` proves every N in
//! A..=B and prints one `records/sieve.tsv` row per N (value, root bound, units, nodes, CPU
//! and wall seconds, versions, COMMIT, date, an optimal game); `bench/sieve_record.sh`
//! appends them to the record. Each N builds on N - 1's row as a family campaign does
//! (`sieve::local::prove_with`): a row with 0 units was closed at the ceiling
//! (opt(N-1) + N, or opt(N-1) + N - P' for a prime N) by its starting game, and rests on
//! the row before it. The starting game (N - 1's game extended, or the campaign's own when
//! better) is first raised by a short neighbourhood search (`sieve::local::polish_start`;
//! `--no-polish` skips it); the row's CPU seconds include it. With `--journal DIR` each N's
//! finished units go to DIR/N.jsonl (`sieve::journal`), and a run that was stopped resumes
//! from there: the row's CPU seconds then add the earlier runs' CPU up to their last
//! finished unit, its wall seconds are this run's only, and the file is removed once the
//! row is printed, after a line on stderr saying how the nodes spread over the units (the
//! share of the largest 1%, the largest unit, the median). `--units K` splits each N into K units instead of the campaigns' 256 (a
//! finer split loses less when a run stops; either way a unit donates its untried subtrees to
//! a thread left without work, `sieve::work_queue`, and stderr says how many pieces it gave).
//! `--stop-file PATH` stops the run once PATH exists: every search stops at its next
//! checkpoint and the units left open are journaled with their checkpoints, so that the
//! next run resumes them there instead of from their starts. With a journal, the units
//! being searched are also journaled with their checkpoints every `--snapshot-minutes M`
//! (default 10; 0 turns it off), so that a run killed instead of stopped loses only the
//! work since. `--node-cuts-from M` has the
//! units of every N >= M also prune by cut bounds kept warm down their trees
//! (`Sieve::with_node_cuts`: the same tree, so a journal begun without them is finished
//! with them); `--node-cuts-after K` derives them only at branching nodes whose subtree
//! took K nodes (default 0: from each unit's first). `--rank-union K` also lets those LPs
//! take rank cuts (`sieve::rank_cuts`: unions of two root clusters of at most K numbers,
//! proven once per N on the run's threads; they only prune, the same tree);
//! `--local-ranks K` with it also proves rank cuts in the tree, at each branching node
//! whose subtree took K nodes (`Searcher::set_local_ranks`). `--unit-search` also takes
//! `--shade-scale D`: the node cuts' penalties in 1/D points (`Sieve::with_shade_scale`;
//! default `sieve::SHADE_SCALE`).

use std::process::ExitCode;
use std::time::Instant;

mod sieve_common;
use sieve_common::{process_cpu_seconds, today};

use grind_shared::problem::Problem;
use grind_shared::problems::sieve::{
    cuts, family,
    journal::{self, Journal},
    local,
    rank_cuts::RankPool,
    search,
    search::Searcher,
    table,
    unit::SieveUnit,
    Sieve, SieveParams,
};
use grind_shared::registry::ProblemDef;

fn flag(args: &mut Vec<String>, name: &str) -> Option<String> {
    let at = args.iter().position(|a| a == name)?;
    args.remove(at);
    (at < args.len()).then(|| args.remove(at))
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let threads: usize = flag(&mut args, "--threads").map_or(2, |t| t.parse().expect("--threads"));
    let repeat: usize = flag(&mut args, "--repeat").map_or(3, |r| r.parse().expect("--repeat"));
    let polish = !args.iter().any(|a| a == "--no-polish");
    args.retain(|a| a != "--no-polish");
    if let Some(n) = flag(&mut args, "--dump-units") {
        return dump_units(n.parse().expect("--dump-units N"));
    }
    if let Some(n) = flag(&mut args, "--unit-cuts") {
        return unit_cuts(
            n.parse().expect("--unit-cuts N"),
            args.iter().any(|a| a == "--nodes"),
        );
    }
    if let Some(at) = args.iter().position(|a| a == "--unit-search") {
        let solver: Option<u32> =
            flag(&mut args, "--solver").map(|v| v.parse().expect("--solver V"));
        let refresh: Option<u64> = flag(&mut args, "--refresh").and_then(|v| v.parse().ok());
        let rank_union: Option<usize> =
            flag(&mut args, "--rank-pool").map(|v| v.parse().expect("--rank-pool MAX_UNION"));
        let n: u32 = args[at + 1].parse().expect("N");
        let paths: Vec<Vec<u16>> = args[at + 2]
            .split(';')
            .map(|path| path.split(',').map(|p| p.parse().expect("path")).collect())
            .collect();
        let after: Option<u64> = args[at + 3].parse().ok();
        let terms = table::read_terms(table::PUBLISHED_TABLE).expect("table");
        let mut sieve = Sieve::from_params(SieveParams::exact(n)).expect("parameters");
        if let Some(version) = solver {
            sieve = sieve.with_solver(version).expect("--solver V");
        }
        if let Some(scale) = flag(&mut args, "--shade-scale") {
            sieve = sieve
                .with_shade_scale(scale.parse().expect("--shade-scale D"))
                .expect("--shade-scale D");
        }
        let pool = rank_union.map(|max_union| {
            let start = Instant::now();
            let pool = std::sync::Arc::new(RankPool::at_root(n, max_union));
            println!(
                "N = {n}: {} rank cuts (unions of at most {max_union} numbers) in {:.1} s",
                pool.cuts().len(),
                start.elapsed().as_secs_f64()
            );
            pool
        });
        if let Some(pool) = &pool {
            sieve = sieve.with_rank_pool(pool.clone());
        }
        let mut total = 0.0;
        let local_ranks: Option<u64> =
            flag(&mut args, "--local-ranks").map(|v| v.parse().expect("--local-ranks NODES"));
        for path in paths {
            let mut searcher = sieve.exact_searcher();
            searcher.set_local_ranks(local_ranks.map(|t| (t, 30)));
            searcher.set_node_cuts(after);
            searcher.set_warm_lp(args.get(at + 4).is_some_and(|a| a == "warm"));
            searcher.set_cut_refresh(refresh);
            searcher.set_rank_pool(pool.clone());
            if args.iter().any(|a| a == "--microlp") {
                searcher.set_side_lp(false);
            }
            let start = Instant::now();
            searcher
                .search(&path, None, None, &Bar(terms[n as usize - 1]))
                .expect("search");
            let seconds = start.elapsed().as_secs_f64();
            total += seconds;
            println!(
                "N = {n} unit {path:?} node cuts after {after:?}, refresh {refresh:?}: {} nodes, \
                 {} derived, {:?} skipped and refreshed, {:?} warm pivots and edits, {:?} rank \
                 candidates, cuts and seconds in the tree, {seconds:.1} s",
                searcher.stats().nodes,
                searcher.cuts_derived(),
                searcher.derivations_skipped_and_refreshed(),
                searcher.warm_work(),
                searcher.local_rank_work(),
            );
        }
        println!("units searched in {total:.1} s");
        return ExitCode::SUCCESS;
    }
    if let Some(at) = args.iter().position(|a| a == "--walk") {
        let n: u32 = args[at + 1].parse().expect("--walk N AT");
        return walk(n, args.get(at + 2).expect("--walk N AT"));
    }
    if let Some(n) = flag(&mut args, "--probe") {
        return probe(n.parse().expect("--probe N"));
    }
    if let Some(at) = args.iter().position(|a| a == "--record") {
        let from: u32 = args[at + 1].parse().expect("--record A B COMMIT");
        let to: u32 = args[at + 2].parse().expect("--record A B COMMIT");
        let commit = args[at + 3].clone();
        let journal = flag(&mut args, "--journal").map(std::path::PathBuf::from);
        let units = flag(&mut args, "--units").map(|u| u.parse().expect("--units K"));
        let stop_file = flag(&mut args, "--stop-file").map(std::path::PathBuf::from);
        let node_cuts_from =
            flag(&mut args, "--node-cuts-from").map(|n| n.parse().expect("--node-cuts-from N"));
        let rank_union =
            flag(&mut args, "--rank-union").map(|k| k.parse().expect("--rank-union K"));
        let local_ranks =
            flag(&mut args, "--local-ranks").map(|k| k.parse().expect("--local-ranks K"));
        let node_cuts_after = flag(&mut args, "--node-cuts-after")
            .map_or(0, |k| k.parse().expect("--node-cuts-after K"));
        let snapshot_minutes: f64 = flag(&mut args, "--snapshot-minutes")
            .map_or(10.0, |m| m.parse().expect("--snapshot-minutes M"));
        let snapshot_every = (snapshot_minutes > 0.0)
            .then(|| std::time::Duration::from_secs_f64(snapshot_minutes * 60.0));
        return record(&RecordRun {
            from,
            to,
            commit,
            threads,
            polish,
            units,
            journals: journal,
            stop_file,
            node_cuts_from,
            node_cuts_after,
            rank_union,
            local_ranks,
            snapshot_every,
        });
    }
    if let Some(at) = args.iter().position(|a| a == "--check") {
        let from: u32 = args[at + 1].parse().expect("--check A B FILE");
        let to: u32 = args[at + 2].parse().expect("--check A B FILE");
        let terms = table::read_terms(&args[at + 3]).expect("the terms file");
        return check(from, to, &terms, threads);
    }
    let ns: Vec<u32> = if args.is_empty() {
        vec![120, 200, 300]
    } else {
        args.iter().map(|a| a.parse().expect("N")).collect()
    };
    println!("N\toptimum\troot_bound\tunits\tnodes\tseconds(best of {repeat}, {threads} threads)");
    for n in ns {
        let mut best = f64::INFINITY;
        let mut row = None;
        for _ in 0..repeat {
            let start = Instant::now();
            let proven = local::prove(n, threads).expect("proof");
            best = best.min(start.elapsed().as_secs_f64());
            row = Some(proven);
        }
        let proven = row.expect("at least one run");
        let bound = Searcher::new(n).root_bound();
        println!(
            "{n}\t{}\t{bound}\t{}\t{}\t{best:.3}",
            proven.score, proven.units, proven.nodes
        );
    }
    ExitCode::SUCCESS
}

/// Times what creating an exact campaign costs the coordinator: the probe search (starting
/// bound) and the splitter.
fn probe(n: u32) -> ExitCode {
    let params = SieveParams::exact(n);
    let start = Instant::now();
    let sieve = Sieve::from_params(params).expect("parameters");
    let bound = sieve.initial_bound();
    let probe = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let units = sieve.split(None, usize::MAX).expect("split").units.len();
    println!(
        "N = {n}: starting bound {bound:?} in {probe:.3} s; {units} units in {:.3} s",
        start.elapsed().as_secs_f64()
    );
    // What the records' runs start from: the campaign's starting game raised by the polish
    // (up to the ceiling from the recorded N - 1, when there is one).
    let ceiling = recorded_row(n - 1).and_then(|(v, _)| family::ceiling(n, v));
    if let Some((moves, score)) = sieve.starting_game() {
        let pool = rayon::ThreadPoolBuilder::new().build().expect("pool");
        let start = Instant::now();
        let (_, polished) =
            local::polish_start(n, moves, local::POLISH_STEPS, ceiling, &pool).expect("polish");
        println!(
            "polished from {score} to {polished} in {:.3} s (ceiling {ceiling:?})",
            start.elapsed().as_secs_f64()
        );
    }
    ExitCode::SUCCESS
}

fn check(from: u32, to: u32, terms: &[i64], threads: usize) -> ExitCode {
    let start = Instant::now();
    let mut mismatches = 0;
    let mut slowest = (0.0f64, 0u32);
    for n in from..=to {
        let t = Instant::now();
        let proven = local::prove(n, threads).expect("proof");
        let secs = t.elapsed().as_secs_f64();
        if secs > slowest.0 {
            slowest = (secs, n);
        }
        let published = terms.get(n as usize - 1).copied();
        let verdict = match published {
            Some(p) if p == proven.score => "ok",
            Some(_) => {
                mismatches += 1;
                "MISMATCH"
            }
            None => "no published term",
        };
        println!(
            "{n}\t{}\t{}\t{secs:.3}\t{verdict}",
            proven.score,
            published.map_or("-".to_string(), |p| p.to_string())
        );
    }
    println!(
        "checked N = {from}..={to}: {mismatches} mismatches, {:.2} s in all, slowest N = {} ({:.3} s)",
        start.elapsed().as_secs_f64(),
        slowest.1,
        slowest.0
    );
    if mismatches == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Proves every N in `from..=to` and prints one record row per N (see the module docs).
/// What `--record` proves and how (see [`record`]).
struct RecordRun {
    /// The first and last N.
    from: u32,
    to: u32,
    /// The commit the rows name.
    commit: String,
    threads: usize,
    /// Polish the starting game (`--no-polish` turns it off).
    polish: bool,
    /// Units an N (`--units`).
    units: Option<u32>,
    /// The directory of the per-N journals (`--journal`).
    journals: Option<std::path::PathBuf>,
    /// The file whose existence asks the run to stop (`--stop-file`).
    stop_file: Option<std::path::PathBuf>,
    /// The first N whose units prune by warm node cuts (`--node-cuts-from`).
    node_cuts_from: Option<u32>,
    /// ... from a branching node whose subtree took this many nodes (`--node-cuts-after`).
    node_cuts_after: u64,
    /// Rank cuts of unions of at most this many numbers in the node cuts' LPs
    /// (`--rank-union`).
    rank_union: Option<usize>,
    /// Rank cuts proven in the tree from subtrees of this many nodes (`--local-ranks`).
    local_ranks: Option<u64>,
    /// How often the open units are journaled with their checkpoints
    /// (`--snapshot-minutes`).
    snapshot_every: Option<std::time::Duration>,
}

/// Proves N = `from..=to` in turn, each on the N before it, and prints one row of
/// `records/sieve.tsv` for each (`bench/sieve_record.sh` appends them).
fn record(run: &RecordRun) -> ExitCode {
    let RecordRun {
        from,
        to,
        ref commit,
        threads,
        polish,
        units,
        ref journals,
        ref stop_file,
        node_cuts_from,
        node_cuts_after,
        rank_union,
        local_ranks,
        snapshot_every,
    } = *run;
    let stop = stop_file.as_deref().map(|p| move || p.exists());
    let date = today();
    // Each N builds on the proven N - 1 (the record's row for from - 1, then the row just
    // proven), as a family campaign does.
    let mut previous: Option<(i64, Vec<u64>)> = recorded_row(from.saturating_sub(1));
    for n in from..=to {
        let cpu = process_cpu_seconds();
        let wall = Instant::now();
        let path = journals
            .as_deref()
            .map(|dir| dir.join(format!("{n}.jsonl")));
        // A proof journaled under an earlier solver version is finished on its tree.
        let solver = path.as_deref().and_then(journal::solver_of);
        let journal = path
            .as_ref()
            .map(|p| Journal::new(p, Box::new(move || process_cpu_seconds() - cpu)));
        let proven = local::prove_with(
            n,
            local::ProofOptions {
                threads,
                previous: previous.as_ref().map(|(v, m)| (*v, m.as_slice())),
                polish_steps: if polish { local::POLISH_STEPS } else { 0 },
                units,
                log: journal.as_ref().map(|j| j as &dyn local::UnitLog),
                stop: stop.as_ref().map(|s| s as &(dyn Fn() -> bool + Sync)),
                solver,
                node_cuts: node_cuts_from
                    .filter(|&from| n >= from)
                    .map(|_| node_cuts_after),
                rank_union,
                local_ranks,
                snapshot_every,
            },
        );
        let proven = match proven {
            Ok(proven) => proven,
            Err(e) if stop.as_ref().is_some_and(|s| s()) => {
                eprintln!("N = {n}: {e}");
                return ExitCode::SUCCESS;
            }
            Err(e) => panic!("proof: {e}"),
        };
        previous = Some((proven.score, proven.moves.clone()));
        let wall = wall.elapsed().as_secs_f64();
        let earlier = journal.as_ref().map_or(0.0, Journal::earlier_cpu_seconds);
        let cpu = process_cpu_seconds() - cpu + earlier;
        if let Some(p) = path.filter(|p| p.exists()) {
            eprintln!(
                "N = {n}: {}; {} pieces donated to idle threads",
                unit_spread(&p),
                proven.donated
            );
            std::fs::remove_file(&p).expect("journal");
        }
        let bound = Searcher::new(n).root_bound();
        let game: Vec<String> = proven.moves.iter().map(u64::to_string).collect();
        println!(
            "{n}\t{}\t{bound}\t{}\t{}\t{cpu:.2}\t{wall:.2}\t{}\t{}\t{commit}\t{date}\t{}",
            proven.score,
            proven.units,
            proven.nodes,
            solver.unwrap_or(Sieve::SOLVER_VERSION),
            env!("CARGO_PKG_VERSION"),
            game.join(" ")
        );
    }
    ExitCode::SUCCESS
}

/// How a proof's nodes spread over its units, from its journal (every unit, earlier runs'
/// included): the share the largest 1% of units hold, the largest unit and the median.
fn unit_spread(journal: &std::path::Path) -> String {
    let text = std::fs::read_to_string(journal).expect("journal");
    let mut units: Vec<(u64, u64)> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| Some((v.get("nodes")?.as_u64()?, v.get("unit")?.as_u64()?)))
        .collect();
    if units.is_empty() {
        return "no units journaled".into();
    }
    units.sort_unstable_by(|a, b| b.cmp(a));
    let total: u64 = units.iter().map(|u| u.0).sum();
    let top = units.len().div_ceil(100);
    let top_nodes: u64 = units[..top].iter().map(|u| u.0).sum();
    format!(
        "{} units, {total} nodes; the largest 1% ({top} units) hold {:.1}% of the nodes; \
         largest unit {} ({} nodes), median {} nodes",
        units.len(),
        100.0 * top_nodes as f64 / total.max(1) as f64,
        units[0].1,
        units[0].0,
        units[units.len() / 2].0
    )
}

/// The value and game of `records/sieve.tsv`'s row for `n`, if there is one.
fn recorded_row(n: u32) -> Option<(i64, Vec<u64>)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../records/sieve.tsv");
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .find(|cols| cols.len() == 12 && cols[0] == n.to_string())
        .and_then(|cols| {
            let moves = cols[11]
                .split_whitespace()
                .map(|m| m.parse().ok())
                .collect::<Option<Vec<u64>>>()?;
            Some((cols[1].parse().ok()?, moves))
        })
}

/// An observer that only holds a fixed bar.
struct Bar(i64);

impl search::Observer for Bar {
    fn bound(&self) -> Option<i64> {
        Some(self.0)
    }
    fn found(&self, _moves: &[u32], _score: i64) {}
}

/// For each exact unit's root node of N: its matching bound and the cut bound derived at the
/// node itself (`cuts::derive_at`, warm-started from the root's cuts), beside the published
/// optimum; then how many units that bound closes and by how much it lowers the gaps.
fn unit_cuts(n: u32, with_nodes: bool) -> ExitCode {
    let terms = match table::read_terms(table::PUBLISHED_TABLE) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("sieve bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    let Some(&opt) = terms.get(n as usize - 1) else {
        eprintln!("sieve bench: no published value for N = {n}");
        return ExitCode::FAILURE;
    };
    let sieve = Sieve::from_params(SieveParams::exact(n)).expect("parameters");
    let frontier = sieve.frontier().expect("units").to_vec();
    let mut searcher = sieve.exact_searcher();
    let (root_cuts, _) = cuts::derive(n, &Searcher::root_pairs(n));
    let seeds: Vec<cuts::Cut> = root_cuts.cuts.into_iter().map(|(c, _)| c).collect();
    println!("path\tmatching - opt\tcuts - opt\tcuts\tseconds\tnodes");
    let (mut open, mut closed, mut gain, mut seconds) = (0, 0, 0i64, 0.0);
    let (mut all_nodes, mut closed_nodes) = (0, 0);
    for path in &frontier {
        let node = searcher.node_at(path).expect("a unit names a node");
        let start = Instant::now();
        let (penalties, bound) = cuts::derive_at(searcher.graph(), &node, seeds.clone(), 40);
        let spent = start.elapsed().as_secs_f64();
        seconds += spent;
        let (matching, cut) = (node.bound() - opt, bound - opt);
        let nodes = if with_nodes {
            let before = searcher.stats().nodes;
            searcher
                .search(path, None, None, &Bar(opt))
                .expect("a unit's search");
            searcher.stats().nodes - before
        } else {
            0
        };
        all_nodes += nodes;
        println!(
            "{path:?}\t{matching}\t{cut}\t{}\t{spent:.2}\t{nodes}",
            penalties.cuts.len()
        );
        if matching > 0 {
            open += 1;
            if cut <= 0 {
                closed += 1;
                closed_nodes += nodes;
            }
            gain += matching - cut.min(matching);
        }
    }
    if with_nodes {
        println!(
            "searching every unit with the optimum as bar: {all_nodes} nodes, {closed_nodes} \
             of them in the units the cut bound closes"
        );
    }
    println!(
        "N = {n}: {} units, {open} above the optimum by the matching bound, {closed} of them \
         closed by their own cut bound; mean gap lowered by {:.1}; {seconds:.1} s deriving",
        frontier.len(),
        gain as f64 / open.max(1) as f64
    );
    ExitCode::SUCCESS
}

/// Prints each exact unit's root node of N as one JSON line: its path, bound, fixed pairs
/// and live edges (for measuring other bounds on the same nodes outside grind).
fn dump_units(n: u32) -> ExitCode {
    let sieve = match Sieve::from_params(SieveParams::exact(n)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("sieve bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    let frontier = sieve.frontier().expect("units").to_vec();
    let mut searcher = sieve.exact_searcher();
    for path in frontier {
        let node = searcher.node_at(&path).expect("a unit names a node");
        let g = searcher.graph();
        let fixed = node.fixed_pairs();
        let live: Vec<(u32, u32)> = (2..=n)
            .flat_map(|x| {
                node.live_edges(g, x)
                    .filter(move |e| e.big == x)
                    .map(move |e| (x, e.other))
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({"path": path, "bound": node.bound(), "fixed": fixed, "live": live})
        );
    }
    ExitCode::SUCCESS
}

/// `--walk`: the branching on the way to `at` (a comma-separated path or a hex cursor).
fn walk(n: u32, at: &str) -> ExitCode {
    let path: Vec<u16> = if at.contains(',') || at.parse::<u16>().is_ok() {
        at.split(',').map(|p| p.parse().expect("path")).collect()
    } else {
        let bytes = journal::unhex(at).expect("a path or a hex cursor");
        match SieveUnit::decode(&bytes).expect("a sieve cursor") {
            SieveUnit::Exact { path, .. } => path,
            SieveUnit::Heuristic { .. } => panic!("a heuristic cursor names no node"),
        }
    };
    let terms = table::read_terms(table::PUBLISHED_TABLE).expect("table");
    let bar = terms[n as usize - 1];
    let sieve = Sieve::from_params(SieveParams::exact(n)).expect("parameters");
    let mut searcher = sieve.exact_searcher();
    println!("N = {n}, excess over the published value {bar}; the path taken in brackets");
    for depth in 0..path.len() {
        let node = searcher.expand(&path[..depth]).expect("expand");
        let excess: Vec<String> = node
            .children
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let e = c.1 - bar;
                if i == usize::from(path[depth]) {
                    format!("[{e}]")
                } else {
                    e.to_string()
                }
            })
            .collect();
        println!("depth {depth}: {}", excess.join(" "));
        for child in &node.branching {
            println!(
                "    exclude {:?}, then fix {:?}",
                child.exclude, child.then_fix
            );
        }
    }
    ExitCode::SUCCESS
}
