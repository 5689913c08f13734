//! Capability tokens: a TOML file of token hashes with path globs,
//! operations and an optional expiry. Raw tokens are never stored or
//! logged; requests are matched by the SHA-256 of the token they carry,
//! compared in constant time.
//!
//! Two layouts are read, in one file or mixed. mark-server's own, the one
//! [`generate_token`] writes:
//!
//! ```toml
//! [[token]]
//! hash = "sha256-<64 hex>"          # SHA-256 of the raw token
//! paths = ["/docs/**", "/notes/*"]  # `*` = one segment, `**` = any depth
//! ops = ["read", "publish"]
//! expires = "2027-01-01T00:00:00Z"  # optional; a TOML date-time also works
//! label = "ci publisher"            # optional, for people
//! ```
//!
//! and demarkus' (`demarkus-token generate`), one table per labelled token:
//!
//! ```toml
//! [tokens.ci-publisher]
//! hash = "sha256-<64 hex>"
//! paths = ["/docs/*"]
//! operations = ["publish"]
//! expires = "2027-01-01T00:00:00Z"  # optional
//! ```

use crate::clock::{format_rfc3339, parse_rfc3339, unix_seconds};
use crate::error::StoreError;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

/// An operation a token may grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// FETCH, LIST, VERSIONS, LOOKUP on paths a read grant covers.
    Read,
    /// PUBLISH, APPEND and ARCHIVE.
    Publish,
}

impl Op {
    /// The name in the token file.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Publish => "publish",
        }
    }

    /// Parses `read` or `publish`.
    pub fn parse(s: &str) -> Option<Op> {
        match s {
            "read" => Some(Op::Read),
            "publish" => Some(Op::Publish),
            _ => None,
        }
    }
}

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Denial {
    /// No token, a token the store does not know, or one that has expired:
    /// `unauthorized` (as demarkus answers an expired token).
    Unauthorized,
    /// A live token that does not grant this operation on this path:
    /// `not-permitted`.
    NotPermitted,
}

#[derive(Debug, Clone)]
struct Grant {
    hash: [u8; 32],
    paths: Vec<Vec<String>>,
    ops: Vec<Op>,
    expires: Option<i64>,
}

/// The loaded token file.
#[derive(Debug, Clone, Default)]
pub struct TokenStore {
    grants: Vec<Grant>,
    layouts: TokenLayouts,
}

/// How many grants a token file held in each layout it may use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenLayouts {
    /// `[[token]]` entries with `ops` (mark-server's layout).
    pub mark_server: usize,
    /// `[tokens.<label>]` tables with `operations` (demarkus' layout).
    pub demarkus: usize,
}

