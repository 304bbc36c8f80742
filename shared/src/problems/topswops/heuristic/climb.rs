//! Incremental re-scoring for local improvement: the heads that reach the top, with the deck
//! states saved at checkpoints along them (every `stride` heads). A move is scored by
//! replaying only from the last checkpoint before its first changed position, so a move
//! near the end costs little; the states passed on the way are kept in a second array and
//! swapped in when the move is accepted.

use super::moves::Move;
use crate::problems::topswops::scorer::{Card, HeadState, Kernel};

/// Checkpoints kept along the heads (at most about this many).
const CHECKPOINTS: usize = 256;

/// A heads sequence under local improvement, with its saved states.
pub struct Climber {
    kernel: Kernel,
    /// The heads before 1 (all of them reach the top).
    heads: Vec<Card>,
    stride: usize,
    /// `saved[c]`: the state after feeding `heads[..c * stride]`.
    saved: Vec<HeadState>,
    /// States computed while scoring a trial move (same indices as `saved`).
    trial: Vec<HeadState>,
    scratch: HeadState,
    flips: u64,
}

impl Climber {
    /// Starts from `heads` (distinct values of 2..=n, the heads before 1) of an `n`-card deck.
    pub fn new(kernel: Kernel, n: usize, heads: &[Card]) -> Result<Climber, String> {
        let mut state = HeadState::new(n)?;
        let stride = heads.len().div_ceil(CHECKPOINTS).max(1);
        let mut saved = Vec::with_capacity(heads.len() / stride + 1);
        for (i, &h) in heads.iter().enumerate() {
            if i % stride == 0 {
                saved.push(state.clone());
            }
            if h == 1 {
                return Err("head 1 among the heads to move".into());
            }
            state.feed(kernel, h)?;
        }
        if saved.is_empty() {
            saved.push(state.clone());
        }
        Ok(Climber {
            kernel,
            heads: heads.to_vec(),
            stride,
            trial: saved.clone(),
            saved,
            flips: state.flips(),
            scratch: state,
        })
    }

    /// The heads now (before 1).
    pub fn heads(&self) -> &[Card] {
        &self.heads
    }

    /// The flips of the heads now followed by 1.
    pub fn flips(&self) -> u64 {
        self.flips
    }

    /// Scores the heads after `mv`; keeps the move when the moved sequence has at least
    /// `floor` flips (`floor` = [`Climber::flips`]: a hill climb that also takes sideways
    /// moves; lower floors let an annealing schedule accept losses), undoes it otherwise.
    /// Returns the moved sequence's flips.
    pub fn try_move(&mut self, mv: &Move, floor: u64) -> u64 {
        mv.apply(&mut self.heads);
        let from = mv.first_changed() / self.stride;
        self.scratch.copy_from(&self.saved[from]);
        let mut next = from + 1;
        let mut at = next * self.stride;
        for (i, &h) in self.heads.iter().enumerate().skip(from * self.stride) {
            if i == at {
                self.trial[next].copy_from(&self.scratch);
                next += 1;
                at += self.stride;
            }
            self.scratch.feed_unchecked(self.kernel, h);
        }
        let flips = self.scratch.flips();
        if flips >= floor {
            for c in from + 1..next {
                std::mem::swap(&mut self.saved[c], &mut self.trial[c]);
            }
            self.flips = flips;
        } else {
            mv.undo(&mut self.heads);
        }
        flips
    }
}

#[cfg(test)]
mod tests {
    use super::super::moves::Rng;
    use super::*;
    use crate::problems::topswops::heads::to_deck;
    use crate::problems::topswops::replay::replay_flips;
    use crate::rng::Random;
    use proptest::prelude::*;

    /// Flips of `heads` followed by 1 and the unused values, by building the deck and
    /// replaying it plainly.
    fn replayed(n: usize, heads: &[Card]) -> u64 {
        let mut all = heads.to_vec();
        all.push(1);
        all.extend((2..=n as Card).filter(|v| !heads.contains(v)));
        replay_flips(&to_deck(&all).unwrap()).unwrap()
    }

    proptest! {
        #[test]
        fn incremental_scores_equal_a_plain_replay(
            n in 2usize..700,
            used in 0.0f64..1.0,
            seed in any::<u64>(),
        ) {
            // A random sequence of some of 2..=n as the heads before 1.
            let mut rng = Rng::new(seed);
            let mut values: Vec<Card> = (2..=n as Card).collect();
            for i in (1..values.len()).rev() {
                values.swap(i, rng.quick_index(i + 1));
            }
            values.truncate(((n - 1) as f64 * used) as usize);
            let mut climber = Climber::new(Kernel::detect(), n, &values).unwrap();
            prop_assert_eq!(climber.flips(), replayed(n, &values));
            for _ in 0..12 {
                let Some(mv) = Move::random(&mut rng, values.len()) else { break };
                let before = climber.flips();
                let mut moved = climber.heads().to_vec();
                mv.apply(&mut moved);
                // Sometimes accept a loss of up to 3 flips.
                let floor = before.saturating_sub(rng.quick_index(2) as u64 * 3);
                let scored = climber.try_move(&mv, floor);
                prop_assert_eq!(scored, replayed(n, &moved), "{:?}", mv);
                if scored >= floor {
                    prop_assert_eq!(climber.heads(), moved.as_slice());
                    prop_assert_eq!(climber.flips(), scored);
                } else {
                    prop_assert_eq!(climber.flips(), before);
                }
                // The saved states stay right: the sequence now scores as replayed.
                prop_assert_eq!(climber.flips(), replayed(n, climber.heads()));
            }
        }
    }

    #[test]
    fn bad_sequences_are_errors() {
        assert!(Climber::new(Kernel::detect(), 5, &[3, 1, 4]).is_err());
        assert!(Climber::new(Kernel::detect(), 5, &[3, 3]).is_err());
        assert!(Climber::new(Kernel::detect(), 5, &[6]).is_err());
        assert_eq!(Climber::new(Kernel::detect(), 5, &[]).unwrap().flips(), 0);
    }
}
