//! Pure decisions of the scheduler, with no store: the flows read what a rule needs
//! through the tables, ask the rule, and write its answer. Tested without SQLite.

pub mod campaign;
pub mod ceiling;
pub mod pacing;
pub mod settle;
