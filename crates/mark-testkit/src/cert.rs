//! A certificate on disk for `mark-server --cert/--key`, so that a test can
//! pin one fingerprint across restarts.

use crate::TestkitError;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// A self-signed certificate for `localhost` and `127.0.0.1`, written as PEM.
#[derive(Debug, Clone)]
pub struct TestCertificate {
    /// The certificate PEM file.
    pub cert_path: PathBuf,
    /// The private key PEM file.
    pub key_path: PathBuf,
    /// SHA-256 of the certificate's DER bytes (what a client pins).
    pub fingerprint: [u8; 32],
}

impl TestCertificate {
    /// `--cert PATH --key PATH`, ready to pass to [`crate::MarkServerProcess::start`].
    pub fn server_args(&self) -> Vec<String> {
        vec![
            "--cert".into(),
            self.cert_path.display().to_string(),
            "--key".into(),
            self.key_path.display().to_string(),
        ]
    }
}

/// Writes `cert.pem` and `key.pem` into `dir`.
pub fn write_test_certificate(dir: &Path) -> Result<TestCertificate, TestkitError> {
    let made =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .map_err(|e| TestkitError::Certificate(e.to_string()))?;
    let cert_path = dir.join("cert.pem");
    let key_path = dir.join("key.pem");
    std::fs::write(&cert_path, made.cert.pem())?;
    std::fs::write(&key_path, made.signing_key.serialize_pem())?;
    let fingerprint = Sha256::digest(made.cert.der()).into();
    Ok(TestCertificate {
        cert_path,
        key_path,
        fingerprint,
    })
}
