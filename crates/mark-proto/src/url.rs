//! `mark://` URLs: `mark://host[:port]/path[/vN][#fragment]`.

use std::borrow::Cow;
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use percent_encoding::percent_decode_str;

use crate::DEFAULT_PORT;
use crate::error::WireError;
use crate::message::check_path;

/// A parsed `mark://` URL.
///
/// The host is kept lower-case (DNS names are case-insensitive), IPv6
/// literals without their brackets; the path exactly as it goes on the wire
/// (percent-escapes kept); a trailing `/vN` (N ≥ 1) is read as a version
/// pin; the fragment is the client's business and never goes on the wire.
///
/// ```
/// use mark_proto::MarkUrl;
/// let url = MarkUrl::parse("mark://docs.example:7000/guide/intro.md/v2#setup").unwrap();
/// assert_eq!(url.host(), "docs.example");
/// assert_eq!(url.port(), 7000);
/// assert_eq!(url.path(), "/guide/intro.md/v2");
/// assert_eq!(url.doc_path(), "/guide/intro.md");
/// assert_eq!(url.version(), Some(2));
/// assert_eq!(url.fragment(), Some("setup"));
/// assert_eq!(url.to_string(), "mark://docs.example:7000/guide/intro.md/v2#setup");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MarkUrl {
    host: String,
    port: u16,
    path: String,
    version: Option<u64>,
    fragment: Option<String>,
}

const SCHEME: &str = "mark://";
/// Longest DNS name (RFC 1035), without a trailing dot.
const MAX_HOST: usize = 253;

impl MarkUrl {
    /// Parses a `mark://` URL, rejecting anything the protocol does not use:
    /// other schemes, user info, query strings, empty or malformed hosts, bad
    /// ports, control characters, spaces and broken percent-escapes.
    pub fn parse(input: &str) -> Result<MarkUrl, WireError> {
        let bad = |why: &'static str| WireError::BadUrl {
            url: input.chars().take(200).collect(),
            why,
        };
        if input.chars().any(|c| c.is_control()) {
            return Err(bad("it contains control characters"));
        }
        if input.contains(' ') {
            return Err(bad("it contains a space (write it as %20)"));
        }
        let rest = match input.get(..SCHEME.len()) {
            Some(scheme) if scheme.eq_ignore_ascii_case(SCHEME) => &input[SCHEME.len()..],
            _ => return Err(bad("it must start with mark://")),
        };
        let (rest, fragment) = match rest.split_once('#') {
            Some((r, f)) => (r, (!f.is_empty()).then(|| f.to_string())),
            None => (rest, None),
        };
        if rest.contains('?') {
            return Err(bad(
                "mark:// URLs have no query string (write ? in a path as %3F)",
            ));
        }
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.contains('@') {
            return Err(bad(
                "user info (user@host) is not allowed; pass a token instead",
            ));
        }
        let (host, port) = split_host_port(authority).map_err(bad)?;
        check_percent_escapes(path).map_err(bad)?;
        if let Some(f) = &fragment {
            check_fragment(f).map_err(bad)?;
        }
        check_path(path).map_err(|_| bad("the path is not a valid request path"))?;
        let version = version_suffix(path).map_err(bad)?;
        Ok(MarkUrl {
            host,
            port,
            path: path.to_string(),
            version,
            fragment,
        })
    }

    /// A URL for `path_and_fragment` (`/dir/doc.md`, `/doc.md/v2#anchor`) on
    /// `host` (a DNS name or an IP address, IPv6 with or without brackets)
    /// and `port`.
    pub fn new(host: &str, port: u16, path_and_fragment: &str) -> Result<MarkUrl, WireError> {
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]")
        } else {
            host.to_string()
        };
        if !path_and_fragment.starts_with('/') {
            return Err(WireError::BadUrl {
                url: path_and_fragment.chars().take(200).collect(),
                why: "the path must start with /",
            });
        }
        MarkUrl::parse(&format!("{SCHEME}{host}:{port}{path_and_fragment}"))
    }

    /// Another document on the same host and port (`path_and_fragment` as in
    /// [`MarkUrl::new`]).
    pub fn join(&self, path_and_fragment: &str) -> Result<MarkUrl, WireError> {
        MarkUrl::new(&self.host, self.port, path_and_fragment)
    }

    /// The host: a lower-case DNS name, an IPv4 address, or an IPv6 address
    /// without brackets. This is also the TLS server name.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The UDP port (6309 unless given).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The path as it goes on the wire, version suffix included.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The document's path without the `/vN` suffix.
    pub fn doc_path(&self) -> &str {
        match self.version {
            Some(_) => self
                .path
                .rsplit_once('/')
                .map_or(self.path.as_str(), |(doc, _)| doc),
            None => &self.path,
        }
    }

    /// The path with percent-escapes decoded (invalid UTF-8 replaced), for
    /// display and file names.
    pub fn decoded_path(&self) -> Cow<'_, str> {
        percent_decode_str(&self.path).decode_utf8_lossy()
    }

    /// The pinned version when the path ends in `/vN`.
    pub fn version(&self) -> Option<u64> {
        self.version
    }

    /// The fragment after `#`, as written (never sent on the wire).
    pub fn fragment(&self) -> Option<&str> {
        self.fragment.as_deref()
    }

    /// The same URL with another fragment (or none).
    pub fn with_fragment(mut self, fragment: Option<&str>) -> Result<MarkUrl, WireError> {
        let fragment = fragment.filter(|f| !f.is_empty());
        if let Some(f) = fragment {
            let bad = |why| WireError::BadUrl {
                url: f.chars().take(200).collect(),
                why,
            };
            check_fragment(f).map_err(bad)?;
        }
        self.fragment = fragment.map(str::to_string);
        Ok(self)
    }

    /// The same URL without a fragment.
    pub fn without_fragment(&self) -> MarkUrl {
        MarkUrl {
            fragment: None,
            ..self.clone()
        }
    }

    /// `mark://host[:port]`, the part that names the server.
    pub fn origin(&self) -> String {
        let mut out = SCHEME.to_string();
        if self.host.contains(':') {
            out.push_str(&format!("[{}]", self.host));
        } else {
            out.push_str(&self.host);
        }
        if self.port != DEFAULT_PORT {
            out.push_str(&format!(":{}", self.port));
        }
        out
    }
}

