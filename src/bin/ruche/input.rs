//! Reading records and queries: JSONL (or TOML rules), validated line by line.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use anyhow::{Context, Result, bail};
use ruche::{Chunk, FusionSpec, Kind, Rule, SearchRequest, SelectionConfig, Timestamp};

use crate::args::{FusionArgs, OnOff};
use serde::Deserialize;
use serde::de::DeserializeOwned;

/// Opens `path` for reading, `-` meaning stdin.
pub fn open(path: &Path) -> Result<Box<dyn Read>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(std::io::stdin()));
    }
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    Ok(Box::new(file))
}

/// Parses every non-blank line of JSONL as a `T`, failing on the first bad line with
/// its number.
pub fn read_jsonl<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let reader = BufReader::new(open(path)?);
    let mut items = Vec::new();
    for (idx, line) in reader.lines().enumerate() {
        let line_no = idx + 1;
        let line =
            line.with_context(|| format!("{}: line {line_no}: cannot read", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let item = serde_json::from_str(&line)
            .map_err(|err| anyhow::anyhow!("{}: line {line_no}: {err}", path.display()))?;
        items.push(item);
    }
    Ok(items)
}

/// Reads rules from JSONL, or from a `.toml` file holding `[[rules]]` entries.
pub fn read_rules(path: &Path) -> Result<Vec<Rule>> {
    if path.extension().is_some_and(|ext| ext == "toml") {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct RulesFile {
            rules: Vec<Rule>,
        }
        let mut text = String::new();
        open(path)?.read_to_string(&mut text)?;
        let file: RulesFile =
            toml::from_str(&text).map_err(|err| anyhow::anyhow!("{}: {err}", path.display()))?;
        return Ok(file.rules);
    }
    read_jsonl(path)
}

pub fn read_chunks(path: &Path) -> Result<Vec<Chunk>> {
    read_jsonl(path)
}

/// One line of a batch query file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryLine {
    pub id: serde_json::Value,
    #[serde(default)]
    pub text: String,
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
    pub now: Option<Timestamp>,
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
    pub now: Option<Timestamp>,
    pub selection: Option<SelectionConfig>,
    pub max_k: Option<usize>,
    pub min_k: Option<usize>,
    pub fusion: Option<FusionSpec>,
    pub adaptive: Option<bool>,
}

impl QueryLine {
    /// The request of this line; the line's fields win over `defaults`.
    pub fn to_request(&self, defaults: &QueryDefaults) -> Result<SearchRequest> {
        let kind = match &self.kind {
            Some(kind) => kind.parse::<Kind>()?,
            None => defaults.kind.unwrap_or(Kind::Rule),
        };
        let mut request = SearchRequest::new(kind, self.text.clone());
        if let Some(embedding) = &self.embedding {
            request = request.embedding(embedding.clone());
        }
        if let Some(tenant) = self.tenant_id.as_ref().or(defaults.tenant.as_ref()) {
            request = request.tenant(tenant.clone());
        }
        if let Some(agent) = self.agent_id.as_ref().or(defaults.agent.as_ref()) {
            request = request.agent(agent.clone());
        }
        if let Some(scenario) = self.scenario_id.as_ref().or(defaults.scenario.as_ref()) {
            request = request.scenario(scenario.clone());
        }
        if let Some(step) = self.step_id.as_ref().or(defaults.step.as_ref()) {
            request = request.step(step.clone());
        }
        if let Some(context) = self.context_id.as_ref().or(defaults.context.as_ref()) {
            request = request.context(context.clone());
        }
        let tags = if self.tags.is_empty() {
            &defaults.tags
        } else {
            &self.tags
        };
        for tag in tags {
            request = request.tag(tag.clone());
        }
        if self.filters.is_empty() {
            for (key, value) in &defaults.filters {
                request = request.filter(key.clone(), value.clone());
            }
        } else {
            for (key, value) in &self.filters {
                let value = match value {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                request = request.filter(key.clone(), value);
            }
        }
        if let Some(k) = self.top_k.or(defaults.top_k) {
            request = request.top_k(k);
        }
        if let Some(min_relevance) = self.min_relevance.or(defaults.min_relevance) {
            request = request.min_relevance(min_relevance);
        }
        if let Some(now) = self.now.or(defaults.now) {
            request = request.now(now);
        }
        if let Some(selection) = &defaults.selection {
            request = request.selection(selection.clone());
        }
        if let Some(max_k) = defaults.max_k {
            request = request.max_k(max_k);
        }
        if let Some(min_k) = defaults.min_k {
            request = request.min_k(min_k);
        }
        if let Some(fusion) = defaults.fusion {
            request = request.fusion(fusion);
        }
        if let Some(adaptive) = defaults.adaptive {
            request = request.adaptive(adaptive);
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
