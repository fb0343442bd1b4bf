//! Walking the trees sync is given, as ripgrep walks them (`ignore`): `.gitignore`
//! (inside a git repository or not), `.ignore` and git's excludes are respected, hidden files and folders are skipped
//! except the agents' own (`.cursor`, `.windsurf`, `.continue`, `.claude`,
//! `.cursorrules`, `.windsurfrules`), symbolic links are not followed; files come in a
//! stable order.

use std::path::{Component, Path, PathBuf};

use super::{AGENT_ENTRIES, Format};
use crate::{Error, Result};

/// A file the walk found that sync reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Where it is on disk.
    pub path: PathBuf,
    /// Its path as documents record it: `/`-separated, without `.` components.
    pub name: String,
    /// Its path from the root it was found under (the project's root, for the folder an
    /// `AGENTS.md` is for).
    pub from_root: String,
    /// How it is read.
    pub format: Format,
}

/// What a walk found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Walked {
    /// The files sync reads, ordered by name, each once.
    pub files: Vec<Found>,
    /// Files of no format sync reads (left alone).
    pub other_files: usize,
    /// The walked paths as documents record paths ([`name_of`]): a document of a file
    /// under one of them that the walk did not find is a document of a file gone.
    pub roots: Vec<String>,
    /// What could not be walked (a folder that cannot be read, a name that is not
    /// UTF-8), as documents record paths, and why: what sync made under them stays.
    pub unreadable: Vec<(String, String)>,
}

impl Walked {
    /// Whether `name` (a recorded path) is under one of the walked roots.
    pub fn covers(&self, name: &str) -> bool {
        self.roots.iter().any(|root| {
            root == "." && !name.starts_with('/') && !name.starts_with("../")
                || name == root
                || name
                    .strip_prefix(root.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    }
}

/// Walks `paths` (files or folders), read from `base` when given (a relative path is
/// then taken from it, and every found file is named relative to it).
///
/// # Errors
///
/// [`ErrorKind::Io`](crate::ErrorKind::Io) naming a path that does not exist or cannot
/// be read (nothing is walked then: a mistyped path must not look like a deleted tree),
/// and a path that is not UTF-8.
pub fn walk(paths: &[PathBuf], base: Option<&Path>) -> Result<Walked> {
    let mut walked = Walked::default();
    let named = |path: &Path| match base.and_then(|base| path.strip_prefix(base).ok()) {
        Some(relative) => name_of(relative),
        None => name_of(path),
    };
    for given in paths {
        let path = match base {
            Some(base) => base.join(given),
            None => given.clone(),
        };
        let path = path.as_path();
        std::fs::metadata(path).map_err(|err| Error::io_at(path, err))?;
        walked.roots.push(named(path)?);
        // Hidden entries are skipped, except the agents' own folders and files.
        let walker = ignore::WalkBuilder::new(path)
            .standard_filters(true)
            .hidden(false)
            // A `.gitignore` says what is not wanted, in a git repository or not.
            .require_git(false)
            .filter_entry(|entry| {
                let name = entry.file_name().to_str().unwrap_or_default();
                entry.depth() == 0 || !name.starts_with('.') || AGENT_ENTRIES.contains(&name)
            })
            .follow_links(false)
            .sort_by_file_name(|a, b| a.cmp(b))
            .build();
        for entry in walker {
            // One folder that cannot be read, or one name that is not UTF-8, is reported;
            // the rest is walked.
            let entry = match entry {
                Ok(entry) => entry,
                Err(err) => {
                    let at = walk_error_path(&err).unwrap_or(path);
                    walked.unreadable.push((
                        named(at).unwrap_or_else(|_| at.display().to_string()),
                        err.to_string(),
                    ));
                    continue;
                }
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(name) = named(entry.path()) else {
                walked.other_files += 1;
                continue;
            };
            let from_root = match entry.path().strip_prefix(path) {
                Ok(rest) if !rest.as_os_str().is_empty() => name_of(rest)?,
                _ => entry.file_name().to_str().unwrap_or_default().to_string(),
            };
            let Some(format) = Format::of(Path::new(&name)) else {
                walked.other_files += 1;
                continue;
            };
            walked.files.push(Found {
                name,
                from_root,
                path: entry.into_path(),
                format,
            });
        }
    }
    walked.files.sort_by(|a, b| a.name.cmp(&b.name));
    walked.files.dedup_by(|a, b| a.name == b.name);
    walked.roots.sort();
    walked.roots.dedup();
    Ok(walked)
}

/// A path as documents record it: its components joined by `/`, `.` components left
/// out (`./docs//a.md` is `docs/a.md`; the current folder is `.`).
///
/// # Errors
///
/// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) for a path that is not
/// UTF-8.
pub fn name_of(path: &Path) -> Result<String> {
    let mut parts: Vec<&str> = Vec::new();
    let mut absolute = false;
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::RootDir => absolute = true,
            Component::Prefix(prefix) => {
                parts.push(prefix.as_os_str().to_str().ok_or_else(|| not_utf8(path))?)
            }
            Component::ParentDir => parts.push(".."),
            Component::Normal(part) => parts.push(part.to_str().ok_or_else(|| not_utf8(path))?),
        }
    }
    let joined = parts.join("/");
    Ok(match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    })
}

fn not_utf8(path: &Path) -> Error {
    Error::invalid_input(format!("path {} is not UTF-8", path.display()))
}

/// The path a walk error names, if any.
fn walk_error_path(err: &ignore::Error) -> Option<&Path> {
    match err {
        ignore::Error::WithPath { path, .. } => Some(path),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            walk_error_path(err)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_cover() {
        assert_eq!(name_of(Path::new("./docs//a.md")).unwrap(), "docs/a.md");
        assert_eq!(name_of(Path::new(".")).unwrap(), ".");
        assert_eq!(name_of(Path::new("/tmp/x")).unwrap(), "/tmp/x");
        let walked = Walked {
            roots: vec!["docs".into()],
            ..Walked::default()
        };
        assert!(walked.covers("docs/a.md"));
        assert!(walked.covers("docs"));
        assert!(!walked.covers("docs2/a.md"));
        let here = Walked {
            roots: vec![".".into()],
            ..Walked::default()
        };
        assert!(here.covers("a/b.md"));
        assert!(!here.covers("/abs/b.md"));
        assert!(!here.covers("../b.md"));
    }
}
