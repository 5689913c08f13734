//! The prompts: short plans that use the tools and ask for `url#anchor`
//! citations, so answers can be checked.

/// Plan for getting oriented in a document or folder.
pub fn orient(url: &str) -> String {
    format!(
        "Get oriented in {url} economically.\n\
         1. mark_fetch {{url: \"{url}\"}}: a small document comes whole, a large one as an outline with anchors (a folder: use mark_list).\n\
         2. Pick the two or three sections that matter and fetch them in one call with anchors: [..].\n\
         3. Follow links only when the sections point there; use mark_lookup for names you do not know.\n\
         Summarize what it is, its current state and open questions, citing every fact as url#anchor."
    )
}

/// Plan for recalling what the knowledge base says about a subject.
pub fn recall(subject: &str) -> String {
    format!(
        "Recall what the knowledge base says about: {subject}.\n\
         1. mark_lookup {{query: \"{subject}\"}}; if it finds little, try match: \"body\" or fewer words.\n\
         2. mark_fetch the best hits as url#anchor sections (several at once with anchors), not whole documents.\n\
         3. Stop when the facts agree; note any contradictions and which source is newer (mark_versions).\n\
         Answer briefly and cite every fact as url#anchor."
    )
}

/// Plan for finding what changed recently.
pub fn whats_new(since: Option<&str>) -> String {
    let since = since.map(str::trim).filter(|s| !s.is_empty());
    let filter = match since {
        Some(s) => format!("filter: \"modified-after={s}\""),
        None => "a modified-after filter for the last week".to_string(),
    };
    let when = since.map_or_else(|| "recently".to_string(), |s| format!("since {s}"));
    format!(
        "Find what changed {when}.\n\
         1. mark_lookup {{query: \"*\", {filter}, limit: 20}} for the documents modified in that window.\n\
         2. For each, mark_versions to see the version step, then mark_fetch it: documents you read this session answer with which sections changed.\n\
         3. Fetch only the changed sections (url#anchor).\n\
         Report the changes grouped by document, newest first, citing url#anchor."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_name_their_arguments_and_ask_for_citations() {
        assert!(orient("/projects/x.md").contains("mark_fetch {url: \"/projects/x.md\"}"));
        assert!(recall("harbour pilots").contains("query: \"harbour pilots\""));
        assert!(whats_new(Some("2026-11-01")).contains("modified-after=2026-11-01"));
        assert!(whats_new(None).contains("last week"));
        for p in [orient("/a.md"), recall("x"), whats_new(None)] {
            assert!(p.contains("url#anchor"));
        }
    }
}
