//! The grind coordinator: a gRPC server that splits campaigns into units, leases them to
//! workers, verifies and merges results into a durable SQLite store, and answers admin
//! clients. `grind run` embeds it with local workers.
//!
//! Layout: [`store`] (the database and its writer), [`schema`] (migrations), [`scheduler`]
//! (the lease/unit state machine), [`upgrade`] (solver upgrades on resume), [`views`] (read queries), [`core`] (operations with
//! verification), [`service`] (gRPC handlers), [`server`] (serving), [`web`] (web UI, JSON
//! API, live updates) and [`metrics`] (Prometheus) on the same port, [`bundles`]
//! (content-addressed solver bundles), [`cli`] (the `grind` command line).

pub mod auth;
pub mod bundles;
pub mod cli;
pub mod clock;
pub mod config;
pub mod core;
pub mod error;
pub mod metrics;
pub mod problems;
pub mod scheduler;
pub mod schema;
pub mod server;
pub mod service;
pub mod store;
pub mod tls;
pub mod upgrade;
pub mod views;
pub mod web;

pub use crate::core::Coordinator;
pub use crate::error::Error;
pub use crate::server::serve;
