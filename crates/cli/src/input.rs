//! Reading records and queries: JSONL (or TOML rules), validated line by line.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result, bail};
use rayon::prelude::*;
use ruchedb::fusion::FusionSpec;
use ruchedb::select::SelectionConfig;
use ruchedb::{Chunk, Document, Kind, Rule, Scenario, SearchRequest, Timestamp, Tool, TurnRequest};

use crate::args::{FusionArgs, OnOff};
use serde::Deserialize;
use serde::de::DeserializeOwned;

/// Bytes read so far through [`open`], by every thread: what the progress of a long
/// read shows.
static BYTES_READ: AtomicU64 = AtomicU64::new(0);

/// The bytes read so far through [`open`].
pub fn bytes_read() -> u64 {
    BYTES_READ.load(Ordering::Relaxed)
}

/// Counts what it reads into [`BYTES_READ`].
struct Counted<R>(R);

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        BYTES_READ.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Opens `path` for reading, `-` meaning stdin.
pub fn open(path: &Path) -> Result<Box<dyn Read + Send>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(Counted(std::io::stdin())));
    }
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    Ok(Box::new(Counted(file)))
}

/// Reads a whole regular file of at most `limit` bytes, never blocking on what is not
/// one: a FIFO, a device or a socket is refused before anything is read from it (the
/// file is opened non-blocking and checked through the opened handle, so a path swapped
/// after a check is refused too).
pub fn read_regular_file(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let metadata = file
        .metadata()
        .with_context(|| format!("cannot read the metadata of {}", path.display()))?;
    if !metadata.is_file() {
        bail!("{}: not a regular file", path.display());
    }
    if metadata.len() > limit {
        bail!(
            "{}: {} bytes, more than the {limit} this reads",
            path.display(),
            metadata.len()
        );
    }
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    // The file may grow after the check: never read past the limit.
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.len() as u64 > limit {
        bail!("{}: more than the {limit} bytes this reads", path.display());
    }
    Ok(bytes)
}

/// Parses every non-blank line of JSONL as a `T`, failing on the first bad line with
/// its number (a UTF-8 byte-order mark before the first line is skipped).
pub fn read_jsonl<T: DeserializeOwned + Send>(path: &Path) -> Result<Vec<T>> {
    Ok(read_numbered(path)?
        .into_iter()
        .map(|(_, item)| item)
        .collect())
}

/// As [`read_jsonl`], with each item's line number. A thread reads lines, a batch at a
/// time, while the batch before is parsed in parallel; the first bad line (by number)
/// is the error, and nothing after it is read.
pub fn read_numbered<T: DeserializeOwned + Send>(path: &Path) -> Result<Vec<(usize, T)>> {
    read_numbered_from(BufReader::with_capacity(1 << 20, open(path)?), path)
}

/// As [`read_numbered`], from `reader`; errors name `path`.
pub fn read_numbered_from<T: DeserializeOwned + Send>(
    reader: impl BufRead + Send,
    path: &Path,
) -> Result<Vec<(usize, T)>> {
    const BATCH_LINES: usize = 4_096;
    std::thread::scope(|scope| {
        // Two batches in flight: one parsing, one read ahead.
        let (batches, received) = std::sync::mpsc::sync_channel::<Vec<(usize, String)>>(1);
        let reading = scope.spawn(move || -> Result<()> {
            let mut batch = Vec::with_capacity(BATCH_LINES);
            for (idx, line) in reader.lines().enumerate() {
                let line_no = idx + 1;
                let mut line = line
                    .with_context(|| format!("{}: line {line_no}: cannot read", path.display()))?;
                if idx == 0
                    && let Some(rest) = line.strip_prefix('\u{feff}')
                {
                    line = rest.to_string();
                }
                if line.trim().is_empty() {
                    continue;
                }
                batch.push((line_no, line));
                if batch.len() == BATCH_LINES {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH_LINES));
                    if batches.send(full).is_err() {
                        // The parser stopped at a bad line: nothing more to read.
                        return Ok(());
                    }
                }
            }
            let _ = batches.send(batch);
            Ok(())
        });
        let mut items = Vec::new();
        let parsed = received.iter().try_for_each(|batch| {
            let parsed: Vec<Result<(usize, T)>> = batch
                .par_iter()
                .map(|(line_no, line)| {
                    parse_line(line)
                        .map(|item| (*line_no, item))
                        .map_err(|err| anyhow::anyhow!("{}: line {line_no}: {err}", path.display()))
                })
                .collect();
            for item in parsed {
                items.push(item?);
            }
            anyhow::Ok(())
        });
        // Stops the reader at its next batch when a line failed to parse.
        drop(received);
        let read = reading
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        // A bad line comes before any line the reader failed on after it.
        parsed?;
        read?;
        Ok(items)
    })
}

