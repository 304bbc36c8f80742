//! What a campaign's value means: how far its search proves it, in the words every view uses.

/// How far a campaign's search proves its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proof {
    /// Not (yet) a proof: unfinished, failed units, or a search that is not exhaustive.
    None,
    /// Finished and exhaustive, but resting on a premise no proven campaign backs.
    Conditional,
    /// Finished and exhaustive, every premise backed.
    Complete,
    /// Finished, but over units grind could not check cover the search (a user's own
    /// split, `Problem::coverage_checked` false): the solver's claim, never a proof.
    Claimed,
}

/// What a campaign's value means, in the words every view uses (CLI, JSON, web, export):
/// `proven_optimum` (finished exhaustive search, value optimal), `proven_none_reaches_target`
/// (finished exhaustive search that found no solution beating its starting bound or proof
/// target: a proof that none exists, not an optimum), `conditional_proof` (a finished
/// exhaustive search resting on stated values no proven campaign backs: proven given them),
/// `claimed_optimum` / `claimed_none` / `claimed_count` (every unit of a split grind could
/// not check finished: the solver's claim, not proven), `best_found` (a verified solution,
/// not proven optimal), `none_found`, `exact_count` / `partial_count`, `samples`.
pub fn outcome(objective: &str, proof: Proof, has_value: bool) -> &'static str {
    match (objective, proof, has_value) {
        ("count", Proof::Claimed, _) => "claimed_count",
        ("count", Proof::Complete, _) => "exact_count",
        ("count", _, _) => "partial_count",
        ("sample", _, _) => "samples",
        (_, Proof::Conditional, _) => "conditional_proof",
        (_, Proof::Claimed, true) => "claimed_optimum",
        (_, Proof::Claimed, false) => "claimed_none",
        (_, Proof::Complete, true) => "proven_optimum",
        (_, Proof::Complete, false) => "proven_none_reaches_target",
        (_, Proof::None, true) => "best_found",
        (_, Proof::None, false) => "none_found",
    }
}

/// The words for people of an [`outcome`].
pub fn outcome_words(outcome: &str) -> &'static str {
    match outcome {
        "proven_optimum" => "proven optimum",
        "proven_none_reaches_target" => "proven: no solution reaches the target",
        "conditional_proof" => "conditional proof: proven given the stated values",
        "claimed_optimum" => "finished (solver's claim): best found, not proven",
        "claimed_none" => "finished (solver's claim): nothing found, not proven",
        "claimed_count" => "finished (solver's claim): count over the user's split, not proven",
        "best_found" => "best found, not proven",
        "none_found" => "nothing found yet",
        "exact_count" => "exact count",
        "partial_count" => "partial count",
        "samples" => "samples",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::{outcome, outcome_words, Proof};

    #[test]
    fn a_proof_without_a_value_is_not_called_an_optimum() {
        assert_eq!(outcome("max", Proof::Complete, true), "proven_optimum");
        assert_eq!(outcome("max", Proof::Claimed, true), "claimed_optimum");
        assert_eq!(outcome("min", Proof::Claimed, false), "claimed_none");
        assert_eq!(outcome("count", Proof::Claimed, true), "claimed_count");
        assert!(outcome_words("claimed_optimum").contains("solver's claim"));
        assert_eq!(
            outcome("max", Proof::Complete, false),
            "proven_none_reaches_target"
        );
        assert_eq!(outcome("min", Proof::None, true), "best_found");
        assert_eq!(outcome("max", Proof::None, false), "none_found");
        assert_eq!(outcome("count", Proof::Complete, true), "exact_count");
        assert_eq!(outcome("count", Proof::None, true), "partial_count");
        assert_eq!(outcome("sample", Proof::Complete, true), "samples");
        for o in [
            "proven_optimum",
            "proven_none_reaches_target",
            "conditional_proof",
            "best_found",
        ] {
            assert!(!outcome_words(o).is_empty());
        }
        assert!(!outcome_words("proven_none_reaches_target").contains("optimum"));
    }

    #[test]
    fn a_proof_resting_on_unbacked_values_is_conditional_with_or_without_a_value() {
        assert_eq!(
            outcome("max", Proof::Conditional, true),
            "conditional_proof"
        );
        assert_eq!(
            outcome("max", Proof::Conditional, false),
            "conditional_proof"
        );
        assert!(outcome_words("conditional_proof").contains("given"));
    }
}
