//! Completion of workspace paths for `@` references: what a person typed after `@` against
//! the walked workspace ([`index`]), fuzzy and path-aware (`nucleo-matcher`, the matcher
//! Helix uses, with its path bonuses: a match right after a `/` counts more), best first.
//!
//! Rules, in the order they apply:
//! - the query is cleaned first: control characters (NUL included) removed, cut to
//!   [`MAX_QUERY_CHARS`], a leading `"` (and a closing one) dropped, a leading workspace
//!   path or `/` and `./` dropped;
//! - an empty query lists the top of the workspace, folders first;
//! - a `dir/` prefix naming a folder of the workspace narrows to that folder: the rest is
//!   matched against paths inside it (an empty rest lists the folder itself);
//! - an unquoted query is split on spaces into words that must all match; a quoted one is
//!   one needle, spaces included;
//! - hidden paths (a component starting with `.`) are offered only when the query has a
//!   word or a component starting with `.`; `.git` is never offered;
//! - ties go to the shorter path, then to the path that sorts first.
//!
//! Every answer comes from the index, so nothing outside the workspace can be named, whatever
//! the query holds (`..`, an absolute path).

pub mod index;

use std::path::Path;

use coder_protocol::methods::{PathKind, PathMatch};
use nucleo_matcher::pattern::{Atom, AtomKind, CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};

pub use index::PathIndex;
use index::{Entry, Snapshot};

/// A query longer than this is cut (no path a person types is longer).
pub const MAX_QUERY_CHARS: usize = 512;

/// Matches when a client does not say how many it wants.
pub const DEFAULT_LIMIT: usize = 50;

/// The most matches one answer holds.
pub const MAX_LIMIT: usize = 1000;

/// The workspace paths of `index` that match `query`, best first, at most `limit` (clamped
/// to `1..=MAX_LIMIT`). Never waits for a walk, except at most
/// [`index::FIRST_WALK_WAIT`] for the index's first.
pub fn complete(index: &PathIndex, query: &str, limit: usize) -> Vec<PathMatch> {
    let limit = limit.clamp(1, MAX_LIMIT);
    let query = Query::parse(query, index.root());
    let snapshot = index.snapshot();
    let (folder, rest) = narrow(&snapshot, &query.text);
    let candidates = snapshot.entries.iter().filter(|entry| {
        folder.is_none_or(|folder| inside(&entry.path, folder))
            && (query.wants_hidden || !entry.hidden)
    });
    if rest.is_empty() {
        return listing(candidates, folder, limit);
    }
    let pattern = query.pattern(rest);
    let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
    let mut buf = Vec::new();
    // Score everything first, then compute positions only for what is returned.
    let mut scored: Vec<(u32, &Entry)> = candidates
        .filter_map(|entry| {
            let haystack = Utf32Str::new(&entry.path, &mut buf);
            pattern.score(haystack, &mut matcher).map(|s| (s, entry))
        })
        .collect();
    scored.sort_unstable_by(|(a_score, a), (b_score, b)| {
        b_score
            .cmp(a_score)
            .then(a.path.len().cmp(&b.path.len()))
            .then(a.path.cmp(&b.path))
    });
    scored
        .into_iter()
        .take(limit)
        .map(|(_, entry)| {
            let mut indices = Vec::new();
            let haystack = Utf32Str::new(&entry.path, &mut buf);
            pattern.indices(haystack, &mut matcher, &mut indices);
            indices.sort_unstable();
            indices.dedup();
            to_match(entry, indices)
        })
        .collect()
}

/// A cleaned query.
struct Query {
    text: String,
    quoted: bool,
    wants_hidden: bool,
}

impl Query {
    fn parse(raw: &str, root: &Path) -> Self {
        let mut text: String = raw
            .chars()
            .filter(|c| !c.is_control())
            .take(MAX_QUERY_CHARS)
            .collect();
        let quoted = text.starts_with('"');
        if quoted {
            text.remove(0);
            if text.ends_with('"') {
                text.pop();
            }
        } else {
            text = text.trim().to_owned();
        }
        if let Some(rest) = root
            .to_str()
            .and_then(|root| text.strip_prefix(root))
            .filter(|rest| rest.is_empty() || rest.starts_with('/'))
        {
            text = rest.to_owned();
        }
        while let Some(rest) = text.strip_prefix('/').or_else(|| text.strip_prefix("./")) {
            text = rest.to_owned();
        }
        let wants_hidden = text
            .split(['/', ' '])
            .any(|part| part.starts_with('.') && part != "." && part != "..");
        Self {
            text,
            quoted,
            wants_hidden,
        }
    }

    fn pattern(&self, text: &str) -> Pattern {
        if self.quoted {
            let atom = Atom::new(
                text,
                CaseMatching::Smart,
                Normalization::Smart,
                AtomKind::Fuzzy,
                false,
            );
            let mut pattern = Pattern::default();
            pattern.atoms.push(atom);
            pattern
        } else {
            Pattern::new(
                text,
                CaseMatching::Smart,
                Normalization::Smart,
                AtomKind::Fuzzy,
            )
        }
    }
}

/// The longest `dir/` prefix of `query` that names a folder of the index, and the rest.
fn narrow<'q>(snapshot: &Snapshot, query: &'q str) -> (Option<&'q str>, &'q str) {
    let mut cut = query.len();
    while let Some(slash) = query[..cut].rfind('/') {
        let folder = &query[..slash];
        let is_folder = snapshot
            .entries
            .binary_search_by(|entry| entry.path.as_str().cmp(folder))
            .is_ok_and(|at| snapshot.entries[at].is_dir);
        if is_folder {
            return (Some(folder), &query[slash + 1..]);
        }
        cut = slash;
    }
    (None, query)
}

fn inside(path: &str, folder: &str) -> bool {
    path.strip_prefix(folder)
        .is_some_and(|rest| rest.len() > 1 && rest.starts_with('/'))
}

/// The direct children of `folder` (or of the workspace), folders first, by name.
fn listing<'a>(
    candidates: impl Iterator<Item = &'a Entry>,
    folder: Option<&str>,
    limit: usize,
) -> Vec<PathMatch> {
    let depth = folder.map_or(0, |folder| folder.split('/').count());
    let mut children: Vec<&Entry> = candidates
        .filter(|entry| entry.path.split('/').count() == depth + 1)
        .collect();
    children.sort_by(|a, b| b.is_dir.cmp(&a.is_dir).then(a.path.cmp(&b.path)));
    children
        .into_iter()
        .take(limit)
        .map(|entry| to_match(entry, Vec::new()))
        .collect()
}

fn to_match(entry: &Entry, indices: Vec<u32>) -> PathMatch {
    let (path, kind) = if entry.is_dir {
        (format!("{}/", entry.path), PathKind::Dir)
    } else {
        (entry.path.clone(), PathKind::File)
    };
    PathMatch {
        path,
        kind,
        indices,
    }
}

#[cfg(test)]
mod tests;