/// One line of JSON as a `T`; the error names the field (`field importance: ...`) and
/// the column, never a line (the caller knows the file's).
fn parse_line<T: DeserializeOwned>(line: &str) -> std::result::Result<T, String> {
    // The common case at serde_json's speed; a bad line is parsed again to name its
    // field (tracking the path costs a fifth of the parse, per vector element).
    if let Ok(item) = serde_json::from_str(line) {
        return Ok(item);
    }
    // An array, a string or a number where an object belongs: say so, not what serde
    // makes of it ("expected struct TurnLine with 12 elements").
    match serde_json::from_str::<serde::de::IgnoredAny>(line) {
        Ok(_) if !line.trim_start().starts_with('{') => {
            return Err("expected a JSON object ({...}) on each line".to_string());
        }
        _ => {}
    }
    let mut de = serde_json::Deserializer::from_str(line);
    let result: std::result::Result<T, _> = serde_path_to_error::deserialize(&mut de);
    let item = result.map_err(|err| {
        let field = err.path().to_string();
        let inner = err.into_inner();
        let message = inner.to_string();
        // serde_json ends with " at line 1 column N": this is one line of the file.
        let message = match message.rfind(" at line ") {
            Some(at) => format!("{} (column {})", &message[..at], inner.column()),
            None => message,
        };
        if field.is_empty() || field == "." {
            message
        } else {
            format!("field `{field}`: {message}")
        }
    })?;
    de.end()
        .map_err(|err| format!("trailing characters (column {})", err.column()))?;
    Ok(item)
}

/// Checks each document with its line number (in parallel; the first bad line by
/// number is the error), and that no (kind, tenant, id) comes twice: an import is one
/// batch, and a second line with the same id is a mistake, not an update.
fn checked(path: &Path, items: Vec<(usize, Document)>) -> Result<Vec<Document>> {
    if let Some((line_no, err)) = items
        .par_iter()
        .find_map_first(|(line_no, doc)| doc.validate().err().map(|err| (line_no, err)))
    {
        bail!("{}: line {line_no}: {err}", path.display());
    }
    // Every vector of the file has the first one's dimension.
    let mut first: Option<(usize, usize, String)> = None;
    for (line_no, doc) in &items {
        for (field, dimensions) in vector_fields(doc) {
            match &first {
                None => first = Some((dimensions, *line_no, field)),
                Some((expected, at, named)) if *expected != dimensions => bail!(
                    "{}: line {line_no}: field `{field}`: {dimensions} dimensions, but line {at} (`{named}`) has {expected}",
                    path.display()
                ),
                Some(_) => {}
            }
        }
    }
    let mut seen: std::collections::HashMap<(Kind, &str, &str), usize> =
        std::collections::HashMap::with_capacity(items.len());
    for (line_no, doc) in &items {
        let key = (doc.kind(), doc.tenant_id(), doc.id());
        if let Some(first) = seen.insert(key, *line_no) {
            bail!(
                "{}: line {line_no}: duplicate id `{}` (tenant `{}`) first at line {first}",
                path.display(),
                key.2,
                key.1
            );
        }
    }
    drop(seen);
    Ok(items.into_iter().map(|(_, doc)| doc).collect())
}

/// The vectors a document brings, by field name, with their dimensions.
pub fn vector_fields(doc: &Document) -> Vec<(String, usize)> {
    let (main, examples, name) = match doc {
        Document::Rule(r) => (&r.embedding, &r.pattern_embeddings, "pattern_embeddings"),
        Document::Chunk(c) => (&c.embedding, &None, ""),
        Document::Scenario(s) => (&s.embedding, &s.example_embeddings, "example_embeddings"),
        Document::Tool(t) => (&t.embedding, &t.example_embeddings, "example_embeddings"),
    };
    let mut fields: Vec<(String, usize)> = main
        .iter()
        .map(|v| ("embedding".to_string(), v.len()))
        .collect();
    fields.extend(
        examples
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, v)| (format!("{name}[{i}]"), v.len())),
    );
    fields
}

