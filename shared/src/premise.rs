//! Premises: results a proof takes as given. A campaign whose search prunes with values the
//! user stated (Topswops `--known` f(m); the sieve family's opt(N-1)) is only as proven as
//! those values. Each such value is a [`Premise`]: "the proven optimum of problem `problem`
//! with parameters matching `params` is `value`". The coordinator backs a premise with a
//! finished, proven campaign of its own database that proved exactly that value; a proof
//! with a premise nothing backs is a conditional proof ("proven given the stated values").

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One result a proof rests on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Premise {
    /// Short name for people, e.g. `f(13)`.
    pub label: String,
    /// The problem whose campaign proves it.
    pub problem: String,
    /// The parameters a proving campaign must have (a JSON object; only these fields are
    /// compared, other fields of the campaign's parameters may be anything).
    pub params: Value,
    /// The stated value: the proving campaign's proven optimum must equal it.
    pub value: i64,
}

impl Premise {
    /// True when a campaign of `problem` with canonical parameters `params` is about this
    /// premise (whatever value it proved): every field of [`Premise::params`] is equal there.
    pub fn is_about(&self, problem: &str, params: &Value) -> bool {
        if problem != self.problem {
            return false;
        }
        match self.params.as_object() {
            Some(wanted) => wanted
                .iter()
                .all(|(key, value)| params.get(key) == Some(value)),
            None => false,
        }
    }
}

/// The instance whose proven result another instance builds on (a family member's
/// predecessor: the sieve's N - 1 for N). The coordinator links a new campaign to a campaign
/// of `problem` whose parameters match `params` (compared like [`Premise::params`]) and,
/// once that campaign has finished, hands its result to [`crate::problem::Chains::inherit`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Predecessor {
    /// Short name for people of the predecessor's optimum, e.g. `opt(499)`: the label of the
    /// premise a ceiling taken from it rests on.
    pub label: String,
    /// The predecessor's problem.
    pub problem: String,
    /// The parameters the predecessor's campaign must have (a JSON object; only these
    /// fields are compared).
    pub params: Value,
}

impl Predecessor {
    /// The premise "the predecessor's optimum is `value`".
    pub fn premise(&self, value: i64) -> Premise {
        Premise {
            label: self.label.clone(),
            problem: self.problem.clone(),
            params: self.params.clone(),
            value,
        }
    }
}

/// What an instance takes from its predecessor's finished result.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Inherited {
    /// A solution of this instance built from the predecessor's (the coordinator verifies
    /// it like any other before it can become the incumbent).
    pub start: Option<Value>,
    /// A bound on this instance's optimum (upper for `max`, lower for `min`) that holds when
    /// the predecessor's stated value is its true optimum: the coordinator records that as a
    /// premise and ends the campaign once its incumbent reaches the ceiling.
    pub ceiling: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f13() -> Premise {
        Premise {
            label: "f(13)".into(),
            problem: "topswops".into(),
            params: json!({"n": 13}),
            value: 80,
        }
    }

    #[test]
    fn a_premise_is_about_campaigns_with_its_parameters_only() {
        let premise = f13();
        assert!(premise.is_about("topswops", &json!({"n": 13, "split_depth": 2})));
        assert!(!premise.is_about("topswops", &json!({"n": 12})));
        assert!(!premise.is_about("topswops", &json!({"split_depth": 2})));
        assert!(!premise.is_about("sieve", &json!({"n": 13})));
        let not_an_object = Premise {
            params: json!(13),
            ..premise
        };
        assert!(!not_an_object.is_about("topswops", &json!({"n": 13})));
    }
}
