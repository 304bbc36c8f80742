//! One module per table: its rows, its reads and its writes. A table module is the only
//! writer of its table (`tests/table_owners.rs`) and calls no other table module; flows
//! combine them.

pub mod campaigns;
pub mod events;
pub mod leases;
pub mod premises;
pub mod results;
pub mod units;
pub mod workers;
