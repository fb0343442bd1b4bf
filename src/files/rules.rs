//! The coding agents' rule files and Agent Skills, read into rules and tools, with what
//! each format means kept:
//!
//! | format | where | applies |
//! |---|---|---|
//! | Cursor | `.cursor/rules/*.mdc` | `alwaysApply: true` always; else `globs` by file; else `description` by relevance; else manual |
//! | Cursor (legacy) | `.cursorrules` | always |
//! | Windsurf | `.windsurf/rules/*.md` | `trigger`: `always_on`, `manual`, `model_decision` (by relevance, `description`), `glob` (`globs`); always without one |
//! | Windsurf (legacy) | `.windsurfrules` | always |
//! | Continue | `.continue/rules/*.md` | `alwaysApply: true` always; `false`: by file (`globs`) or by relevance (`description`); unset: by file with `globs`, always without |
//! | Claude Code | `.claude/rules/*.md` | by file with `paths`, always without |
//! | `AGENTS.md`, `CLAUDE.md` | any folder | each section a rule by relevance, for its folder |
//! | Agent Skills | `SKILL.md` | a tool: `name` and `description` matched, the path to load |
//!
//! A rule's description is what is matched; its body is what the agent is told
//! ([`Rule::body`]). Continue's `regex` (matched against a file's content, which a
//! request does not carry) is not used.

use std::collections::BTreeMap;

use serde_json::Value;

use super::markdown::front_matter;
use super::piece::{FileError, LineIndex};
use crate::model::apply::Apply;
use crate::model::doc::{Document, Rule};
use crate::model::source::Source;
use crate::model::tool::Tool;

/// A rule file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RuleFormat {
    Cursor,
    CursorLegacy,
    Windsurf,
    WindsurfLegacy,
    Continue,
    Claude,
}

/// The longest skill name and description the Agent Skills format allows.
const MAX_SKILL_NAME: usize = 64;
const MAX_SKILL_DESCRIPTION: usize = 1024;

/// The front matter's fields and where the body starts (offset, 1-based line).
struct Parts<'a> {
    fields: BTreeMap<String, Value>,
    body: &'a str,
    body_line: u32,
}

fn parts<'a>(text: &'a str, lines: &LineIndex) -> Result<Parts<'a>, FileError> {
    let (fields, start) = lenient_front_matter(text)?.unwrap_or_else(|| {
        let bom = usize::from(text.starts_with('\u{feff}')) * '\u{feff}'.len_utf8();
        (BTreeMap::new(), bom)
    });
    let body = &text[start..];
    let skipped = body.len() - body.trim_start().len();
    Ok(Parts {
        fields,
        body: body.trim(),
        body_line: lines.line(start + skipped),
    })
}

/// A rule file's front matter: YAML, or, where YAML refuses what the agents' editors
/// write (`globs: *.ts,*.tsx`, whose `*` YAML reads as an alias; `description: Rules
/// for: API`), one `key: value` a line, each value as written (`true` and `false` as
/// booleans).
#[allow(clippy::type_complexity)]
fn lenient_front_matter(text: &str) -> Result<Option<(BTreeMap<String, Value>, usize)>, FileError> {
    let error = match front_matter(text) {
        Ok(found) => return Ok(found),
        Err(error) => error,
    };
    let bom = usize::from(text.starts_with('\u{feff}')) * '\u{feff}'.len_utf8();
    let mut lines = text[bom..].split('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(error);
    }
    let mut at = bom + text[bom..].find('\n').map_or(text.len() - bom, |n| n + 1);
    let mut fields = BTreeMap::new();
    for line in lines {
        let next = (at + line.len() + 1).min(text.len());
        if matches!(line.trim_end(), "---" | "...") {
            return Ok(Some((fields, next)));
        }
        if !line.trim().is_empty() && !line.trim_start().starts_with('#') {
            // Every line must be `key: value`; anything else is the YAML's error.
            let Some((key, value)) = line.split_once(':') else {
                return Err(error);
            };
            if key.trim().is_empty() || key.starts_with([' ', '\t', '-']) {
                return Err(error);
            }
            let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
            let value = match value {
                "" => Value::Null,
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                value => Value::String(value.to_string()),
            };
            fields.insert(key.trim().to_string(), value);
        }
        at = next;
    }
    Err(error)
}

/// The line of a front matter field (its key's line), 1 when it cannot be found.
fn field_line(text: &str, key: &str) -> u32 {
    text.lines()
        .position(|line| line.starts_with(&format!("{key}:")))
        .map_or(1, |at| at as u32 + 1)
}

fn string_field(
    text: &str,
    fields: &BTreeMap<String, Value>,
    key: &str,
) -> Result<Option<String>, FileError> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(other) => Err(FileError::at(
            field_line(text, key),
            format!("`{key}` must be text, got {other}"),
        )),
    }
}

