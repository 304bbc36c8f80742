//! The units of a local proof ([`super::local`]) as a queue its threads share, with
//! donation: when a thread waits for work and the queue is empty, the units being searched
//! are asked to split ([`SolveContext::split_requested`]) and hand their untried subtrees to
//! the queue, as a worker's unit donates to the coordinator. So a proof whose work sits in
//! one unit (at N = 779 the last 137 of 2,050 units left one of two threads idle) keeps
//! every thread busy to the end.
//!
//! Each unit of the split heads a *family*: itself and every piece donated from it or from
//! its pieces. A family is finished, and reported to [`WorkQueue::run`]'s caller, only once
//! every piece has been searched to its end, so a journal that records finished units never
//! records one whose donated subtrees were lost in a stop.
//!
//! When the proof is asked to stop, each piece being searched stops at its last checkpoint,
//! and [`WorkQueue::run`] returns every family that had made progress as an [`OpenFamily`]:
//! its nodes and best game so far and its open pieces, each with the payload it has now (a
//! donation narrows it to a limit) and the checkpoint its search resumes from. A queue built
//! with [`WorkQueue::resume`] searches those pieces instead of their units, so a stop loses
//! the work since the last checkpoints, not the families.
//!
//! [`WorkQueue::snapshot`] reads the same of every family begun and not finished while the
//! proof runs (the pieces being searched at their last checkpoints, the pieces queued from
//! their starts), so that a journal written every few minutes loses, when the run is killed
//! instead of stopped, only the work since.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use crate::problem::{ProblemError, Scored, SolveContext, UnitOutcome, UnitSpec};

/// A unit of the split, finished with every piece donated from it.
#[derive(Clone, Debug, PartialEq)]
pub struct FinishedFamily {
    /// Its index among the units given to [`WorkQueue::new`].
    pub index: usize,
    /// Nodes its pieces took together.
    pub nodes: u64,
    /// The best game its pieces found above the bounds they were searched against.
    pub best: Option<Scored>,
}

/// A family left unfinished by a stop (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct OpenFamily {
    /// Its unit's index.
    pub index: usize,
    /// Nodes its pieces took so far (earlier runs' included).
    pub nodes: u64,
    /// The best game its pieces reported so far.
    pub best: Option<Scored>,
    /// Its open pieces: each one's payload and the checkpoint its search resumes from.
    pub pieces: Vec<OpenPiece>,
}

/// A piece not searched to its end: its payload and where its search resumes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenPiece {
    /// The piece's payload (with the limit of its last donation).
    pub payload: Vec<u8>,
    /// Its last checkpoint (`None`: from its start).
    pub cursor: Option<Vec<u8>>,
}

/// Searches one piece's payload with the context given.
pub type SolvePiece<'a> =
    dyn Fn(&[u8], &dyn SolveContext) -> Result<UnitOutcome, ProblemError> + Sync + 'a;

/// Told of each family finished; an error stops the proof.
pub type FinishFamily<'a> = dyn Fn(FinishedFamily) -> Result<(), ProblemError> + Sync + 'a;

/// One piece of work: a payload, where its search resumes, and the family it belongs to.
struct Piece {
    family: usize,
    payload: Vec<u8>,
    cursor: Option<Vec<u8>>,
}

/// A family's pieces so far.
#[derive(Default)]
struct Family {
    /// A piece of it has been handed to a thread.
    begun: bool,
    /// Pieces queued or being searched.
    open: usize,
    nodes: u64,
    best: Option<Scored>,
    /// A piece ended without searching its subtree (the proof is stopping).
    incomplete: bool,
    /// The pieces that stopped, as they stood.
    stopped: Vec<OpenPiece>,
}

/// The queue's state, under one lock.
struct State {
    pieces: VecDeque<Piece>,
    families: Vec<Family>,
    /// Threads waiting for a piece.
    idle: usize,
    /// Pieces queued or being searched, over all families.
    open: usize,
    /// Pieces handed out by donation.
    donated: u64,
    /// The pieces being searched.
    running: Vec<Arc<Running>>,
    /// The first error: every thread stops.
    error: Option<ProblemError>,
}