/// Reads documents of one kind from JSONL, or from a `.toml` file holding `[[KEY]]`
/// entries (`[[rules]]`, `[[scenarios]]`, `[[tools]]`: the kind's plural name).
fn read_kind<T>(path: &Path, kind: Kind) -> Result<Vec<Document>>
where
    T: DeserializeOwned + Send + Into<Document>,
{
    if path.extension().is_some_and(|ext| ext == "toml") {
        let key = kind.plural();
        let mut text = String::new();
        open(path)?.read_to_string(&mut text)?;
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        // The tables first, so that a file of another kind is named as such.
        let tables: toml::Table =
            toml::from_str(text).map_err(|err| anyhow::anyhow!("{}: {err}", path.display()))?;
        if let Some(other) = tables.keys().find(|name| *name != key) {
            bail!(
                "{}: unknown table `{other}` (this file holds [[{key}]])",
                path.display()
            );
        }
        let mut file: BTreeMap<String, Vec<T>> =
            toml::from_str(text).map_err(|err| anyhow::anyhow!("{}: {err}", path.display()))?;
        // TOML errors name their own line; records are numbered by their entry.
        let items = file.remove(key).unwrap_or_default().into_iter().enumerate();
        let items = items.map(|(i, item)| (i + 1, item.into())).collect();
        return checked(path, items).map_err(|err| {
            anyhow::anyhow!(
                "{}",
                err.to_string()
                    .replace(": line ", &format!(": [[{key}]] entry "))
            )
        });
    }
    let items: Vec<(usize, T)> = read_numbered(path)?;
    checked(
        path,
        items
            .into_iter()
            .map(|(line, item)| (line, item.into()))
            .collect(),
    )
}

/// Reads documents of `kind` from JSONL or TOML (see [`read_kind`]).
pub fn read_documents(path: &Path, kind: Kind) -> Result<Vec<Document>> {
    match kind {
        Kind::Rule => read_kind::<Rule>(path, kind),
        Kind::Chunk => read_kind::<Chunk>(path, kind),
        Kind::Scenario => read_kind::<Scenario>(path, kind),
        Kind::Tool => read_kind::<Tool>(path, kind),
    }
}

/// The `kind` field that `ruche export` writes on the lines of kinds that cannot be told
/// apart by their fields (scenarios and tools).
pub const KIND_FIELD: &str = "kind";

/// Documents of every kind mixed, one JSON object per line, as `ruche export` writes
/// them: a line with `content` is a chunk, one with `condition` a rule, and a line with
/// `"kind"` is of that kind (the field is then not part of the record).
pub fn read_records(path: &Path) -> Result<Vec<Document>> {
    let raw: Vec<(usize, serde_json::Value)> = read_numbered(path)?;
    let mut items = Vec::with_capacity(raw.len());
    for (line_no, mut value) in raw {
        let named = match value.as_object_mut().and_then(|o| o.remove(KIND_FIELD)) {
            Some(serde_json::Value::String(name)) => Some(name.parse::<Kind>().map_err(|err| {
                anyhow::anyhow!("{}: line {line_no}: field `kind`: {err}", path.display())
            })?),
            Some(other) => bail!(
                "{}: line {line_no}: field `kind`: expected a kind name, got {other}",
                path.display()
            ),
            None => None,
        };
        let kind = match named {
            Some(kind) => Ok(kind),
            None => match (
                value.get("condition").is_some(),
                value.get("content").is_some(),
            ) {
                (true, false) => Ok(Kind::Rule),
                (false, true) => Ok(Kind::Chunk),
                _ => Err(
                    "neither a rule (`condition`) nor a chunk (`content`), and no `kind`"
                        .to_string(),
                ),
            },
        };
        let text = value.to_string();
        let doc = kind
            .and_then(|kind| match kind {
                Kind::Rule => parse_line::<Rule>(&text).map(Document::Rule),
                Kind::Chunk => parse_line::<Chunk>(&text).map(Document::Chunk),
                Kind::Scenario => parse_line::<Scenario>(&text).map(Document::Scenario),
                Kind::Tool => parse_line::<Tool>(&text).map(Document::Tool),
            })
            .map_err(|err| anyhow::anyhow!("{}: line {line_no}: {err}", path.display()))?;
        items.push((line_no, doc));
    }
    checked(path, items)
}

