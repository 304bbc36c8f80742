//! Waiting on conditions: poll with a timeout, never a fixed sleep.

use crate::KitError;
use std::future::Future;
use std::time::{Duration, Instant};

/// How often [`poll_until`] looks.
pub const POLL_EVERY: Duration = Duration::from_millis(50);

/// Polls `check` every [`POLL_EVERY`] until it returns `Some`, giving up after `timeout`
/// with [`KitError::TimedOut`] naming `what` (`check` runs at least once, and once more at
/// the deadline).
pub async fn poll_until<T, F, Fut>(
    what: &str,
    timeout: Duration,
    mut check: F,
) -> Result<T, KitError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return Ok(value);
        }
        if Instant::now() >= deadline {
            return Err(KitError::TimedOut {
                what: what.to_string(),
                after: timeout,
            });
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[tokio::test]
    async fn returns_once_the_condition_holds_and_times_out_otherwise() {
        let calls = Cell::new(0);
        let value = poll_until("the third call", Duration::from_secs(10), || {
            calls.set(calls.get() + 1);
            let n = calls.get();
            async move { (n == 3).then_some(n) }
        })
        .await
        .unwrap();
        assert_eq!(value, 3);
        let started = Instant::now();
        let never = poll_until("nothing", Duration::from_millis(120), || async {
            None::<()>
        })
        .await
        .unwrap_err();
        assert!(started.elapsed() >= Duration::from_millis(120));
        assert_eq!(
            never.to_string(),
            "timed out after 120ms waiting for nothing"
        );
    }
}
