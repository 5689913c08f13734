//! The server's certificate (loaded from PEM or made self-signed) and its
//! QUIC/TLS configuration: rustls with the ring provider, TLS 1.3 only, ALPN
//! `mark`.

use quinn::crypto::rustls::QuicServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use sha2::{Digest, Sha256};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why the certificate or the TLS configuration could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    /// A PEM file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The certificate file holds no certificate.
    #[error("{0} holds no PEM certificate; pass the server certificate (chain) with --cert")]
    NoCertificate(PathBuf),
    /// The key file holds no private key.
    #[error("{0} holds no PEM private key (PKCS#8, PKCS#1 or SEC1); pass the key with --key")]
    NoKey(PathBuf),
    /// rcgen could not make a self-signed certificate.
    #[error("cannot make a self-signed certificate: {0}")]
    SelfSigned(#[from] rcgen::Error),
    /// rustls rejected the certificate, key or protocol setup.
    #[error("TLS setup failed: {0}")]
    Rustls(#[from] rustls::Error),
    /// quinn rejected the rustls configuration.
    #[error("QUIC TLS setup failed: {0}")]
    Quic(String),
}

/// A certificate chain with its key, and the fingerprint clients pin.
#[derive(Debug)]
pub struct ServerIdentity {
    /// End-entity certificate first.
    pub chain: Vec<CertificateDer<'static>>,
    /// The private key of the end-entity certificate.
    pub key: PrivateKeyDer<'static>,
    /// SHA-256 of the end-entity certificate's DER bytes.
    pub fingerprint: [u8; 32],
}

impl ServerIdentity {
    /// Loads a certificate chain and key from PEM files.
    pub fn load(cert: &Path, key: &Path) -> Result<ServerIdentity, TlsSetupError> {
        let cert_pem = read(cert)?;
        let chain = rustls_pemfile::certs(&mut cert_pem.as_slice())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|source| TlsSetupError::Read {
                path: cert.to_path_buf(),
                source,
            })?;
        let key_pem = read(key)?;
        let key_der = rustls_pemfile::private_key(&mut key_pem.as_slice())
            .map_err(|source| TlsSetupError::Read {
                path: key.to_path_buf(),
                source,
            })?
            .ok_or_else(|| TlsSetupError::NoKey(key.to_path_buf()))?;
        ServerIdentity::new(chain, key_der)
            .ok_or_else(|| TlsSetupError::NoCertificate(cert.to_path_buf()))
    }

    /// A new self-signed certificate for `localhost`, `127.0.0.1` and the
    /// listen IP (when it is a specific address).
    pub fn self_signed(listen_ip: IpAddr) -> Result<ServerIdentity, TlsSetupError> {
        let mut names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        let ip = listen_ip.to_string();
        if !listen_ip.is_unspecified() && !names.contains(&ip) {
            names.push(ip);
        }
        let made = rcgen::generate_simple_self_signed(names)?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.signing_key.serialize_der()));
        let cert = made.cert.der().clone();
        Ok(ServerIdentity {
            fingerprint: Sha256::digest(cert.as_ref()).into(),
            chain: vec![cert],
            key,
        })
    }

    fn new(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Option<ServerIdentity> {
        let fingerprint = Sha256::digest(chain.first()?.as_ref()).into();
        Some(ServerIdentity {
            chain,
            key,
            fingerprint,
        })
    }

    /// `sha256:<64 lowercase hex>`.
    pub fn fingerprint_text(&self) -> String {
        format!("sha256:{}", hex::encode(self.fingerprint))
    }

    /// The QUIC crypto configuration: ring provider, TLS 1.3 only, ALPN `mark`.
    pub fn quic_config(self) -> Result<QuicServerConfig, TlsSetupError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_no_client_auth()
            .with_single_cert(self.chain, self.key)?;
        tls.alpn_protocols = vec![mark_proto::ALPN.to_vec()];
        QuicServerConfig::try_from(tls).map_err(|e| TlsSetupError::Quic(e.to_string()))
    }
}

fn read(path: &Path) -> Result<Vec<u8>, TlsSetupError> {
    std::fs::read(path).map_err(|source| TlsSetupError::Read {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_signed_names_the_listen_ip_and_makes_a_quic_config() {
        let id = ServerIdentity::self_signed("127.0.0.2".parse().unwrap()).unwrap();
        assert_eq!(
            id.fingerprint,
            <[u8; 32]>::from(Sha256::digest(id.chain[0].as_ref()))
        );
        assert!(id.fingerprint_text().starts_with("sha256:"));
        assert_eq!(id.fingerprint_text().len(), 7 + 64);
        id.quic_config().unwrap();
    }

    #[test]
    fn load_reads_pem_files_and_reports_missing_parts() {
        let dir = tempfile::tempdir().unwrap();
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let cert = dir.path().join("cert.pem");
        let key = dir.path().join("key.pem");
        std::fs::write(&cert, made.cert.pem()).unwrap();
        std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
        let id = ServerIdentity::load(&cert, &key).unwrap();
        assert_eq!(
            id.fingerprint,
            <[u8; 32]>::from(Sha256::digest(made.cert.der().as_ref()))
        );

        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "").unwrap();
        assert!(matches!(
            ServerIdentity::load(&empty, &key),
            Err(TlsSetupError::NoCertificate(_))
        ));
        assert!(matches!(
            ServerIdentity::load(&cert, &empty),
            Err(TlsSetupError::NoKey(_))
        ));
        assert!(matches!(
            ServerIdentity::load(&dir.path().join("missing.pem"), &key),
            Err(TlsSetupError::Read { .. })
        ));
    }
}
