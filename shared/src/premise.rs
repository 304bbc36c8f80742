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