fn bool_field(
    text: &str,
    fields: &BTreeMap<String, Value>,
    key: &str,
) -> Result<Option<bool>, FileError> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s == "true" || s == "false" => Ok(Some(s == "true")),
        Some(other) => Err(FileError::at(
            field_line(text, key),
            format!("`{key}` must be true or false, got {other}"),
        )),
    }
}

/// Globs as the formats write them: a list, or one string of comma-separated globs.
fn globs_field(
    text: &str,
    fields: &BTreeMap<String, Value>,
    key: &str,
) -> Result<Vec<String>, FileError> {
    // Commas separate globs, except inside `{a,b}` alternatives.
    let split = |s: &str| -> Vec<String> {
        let mut globs = Vec::new();
        let (mut depth, mut start) = (0usize, 0);
        for (at, c) in s.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    globs.push(s[start..at].trim().to_string());
                    start = at + 1;
                }
                _ => {}
            }
        }
        globs.push(s[start..].trim().to_string());
        globs.retain(|g| !g.is_empty());
        globs
    };
    match fields.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(split(s)),
        Some(Value::Array(items)) => {
            let mut globs = Vec::new();
            for item in items {
                match item {
                    Value::String(s) => globs.extend(split(s)),
                    other => {
                        return Err(FileError::at(
                            field_line(text, key),
                            format!("`{key}` must list globs as text, got {other}"),
                        ));
                    }
                }
            }
            Ok(globs)
        }
        Some(other) => Err(FileError::at(
            field_line(text, key),
            format!("`{key}` must be a glob or a list of globs, got {other}"),
        )),
    }
}

/// The rule's name in words, from its file's stem (`python-style` → `python style`).
fn stem_words(name: &str) -> String {
    crate::model::source::file_stem(name).replace(['-', '_'], " ")
}

/// A rule file: one rule, applied as its format says.
pub(super) fn rule_file(
    name: &str,
    text: &str,
    format: RuleFormat,
    hash: &str,
) -> Result<Vec<Document>, FileError> {
    let lines = LineIndex::new(text);
    let Parts {
        fields,
        body,
        body_line,
    } = parts(text, &lines)?;
    // An emptied rule file holds no rule: its former rule goes.
    if body.is_empty() {
        return Ok(Vec::new());
    }
    let description = string_field(text, &fields, "description")?;
    let (apply, globs) = match format {
        RuleFormat::Cursor => {
            let globs = globs_field(text, &fields, "globs")?;
            match bool_field(text, &fields, "alwaysApply")? {
                Some(true) => (Apply::Always, Vec::new()),
                _ if !globs.is_empty() => (Apply::Files, globs),
                _ if description.is_some() => (Apply::Relevant, Vec::new()),
                _ => (Apply::Manual, Vec::new()),
            }
        }
        RuleFormat::CursorLegacy | RuleFormat::WindsurfLegacy => (Apply::Always, Vec::new()),
        RuleFormat::Windsurf => {
            let globs = globs_field(text, &fields, "globs")?;
            match string_field(text, &fields, "trigger")?.as_deref() {
                None | Some("always_on") => (Apply::Always, Vec::new()),
                Some("manual") => (Apply::Manual, Vec::new()),
                Some("model_decision") => (Apply::Relevant, Vec::new()),
                Some("glob") if !globs.is_empty() => (Apply::Files, globs),
                Some("glob") => {
                    return Err(FileError::at(
                        field_line(text, "trigger"),
                        "`trigger: glob` needs `globs`",
                    ));
                }
                Some(other) => {
                    return Err(FileError::at(
                        field_line(text, "trigger"),
                        format!(
                            "`trigger` must be always_on, manual, model_decision or glob, got `{other}`"
                        ),
                    ));
                }
            }
        }
        RuleFormat::Continue => {
            let globs = globs_field(text, &fields, "globs")?;
            match (bool_field(text, &fields, "alwaysApply")?, globs.is_empty()) {
                (Some(true), _) => (Apply::Always, Vec::new()),
                (Some(false), _) if description.is_some() => (Apply::Relevant, globs),
                (Some(false), false) => (Apply::Files, globs),
                (Some(false), true) => (Apply::Manual, Vec::new()),
                (None, false) => (Apply::Files, globs),
                (None, true) => (Apply::Always, Vec::new()),
            }
        }
        RuleFormat::Claude => {
            let paths = globs_field(text, &fields, "paths")?;
            if paths.is_empty() {
                (Apply::Always, Vec::new())
            } else {
                (Apply::Files, paths)
            }
        }
    };
    let title = match format {
        RuleFormat::Continue => string_field(text, &fields, "name")?,
        _ => None,
    };
    let file = name.rsplit('/').next().unwrap_or(name);
    let condition = match format {
        RuleFormat::CursorLegacy | RuleFormat::WindsurfLegacy => format!("Project rules ({file})"),
        _ => description
            .clone()
            .or(title)
            .unwrap_or_else(|| stem_words(name)),
    };
    let last = lines.line(text.len().saturating_sub(1));
    let rule = Rule::new(name, condition, "")
        .with_apply(apply)
        .with_globs(globs)
        .with_body(body)
        .with_source(
            Source::new(name)
                .with_lines(body_line, last.max(body_line))
                .with_hash(hash),
        );
    rule.validate()
        .map_err(|err| FileError::at(1, err.to_string()))?;
    Ok(vec![Document::Rule(rule)])
}

