//! Solver upgrades on resume: a campaign created by an older solver version continues with
//! this binary's solver. The campaign's version is raised and a `solver_upgraded` event
//! records when; results and incumbents keep the version that produced them.

use grind_shared::registry;
use serde_json::json;

use crate::error::Error;
use crate::scheduler::tables::campaigns;
use crate::scheduler::{event, Ctx};

/// Raises the solver version of every unfinished campaign whose problem this binary solves
/// with a newer solver. Returns the upgraded campaigns as (id, from, to).
pub fn upgrade_solver_versions(ctx: &Ctx) -> Result<Vec<(i64, u32, u32)>, Error> {
    let campaigns: Vec<(i64, String, u32)> = ctx
        .conn
        .prepare(
            "SELECT id, problem, solver_version FROM campaigns
             WHERE state IN ('running', 'paused') ORDER BY id",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    let mut upgraded = Vec::new();
    for (id, problem, stored) in campaigns {
        // A problem this binary does not know keeps its campaign as it is (no worker of
        // this build can run it anyway).
        let Ok(entry) = registry::lookup(&problem) else {
            continue;
        };
        let current = entry.solver_version;
        if current > stored {
            campaigns::set_solver_version(ctx, id, current)?;
            event(
                ctx.conn,
                ctx.now,
                "solver_upgraded",
                Some(id),
                None,
                None,
                None,
                json!({"problem": problem, "from": stored, "to": current,
                       "grind": grind_shared::VERSION, "git_commit": grind_shared::GIT_COMMIT}),
            )?;
            upgraded.push((id, stored, current));
        } else if current < stored {
            tracing::warn!(
                "campaign {id} ({problem}) was run by solver version {stored}, newer than \
                 this grind's {current}; it continues, but upgrade grind"
            );
        }
    }
    Ok(upgraded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::problems::Problems;
    use crate::views::EVENT_SOLVER_VERSION;
    use rusqlite::Connection;

    fn improvement(conn: &Connection, at_ms: i64, detail: serde_json::Value) -> i64 {
        event(
            conn,
            at_ms,
            "improvement",
            Some(1),
            None,
            None,
            None,
            detail,
        )
        .unwrap()
    }

    fn label(conn: &Connection, event_id: i64) -> u32 {
        conn.query_row(
            &format!(
                "SELECT {EVENT_SOLVER_VERSION} FROM events e JOIN campaigns c
                 ON c.id = e.campaign_id WHERE e.id = ?1"
            ),
            [event_id],
            |r| r.get(0),
        )
        .unwrap()
    }

    #[test]
    fn an_upgrade_keeps_the_labels_of_earlier_improvements() {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::schema::migrate(&mut conn).unwrap();
        let current = registry::lookup("primes").unwrap().solver_version;
        conn.execute(
            "INSERT INTO campaigns (id, name, problem, params_json, objective, exhaustive,
                 solver_version, state, created_ms, verify_rate, max_attempts, seed)
             VALUES (1, 'c', 'primes', '{}', 'count', 1, 0, 'running', 0, 0, 3, 0),
                    (2, 'd', 'primes', '{}', 'count', 1, 0, 'done', 0, 0, 3, 0),
                    (3, 'e', 'no-such-problem', '{}', 'count', 1, 0, 'running', 0, 0, 3, 0)",
            [],
        )
        .unwrap();
        // Recorded by an older grind: no version in the event.
        let unlabelled = improvement(&conn, 1, serde_json::json!({"score": 5}));
        let labelled = improvement(&conn, 2, serde_json::json!({"solver_version": 0}));
        let (config, problems) = (Config::default(), Problems::default());
        let ctx = Ctx::new(&conn, 10, &config, &problems);
        let upgraded = upgrade_solver_versions(&ctx).unwrap();
        // Only the unfinished campaign of a known problem is upgraded.
        assert_eq!(upgraded, vec![(1, 0, current)]);
        assert!(upgrade_solver_versions(&ctx).unwrap().is_empty(), "once");
        let after = improvement(&conn, 11, serde_json::json!({"solver_version": current}));
        let later = improvement(&conn, 12, serde_json::json!({"score": 6}));
        assert_eq!(label(&conn, unlabelled), 0, "the version in effect then");
        assert_eq!(label(&conn, labelled), 0);
        assert_eq!(label(&conn, after), current);
        assert_eq!(
            label(&conn, later),
            current,
            "no upgrade since: the campaign's"
        );
    }
}