impl fmt::Display for MarkUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.origin(), self.path)?;
        if let Some(frag) = &self.fragment {
            write!(f, "#{frag}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for MarkUrl {
    type Err = WireError;
    fn from_str(s: &str) -> Result<MarkUrl, WireError> {
        MarkUrl::parse(s)
    }
}

fn split_host_port(authority: &str) -> Result<(String, u16), &'static str> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (literal, after) = rest
            .split_once(']')
            .ok_or("an IPv6 address needs a closing ]")?;
        let ip: Ipv6Addr = literal
            .parse()
            .map_err(|_| "the bracketed host is not an IPv6 address")?;
        let port = match after {
            "" => None,
            p => Some(
                p.strip_prefix(':')
                    .ok_or("only :port may follow an IPv6 address")?,
            ),
        };
        (ip.to_string(), port)
    } else {
        let (host, port) = match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        };
        (check_host(host)?, port)
    };
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) if !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) => {
            match p.parse::<u16>() {
                Ok(0) | Err(_) => return Err("the port must be a number from 1 to 65535"),
                Ok(n) => n,
            }
        }
        Some(_) => return Err("the port must be a number from 1 to 65535"),
    };
    Ok((host, port))
}

/// A DNS name or an IPv4 address, lower-cased.
fn check_host(host: &str) -> Result<String, &'static str> {
    if host.is_empty() {
        return Err("the host is empty");
    }
    if !host.is_ascii() {
        return Err("the host must be ASCII (write an international name in punycode)");
    }
    if host.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let ip: Ipv4Addr = host
            .parse()
            .map_err(|_| "the host is not a valid IPv4 address")?;
        return Ok(ip.to_string());
    }
    if host.len() > MAX_HOST {
        return Err("the host name is longer than 253 characters");
    }
    for label in host.split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err("each dot-separated part of the host must be 1 to 63 characters");
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err("a part of the host name cannot start or end with -");
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err("the host may hold only letters, digits, - and _ between dots");
        }
    }
    Ok(host.to_ascii_lowercase())
}

fn check_fragment(fragment: &str) -> Result<(), &'static str> {
    if fragment
        .chars()
        .any(|c| c.is_control() || c == ' ' || c == '#')
    {
        return Err("a fragment cannot hold spaces, # or control characters");
    }
    check_percent_escapes(fragment)
}

