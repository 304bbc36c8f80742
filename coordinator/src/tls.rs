//! TLS material: loading a server identity and making a self-signed CA with a server
//! certificate for quick starts (`grind cert self-signed`).

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType, IsCa, KeyPair,
    KeyUsagePurpose,
};
use std::path::{Path, PathBuf};

use crate::error::Error;

/// A certificate chain and private key in PEM, as `grind serve --tls-cert/--tls-key` takes.
#[derive(Clone, Debug)]
pub struct ServerIdentity {
    /// The certificate chain (PEM).
    pub cert_pem: Vec<u8>,
    /// The private key (PEM).
    pub key_pem: Vec<u8>,
}

impl ServerIdentity {
    /// Reads the two PEM files, checking that they look like what they claim to be.
    pub fn load(cert: &Path, key: &Path) -> Result<ServerIdentity, Error> {
        let read = |path: &Path, marker: &str, what: &str| -> Result<Vec<u8>, Error> {
            let bytes = std::fs::read(path).map_err(|e| {
                Error::InvalidArgument(format!("cannot read the {what} {}: {e}", path.display()))
            })?;
            if !String::from_utf8_lossy(&bytes).contains(marker) {
                return Err(Error::InvalidArgument(format!(
                    "{} is not a PEM {what} (no {marker:?} line)",
                    path.display()
                )));
            }
            Ok(bytes)
        };
        Ok(ServerIdentity {
            cert_pem: read(cert, "-----BEGIN CERTIFICATE-----", "certificate")?,
            key_pem: read(key, "PRIVATE KEY-----", "private key")?,
        })
    }

    /// The identity in tonic's form.
    pub fn to_tonic(&self) -> tonic::transport::Identity {
        tonic::transport::Identity::from_pem(&self.cert_pem, &self.key_pem)
    }
}

/// Files written by [`write_self_signed`].
#[derive(Clone, Debug)]
pub struct SelfSigned {
    /// The CA certificate workers pin (`--ca-file`).
    pub ca: PathBuf,
    /// The server certificate (`--tls-cert`).
    pub cert: PathBuf,
    /// The server key (`--tls-key`), readable by its owner only.
    pub key: PathBuf,
}

/// Makes a fresh CA and a server certificate for `hosts` (DNS names or IP addresses) signed
/// by it, and writes ca.pem, cert.pem and key.pem into `dir`. The CA key is not kept: the
/// CA can sign nothing else.
pub fn write_self_signed(dir: &Path, hosts: &[String]) -> Result<SelfSigned, Error> {
    if hosts.is_empty() {
        return Err(Error::InvalidArgument(
            "name at least one --host the certificate is for".into(),
        ));
    }
    let failed = |e: rcgen::Error| Error::Internal(format!("certificate generation: {e}"));
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(failed)?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let mut ca_name = DistinguishedName::new();
    ca_name.push(DnType::CommonName, "grind self-signed CA");
    ca_params.distinguished_name = ca_name;
    let ca_key = KeyPair::generate().map_err(failed)?;
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key).map_err(failed)?;

    let mut server_params = CertificateParams::new(hosts.to_vec())
        .map_err(|e| Error::InvalidArgument(format!("bad --host value among {hosts:?}: {e}")))?;
    let mut server_name = DistinguishedName::new();
    server_name.push(DnType::CommonName, hosts[0].clone());
    server_params.distinguished_name = server_name;
    let server_key = KeyPair::generate().map_err(failed)?;
    let server_cert = server_params.signed_by(&server_key, &ca).map_err(failed)?;

    std::fs::create_dir_all(dir)
        .map_err(|e| Error::InvalidArgument(format!("cannot create {}: {e}", dir.display())))?;
    let out = SelfSigned {
        ca: dir.join("ca.pem"),
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    };
    let write = |path: &Path, text: String| {
        std::fs::write(path, text)
            .map_err(|e| Error::InvalidArgument(format!("cannot write {}: {e}", path.display())))
    };
    write(&out.ca, ca.pem())?;
    write(&out.cert, server_cert.pem())?;
    write(&out.key, server_key.serialize_pem())?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&out.key, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| Error::Internal(format!("cannot restrict {}: {e}", out.key.display())))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_loadable_pem_files() {
        let dir = tempfile::tempdir().unwrap();
        let files =
            write_self_signed(dir.path(), &["localhost".into(), "127.0.0.1".into()]).unwrap();
        let identity = ServerIdentity::load(&files.cert, &files.key).unwrap();
        assert!(String::from_utf8_lossy(&identity.cert_pem).contains("BEGIN CERTIFICATE"));
        let ca = std::fs::read_to_string(&files.ca).unwrap();
        assert!(ca.contains("BEGIN CERTIFICATE"));
        assert!(ServerIdentity::load(&files.key, &files.cert).is_err());
        assert!(write_self_signed(dir.path(), &[]).is_err());
    }
}
