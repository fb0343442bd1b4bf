//! What agents keep in files, read into pieces an index holds: Markdown and plain text cut
//! into chunks that fit a token size, each with its lines and the headings above it, and
//! a Markdown file's front matter. [`Engine::sync`](crate::Engine::sync) walks trees of
//! such files ([`walk`]) and keeps an index in line with them.
//!
//! Cutting is `text-splitter`'s: Markdown at the largest structural unit that fits
//! (sections, then blocks, then sentences and words), sizes counted in
//! [`TOKEN_ENCODING`](crate::TOKEN_ENCODING) tokens, as budgets are.
//!
//! # Example
//!
//! ```
//! use ruchedb::files::{Format, read};
//!
//! let text = "---\nowner: docs\n---\n# Install\n\n## Linux\n\nRun `make install`.\n";
//! // Pieces of at most 8 tokens: the last is under "Install › Linux", on line 8.
//! let file = read(text, Format::Markdown, 8).unwrap();
//! assert_eq!(file.metadata["owner"], "docs");
//! let piece = file.pieces.last().unwrap();
//! assert_eq!(piece.headings, ["Install", "Linux"]);
//! assert_eq!(piece.lines[1], 8);
//! // One piece when the whole body fits, under the heading it starts with.
//! let whole = read(text, Format::Markdown, 256).unwrap();
//! assert_eq!((whole.pieces.len(), whole.pieces[0].lines), (1, [4, 8]));
//! ```

mod markdown;
mod piece;
mod rules;
pub mod walk;

use std::collections::BTreeMap;
use std::path::Path;

use text_splitter::TextSplitter;

pub use markdown::front_matter;
pub use piece::{FileError, Piece, ReadFile};
use piece::{LineIndex, config};

/// The chunk size [`Engine::sync`](crate::Engine::sync) cuts documents to, in
/// [`TOKEN_ENCODING`](crate::TOKEN_ENCODING) tokens (see `docs/sync.md` for how it was
/// chosen).
pub const DEFAULT_CHUNK_TOKENS: usize = 256;

/// The smallest and largest chunk size sync accepts.
pub const CHUNK_TOKENS_RANGE: std::ops::RangeInclusive<usize> = 16..=8192;

/// How a file is read: documents cut into chunks, or the coding agents' rule files and
/// skills read into rules and tools (see the table of the `rules` formats in
/// `docs/sync.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// Markdown (`.md`, `.markdown`, `.mdx`): front matter, headings, structure.
    Markdown,
    /// Plain text (`.txt`, `.text`, `.rst`, `.adoc`, `.org`): paragraphs, sentences.
    Text,
    /// A Cursor rule, `.cursor/rules/*.mdc` (or `.md`).
    CursorRule,
    /// Cursor's legacy `.cursorrules`.
    CursorRules,
    /// A Windsurf rule, `.windsurf/rules/*.md`.
    WindsurfRule,
    /// Windsurf's legacy `.windsurfrules`.
    WindsurfRules,
    /// A Continue rule, `.continue/rules/*.md`.
    ContinueRule,
    /// A Claude Code rule, `.claude/rules/*.md`.
    ClaudeRule,
    /// `AGENTS.md` or `CLAUDE.md`: each section a rule for its folder.
    AgentsFile,
    /// An Agent Skill's `SKILL.md`.
    Skill,
}

/// The hidden folders and files the walk enters: the agents' own, hidden by convention.
pub(crate) const AGENT_ENTRIES: [&str; 6] = [
    ".cursor",
    ".windsurf",
    ".continue",
    ".claude",
    ".cursorrules",
    ".windsurfrules",
];

impl Format {
    /// The format of a file by its path (`/`-separated) and extension; `None` for a
    /// file sync does not read (any other file inside an agent's hidden folder).
    pub fn of(path: &Path) -> Option<Format> {
        let parts: Vec<&str> = path
            .components()
            .filter_map(|c| c.as_os_str().to_str())
            .collect();
        let (&file, folders) = parts.split_last()?;
        match file {
            ".cursorrules" => return Some(Format::CursorRules),
            ".windsurfrules" => return Some(Format::WindsurfRules),
            "SKILL.md" => return Some(Format::Skill),
            _ if file.eq_ignore_ascii_case("AGENTS.md")
                || file.eq_ignore_ascii_case("CLAUDE.md") =>
            {
                return Some(Format::AgentsFile);
            }
            _ => {}
        }
        let extension = file.rsplit_once('.')?.1.to_ascii_lowercase();
        let under = |agent: &str| folders.windows(2).any(|w| w[0] == agent && w[1] == "rules");
        let markdown = matches!(extension.as_str(), "md" | "markdown" | "mdx");
        if under(".cursor") && (extension == "mdc" || markdown) {
            return Some(Format::CursorRule);
        }
        for (agent, format) in [
            (".windsurf", Format::WindsurfRule),
            (".continue", Format::ContinueRule),
            (".claude", Format::ClaudeRule),
        ] {
            if under(agent) && markdown {
                return Some(format);
            }
        }
        if folders.iter().any(|f| AGENT_ENTRIES.contains(f)) {
            return None;
        }
        match extension.as_str() {
            "md" | "markdown" | "mdx" => Some(Format::Markdown),
            "txt" | "text" | "rst" | "adoc" | "org" => Some(Format::Text),
            _ => None,
        }
    }

