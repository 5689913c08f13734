//! The path table: every document path the graph has seen, interned once as a `u32` id.

use std::collections::HashMap;
use std::mem::size_of;
use std::sync::Arc;

use crate::error::GraphError;

/// Longest path the graph accepts: the protocol's request line is at most 4096 bytes.
const MAX_PATH_BYTES: usize = 4096;

/// Index of an interned path. `u32::MAX` is reserved (edges use it to mean "external").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct PathId(u32);

impl PathId {
    /// The reserved value, never handed out for a path.
    pub(crate) const RESERVED: u32 = u32::MAX;

    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }

    pub(crate) fn raw(self) -> u32 {
        self.0
    }

    /// The id behind a raw value, `None` for the reserved one.
    pub(crate) fn from_raw(raw: u32) -> Option<PathId> {
        (raw != Self::RESERVED).then_some(PathId(raw))
    }
}

/// Interned paths. One allocation per distinct path, shared by the id list and the hash index.
/// A path nothing refers to any more is [released](PathTable::release) and its id reused, so
/// the table holds the paths the graph uses now, not every path a session ever saw.
#[derive(Debug, Default)]
pub(crate) struct PathTable {
    by_id: Vec<Arc<str>>,
    ids: HashMap<Arc<str>, PathId>,
    /// Released ids, handed out again before new ones.
    free: Vec<PathId>,
}

/// Bytes one live path costs besides its text: its slot in the id list, its hash-index
/// entry (at the 7/8 load factor, with its control byte) and its `Arc` counters.
pub(crate) const PATH_OVERHEAD_BYTES: usize =
    size_of::<Arc<str>>() + (size_of::<(Arc<str>, PathId)>() + 1) * 8 / 7 + 2 * size_of::<usize>();

impl PathTable {
    /// The id of `path`, adding it if new. The caller has checked the path is canonical.
    pub(crate) fn intern(&mut self, path: &str) -> Result<PathId, GraphError> {
        if let Some(&id) = self.ids.get(path) {
            return Ok(id);
        }
        let shared: Arc<str> = Arc::from(path);
        if let Some(id) = self.free.pop() {
            self.by_id[id.index()] = Arc::clone(&shared);
            self.ids.insert(shared, id);
            return Ok(id);
        }
        let raw = u32::try_from(self.by_id.len())
            .ok()
            .filter(|&raw| raw != PathId::RESERVED)
            .ok_or(GraphError::Full { what: "paths" })?;
        self.by_id.push(Arc::clone(&shared));
        self.ids.insert(shared, PathId(raw));
        Ok(PathId(raw))
    }

    /// Forgets `id`'s path; the id is handed out again for a later path. The caller has
    /// checked that nothing refers to `id` any more. Returns whether it was held.
    pub(crate) fn release(&mut self, id: PathId) -> bool {
        let Some(slot) = self.by_id.get_mut(id.index()) else {
            return false;
        };
        if self.ids.remove(&**slot).is_none() {
            return false;
        }
        *slot = Arc::from("");
        self.free.push(id);
        true
    }

    pub(crate) fn get(&self, path: &str) -> Option<PathId> {
        self.ids.get(path).copied()
    }

    pub(crate) fn path(&self, id: PathId) -> &str {
        // Ids only come from this table, so the index is in range.
        self.by_id.get(id.index()).map_or("", |p| p)
    }

    /// Slots in the id list, released ones included: the length of the graph's per-id tables.
    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Paths held now (released ones not counted).
    pub(crate) fn live(&self) -> usize {
        self.ids.len()
    }

    /// Heap bytes: the id list, the hash index (buckets at a 7/8 load factor plus one control
    /// byte each) and each string with its `Arc` counters.
    pub(crate) fn approx_bytes(&self) -> usize {
        let list = self.by_id.capacity() * size_of::<Arc<str>>();
        let buckets = (self.ids.capacity() * 8 / 7).next_power_of_two();
        let index = buckets * (size_of::<(Arc<str>, PathId)>() + 1);
        let strings: usize = self
            .by_id
            .iter()
            .map(|p| p.len() + 2 * size_of::<usize>())
            .sum();
        list + index + strings + self.free.capacity() * size_of::<PathId>()
    }
}

