//! A generated tree of linked markdown documents, for benchmarks that need
//! many documents (explore's crawl, LOOKUP's index).

use std::io;
use std::path::Path;

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
