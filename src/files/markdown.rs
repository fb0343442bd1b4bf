//! Markdown: the front matter, the headings, and pieces cut along the structure.

use std::collections::BTreeMap;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use text_splitter::MarkdownSplitter;

use super::piece::{FileError, LineIndex, Piece, ReadFile, config};

/// The longest heading kept in a heading path, in characters (a heading is a title).
const MAX_HEADING_CHARS: usize = 200;

pub(super) fn read(
    text: &str,
    lines: &LineIndex,
    max_tokens: usize,
) -> Result<ReadFile, FileError> {
    let (metadata, body_start) = match document_front_matter(text)? {
        Some((metadata, body_start)) => (metadata, body_start),
        None => (
            BTreeMap::new(),
            usize::from(text.starts_with('\u{feff}')) * '\u{feff}'.len_utf8(),
        ),
    };
    let body = &text[body_start..];
    let headings = heading_spans(body);
    let splitter = MarkdownSplitter::new(config(max_tokens));
    let pieces = splitter
        .chunk_indices(body)
        .filter(|(_, piece)| !piece.trim().is_empty())
        .map(|(offset, piece)| Piece {
            text: piece.to_string(),
            lines: lines.span(body_start + offset, piece.len()),
            headings: path_at(&headings, offset),
        })
        .collect();
    Ok(ReadFile { metadata, pieces })
}

/// A document's front matter, where a first line `---` may also be a thematic break: a
/// `---` never closed, or closing text that is no mapping, is no front matter (a YAML
/// mapping that does not parse still is an error).
#[allow(clippy::type_complexity)]
fn document_front_matter(
    text: &str,
) -> Result<Option<(BTreeMap<String, serde_json::Value>, usize)>, FileError> {
    match front_matter(text) {
        Err(err) if err.reason.contains(NEVER_CLOSED) || err.reason.contains(NOT_A_MAPPING) => {
            Ok(None)
        }
        other => other,
    }
}

/// What [`front_matter`] says of a `---` never closed.
const NEVER_CLOSED: &str = "is never closed";
/// What [`front_matter`] says of a front matter that is no mapping.
const NOT_A_MAPPING: &str = "must be a mapping";

/// A Markdown file's front matter: the YAML mapping between a first line `---` and the
/// next line `---` (or `...`), and the offset the body starts at; `None` when the file
/// opens with no `---` line.
///
/// # Errors
///
/// [`FileError`] naming the line for YAML that does not parse, is not a mapping or has
/// keys that are not strings, and for a front matter never closed.
///
/// # Example
///
/// ```
/// let text = "---\ndescription: Python style\nglobs: \"*.py\"\n---\nUse black.\n";
/// let (fields, body) = ruchedb::files::front_matter(text).unwrap().unwrap();
/// assert_eq!(fields["description"], "Python style");
/// assert_eq!(&text[body..], "Use black.\n");
/// let err = ruchedb::files::front_matter("---\ndescription: [unclosed\n---\n").unwrap_err();
/// assert_eq!(err.line, Some(3));
/// ```
#[allow(clippy::type_complexity)]
pub fn front_matter(
    text: &str,
) -> Result<Option<(BTreeMap<String, serde_json::Value>, usize)>, FileError> {
    let start = usize::from(text.starts_with('\u{feff}')) * '\u{feff}'.len_utf8();
    let mut lines = line_spans(&text[start..]).map(|(at, line)| (start + at, line));
    match lines.next() {
        Some((_, line)) if line.trim_end() == "---" => {}
        _ => return Ok(None),
    }
    let yaml_start = start
        + text[start..]
            .find('\n')
            .map_or(text.len() - start, |at| at + 1);
    for (at, line) in lines {
        let closing = line.trim_end();
        if closing != "---" && closing != "..." {
            continue;
        }
        let yaml = &text[yaml_start..at];
        let body_start = (at + line.len() + 1).min(text.len());
        return Ok(Some((parse_yaml(yaml)?, body_start)));
    }
    Err(FileError::at(
        1,
        "the front matter opened here is never closed (no line `---` after it)",
    ))
}