/// A line's list when it gives one, the command line's otherwise.
fn given_or<'a>(given: &'a [String], defaults: &'a [String]) -> &'a [String] {
    if given.is_empty() { defaults } else { given }
}

/// One line of a `turn --batch` file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnLine {
    pub id: serde_json::Value,
    pub text: Option<String>,
    pub embedding: Option<Vec<f32>>,
    /// A search line's kind: ignored (a turn covers every kind).
    #[allow(dead_code)]
    pub kind: Option<String>,
    pub tenant_id: Option<String>,
    pub agent_id: Option<String>,
    pub context_id: Option<String>,
    pub scenario_id: Option<String>,
    pub step_id: Option<String>,
    pub budget_tokens: Option<usize>,
    pub now: Option<Timestamp>,
    /// Files the agent is working on: the rules for them apply.
    #[serde(default)]
    pub files: Vec<String>,
    /// Rules to apply whatever their relevance, by id or name.
    #[serde(default)]
    pub rules: Vec<String>,
    /// Free text describing the message (ignored).
    #[allow(dead_code)]
    pub note: Option<String>,
}

impl TurnLine {
    /// The turn of this line; the line's fields win over `defaults`.
    pub fn to_request(&self, defaults: &TurnLine) -> Result<TurnRequest> {
        // A line without the message is a mistake; an empty message (a user's, in
        // real conversations) gets an empty turn.
        if self.text.is_none() && self.embedding.is_none() {
            bail!("`text` is missing: a turn needs the message");
        }
        let mut request = TurnRequest::new(self.text.clone().unwrap_or_default());
        if let Some(embedding) = &self.embedding {
            request = request.with_embedding(embedding.clone());
        }
        if let Some(tenant) = self.tenant_id.as_ref().or(defaults.tenant_id.as_ref()) {
            request = request.with_tenant(tenant.clone());
        }
        if let Some(agent) = self.agent_id.as_ref().or(defaults.agent_id.as_ref()) {
            request = request.with_agent(agent.clone());
        }
        if let Some(context) = self.context_id.as_ref().or(defaults.context_id.as_ref()) {
            request = request.with_context(context.clone());
        }
        let scenario = self.scenario_id.as_ref().or(defaults.scenario_id.as_ref());
        let step = self.step_id.as_ref().or(defaults.step_id.as_ref());
        if step.is_some() && scenario.is_none() {
            anyhow::bail!("a `step_id` needs its `scenario_id`");
        }
        if let Some(scenario) = scenario {
            request = request.with_scenario(scenario.clone());
        }
        if let Some(step) = step {
            request = request.with_step(step.clone());
        }
        if let Some(budget) = self.budget_tokens.or(defaults.budget_tokens) {
            request = request.with_budget_tokens(budget);
        }
        if let Some(now) = self.now.or(defaults.now) {
            request = request.with_now(now);
        }
        for file in given_or(&self.files, &defaults.files) {
            request = request.with_file(file.clone());
        }
        for rule in given_or(&self.rules, &defaults.rules) {
            request = request.with_rule(rule.clone());
        }
        Ok(request)
    }
}

/// One line of a batch query file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryLine {
    pub id: serde_json::Value,
    pub text: Option<String>,
    pub embedding: Option<Vec<f32>>,
    pub kind: Option<String>,
    pub tenant_id: Option<String>,
    pub agent_id: Option<String>,
    pub scenario_id: Option<String>,
    pub step_id: Option<String>,
    pub context_id: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub filters: BTreeMap<String, serde_json::Value>,
    pub top_k: Option<usize>,
    pub min_relevance: Option<f64>,
    pub max_tokens: Option<usize>,
    pub now: Option<Timestamp>,
    /// With no text: list the chunks the filters admit by importance and recency
    /// ([`SearchRequest::browse`]).
    #[serde(default)]
    pub browse: bool,
    /// Files the agent is working on: the rules for them apply.
    #[serde(default)]
    pub files: Vec<String>,
    /// Rules to apply whatever their relevance, by id or name.
    #[serde(default)]
    pub rules: Vec<String>,
    /// Free text describing the query (ignored by the engine; the demo prints it).
    pub note: Option<String>,
}

