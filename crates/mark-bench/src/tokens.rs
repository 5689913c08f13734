//! Token counts with OpenAI's o200k_base encoding: an exact, offline count,
//! used as a proxy for Claude's tokenizer (which is not public).

/// The o200k_base token count of `text` (special tokens read as text).
pub fn o200k_tokens(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_tokens() {
        assert_eq!(o200k_tokens(""), 0);
        let n = o200k_tokens("Tidewatch is Brackwater's sensor ingestion service.");
        assert!((5..20).contains(&n), "{n}");
    }
}
