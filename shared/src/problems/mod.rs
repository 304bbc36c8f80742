//! Every problem grind can run, one module each.

pub mod exec;
pub mod grid;
pub mod housie;
pub mod nimsquare;
pub mod primes;
pub mod sieve;
pub mod topswops;
