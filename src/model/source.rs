//! Where a document was read from ([`Source`]): the file, its lines and the headings
//! above them, for the documents [`Engine::sync`](crate::Engine::sync) makes from files.

use serde::{Deserialize, Serialize};

use crate::model::fields::check_name;
use crate::{Error, Result};

/// The file a document was cut from, the lines it holds and the headings above them.
///
/// Documents that carry a source with a [`hash`](Source::hash) are the ones
/// [`Engine::sync`](crate::Engine::sync) made: it re-reads them when their file changes
/// and removes them with it. A document indexed by hand may carry a source without a
/// hash (where it came from, shown with its hits); sync never touches it.
///
/// # Example
///
/// ```
/// use ruchedb::{Chunk, Source};
///
/// let chunk = Chunk::new("docs/install.md#2", "Run `make install` as root.").with_source(
///     Source::new("docs/install.md")
///         .with_lines(12, 14)
///         .with_headings(["Install", "Linux", "From source"]),
/// );
/// let source = chunk.source.as_ref().unwrap();
/// assert_eq!(source.location(), "docs/install.md:12-14");
/// assert_eq!(source.heading_path(), "Install › Linux › From source");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Source {
    /// The file's path, `/`-separated, as sync was given it (relative to where it ran,
    /// unless it was given an absolute path).
    pub path: String,
    /// The first and the last line (1-based, inclusive) of the file the document holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<[u32; 2]>,
    /// The headings above the text, outermost first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headings: Vec<String>,
    /// The hash of the file's bytes and of the settings sync read it with (hex): set by
    /// sync, which manages the documents that carry one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// The folder (absolute) a relative `path` is relative to: where sync ran, or its
    /// base. A sync compares only with the documents it made from the same folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
}

/// Between the headings of a heading path.
pub const HEADING_SEPARATOR: &str = " › ";

impl Source {
    /// A source naming only its file.
    pub fn new(path: impl Into<String>) -> Source {
        Source {
            path: path.into(),
            lines: None,
            headings: Vec::new(),
            hash: None,
            root: None,
        }
    }

    /// Sets the first and last line (1-based, inclusive).
    #[must_use]
    pub fn with_lines(mut self, first: u32, last: u32) -> Source {
        self.lines = Some([first, last]);
        self
    }

    /// Sets the headings above the text, outermost first.
    #[must_use]
    pub fn with_headings<S: Into<String>>(
        mut self,
        headings: impl IntoIterator<Item = S>,
    ) -> Source {
        self.headings = headings.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the hash sync compares with the file (what makes the document sync's).
    #[must_use]
    pub fn with_hash(mut self, hash: impl Into<String>) -> Source {
        self.hash = Some(hash.into());
        self
    }

    /// `path:first-last` (`path:first` for one line, `path` without lines): where an
    /// editor opens the document.
    pub fn location(&self) -> String {
        match self.lines {
            Some([first, last]) if first == last => format!("{}:{first}", self.path),
            Some([first, last]) => format!("{}:{first}-{last}", self.path),
            None => self.path.clone(),
        }
    }

    /// The headings joined by ` › ` (empty without headings).
    pub fn heading_path(&self) -> String {
        self.headings.join(HEADING_SEPARATOR)
    }

    /// Checks every field.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) naming the field.
    pub fn validate(&self) -> Result<()> {
        check_name("source.path", &self.path)?;
        if let Some([first, last]) = self.lines
            && (first == 0 || last < first)
        {
            return Err(Error::invalid_input(format!(
                "`source.lines` must be [first, last] with 1 <= first <= last, got [{first}, {last}]"
            )));
        }
        if self.headings.len() > MAX_HEADINGS {
            return Err(Error::invalid_input(format!(
                "`source.headings` has {} entries (at most {MAX_HEADINGS})",
                self.headings.len()
            )));
        }
        for heading in &self.headings {
            check_name("source.headings", heading)?;
        }
        if let Some(hash) = &self.hash {
            check_name("source.hash", hash)?;
        }
        if let Some(root) = &self.root {
            check_name("source.root", root)?;
        }
        Ok(())
    }
}

/// The stem of a path's file name (`python-style` of `.cursor/rules/python-style.mdc`);
/// the whole name for a name that starts with its only dot (`.cursorrules`).
pub(crate) fn file_stem(path: &str) -> &str {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.split('.')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or(file)
}

/// The deepest heading path a source may carry (Markdown has six levels; other formats
/// nest sections the same way).
const MAX_HEADINGS: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_and_checks() {
        assert_eq!(Source::new("a.md").location(), "a.md");
        assert_eq!(Source::new("a.md").with_lines(3, 3).location(), "a.md:3");
        assert!(Source::new("a.md").with_lines(0, 2).validate().is_err());
        assert!(Source::new("a.md").with_lines(5, 2).validate().is_err());
        assert!(Source::new("").validate().is_err());
        assert!(Source::new("a.md").with_headings([" "]).validate().is_err());
        let json = r#"{"path":"a.md","lines":[1,4],"headings":["A","B"],"hash":"x1"}"#;
        let source: Source = serde_json::from_str(json).unwrap();
        assert_eq!(serde_json::to_string(&source).unwrap(), json);
        assert!(serde_json::from_str::<Source>(r#"{"path":"a","line":1}"#).is_err());
    }
}
