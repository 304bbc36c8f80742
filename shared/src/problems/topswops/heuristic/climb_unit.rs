//! One climb unit: `budget` seeded moves from the round's incumbent under simulated
//! annealing: a move that loses d flips is kept with probability exp(-d / T), the
//! temperature T falling linearly to 0 over the budget (so the unit ends as a plain hill
//! climb). The starting temperature is drawn per unit from the seed, between 1% and 100% of
//! the mean flips per head, so the units of a round explore at different depths; it is
//! scaled down when the budget is under 100 moves a head (large n), since a short walk
//! cannot cool back from a hot start. The result
//! depends on the payload only (never on the bound or on timing): the best deck found above
//! the incumbent, even when another unit already did better. A checkpoint holds the whole
//! climb state (moves done, generator, current and best heads), so a resumed unit ends
//! exactly like an uninterrupted one.

use super::climb::Climber;
use super::codec::{Reader, Writer};
use super::moves::{Move, Rng};
use super::{solution, Heuristic, Run, Unit};
use crate::problem::{ProblemError, Scored, SolveContext, UnitOutcome};
use crate::problems::topswops::heads::{to_deck, visited};
use crate::problems::topswops::scorer::Card;
use crate::rng::Random;
use std::time::Instant;

/// The state of a climb between moves.
struct Climb {
    done: u64,
    rng: Rng,
    climber: Climber,
    /// The best heads found above the start, with their flips.
    best: Option<(u64, Vec<Card>)>,
}

impl Heuristic {
    /// Runs (or resumes) a climb unit.
    pub(super) fn climb(
        &self,
        unit: &Unit,
        ctx: &dyn SolveContext,
    ) -> Result<UnitOutcome, ProblemError> {
        let bad = |why: &str| ProblemError::InvalidUnit(format!("topswops climb unit: {why}"));
        if unit.heads.len() != self.n || unit.from != 0 {
            return Err(bad("needs the whole heads sequence and moves from 0"));
        }
        let movable = visited(&unit.heads) - 1;
        if movable < 2 {
            return Err(bad("fewer than two heads reach the top before 1"));
        }
        let moving = &unit.heads[..movable];
        let start = Climber::new(self.kernel, self.n, moving).map_err(|e| bad(&e))?;
        let start_flips = start.flips();
        // The starting temperature: its own generator, so it does not shift the moves.
        let mut draw = Rng::new(!unit.seed);
        let hottest = start_flips as f64 / movable as f64
            * (unit.to as f64 / (100.0 * movable as f64)).min(1.0);
        let hot =
            hottest * 10f64.powf(-2.0 * draw.quick_index(1 << 20) as f64 / f64::from(1 << 20));
        let mut climb = match ctx.resume_cursor() {
            None => Climb {
                done: 0,
                rng: Rng::new(unit.seed),
                climber: start,
                best: None,
            },
            Some(bytes) => self.resume(bytes, unit, moving, start_flips)?,
        };
        let mut run = Run {
            ctx,
            best: None,
            last_checkpoint: Instant::now(),
            done: climb.done,
            total: unit.to,
        };
        while climb.done < unit.to {
            let mv = Move::random(&mut climb.rng, movable).ok_or_else(|| bad("no move"))?;
            // Keep the move if it loses at most T * ln(1/u) flips (u uniform in (0, 1]).
            let temperature = hot * (1.0 - climb.done as f64 / unit.to as f64);
            let u = (climb.rng.quick_index(1 << 30) + 1) as f64 / f64::from(1 << 30);
            let slack = (temperature * -u.ln()) as u64;
            let floor = climb.climber.flips().saturating_sub(slack);
            let flips = climb.climber.try_move(&mv, floor);
            climb.done += 1;
            if flips > climb.best.as_ref().map_or(start_flips, |(f, _)| *f) {
                climb.best = Some((flips, climb.climber.heads().to_vec()));
            }
            if run.checkpoint_due() {
                run.done = climb.done;
                let found = self.climbed_solution(unit, climb.best.as_ref())?;
                run.checkpoint_with(found, self.encode_climb(&climb));
                if ctx.stop_requested() {
                    return Ok(UnitOutcome::Stopped);
                }
            }
        }
        Ok(UnitOutcome::Searched {
            best: self.climbed_solution(unit, climb.best.as_ref())?,
            hits: Vec::new(),
        })
    }

    fn encode_climb(&self, climb: &Climb) -> Vec<u8> {
        let mut w = Writer::default();
        w.varint(climb.done);
        w.varint(climb.rng.state());
        w.heads(self.n, climb.climber.heads());
        w.heads(self.n, climb.best.as_ref().map_or(&[][..], |(_, h)| h));
        w.0
    }

    /// Reads a checkpoint: its heads must rearrange the unit's, and its best must beat the
    /// start (both re-scored here, nothing is taken on trust).
    fn resume(
        &self,
        bytes: &[u8],
        unit: &Unit,
        moving: &[Card],
        start_flips: u64,
    ) -> Result<Climb, ProblemError> {
        let mut r = Reader::new(bytes, "climb checkpoint");
        let done = r.bounded(unit.to, "moves done")?;
        let rng = Rng::new(r.varint()?);
        let current = r.heads(self.n)?;
        let best = r.heads(self.n)?;
        let mut sorted = moving.to_vec();
        sorted.sort_unstable();
        let rearranges = |heads: &[Card]| {
            let mut h = heads.to_vec();
            h.sort_unstable();
            h == sorted
        };
        if !rearranges(&current) || !(best.is_empty() || rearranges(&best)) {
            return Err(r.bad("heads that are not the unit's"));
        }
        let climber = Climber::new(self.kernel, self.n, &current).map_err(|e| r.bad(e))?;
        let best = if best.is_empty() {
            None
        } else {
            let flips = Climber::new(self.kernel, self.n, &best)
                .map_err(|e| r.bad(e))?
                .flips();
            if flips <= start_flips {
                return Err(r.bad("a best that does not beat the start"));
            }
            Some((flips, best))
        };
        r.finish()?;
        Ok(Climb {
            done,
            rng,
            climber,
            best,
        })
    }

    /// The deck of the unit's heads with the moved part replaced by `best`.
    fn climbed_solution(
        &self,
        unit: &Unit,
        best: Option<&(u64, Vec<Card>)>,
    ) -> Result<Option<Scored>, ProblemError> {
        let Some((flips, moved)) = best else {
            return Ok(None);
        };
        let mut heads = unit.heads.clone();
        heads[..moved.len()].copy_from_slice(moved);
        let deck = to_deck(&heads).map_err(ProblemError::Solver)?;
        Ok(Some(solution(&deck, *flips)))
    }
}
