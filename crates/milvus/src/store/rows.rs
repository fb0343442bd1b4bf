//! A document as Milvus rows: its key, the filter fields every search checks, its JSON, and
//! the row of each vector.

use milvus::v2::prelude::*;
use ruchedb::query::VectorMatch;
use ruchedb::{Document, Error, ErrorKind, Kind};

/// The vector row of a rule's centroid (as the local index numbers it).
pub(crate) const CENTROID_ROW: i64 = u16::MAX as i64;

/// The key of a document: a hash of its kind, tenant and id (safe in any expression).
pub(crate) fn doc_key(kind: Kind, tenant: &str, id: &str) -> String {
    let mut bytes = Vec::with_capacity(tenant.len() + id.len() + 3);
    bytes.push(match kind {
        Kind::Rule => b'r',
        Kind::Chunk => b'c',
        Kind::Scenario => b's',
        Kind::Tool => b't',
    });
    bytes.extend_from_slice(tenant.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(id.as_bytes());
    format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&bytes))
}

pub(crate) fn vector_match(row: i64) -> VectorMatch {
    match row {
        0 => VectorMatch::Text,
        CENTROID_ROW => VectorMatch::Centroid,
        n => VectorMatch::Pattern(usize::try_from(n - 1).unwrap_or(0)),
    }
}

pub(crate) fn row_of(m: VectorMatch) -> i64 {
    match m {
        VectorMatch::Text => 0,
        VectorMatch::Pattern(i) => i as i64 + 1,
        VectorMatch::Centroid => CENTROID_ROW,
    }
}

/// The filter fields of a document, one value per row.
pub(crate) struct FilterRow {
    pub(crate) doc_key: String,
    pub(crate) tenant: String,
    pub(crate) agent: String,
    pub(crate) scenario: String,
    pub(crate) step: String,
    pub(crate) context: String,
    pub(crate) enabled: bool,
    pub(crate) tags: Vec<String>,
    pub(crate) priority: i64,
    pub(crate) importance: i64,
    pub(crate) created_at: i64,
    pub(crate) expires_at: i64,
}

impl FilterRow {
    pub(crate) fn of(doc: &Document) -> FilterRow {
        let key = doc_key(doc.kind(), doc.tenant_id(), doc.id());
        match doc {
            Document::Rule(rule) => {
                let (scenario, step) = match &rule.scope {
                    ruchedb::Scope::Global => (String::new(), String::new()),
                    ruchedb::Scope::Scenario { scenario_id } => {
                        (scenario_id.clone(), String::new())
                    }
                    ruchedb::Scope::Step {
                        scenario_id,
                        step_id,
                    } => (scenario_id.clone(), step_id.clone()),
                };
                FilterRow {
                    doc_key: key,
                    tenant: rule.tenant_id.clone(),
                    agent: rule.agent_id.clone().unwrap_or_default(),
                    scenario,
                    step,
                    context: String::new(),
                    enabled: rule.enabled,
                    tags: rule.tags.clone(),
                    priority: i64::from(rule.priority),
                    importance: 0,
                    created_at: 0,
                    expires_at: 0,
                }
            }
            Document::Chunk(chunk) => {
                let tags = match chunk.metadata.get("tags") {
                    Some(serde_json::Value::String(s)) => vec![s.clone()],
                    Some(serde_json::Value::Array(values)) => values
                        .iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect(),
                    _ => Vec::new(),
                };
                FilterRow {
                    doc_key: key,
                    tenant: chunk.tenant_id.clone(),
                    agent: chunk.agent_id.clone().unwrap_or_default(),
                    scenario: String::new(),
                    step: String::new(),
                    context: chunk.context_id.clone().unwrap_or_default(),
                    enabled: true,
                    tags,
                    priority: 0,
                    importance: chunk.importance.map_or(0, i64::from),
                    created_at: chunk.created_at.map_or(0, |t| t.unix_millis()),
                    expires_at: chunk.expires_at.map_or(0, |t| t.unix_millis()),
                }
            }
            Document::Scenario(_) | Document::Tool(_) => {
                let (enabled, tags) = match doc {
                    Document::Scenario(s) => (s.enabled, s.tags.clone()),
                    Document::Tool(t) => (t.enabled, t.tags.clone()),
                    _ => unreachable!("matched above"),
                };
                FilterRow {
                    doc_key: key,
                    tenant: doc.tenant_id().to_string(),
                    agent: doc.agent_id().unwrap_or_default().to_string(),
                    scenario: String::new(),
                    step: String::new(),
                    context: String::new(),
                    enabled,
                    tags,
                    priority: 0,
                    importance: 0,
                    created_at: 0,
                    expires_at: 0,
                }
            }
        }
    }
}

pub(crate) fn filter_columns(rows: &[&FilterRow]) -> Vec<FieldData> {
    let s = |f: fn(&FilterRow) -> &String| rows.iter().map(|r| f(r).clone()).collect::<Vec<_>>();
    let i = |f: fn(&FilterRow) -> i64| rows.iter().map(|r| f(r)).collect::<Vec<_>>();
    vec![
        FieldData::varchar("doc_key", s(|r| &r.doc_key)),
        FieldData::varchar("tenant_id", s(|r| &r.tenant)),
        FieldData::varchar("agent_id", s(|r| &r.agent)),
        FieldData::varchar("scenario_id", s(|r| &r.scenario)),
        FieldData::varchar("step_id", s(|r| &r.step)),
        FieldData::varchar("context_id", s(|r| &r.context)),
        FieldData::boolean("enabled", rows.iter().map(|r| r.enabled).collect()),
        FieldData::ArrayVarChar {
            name: "tags".into(),
            values: rows.iter().map(|r| r.tags.clone()).collect(),
        },
        FieldData::int64("priority", i(|r| r.priority)),
        FieldData::int64("importance", i(|r| r.importance)),
        FieldData::int64("created_at", i(|r| r.created_at)),
        FieldData::int64("expires_at", i(|r| r.expires_at)),
    ]
}

/// The document as stored: the record, without vectors.
pub(crate) fn document_json(doc: &Document) -> String {
    serde_json::to_string(doc).unwrap_or_default()
}

pub(crate) fn parse_document(kind: Kind, text: &str) -> ruchedb::Result<Document> {
    let corrupt = |err: serde_json::Error| {
        Error::new(ErrorKind::Corrupt {
            what: format!("a stored {kind} in Milvus: {err}"),
        })
    };
    Ok(match kind {
        Kind::Rule => Document::Rule(serde_json::from_str(text).map_err(corrupt)?),
        Kind::Chunk => Document::Chunk(serde_json::from_str(text).map_err(corrupt)?),
        Kind::Scenario => Document::Scenario(serde_json::from_str(text).map_err(corrupt)?),
        Kind::Tool => Document::Tool(serde_json::from_str(text).map_err(corrupt)?),
    })
}
