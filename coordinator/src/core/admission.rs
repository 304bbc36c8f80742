//! Admission: which worker calls are let in. A call is refused when its worker is unknown
//! or banned, registered with another token than the caller's, or calls faster than its
//! rate limit; registrations are rate-limited per address. Bans take a worker out.

use governor::Quota;
use std::sync::Arc;

use super::Coordinator;
use crate::auth::{Authenticator, Caller, Role};
use crate::error::Error;
use crate::scheduler;

impl Coordinator {
    /// Admits a call from worker `worker_id`: refused when the worker is unknown or banned,
    /// when its identity belongs to another token than the caller's (admin tokens may act
    /// for any worker), or when the worker calls faster than its rate limit.
    pub async fn admit(&self, worker_id: i64, caller: Option<Caller>) -> Result<(), Error> {
        if let Some(Err(_)) = self
            .inner
            .worker_calls
            .as_ref()
            .map(|l| l.check_key(&worker_id))
        {
            return Err(Error::ResourceExhausted(format!(
                "worker {worker_id} calls too often; slow down"
            )));
        }
        let cached = self
            .inner
            .admitted
            .lock()
            .map_err(|_| Error::Internal("worker table poisoned".into()))?
            .get(&worker_id)
            .copied();
        let token_id = match cached {
            Some(token_id) => token_id,
            None => {
                let standing = self
                    .inner
                    .store
                    .read(move |conn| scheduler::worker_standing(conn, worker_id))
                    .await?;
                match standing {
                    None => return Err(Error::UnknownWorker(worker_id)),
                    Some((_, true)) => return Err(Error::Banned(worker_id)),
                    Some((token_id, false)) => {
                        if let Ok(mut admitted) = self.inner.admitted.lock() {
                            admitted.insert(worker_id, token_id);
                        }
                        token_id
                    }
                }
            }
        };
        match caller {
            Some(c) if c.role != Role::Admin && token_id != Some(c.token_id) => {
                Err(Error::PermissionDenied(format!(
                    "worker {worker_id} was registered with another token"
                )))
            }
            _ => Ok(()),
        }
    }

    /// Bans a worker (see [`scheduler::ban_worker`]); returns how many leases it lost.
    pub async fn ban_worker(&self, worker_id: i64, reason: String) -> Result<usize, Error> {
        let taken = self
            .write(move |ctx| scheduler::ban_worker(ctx, worker_id, &reason))
            .await?;
        if let Ok(mut admitted) = self.inner.admitted.lock() {
            admitted.remove(&worker_id);
        }
        Ok(taken)
    }

    /// Re-reads the token table into `auth`.
    pub async fn reload_tokens(&self, auth: &Arc<Authenticator>) -> Result<(), Error> {
        let auth = auth.clone();
        self.inner.store.read(move |conn| auth.reload(conn)).await
    }

    /// Forgets rate-limit state of callers not seen lately (called by the sweep).
    pub fn trim_rate_limits(&self) {
        if let Some(limiter) = &self.inner.worker_calls {
            limiter.retain_recent();
        }
        self.inner.registrations.retain_recent();
    }
}

/// A quota of `n` calls a second (at least one), with bursts of up to `n` calls.
pub(super) fn per_second(n: u32) -> Quota {
    Quota::per_second(std::num::NonZeroU32::new(n.max(1)).unwrap_or(std::num::NonZeroU32::MIN))
}