/// A piece being searched, as its search reports it.
struct Running {
    family: usize,
    /// Nodes it has searched.
    nodes: AtomicU64,
    /// Its payload (narrowed by donations), its last checkpoint, and the nodes it had
    /// searched when it reported that checkpoint.
    now: Mutex<(OpenPiece, u64)>,
    /// The best game it reported.
    best: Mutex<Option<Scored>>,
}

/// Units shared by a proof's threads (see the module docs).
pub struct WorkQueue {
    state: Mutex<State>,
    wake: Condvar,
}

/// What a proof's threads did ([`WorkQueue::run`]).
#[derive(Debug, Default)]
pub struct Worked {
    /// Nodes of every piece searched, finished families' or not.
    pub nodes: u64,
    /// Pieces handed out by donation.
    pub donated: u64,
    /// The families a stop left unfinished that had made progress (see the module docs).
    pub open: Vec<OpenFamily>,
}

impl WorkQueue {
    /// A queue of `units`, in the order given, each `(index, payload)`.
    pub fn new(units: Vec<(usize, Vec<u8>)>) -> WorkQueue {
        WorkQueue::resume(Vec::new(), units)
    }

    /// A queue of the families a stopped run left `open` (their pieces first, each resumed
    /// from its checkpoint, their nodes and best games carried on), then `units`.
    pub fn resume(open: Vec<OpenFamily>, units: Vec<(usize, Vec<u8>)>) -> WorkQueue {
        let families = units
            .iter()
            .map(|(i, _)| i + 1)
            .chain(open.iter().map(|f| f.index + 1))
            .max()
            .unwrap_or(0);
        let mut state = State {
            pieces: VecDeque::with_capacity(units.len()),
            families: (0..families).map(|_| Family::default()).collect(),
            idle: 0,
            open: 0,
            donated: 0,
            running: Vec::new(),
            error: None,
        };
        for family in open {
            let f = &mut state.families[family.index];
            f.nodes = family.nodes;
            f.best = family.best;
            for piece in family.pieces {
                f.open += 1;
                state.pieces.push_back(Piece {
                    family: family.index,
                    payload: piece.payload,
                    cursor: piece.cursor,
                });
            }
        }
        for (index, payload) in units {
            state.families[index].open += 1;
            state.pieces.push_back(Piece {
                family: index,
                payload,
                cursor: None,
            });
        }
        state.open = state.pieces.len();
        WorkQueue {
            state: Mutex::new(state),
            wake: Condvar::new(),
        }
    }

