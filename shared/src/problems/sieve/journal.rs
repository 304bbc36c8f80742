//! A local proof's journal: the units it has finished, kept in a file, so that a records run
//! that stops (killed, crashed, the machine rebooted) resumes without searching them again
//! ([`super::local::prove_with`], [`super::local::ProofOptions::log`]).
//!
//! The file is JSON lines. The first line names the proof (N, solver version, the number of
//! units and the starting score); a run that opens the file appends `{"run": k}`, then one
//! line per finished unit: its index, payload (hex), nodes, its best game if it found one,
//! and the CPU seconds the run had used when the unit finished (the clock given to
//! [`Journal::new`]). A line that does not parse (a write cut short by a kill) is skipped:
//! its unit is searched again, and the next run starts on a new line.
//!
//! A run asked to stop ([`super::local::ProofOptions::stop`]) also writes one line per unit
//! it leaves open (`{"open": index, ...}`): the unit's nodes and best game so far and its
//! open pieces, each a payload and the checkpoint its search resumes from
//! ([`super::work_queue::OpenFamily`]). A run given
//! [`super::local::ProofOptions::snapshot_every`] writes such lines for every unit begun
//! and not finished every so often too ([`super::work_queue::WorkQueue::snapshot`]). The
//! last such line of a unit stands until a line says the unit finished; a run killed
//! without stopping loses only what it did since.
//!
//! Resuming is sound because the split is a function of N and the solver version (both in
//! the header; each unit's payload is compared too) and a finished unit's search covered its
//! whole subtree against a bound no higher than the best game then known, which the resumed
//! run knows again (the starting game is rebuilt the same way, and every game a unit found
//! is in the journal and re-scored).

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{json, Value};

use super::local::{FinishedUnit, ProofId, UnitLog};
use super::work_queue::{OpenFamily, OpenPiece};
use crate::problem::{ProblemError, Scored};

/// A journal file for one proof (see the module docs).
pub struct Journal {
    path: PathBuf,
    file: Mutex<Option<File>>,
    earlier_cpu: Mutex<f64>,
    clock: Box<dyn Fn() -> f64 + Send + Sync>,
    /// The units earlier runs left open, read by [`UnitLog::begin`].
    open: Mutex<Vec<OpenFamily>>,
}

impl Journal {
    /// The journal at `path` (created when the proof begins if it does not exist). `clock`
    /// gives this run's CPU seconds so far, stamped on each unit.
    pub fn new(path: &Path, clock: Box<dyn Fn() -> f64 + Send + Sync>) -> Journal {
        Journal {
            path: path.to_path_buf(),
            file: Mutex::new(None),
            earlier_cpu: Mutex::new(0.0),
            clock,
            open: Mutex::new(Vec::new()),
        }
    }

    /// CPU seconds the earlier runs had used when each wrote its last line (a finished unit,
    /// or units left open at a stop or a snapshot; the work a killed run did after its last
    /// line is not counted: it is searched again). Known once the proof has begun.
    pub fn earlier_cpu_seconds(&self) -> f64 {
        *self.earlier_cpu.lock().expect("poisoned")
    }

    fn error(&self, why: impl std::fmt::Display) -> ProblemError {
        ProblemError::Solver(format!("journal {}: {why}", self.path.display()))
    }