/// The fields of a front matter's YAML, its lines counted from the file's second.
fn parse_yaml(yaml: &str) -> Result<BTreeMap<String, serde_json::Value>, FileError> {
    if yaml.trim().is_empty() {
        return Ok(BTreeMap::new());
    }
    let value: serde_yaml_ng::Value = serde_yaml_ng::from_str(yaml).map_err(|err| {
        // The YAML's first line is the file's second.
        let line = err.location().map_or(2, |at| at.line() as u32 + 1);
        let reason = err.to_string();
        let reason = reason
            .split(" at line ")
            .next()
            .unwrap_or(&reason)
            .to_string();
        FileError::at(line, format!("front matter is not valid YAML: {reason}"))
    })?;
    let serde_yaml_ng::Value::Mapping(mapping) = value else {
        return Err(FileError::at(
            2,
            "front matter must be a mapping of `key: value` lines",
        ));
    };
    let mut fields = BTreeMap::new();
    for (key, value) in mapping {
        let Some(key) = key.as_str().map(str::to_string) else {
            return Err(FileError::at(
                line_of_key(yaml, &key),
                format!("front matter key {} is not a string", yaml_text(&key)),
            ));
        };
        let value = serde_json::to_value(&value).map_err(|err| {
            FileError::at(
                line_of_key(yaml, &serde_yaml_ng::Value::String(key.clone())),
                format!("front matter field `{key}` cannot be read: {err}"),
            )
        })?;
        fields.insert(key, value);
    }
    Ok(fields)
}

/// The file line a top-level key of the front matter is on (its second line when it
/// cannot be found).
fn line_of_key(yaml: &str, key: &serde_yaml_ng::Value) -> u32 {
    let key = yaml_text(key);
    line_spans(yaml)
        .position(|(_, line)| line.starts_with(&key))
        .map_or(2, |index| index as u32 + 2)
}

fn yaml_text(value: &serde_yaml_ng::Value) -> String {
    serde_yaml_ng::to_string(value).map_or_else(|_| "?".to_string(), |s| s.trim().to_string())
}

/// Each line of `text` with the offset it starts at, without its `\n`.
fn line_spans(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut at = 0;
    text.split('\n').map(move |line| {
        let start = at;
        at += line.len() + 1;
        (start, line)
    })
}

/// A heading of the body: where it starts and ends, its level (1-6) and its text.
pub(super) struct Heading {
    pub(super) offset: usize,
    pub(super) end: usize,
    pub(super) level: usize,
    pub(super) text: String,
}

/// Every heading of a Markdown body, in order.
pub(super) fn heading_spans(body: &str) -> Vec<Heading> {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES;
    let mut headings = Vec::new();
    let mut open: Option<Heading> = None;
    for (event, range) in Parser::new_ext(body, options).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                open = Some(Heading {
                    offset: range.start,
                    end: range.end,
                    level: level as usize,
                    text: String::new(),
                });
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some(mut heading) = open.take() {
                    heading.text = clean_heading(&heading.text);
                    if !heading.text.is_empty() {
                        headings.push(heading);
                    }
                }
            }
            Event::Text(text) | Event::Code(text) => {
                if let Some(heading) = &mut open {
                    heading.text.push_str(&text);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some(heading) = &mut open {
                    heading.text.push(' ');
                }
            }
            _ => {}
        }
    }
    headings
}

/// A heading as a heading path keeps it: whitespace collapsed, control characters
/// gone, at most [`MAX_HEADING_CHARS`].
fn clean_heading(text: &str) -> String {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect();
    let joined = words.join(" ");
    match joined.char_indices().nth(MAX_HEADING_CHARS) {
        Some((cut, _)) => format!("{}…", &joined[..cut]),
        None => joined,
    }
}

/// The heading path in force at `offset`: the headings before it (or starting at it),
/// each closing the ones of its level and deeper.
fn path_at(headings: &[Heading], offset: usize) -> Vec<String> {
    let mut path: Vec<&Heading> = Vec::new();
    for heading in headings.iter().take_while(|h| h.offset <= offset) {
        while path.last().is_some_and(|last| last.level >= heading.level) {
            path.pop();
        }
        path.push(heading);
    }
    path.into_iter().map(|h| h.text.clone()).collect()
}
