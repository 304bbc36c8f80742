//! A verified solution from outside a unit's result: a worker's improvement found while
//! its unit runs, or an imported known solution. Offered as the incumbent; a campaign whose
//! incumbent thereby reaches its ceiling closes.

use super::{finish, incumbent};
use crate::error::Error;
use crate::scheduler::tables::workers;
use crate::scheduler::{Ctx, Origin};

/// Offers a verified solution (from `origin.worker_id`, checked to stand, if any) as the
/// campaign's incumbent and closes the campaign when it reached its ceiling. Returns the
/// campaign's best score afterwards and whether this solution became it.
pub fn improve(
    ctx: &Ctx,
    campaign_id: i64,
    solution_json: &str,
    score: i64,
    origin: Origin,
) -> Result<(Option<i64>, bool), Error> {
    if let Some(worker_id) = origin.worker_id {
        workers::touch_worker(ctx, worker_id)?;
    }
    let offered = incumbent::offer(ctx, campaign_id, solution_json, score, origin)?;
    if offered.1 {
        finish::close_if_reached(ctx, campaign_id)?;
    }
    Ok(offered)
}
