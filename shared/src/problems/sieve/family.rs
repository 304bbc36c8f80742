//! Family members that build on each other: the campaign for N takes the finished campaign
//! for N - 1 as its predecessor ([`crate::problem::Chains::predecessor`]) and inherits a
//! starting game and a ceiling from it ([`inherit`]).
//!
//! **Starting game.** A game on 1..=N-1 is a legal move sequence on 1..=N: N divides no
//! other number of the list, so it is never crossed out as a divisor and no move loses a
//! divisor or changes its score. When the N-1 game is over, the only number that can still
//! be selected on 1..=N is N itself (every other number has the divisors it had on 1..=N-1,
//! none of which remains), and N can be selected exactly when one of its proper divisors is
//! still in the list. So the N-1 game, followed by N when that is legal, is a finished game
//! on 1..=N scoring opt(N-1) (+ N).
//!
//! **Ceiling: opt(N) <= opt(N-1) + N.** Take an optimal game G on 1..=N and delete the move
//! N if G plays it. What is left is a legal move sequence on 1..=N-1: a move before N sees
//! the same list as in G (less N, which divides nothing it selects); a move after N sees the
//! list of G plus the divisors of N that N's move crossed out, so it still remains itself
//! (it was selected later, so N did not cross it out) and still has the proper divisor it had
//! in G. Its score is score(G) - N (or score(G) if G never plays N). Playing on until no move
//! is left only adds points, so opt(N-1) >= score(G) - N, that is opt(N) <= opt(N-1) + N.
//! The ceiling holds only if the predecessor's value really is opt(N-1): the coordinator
//! records it as a premise, so N's result is proven only when N - 1's is. It is reached
//! exactly when some optimal game on 1..=N plays N, which a third of N up to 1000 do (for
//! example N = 2p with p prime: p stays in the list, since only p's own move could cross it
//! out below 2p, so N = 2p is selectable after any game on 1..=N-1).
//!
//! **Prime N >= 3: opt(N) = opt(N-1) + N - P', P' the largest prime below N.** A prime is
//! selectable only as the first move (its one proper divisor, 1, goes with the first move).
//! Neither N nor P' divides another number of 1..=N (P' > (N-1)/2 by Bertrand's postulate and
//! 2P' != N, so 2P' > N), so whether they are in the list changes no other move's divisors.
//! *At most:* an optimal game G on 1..=N that does not start with N never selects N; it is a
//! game on 1..=N-1 (N lying idle) and scores at most opt(N-1). One that starts with N never
//! selects P', which stays in the list untouched; P' in N's place is then a legal sequence on
//! 1..=N-1 scoring score(G) - N + P', so opt(N) <= opt(N-1) + N - P'. *At least:* an optimal
//! game on 1..=N-1 starts with P' (P' in front of a first move that is not prime, or in place
//! of a smaller first prime, would score more), and N in P''s place is a finished game on
//! 1..=N scoring opt(N-1) - P' + N (P' left in the list has no divisor but the 1 it lost).
//! So for a prime N the ceiling is opt(N-1) + N - P' ([`ceiling`]), and the starting game
//! ([`extend`]) reaches it whenever the predecessor's game is optimal: no prime N needs a
//! search. The published table agrees for every prime N up to 1000 (a test).

use serde_json::{json, Value};

use super::game::{self, Board};
use super::search::largest_prime;
use super::{solution, SieveParams};
use crate::premise::{Inherited, Predecessor};
use crate::problem::ProblemError;
use crate::registry::ProblemDef;

/// The predecessor of the exact campaign for `n` (none for N = 1): the exact campaign for
/// N - 1.
pub fn predecessor(n: u32) -> Option<Predecessor> {
    (n >= 2).then(|| Predecessor {
        label: format!("opt({})", n - 1),
        problem: <super::Sieve as ProblemDef>::NAME.to_string(),
        params: json!({"n": n - 1, "heuristic": false}),
    })
}

