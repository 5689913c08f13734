//! Where a server's token comes from: `--token-file` (a file holding the
//! raw token, or demarkus' client token store `~/.mark/tokens.toml`, whose
//! entry for the host in use is read), else the `MARK_TOKEN` environment
//! variable, else `DEMARKUS_AUTH` (demarkus' own). A token never appears in
//! a message: a refusal names the file and the hosts it holds, not what
//! they hold.

use std::path::Path;

/// The environment variables read for a token, in order.
pub const TOKEN_VARIABLES: [&str; 2] = ["MARK_TOKEN", "DEMARKUS_AUTH"];

/// The token for `host:port` from the text of a token file `file`: the
/// entry `["host:port"] token = "…"` when the text is demarkus' token
/// store, else the whole text, trimmed.
pub fn token_from_file(file: &Path, text: &str, host: &str, port: u16) -> Result<String, String> {
    let shown = file.display();
    if let Ok(table) = text.parse::<toml::Table>()
        && !table.is_empty()
    {
        return store_entry(&table, host, port).map_err(|why| {
            format!("the token file {shown} is a token store (demarkus' ~/.mark/tokens.toml layout) {why}; add an entry for it with demarkus' client, or give a file that holds only the token")
        });
    }
    match text.trim() {
        "" => Err(format!("the token file {shown} is empty")),
        raw if raw.lines().count() > 1 => Err(format!(
            "the token file {shown} holds several lines and is not a token store; give a file that holds only the token"
        )),
        raw => Ok(raw.to_string()),
    }
}

/// The `token` of the entry for `host:port` (the host as given, and its
/// lower-case form).
fn store_entry(table: &toml::Table, host: &str, port: u16) -> Result<String, String> {
    let wanted = [
        format!("{host}:{port}"),
        format!("{}:{port}", host.to_ascii_lowercase()),
    ];
    let entry = wanted.iter().find_map(|key| table.get(key));
    match entry {
        Some(entry) => match entry
            .get("token")
            .and_then(toml::Value::as_str)
            .map(str::trim)
        {
            Some(token) if !token.is_empty() => Ok(token.to_string()),
            _ => Err(format!(
                "whose entry for {} has no `token = \"…\"`",
                wanted[0]
            )),
        },
        None => {
            let mut hosts: Vec<&str> = table.keys().map(String::as_str).collect();
            hosts.sort_unstable();
            Err(format!(
                "with no entry for {} (it has {})",
                wanted[0],
                hosts.join(", ")
            ))
        }
    }
}

/// The token from the environment: the first of [`TOKEN_VARIABLES`] that
/// is set and not blank, as `lookup` reads them.
pub fn token_from_env(lookup: impl Fn(&str) -> Option<String>) -> Option<String> {
    TOKEN_VARIABLES.iter().find_map(|name| {
        lookup(name)
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STORE: &str = "[\"127.0.0.1:6309\"]\ntoken = \"secret-a\"\n\n[\"docs.example:6309\"]\ntoken = \"secret-b\"\n";

    fn read(text: &str, host: &str, port: u16) -> Result<String, String> {
        token_from_file(Path::new("/home/u/.mark/tokens.toml"), text, host, port)
    }

    #[test]
    fn a_raw_token_file_is_the_token() {
        assert_eq!(read("mark_abc123\n", "h", 1).unwrap(), "mark_abc123");
        // Tokens with TOML-looking characters are still raw tokens.
        assert_eq!(read("dG9rZW4=\n", "h", 1).unwrap(), "dG9rZW4=");
        assert!(read("  \n", "h", 1).unwrap_err().contains("is empty"));
    }

    #[test]
    fn demarkus_token_store_gives_the_entry_of_the_host_in_use() {
        assert_eq!(read(STORE, "127.0.0.1", 6309).unwrap(), "secret-a");
        assert_eq!(read(STORE, "DOCS.example", 6309).unwrap(), "secret-b");
    }

    #[test]
    fn a_store_without_the_host_is_refused_in_a_sentence_without_tokens() {
        let err = read(STORE, "127.0.0.1", 7000).unwrap_err();
        assert!(err.contains("no entry for 127.0.0.1:7000"), "{err}");
        assert!(err.contains("127.0.0.1:6309, docs.example:6309"), "{err}");
        assert!(!err.contains("secret"), "{err}");
        let err = read("[\"h:1\"]\nuser = \"x\"\n", "h", 1).unwrap_err();
        assert!(err.contains("no `token"), "{err}");
    }

    #[test]
    fn mark_token_comes_before_demarkus_auth() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            token_from_env(env(&[("MARK_TOKEN", "m"), ("DEMARKUS_AUTH", "d")])),
            Some("m".into())
        );
        assert_eq!(
            token_from_env(env(&[("MARK_TOKEN", " "), ("DEMARKUS_AUTH", "d")])),
            Some("d".into())
        );
        assert_eq!(token_from_env(env(&[])), None);
    }
}
