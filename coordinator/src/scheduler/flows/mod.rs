//! The scheduler's operations: the only modules that touch more than one table. A flow
//! reads through [`super::tables`], decides with [`super::rules`], writes through the
//! tables, and notes the effects of its change on the [`super::Ctx`]. Flows call each other
//! without cycles (checked by `tests/table_owners.rs`): the lower ones end leases
//! ([`lease_end`]), offer incumbents ([`incumbent`]) and back premises ([`proof`]); above
//! them a campaign finishes ([`finish`], with [`successors`]); above that results are
//! taken in and settled ([`complete`]) and work is granted ([`grant`]).

pub mod campaign;
pub mod complete;
pub mod donate;
pub mod expire;
pub mod finish;
pub mod grant;
pub mod heartbeat;
pub mod held;
pub mod improve;
pub mod incumbent;
pub mod lease_end;
pub mod proof;
pub mod successors;
pub mod workers;
