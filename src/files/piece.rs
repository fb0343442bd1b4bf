//! What reading a file gives: its pieces with their lines and headings, its front
//! matter, or why it cannot be read; and the splitter's settings.

use std::collections::BTreeMap;

use text_splitter::ChunkConfig;

/// A file read: its front matter and its pieces, in order.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ReadFile {
    /// The front matter's fields (Markdown), empty without one.
    pub metadata: BTreeMap<String, serde_json::Value>,
    /// The pieces, in the order of the file; none for a file with no text.
    pub pieces: Vec<Piece>,
}

/// One piece of a file: text that fits the size, where it is, and the headings above it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Piece {
    /// The text, as in the file (trimmed).
    pub text: String,
    /// The first and last line of the file it holds (1-based, inclusive).
    pub lines: [u32; 2],
    /// The headings above it, outermost first.
    pub headings: Vec<String>,
}

/// Why a file could not be read: the line (1-based) when one is to blame, and the
/// reason.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileError {
    /// The line of the file.
    pub line: Option<u32>,
    /// What is wrong.
    pub reason: String,
}

impl FileError {
    pub(crate) fn at(line: u32, reason: impl Into<String>) -> FileError {
        FileError {
            line: Some(line),
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.reason),
            None => f.write_str(&self.reason),
        }
    }
}

/// The splitter's settings: `max_tokens` counted with the budgets' encoding.
pub(crate) fn config(max_tokens: usize) -> ChunkConfig<&'static tiktoken_rs::CoreBPE> {
    ChunkConfig::new(max_tokens.max(1))
        .with_sizer(crate::tokens::encoder())
        .with_trim(true)
}

/// Byte offsets to 1-based line numbers.
pub(crate) struct LineIndex {
    /// The offset each line starts at.
    starts: Vec<usize>,
}

impl LineIndex {
    pub(crate) fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(newlines(text).map(|at| at + 1));
        LineIndex { starts }
    }

    /// The line the byte at `offset` is on.
    pub(crate) fn line(&self, offset: usize) -> u32 {
        let line = self.starts.partition_point(|&start| start <= offset);
        u32::try_from(line).unwrap_or(u32::MAX)
    }

    /// The first and last line of `len` bytes at `offset` (`len` ≥ 1).
    pub(crate) fn span(&self, offset: usize, len: usize) -> [u32; 2] {
        [self.line(offset), self.line(offset + len.max(1) - 1)]
    }
}

pub(crate) fn newlines(text: &str) -> impl Iterator<Item = usize> + '_ {
    text.bytes()
        .enumerate()
        .filter(|&(_, byte)| byte == b'\n')
        .map(|(at, _)| at)
}
