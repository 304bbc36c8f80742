//! Best known games of Ginnow's sieve past the published table, with certified upper bounds:
//! the driver behind `bench/sieve_beyond.sh` and `records/sieve-beyond-1000.tsv`.
//!
//! `cargo bench -p grind-shared --bench sieve_beyond -- --from A --to B --commit C
//! [--seconds S] [--min-seconds M] [--portfolio K] [--reach R] [--below B] [--start L]
//! [--fresh] [--seed X] [--backward] [--region R] [--slack S] [--kick-pairs P] [--nodes K]
//! [--focus F] [--chain C] [--relink R] [--greedy] [--extra FILE] [--dump FILE]` walks N = A..=B
//! (B..=A with `--backward`) as a family: each N starts from the best of its neighbours'
//! games carried over (N - 1's game extended to N, `sieve::family::extend`; N + 1's game with
//! N + 1 dropped and finished; N's own recorded game), improves it by the anytime mode's
//! iterated large neighbourhood search (`sieve::lns`, the anytime campaign's schedule) for S
//! CPU seconds (default 10) or until it reaches the bound, and prints one record row when the
//! game is new or better than the recorded one. Each N's upper bound is the cluster-cut
//! Lagrangian bound (`sieve::cuts::certify_from`, its rounds started from the neighbours'
//! stored cuts); its certificate is written to `records/sieve-bounds/N.txt` and checked by
//! `sieve::certificate::check` before the row is printed (an existing certificate file is
//! re-checked and reused).
//!
//! `--min-seconds M` stops an N after M seconds (instead of S) once its game reaches the
//! published best known value (or at once past M when N has none): the search time goes to
//! the N that fall short. `--portfolio K` lets up to K LNS runs (own seeds, each from the
//! next start in turn, best first) work on an N that falls short, one more joining every M
//! seconds. `--reach R` also starts N from each recorded N + k, k <= R, cut down to N
//! (default 1); `--below B` also starts N from each recorded N - k, 2 <= k <= B, extended
//! one N at a time; `--start LABEL` keeps only the start of that label (`own`, `n-K`,
//! `n+K`); `--fresh` leaves N's own recorded game out of the starts. `--seed X` draws
//! the LNS regions from X (default: from N alone, as the first rows were made); the row's
//! start column then ends in `/seed=X` (and `/run=R` when run R > 0 found the game).
//! `--region R`, `--slack S`, `--kick-pairs P` and `--nodes K` replace those of the anytime
//! schedule (`lns::Schedule::anytime`: region `anytime::region_size(N)`, slack 60, 2 pairs,
//! 2,000 nodes a repair). `--focus F` adds F focused steps on N after every 8 ticks of a run
//! (`lns::Lns::step_focused`: the region holds N and the multiples of one of its largest
//! proper divisors, what a game must re-pair to keep that divisor for N; the row's start
//! column then ends in `/focus=F`). `--chain C` adds C chain steps after every 8 ticks
//! (`lns::Lns::step_chain_random`: the displacement tree of N or of an unplayed composite);
//! `--relink R` adds R path-relinking steps (`lns::Lns::step_relink`) towards the other
//! starts and the other runs' best games in turn (`/chain=C`, `/relink=R` in the row).
//! `--greedy` adds a start of no recorded lineage (the root matching played greedily);
//! `--dump FILE` appends every N's final game (n, score, start, game), recorded or not, and
//! `--extra FILE` adds the games of such a file's rows for N as starts (`extraI`), each
//! re-checked and finished as a game of N. Each N's timing (bound, LNS) goes to stderr.
//!
//! `-- --probe N:TARGET:SIZE:NODES[:TRIALS]` only repairs TARGET's displacement tree
//! (`lns::Lns::chain_region`) in N's recorded game and prints how each repair ended.
//!
//! `-- --bound N...` only times the bound and prints its size.
//!
//! Rows (tab-separated): n, score, published (best known, `records/bvchess-best-1001-2000.tsv`),
//! score - published, bound, bound - score, search CPU seconds, bound CPU seconds, LNS steps,
//! start (which neighbour seeded it), solver version, grind version, commit, date, game.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use grind_shared::problems::sieve::certificate::{self, Certificate};
use grind_shared::problems::sieve::{anytime, cuts, family, game, lns, Sieve};
use grind_shared::registry::ProblemDef;

