//! Reaching the coordinator: backoff while it is away, and what its refusals mean (register
//! again, wait for a new token, or stop for good). Refusals are told apart by their typed
//! kind and status code ([`Failure`]), never by their text.

use std::time::{Duration, Instant};
use tonic::Status;

use super::Agent;
use crate::coordinator::{Coordinator, Failure};
use crate::events::{RefusedFor, WorkerEvent};

/// Longest wait between attempts to reach the coordinator (and after a refused call).
pub(super) const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// First wait after a failed attempt.
pub(super) const MIN_BACKOFF: Duration = Duration::from_millis(100);
/// How long a token refusal must last before the worker gives up for good. A running
/// coordinator re-reads its tokens every second, so a token created a moment ago (a worker
/// started right after `grind token create`, as Kubernetes does once the Secret exists) is
/// refused until then; a wrong or revoked token is refused for as long as it is asked.
const TOKEN_REFUSAL_GRACE: Duration = Duration::from_secs(3);
/// How often a refused token is tried again during the grace.
pub(super) const TOKEN_RETRY: Duration = Duration::from_millis(500);

/// When the coordinator may be called next, and whether it has refused this worker.
pub(super) struct Contact {
    backoff: Duration,
    next: Instant,
    /// When the coordinator began refusing this worker's token, unless it has accepted a
    /// call since ([`TOKEN_REFUSAL_GRACE`]).
    token_refused_since: Option<Instant>,
    /// Set when the coordinator refuses this worker for good (bad token, banned).
    locked_out: Option<String>,
}

impl Contact {
    pub(super) fn new(now: Instant) -> Contact {
        Contact {
            backoff: MIN_BACKOFF,
            next: now,
            token_refused_since: None,
            locked_out: None,
        }
    }

    /// Whether the coordinator may be called now.
    pub(super) fn reachable(&self) -> bool {
        Instant::now() >= self.next
    }

    /// When the coordinator may be called next.
    pub(super) fn next(&self) -> Instant {
        self.next
    }

    /// Calls the coordinator again at once (shutdown's last delivery).
    pub(super) fn now(&mut self) {
        self.next = Instant::now();
    }

    /// Calls the coordinator again after `wait`.
    pub(super) fn retry_in(&mut self, wait: Duration) {
        self.next = Instant::now() + wait;
    }

    /// A call went through: the coordinator is back and accepts this worker.
    pub(super) fn ok(&mut self) {
        self.backoff = MIN_BACKOFF;
        self.token_refused_since = None;
    }

    /// A call could not reach the coordinator: wait, doubling the wait up to [`MAX_BACKOFF`].
    pub(super) fn failed(&mut self, what: &str, status: &Status) {
        tracing::warn!(
            "{what}: coordinator unreachable ({}: {}); retrying in {:?}",
            status.code(),
            status.message(),
            self.backoff
        );
        self.next = Instant::now() + self.backoff;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }

    /// Why the coordinator refuses this worker for good, if it does.
    pub(super) fn locked_out(&self) -> Option<&str> {
        self.locked_out.as_deref()
    }
}

/// What the worker made of a refused call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// The coordinator did not know this worker: it registers again.
    Forgotten,
    /// The token was refused, but recently enough that it may be new: ask again soon.
    TokenGrace,
    /// Refused for good (banned, or a token refused past the grace): the worker stops.
    LockedOut,
    /// Only this request was refused.
    Request,
}

impl<C: Coordinator> Agent<C> {
    /// Acts on a call the coordinator refused (not a transient failure): forgets the
    /// identity the coordinator does not know, waits out a possibly new token, or locks the
    /// worker out for good.
    pub(super) fn on_refusal(&mut self, status: &Status) -> Refusal {
        match Failure::of(status) {
            Failure::UnknownWorker => {
                tracing::warn!(
                    "the coordinator no longer knows worker {}; registering again",
                    self.worker_id
                );
                self.worker_id = 0;
                Refusal::Forgotten
            }
            Failure::Banned => {
                self.lock_out(RefusedFor::Banned, status);
                Refusal::LockedOut
            }
            Failure::TokenRefused => {
                let since = *self
                    .contact
                    .token_refused_since
                    .get_or_insert_with(Instant::now);
                if since.elapsed() < TOKEN_REFUSAL_GRACE {
                    tracing::warn!(
                        "token refused ({}); asking again in {TOKEN_RETRY:?}, in case the token \
                         is new (a coordinator reads new tokens within a second)",
                        status.message()
                    );
                    return Refusal::TokenGrace;
                }
                self.lock_out(RefusedFor::Token, status);
                Refusal::LockedOut
            }
            Failure::Transient | Failure::Refused => Refusal::Request,
        }
    }

    fn lock_out(&mut self, kind: RefusedFor, status: &Status) {
        if self.contact.locked_out.is_none() {
            self.log.emit(WorkerEvent::Refused {
                worker_id: self.summary.worker_id,
                kind,
                reason: status.message().to_string(),
            });
        }
        self.contact.locked_out = Some(status.message().to_string());
    }
}