impl std::fmt::Display for TokenLayouts {
    /// One phrase for the startup log, e.g. `2 tokens in demarkus'
    /// [tokens.<label>] layout`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let plural = |n: usize| if n == 1 { "token" } else { "tokens" };
        let (ours, theirs) = (self.mark_server, self.demarkus);
        match (ours, theirs) {
            (_, 0) => write!(
                f,
                "{ours} {} in mark-server's [[token]] layout",
                plural(ours)
            ),
            (0, _) => write!(
                f,
                "{theirs} {} in demarkus' [tokens.<label>] layout",
                plural(theirs)
            ),
            _ => write!(
                f,
                "{ours} {} in mark-server's [[token]] layout and {theirs} in demarkus' [tokens.<label>] layout",
                plural(ours)
            ),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileForm {
    #[serde(default)]
    token: Vec<EntryForm>,
    /// demarkus' layout: label → entry, in label order.
    #[serde(default)]
    tokens: std::collections::BTreeMap<String, DemarkusEntryForm>,
}

/// One `[tokens.<label>]` table of a demarkus token file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DemarkusEntryForm {
    hash: String,
    paths: Vec<String>,
    operations: Vec<String>,
    #[serde(default)]
    expires: Option<toml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryForm {
    hash: String,
    paths: Vec<String>,
    ops: Vec<String>,
    #[serde(default)]
    expires: Option<toml::Value>,
    /// A note for people; read so typos in other keys still fail.
    #[serde(default, rename = "label")]
    _label: Option<String>,
}

impl Grant {
    /// Checks one entry's fields, whichever layout named them.
    fn parse(
        hash: &str,
        paths: &[String],
        ops: &[String],
        expires: Option<toml::Value>,
    ) -> Result<Grant, String> {
        let bad_hash = || "`hash` must be `sha256-<64 hex>`".to_string();
        let hex_part = hash.strip_prefix("sha256-").ok_or_else(bad_hash)?;
        let mut digest = [0u8; 32];
        hex::decode_to_slice(hex_part, &mut digest).map_err(|_| bad_hash())?;
        let paths = paths
            .iter()
            .map(|g| glob_segments(g))
            .collect::<Result<_, _>>()?;
        let ops = ops
            .iter()
            .map(|o| Op::parse(o).ok_or_else(|| format!("unknown op `{o}` (use read or publish)")))
            .collect::<Result<_, _>>()?;
        let expires = match expires {
            None => None,
            Some(toml::Value::String(s)) => Some(
                parse_rfc3339(&s)
                    .ok_or_else(|| format!("`expires = {s}` is not an RFC 3339 time"))?,
            ),
            Some(toml::Value::Datetime(d)) => Some(
                parse_rfc3339(&d.to_string())
                    .ok_or_else(|| format!("`expires = {d}` needs a date, a time and an offset"))?,
            ),
            Some(other) => return Err(format!("`expires = {other}` is not a time")),
        };
        Ok(Grant {
            hash: digest,
            paths,
            ops,
            expires,
        })
    }
}

fn hash_token(raw: &str) -> [u8; 32] {
    Sha256::digest(raw.as_bytes()).into()
}

/// Equality in time independent of where the inputs differ.
fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn glob_segments(glob: &str) -> Result<Vec<String>, String> {
    let rest = glob
        .strip_prefix('/')
        .ok_or_else(|| format!("path glob `{glob}` must start with /"))?;
    Ok(rest
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect())
}

/// Matches one segment against a pattern segment where `*` stands for any
/// run of characters.
fn segment_matches(pattern: &str, segment: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == segment;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !segment.starts_with(first)
        || segment.len() < first.len() + last.len()
        || !segment.ends_with(last)
    {
        return false;
    }
    let mut middle = &segment[first.len()..segment.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match middle.find(part) {
            Some(i) => middle = &middle[i + part.len()..],
            None => return false,
        }
    }
    true
}

/// `**` matches any number of segments (zero included); other segments
/// match one segment each.
fn glob_matches(pattern: &[String], path: &[String]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((p, rest)) if p == "**" => (0..=path.len()).any(|k| glob_matches(rest, &path[k..])),
        Some((p, rest)) => path
            .split_first()
            .is_some_and(|(s, tail)| segment_matches(p, s) && glob_matches(rest, tail)),
    }
}

impl TokenStore {
    /// Reads and checks a token file.
    pub fn load(path: &Path) -> Result<TokenStore, StoreError> {
        let text = std::fs::read_to_string(path).map_err(|source| StoreError::TokenFileIo {
            path: path.to_path_buf(),
            action: "read",
            source,
        })?;
        TokenStore::parse(&text).map_err(|why| StoreError::TokenFile {
            path: path.to_path_buf(),
            why,
        })
    }

    /// Parses token-file text in either layout.
    pub fn parse(text: &str) -> Result<TokenStore, String> {
        let form: FileForm = toml::from_str(text).map_err(|e| e.message().to_string())?;
        let layouts = TokenLayouts {
            mark_server: form.token.len(),
            demarkus: form.tokens.len(),
        };
        let mut grants = Vec::with_capacity(layouts.mark_server + layouts.demarkus);
        for (i, entry) in form.token.into_iter().enumerate() {
            let at = |why: String| format!("token entry {}: {why}", i + 1);
            grants.push(
                Grant::parse(&entry.hash, &entry.paths, &entry.ops, entry.expires).map_err(at)?,
            );
        }
        for (label, entry) in form.tokens {
            let at = |why: String| format!("[tokens.{label}]: {why}");
            // demarkus writes `expires = ""` for a token that never expires.
            let expires = entry
                .expires
                .filter(|e| e.as_str().is_none_or(|s| !s.is_empty()));
            grants.push(
                Grant::parse(&entry.hash, &entry.paths, &entry.operations, expires).map_err(at)?,
            );
        }
        Ok(TokenStore { grants, layouts })
    }