    /// The format's name (`markdown`, `text`, `cursor-rule`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Format::Markdown => "markdown",
            Format::Text => "text",
            Format::CursorRule => "cursor-rule",
            Format::CursorRules => "cursorrules",
            Format::WindsurfRule => "windsurf-rule",
            Format::WindsurfRules => "windsurfrules",
            Format::ContinueRule => "continue-rule",
            Format::ClaudeRule => "claude-rule",
            Format::AgentsFile => "agents-md",
            Format::Skill => "skill",
        }
    }

    /// Whether the file's text is cut into chunks (documents), not read into rules or
    /// tools.
    pub fn is_document(self) -> bool {
        matches!(self, Format::Markdown | Format::Text)
    }
}

/// The documents sync makes of a file named `name` (as documents record it; at
/// `from_root` from the root it was found under) read as `format`: chunks of at most
/// `max_tokens` (ids `name#1`, `name#2`, ...) with the front matter as metadata, or the
/// rules and tools of a rule file or skill; each carries its
/// [`Source`](crate::Source) with `hash`. Tenant and agent are the defaults; an empty
/// file gives none.
///
/// # Errors
///
/// [`FileError`] with the line to blame: a front matter that does not parse, a rule file
/// without text, a field of the wrong type, a skill without `name` or `description`.
pub fn documents(
    name: &str,
    from_root: &str,
    text: &str,
    format: Format,
    max_tokens: usize,
    hash: &str,
) -> Result<Vec<crate::Document>, FileError> {
    use rules::RuleFormat;
    let rule_format = match format {
        Format::Markdown | Format::Text => return chunks(name, text, format, max_tokens, hash),
        Format::AgentsFile => return rules::agents_file(name, from_root, text, hash),
        Format::Skill => return rules::skill(name, text, hash),
        Format::CursorRule => RuleFormat::Cursor,
        Format::CursorRules => RuleFormat::CursorLegacy,
        Format::WindsurfRule => RuleFormat::Windsurf,
        Format::WindsurfRules => RuleFormat::WindsurfLegacy,
        Format::ContinueRule => RuleFormat::Continue,
        Format::ClaudeRule => RuleFormat::Claude,
    };
    rules::rule_file(name, text, rule_format, hash)
}

/// A document's chunks, each with its source and the front matter as metadata.
fn chunks(
    name: &str,
    text: &str,
    format: Format,
    max_tokens: usize,
    hash: &str,
) -> Result<Vec<crate::Document>, FileError> {
    let read = read(text, format, max_tokens)?;
    let mut docs = Vec::with_capacity(read.pieces.len());
    for (index, piece) in read.pieces.into_iter().enumerate() {
        let first = piece.lines[0];
        let mut chunk = crate::Chunk::new(chunk_id(name, index + 1), piece.text).with_source(
            crate::Source::new(name)
                .with_lines(piece.lines[0], piece.lines[1])
                .with_headings(piece.headings)
                .with_hash(hash),
        );
        chunk.metadata = read.metadata.clone();
        chunk
            .validate()
            .map_err(|err| FileError::at(first, err.to_string()))?;
        docs.push(crate::Document::Chunk(chunk));
    }
    Ok(docs)
}

/// The id of a file's `n`-th chunk: `path#n`, or the path's hash for a path too long.
fn chunk_id(path: &str, n: usize) -> String {
    let id = format!("{path}#{n}");
    if id.len() <= crate::model::fields::MAX_NAME_LEN {
        id
    } else {
        format!("{:032x}#{n}", xxhash_rust::xxh3::xxh3_128(path.as_bytes()))
    }
}

/// Reads a document's text: its front matter (Markdown) and its pieces of at most
/// `max_tokens` tokens. A rule file or skill is read as the Markdown it is.
///
/// # Errors
///
/// [`FileError`] for a front matter that is not a YAML mapping or is never closed.
pub fn read(text: &str, format: Format, max_tokens: usize) -> Result<ReadFile, FileError> {
    let lines = LineIndex::new(text);
    match format {
        Format::Text => {
            let text_start = usize::from(text.starts_with('\u{feff}')) * '\u{feff}'.len_utf8();
            let splitter = TextSplitter::new(config(max_tokens));
            let pieces = splitter
                .chunk_indices(&text[text_start..])
                .filter(|(_, piece)| !piece.trim().is_empty())
                .map(|(offset, piece)| Piece {
                    text: piece.to_string(),
                    lines: lines.span(text_start + offset, piece.len()),
                    headings: Vec::new(),
                })
                .collect();
            Ok(ReadFile {
                metadata: BTreeMap::new(),
                pieces,
            })
        }
        _ => markdown::read(text, &lines, max_tokens),
    }
}

#[cfg(test)]
mod tests;