mod sieve_common;
use sieve_common::{process_cpu_seconds, today};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn flag(args: &mut Vec<String>, name: &str) -> Option<String> {
    let at = args.iter().position(|a| a == name)?;
    args.remove(at);
    (at < args.len()).then(|| args.remove(at))
}

/// Best recorded game per N (`records/sieve-beyond-1000.tsv`, the last of equal scores).
fn recorded(path: &Path) -> BTreeMap<u32, (i64, Vec<u32>)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut best: BTreeMap<u32, (i64, Vec<u32>)> = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let cols: Vec<&str> = line.split('\t').collect();
        let (Some(n), Some(score), Some(game)) = (
            cols.first().and_then(|c| c.parse::<u32>().ok()),
            cols.get(1).and_then(|c| c.parse::<i64>().ok()),
            cols.last(),
        ) else {
            continue;
        };
        let moves: Vec<u32> = game
            .split_whitespace()
            .filter_map(|m| m.parse().ok())
            .collect();
        if best.get(&n).is_none_or(|b| score >= b.0) {
            best.insert(n, (score, moves));
        }
    }
    best
}

/// The published best known values (`records/bvchess-best-1001-2000.tsv`: n, score, ...).
fn published() -> BTreeMap<u32, i64> {
    let text = std::fs::read_to_string(format!("{ROOT}/records/bvchess-best-1001-2000.tsv"))
        .unwrap_or_default();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let mut cols = l.split('\t');
            Some((cols.next()?.parse().ok()?, cols.next()?.parse().ok()?))
        })
        .collect()
}

/// The seed game for N = 1000 (`records/sieve-seed-1000.txt`: a line `moves ...`).
fn seed_1000() -> Option<(i64, Vec<u32>)> {
    let text = std::fs::read_to_string(format!("{ROOT}/records/sieve-seed-1000.txt")).ok()?;
    let line = text.lines().find(|l| l.starts_with("moves "))?;
    let moves: Vec<u32> = line[6..]
        .split_whitespace()
        .filter_map(|m| m.parse().ok())
        .collect();
    let wide: Vec<u64> = moves.iter().map(|&m| u64::from(m)).collect();
    let score = game::replay(1000, &wide).ok()?;
    Some((score as i64, moves))
}

/// A game of N from N + 1's: N + 1 dropped (legal on 1..=N, see `sieve::family`), finished.
fn restrict(n: u32, moves: &[u32]) -> Option<(i64, Vec<u32>)> {
    let kept: Vec<u32> = moves.iter().copied().filter(|&m| m <= n).collect();
    let finished = game::finish(n, &kept)?;
    let wide: Vec<u64> = finished.iter().map(|&m| u64::from(m)).collect();
    let score = game::replay(n, &wide).ok()?;
    Some((score as i64, finished))
}

/// A game of `n` from `from`'s game `(score, moves)` (`from` < `n`): extended one N at a time
/// (`sieve::family::extend`).
fn lift(from: u32, n: u32, game: &(i64, Vec<u32>)) -> Option<(i64, Vec<u32>)> {
    let mut moves: Vec<u64> = game.1.iter().map(|&m| u64::from(m)).collect();
    let mut score = game.0;
    for m in from + 1..=n {
        (moves, score) = family::extend(m, &moves, score).ok()?;
    }
    Some((score, moves.iter().map(|&m| m as u32).collect()))
}

/// The certificate stored for `n` in `dir`, if it parses, is `n`'s and checks.
fn stored(n: u32, dir: &Path) -> Option<Certificate> {
    let text = std::fs::read_to_string(dir.join(format!("{n}.txt"))).ok()?;
    let cert = Certificate::parse(&text).ok()?;
    (cert.n == n && certificate::check(&cert).is_ok()).then_some(cert)
}

/// The cuts of `n`'s neighbours' stored certificates (N - 1 and N + 1): where N's cut
/// rounds start ([`cuts::certify_from`]).
fn neighbour_cuts(n: u32, dir: &Path) -> Vec<cuts::Cut> {
    [n - 1, n + 1]
        .into_iter()
        .filter_map(|m| {
            let text = std::fs::read_to_string(dir.join(format!("{m}.txt"))).ok()?;
            Certificate::parse(&text).ok()
        })
        .flat_map(|c| c.cuts)
        .map(|c| cuts::Cut::cluster(c.numbers, c.factors))
        .collect()
}

