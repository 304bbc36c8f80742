//! The library both sides of grind share: the [`problem::Problem`] interface, every problem's
//! splitter, solver and verifier, the problem registry, and build provenance.
//!
//! A new problem is one module under [`problems`] plus one line in [`registry::registry`].

pub mod attachments;
pub mod conformance;
pub mod contests;
pub mod count;
pub mod coverage;
pub mod drawing;
pub mod local;
pub mod placement;
pub mod premise;
pub mod problem;
pub mod problems;
pub mod registry;
pub mod rng;

/// The version of the grind binaries (from Cargo).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The git commit the binaries were built from, or `unknown`.
pub const GIT_COMMIT: &str = env!("GRIND_GIT_COMMIT");