/// Every `%` starts an escape of two hex digits.
fn check_percent_escapes(s: &str) -> Result<(), &'static str> {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let ok = bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
            if !ok {
                return Err("a % must start an escape of two hex digits");
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    Ok(())
}

/// The N of a trailing `/vN` after a document path.
fn version_suffix(path: &str) -> Result<Option<u64>, &'static str> {
    let Some((doc, last)) = path.rsplit_once('/') else {
        return Ok(None);
    };
    let Some(digits) = last.strip_prefix('v') else {
        return Ok(None);
    };
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || doc.is_empty()
        || doc.ends_with('/')
    {
        return Ok(None);
    }
    if digits.starts_with('0') {
        return Err("a version is a whole number from 1, without leading zeros");
    }
    digits
        .parse::<u64>()
        .map(Some)
        .map_err(|_| "the version number is too large")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why(input: &str) -> &'static str {
        match MarkUrl::parse(input) {
            Err(WireError::BadUrl { why, .. }) => why,
            other => panic!("{input} gave {other:?}"),
        }
    }

    #[test]
    fn parses_every_part() {
        let url = MarkUrl::parse("mark://Docs.Example.ORG:7000/a%20b/doc.md/v12#Intro-1").unwrap();
        assert_eq!(url.host(), "docs.example.org");
        assert_eq!(url.port(), 7000);
        assert_eq!(url.path(), "/a%20b/doc.md/v12");
        assert_eq!(url.doc_path(), "/a%20b/doc.md");
        assert_eq!(url.decoded_path(), "/a b/doc.md/v12");
        assert_eq!(url.version(), Some(12));
        assert_eq!(url.fragment(), Some("Intro-1"));
        assert_eq!(
            url.to_string(),
            "mark://docs.example.org:7000/a%20b/doc.md/v12#Intro-1"
        );
    }

    #[test]
    fn defaults() {
        let url = MarkUrl::parse("mark://localhost").unwrap();
        assert_eq!(
            (url.host(), url.port(), url.path()),
            ("localhost", DEFAULT_PORT, "/")
        );
        assert_eq!(url.version(), None);
        assert_eq!(url.fragment(), None);
        assert_eq!(url.to_string(), "mark://localhost/");
        assert_eq!(
            MarkUrl::parse("mark://h:6309/x#").unwrap().to_string(),
            "mark://h/x"
        );
        assert_eq!(
            MarkUrl::parse("MARK://h/x").unwrap().to_string(),
            "mark://h/x"
        );
    }

    #[test]
    fn ip_hosts() {
        let v4 = MarkUrl::parse("mark://127.0.0.1:6310/a").unwrap();
        assert_eq!(v4.host(), "127.0.0.1");
        let v6 = MarkUrl::parse("mark://[::1]:6310/a").unwrap();
        assert_eq!(v6.host(), "::1");
        assert_eq!(v6.to_string(), "mark://[::1]:6310/a");
        let v6_default = MarkUrl::parse("mark://[2001:DB8::1]/a").unwrap();
        assert_eq!(v6_default.host(), "2001:db8::1");
        assert_eq!(v6_default.port(), DEFAULT_PORT);
    }

    #[test]
    fn version_suffix_rules() {
        assert_eq!(
            MarkUrl::parse("mark://h/doc.md/v1").unwrap().version(),
            Some(1)
        );
        assert_eq!(
            MarkUrl::parse("mark://h/doc.md/vx").unwrap().version(),
            None
        );
        assert_eq!(MarkUrl::parse("mark://h/v2").unwrap().version(), None);
        assert_eq!(MarkUrl::parse("mark://h/dir//v2").unwrap().version(), None);
        assert_eq!(
            MarkUrl::parse("mark://h/doc.md/v2/").unwrap().version(),
            None
        );
        assert_eq!(
            why("mark://h/doc.md/v0"),
            "a version is a whole number from 1, without leading zeros"
        );
        assert_eq!(
            why("mark://h/doc.md/v01"),
            "a version is a whole number from 1, without leading zeros"
        );
        assert_eq!(
            why("mark://h/doc.md/v99999999999999999999999"),
            "the version number is too large"
        );
    }

    #[test]
    fn rejects_what_the_protocol_does_not_use() {
        for (input, want) in [
            ("https://h/x", "it must start with mark://"),
            ("mark:/h/x", "it must start with mark://"),
            ("", "it must start with mark://"),
            (
                "mark://user@h/x",
                "user info (user@host) is not allowed; pass a token instead",
            ),
            (
                "mark://h/x?q=1",
                "mark:// URLs have no query string (write ? in a path as %3F)",
            ),
            ("mark:///x", "the host is empty"),
            ("mark://:80/x", "the host is empty"),
            ("mark://h:/x", "the port must be a number from 1 to 65535"),
            ("mark://h:0/x", "the port must be a number from 1 to 65535"),
            (
                "mark://h:65536/x",
                "the port must be a number from 1 to 65535",
            ),
            (
                "mark://h:+80/x",
                "the port must be a number from 1 to 65535",
            ),
            (
                "mark://h:1:2/x",
                "the port must be a number from 1 to 65535",
            ),
            ("mark://h/a b", "it contains a space (write it as %20)"),
            ("mark://h/a\tb", "it contains control characters"),
            ("mark://h/a\u{7f}", "it contains control characters"),
            ("mark://h/a%2", "a % must start an escape of two hex digits"),
            (
                "mark://h/a#%zz",
                "a % must start an escape of two hex digits",
            ),
            (
                "mark://h/a#b#c",
                "a fragment cannot hold spaces, # or control characters",
            ),
            (
                "mark://h_-/x",
                "a part of the host name cannot start or end with -",
            ),
            (
                "mark://a..b/x",
                "each dot-separated part of the host must be 1 to 63 characters",
            ),
            (
                "mark://bücher.de/x",
                "the host must be ASCII (write an international name in punycode)",
            ),
            (
                "mark://a!b/x",
                "the host may hold only letters, digits, - and _ between dots",
            ),
            ("mark://999.1.1.1/x", "the host is not a valid IPv4 address"),
            ("mark://[::1/x", "an IPv6 address needs a closing ]"),
            (
                "mark://[nothost]/x",
                "the bracketed host is not an IPv6 address",
            ),
            ("mark://[::1]x/x", "only :port may follow an IPv6 address"),
        ] {
            assert_eq!(why(input), want, "{input}");
        }
        let long = format!("mark://{}/x", "a.".repeat(130) + "a");
        assert_eq!(why(&long), "the host name is longer than 253 characters");
    }

    #[test]
    fn error_message_names_the_url() {
        let err = MarkUrl::parse("mark://h:0/x").unwrap_err();
        assert_eq!(
            err.to_string(),
            "bad mark:// URL `mark://h:0/x`: the port must be a number from 1 to 65535"
        );
    }

    #[test]
    fn builds_urls_for_a_host_and_path() {
        let url = MarkUrl::new("example.org", 6309, "/doc.md#a").unwrap();
        assert_eq!(url.to_string(), "mark://example.org/doc.md#a");
        let v6 = MarkUrl::new("::1", 7000, "/x/v3").unwrap();
        assert_eq!(v6.to_string(), "mark://[::1]:7000/x/v3");
        assert_eq!(v6.version(), Some(3));
        assert_eq!(MarkUrl::new("[::1]", 1, "/").unwrap().host(), "::1");
        assert!(MarkUrl::new("h", 1, "doc.md").is_err());
        let other = url.join("/other.md").unwrap();
        assert_eq!(other.origin(), "mark://example.org");
        assert_eq!(other.to_string(), "mark://example.org/other.md");
    }

    #[test]
    fn fragments_change_without_touching_the_rest() {
        let url = MarkUrl::parse("mark://h/doc.md#a").unwrap();
        assert_eq!(url.without_fragment().to_string(), "mark://h/doc.md");
        let b = url.clone().with_fragment(Some("b")).unwrap();
        assert_eq!(b.to_string(), "mark://h/doc.md#b");
        assert!(url.clone().with_fragment(Some("a b")).is_err());
        assert_eq!(url.with_fragment(Some("")).unwrap().fragment(), None);
    }

    #[test]
    fn non_ascii_paths_are_kept_as_written() {
        let url = MarkUrl::parse("mark://h/notes/café.md").unwrap();
        assert_eq!(url.path(), "/notes/café.md");
        assert_eq!(url.to_string(), "mark://h/notes/café.md");
    }
}
