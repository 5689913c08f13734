//! The catalog file of a persisted index: what LOOKUP keeps of each
//! document outside the text index (stamp, title, tags, sections, links)
//! and what its entries add to the BM25 statistics, written beside the
//! tantivy commit it describes, so a new process reads the index without
//! reading the documents again.
//!
//! One binary file, written whole to a temporary name, synced and renamed:
//! a reader sees an old file or a new one, never half of one. It opens
//! with a magic and [`INDEX_FORMAT`] and ends with the SHA-256 of what
//! precedes it: a file of another format, cut short or damaged is an
//! error, never read as a catalog.

use super::{INDEX_FORMAT, IndexedDoc, LinkKey, SectionInfo};
use crate::paths::SafePath;
use crate::store::Stamp;
use crate::text_index::Live;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};
use tantivy::schema::Field;

const MAGIC: &[u8; 8] = b"MARKCAT\0";
const DIGEST: usize = 32;

/// What a catalog file holds.
pub(super) struct Saved {
    /// The next key no row or link has had.
    pub next_ord: u64,
    /// When it was written, in nanoseconds since the epoch.
    pub saved_at_ns: i128,
    pub docs: Vec<(SafePath, IndexedDoc)>,
    /// The indexed links, by key.
    pub links: Vec<(u64, LinkKey)>,
    /// What each document's entries add to the statistics, by its encoded path.
    pub live: HashMap<String, Live>,
}

/// Nanoseconds since the epoch (before it: negative).
pub(super) fn nanos(at: SystemTime) -> i128 {
    match at.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

/// The bytes of a catalog file.
pub(super) fn encode(
    docs: &BTreeMap<SafePath, IndexedDoc>,
    links: &HashMap<u64, LinkKey>,
    next_ord: u64,
    live: &HashMap<String, Live>,
    now: SystemTime,
) -> Vec<u8> {
    let mut out = Out(Vec::with_capacity(docs.len() * 512));
    out.0.extend_from_slice(MAGIC);
    out.u32(INDEX_FORMAT);
    out.i128(nanos(now));
    out.u64(next_ord);
    out.u64(docs.len() as u64);
    for (path, d) in docs {
        out.path(path);
        out.u64(d.stamp.version);
        out.bool(d.stamp.archived);
        out.u64(d.stamp.len);
        out.i128(d.stamp.mtime_ns);
        out.str(&d.title);
        out.u32(d.tags.len() as u32);
        for t in &d.tags {
            out.str(t);
        }
        out.u64(d.importance.to_bits());
        out.bool(d.modified.is_some());
        out.u64(d.modified.unwrap_or(0) as u64);
        out.str(&d.content_hash);
        out.u64(d.ord);
        out.u64(d.bytes);
        out.u32(d.sections.len() as u32);
        for s in &d.sections {
            out.u64(s.ord);
            out.opt_str(s.anchor.as_deref());
            out.opt_str(s.heading.as_deref());
            out.str(&s.above);
            out.u32(s.bytes);
        }
        let held: Vec<(u64, &LinkKey)> = d
            .links
            .iter()
            .filter_map(|ord| links.get(ord).map(|l| (*ord, l)))
            .collect();
        out.u32(held.len() as u32);
        for (ord, l) in held {
            out.u64(ord);
            out.path(&l.target);
            out.str(&l.anchor);
        }
        match live.get(&d.encoded) {
            Some(l) => {
                out.bool(true);
                out.u64(l.links);
                out.u64(l.others);
                let mut tokens: Vec<(u32, u64)> =
                    l.tokens.iter().map(|(f, n)| (f.field_id(), *n)).collect();
                tokens.sort_unstable();
                out.u32(tokens.len() as u32);
                for (field, n) in tokens {
                    out.u32(field);
                    out.u64(n);
                }
            }
            None => out.bool(false),
        }
    }
    let digest = Sha256::digest(&out.0);
    out.0.extend_from_slice(&digest);
    out.0
}

/// Writes `bytes` at `path` whole or not at all (a temporary file in the
/// same folder, synced, renamed, the folder synced).
pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let folder = path
        .parent()
        .ok_or_else(|| io::Error::other("a catalog file needs a folder"))?;
    let mut file = tempfile::Builder::new()
        .prefix(super::persisted::CATALOG_PREFIX)
        .suffix(".tmp")
        .tempfile_in(folder)?;
    file.write_all(bytes)?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    std::fs::File::open(folder)?.sync_all()
}

/// Reads the catalog file at `path`; `field` maps tantivy's field ids to
/// the index's fields.
pub(super) fn read(path: &Path, field: impl Fn(u32) -> Option<Field>) -> io::Result<Saved> {
    let bytes = std::fs::read(path)?;
    decode(&bytes, field).map_err(|why| io::Error::new(io::ErrorKind::InvalidData, why))
}

