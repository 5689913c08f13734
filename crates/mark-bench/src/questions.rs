//! The orientation questions (`questions.toml`) and the evidence check.

use crate::BenchError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashSet};
use std::path::Path;

/// One orientation question, as `questions.toml` writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    /// Short unique name.
    pub id: String,
    /// `project`, `current_phase`, `decision`, `term`, `journal`, `owner`, `phase_status`.
    pub kind: String,
    /// The question as an agent would get it.
    pub question: String,
    /// Strings that appear verbatim in the answer.
    pub facts: Vec<String>,
    /// `/path.md#anchor`: the smallest section holding every fact (never read by
    /// the strategies; reports only).
    pub section: String,
    /// The document an agent would explore first.
    pub hub: String,
}

#[derive(Deserialize)]
struct QuestionFile {
    #[serde(default)]
    question: Vec<Question>,
}

/// Reads and checks a questions file: at least one question, unique ids,
/// 1 or more non-empty facts each, `hub` a `/path`.
pub fn load_questions(path: &Path) -> Result<Vec<Question>, BenchError> {
    let text = std::fs::read_to_string(path).map_err(|source| BenchError::Io {
        what: format!("reading {}", path.display()),
        source,
    })?;
    parse_questions(&text).map_err(|why| BenchError::Questions {
        path: path.to_path_buf(),
        why,
    })
}

/// Parses the text of a questions file (see [`load_questions`]).
pub fn parse_questions(text: &str) -> Result<Vec<Question>, String> {
    let file: QuestionFile = toml::from_str(text).map_err(|e| e.to_string())?;
    if file.question.is_empty() {
        return Err("it holds no [[question]] table".into());
    }
    let mut ids = HashSet::new();
    for q in &file.question {
        if !ids.insert(q.id.as_str()) {
            return Err(format!("question id `{}` appears twice", q.id));
        }
        if q.facts.is_empty() || q.facts.iter().any(|f| f.trim().is_empty()) {
            return Err(format!("question `{}` needs non-empty facts", q.id));
        }
        if !q.hub.starts_with('/') {
            return Err(format!(
                "question `{}`: hub `{}` is not a /path",
                q.id, q.hub
            ));
        }
    }
    Ok(file.question)
}

/// Collapses every run of white space to one space, so that a fact matches
/// across the line wrapping of whatever text a tool returned.
pub fn normalize_space(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The evidence a scripted agent has gathered for one question: the text of
/// every tool result, white space collapsed.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    text: String,
}

impl Evidence {
    /// Adds one tool result's text.
    pub fn add(&mut self, text: &str) {
        self.text.push('\n');
        self.text.push_str(&normalize_space(text));
    }

    /// The facts not (yet) found verbatim in the evidence.
    pub fn missing<'f>(&self, facts: &'f [String]) -> Vec<&'f str> {
        facts
            .iter()
            .map(String::as_str)
            .filter(|f| !self.text.contains(&normalize_space(f)))
            .collect()
    }

    /// Whether every fact is found.
    pub fn holds_all(&self, facts: &[String]) -> bool {
        self.missing(facts).is_empty()
    }
}

/// The o200k tokens of the questions' answer sections (`section`, read from
/// the knowledge base on disk): the floor of a reader that returns exactly
/// the answer's section, nothing around it. Used for reports only, never
/// by a strategy.
pub fn answer_section_tokens(kb: &Path, questions: &[Question]) -> Result<usize, BenchError> {
    let mut total = 0;
    for q in questions {
        let answer = AnswerSection::read(kb, q)?;
        let section = match answer.heading {
            None => answer.doc.source(),
            Some(i) => answer.doc.section_text(&answer.doc.headings()[i]),
        };
        total += crate::tokens::o200k_tokens(section);
    }
    Ok(total)
}

