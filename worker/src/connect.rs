//! Reaching a coordinator: the URL, the token sent with every call, and TLS (a pinned CA, or
//! the bundled web roots for `https://` URLs without one). Shared by the worker and the
//! `grind` admin commands.

use std::path::Path;
use std::time::Duration;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::interceptor::InterceptedService;
use tonic::service::Interceptor;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};
use tonic::{Request, Status};

use crate::WorkerError;

/// Credentials and trust for one coordinator.
#[derive(Clone, Debug, Default)]
pub struct Access {
    /// Token sent as `authorization: Bearer <token>`.
    pub token: Option<String>,
    /// CA certificate (PEM) the coordinator's certificate must chain to.
    pub ca_pem: Option<Vec<u8>>,
}

impl Access {
    /// Access from a token given directly (environment) or in a file, and a CA file.
    pub fn from_sources(
        token: Option<String>,
        token_file: Option<&Path>,
        ca_file: Option<&Path>,
    ) -> Result<Access, WorkerError> {
        let token = match (token.filter(|t| !t.trim().is_empty()), token_file) {
            (_, Some(path)) => Some(
                std::fs::read_to_string(path)
                    .map_err(|e| {
                        WorkerError::Setup(format!(
                            "cannot read the token file {}: {e}",
                            path.display()
                        ))
                    })?
                    .trim()
                    .to_string(),
            ),
            (token, None) => token.map(|t| t.trim().to_string()),
        };
        if let Some(token) = &token {
            if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(WorkerError::Setup(
                    "the token is empty or holds characters other than printable ASCII".into(),
                ));
            }
        }
        let ca_pem = match ca_file {
            Some(path) => {
                let pem = std::fs::read(path).map_err(|e| {
                    WorkerError::Setup(format!("cannot read the CA file {}: {e}", path.display()))
                })?;
                if !String::from_utf8_lossy(&pem).contains("-----BEGIN CERTIFICATE-----") {
                    return Err(WorkerError::Setup(format!(
                        "{} is not a PEM certificate",
                        path.display()
                    )));
                }
                Some(pem)
            }
            None => None,
        };
        Ok(Access { token, ca_pem })
    }
}

/// Adds the bearer token (if any) to every call.
#[derive(Clone)]
pub struct Bearer(Option<MetadataValue<Ascii>>);

impl Interceptor for Bearer {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(value) = &self.0 {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// A channel to a coordinator that authenticates every call.
pub type AuthChannel = InterceptedService<Channel, Bearer>;

/// The endpoint for `url` with `access`'s TLS settings: TLS for `https://` URLs or whenever a
/// CA is pinned (an `http://` URL with a CA is refused as a likely mistake).
pub fn endpoint(url: &str, access: &Access) -> Result<Endpoint, WorkerError> {
    let mut endpoint = Endpoint::from_shared(url.to_string())
        .map_err(|e| WorkerError::Setup(format!("bad coordinator URL {url:?}: {e}")))?
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(60))
        .tcp_nodelay(true)
        .http2_keep_alive_interval(Duration::from_secs(30))
        .keep_alive_while_idle(true);
    let https = url.starts_with("https://");
    if access.ca_pem.is_some() && !https {
        return Err(WorkerError::Setup(format!(
            "a CA file was given but {url} is not an https:// URL"
        )));
    }
    if https {
        let tls = match &access.ca_pem {
            Some(pem) => ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem)),
            None => ClientTlsConfig::new().with_webpki_roots(),
        };
        endpoint = endpoint
            .tls_config(tls)
            .map_err(|e| WorkerError::Setup(format!("TLS setup for {url} failed: {e}")))?;
    }
    Ok(endpoint)
}

/// Wraps `channel` so that every call carries `access`'s token.
pub fn authenticated(channel: Channel, access: &Access) -> Result<AuthChannel, WorkerError> {
    let value = match &access.token {
        Some(token) => Some(
            format!("Bearer {token}")
                .parse::<MetadataValue<Ascii>>()
                .map_err(|_| WorkerError::Setup("the token is not valid header text".into()))?,
        ),
        None => None,
    };
    Ok(InterceptedService::new(channel, Bearer(value)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_access_is_named() {
        let dir = std::env::temp_dir();
        let missing = dir.join("grind-no-such-token-file");
        let err = Access::from_sources(None, Some(&missing), None).unwrap_err();
        assert!(err.to_string().contains("token file"), "{err}");
        let err = Access::from_sources(Some("a b".into()), None, None).unwrap_err();
        assert!(err.to_string().contains("ASCII"), "{err}");
        let with_ca = Access {
            token: None,
            ca_pem: Some(b"-----BEGIN CERTIFICATE-----".to_vec()),
        };
        let err = endpoint("http://127.0.0.1:1", &with_ca).unwrap_err();
        assert!(err.to_string().contains("https"), "{err}");
        assert!(endpoint("not a url", &Access::default()).is_err());
    }
}
