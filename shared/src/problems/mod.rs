//! Every problem grind can run, one module each.

pub mod housie;
pub mod nimsquare;
pub mod primes;
pub mod sieve;
pub mod topswops;
