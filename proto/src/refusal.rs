//! Typed refusals on the wire: a [`Refusal`] travels as a refusing status's details (see
//! `Refusal` in `grind.proto`), so a worker acts on its kind, never on the message text.

use crate::v1::{refusal::Kind, AnyDetail, Refusal, StatusDetails};
use prost::Message;
use tonic::codegen::Bytes;
use tonic::{Code, Status};

/// The type URL of a [`Refusal`] packed in status details.
pub const REFUSAL_TYPE_URL: &str = "type.googleapis.com/grind.v1.Refusal";

/// A status with `code` and `message` that carries `kind` for `worker_id` in its details.
pub fn refusal_status(
    code: Code,
    message: impl Into<String>,
    kind: Kind,
    worker_id: i64,
) -> Status {
    let message = message.into();
    let refusal = Refusal {
        kind: kind as i32,
        worker_id,
    };
    let details = StatusDetails {
        code: code as i32,
        message: message.clone(),
        details: vec![AnyDetail {
            type_url: REFUSAL_TYPE_URL.to_string(),
            value: refusal.encode_to_vec(),
        }],
    };
    Status::with_details(code, message, Bytes::from(details.encode_to_vec()))
}

/// The refusal a status carries, if any (details that do not decode, or that hold no
/// refusal of a known kind, are none).
pub fn refusal_of(status: &Status) -> Option<Refusal> {
    let details = StatusDetails::decode(status.details()).ok()?;
    details
        .details
        .iter()
        .filter(|any| any.type_url == REFUSAL_TYPE_URL)
        .find_map(|any| Refusal::decode(any.value.as_slice()).ok())
        .filter(|refusal| refusal.kind() != Kind::Unspecified)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_survives_the_status_round_trip() {
        let status = refusal_status(
            Code::PermissionDenied,
            "worker 7 is banned",
            Kind::Banned,
            7,
        );
        assert_eq!(status.code(), Code::PermissionDenied);
        assert_eq!(status.message(), "worker 7 is banned");
        // Through the HTTP/2 trailers, as a client receives it.
        let mut trailers = tonic::codegen::http::HeaderMap::new();
        status.add_header(&mut trailers).unwrap();
        let received = Status::from_header_map(&trailers).unwrap();
        let refusal = refusal_of(&received).expect("a refusal");
        assert_eq!(refusal.kind(), Kind::Banned);
        assert_eq!(refusal.worker_id, 7);
    }

    #[test]
    fn statuses_without_a_refusal_have_none() {
        assert!(refusal_of(&Status::not_found("unknown worker 3: register first")).is_none());
        let garbage = Status::with_details(Code::NotFound, "x", Bytes::from_static(b"\xff\x01"));
        assert!(refusal_of(&garbage).is_none());
        // Details of another type are not a refusal.
        let other = StatusDetails {
            code: 5,
            message: "x".into(),
            details: vec![AnyDetail {
                type_url: "type.googleapis.com/google.rpc.ErrorInfo".into(),
                value: Refusal {
                    kind: Kind::Banned as i32,
                    worker_id: 1,
                }
                .encode_to_vec(),
            }],
        };
        let status = Status::with_details(Code::NotFound, "x", Bytes::from(other.encode_to_vec()));
        assert!(refusal_of(&status).is_none());
    }
}