fn decode(bytes: &[u8], field: impl Fn(u32) -> Option<Field>) -> Result<Saved, String> {
    if bytes.len() < MAGIC.len() + 4 + DIGEST || &bytes[..MAGIC.len()] != MAGIC {
        return Err("not a catalog file".into());
    }
    let (body, digest) = bytes.split_at(bytes.len() - DIGEST);
    if Sha256::digest(body).as_slice() != digest {
        return Err("its checksum does not match (cut short or damaged)".into());
    }
    let mut r = In {
        buf: body,
        at: MAGIC.len(),
    };
    let format = r.u32()?;
    if format != INDEX_FORMAT {
        return Err(format!("format {format}, not {INDEX_FORMAT}"));
    }
    let saved_at_ns = r.i128()?;
    let next_ord = r.u64()?;
    let count = r.u64()?;
    let mut docs = Vec::new();
    let mut links = Vec::new();
    let mut live = HashMap::new();
    for _ in 0..count {
        let path = r.path()?;
        let stamp = Stamp {
            version: r.u64()?,
            archived: r.bool()?,
            len: r.u64()?,
            mtime_ns: r.i128()?,
        };
        let title = r.str()?;
        let tags = (0..r.u32()?).map(|_| r.str()).collect::<Result<_, _>>()?;
        let importance = f64::from_bits(r.u64()?);
        let known = r.bool()?;
        let modified = r.u64()? as i64;
        let content_hash = r.str()?;
        let ord = r.u64()?;
        let doc_bytes = r.u64()?;
        let mut sections = Vec::new();
        for _ in 0..r.u32()? {
            sections.push(SectionInfo {
                ord: r.u64()?,
                anchor: r.opt_str()?,
                heading: r.opt_str()?,
                above: r.str()?,
                bytes: r.u32()?,
            });
        }
        let mut doc_links = Vec::new();
        for _ in 0..r.u32()? {
            let link = r.u64()?;
            let target = r.path()?;
            let anchor = r.str()?;
            doc_links.push(link);
            links.push((
                link,
                LinkKey {
                    source: ord,
                    target,
                    anchor,
                },
            ));
        }
        let encoded = path.encoded();
        if r.bool()? {
            let mut l = Live {
                links: r.u64()?,
                others: r.u64()?,
                ..Live::default()
            };
            for _ in 0..r.u32()? {
                let id = r.u32()?;
                let n = r.u64()?;
                let f = field(id).ok_or_else(|| format!("no field {id} in the index"))?;
                l.tokens.insert(f, n);
            }
            live.insert(encoded.clone(), l);
        }
        docs.push((
            path,
            IndexedDoc {
                stamp,
                encoded,
                title,
                tags,
                importance,
                modified: known.then_some(modified),
                content_hash,
                ord,
                bytes: doc_bytes,
                sections,
                links: doc_links,
            },
        ));
    }
    if r.at != body.len() {
        return Err("bytes follow its last document".into());
    }
    Ok(Saved {
        next_ord,
        saved_at_ns,
        docs,
        links,
        live,
    })
}

struct Out(Vec<u8>);

impl Out {
    fn u32(&mut self, n: u32) {
        self.0.extend_from_slice(&n.to_le_bytes());
    }
    fn u64(&mut self, n: u64) {
        self.0.extend_from_slice(&n.to_le_bytes());
    }
    fn i128(&mut self, n: i128) {
        self.0.extend_from_slice(&n.to_le_bytes());
    }
    fn bool(&mut self, b: bool) {
        self.0.push(u8::from(b));
    }
    fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn opt_str(&mut self, s: Option<&str>) {
        self.bool(s.is_some());
        self.str(s.unwrap_or(""));
    }
    fn path(&mut self, p: &SafePath) {
        self.bool(p.is_dir_form());
        self.u32(p.segments().len() as u32);
        for s in p.segments() {
            self.str(s);
        }
    }
}

/// A reader over a catalog file's bytes: every read is bounds-checked.
struct In<'a> {
    buf: &'a [u8],
    at: usize,
}

impl In<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let end = self.at.checked_add(N).filter(|e| *e <= self.buf.len());
        let end = end.ok_or("it ends early")?;
        let mut out = [0; N];
        out.copy_from_slice(&self.buf[self.at..end]);
        self.at = end;
        Ok(out)
    }
    fn u32(&mut self) -> Result<u32, String> {
        self.take().map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Result<u64, String> {
        self.take().map(u64::from_le_bytes)
    }
    fn i128(&mut self) -> Result<i128, String> {
        self.take().map(i128::from_le_bytes)
    }
    fn bool(&mut self) -> Result<bool, String> {
        match self.take::<1>()? {
            [0] => Ok(false),
            [1] => Ok(true),
            _ => Err("a flag is neither 0 nor 1".into()),
        }
    }
    fn str(&mut self) -> Result<String, String> {
        let len = self.u32()? as usize;
        let end = self.at.checked_add(len).filter(|e| *e <= self.buf.len());
        let end = end.ok_or("it ends early")?;
        let s = std::str::from_utf8(&self.buf[self.at..end]).map_err(|e| e.to_string())?;
        self.at = end;
        Ok(s.to_string())
    }
    fn opt_str(&mut self) -> Result<Option<String>, String> {
        let some = self.bool()?;
        let s = self.str()?;
        Ok(some.then_some(s))
    }
    fn path(&mut self) -> Result<SafePath, String> {
        let dir_form = self.bool()?;
        let segments = (0..self.u32()?)
            .map(|_| self.str())
            .collect::<Result<Vec<_>, _>>()?;
        SafePath::from_segments(segments, dir_form).ok_or_else(|| "an unsafe path".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_or_foreign_file_is_refused_with_its_reason() {
        let bytes = encode(
            &BTreeMap::new(),
            &HashMap::new(),
            7,
            &HashMap::new(),
            UNIX_EPOCH,
        );
        let saved = decode(&bytes, |_| None).unwrap();
        assert_eq!((saved.next_ord, saved.docs.len()), (7, 0));
        let why = |b: &[u8]| decode(b, |_| None).err().unwrap();
        assert_eq!(
            why(&bytes[..bytes.len() - 1]),
            "its checksum does not match (cut short or damaged)"
        );
        assert_eq!(why(b"{}"), "not a catalog file");
        let mut other = bytes.clone();
        other[MAGIC.len()] ^= 0xff;
        assert!(why(&other).contains("checksum"));
    }
}