/// Defaults from the command line that a query line may override.
#[derive(Debug, Clone, Default)]
pub struct QueryDefaults {
    pub kind: Option<Kind>,
    pub tenant: Option<String>,
    pub agent: Option<String>,
    pub scenario: Option<String>,
    pub step: Option<String>,
    pub context: Option<String>,
    pub tags: Vec<String>,
    pub filters: Vec<(String, String)>,
    pub top_k: Option<usize>,
    pub min_relevance: Option<f64>,
    pub max_tokens: Option<usize>,
    pub now: Option<Timestamp>,
    pub selection: Option<SelectionConfig>,
    pub max_k: Option<usize>,
    pub min_k: Option<usize>,
    pub fusion: Option<FusionSpec>,
    pub adaptive: Option<bool>,
    pub files: Vec<String>,
    pub rules: Vec<String>,
}

impl QueryLine {
    /// The request of this line; the line's fields win over `defaults`.
    pub fn to_request(&self, defaults: &QueryDefaults) -> Result<SearchRequest> {
        let kind = match &self.kind {
            Some(kind) => kind.parse::<Kind>()?,
            None => defaults.kind.unwrap_or(Kind::Rule),
        };
        // A line without the message is a mistake; an empty message gets no hits.
        if self.text.is_none() && self.embedding.is_none() && !self.browse {
            bail!(
                "`text` is missing: a search needs the message (or `\"browse\": true` to list a context's chunks)"
            );
        }
        let mut request = SearchRequest::new(kind, self.text.clone().unwrap_or_default());
        if self.browse {
            request = request.browse();
        }
        if let Some(embedding) = &self.embedding {
            request = request.with_embedding(embedding.clone());
        }
        if let Some(tenant) = self.tenant_id.as_ref().or(defaults.tenant.as_ref()) {
            request = request.with_tenant(tenant.clone());
        }
        if let Some(agent) = self.agent_id.as_ref().or(defaults.agent.as_ref()) {
            request = request.with_agent(agent.clone());
        }
        if let Some(scenario) = self.scenario_id.as_ref().or(defaults.scenario.as_ref()) {
            request = request.with_scenario(scenario.clone());
        }
        if let Some(step) = self.step_id.as_ref().or(defaults.step.as_ref()) {
            request = request.with_step(step.clone());
        }
        if let Some(context) = self.context_id.as_ref().or(defaults.context.as_ref()) {
            request = request.with_context(context.clone());
        }
        let tags = if self.tags.is_empty() {
            &defaults.tags
        } else {
            &self.tags
        };
        for tag in tags {
            request = request.with_tag(tag.clone());
        }
        for file in given_or(&self.files, &defaults.files) {
            request = request.with_file(file.clone());
        }
        for rule in given_or(&self.rules, &defaults.rules) {
            request = request.with_rule(rule.clone());
        }
        if self.filters.is_empty() {
            for (key, value) in &defaults.filters {
                request = request.with_filter(key.clone(), value.clone());
            }
        } else {
            for (key, value) in &self.filters {
                let value = match value {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                request = request.with_filter(key.clone(), value);
            }
        }
        if let Some(k) = self.top_k.or(defaults.top_k) {
            request = request.with_top_k(k);
        }
        if let Some(min_relevance) = self.min_relevance.or(defaults.min_relevance) {
            request = request.with_min_relevance(min_relevance);
        }
        if let Some(max_tokens) = self.max_tokens.or(defaults.max_tokens) {
            request = request.with_max_tokens(max_tokens);
        }
        if let Some(now) = self.now.or(defaults.now) {
            request = request.with_now(now);
        }
        if let Some(selection) = &defaults.selection {
            request = request.with_selection(selection.clone());
        }
        if let Some(max_k) = defaults.max_k {
            request = request.with_max_k(max_k);
        }
        if let Some(min_k) = defaults.min_k {
            request = request.with_min_k(min_k);
        }
        if let Some(fusion) = defaults.fusion {
            request = request.with_fusion(fusion);
        }
        if let Some(adaptive) = defaults.adaptive {
            request = request.with_adaptive(adaptive);
        }
        Ok(request)
    }
}

/// A strategy from `--strategy NAME` and its `--select-param key=value` pairs.
pub fn selection(name: &str, params: &[String]) -> Result<SelectionConfig> {
    let mut map = serde_json::Map::new();
    for pair in params {
        let (key, value) = key_value(pair)?;
        // Numbers are given as text on the command line; the strategy parses them.
        map.insert(key, serde_json::Value::String(value));
    }
    let config = SelectionConfig::from_params(name, &map)?;
    config.validate("--select-param")?;
    Ok(config)
}

/// The fusion override of `--fusion NAME --fusion-param key=value`, starting from
/// `base` (the configured spec of the kind) when only parameters are given.
pub fn fusion(args: &FusionArgs, base: FusionSpec) -> Result<Option<FusionSpec>> {
    let mut params = serde_json::Map::new();
    for pair in &args.fusion_params {
        let (key, value) = key_value(pair)?;
        params.insert(key, serde_json::Value::String(value));
    }
    let spec = match &args.fusion {
        Some(name) => FusionSpec::from_params(name, &params)?,
        None if params.is_empty() => return Ok(None),
        None => base.with_params(&params)?,
    };
    spec.validate("--fusion-param")?;
    Ok(Some(spec))
}

/// `--adaptive on|off`.
pub fn adaptive(args: &FusionArgs) -> Option<bool> {
    args.adaptive.map(|value| value == OnOff::On)
}

/// Parses `key=value`.
pub fn key_value(pair: &str) -> Result<(String, String)> {
    match pair.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
        _ => bail!("expected KEY=VALUE, got `{pair}`"),
    }
}