/// N's certificate: the file's if it checks, else a new one, its cut rounds started from the
/// neighbours' cuts (written to the file). Returns it with the CPU seconds spent deriving it
/// (0 when reused).
fn bound_of(n: u32, dir: &Path) -> Result<(Certificate, f64), String> {
    let file = dir.join(format!("{n}.txt"));
    if let Some(cert) = stored(n, dir) {
        return Ok((cert, 0.0));
    }
    let cpu = process_cpu_seconds();
    let cert = cuts::certify_from(n, neighbour_cuts(n, dir));
    let spent = process_cpu_seconds() - cpu;
    certificate::check(&cert).map_err(|e| format!("N = {n}: own certificate fails: {e}"))?;
    let text = format!(
        "# grind sieve upper-bound certificate (checked by sieve::certificate::check)\n{}",
        cert.to_text()
    );
    std::fs::write(&file, text).map_err(|e| format!("{}: {e}", file.display()))?;
    Ok((cert, spent))
}

/// The seed of N's LNS run `run`: for run 0, N itself (the rows before `--seed` existed) or
/// one drawn from `seed` and N; other runs draw from `seed` (0 without), N and `run`.
fn lns_seed(n: u32, seed: Option<u64>, run: usize) -> u64 {
    let mix = |s: u64| s.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(n);
    match (seed, run) {
        (None, 0) => u64::from(n),
        (Some(s), 0) => mix(s),
        (s, r) => mix(s.unwrap_or(0) ^ ((r as u64) << 40)),
    }
}

/// How long one N is searched (see the module docs).
struct Budget {
    /// CPU seconds at most.
    seconds: f64,
    /// CPU seconds once the published value is reached.
    min_seconds: f64,
    /// Most LNS runs (one more joins every `min_seconds` while N falls short).
    portfolio: usize,
    /// `--seed`.
    seed: Option<u64>,
    /// The certified bound (reaching it ends the search).
    bound: i64,
    /// The published best known value, if any.
    reference: Option<i64>,
    /// `--region`, `--slack`, `--kick-pairs`, `--nodes`: the LNS schedule's, where not the anytime
    /// mode's.
    region: Option<usize>,
    slack: Option<i64>,
    kick_pairs: Option<usize>,
    nodes: Option<u64>,
    /// `--focus`: focused steps on N ([`lns::Lns::step_focused`]) after every 8 ticks of a run.
    focus: u64,
    /// `--chain`: chain steps ([`lns::Lns::step_chain_random`]) after every 8 ticks of a run.
    chain: u64,
    /// `--relink`: path-relinking steps ([`lns::Lns::step_relink`]) after every 8 ticks of a
    /// run, each towards another start or another run's best game, in turn.
    relink: u64,
}

