//! TLS for QUIC: TLS 1.3 only, ALPN `mark`, the ring provider, and one
//! certificate verifier that covers every [`Trust`] mode and remembers why
//! it refused a certificate so the error can say so.

use std::sync::{Arc, Mutex, Once};

use quinn::crypto::rustls::QuicClientConfig;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use sha2::{Digest, Sha256};

use crate::config::{Trust, format_fingerprint};
use crate::error::ClientError;

/// Why the verifier refused a certificate.
#[derive(Debug, Clone)]
pub(crate) enum TrustFailure {
    /// The roots do not vouch for it.
    Untrusted { reason: String, fingerprint: String },
    /// It is not the pinned certificate.
    PinMismatch { expected: String, got: String },
}

/// Where a verifier records its refusal; one per connection attempt.
pub(crate) type FailureSlot = Arc<Mutex<Option<TrustFailure>>>;

#[derive(Debug, Clone)]
enum Anchor {
    Roots(Arc<WebPkiServerVerifier>),
    Pin([u8; 32]),
    AnyCertificate,
}

/// The trust decision made once at client creation, ready to build a
/// rustls configuration per connection.
pub(crate) struct TlsSetup {
    provider: Arc<CryptoProvider>,
    anchor: Anchor,
    resumption: rustls::client::Resumption,
}

static INSECURE_WARNING: Once = Once::new();

impl TlsSetup {
    pub(crate) fn new(trust: &Trust) -> Result<TlsSetup, ClientError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let anchor = match trust {
            Trust::SystemRoots => Anchor::Roots(roots_verifier(system_roots()?, &provider)?),
            Trust::CaFile(path) => Anchor::Roots(roots_verifier(ca_file_roots(path)?, &provider)?),
            Trust::Pin(fingerprint) => Anchor::Pin(*fingerprint),
            Trust::Insecure => {
                INSECURE_WARNING.call_once(|| {
                    tracing::warn!(
                        "insecure mode: server certificates are not verified, anyone on the path can impersonate the server"
                    );
                });
                Anchor::AnyCertificate
            }
        };
        Ok(TlsSetup {
            provider,
            anchor,
            resumption: rustls::client::Resumption::in_memory_sessions(64),
        })
    }

    /// A QUIC crypto configuration for one connection attempt, and the slot
    /// where its verifier records a refusal.
    pub(crate) fn for_connection(
        &self,
    ) -> Result<(Arc<QuicClientConfig>, FailureSlot), ClientError> {
        let failure = FailureSlot::default();
        let tls = self.rustls_config(failure.clone())?;
        let quic =
            QuicClientConfig::try_from(tls).map_err(|e| ClientError::Config(e.to_string()))?;
        Ok((Arc::new(quic), failure))
    }

    /// TLS 1.3 only, ALPN `mark`, this setup's anchor and session cache;
    /// the verifier records a refusal in `failure`.
    fn rustls_config(&self, failure: FailureSlot) -> Result<rustls::ClientConfig, ClientError> {
        let verifier = MarkVerifier {
            anchor: self.anchor.clone(),
            algorithms: self.provider.signature_verification_algorithms,
            failure,
        };
        let mut tls = rustls::ClientConfig::builder_with_provider(self.provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| ClientError::Config(e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        tls.alpn_protocols = vec![mark_proto::ALPN.to_vec()];
        tls.resumption = self.resumption.clone();
        Ok(tls)
    }
}

/// The rustls configuration a [`crate::Client`] with this [`Trust`] uses:
/// the ring provider, TLS 1.3 only, ALPN `mark`, and the client's
/// certificate verifier (which checks the TLS 1.3 handshake signature in
/// every mode).
///
/// For a raw QUIC connection that must send bytes [`crate::Client`] will
/// not (conformance tests); wrap it in
/// `quinn::crypto::rustls::QuicClientConfig`. A refusal surfaces only as
/// the rustls handshake error, without the reason `Client` adds.
pub fn rustls_client_config(trust: &Trust) -> Result<rustls::ClientConfig, ClientError> {
    TlsSetup::new(trust)?.rustls_config(FailureSlot::default())
}

fn roots_verifier(
    roots: RootCertStore,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<WebPkiServerVerifier>, ClientError> {
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| ClientError::Config(e.to_string()))
}

fn system_roots() -> Result<RootCertStore, ClientError> {
    let loaded = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(loaded.certs);
    if added == 0 {
        let reason = match loaded.errors.first() {
            Some(e) => e.to_string(),
            None => "none found".to_string(),
        };
        return Err(ClientError::NoSystemRoots(reason));
    }
    Ok(roots)
}

fn ca_file_roots(path: &std::path::Path) -> Result<RootCertStore, ClientError> {
    let bad = |reason: String| ClientError::CaFile {
        path: path.to_path_buf(),
        reason,
    };
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(path).map_err(|e| bad(e.to_string()))? {
        let cert = cert.map_err(|e| bad(e.to_string()))?;
        roots.add(cert).map_err(|e| bad(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(bad("no CERTIFICATE block found".to_string()));
    }
    Ok(roots)
}

/// Checks the certificate by the configured anchor, and the TLS 1.3
/// handshake signature always (so even insecure and pinned modes require
/// the server to hold the certificate's key).
#[derive(Debug)]
struct MarkVerifier {
    anchor: Anchor,
    algorithms: WebPkiSupportedAlgorithms,
    failure: FailureSlot,
}

impl MarkVerifier {
    fn refuse(&self, failure: TrustFailure, error: rustls::Error) -> rustls::Error {
        if let Ok(mut slot) = self.failure.lock() {
            *slot = Some(failure);
        }
        error
    }
}

impl ServerCertVerifier for MarkVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let presented: [u8; 32] = Sha256::digest(end_entity.as_ref()).into();
        match &self.anchor {
            Anchor::AnyCertificate => Ok(ServerCertVerified::assertion()),
            Anchor::Pin(pin) if *pin == presented => Ok(ServerCertVerified::assertion()),
            Anchor::Pin(pin) => Err(self.refuse(
                TrustFailure::PinMismatch {
                    expected: format_fingerprint(pin),
                    got: format_fingerprint(&presented),
                },
                rustls::Error::InvalidCertificate(CertificateError::ApplicationVerificationFailure),
            )),
            Anchor::Roots(roots) => roots
                .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
                .map_err(|e| {
                    let failure = TrustFailure::Untrusted {
                        reason: describe_rustls_error(&e),
                        fingerprint: format_fingerprint(&presented),
                    };
                    self.refuse(failure, e)
                }),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        // Only TLS 1.3 is offered; this is here for the trait.
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// A short human reason for a certificate error.
fn describe_rustls_error(error: &rustls::Error) -> String {
    match error {
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
            "it is self-signed or signed by an unknown authority".to_string()
        }
        rustls::Error::InvalidCertificate(CertificateError::NotValidForName)
        | rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. }) => {
            "it is not valid for this host name".to_string()
        }
        rustls::Error::InvalidCertificate(CertificateError::Expired)
        | rustls::Error::InvalidCertificate(CertificateError::ExpiredContext { .. }) => {
            "it has expired".to_string()
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_config_offers_only_mark_and_only_tls13() {
        let tls = rustls_client_config(&Trust::Pin([7; 32])).unwrap();
        assert_eq!(tls.alpn_protocols, vec![b"mark".to_vec()]);
        // QUIC requires TLS 1.3; the conversion refuses a config without it.
        assert!(QuicClientConfig::try_from(tls).is_ok());
    }
}