    /// Which layouts the file used, and how many grants each held.
    pub fn layouts(&self) -> TokenLayouts {
        self.layouts
    }

    /// Whether some grant with `read` covers `path`: such paths are private.
    pub(crate) fn read_restricted(&self, path: &[String]) -> bool {
        self.grants
            .iter()
            .any(|g| g.ops.contains(&Op::Read) && g.paths.iter().any(|p| glob_matches(p, path)))
    }

    /// Checks a raw token for `op` on `path` at `now`.
    pub(crate) fn check(
        &self,
        raw: Option<&str>,
        path: &[String],
        op: Op,
        now: SystemTime,
    ) -> Result<(), Denial> {
        let Some(raw) = raw.map(str::trim).filter(|t| !t.is_empty()) else {
            return Err(Denial::Unauthorized);
        };
        let hash = hash_token(raw);
        let now = unix_seconds(now);
        let mut live = false;
        let mut allowed = false;
        // Every grant is compared, so timing does not reveal which matched.
        for g in &self.grants {
            if constant_time_eq(&g.hash, &hash) && g.expires.is_none_or(|e| now < e) {
                live = true;
                allowed |= g.ops.contains(&op) && g.paths.iter().any(|p| glob_matches(p, path));
            }
        }
        match (live, allowed) {
            // Unknown and expired alike, as demarkus answers them.
            (false, _) => Err(Denial::Unauthorized),
            (true, false) => Err(Denial::NotPermitted),
            (true, true) => Ok(()),
        }
    }
}

/// Issues a new token: appends its hash and grant to `tokens_file` (created
/// if missing, owner-only on Unix) and returns the raw token, the only time
/// it exists outside the caller. The file is checked before and after.
pub fn generate_token(
    paths: &[String],
    ops: &[Op],
    expires: Option<SystemTime>,
    tokens_file: &Path,
) -> Result<String, StoreError> {
    if paths.is_empty() || ops.is_empty() {
        return Err(StoreError::BadGrant(
            "give at least one path glob and one operation".into(),
        ));
    }
    for p in paths {
        glob_segments(p).map_err(StoreError::BadGrant)?;
    }
    let existing = match std::fs::read_to_string(tokens_file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => {
            return Err(StoreError::TokenFileIo {
                path: tokens_file.to_path_buf(),
                action: "read",
                source,
            });
        }
    };
    TokenStore::parse(&existing).map_err(|why| StoreError::TokenFile {
        path: tokens_file.to_path_buf(),
        why,
    })?;

    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).map_err(|e| StoreError::Random(e.to_string()))?;
    let raw = format!("mark_{}", hex::encode(secret));

    let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
    let list = |items: Vec<String>| items.join(", ");
    let mut entry = String::new();
    if !existing.is_empty() && !existing.ends_with('\n') {
        entry.push('\n');
    }
    entry.push_str("\n[[token]]\n");
    entry.push_str(&format!(
        "hash = \"sha256-{}\"\n",
        hex::encode(hash_token(&raw))
    ));
    entry.push_str(&format!(
        "paths = [{}]\n",
        list(paths.iter().map(|p| quote(p)).collect())
    ));
    entry.push_str(&format!(
        "ops = [{}]\n",
        list(ops.iter().map(|o| quote(o.as_str())).collect())
    ));
    if let Some(t) = expires {
        entry.push_str(&format!(
            "expires = \"{}\"\n",
            format_rfc3339(unix_seconds(t))
        ));
    }