/// Checks that `path` is a canonical document path: absolute, no empty, `.` or `..` segment,
/// no trailing `/`, no control character, at most 4096 bytes. The path is percent-decoded,
/// so a `#`, `?` or `%` in it is part of a file name (`/hash#name.md`), never a fragment.
pub fn check_canonical(path: &str) -> Result<(), GraphError> {
    let reason = if !path.starts_with('/') {
        Some("it does not start with `/`")
    } else if path.len() > MAX_PATH_BYTES {
        Some("it is longer than 4096 bytes")
    } else if path.ends_with('/') {
        Some("it names a directory")
    } else if path.chars().any(char::is_control) {
        Some("it holds a control character")
    } else if path[1..]
        .split('/')
        .any(|segment| matches!(segment, "" | "." | ".."))
    {
        Some("it has an empty, `.` or `..` segment")
    } else {
        None
    };
    match reason {
        None => Ok(()),
        Some(reason) => Err(GraphError::NotCanonical {
            path: crate::text::truncate(path, 200).into_owned(),
            reason,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_gives_one_id_per_path() {
        let mut table = PathTable::default();
        let a = table.intern("/a.md").unwrap();
        let b = table.intern("/dir/b.md").unwrap();
        assert_eq!(table.intern("/a.md").unwrap(), a);
        assert_ne!(a, b);
        assert_eq!(table.path(b), "/dir/b.md");
        assert_eq!(table.get("/dir/b.md"), Some(b));
        assert_eq!(table.get("/c.md"), None);
        assert_eq!(table.len(), 2);
        assert!(table.approx_bytes() >= "/a.md".len() + "/dir/b.md".len());
    }

    #[test]
    fn a_released_path_is_forgotten_and_its_id_reused() {
        let mut table = PathTable::default();
        let a = table.intern("/a.md").unwrap();
        let b = table.intern("/b.md").unwrap();
        assert!(table.release(a));
        assert_eq!(table.get("/a.md"), None);
        assert_eq!(table.live(), 1);
        assert!(!table.release(a), "released once only");
        let c = table.intern("/c.md").unwrap();
        assert_eq!(c, a, "the released id is handed out again");
        assert_eq!(table.path(c), "/c.md");
        assert_eq!(table.get("/b.md"), Some(b));
        assert_eq!((table.len(), table.live()), (2, 2));
    }

    #[test]
    fn canonical_paths_are_accepted() {
        for path in [
            "/a.md",
            "/dir/sub/b.md",
            "/with space.md",
            "/é/ü.md",
            "/.well-known/x.md",
            "/hash#name.md",
            "/q?name.md",
            "/pct%20name.md",
        ] {
            assert_eq!(check_canonical(path), Ok(()), "{path}");
        }
    }

    #[test]
    fn non_canonical_paths_are_refused_with_a_reason() {
        for (path, reason) in [
            ("a.md", "it does not start with `/`"),
            ("/dir/", "it names a directory"),
            ("/", "it names a directory"),
            ("/a\n.md", "it holds a control character"),
            ("//a.md", "it has an empty, `.` or `..` segment"),
            ("/x/../a.md", "it has an empty, `.` or `..` segment"),
            ("/./a.md", "it has an empty, `.` or `..` segment"),
        ] {
            match check_canonical(path) {
                Err(GraphError::NotCanonical { reason: got, .. }) => {
                    assert_eq!(got, reason, "{path:?}")
                }
                other => panic!("{path:?}: {other:?}"),
            }
        }
        let long = format!("/{}", "a".repeat(5000));
        let err = check_canonical(&long).unwrap_err();
        assert!(
            err.to_string().len() < 600,
            "the message quotes a bounded path"
        );
    }
}