    /// Searches every piece on `threads` threads of `pool`: `solve` searches one payload
    /// with the context it is given (which offers donation), and `finished` is called once
    /// per family when its last piece is searched (an error there stops the proof). Returns
    /// the first error of `solve` or `finished`; `stop` says when pieces should stop
    /// (their outcome then is [`UnitOutcome::Stopped`], and their family is never finished).
    pub fn run(
        &self,
        pool: &rayon::ThreadPool,
        threads: usize,
        solve: &SolvePiece<'_>,
        base: &(dyn SolveContext + Sync),
        finished: &FinishFamily<'_>,
    ) -> Result<Worked, ProblemError> {
        let nodes = AtomicU64::new(0);
        pool.scope(|scope| {
            for _ in 0..threads.max(1) {
                scope.spawn(|_| {
                    while let Some((piece, running)) = self.next_piece() {
                        let ctx = PieceContext {
                            base,
                            queue: self,
                            resume: piece.cursor,
                            running,
                        };
                        let outcome = if base.stop_requested() {
                            Ok(UnitOutcome::Stopped)
                        } else {
                            // A panic becomes the proof's error: the other threads must
                            // not wait for this piece forever.
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                solve(&piece.payload, &ctx)
                            }))
                            .unwrap_or_else(|_| {
                                Err(ProblemError::Solver(
                                    "a sieve unit's search panicked".into(),
                                ))
                            })
                        };
                        let piece_nodes = ctx.running.nodes.load(Ordering::Relaxed);
                        nodes.fetch_add(piece_nodes, Ordering::Relaxed);
                        let stopping = base.stop_requested();
                        self.close(&ctx.running, outcome, stopping, finished);
                    }
                });
            }
        });
        let mut state = self.state.lock().expect("poisoned");
        if let Some(e) = &state.error {
            return Err(e.clone());
        }
        let open = state
            .families
            .iter_mut()
            .enumerate()
            .filter(|(_, f)| f.incomplete && (f.nodes > 0 || f.stopped.len() > 1))
            .map(|(index, f)| OpenFamily {
                index,
                nodes: f.nodes,
                best: f.best.clone(),
                pieces: std::mem::take(&mut f.stopped),
            })
            .collect();
        Ok(Worked {
            nodes: nodes.into_inner(),
            donated: state.donated,
            open,
        })
    }

    /// Every family begun and not finished, as it stands: its nodes (the pieces searched,
    /// and the running pieces' up to their last checkpoints), its best game so far and its
    /// open pieces (running ones at their last checkpoints, queued ones from where they
    /// start), each given to `write` under the queue's lock, so that no family finishes or
    /// donates while its snapshot is written. Searching the pieces of a snapshot covers
    /// whatever of its family was not searched when it was taken (see the module docs); an
    /// error of `write` stops the proof and is returned. The number of families written.
    pub fn snapshot(
        &self,
        write: &dyn Fn(&OpenFamily) -> Result<(), ProblemError>,
    ) -> Result<usize, ProblemError> {
        let mut state = self.state.lock().expect("poisoned");
        if let Some(e) = &state.error {
            return Err(e.clone());
        }
        let mut open: Vec<Option<OpenFamily>> = state
            .families
            .iter()
            .enumerate()
            .map(|(index, f)| {
                (f.begun && (f.open > 0 || !f.stopped.is_empty())).then(|| OpenFamily {
                    index,
                    nodes: f.nodes,
                    best: f.best.clone(),
                    pieces: f.stopped.clone(),
                })
            })
            .collect();
        for piece in &state.pieces {
            if let Some(family) = &mut open[piece.family] {
                family.pieces.push(OpenPiece {
                    payload: piece.payload.clone(),
                    cursor: piece.cursor.clone(),
                });
            }
        }
        for running in &state.running {
            if let Some(family) = &mut open[running.family] {
                let (piece, nodes) = running.now.lock().expect("poisoned").clone();
                family.nodes += nodes;
                family.pieces.push(piece);
                if let Some(found) = running.best.lock().expect("poisoned").clone() {
                    if family.best.as_ref().is_none_or(|b| found.score > b.score) {
                        family.best = Some(found);
                    }
                }
            }
        }
        let mut written = 0;
        for family in open.into_iter().flatten() {
            if family.pieces.is_empty() {
                continue;
            }
            if let Err(e) = write(&family) {
                state.error = Some(e.clone());
                self.wake.notify_all();
                return Err(e);
            }
            written += 1;
        }
        Ok(written)
    }

    /// The next piece, registered as running, waiting while others may still donate;
    /// `None` when all is done or an error stops the proof.
    fn next_piece(&self) -> Option<(Piece, Arc<Running>)> {
        let mut state = self.state.lock().expect("poisoned");
        loop {
            if state.error.is_some() {
                return None;
            }
            if let Some(piece) = state.pieces.pop_front() {
                // Under the lock that popped it: a snapshot sees the piece queued or running.
                let running = Arc::new(Running {
                    family: piece.family,
                    nodes: AtomicU64::new(0),
                    now: Mutex::new((
                        OpenPiece {
                            payload: piece.payload.clone(),
                            cursor: piece.cursor.clone(),
                        },
                        0,
                    )),
                    best: Mutex::new(None),
                });
                state.families[piece.family].begun = true;
                state.running.push(Arc::clone(&running));
                return Some((piece, running));
            }
            if state.open == 0 {
                return None;
            }
            state.idle += 1;
            state = self.wake.wait(state).expect("poisoned");
            state.idle -= 1;
        }
    }

    /// Records a piece's end (`stopping`: the proof is stopping, so a stopped piece is no
    /// error); finishes its family when it was the last.
    fn close(
        &self,
        ended: &Arc<Running>,
        outcome: Result<UnitOutcome, ProblemError>,
        stopping: bool,
        finished: &FinishFamily<'_>,
    ) {
        let family = ended.family;
        let mut state = self.state.lock().expect("poisoned");
        // Under the lock that counts it in its family: a snapshot sees it once.
        state.running.retain(|r| !Arc::ptr_eq(r, ended));
        let done = {
            let f = &mut state.families[family];
            f.open -= 1;
            f.nodes += ended.nodes.load(Ordering::Relaxed);
            let searched_best = match &outcome {
                Ok(UnitOutcome::Searched { best, .. }) => best.clone(),
                _ => {
                    f.incomplete = true;
                    f.stopped
                        .push(ended.now.lock().expect("poisoned").0.clone());
                    None
                }
            };
            let reported = ended.best.lock().expect("poisoned").clone();
            // What the piece reported along the way counts too: a stopped piece's games
            // must outlive the stop.
            for found in [searched_best, reported].into_iter().flatten() {
                if f.best.as_ref().is_none_or(|b| found.score > b.score) {
                    f.best = Some(found);
                }
            }
            (f.open == 0 && !f.incomplete).then(|| FinishedFamily {
                index: family,
                nodes: f.nodes,
                best: f.best.clone(),
            })
        };
        let mut error = match outcome {
            Ok(UnitOutcome::Searched { .. }) => None,
            Ok(UnitOutcome::Stopped) if stopping => None,
            Ok(other) => Some(ProblemError::Solver(format!(
                "a sieve unit ended as {other:?}"
            ))),
            Err(e) => Some(e),
        };
        if error.is_none() {
            if let Some(family) = done {
                // Called under the lock: journal lines stay whole and in order.
                error = finished(family).err();
            }
        }
        if state.error.is_none() {
            state.error = error;
        }
        state.open -= 1;
        self.wake.notify_all();
    }
}

