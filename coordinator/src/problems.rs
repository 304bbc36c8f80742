//! Problem instances of the coordinator's campaigns, built once from the registry and cached.

use grind_shared::placement::Requirements;
use grind_shared::problem::Problem;
use grind_shared::registry;
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::Error;

type ByCampaign = HashMap<i64, Arc<dyn Problem>>;

/// Cache of campaign id -> problem instance (and what its units need from a worker).
#[derive(Default)]
pub struct Problems {
    cache: Mutex<ByCampaign>,
    requirements: Mutex<HashMap<i64, Arc<Requirements>>>,
}

impl Problems {
    /// The problem instance of `campaign_id`, built from the campaign's stored parameters.
    pub fn get(&self, conn: &Connection, campaign_id: i64) -> Result<Arc<dyn Problem>, Error> {
        if let Some(found) = self.lock()?.get(&campaign_id) {
            return Ok(found.clone());
        }
        let row: Option<(String, String)> = conn
            .prepare_cached("SELECT problem, params_json FROM campaigns WHERE id = ?1")?
            .query_row(params![campaign_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let (name, params_json) =
            row.ok_or_else(|| Error::NotFound(format!("no campaign {campaign_id}")))?;
        let problem = registry::instantiate(&name, &params_json)?;
        self.lock()?.insert(campaign_id, problem.clone());
        Ok(problem)
    }

    /// What a worker needs to be granted `campaign_id`'s units
    /// ([`grind_shared::problem::Placement::requirements`]), asked once per campaign; `None`
    /// for a campaign whose units run anywhere (every built-in problem), so a grant needs
    /// no look at the worker's facts.
    pub fn requirements(
        &self,
        conn: &Connection,
        campaign_id: i64,
    ) -> Result<Option<Arc<Requirements>>, Error> {
        let known = self
            .requirements
            .lock()
            .map_err(|_| Error::Internal("requirements cache poisoned".into()))?
            .get(&campaign_id)
            .cloned();
        let needs = match known {
            Some(needs) => needs,
            None => {
                let needs = Arc::new(self.get(conn, campaign_id)?.requirements());
                self.requirements
                    .lock()
                    .map_err(|_| Error::Internal("requirements cache poisoned".into()))?
                    .insert(campaign_id, needs.clone());
                needs
            }
        };
        Ok((*needs != Requirements::default()).then_some(needs))
    }

    /// The problem instance of `campaign_id` if it is cached (no store read).
    pub fn cached(&self, campaign_id: i64) -> Option<Arc<dyn Problem>> {
        self.lock().ok()?.get(&campaign_id).cloned()
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, ByCampaign>, Error> {
        self.cache
            .lock()
            .map_err(|_| Error::Internal("problem cache poisoned".into()))
    }
}
