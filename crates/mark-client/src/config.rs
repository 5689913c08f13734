//! Client settings: trust, timeouts, the response cap and the auth token.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::ClientError;

/// How the client decides to trust a server's certificate.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Trust {
    /// The operating system's root certificates (the default).
    #[default]
    SystemRoots,
    /// Accept any certificate (dev servers with self-signed certificates).
    /// The TLS 1.3 handshake signature is still checked, so the server must
    /// hold the key of the certificate it shows. Logs one warning.
    Insecure,
    /// Accept exactly the certificate whose DER bytes have this SHA-256
    /// (see [`parse_fingerprint`]); the handshake signature is still checked.
    Pin([u8; 32]),
    /// The CA certificates of a PEM file instead of the system roots.
    CaFile(PathBuf),
}

/// A capability token. Its `Debug` and `Display` print `Token(***)`, so it
/// never reaches a log by accident; [`Token::expose`] gives the raw value.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// A token; surrounding white space (a token file's final newline) is
    /// dropped.
    pub fn new(raw: impl AsRef<str>) -> Token {
        Token(raw.as_ref().trim().to_string())
    }

    /// The raw token, for the `auth` metadata.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(***)")
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(***)")
    }
}

/// Everything a [`crate::Client`] can be told.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// How server certificates are trusted.
    pub trust: Trust,
    /// An extra bound on name resolution plus the QUIC handshake, inside the
    /// request's deadline (default none: `request_timeout` covers the connect).
    pub connect_timeout: Duration,
    /// Longest wait for one request, from the call to the last byte of the
    /// response: resolving, the handshake and a retry included.
    pub request_timeout: Duration,
    /// Largest response (frontmatter and body) the client reads; a larger
    /// one is an error and is never buffered past the cap.
    pub max_response_bytes: usize,
    /// Sent as `auth` metadata with every request that has none of its own.
    pub token: Option<Token>,
    /// How often an idle connection pings the server to stay open.
    pub keep_alive_interval: Duration,
    /// How long a silent connection lives before it is dropped.
    pub idle_timeout: Duration,
}

impl Default for ClientConfig {
    fn default() -> ClientConfig {
        ClientConfig {
            trust: Trust::SystemRoots,
            connect_timeout: Duration::MAX,
            request_timeout: Duration::from_secs(15),
            max_response_bytes: 16 * 1024 * 1024,
            token: None,
            keep_alive_interval: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
        }
    }
}

/// Parses a certificate fingerprint as given to `--pin`: `sha256:` followed
/// by 64 hex digits, with or without `:` between the bytes (the prefix may
/// be left out).
pub fn parse_fingerprint(text: &str) -> Result<[u8; 32], ClientError> {
    let bad = || ClientError::BadFingerprint(text.chars().take(120).collect());
    let trimmed = text.trim();
    let hex_part = match trimmed.get(..7) {
        Some(prefix) if prefix.eq_ignore_ascii_case("sha256:") => &trimmed[7..],
        // Bare hex, as `openssl x509 -fingerprint -sha256` prints it.
        _ => trimmed,
    };
    let digits: String = hex_part.chars().filter(|&c| c != ':').collect();
    let bytes = hex::decode(&digits).map_err(|_| bad())?;
    bytes.try_into().map_err(|_| bad())
}

/// `sha256:<64 lowercase hex>`, the form [`parse_fingerprint`] reads.
pub fn format_fingerprint(fingerprint: &[u8; 32]) -> String {
    format!("sha256:{}", hex::encode(fingerprint))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_with_and_without_colons() {
        let hex = "ab".repeat(32);
        let colons = vec!["AB"; 32].join(":");
        assert_eq!(
            parse_fingerprint(&format!("sha256:{hex}")).unwrap(),
            [0xab; 32]
        );
        assert_eq!(
            parse_fingerprint(&format!("SHA256:{colons}")).unwrap(),
            [0xab; 32]
        );
        assert_eq!(format_fingerprint(&[0xab; 32]), format!("sha256:{hex}"));
        assert_eq!(parse_fingerprint(&colons).unwrap(), [0xab; 32]);
        assert_eq!(parse_fingerprint(&hex).unwrap(), [0xab; 32]);
        for bad in [
            "",
            "sha256:",
            "sha256:sha256:ab",
            &format!("sha1:{hex}"),
            &format!("sha256:{}", "ab".repeat(31)),
            &format!("sha256:{}zz", "ab".repeat(31)),
            "sha256:é",
        ] {
            let err = parse_fingerprint(bad).unwrap_err();
            assert!(matches!(err, ClientError::BadFingerprint(_)), "{bad}");
        }
    }

    #[test]
    fn tokens_never_print() {
        let token = Token::new("s3cret\n");
        assert_eq!(token.expose(), "s3cret");
        assert_eq!(format!("{token:?} {token}"), "Token(***) Token(***)");
        let config = ClientConfig {
            token: Some(token),
            ..ClientConfig::default()
        };
        assert!(!format!("{config:?}").contains("s3cret"));
    }

    #[test]
    fn defaults() {
        let c = ClientConfig::default();
        assert_eq!(c.trust, Trust::SystemRoots);
        assert_eq!(c.connect_timeout, Duration::MAX);
        assert_eq!(c.request_timeout, Duration::from_secs(15));
        assert_eq!(c.max_response_bytes, 16 << 20);
        assert_eq!(c.keep_alive_interval, Duration::from_secs(10));
    }
}