    /// Reads the units of earlier runs (finished, and left open) and the CPU they used,
    /// checking the header.
    fn read(&self, proof: &ProofId) -> Result<(Vec<FinishedUnit>, u64, f64), ProblemError> {
        let (mut finished, mut runs, mut earlier_cpu, mut run_cpu) = (Vec::new(), 0, 0.0, 0.0f64);
        let mut open: std::collections::BTreeMap<usize, OpenFamily> = Default::default();
        let reader = BufReader::new(File::open(&self.path).map_err(|e| self.error(e))?);
        let mut lines = reader.lines();
        let first = lines
            .next()
            .ok_or_else(|| self.error("empty"))?
            .map_err(|e| self.error(e))?;
        let found = parse_header(&first).ok_or_else(|| self.error("no header line"))?;
        if &found != proof {
            return Err(self.error(format!(
                "written for {found:?}, not for this proof {proof:?}"
            )));
        }
        for line in lines {
            let line = line.map_err(|e| self.error(e))?;
            // A line cut short by a kill is skipped (the next run starts a new line).
            let Ok(value) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if value.get("run").is_some() {
                runs += 1;
                earlier_cpu += run_cpu;
                run_cpu = 0.0;
                continue;
            }
            if value.get("open").is_some() {
                let Some(family) = parse_open(&value) else {
                    continue;
                };
                run_cpu = run_cpu.max(value["cpu"].as_f64().unwrap_or(0.0));
                open.insert(family.index, family);
                continue;
            }
            let Some(unit) = parse_unit(&value) else {
                continue;
            };
            run_cpu = run_cpu.max(value["cpu"].as_f64().unwrap_or(0.0));
            finished.push(unit);
        }
        for unit in &finished {
            open.remove(&unit.index);
        }
        *self.open.lock().expect("poisoned") = open.into_values().collect();
        Ok((finished, runs, earlier_cpu + run_cpu))
    }
}

impl UnitLog for Journal {
    fn begin(&self, proof: &ProofId) -> Result<Vec<FinishedUnit>, ProblemError> {
        let exists = self.path.exists();
        let (finished, runs, earlier_cpu) = if exists {
            self.read(proof)?
        } else {
            (Vec::new(), 0, 0.0)
        };
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| self.error(e))?;
        let mut opening = String::new();
        let cut_short = exists
            && std::fs::read(&self.path)
                .map_err(|e| self.error(e))?
                .last()
                .is_some_and(|&b| b != b'\n');
        if cut_short {
            opening.push('\n');
        }
        if !exists {
            let header = json!({"n": proof.n, "solver": proof.solver, "units": proof.units,
                                "start": proof.start});
            opening.push_str(&format!("{header}\n"));
        }
        opening.push_str(&format!("{}\n", json!({ "run": runs + 1 })));
        file.write_all(opening.as_bytes())
            .and_then(|()| file.sync_data())
            .map_err(|e| self.error(e))?;
        *self.file.lock().expect("poisoned") = Some(file);
        *self.earlier_cpu.lock().expect("poisoned") = earlier_cpu;
        Ok(finished)
    }

    fn finish(&self, unit: &FinishedUnit) -> Result<(), ProblemError> {
        let line = json!({
            "unit": unit.index,
            "payload": hex(&unit.payload),
            "nodes": unit.nodes,
            "best": best_json(unit.best.as_ref()),
            "cpu": (self.clock)(),
        });
        self.append(&line)
    }

    fn open_families(&self) -> Vec<OpenFamily> {
        self.open.lock().expect("poisoned").clone()
    }

    fn leave_open(&self, family: &OpenFamily) -> Result<(), ProblemError> {
        let pieces: Vec<Value> = family
            .pieces
            .iter()
            .map(|p| json!({"payload": hex(&p.payload), "cursor": p.cursor.as_deref().map(hex)}))
            .collect();
        let line = json!({
            "open": family.index,
            "nodes": family.nodes,
            "best": best_json(family.best.as_ref()),
            "pieces": pieces,
            "cpu": (self.clock)(),
        });
        self.append(&line)
    }
}

impl Journal {
    /// Appends one line and syncs it.
    fn append(&self, line: &Value) -> Result<(), ProblemError> {
        let mut file = self.file.lock().expect("poisoned");
        let file = file
            .as_mut()
            .ok_or_else(|| self.error("a unit ended before the proof began"))?;
        writeln!(file, "{line}")
            .and_then(|()| file.sync_data())
            .map_err(|e| self.error(e))
    }
}

fn best_json(best: Option<&Scored>) -> Value {
    best.map_or(
        Value::Null,
        |b| json!({"score": b.score, "solution": b.solution}),
    )
}