    let write_err = |source| StoreError::TokenFileIo {
        path: tokens_file.to_path_buf(),
        action: "written",
        source,
    };
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(tokens_file).map_err(write_err)?;
    file.write_all(entry.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(write_err)?;
    TokenStore::load(tokens_file)?;
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn segs(p: &str) -> Vec<String> {
        glob_segments(p).unwrap()
    }

    fn store_for(raw: &str, paths: &str, ops: &str, expires: Option<&str>) -> TokenStore {
        let expires = expires
            .map(|e| format!("expires = \"{e}\"\n"))
            .unwrap_or_default();
        let text = format!(
            "[[token]]\nhash = \"sha256-{}\"\npaths = {paths}\nops = {ops}\n{expires}",
            hex::encode(hash_token(raw))
        );
        TokenStore::parse(&text).unwrap()
    }

    #[test]
    fn globs_match_segments() {
        assert!(glob_matches(&segs("/**"), &segs("/")));
        assert!(glob_matches(&segs("/**"), &segs("/a/b/c.md")));
        assert!(glob_matches(&segs("/docs/*"), &segs("/docs/a.md")));
        assert!(!glob_matches(&segs("/docs/*"), &segs("/docs/a/b.md")));
        assert!(!glob_matches(&segs("/docs/*"), &segs("/docs")));
        assert!(glob_matches(&segs("/docs/**"), &segs("/docs")));
        assert!(glob_matches(
            &segs("/docs/**/x.md"),
            &segs("/docs/a/b/x.md")
        ));
        assert!(glob_matches(&segs("/*.md"), &segs("/a.md")));
        assert!(!glob_matches(&segs("/*.md"), &segs("/a.txt")));
        assert!(glob_matches(&segs("/a*b*c"), &segs("/aXbYc")));
        assert!(!glob_matches(&segs("/a*b*c"), &segs("/ac")));
    }

    #[test]
    fn outcomes_of_check() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let s = store_for(
            "secret",
            "[\"/docs/**\"]",
            "[\"publish\"]",
            Some("2027-01-01T00:00:00Z"),
        );
        let p = segs("/docs/a.md");
        assert_eq!(
            s.check(None, &p, Op::Publish, now),
            Err(Denial::Unauthorized)
        );
        assert_eq!(
            s.check(Some("wrong"), &p, Op::Publish, now),
            Err(Denial::Unauthorized)
        );
        assert_eq!(
            s.check(Some("secret"), &p, Op::Publish, now),
            Err(Denial::Unauthorized),
            "expired, as demarkus answers it"
        );
        let early = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(s.check(Some("secret"), &p, Op::Publish, early), Ok(()));
        assert_eq!(
            s.check(Some("secret"), &p, Op::Read, early),
            Err(Denial::NotPermitted)
        );
        assert_eq!(
            s.check(Some("secret"), &segs("/other.md"), Op::Publish, early),
            Err(Denial::NotPermitted)
        );
    }

    #[test]
    fn read_restriction_comes_from_read_grants_only() {
        let s = store_for("r", "[\"/private/**\"]", "[\"read\"]", None);
        assert!(s.read_restricted(&segs("/private/a.md")));
        assert!(!s.read_restricted(&segs("/public/a.md")));
        let p = store_for("p", "[\"/**\"]", "[\"publish\"]", None);
        assert!(!p.read_restricted(&segs("/a.md")));
        let expired = store_for(
            "e",
            "[\"/private/**\"]",
            "[\"read\"]",
            Some("2000-01-01T00:00:00Z"),
        );
        assert!(
            expired.read_restricted(&segs("/private/a.md")),
            "expiry never makes a path public"
        );
    }

    #[test]
    fn bad_files_are_refused_with_the_entry_number() {
        for (text, want) in [
            (
                "[[token]]\nhash = \"md5-x\"\npaths = [\"/**\"]\nops = [\"read\"]\n",
                "token entry 1",
            ),
            (
                "[[token]]\nhash = \"sha256-00\"\npaths = [\"/**\"]\nops = [\"read\"]\n",
                "sha256-<64 hex>",
            ),
            (
                &format!(
                    "[[token]]\nhash = \"sha256-{}\"\npaths = [\"docs\"]\nops = [\"read\"]\n",
                    "0".repeat(64)
                ),
                "must start with /",
            ),
            (
                &format!(
                    "[[token]]\nhash = \"sha256-{}\"\npaths = [\"/**\"]\nops = [\"write\"]\n",
                    "0".repeat(64)
                ),
                "unknown op",
            ),
            (
                &format!(
                    "[[token]]\nhash = \"sha256-{}\"\npaths = [\"/**\"]\nops = [\"read\"]\nexpires = \"soon\"\n",
                    "0".repeat(64)
                ),
                "RFC 3339",
            ),
            ("[[token]]\nhash = 1\n", "invalid type"),
        ] {
            let err = TokenStore::parse(text).unwrap_err();
            assert!(err.contains(want), "{err} should mention {want}");
        }
    }

