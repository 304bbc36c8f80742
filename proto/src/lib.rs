//! The grind.v1 wire contract: generated message types, clients and servers, and the typed
//! refusal carried in status details ([`refusal`]).

/// Generated code for package `grind.v1`.
#[allow(clippy::all, missing_docs)]
pub mod v1 {
    tonic::include_proto!("grind.v1");
}

pub mod refusal;

/// The encoded file descriptor set, for gRPC server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("grind_descriptor");