/// An `AGENTS.md` or `CLAUDE.md`: each section (the text under a heading, or before
/// the first) a rule by relevance for the file's folder, its condition the heading path.
pub(super) fn agents_file(
    name: &str,
    from_root: &str,
    text: &str,
    hash: &str,
) -> Result<Vec<Document>, FileError> {
    let lines = LineIndex::new(text);
    let Parts { body, .. } = parts(text, &lines)?;
    let body_start = body.as_ptr() as usize - text.as_ptr() as usize;
    let headings = super::markdown::heading_spans(body);
    // The folder from the project's root (the root the file was found under): the
    // root's file is for every file (`.`), and competes with the folders' own; Claude
    // Code's `.claude/CLAUDE.md` is its folder's.
    let folder = match from_root.rsplit_once('/') {
        Some((folder, _)) => {
            let folder = folder.strip_suffix("/.claude").unwrap_or(folder);
            if folder == ".claude" { "." } else { folder }.to_string()
        }
        None => ".".to_string(),
    };
    let file = name.rsplit('/').next().unwrap_or(name);
    let mut sections: Vec<(Vec<String>, usize, usize)> = Vec::new();
    // (heading path, start of the section's text, end)
    let mut path: Vec<(usize, String)> = Vec::new();
    let mut start = 0;
    let mut current: Vec<String> = Vec::new();
    for heading in &headings {
        sections.push((current.clone(), start, heading.offset));
        while path
            .last()
            .is_some_and(|(level, _)| *level >= heading.level)
        {
            path.pop();
        }
        path.push((heading.level, heading.text.clone()));
        current = path.iter().map(|(_, t)| t.clone()).collect();
        start = heading.end;
    }
    sections.push((current, start, body.len()));
    let mut docs = Vec::new();
    for (headings, from, to) in sections {
        let section = body[from..to].trim();
        if section.is_empty() {
            continue;
        }
        let skipped = body[from..to].len() - body[from..to].trim_start().len();
        let first = lines.line(body_start + from + skipped);
        let last = lines.line(body_start + from + skipped + section.len() - 1);
        let condition = if headings.is_empty() {
            match folder.as_str() {
                "." => file.to_string(),
                folder => format!("{file} ({folder})"),
            }
        } else {
            headings.join(crate::model::source::HEADING_SEPARATOR)
        };
        let mut rule = Rule::new(format!("{name}#{}", docs.len() + 1), condition, section)
            .with_source(
                Source::new(name)
                    .with_lines(first, last)
                    .with_headings(headings)
                    .with_hash(hash),
            );
        rule.folder = Some(folder.clone());
        rule.validate()
            .map_err(|err| FileError::at(first, err.to_string()))?;
        docs.push(Document::Rule(rule));
    }
    Ok(docs)
}

/// An Agent Skill's `SKILL.md`: a tool named and described by its front matter, the
/// path to load it from in its source; the body is never indexed.
pub(super) fn skill(name: &str, text: &str, hash: &str) -> Result<Vec<Document>, FileError> {
    let lines = LineIndex::new(text);
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let Parts { fields, .. } = parts(text, &lines)?;
    if fields.is_empty() {
        return Err(FileError::at(
            1,
            "a skill opens with a front matter giving its `name` and `description`",
        ));
    }
    let skill_name = string_field(text, &fields, "name")?
        .ok_or_else(|| FileError::at(1, "a skill needs a `name`"))?;
    let description = string_field(text, &fields, "description")?
        .ok_or_else(|| FileError::at(1, "a skill needs a `description`"))?;
    if skill_name.chars().count() > MAX_SKILL_NAME {
        return Err(FileError::at(
            field_line(text, "name"),
            format!(
                "`name` has {} characters (at most {MAX_SKILL_NAME})",
                skill_name.chars().count()
            ),
        ));
    }
    if description.chars().count() > MAX_SKILL_DESCRIPTION {
        return Err(FileError::at(
            field_line(text, "description"),
            format!(
                "`description` has {} characters (at most {MAX_SKILL_DESCRIPTION})",
                description.chars().count()
            ),
        ));
    }
    let last = lines.line(text.len().saturating_sub(1));
    let tool = Tool::new(name, skill_name, description)
        .with_tags(["skill"])
        .with_source(Source::new(name).with_lines(1, last.max(1)).with_hash(hash));
    tool.validate()
        .map_err(|err| FileError::at(1, err.to_string()))?;
    Ok(vec![Document::Tool(tool)])
}
