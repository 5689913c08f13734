//! Passages: which blocks of a search's top sections answer the query,
//! best first, within a token budget.
//!
//! A search ranks sections; a developer's answer is usually one or two
//! paragraphs of one of them. Given the top rows' sections cut into
//! [`PassageUnit`]s (markdown-slice's paragraphs, list items, table rows,
//! code blocks), [`choose`] scores each unit by the query's content words
//! it holds (function words left out, English stems, the rarer a word
//! among the candidate units the more it weighs; a word only in the
//! section's heading counts half for each of its units), by its length
//! (a unit several paragraphs long must hold more) and by its row's rank,
//! and takes units best first until the budget (estimated tokens,
//! [`markdown_slice::estimate_tokens`]) is spent. A block ending in a
//! colon brings the block it introduces. Among equals, the first
//! block of a section comes first, except in a list, where the last item
//! does: a dated list grows at its end, so its newest line is its current
//! state.
//!
//! It reads no store and no index: the caller gives it the sections it
//! has (mark-mcp gives the documents it loaded, at the version it will
//! say it sent). It does not render.

use std::collections::{BTreeMap, HashMap, HashSet};

use mark_proto::lookup::word_spans;
use markdown_slice::{PassageUnit, UnitKind, estimate_tokens};
use tantivy::tokenizer::{Language, RawTokenizer, Stemmer, TextAnalyzer, TokenStream};

use crate::function_words::content_words;

/// How much a row's rank lowers its units' scores: the unit of row `r`
/// (0 = the top row) scores `1 / (1 + RANK_DECAY × r)` of its words.
const RANK_DECAY: f64 = 0.15;
/// A unit scoring under this share of the best unit's score is not
/// chosen, whatever budget is left: the budget is a cap, not a target.
const RELEVANCE_FLOOR: f64 = 0.5;
/// The share of a word's weight a unit gets when the word is in its
/// section's heading trail but not in the unit.
const HEADING_SHARE: f64 = 0.5;
/// A paragraph's tokens: a longer unit scores its words divided by the
/// square root of how many paragraphs long it is, since it spends that
/// much more of the budget (a 700-token code example holding five of the
/// query's words no longer crowds out the paragraph that answers).
/// Measured (mark-bench orientation, plain agent, with the colon rule):
/// Node 21 → 22 of 30 answers, 1.93 → 1.73 calls, 51,337 → 44,918
/// tokens; the bundled notes unchanged at 29/30 (50: more tokens on
/// both; 150: fewer of the gains).
const PARAGRAPH_TOKENS: f64 = 100.0;

/// One section a search found, as the caller holds it.
#[derive(Debug, Clone)]
pub struct Candidate<'a> {
    /// Its row's rank (0 = the top row).
    pub rank: usize,
    /// The whole document's source, which the units' ranges index.
    pub source: &'a str,
    /// Its heading trail (`Doc › Heading`): words here count for every unit.
    pub heading: &'a str,
    /// Its units (markdown-slice's [`markdown_slice::Document::passage_units`]).
    pub units: &'a [PassageUnit],
}

impl Candidate<'_> {
    /// The text a unit is shown with: a table row under its header.
    pub fn unit_text(&self, unit: &PassageUnit) -> String {
        let own = self.source.get(unit.range.clone()).unwrap_or("");
        match unit
            .table_header
            .as_ref()
            .and_then(|h| self.source.get(h.clone()))
        {
            Some(header) => format!("{header}\n{own}"),
            None => own.to_string(),
        }
    }
}

/// What one unit holds of the query, as [`choose`] weighs it.
struct Held {
    /// Its candidate's index, and its own within that candidate.
    ci: usize,
    ui: usize,
    /// The query's stems it holds.
    words: HashSet<String>,
    /// Its estimated tokens.
    tokens: usize,
    /// It ends in a colon: it introduces the unit after it.
    introduces: bool,
}