/// Whether `n` is prime.
pub(super) fn is_prime(n: u32) -> bool {
    n >= 2 && largest_prime(n) == n
}

/// The ceiling of N's optimum given opt(N-1) = `value` (see the module docs): opt(N-1) + N,
/// and opt(N-1) + N - P' for a prime N >= 3 whose largest smaller prime is P'. `None` on
/// overflow.
pub fn ceiling(n: u32, value: i64) -> Option<i64> {
    let drop = if n >= 3 && is_prime(n) {
        largest_prime(n - 1)
    } else {
        0
    };
    value.checked_add(i64::from(n) - i64::from(drop))
}

/// A finished game on 1..=N built from the game `moves` on 1..=N-1 scoring `value`, and its
/// score: for a composite N (or N = 2) the game followed by N when N is still selectable at
/// its end; for a prime N >= 3, N in place of the game's first move when that is a prime
/// (else in front of it), the rest as it was, then the largest selectable number while there
/// is one. An error when `moves` is not a finished game on 1..=N-1 scoring `value`.
pub fn extend(n: u32, moves: &[u64], value: i64) -> Result<(Vec<u64>, i64), ProblemError> {
    let bad = |why: String| ProblemError::InvalidSolution(format!("sieve predecessor: {why}"));
    if n < 2 {
        return Err(bad("N = 1 has no predecessor".into()));
    }
    let score =
        game::replay(n - 1, moves).map_err(|e| bad(format!("not a game on 1..={}: {e}", n - 1)))?;
    if i64::try_from(score).ok() != Some(value) {
        return Err(bad(format!("its game scores {score}, not {value}")));
    }
    if n >= 3 && is_prime(n) {
        let rest = match moves.first() {
            Some(&first) if is_prime(first as u32) => &moves[1..],
            _ => moves,
        };
        // Legal on 1..=N-1 after its first move, so legal after N (see the module docs):
        // checked all the same, since a lying predecessor may send any game.
        let start: Vec<u32> = std::iter::once(n)
            .chain(rest.iter().map(|&m| m as u32))
            .collect();
        let finished = game::finish(n, &start)
            .ok_or_else(|| bad(format!("its moves are not legal after {n}")))?;
        let score = finished.iter().map(|&k| i64::from(k)).sum();
        return Ok((finished.into_iter().map(u64::from).collect(), score));
    }
    let mut board = Board::new(n);
    for &m in moves {
        // Legal on 1..=N-1, so legal here (replayed above).
        board.play(m as u32);
    }
    let mut extended = moves.to_vec();
    let mut score = value;
    if board.legal(n) {
        extended.push(u64::from(n));
        score += i64::from(n);
    }
    Ok((extended, score))
}

/// What the campaign for `n` takes from the finished campaign for N - 1, which states that
/// opt(N-1) = `value` with the game `solution`: that game extended ([`extend`]) as a
/// starting game, and the [`ceiling`].
pub fn inherit(n: u32, value: i64, solution_doc: &Value) -> Result<Inherited, ProblemError> {
    let moves: Vec<u64> = solution_doc
        .get("moves")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            ProblemError::InvalidSolution("sieve predecessor: no \"moves\" list".into())
        })?
        .iter()
        .map(|m| {
            m.as_u64().ok_or_else(|| {
                ProblemError::InvalidSolution(format!("sieve predecessor: move {m}"))
            })
        })
        .collect::<Result<_, _>>()?;
    let (extended, score) = extend(n, &moves, value)?;
    let moves: Vec<u32> = extended.iter().map(|&m| m as u32).collect();
    Ok(Inherited {
        start: Some(solution(&moves, score)),
        ceiling: ceiling(n, value),
    })
}

/// Whether an exact campaign with these parameters builds on its predecessor.
pub fn builds_on_predecessor(params: &SieveParams) -> bool {
    !params.heuristic && !params.independent
}
