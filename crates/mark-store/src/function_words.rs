//! A question is not a keyword query: English function words (articles,
//! pronouns, auxiliaries, grammatical prepositions and conjunctions,
//! negation and degree words such as `no`, `not`, `more`, `only`, and the
//! stems contractions leave, `doesn` in `doesn't`) carry no topic, so
//! they neither rank a row nor count as a word a row lacks.
//!
//! Only closed-class words are here; content words that happen to be
//! common (`get`, `like`, `use`) stay, since in some knowledge base they
//! are the topic; how rare a word is decides their weight instead.

use mark_proto::lookup::word_spans;

/// Closed-class English words and contraction stems, sorted (binary search).
const FUNCTION_WORDS: &[&str] = &[
    "about",
    "above",
    "after",
    "again",
    "against",
    "also",
    "although",
    "am",
    "an",
    "and",
    "any",
    "are",
    "aren",
    "as",
    "at",
    "be",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "couldn",
    "did",
    "didn",
    "do",
    "does",
    "doesn",
    "doing",
    "don",
    "during",
    "each",
    "either",
    "else",
    "every",
    "few",
    "for",
    "from",
    "further",
    "had",
    "hadn",
    "has",
    "hasn",
    "have",
    "haven",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "however",
    "if",
    "in",
    "into",
    "is",
    "isn",
    "it",
    "its",
    "itself",
    "just",
    "ll",
    "may",
    "me",
    "might",
    "mine",
    "more",
    "most",
    "must",
    "mustn",
    "my",
    "myself",
    "neither",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "on",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "re",
    "same",
    "shall",
    "she",
    "should",
    "shouldn",
    "since",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "to",
    "too",
    "unless",
    "until",
    "upon",
    "us",
    "ve",
    "very",
    "was",
    "wasn",
    "we",
    "were",
    "weren",
    "what",
    "when",
    "where",
    "whereas",
    "whether",
    "which",
    "while",
    "who",
    "whom",
    "whose",
    "why",
    "will",
    "with",
    "without",
    "won",
    "would",
    "wouldn",
    "yet",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Whether `word` (lower-cased) is an English function word.
pub fn is_function_word(word: &str) -> bool {
    FUNCTION_WORDS.binary_search(&word).is_ok()
}

/// The words of `query` (as [`mark_proto::lookup::query_words`] reads
/// them) without the function words written as prose. A word that is part
/// of code (`emitter.on`, `on('data')`, `` `this` ``: joined to its
/// neighbour by punctuation other than prose's) is kept, and so is every
/// word when the query holds nothing else (`to do` still asks for
/// something).
pub fn content_words(query: &str) -> Vec<String> {
    let words = mark_proto::lookup::query_words(query).searched;
    let in_code: Vec<String> = word_spans(query)
        .filter(|(start, word)| {
            let before = query[..*start].chars().next_back();
            let after = query[start + word.len()..].chars().next();
            [before, after].into_iter().flatten().any(joins_code)
        })
        .map(|(_, w)| w.to_lowercase())
        .collect();
    let prose_filler = |w: &String| is_function_word(w) && !in_code.contains(w);
    if words.iter().all(prose_filler) {
        return words;
    }
    words.into_iter().filter(|w| !prose_filler(w)).collect()
}

/// Punctuation that joins a word into code (`.`, `(`, `$`, `` ` `` …); white
/// space and prose's punctuation (apostrophes, quotes, hyphens, commas,
/// question and exclamation marks) do not.
fn joins_code(c: char) -> bool {
    !c.is_whitespace()
        && !matches!(
            c,
            '\'' | '’' | '"' | '“' | '”' | '-' | ',' | ';' | '?' | '!'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_sorted_and_lower_case() {
        assert!(FUNCTION_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(FUNCTION_WORDS.iter().all(|w| *w == w.to_lowercase()));
    }

    #[test]
    fn a_question_keeps_its_topic_words() {
        let words = |q: &str| q.split(' ').map(str::to_string).collect::<Vec<_>>();
        assert_eq!(
            content_words("Why doesn't my fs.watch fire after these saves? No more events"),
            words("fs watch fire saves events")
        );
        assert_eq!(
            content_words("to do"),
            words("to do"),
            "only function words"
        );
        assert!(!is_function_word("get") && !is_function_word("like"));
    }

    #[test]
    fn a_function_word_in_code_is_kept() {
        let words = |q: &str| q.split(' ').map(str::to_string).collect::<Vec<_>>();
        assert_eq!(content_words("emitter.on"), words("emitter on"));
        assert_eq!(
            content_words("when is on('data') called"),
            words("on data called")
        );
        assert_eq!(content_words("the `this` binding"), words("this binding"));
        assert_eq!(content_words("what is the end event"), words("end event"));
    }
}