    #[test]
    fn demarkus_layout_is_read_with_labels_operations_and_expiry() {
        let text = format!(
            "[tokens.ci-publisher]\nhash = \"sha256-{}\"\npaths = [\"/docs/*\"]\noperations = [\"publish\"]\nexpires = \"2027-01-01T00:00:00Z\"\n\n\
             [tokens.reader]\nhash = \"sha256-{}\"\npaths = [\"/private/*\"]\noperations = [\"read\"]\nexpires = \"\"\n",
            hex::encode(hash_token("pub")),
            hex::encode(hash_token("rd"))
        );
        let store = TokenStore::parse(&text).unwrap();
        assert_eq!(
            store.layouts(),
            TokenLayouts {
                mark_server: 0,
                demarkus: 2
            }
        );
        let early = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let late = UNIX_EPOCH + Duration::from_secs(1_900_000_000);
        let doc = segs("/docs/a.md");
        assert_eq!(store.check(Some("pub"), &doc, Op::Publish, early), Ok(()));
        assert_eq!(
            store.check(Some("pub"), &doc, Op::Publish, late),
            Err(Denial::Unauthorized),
            "expired"
        );
        assert_eq!(
            store.check(Some("rd"), &segs("/private/p.md"), Op::Read, late),
            Ok(()),
            "an empty expires never expires"
        );
        let err =
            TokenStore::parse("[tokens.x]\nhash = \"sha256-00\"\npaths = []\noperations = []\n")
                .unwrap_err();
        assert!(err.contains("[tokens.x]"), "{err}");
    }

    #[test]
    fn both_layouts_in_one_file_are_both_read_and_named() {
        let zeros = "0".repeat(64);
        let text = format!(
            "[[token]]\nhash = \"sha256-{zeros}\"\npaths = [\"/**\"]\nops = [\"read\"]\n\n\
             [tokens.old]\nhash = \"sha256-{zeros}\"\npaths = [\"/**\"]\noperations = [\"read\"]\n"
        );
        let layouts = TokenStore::parse(&text).unwrap().layouts();
        assert_eq!(
            layouts.to_string(),
            "1 token in mark-server's [[token]] layout and 1 in demarkus' [tokens.<label>] layout"
        );
    }

    #[test]
    fn toml_datetime_expiry_is_accepted() {
        let text = format!(
            "[[token]]\nhash = \"sha256-{}\"\npaths = [\"/**\"]\nops = [\"read\"]\nexpires = 2027-01-01T00:00:00Z\n",
            "0".repeat(64)
        );
        assert_eq!(
            TokenStore::parse(&text).unwrap().grants[0].expires,
            Some(1_798_761_600)
        );
    }

    #[test]
    fn generated_tokens_are_stored_only_as_hashes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.toml");
        let exp = UNIX_EPOCH + Duration::from_secs(1_900_000_000);
        let a = generate_token(&["/docs/**".into()], &[Op::Publish], Some(exp), &file).unwrap();
        let b = generate_token(&["/**".into()], &[Op::Read, Op::Publish], None, &file).unwrap();
        assert_ne!(a, b);
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains(&a) && !text.contains(&b));
        let store = TokenStore::load(&file).unwrap();
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        assert_eq!(
            store.check(Some(&a), &segs("/docs/x.md"), Op::Publish, now),
            Ok(())
        );
        assert_eq!(
            store.check(Some(&a), &segs("/x.md"), Op::Publish, now),
            Err(Denial::NotPermitted)
        );
        assert_eq!(store.check(Some(&b), &segs("/x.md"), Op::Read, now), Ok(()));
        assert!(generate_token(&[], &[Op::Read], None, &file).is_err());
        assert!(generate_token(&["docs".into()], &[Op::Read], None, &file).is_err());
    }
}