/// Parses a time given on the command line.
pub fn timestamp(text: &str) -> Result<Timestamp> {
    Ok(text.parse::<Timestamp>()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// Any line is a record or an error naming no other line, never a panic.
        #[test]
        fn any_line_is_a_record_or_a_one_line_error(line in "\\PC{0,120}|\\{.{0,120}") {
            for result in [
                parse_line::<Rule>(&line).map(|_| ()),
                parse_line::<Chunk>(&line).map(|_| ()),
            ] {
                if let Err(message) = result {
                    prop_assert!(!message.contains("at line"), "{}", message);
                }
            }
        }
    }

    #[test]
    fn errors_name_the_field_and_the_column() {
        let err = parse_line::<Chunk>(r#"{"id": "a", "content": "x", "importance": "high"}"#)
            .unwrap_err();
        assert!(err.starts_with("field `importance`: invalid type"), "{err}");
        assert!(err.ends_with("(column 48)"), "{err}");
        let err = parse_line::<Chunk>(r#"{"id": "a", "content": "x"} trailing"#).unwrap_err();
        assert!(err.contains("trailing characters"), "{err}");
    }

    /// Parsed in parallel batches, the items keep their order and line numbers, and the
    /// error is the first bad line's, wherever the batches end.
    #[test]
    fn large_files_keep_order_and_report_the_first_bad_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chunks.jsonl");
        let line = |i: usize| format!(r#"{{"id": "c{i}", "content": "note {i}"}}"#);
        let mut text = String::from("\u{feff}");
        for i in 0..10_000 {
            text.push_str(&line(i));
            text.push('\n');
            if i % 3_000 == 0 {
                text.push_str("  \n");
            }
        }
        std::fs::write(&path, &text).unwrap();
        let items: Vec<(usize, Chunk)> = read_numbered(&path).unwrap();
        assert_eq!(items.len(), 10_000);
        for (i, (line_no, chunk)) in items.iter().enumerate() {
            assert_eq!(chunk.id, format!("c{i}"));
            // One blank line after items 0, 3,000, 6,000 and 9,000.
            assert_eq!(*line_no, i + 1 + i.div_ceil(3_000).min(4), "item {i}");
        }
        // Two bad lines in different batches: the first is named.
        let mut lines: Vec<String> = (0..10_000).map(line).collect();
        lines[9_000] = "{".into();
        lines[5_000] = r#"{"id": "x", "content": 3}"#.into();
        std::fs::write(&path, lines.join("\n")).unwrap();
        let err = read_numbered::<Chunk>(&path).unwrap_err().to_string();
        assert!(err.contains("line 5001: field `content`"), "{err}");
    }
}