/// The units chosen from one candidate, in source order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    /// Index into the candidates given.
    pub candidate: usize,
    /// Indexes into that candidate's units, in source order.
    pub units: Vec<usize>,
}

/// English stems of words, as the search index makes them.
struct Stems {
    analyzer: TextAnalyzer,
    known: HashMap<String, String>,
}

impl Stems {
    fn new() -> Stems {
        Stems {
            analyzer: TextAnalyzer::builder(RawTokenizer::default())
                .filter(Stemmer::new(Language::English))
                .build(),
            known: HashMap::new(),
        }
    }

    fn of(&mut self, word: &str) -> String {
        if let Some(s) = self.known.get(word) {
            return s.clone();
        }
        let mut stream = self.analyzer.token_stream(word);
        let stem = if stream.advance() {
            stream.token().text.clone()
        } else {
            word.to_string()
        };
        self.known.insert(word.to_string(), stem.clone());
        stem
    }

    /// The stems of the words of `text` among `wanted`.
    fn held(&mut self, text: &str, wanted: &HashSet<String>) -> HashSet<String> {
        word_spans(text)
            .map(|(_, w)| self.of(&w.to_lowercase()))
            .filter(|s| wanted.contains(s))
            .collect()
    }
}

/// The units that best answer `query` among `candidates`, within
/// `budget` estimated tokens (each unit's text as [`Candidate::unit_text`]
/// gives it), grouped by candidate, the group holding the best unit first.
/// A unit holding none of the query's content words, in itself or its
/// heading, is never chosen; one over what is left of the budget is
/// passed over for smaller ones.
pub fn choose(query: &str, candidates: &[Candidate<'_>], budget: usize) -> Vec<Chosen> {
    let mut stems = Stems::new();
    let wanted: HashSet<String> = content_words(query).iter().map(|w| stems.of(w)).collect();
    if wanted.is_empty() {
        return Vec::new();
    }
    // What each unit holds, and each candidate's heading.
    let headings: Vec<HashSet<String>> = candidates
        .iter()
        .map(|c| stems.held(c.heading, &wanted))
        .collect();
    // Every candidate's units in order; candidate `ci`'s unit `ui` is
    // `held[first[ci] + ui]`.
    let mut held: Vec<Held> = Vec::new();
    let mut first = Vec::with_capacity(candidates.len());
    for (ci, c) in candidates.iter().enumerate() {
        first.push(held.len());
        for (ui, u) in c.units.iter().enumerate() {
            let text = c.unit_text(u);
            held.push(Held {
                ci,
                ui,
                words: stems.held(&text, &wanted),
                tokens: estimate_tokens(&text),
                introduces: text.trim_end().ends_with(':'),
            });
        }
    }
    // A word's weight: rarer among the units (with their headings), more.
    let pool = held.len() as f64;
    // Summed in one order (a BTreeMap), so the same candidates always
    // score the same, to the last bit.
    let weight: BTreeMap<&String, f64> = wanted
        .iter()
        .map(|w| {
            let df = held
                .iter()
                .filter(|u| u.words.contains(w) || headings[u.ci].contains(w))
                .count() as f64;
            (w, (1.0 + (pool + 1.0) / (df + 1.0)).ln())
        })
        .collect();
    let mut scored: Vec<(f64, &Held)> = held
        .iter()
        .filter_map(|u| {
            let words: f64 = weight
                .iter()
                .map(|(w, wt)| {
                    if u.words.contains(*w) {
                        *wt
                    } else if headings[u.ci].contains(*w) {
                        HEADING_SHARE * wt
                    } else {
                        0.0
                    }
                })
                .sum();
            let rank = candidates[u.ci].rank as f64;
            let length = (u.tokens as f64 / PARAGRAPH_TOKENS).max(1.0).sqrt();
            (words > 0.0).then_some((words / (1.0 + RANK_DECAY * rank) / length, u))
        })
        .collect();
    // Among equals: the first block of a section first, except list items,
    // which come after its other blocks, the newest (last) first.
    let place = |ci: usize, ui: usize| match candidates[ci].units[ui].kind {
        UnitKind::ListItem => usize::MAX - ui,
        _ => ui,
    };
    scored.sort_by(|(a_score, a), (b_score, b)| {
        b_score
            .total_cmp(a_score)
            .then(a.ci.cmp(&b.ci))
            .then(place(a.ci, a.ui).cmp(&place(b.ci, b.ui)))
    });
    let floor = scored.first().map_or(0.0, |s| s.0 * RELEVANCE_FLOOR);
    let mut left = budget;
    let mut taken: HashSet<(usize, usize)> = HashSet::new();
    let mut groups: Vec<Chosen> = Vec::new();
    for (score, u) in scored {
        let (ci, ui) = (u.ci, u.ui);
        if score < floor {
            break;
        }
        if u.tokens > left || taken.contains(&(ci, ui)) {
            continue;
        }
        left -= u.tokens;
        let mut units = vec![ui];
        // A block ending in a colon introduces the next one ("the options
        // should be set to:" and its code): that one comes along, when it
        // fits.
        if u.introduces
            && let Some(next) = held.get(first[ci] + ui + 1).filter(|n| n.ci == ci)
            && !taken.contains(&(ci, next.ui))
            && next.tokens <= left
        {
            left -= next.tokens;
            units.push(next.ui);
        }
        taken.extend(units.iter().map(|&u| (ci, u)));
        match groups.iter_mut().find(|g| g.candidate == ci) {
            Some(g) => g.units.extend(units),
            None => groups.push(Chosen {
                candidate: ci,
                units,
            }),
        }
    }
    for g in &mut groups {
        g.units.sort_unstable();
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use markdown_slice::Document;
    use proptest::prelude::*;

    proptest! {
        /// Any markdown, any query, any budget: no panic (the sort's order
        /// is total), the budget holds, and the units chosen are the
        /// candidate's, each once, in source order.
        #[test]
        fn a_choice_stays_within_its_budget(
            texts in proptest::collection::vec("(- [a-c ]{0,12}\n|[a-c ]{0,30}\n\n|\\| a \\| b \\|\n){0,12}", 1..4),
            query in "[a-c ]{0,12}",
            budget in 0usize..60,
        ) {
            let docs: Vec<Document<&str>> = texts.iter().map(|t| Document::parse(t.as_str())).collect();
            let candidates: Vec<Candidate<'_>> = docs
                .iter()
                .enumerate()
                .map(|(i, d)| candidate(i, d, "b"))
                .collect();
            let chosen = choose(&query, &candidates, budget);
            let mut spent = 0;
            for g in &chosen {
                prop_assert!(g.units.windows(2).all(|w| w[0] < w[1]));
                for &u in &g.units {
                    let c = &candidates[g.candidate];
                    spent += estimate_tokens(&c.unit_text(&c.units[u]));
                }
            }
            prop_assert!(spent <= budget);
        }
    }

    fn candidate<'a>(rank: usize, doc: &'a Document<&'a str>, heading: &'a str) -> Candidate<'a> {
        Candidate {
            rank,
            source: doc.source(),
            heading,
            // A test's units live as long as the test process.
            units: Box::leak(doc.passage_units(doc.body_range()).into_boxed_slice()),
        }
    }

    fn chosen_text(candidates: &[Candidate<'_>], chosen: &[Chosen]) -> Vec<String> {
        chosen
            .iter()
            .flat_map(|g| {
                g.units
                    .iter()
                    .map(|&u| candidates[g.candidate].unit_text(&candidates[g.candidate].units[u]))
            })
            .collect()
    }

    #[test]
    fn the_unit_with_the_rarest_words_comes_first_and_fillers_do_not_count() {
        let a = Document::parse(
            "The stream emits data.\n\nIf the source errors, the destination is not closed automatically.\n\nThe stream ends.\n",
        );
        let c = [candidate(0, &a, "Stream › pipe")];
        let chosen = choose(
            "does the destination get closed when the source errors?",
            &c,
            1000,
        );
        assert_eq!(
            chosen_text(&c, &chosen),
            ["If the source errors, the destination is not closed automatically."]
        );
    }

    #[test]
    fn the_budget_caps_what_is_chosen_and_smaller_units_fill_it() {
        let long = format!("timeout {}\n\nshort timeout note.\n", "word ".repeat(400));
        let a = Document::parse(long.as_str());
        let c = [candidate(0, &a, "Server")];
        let chosen = choose("timeout", &c, 50);
        assert_eq!(chosen_text(&c, &chosen), ["short timeout note."]);
        assert!(choose("timeout", &c, 0).is_empty());
    }

    #[test]
    fn a_long_unit_must_hold_more_than_a_paragraph() {
        let long = format!("gzip memory stream {}\n", "filler ".repeat(600));
        let a = Document::parse(long.as_str());
        let b = Document::parse("The gzip memory is 256K.\n");
        let c = [candidate(0, &a, "Zlib"), candidate(0, &b, "Zlib")];
        let chosen = choose("gzip memory stream", &c, 4000);
        assert_eq!(chosen.first().map(|g| g.candidate), Some(1), "{chosen:?}");
    }

    #[test]
    fn a_block_ending_in_a_colon_brings_the_block_it_introduces() {
        let a = Document::parse(
            "To shrink the memory, set:\n\n```js\nconst options = { windowBits: 14 };\n```\n\nMore text.\n",
        );
        let c = [candidate(0, &a, "Zlib")];
        let chosen = choose("shrink memory", &c, 1000);
        assert_eq!(
            chosen_text(&c, &chosen),
            [
                "To shrink the memory, set:",
                "```js\nconst options = { windowBits: 14 };\n```"
            ]
        );
        // Not when it does not fit.
        let tight = estimate_tokens("To shrink the memory, set:");
        assert_eq!(
            chosen_text(&c, &choose("shrink memory", &c, tight)),
            ["To shrink the memory, set:"]
        );
    }

    #[test]
    fn a_heading_match_gives_the_opening_first_and_a_list_its_newest_item() {
        let a = Document::parse("Lumen is a lamp.\n\nMore about it.\n");
        let c = [candidate(0, &a, "Lumen")];
        let chosen = choose("what is Lumen", &c, 8);
        assert_eq!(chosen_text(&c, &chosen), ["Lumen is a lamp."]);
        let b = Document::parse("- 2024-01: phase 1\n- 2024-03: phase 2\n- 2024-06: phase 3\n");
        let c = [candidate(0, &b, "Roadmap › Status")];
        let chosen = choose("status", &c, 8);
        assert_eq!(chosen_text(&c, &chosen), ["- 2024-06: phase 3"]);
    }

    #[test]
    fn groups_come_best_first_and_hold_their_units_in_source_order() {
        let a = Document::parse("Nothing here.\n\nA word on caching.\n");
        let b = Document::parse("Caching of inodes.\n\nWatch inodes when caching.\n");
        let c = [candidate(0, &a, "A"), candidate(1, &b, "B")];
        let chosen = choose("inodes caching", &c, 1000);
        assert_eq!(chosen[0].candidate, 1);
        assert_eq!(chosen[0].units, vec![0, 1]);
        assert_eq!(
            chosen[1],
            Chosen {
                candidate: 0,
                units: vec![1]
            }
        );
    }

    #[test]
    fn a_table_row_is_counted_and_shown_with_its_header() {
        let a = Document::parse(
            "| Flag | Meaning |\n|---|---|\n| `r` | read only |\n| `w` | write |\n",
        );
        let c = [candidate(0, &a, "Flags")];
        let chosen = choose("read only flag", &c, 1000);
        assert_eq!(
            chosen_text(&c, &chosen)[0],
            "| Flag | Meaning |\n|---|---|\n| `r` | read only |"
        );
    }
}