/// The solver version a journal file's header names (`None` when there is no such file or
/// no readable header): a proof resumed from it searches that version's tree.
pub fn solver_of(path: &Path) -> Option<u32> {
    let file = File::open(path).ok()?;
    let mut first = String::new();
    BufReader::new(file).read_line(&mut first).ok()?;
    parse_header(&first).map(|id| id.solver)
}

fn parse_header(line: &str) -> Option<ProofId> {
    let v: Value = serde_json::from_str(line).ok()?;
    Some(ProofId {
        n: u32::try_from(v.get("n")?.as_u64()?).ok()?,
        solver: u32::try_from(v.get("solver")?.as_u64()?).ok()?,
        units: usize::try_from(v.get("units")?.as_u64()?).ok()?,
        start: v.get("start")?.as_i64()?,
    })
}

/// A line's best game: `Some(None)` for null, `None` when malformed.
fn parse_best(v: &Value) -> Option<Option<Scored>> {
    Some(match v.get("best")? {
        Value::Null => None,
        b => Some(Scored {
            score: b.get("score")?.as_i64()?,
            solution: b.get("solution")?.clone(),
        }),
    })
}

fn parse_unit(v: &Value) -> Option<FinishedUnit> {
    Some(FinishedUnit {
        index: usize::try_from(v.get("unit")?.as_u64()?).ok()?,
        payload: unhex(v.get("payload")?.as_str()?)?,
        nodes: v.get("nodes")?.as_u64()?,
        best: parse_best(v)?,
    })
}

