//! The problem cache: one instance per campaign, built from the registry on its first unit.

use grind_proto::v1 as pb;
use grind_shared::problem::{Problem, ProblemError};
use grind_shared::registry;
use std::collections::HashMap;
use std::sync::Arc;

/// The problems of the campaigns this worker has run units of.
#[derive(Default)]
pub(super) struct ProblemCache {
    by_campaign: HashMap<i64, Arc<dyn Problem>>,
}

impl ProblemCache {
    /// The problem of `grant`'s campaign, built on first use (an error when this worker does
    /// not know the problem or its parameters do not parse).
    pub(super) fn get(&mut self, grant: &pb::LeaseGrant) -> Result<Arc<dyn Problem>, ProblemError> {
        if let Some(problem) = self.by_campaign.get(&grant.campaign_id) {
            return Ok(problem.clone());
        }
        let entry = registry::lookup(&grant.problem)?;
        if entry.solver_version != grant.solver_version {
            tracing::warn!(
                "campaign {} was created for {} solver version {}, this worker has {}",
                grant.campaign_id,
                grant.problem,
                grant.solver_version,
                entry.solver_version
            );
        }
        let problem = registry::instantiate(&grant.problem, &grant.params_json)?;
        self.by_campaign.insert(grant.campaign_id, problem.clone());
        Ok(problem)
    }
}

/// This worker's solver version for `problem` (0 when it does not know the problem), sent
/// with every result so the coordinator can label what each solver version produced.
pub(super) fn solver_version_of(problem: &str) -> u32 {
    registry::lookup(problem).map_or(0, |entry| entry.solver_version)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(campaign_id: i64, problem: &str, params_json: &str) -> pb::LeaseGrant {
        pb::LeaseGrant {
            campaign_id,
            problem: problem.into(),
            params_json: params_json.into(),
            ..Default::default()
        }
    }

    #[test]
    fn problems_are_built_once_per_campaign_and_bad_ones_named() {
        let mut cache = ProblemCache::default();
        let first = cache.get(&grant(1, "primes", r#"{"to":100}"#)).unwrap();
        // Same campaign: the cached instance, whatever the grant says.
        let again = cache.get(&grant(1, "primes", "not json")).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        let err = cache.get(&grant(2, "no-such-problem", "{}")).err().unwrap();
        assert!(err.to_string().contains("no-such-problem"), "{err}");
        assert!(cache.get(&grant(3, "primes", r#"{"to":0}"#)).is_err());
        assert!(solver_version_of("primes") > 0);
        assert_eq!(solver_version_of("no-such-problem"), 0);
    }
}