/// Improves the finished games `starts` of N (best first) by the anytime mode's LNS within
/// `budget`: run 0 from the best start; while the best game falls short of the published
/// value, another run (its own seed, the next start in turn) joins every `min_seconds`, up to
/// `portfolio` runs, all ticked in turn. Returns the best game, its score, the CPU seconds
/// and steps spent, and the run that found it (run R started from `starts[R % len]`).
fn improve(
    n: u32,
    starts: &[(i64, Vec<u32>, String)],
    budget: &Budget,
) -> Result<(Vec<u32>, i64, f64, u64, usize), String> {
    let start = |run: usize| starts[run % starts.len()].1.as_slice();
    let cpu = process_cpu_seconds();
    let size = budget.region.unwrap_or(anytime::region_size(n));
    let mut plan = lns::Schedule::anytime(&size);
    plan.slack = budget.slack.unwrap_or(plan.slack);
    plan.kick_pairs = budget.kick_pairs.unwrap_or(plan.kick_pairs);
    plan.nodes = budget.nodes.unwrap_or(plan.nodes);
    let mut runs = vec![lns::Lns::new(n, start(0), lns_seed(n, budget.seed, 0))?];
    let mut steps = 0u64;
    let mut relinks = 0u64;
    loop {
        let spent = process_cpu_seconds() - cpu;
        let best = runs.iter().map(|r| r.best().1).max().unwrap_or(i64::MIN);
        let reached = budget.reference.is_none_or(|p| best >= p);
        if best >= budget.bound
            || spent >= budget.seconds
            || (reached && spent >= budget.min_seconds)
        {
            break;
        }
        if !reached
            && runs.len() < budget.portfolio
            && spent >= budget.min_seconds * runs.len() as f64
        {
            runs.push(lns::Lns::new(
                n,
                start(runs.len()),
                lns_seed(n, budget.seed, runs.len()),
            )?);
        }
        for run in &mut runs {
            for _ in 0..8 {
                run.tick(&plan);
                steps += 1;
            }
            for _ in 0..budget.focus {
                run.step_focused(n, size, plan.nodes);
                steps += 1;
            }
            for _ in 0..budget.chain {
                run.step_chain_random(size, plan.nodes);
                steps += 1;
            }
        }
        if budget.relink > 0 {
            let bests: Vec<Vec<u32>> = runs.iter().map(|r| r.best().0.to_vec()).collect();
            let others = starts.len() + bests.len();
            for (i, run) in runs.iter_mut().enumerate() {
                for _ in 0..budget.relink {
                    relinks += 1;
                    let k = (relinks as usize + i) % others;
                    let other = if k < starts.len() {
                        starts[k].1.as_slice()
                    } else {
                        bests[k - starts.len()].as_slice()
                    };
                    run.step_relink(other, size, plan.nodes);
                    steps += 1;
                }
            }
        }
    }
    let spent = process_cpu_seconds() - cpu;
    let (at, winner) = runs
        .iter()
        .enumerate()
        .max_by_key(|(i, r)| (r.best().1, std::cmp::Reverse(*i)))
        .expect("run 0");
    let (moves, score) = winner.best();
    Ok((moves.to_vec(), score, spent, steps, at))
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let dir = PathBuf::from(format!("{ROOT}/records/sieve-bounds"));
    if let Some(first) = flag(&mut args, "--bound") {
        let ns = std::iter::once(first).chain(args.iter().cloned());
        for n in ns.filter_map(|a| a.parse::<u32>().ok()) {
            // From scratch, and warm-started from the stored neighbours' cuts (as a run does).
            let hint = neighbour_cuts(n, &dir);
            for (how, hint) in [("fresh", Vec::new()), ("warm", hint)] {
                let cpu = process_cpu_seconds();
                let cert = cuts::certify_from(n, hint);
                let derive = process_cpu_seconds() - cpu;
                let cpu = process_cpu_seconds();
                let checked = certificate::check(&cert);
                let check = process_cpu_seconds() - cpu;
                println!(
                    "N {n} {how}: bound {} ({checked:?}), {} cuts, {} potentials, {} bytes, derive {derive:.2} s, check {check:.3} s",
                    cert.bound,
                    cert.cuts.len(),
                    cert.potentials.len(),
                    cert.to_text().len()
                );
            }
        }
        return ExitCode::SUCCESS;
    }
    if let Some(spec) = flag(&mut args, "--probe") {
        // --probe N:TARGET:SIZE:NODES[:TRIALS]: repairs of TARGET's displacement tree in N's
        // recorded game, with how each ended.
        let v: Vec<u64> = spec.split(':').filter_map(|x| x.parse().ok()).collect();
        let (n, target, size, nodes) = (v[0] as u32, v[1] as u32, v[2] as usize, v[3]);
        let trials = v.get(4).copied().unwrap_or(3);
        let best = recorded(&PathBuf::from(format!(
            "{ROOT}/records/sieve-beyond-1000.tsv"
        )));
        let Some((_, moves)) = best.get(&n) else {
            eprintln!("N = {n}: no recorded game");
            return ExitCode::FAILURE;
        };
        let mut run = lns::Lns::new(n, moves, 1).expect("recorded game");
        for t in 0..trials {
            let before = run.stats();
            let cpu = process_cpu_seconds();
            let region = run.chain_region(target, size);
            let up = run.repair_region(&region, nodes);
            let after = run.stats();
            println!(
                "N {n} target {target} size {size} trial {t}: region {} numbers, improved {up}, score {}, pruned {}, complete {}, nodes {}, {:.2} s",
                region.len(),
                run.game().1,
                after.pruned - before.pruned,
                after.complete - before.complete,
                after.nodes - before.nodes,
                process_cpu_seconds() - cpu
            );
        }
        return ExitCode::SUCCESS;
    }
    let from: u32 = flag(&mut args, "--from")
        .and_then(|a| a.parse().ok())
        .expect("--from A");
    let to: u32 = flag(&mut args, "--to")
        .and_then(|a| a.parse().ok())
        .expect("--to B");
    let commit = flag(&mut args, "--commit").unwrap_or_else(|| "-".into());
    let seconds: f64 = flag(&mut args, "--seconds").map_or(10.0, |s| s.parse().expect("--seconds"));
    let min_seconds: f64 =
        flag(&mut args, "--min-seconds").map_or(seconds, |s| s.parse().expect("--min-seconds"));
    let seed: Option<u64> = flag(&mut args, "--seed").map(|s| s.parse().expect("--seed"));
    let region: Option<usize> = flag(&mut args, "--region").map(|s| s.parse().expect("--region"));
    let slack: Option<i64> = flag(&mut args, "--slack").map(|s| s.parse().expect("--slack"));
    let kick_pairs: Option<usize> =
        flag(&mut args, "--kick-pairs").map(|s| s.parse().expect("--kick-pairs"));
    let nodes: Option<u64> = flag(&mut args, "--nodes").map(|s| s.parse().expect("--nodes"));
    let focus: u64 = flag(&mut args, "--focus").map_or(0, |s| s.parse().expect("--focus"));
    let chain: u64 = flag(&mut args, "--chain").map_or(0, |s| s.parse().expect("--chain"));
    let relink: u64 = flag(&mut args, "--relink").map_or(0, |s| s.parse().expect("--relink"));
    let portfolio: usize =
        flag(&mut args, "--portfolio").map_or(1, |s| s.parse().expect("--portfolio"));
    let reach: u32 = flag(&mut args, "--reach").map_or(1, |s| s.parse().expect("--reach"));
    let below: u32 = flag(&mut args, "--below").map_or(1, |s| s.parse().expect("--below"));
    let only: Option<String> = flag(&mut args, "--start");
    // --extra FILE: more starts, the games of FILE's rows for N (tab-separated n, score, ...,
    // game last, as --dump writes them); --dump FILE: every N's final game appended there
    // (n, score, start, game), recorded or not.
    let extra: Option<BTreeMap<u32, Vec<Vec<u32>>>> = flag(&mut args, "--extra").map(|path| {
        let text = std::fs::read_to_string(&path).expect("--extra FILE");
        let mut games: BTreeMap<u32, Vec<Vec<u32>>> = BTreeMap::new();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let cols: Vec<&str> = line.split('\t').collect();
            if let (Some(n), Some(game)) = (cols[0].parse::<u32>().ok(), cols.last()) {
                let moves = game
                    .split_whitespace()
                    .filter_map(|m| m.parse().ok())
                    .collect();
                games.entry(n).or_default().push(moves);
            }
        }
        games
    });
    let dump: Option<String> = flag(&mut args, "--dump");
    let backward = args.iter().any(|a| a == "--backward");
    let fresh = args.iter().any(|a| a == "--fresh");
    let greedy = args.iter().any(|a| a == "--greedy");
    let record = PathBuf::from(format!("{ROOT}/records/sieve-beyond-1000.tsv"));
    std::fs::create_dir_all(&dir).expect("records/sieve-bounds");
    let mut best = recorded(&record);
    if let Some(seed) = seed_1000() {
        best.entry(1000).or_insert(seed);
    }
    let published = published();
    let date = today();
    let order: Vec<u32> = if backward {
        (from..=to).rev().collect()
    } else {
        (from..=to).collect()
    };
    for n in order {
        let mut starts: Vec<(i64, Vec<u32>, String)> = Vec::new();
        if let Some((score, moves)) = best.get(&n).filter(|_| !fresh) {
            starts.push((*score, moves.clone(), "own".into()));
        }
        if let Some((score, moves)) = best.get(&(n - 1)) {
            let wide: Vec<u64> = moves.iter().map(|&m| u64::from(m)).collect();
            if let Ok((ext, s)) = family::extend(n, &wide, *score) {
                starts.push((s, ext.iter().map(|&m| m as u32).collect(), "n-1".into()));
            }
        }
        for k in 1..=reach {
            if let Some((s, moves)) = best.get(&(n + k)).and_then(|(_, m)| restrict(n, m)) {
                starts.push((s, moves, format!("n+{k}")));
            }
        }
        for k in 2..=below.min(n - 1) {
            if let Some((s, moves)) = best.get(&(n - k)).and_then(|g| lift(n - k, n, g)) {
                starts.push((s, moves, format!("n-{k}")));
            }
        }
        for (i, moves) in extra
            .as_ref()
            .and_then(|e| e.get(&n))
            .into_iter()
            .flatten()
            .enumerate()
        {
            // Re-checked: a start must be a legal game of N (finished here).
            if let Some((s, moves)) = restrict(n, moves) {
                starts.push((s, moves, format!("extra{i}")));
            }
        }
        if greedy {
            // A start of no recorded lineage: the root matching played greedily.
            let (moves, s) = grind_shared::problems::sieve::search::Searcher::new(n).greedy_game();
            starts.push((s, moves, "greedy".into()));
        }
        if let Some(only) = &only {
            starts.retain(|s| s.2 == *only);
        }
        if starts.is_empty() {
            eprintln!("N = {n}: no neighbour game to start from");
            return ExitCode::FAILURE;
        }
        // Best first; of equal ones, the last found (as the first rows were made).
        starts.reverse();
        starts.sort_by_key(|s| std::cmp::Reverse(s.0));
        let (cert, bound_cpu) = match bound_of(n, &dir) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
        };
        let reference = published.get(&n).copied();
        let budget = Budget {
            seconds,
            min_seconds,
            portfolio,
            seed,
            bound: cert.bound,
            reference,
            region,
            slack,
            kick_pairs,
            nodes,
            focus,
            chain,
            relink,
        };
        let (moves, score, spent, steps, run) = match improve(n, &starts, &budget) {
            Ok(found) => found,
            Err(e) => {
                eprintln!("N = {n}: start: {e}");
                return ExitCode::FAILURE;
            }
        };
        let (start_score, origin) = {
            let s = &starts[run % starts.len()];
            (s.0, s.2.as_str())
        };
        let wide: Vec<u64> = moves.iter().map(|&m| u64::from(m)).collect();
        match game::replay(n, &wide) {
            Ok(s) if s as i64 == score => {}
            other => {
                eprintln!("N = {n}: the game found does not replay to {score}: {other:?}");
                return ExitCode::FAILURE;
            }
        }
        if score > cert.bound {
            eprintln!(
                "N = {n}: game {score} above the certified bound {}",
                cert.bound
            );
            return ExitCode::FAILURE;
        }
        eprintln!(
            "N = {n}: {score} ({:+} published) from {origin}:{start_score}, bound {} ({bound_cpu:.2} s), LNS {spent:.2} s, {steps} steps, run {run}",
            reference.map_or(0, |p| score - p),
            cert.bound
        );
        let improved = best.get(&n).is_none_or(|b| score > b.0);
        if improved {
            best.insert(n, (score, moves.to_vec()));
            let (pub_text, diff) = match reference {
                Some(p) => (p.to_string(), (score - p).to_string()),
                None => ("-".into(), "-".into()),
            };
            let game: Vec<String> = moves.iter().map(u32::to_string).collect();
            let mut seed_text = seed.map_or_else(String::new, |s| format!("/seed={s}"));
            if run > 0 {
                seed_text.push_str(&format!("/run={run}"));
            }
            if focus > 0 {
                seed_text.push_str(&format!("/focus={focus}"));
            }
            if chain > 0 {
                seed_text.push_str(&format!("/chain={chain}"));
            }
            if relink > 0 {
                seed_text.push_str(&format!("/relink={relink}"));
            }
            println!(
                "{n}\t{score}\t{pub_text}\t{diff}\t{}\t{}\t{spent:.2}\t{bound_cpu:.2}\t{steps}\t{origin}:{start_score}{seed_text}\t{}\t{}\t{commit}\t{date}\t{}",
                cert.bound,
                cert.bound - score,
                Sieve::SOLVER_VERSION,
                env!("CARGO_PKG_VERSION"),
                game.join(" ")
            );
        } else {
            eprintln!("N = {n}: {score}, no better than the recorded game");
        }
        if let Some(path) = &dump {
            use std::io::Write;
            let game: Vec<String> = moves.iter().map(u32::to_string).collect();
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .expect("--dump FILE");
            writeln!(file, "{n}\t{score}\t{origin}\t{}", game.join(" ")).expect("--dump FILE");
        }
    }
    ExitCode::SUCCESS
}
