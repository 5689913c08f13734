//! Generated trees of linked markdown documents, for benchmarks that need
//! many documents (explore's crawl, LOOKUP's index): a web-style tree
//! and an Obsidian-style vault.

use std::io;
use std::path::Path;

/// Body-search queries over a [`write_linked_tree`] tree, from ones that
/// match nearly every section to ones that match a few; the lookup
/// benchmarks share them.
pub const LINKED_TREE_QUERIES: [&str; 6] = [
    "opening paragraph",
    "document 42 folder 7",
    "hub 7",
    "text of part 2",
    "cut like a real one",
    "doc 12-40",
];

/// Writes `docs` documents into `root`: 100 folders `fNN/` of `dNNN.md`
/// (~1 KB each: a title, an opening paragraph, three `## Part N` sections)
/// with 15 links per document, 12 to documents of other folders and 3 to
/// one of 20 hubs in `/hubs/`.
pub fn write_linked_tree(root: &Path, docs: usize) -> io::Result<()> {
    let per = (docs / 100).max(1);
    std::fs::create_dir_all(root.join("hubs"))?;
    for h in 0..20 {
        std::fs::write(
            root.join(format!("hubs/hub-{h}.md")),
            format!("# Hub {h}\n\nA hub every tenth document links to.\n"),
        )?;
    }
    for f in 0..100 {
        let folder = root.join(format!("f{f:02}"));
        std::fs::create_dir_all(&folder)?;
        for d in 0..per {
            let mut text = format!(
                "# Document {f}-{d}\n\nThe opening paragraph of document {d} in folder {f}, \
                 long enough to be cut like a real one would be.\n"
            );
            for s in 0..3 {
                text.push_str(&format!("\n## Part {s}\n\nText of part {s}. See "));
                for l in 0..4 {
                    let (tf, td) = ((f + s * 7 + l + 1) % 100, (d * 3 + l + s) % per);
                    text.push_str(&format!(
                        "[doc {tf}-{td}](../f{tf:02}/d{td:03}.md#part-{l}), "
                    ));
                }
                text.push_str(&format!("and [hub](/hubs/hub-{}.md).\n", (d + s) % 20));
            }
            std::fs::write(folder.join(format!("d{d:03}.md")), text)?;
        }
    }
    Ok(())
}

/// The name of note `i` of [`write_vault`] (a file name with spaces, no
/// `.md`): what a wiki link to it says.
pub fn vault_note_name(i: usize) -> String {
    format!("Topic {i:05} field notes")
}

/// Writes an Obsidian-style vault of `notes` notes into `root`: 40 folders
/// `Area NN/` of `Topic NNNNN field notes.md` (~1 KB each: frontmatter tags
/// and an alias, a title, an opening paragraph with an inline tag, two
/// `## Part N` sections) with 10 wiki links by note name each (plain,
/// `#Part 1` headings and `|shown text`), 8 to notes of other folders and
/// 2 to one of 20 hub notes (the first 20 notes).
pub fn write_vault(root: &Path, notes: usize) -> io::Result<()> {
    let notes = notes.max(21);
    for area in 0..40 {
        std::fs::create_dir_all(root.join(format!("Area {area:02}")))?;
    }
    for i in 0..notes {
        let name = vault_note_name(i);
        let mut text = format!(
            "---\ntags: [area-{area}, field]\naliases: [Note {i}]\n---\n# {name}\n\n\
             The opening paragraph of note {i}, written the way a person keeps notes, \
             #status/draft, long enough to be cut like a real one would be.\n",
            area = i % 40
        );
        for part in 0..2 {
            text.push_str(&format!("\n## Part {part}\n\nText of part {part}. See "));
            for l in 0..5 {
                let k = part * 5 + l;
                let target = if k < 2 {
                    (i + k) % 20
                } else {
                    (i * 7 + k * 131 + 1) % notes
                };
                let target = vault_note_name(target);
                match l % 3 {
                    0 => text.push_str(&format!("[[{target}]], ")),
                    1 => text.push_str(&format!("[[{target}#Part 1]], ")),
                    _ => text.push_str(&format!("[[{target}|that note]], ")),
                }
            }
            text.push_str("and more.\n");
        }
        std::fs::write(root.join(format!("Area {:02}/{name}.md", i % 40)), text)?;
    }
    Ok(())
}

/// The folder of note `i` in a [`write_folder_per_note`] vault, and the
/// note's name (the same).
pub fn folder_note_name(i: usize) -> String {
    format!("Note {i:05}")
}

/// Writes a folder-per-note vault of `notes` notes into `root` (the layout
/// of Hugo and Docusaurus page bundles): `Note NNNNN/Note NNNNN.md`, so the
/// root lists `notes` folders and a crawl sends a listing per note. Each
/// note has a `## Heading` and links `[[Note 00000]]` (the hub) and one
/// other note by name; the hub links the last note by its folder path,
/// `[[Note NNNNN/Note NNNNN#Heading]]`.
pub fn write_folder_per_note(root: &Path, notes: usize) -> io::Result<()> {
    let notes = notes.max(2);
    for i in 0..notes {
        let name = folder_note_name(i);
        let other = folder_note_name((i * 7 + 1) % notes);
        let mut text = format!(
            "# {name}\n\nThe opening of note {i}: see [[{}]] and [[{other}]].\n\n\
             ## Heading\n\nThe heading's text.\n",
            folder_note_name(0)
        );
        if i == 0 {
            let last = folder_note_name(notes - 1);
            text.push_str(&format!(
                "\nThe last note's heading: [[{last}/{last}#Heading]].\n"
            ));
        }
        let folder = root.join(&name);
        std::fs::create_dir_all(&folder)?;
        std::fs::write(folder.join(format!("{name}.md")), text)?;
    }
    Ok(())
}

/// The path of note `k` of folder `f` in a [`write_shared_names`] vault.
pub fn shared_name_path(f: usize, k: usize) -> String {
    format!("/Folder {f:03}/Note {k:03}.md")
}

/// Writes `folders` folders `Folder FFF/` of `per` notes each, named
/// `Note KKK.md` in every folder, so each note name is shared by
/// `folders` notes and every `[[Note KKK]]` link is resolved by the vault
/// rule (the nearest). Each note links 8 names (`[[Note KKK]]`,
/// `[[Note KKK#Part]]`) and one note of another folder by its folder path.
pub fn write_shared_names(root: &Path, folders: usize, per: usize) -> io::Result<()> {
    let per = per.max(1);
    for f in 0..folders {
        std::fs::create_dir_all(root.join(format!("Folder {f:03}")))?;
        for k in 0..per {
            let mut text = format!(
                "# Note {k:03} of folder {f}\n\nThe opening of note {k} in folder {f}.\n\n## Part\n\nSee "
            );
            for l in 0..8 {
                let to = (k * 13 + l * 29 + 1) % per;
                if l % 2 == 0 {
                    text.push_str(&format!("[[Note {to:03}]], "));
                } else {
                    text.push_str(&format!("[[Note {to:03}#Part]], "));
                }
            }
            let away = (f * 31 + k + 1) % folders;
            text.push_str(&format!("and [[Folder {away:03}/Note {k:03}]].\n"));
            std::fs::write(
                root.join(shared_name_path(f, k).trim_start_matches('/')),
                text,
            )?;
        }
    }
    Ok(())
}