/// A question's answer section (`section`), read from the knowledge base on
/// disk: the one place reports read it (never a strategy).
pub struct AnswerSection {
    /// The document's `/path`.
    pub path: String,
    /// The document, parsed.
    pub doc: markdown_slice::Document<String>,
    /// The answer's heading in `doc.headings()`; `None`: the whole document.
    pub heading: Option<usize>,
}

impl AnswerSection {
    /// Reads `q.section` under `kb`; an unreadable file or an anchor the
    /// document lacks is an error naming the question.
    pub fn read(kb: &Path, q: &Question) -> Result<AnswerSection, BenchError> {
        let (path, anchor) = q.section.split_once('#').unwrap_or((&q.section, ""));
        let file = kb.join(path.trim_start_matches('/'));
        let text = std::fs::read_to_string(&file).map_err(|source| BenchError::Io {
            what: format!("reading {} (question `{}`)", file.display(), q.id),
            source,
        })?;
        let doc = markdown_slice::Document::parse(text);
        let heading = if anchor.is_empty() {
            None
        } else {
            let found = doc.find_anchor(anchor).map_err(|_| BenchError::Questions {
                path: file.clone(),
                why: format!("question `{}`: no section #{anchor}", q.id),
            })?;
            doc.headings().iter().position(|h| h == found)
        };
        Ok(AnswerSection {
            path: path.to_string(),
            doc,
            heading,
        })
    }

    /// The anchors of the answer's section and of every heading inside it;
    /// empty for a whole document.
    pub fn anchors(&self) -> BTreeSet<String> {
        let Some(i) = self.heading else {
            return BTreeSet::new();
        };
        let range = &self.doc.headings()[i].section;
        self.doc
            .headings()
            .iter()
            .filter(|h| range.contains(&h.line.start))
            .filter_map(|h| h.anchor.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects_duplicates() {
        let one = r#"
[[question]]
id = "a"
kind = "term"
question = "What is a?"
facts = ["A is a thing"]
section = "/g.md#a"
hub = "/g.md"
"#;
        let qs = parse_questions(one).unwrap();
        assert_eq!(qs[0].facts, vec!["A is a thing".to_string()]);
        let twice = format!("{one}{one}");
        assert!(parse_questions(&twice).unwrap_err().contains("twice"));
        assert!(parse_questions("").unwrap_err().contains("no [[question]]"));
        assert!(parse_questions(&one.replace("\"/g.md\"", "\"g.md\"")).is_err());
    }

    #[test]
    fn facts_match_across_line_breaks() {
        let mut ev = Evidence::default();
        ev.add("sent by 1,400 tide gauges and\n  river-level stations");
        let facts = vec![
            "1,400 tide gauges and river-level".to_string(),
            "absent".to_string(),
        ];
        assert_eq!(ev.missing(&facts), vec!["absent"]);
        ev.add("it is absent here");
        assert!(ev.holds_all(&facts));
    }

    #[test]
    fn the_fixture_questions_load() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crates/mark-mcp/soul/questions.toml");
        let qs = load_questions(&path).unwrap();
        assert!(qs.len() >= 20);
    }

    #[test]
    fn answer_sections_are_read_from_the_knowledge_base() {
        let kb = tempfile::tempdir().unwrap();
        std::fs::write(
            kb.path().join("g.md"),
            "# G\n\nIntro.\n\n## A\n\nA is a thing.\n",
        )
        .unwrap();
        let q = |section: &str| Question {
            id: "a".into(),
            kind: "term".into(),
            question: "What is a?".into(),
            facts: vec!["A is a thing".into()],
            section: section.into(),
            hub: "/g.md".into(),
        };
        let one = answer_section_tokens(kb.path(), &[q("/g.md#a")]).unwrap();
        assert_eq!(one, crate::tokens::o200k_tokens("## A\n\nA is a thing.\n"));
        let whole = answer_section_tokens(kb.path(), &[q("/g.md")]).unwrap();
        assert!(whole > one);
        assert!(answer_section_tokens(kb.path(), &[q("/g.md#nope")]).is_err());
    }
}
