//! Ceilings: a campaign that builds on its predecessor's result may know the best value it
//! can reach. Whether an adopted ceiling is refuted, and whether a campaign's incumbent has
//! reached (or beaten) its ceiling. Pure.

use grind_shared::problem::Objective;

/// What a campaign's ceiling means now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtCeiling {
    /// Nothing to do (no ceiling, no incumbent, not running, or not reached).
    Open,
    /// The incumbent beat the ceiling: the ceiling was wrong and is dropped.
    Refuted {
        /// The ceiling.
        ceiling: i64,
        /// The incumbent's score.
        best: i64,
    },
    /// The incumbent equals the ceiling: nothing better exists, the campaign closes.
    Reached(i64),
}

/// What a campaign's ceiling means, given its state, objective, ceiling and best score.
pub fn at_ceiling(
    state: &str,
    objective: &str,
    ceiling: Option<i64>,
    best: Option<i64>,
) -> AtCeiling {
    let (Some(ceiling), Some(best)) = (ceiling, best) else {
        return AtCeiling::Open;
    };
    if state != "running" {
        return AtCeiling::Open;
    }
    if best == ceiling {
        return AtCeiling::Reached(ceiling);
    }
    if Objective::parse(objective).is_some_and(|o| o.improves(best, Some(ceiling))) {
        return AtCeiling::Refuted { ceiling, best };
    }
    AtCeiling::Open
}

/// Whether a ceiling taken from a predecessor is refuted before it is adopted: a known
/// solution (`best`) beats it, or the problem's initial bound promises one that does (a
/// campaign searches only for solutions beating its initial bound). Returns what refutes
/// it and that score.
pub fn refutes_ceiling(
    objective: Objective,
    ceiling: i64,
    best: Option<i64>,
    initial_bound: Option<i64>,
) -> Option<(&'static str, i64)> {
    best.filter(|&b| objective.improves(b, Some(ceiling)))
        .map(|b| ("incumbent", b))
        .or(initial_bound
            .filter(|&b| !objective.improves(ceiling, Some(b)))
            .map(|b| ("initial bound", b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_incumbent_at_the_ceiling_closes_the_campaign() {
        assert_eq!(
            at_ceiling("running", "max", Some(10), Some(10)),
            AtCeiling::Reached(10)
        );
        assert_eq!(
            at_ceiling("running", "max", Some(10), Some(11)),
            AtCeiling::Refuted {
                ceiling: 10,
                best: 11
            }
        );
        assert_eq!(
            at_ceiling("running", "max", Some(10), Some(9)),
            AtCeiling::Open
        );
        assert_eq!(
            at_ceiling("paused", "max", Some(10), Some(10)),
            AtCeiling::Open
        );
        assert_eq!(at_ceiling("running", "min", None, Some(3)), AtCeiling::Open);
    }

    #[test]
    fn a_ceiling_below_what_is_known_is_refuted() {
        let max = Objective::Max;
        assert_eq!(
            refutes_ceiling(max, 10, Some(11), None),
            Some(("incumbent", 11))
        );
        assert_eq!(refutes_ceiling(max, 10, Some(9), None), None);
        // An initial bound of 10 promises a solution beating 10.
        assert_eq!(
            refutes_ceiling(max, 10, None, Some(10)),
            Some(("initial bound", 10))
        );
        assert_eq!(refutes_ceiling(max, 10, None, Some(9)), None);
    }
}
