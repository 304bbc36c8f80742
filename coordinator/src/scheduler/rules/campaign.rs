//! A campaign's life as decisions: the settings a new campaign may take, which
//! administrative actions apply in which state, and when a campaign is over. Pure.

use crate::error::Error;

/// Most campaigns one family of parameters may create.
pub const MAX_FAMILY_MEMBERS: usize = 10_000;

/// An administrative state change.
#[derive(Clone, Copy, Debug)]
pub enum Action {
    /// Stop handing out units; running leases are cancelled.
    Pause,
    /// Hand out units again; a failed campaign retries its failed units.
    Resume,
    /// End the campaign for good.
    Cancel,
}

/// Checks a new campaign's replication rate and attempts.
pub fn check_settings(verify_rate: f64, max_attempts: u32) -> Result<(), Error> {
    if !(0.0..=1.0).contains(&verify_rate) {
        return Err(Error::InvalidArgument(format!(
            "verify rate {verify_rate} is not between 0 and 1"
        )));
    }
    if max_attempts == 0 || max_attempts > 1000 {
        return Err(Error::InvalidArgument(format!(
            "max attempts {max_attempts} is not between 1 and 1000"
        )));
    }
    Ok(())
}

/// Checks a family's label and its number of members.
pub fn check_family(label: Option<&str>, members: usize) -> Result<(), Error> {
    if label.is_some_and(|f| f.len() > 200) {
        return Err(Error::InvalidArgument(
            "a family label must be at most 200 bytes".into(),
        ));
    }
    if members == 0 || members > MAX_FAMILY_MEMBERS {
        return Err(Error::InvalidArgument(format!(
            "the parameters name {members} campaigns; between 1 and {MAX_FAMILY_MEMBERS} are allowed"
        )));
    }
    Ok(())
}

/// Where an administrative action takes a campaign.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transition {
    /// The new state.
    pub to: &'static str,
    /// Its failed units get a fresh set of attempts.
    pub retry_failed: bool,
    /// Its active leases are cancelled.
    pub cancel_leases: bool,
}

/// Where `action` takes campaign `campaign_id` in `state`, or why it cannot.
pub fn transition(campaign_id: i64, state: &str, action: Action) -> Result<Transition, Error> {
    let (to, retry_failed) = match (action, state) {
        (Action::Pause, "running") => ("paused", false),
        (Action::Resume, "paused") => ("running", false),
        (Action::Resume, "failed") => ("running", true),
        (Action::Cancel, "running" | "paused") => ("cancelled", false),
        (action, state) => {
            return Err(Error::FailedPrecondition(
                format!("cannot {action:?} campaign {campaign_id}: it is {state}").to_lowercase(),
            ))
        }
    };
    Ok(Transition {
        to,
        retry_failed,
        cancel_leases: matches!(action, Action::Pause | Action::Cancel),
    })
}

/// Whether a campaign may have ended: it is running and its splitter is exhausted (the
/// cheap test, made before any unit is counted).
pub fn may_finish(state: &str, split_done: bool) -> bool {
    state == "running" && split_done
}

/// How a campaign with no open unit left ends: `failed` when a unit failed, else `done`.
pub fn end_state(failed_units: i64) -> &'static str {
    if failed_units > 0 {
        "failed"
    } else {
        "done"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_apply_only_in_their_states() {
        let pause = transition(1, "running", Action::Pause).unwrap();
        assert_eq!((pause.to, pause.cancel_leases), ("paused", true));
        let retry = transition(1, "failed", Action::Resume).unwrap();
        assert_eq!((retry.to, retry.retry_failed), ("running", true));
        let err = transition(7, "done", Action::Cancel).unwrap_err();
        assert!(
            err.to_string()
                .contains("cannot cancel campaign 7: it is done"),
            "{err}"
        );
        assert!(transition(1, "cancelled", Action::Resume).is_err());
    }

    #[test]
    fn a_campaign_ends_when_nothing_is_left() {
        assert!(!may_finish("running", false));
        assert!(!may_finish("paused", true));
        assert!(may_finish("running", true));
        assert_eq!(end_state(0), "done");
        assert_eq!(end_state(2), "failed");
    }

    #[test]
    fn settings_are_checked() {
        assert!(check_settings(0.5, 3).is_ok());
        assert!(check_settings(1.5, 3).is_err());
        assert!(check_settings(0.5, 0).is_err());
        assert!(check_family(Some(&"x".repeat(201)), 2).is_err());
        assert!(check_family(None, 0).is_err());
        assert!(check_family(None, MAX_FAMILY_MEMBERS + 1).is_err());
    }
}
