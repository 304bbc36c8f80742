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
///
/// Existing files are refused unless `replace` is set: a new CA locks out every worker that
/// pinned the old one. key.pem is created with mode 0600, so the key is never readable by
/// others, not even for a moment.
pub fn write_self_signed(dir: &Path, hosts: &[String], replace: bool) -> Result<SelfSigned, Error> {
    if hosts.is_empty() {
        return Err(Error::InvalidArgument(
            "name at least one --host the certificate is for".into(),
        ));
    }
    let out = SelfSigned {
        ca: dir.join("ca.pem"),
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    };
    if !replace {
        if let Some(existing) = [&out.ca, &out.cert, &out.key]
            .into_iter()
            .find(|path| path.symlink_metadata().is_ok())
        {
            return Err(Error::InvalidArgument(format!(
                "{} exists; pass --force to replace the CA and certificate (workers that pinned \
                 the old ca.pem will refuse the new one)",
                existing.display()
            )));
        }
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
    write_new(&out.ca, &ca.pem(), 0o644)?;
    write_new(&out.cert, &server_cert.pem(), 0o644)?;
    write_new(&out.key, &server_key.serialize_pem(), 0o600)?;
    Ok(out)
}

/// Writes `text` to a file created with `mode` (an existing file is removed first, so the
/// mode always applies: opening an existing file keeps its old permissions).
fn write_new(path: &Path, text: &str, mode: u32) -> Result<(), Error> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let failed =
        |e: std::io::Error| Error::InvalidArgument(format!("cannot write {}: {e}", path.display()));
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(failed(e)),
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(failed)?;
    file.write_all(text.as_bytes()).map_err(failed)?;
    file.sync_all().map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn writes_loadable_pem_files() {
        let dir = tempfile::tempdir().unwrap();
        let files = write_self_signed(dir.path(), &["localhost".into(), "127.0.0.1".into()], false)
            .unwrap();
        let identity = ServerIdentity::load(&files.cert, &files.key).unwrap();
        assert!(String::from_utf8_lossy(&identity.cert_pem).contains("BEGIN CERTIFICATE"));
        let ca = std::fs::read_to_string(&files.ca).unwrap();
        assert!(ca.contains("BEGIN CERTIFICATE"));
        assert!(ServerIdentity::load(&files.key, &files.cert).is_err());
        assert!(write_self_signed(dir.path(), &[], true).is_err());
        assert_eq!(mode(&files.key), 0o600, "the key is its owner's alone");
    }

    #[test]
    fn refuses_to_replace_a_ca_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let hosts = ["localhost".to_string()];
        let first = write_self_signed(dir.path(), &hosts, false).unwrap();
        let ca = std::fs::read_to_string(&first.ca).unwrap();
        let refused = write_self_signed(dir.path(), &hosts, false).unwrap_err();
        assert!(refused.to_string().contains("--force"), "{refused}");
        assert_eq!(std::fs::read_to_string(&first.ca).unwrap(), ca, "untouched");
        // A key file someone left readable: --force makes a new one, private again.
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&first.key, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        let second = write_self_signed(dir.path(), &hosts, true).unwrap();
        assert_ne!(std::fs::read_to_string(&second.ca).unwrap(), ca, "a new CA");
        assert_eq!(mode(&second.key), 0o600);
        // One existing file is enough to refuse.
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("key.pem"), "mine").unwrap();
        assert!(write_self_signed(other.path(), &hosts, false).is_err());
        assert_eq!(
            std::fs::read_to_string(other.path().join("key.pem")).unwrap(),
            "mine"
        );
    }
}