/// One piece's view of the proof's context: counts its nodes, offers donation to the queue,
/// keeps its payload, last checkpoint and best game (for a stop and for snapshots), and stops
/// it when another thread failed.
struct PieceContext<'a> {
    base: &'a (dyn SolveContext + Sync),
    queue: &'a WorkQueue,
    /// Where the search resumes (a stopped run's checkpoint).
    resume: Option<Vec<u8>>,
    /// The piece as it stands, shared with the queue's snapshots.
    running: Arc<Running>,
}

impl SolveContext for PieceContext<'_> {
    fn resume_cursor(&self) -> Option<&[u8]> {
        self.resume.as_deref()
    }
    fn bound(&self) -> Option<i64> {
        self.base.bound()
    }
    fn improve(&self, found: Scored) {
        {
            let mut best = self.running.best.lock().expect("poisoned");
            if best.as_ref().is_none_or(|b| found.score > b.score) {
                *best = Some(found.clone());
            }
        }
        self.base.improve(found);
    }
    fn progress(&self, nodes: u64, _fraction: Option<f64>) {
        self.running.nodes.store(nodes, Ordering::Relaxed);
    }
    fn checkpoint(&self, cursor: Vec<u8>) {
        // The nodes before the checkpoint: a search reports its progress just before.
        let nodes = self.running.nodes.load(Ordering::Relaxed);
        let mut now = self.running.now.lock().expect("poisoned");
        now.0.cursor = Some(cursor);
        now.1 = nodes;
    }
    fn stop_requested(&self) -> bool {
        self.base.stop_requested() || self.queue.state.lock().expect("poisoned").error.is_some()
    }
    fn split_requested(&self) -> bool {
        let state = self.queue.state.lock().expect("poisoned");
        state.idle > 0 && state.pieces.is_empty()
    }
    fn donate(&self, units: Vec<UnitSpec>, remaining: Vec<u8>) -> bool {
        let mut state = self.queue.state.lock().expect("poisoned");
        if state.error.is_some() {
            return false;
        }
        let count = units.len();
        // At the front: the waiting threads take them before any unit not yet started.
        let family = self.running.family;
        for unit in units.into_iter().rev() {
            state.pieces.push_front(Piece {
                family,
                payload: unit.payload,
                cursor: None,
            });
        }
        // Under the queue's lock, so that a stop never sees the donated pieces without
        // the narrowed payload or the other way round.
        self.running.now.lock().expect("poisoned").0.payload = remaining;
        state.families[family].open += count;
        state.open += count;
        state.donated += count as u64;
        self.queue.wake.notify_all();
        true
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    use super::*;

    /// The proof's own context: no bound, stops when told.
    #[derive(Default)]
    struct Base {
        stop: AtomicBool,
    }

    impl SolveContext for Base {
        fn resume_cursor(&self) -> Option<&[u8]> {
            None
        }
        fn bound(&self) -> Option<i64> {
            None
        }
        fn improve(&self, _found: Scored) {}
        fn progress(&self, _nodes: u64, _fraction: Option<f64>) {}
        fn checkpoint(&self, _cursor: Vec<u8>) {}
        fn stop_requested(&self) -> bool {
            self.stop.load(Ordering::Relaxed)
        }
    }

    fn piece(payload: &[u8]) -> UnitSpec {
        UnitSpec {
            label: String::new(),
            payload: payload.to_vec(),
        }
    }

    fn searched(score: Option<i64>) -> Result<UnitOutcome, ProblemError> {
        Ok(UnitOutcome::Searched {
            best: score.map(|score| Scored {
                solution: serde_json::json!({ "score": score }),
                score,
            }),
            hits: Vec::new(),
        })
    }

    /// A fake search: 10 nodes a piece; payload `[1]` donates two `[2]`s, `[2]` donates one
    /// `[0]` and finds a game scoring 7; `[3]` fails; `[4]` stops.
    fn fake(payload: &[u8], ctx: &dyn SolveContext) -> Result<UnitOutcome, ProblemError> {
        ctx.progress(10, None);
        match payload {
            [1] => {
                assert!(ctx.donate(vec![piece(&[2]), piece(&[2])], Vec::new()));
                searched(Some(5))
            }
            [2] => {
                assert!(ctx.donate(vec![piece(&[0])], Vec::new()));
                searched(Some(7))
            }
            [3] => Err(ProblemError::Solver("the fake failed".into())),
            [4] => Ok(UnitOutcome::Stopped),
            _ => searched(None),
        }
    }

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    fn run(
        units: Vec<(usize, Vec<u8>)>,
        threads: usize,
        base: &Base,
    ) -> (Result<Worked, ProblemError>, Vec<FinishedFamily>) {
        let finished = Mutex::new(Vec::new());
        let worked = WorkQueue::new(units).run(&pool(threads), threads, &fake, base, &|f| {
            finished.lock().unwrap().push(f);
            Ok(())
        });
        (worked, finished.into_inner().unwrap())
    }

    #[test]
    fn a_family_finishes_only_once_every_donated_piece_is_searched() {
        let units = vec![(0, vec![0]), (1, vec![1]), (2, vec![0])];
        let (worked, finished) = run(units, 1, &Base::default());
        let worked = worked.unwrap();
        // Unit 1, its two [2]s and their two [0]s.
        assert_eq!(worked.donated, 4);
        assert_eq!(worked.nodes, 70);
        let summary: Vec<(usize, u64, Option<i64>)> = finished
            .iter()
            .map(|f| (f.index, f.nodes, f.best.as_ref().map(|b| b.score)))
            .collect();
        // Donated pieces go first, so unit 1's family ends before unit 2 starts.
        assert_eq!(summary, [(0, 10, None), (1, 50, Some(7)), (2, 10, None)]);
    }

    #[test]
    fn an_idle_thread_is_offered_a_donation() {
        // One unit on two threads: it waits (up to a deadline) until the queue asks for a
        // split, which happens once the other thread waits for work, then donates.
        let waiting = |payload: &[u8], ctx: &dyn SolveContext| {
            if payload == [9] {
                let deadline = Instant::now() + Duration::from_secs(30);
                while !ctx.split_requested() {
                    assert!(Instant::now() < deadline, "no split was requested");
                    std::thread::yield_now();
                }
                assert!(ctx.donate(vec![piece(&[0])], Vec::new()));
            }
            ctx.progress(3, None);
            searched(None)
        };
        let finished = Mutex::new(Vec::new());
        let worked = WorkQueue::new(vec![(0, vec![9])])
            .run(&pool(2), 2, &waiting, &Base::default(), &|f| {
                finished.lock().unwrap().push(f);
                Ok(())
            })
            .unwrap();
        assert_eq!(worked.donated, 1);
        let finished = finished.into_inner().unwrap();
        assert_eq!(finished.len(), 1);
        assert_eq!(finished[0].nodes, 6);
    }

    #[test]
    fn a_panic_is_an_error_not_a_hang() {
        // The panicking piece runs while the other thread waits for work.
        let panicking = |payload: &[u8], ctx: &dyn SolveContext| {
            if payload == [5] {
                panic!("a bug in the search");
            }
            ctx.progress(1, None);
            searched(None)
        };
        let worked = WorkQueue::new(vec![(0, vec![5])]).run(
            &pool(2),
            2,
            &panicking,
            &Base::default(),
            &|_| Ok(()),
        );
        assert!(worked.unwrap_err().to_string().contains("panicked"));
    }

    #[test]
    fn an_error_stops_the_proof_and_leaves_its_family_unfinished() {
        let units = vec![(0, vec![3]), (1, vec![0])];
        let (worked, finished) = run(units, 1, &Base::default());
        assert!(worked.unwrap_err().to_string().contains("the fake failed"));
        assert!(finished.is_empty(), "{finished:?}");
    }

    #[test]
    fn a_stop_leaves_each_family_open_with_its_pieces_checkpoints() {
        // Unit 0 checkpoints, donates a piece (narrowing itself to the payload [7]), and
        // stops: the piece it gave is never started. Unit 1 is never started either.
        let base = Base::default();
        let stopping = |payload: &[u8], ctx: &dyn SolveContext| {
            ctx.progress(10, None);
            if payload == [6] {
                ctx.checkpoint(vec![8]);
                assert!(ctx.donate(vec![piece(&[0])], vec![7]));
                ctx.improve(Scored {
                    solution: serde_json::json!({ "score": 4 }),
                    score: 4,
                });
                base.stop.store(true, Ordering::Relaxed);
                return Ok(UnitOutcome::Stopped);
            }
            searched(None)
        };
        let worked = WorkQueue::new(vec![(0, vec![6]), (1, vec![0])])
            .run(&pool(1), 1, &stopping, &base, &|_| {
                panic!("nothing finishes")
            })
            .unwrap();
        let open = |payload: &[u8], cursor: Option<&[u8]>| OpenPiece {
            payload: payload.to_vec(),
            cursor: cursor.map(<[u8]>::to_vec),
        };
        // Unit 1 made no progress: it is searched from its start, as if never begun.
        assert_eq!(worked.open.len(), 1, "{:?}", worked.open);
        let family = &worked.open[0];
        assert_eq!((family.index, family.nodes), (0, 10));
        assert_eq!(family.best.as_ref().map(|b| b.score), Some(4));
        assert_eq!(
            family.pieces,
            [open(&[7], Some(&[8])), open(&[0], None)],
            "the narrowed unit with its checkpoint, then the piece it gave"
        );

        // Resumed: each piece from its checkpoint, the family's nodes and game carried on.
        let resuming = |payload: &[u8], ctx: &dyn SolveContext| {
            let want: Option<&[u8]> = if payload == [7] { Some(&[8]) } else { None };
            assert_eq!(ctx.resume_cursor(), want, "piece {payload:?}");
            ctx.progress(10, None);
            searched(None)
        };
        let finished = Mutex::new(Vec::new());
        let worked = WorkQueue::resume(worked.open, vec![(1, vec![0])])
            .run(&pool(1), 1, &resuming, &Base::default(), &|f| {
                finished.lock().unwrap().push(f);
                Ok(())
            })
            .unwrap();
        assert!(worked.open.is_empty());
        let summary: Vec<(usize, u64, Option<i64>)> = finished
            .into_inner()
            .unwrap()
            .iter()
            .map(|f| (f.index, f.nodes, f.best.as_ref().map(|b| b.score)))
            .collect();
        assert_eq!(summary, [(0, 30, Some(4)), (1, 10, None)]);
    }

    #[test]
    fn a_snapshot_holds_every_family_begun_as_it_stands() {
        // Unit 0 reports 10 nodes, checkpoints, donates a piece (narrowing itself to [7]),
        // finds a game, searches 5 nodes more, and snapshots the queue; units 1 and 2 have
        // not begun.
        let queue = WorkQueue::new(vec![(0, vec![6]), (1, vec![0]), (2, vec![0])]);
        let taken = Mutex::new(Vec::new());
        let snapshot = || {
            queue
                .snapshot(&|f| {
                    taken.lock().unwrap().push(f.clone());
                    Ok(())
                })
                .unwrap()
        };
        let searching = |payload: &[u8], ctx: &dyn SolveContext| {
            if payload == [6] {
                ctx.progress(10, None);
                ctx.checkpoint(vec![8]);
                assert!(ctx.donate(vec![piece(&[0])], vec![7]));
                ctx.improve(Scored {
                    solution: serde_json::json!({ "score": 4 }),
                    score: 4,
                });
                ctx.progress(15, None);
                assert_eq!(snapshot(), 1);
                ctx.progress(20, None);
            } else {
                ctx.progress(10, None);
            }
            searched(None)
        };
        let finished = Mutex::new(Vec::new());
        queue
            .run(&pool(1), 1, &searching, &Base::default(), &|f| {
                finished.lock().unwrap().push(f);
                Ok(())
            })
            .unwrap();
        let open = |payload: &[u8], cursor: Option<&[u8]>| OpenPiece {
            payload: payload.to_vec(),
            cursor: cursor.map(<[u8]>::to_vec),
        };
        let taken = std::mem::take(&mut *taken.lock().unwrap());
        assert_eq!(taken.len(), 1, "{taken:?}");
        // The nodes up to the checkpoint, the game, the piece it gave (from its start)
        // and the narrowed unit at its checkpoint.
        assert_eq!((taken[0].index, taken[0].nodes), (0, 10));
        assert_eq!(taken[0].best.as_ref().map(|b| b.score), Some(4));
        assert_eq!(taken[0].pieces, [open(&[0], None), open(&[7], Some(&[8]))]);
        // Resumed from the snapshot, the family finishes as it did (its nodes counted
        // from the checkpoint on).
        let resuming = |payload: &[u8], ctx: &dyn SolveContext| {
            let want: Option<&[u8]> = if payload == [7] { Some(&[8]) } else { None };
            assert_eq!(ctx.resume_cursor(), want, "piece {payload:?}");
            ctx.progress(10, None);
            searched(None)
        };
        let again = Mutex::new(Vec::new());
        WorkQueue::resume(taken, Vec::new())
            .run(&pool(1), 1, &resuming, &Base::default(), &|f| {
                again.lock().unwrap().push(f);
                Ok(())
            })
            .unwrap();
        let summary = |f: &Mutex<Vec<FinishedFamily>>| -> Vec<(usize, u64, Option<i64>)> {
            f.lock()
                .unwrap()
                .iter()
                .map(|f| (f.index, f.nodes, f.best.as_ref().map(|b| b.score)))
                .collect()
        };
        assert_eq!(summary(&again), [(0, 30, Some(4))]);
        assert_eq!(
            summary(&finished),
            [(0, 30, Some(4)), (1, 10, None), (2, 10, None)]
        );
        // Once every family finished, a snapshot has nothing to write.
        assert_eq!(snapshot(), 0);
    }

    #[test]
    fn a_stop_nobody_asked_for_is_an_error_and_an_asked_one_is_not() {
        let (worked, finished) = run(vec![(0, vec![4])], 1, &Base::default());
        assert!(worked.unwrap_err().to_string().contains("Stopped"));
        assert!(finished.is_empty());

        // Once the proof stops, no piece is searched and no family finishes.
        let stopping = Base::default();
        stopping.stop.store(true, Ordering::Relaxed);
        let (worked, finished) = run(vec![(0, vec![4]), (1, vec![0])], 1, &stopping);
        assert_eq!(worked.unwrap().nodes, 0);
        assert!(finished.is_empty());
    }
}