fn parse_open(v: &Value) -> Option<OpenFamily> {
    let pieces = v
        .get("pieces")?
        .as_array()?
        .iter()
        .map(|p| {
            Some(OpenPiece {
                payload: unhex(p.get("payload")?.as_str()?)?,
                cursor: match p.get("cursor")? {
                    Value::Null => None,
                    c => Some(unhex(c.as_str()?)?),
                },
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(OpenFamily {
        index: usize::try_from(v.get("open")?.as_u64()?).ok()?,
        nodes: v.get("nodes")?.as_u64()?,
        best: parse_best(v)?,
        pieces,
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of a hex string as the journal writes them (payloads, cursors); `None` when it
/// is not one.
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problems::sieve::local;

    /// A one-thread proof of `n` journaled in `log`.
    fn logged(n: u32, log: &Journal) -> Result<local::Proven, ProblemError> {
        local::prove_with(
            n,
            local::ProofOptions {
                threads: 1,
                log: Some(log),
                ..local::ProofOptions::default()
            },
        )
    }

    /// A two-thread proof of `n` in 8 units, journaled in `log`.
    fn two_threads(n: u32, log: &Journal) -> local::Proven {
        local::prove_with(
            n,
            local::ProofOptions {
                threads: 2,
                units: Some(8),
                log: Some(log),
                ..local::ProofOptions::default()
            },
        )
        .unwrap()
    }

    /// A proof of N = 315 as the whole tree in one unit on one thread, so that a stop lands
    /// inside it (version 7's tree: version 8's has 26 nodes here, too few for a stop in
    /// the middle), with node cuts as `node_cuts` says.
    fn one_unit_of_315(
        log: &Journal,
        stop: &(dyn Fn() -> bool + Sync),
        node_cuts: Option<u64>,
    ) -> Result<local::Proven, ProblemError> {
        one_unit_of_315_with(
            log,
            stop,
            local::ProofOptions {
                node_cuts,
                ..local::ProofOptions::default()
            },
        )
    }

    /// [`one_unit_of_315`] with the other `options` given.
    fn one_unit_of_315_with(
        log: &Journal,
        stop: &(dyn Fn() -> bool + Sync),
        options: local::ProofOptions,
    ) -> Result<local::Proven, ProblemError> {
        local::prove_with(
            315,
            local::ProofOptions {
                threads: 1,
                units: Some(1),
                log: Some(log),
                stop: Some(stop),
                solver: Some(7),
                ..options
            },
        )
    }

    fn journal(path: &Path) -> Journal {
        Journal::new(path, Box::new(|| 0.0))
    }

    fn unit_lines(path: &Path) -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .filter(|l| serde_json::from_str::<Value>(l).is_ok_and(|v| v.get("unit").is_some()))
            .map(String::from)
            .collect()
    }

    #[test]
    fn a_resumed_proof_searches_only_the_units_left_and_ends_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("326.jsonl");
        let n = 326;
        let whole = logged(n, &journal(&path)).unwrap();
        let lines = unit_lines(&path);
        assert_eq!(lines.len(), whole.units);
        assert!(whole.units > 10, "{} units", whole.units);

        // A run killed after the first half of the units, in the middle of a write.
        let text = std::fs::read_to_string(&path).unwrap();
        let head: Vec<&str> = text.lines().take(2).collect();
        let kept = whole.units / 2;
        let cut = &lines[kept][..lines[kept].len() / 2];
        let resumed = [head.join("\n"), lines[..kept].join("\n"), cut.to_string()].join("\n");
        std::fs::write(&path, resumed).unwrap();

        let again = logged(n, &journal(&path)).unwrap();
        assert_eq!(again.score, whole.score);
        assert_eq!(again.units, whole.units);
        assert_eq!(again.nodes, whole.nodes);
        assert_eq!(again.moves, whole.moves);
        // Only the units left were searched (and logged) again; the line cut short is
        // still there, unread.
        assert_eq!(unit_lines(&path).len(), whole.units);
        let resumed_run = std::fs::read_to_string(&path).unwrap();
        assert!(resumed_run.contains(&format!("{cut}\n{{\"run\":2}}\n")));
        // A third run finds every unit finished and searches nothing.
        let third = logged(n, &journal(&path)).unwrap();
        assert_eq!((third.score, third.nodes), (whole.score, whole.nodes));
        assert_eq!(unit_lines(&path).len(), whole.units);
    }

    #[test]
    fn a_journal_names_its_solver_version_and_is_resumed_only_under_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("150.jsonl");
        let prove = |solver: Option<u32>| {
            local::prove_with(
                150,
                local::ProofOptions {
                    threads: 1,
                    units: Some(8),
                    log: Some(&journal(&path)),
                    solver,
                    ..local::ProofOptions::default()
                },
            )
        };
        assert_eq!(solver_of(&path), None);
        let old = prove(Some(7)).unwrap();
        assert_eq!(solver_of(&path), Some(7));
        let err = prove(None).unwrap_err().to_string();
        assert!(err.contains("not for this proof"), "{err}");
        assert_eq!(prove(Some(7)).unwrap().score, old.score);
        let err = prove(Some(6)).unwrap_err().to_string();
        assert!(err.contains("solver version 6"), "{err}");
    }

    #[test]
    fn a_stopped_proof_resumes_its_open_unit_at_its_checkpoint() {
        use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
        let dir = tempfile::tempdir().unwrap();
        let one_unit =
            |log: &Journal, stop: &(dyn Fn() -> bool + Sync)| one_unit_of_315(log, stop, None);
        let asked = AtomicU64::new(0);
        let never = || {
            asked.fetch_add(1, Relaxed);
            false
        };
        let whole = one_unit(&journal(&dir.path().join("whole.jsonl")), &never).unwrap();
        let calls = asked.load(Relaxed);
        assert!(calls > 10, "the search asked {calls} times");

        let path = dir.path().join("326.jsonl");
        let seen = AtomicU64::new(0);
        let halfway = || seen.fetch_add(1, Relaxed) >= calls / 2;
        let err = one_unit(&journal(&path), &halfway).unwrap_err();
        assert!(err.to_string().contains("stopped on request"), "{err}");
        let open: Vec<Value> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v.get("open").is_some())
            .collect();
        assert_eq!(open.len(), 1, "{open:?}");
        let stopped_at = open[0]["nodes"].as_u64().unwrap();
        assert!(stopped_at > 0 && stopped_at < whole.nodes, "{stopped_at}");
        assert!(open[0]["pieces"][0]["cursor"].is_string(), "{}", open[0]);

        // Resumed at the checkpoint (the node the stopped search was about to evaluate):
        // the same proof, node for node, and one unit line.
        let again = one_unit(&journal(&path), &|| false).unwrap();
        assert_eq!(
            (again.score, again.units, again.nodes),
            (whole.score, whole.units, whole.nodes)
        );
        assert_eq!(unit_lines(&path).len(), 1);

        // An open unit that is not one of the split's is refused by name.
        let text = std::fs::read_to_string(&path).unwrap();
        let header = text.lines().next().unwrap();
        let mut bad = open[0].clone();
        bad["open"] = Value::from(5);
        std::fs::write(&path, format!("{header}\n{bad}\n")).unwrap();
        let err = one_unit(&journal(&path), &|| false).unwrap_err();
        assert!(err.to_string().contains("open unit 5: not a unit"), "{err}");
    }

    #[test]
    fn a_killed_proof_resumes_from_its_last_snapshot() {
        use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
        use std::time::{Duration, Instant};
        let dir = tempfile::tempdir().unwrap();
        let asked = AtomicU64::new(0);
        let never = || {
            asked.fetch_add(1, Relaxed);
            false
        };
        let whole =
            one_unit_of_315(&journal(&dir.path().join("whole.jsonl")), &never, None).unwrap();
        let calls = asked.load(Relaxed);

        // Snapshots every 2 ms; halfway through, the search waits until one holds a
        // checkpoint, then goes on to the end.
        let path = dir.path().join("315.jsonl");
        let snapshots = |path: &Path| -> Vec<Value> {
            std::fs::read_to_string(path)
                .unwrap()
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|v| v.get("open").is_some() && v["pieces"][0]["cursor"].is_string())
                .collect()
        };
        let seen = AtomicU64::new(0);
        let halfway = || {
            if seen.fetch_add(1, Relaxed) == calls / 2 {
                let deadline = Instant::now() + Duration::from_secs(60);
                while snapshots(&path).is_empty() {
                    assert!(Instant::now() < deadline, "no snapshot was written");
                    std::thread::yield_now();
                }
            }
            false
        };
        let snapshotting = local::ProofOptions {
            snapshot_every: Some(Duration::from_millis(2)),
            ..local::ProofOptions::default()
        };
        let run = one_unit_of_315_with(&journal(&path), &halfway, snapshotting).unwrap();
        assert_eq!((run.score, run.nodes), (whole.score, whole.nodes));
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let with_cursor: Vec<usize> = (0..lines.len())
            .filter(|&i| {
                serde_json::from_str::<Value>(lines[i])
                    .is_ok_and(|v| v.get("open").is_some() && v["pieces"][0]["cursor"].is_string())
            })
            .collect();
        assert_eq!(with_cursor.len(), snapshots(&path).len());

        // Killed right after the first snapshot with a checkpoint, or after the last one
        // before the unit finished (the journal as it was then, every earlier snapshot in
        // it): resumed at that snapshot, the same proof.
        for at in [with_cursor[0], *with_cursor.last().unwrap()] {
            let snapshot: Value = serde_json::from_str(lines[at]).unwrap();
            let nodes = snapshot["nodes"].as_u64().unwrap();
            assert!(nodes > 0 && nodes < whole.nodes, "{snapshot}");
            let killed = dir.path().join("killed.jsonl");
            std::fs::write(&killed, lines[..=at].join("\n") + "\n").unwrap();
            let again = one_unit_of_315(&journal(&killed), &|| false, None).unwrap();
            assert_eq!(
                (again.score, &again.moves, again.units),
                (whole.score, &whole.moves, whole.units)
            );
            // The snapshot's nodes count, and the search resumed at its checkpoint with
            // every game found before it, so it prunes at least as much as the whole run.
            assert!(
                nodes < again.nodes && again.nodes <= whole.nodes,
                "{nodes} {} {}",
                again.nodes,
                whole.nodes
            );
            assert_eq!(unit_lines(&killed).len(), 1);
        }
    }

    #[test]
    fn a_proof_stopped_without_node_cuts_is_finished_with_them() {
        use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
        let dir = tempfile::tempdir().unwrap();
        let one_unit = one_unit_of_315;
        let asked = AtomicU64::new(0);
        let never = || {
            asked.fetch_add(1, Relaxed);
            false
        };
        let whole = one_unit(&journal(&dir.path().join("whole.jsonl")), &never, None).unwrap();
        let calls = asked.load(Relaxed);
        let cut = one_unit(&journal(&dir.path().join("cut.jsonl")), &|| false, Some(0)).unwrap();
        assert_eq!((cut.score, &cut.moves), (whole.score, &whole.moves));
        assert!(cut.nodes < whole.nodes, "{} >= {}", cut.nodes, whole.nodes);

        let path = dir.path().join("315.jsonl");
        let seen = AtomicU64::new(0);
        let halfway = || seen.fetch_add(1, Relaxed) >= calls / 2;
        let err = one_unit(&journal(&path), &halfway, None).unwrap_err();
        assert!(err.to_string().contains("stopped on request"), "{err}");
        // The checkpoint names a node of the same tree: the search resumes there, prunes
        // more, and proves the same optimum with the same game.
        let again = one_unit(&journal(&path), &|| false, Some(0)).unwrap();
        assert_eq!((again.score, &again.moves), (whole.score, &whole.moves));
        assert!(
            again.nodes < whole.nodes,
            "{} >= {}",
            again.nodes,
            whole.nodes
        );
        assert_eq!(unit_lines(&path).len(), 1);
    }

    #[test]
    fn a_two_thread_proof_journals_each_unit_once_whatever_it_donated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("326.jsonl");
        let n = 326;
        let proven = two_threads(n, &journal(&path));
        let table = std::fs::read_to_string(super::super::table::PUBLISHED_TABLE).unwrap();
        let published = super::super::table::parse_terms(&table).unwrap()[n as usize - 1];
        assert_eq!(proven.score, published);
        // One line per unit of the split, each unit once: a family's pieces are journaled
        // as their unit, once all of them are searched.
        let mut units: Vec<u64> = unit_lines(&path)
            .iter()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["unit"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert_eq!(units.len(), proven.units);
        units.sort_unstable();
        units.dedup();
        assert_eq!(units.len(), proven.units);
        // A second run finds them all and searches nothing.
        let again = two_threads(n, &journal(&path));
        assert_eq!((again.score, again.nodes), (proven.score, proven.nodes));
        assert_eq!(again.donated, 0);
    }

    #[test]
    fn a_journal_of_another_proof_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        logged(120, &journal(&path)).unwrap();
        let err = logged(121, &journal(&path)).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("j.jsonl") && text.contains("not for this proof"),
            "{text}"
        );
        // A unit that is not one of the split's is refused too.
        std::fs::write(
            &path,
            format!(
                "{}\n{}\n",
                std::fs::read_to_string(&path)
                    .unwrap()
                    .lines()
                    .next()
                    .unwrap(),
                json!({"unit": 0, "payload": "ff", "nodes": 1, "best": null, "cpu": 0.0})
            ),
        )
        .unwrap();
        let err = logged(120, &journal(&path)).unwrap_err();
        assert!(
            err.to_string().contains("not a unit of this split"),
            "{err}"
        );
    }

    #[test]
    fn a_logged_game_claiming_more_than_it_scores_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("326.jsonl");
        let best = logged(326, &journal(&path)).unwrap();
        // Unit 0's line now claims one more than the optimal game it holds scores (the game
        // document itself states its true score).
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        let at = lines
            .iter()
            .position(|l| {
                serde_json::from_str::<Value>(l).is_ok_and(|v| v.get("unit") == Some(&json!(0)))
            })
            .expect("unit 0 is logged");
        let mut unit: Value = serde_json::from_str(&lines[at]).unwrap();
        let moves: Vec<u32> = best.moves.iter().map(|&m| m as u32).collect();
        unit["best"] = json!({
            "score": best.score + 1,
            "solution": crate::problems::sieve::solution(&moves, best.score),
        });
        lines[at] = unit.to_string();
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let err = logged(326, &journal(&path)).unwrap_err();
        assert!(err.to_string().contains("claims"), "{err}");
    }
}
