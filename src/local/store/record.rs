//! The bincode records of the `main` tree and their conversion to public documents.
//!
//! Records are plain structs, separate from the public types: bincode is not
//! self-describing, so the records avoid `serde_json::Value` (chunk metadata is kept as a
//! JSON string) and every `skip_serializing_if` of the JSONL form.

use serde::{Deserialize, Serialize};

use crate::model::doc::{Chunk, Document, Rule, Scope};
use crate::model::time::Timestamp;
use crate::{Error, Result};
use crate::{Scenario, Step, Tool};

/// One stored version of a document (without its vectors).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct DocRecord {
    /// The sequence number of the change that wrote this version.
    pub(crate) seq: u64,
    pub(crate) body: RecordBody,
}

/// Bincode writes the variant's index: variants are only ever appended, so records
/// written before a variant existed still decode.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum RecordBody {
    Rule(RuleRecord),
    Chunk(ChunkRecord),
    /// A rule with entities or relations.
    LinkedRule(RuleRecord, LinksRecord),
    /// A chunk with entities or relations.
    LinkedChunk(ChunkRecord, LinksRecord),
    Scenario(ScenarioRecord),
    Tool(ToolRecord),
    /// Any other body (never itself `Extended`) with fields written after the first
    /// format: those a document has, each once. Fields are only ever appended as
    /// [`ExtraRecord`] variants, so that a record never changes shape once written.
    Extended(Box<RecordBody>, Vec<ExtraRecord>),
}

/// A field of a document beyond its kind's first record form.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum ExtraRecord {
    /// A document's [`Source`](crate::Source): path, `(first, last)` lines, headings,
    /// hash, root.
    Source {
        path: String,
        lines: Option<(u32, u32)>,
        headings: Vec<String>,
        hash: Option<String>,
        root: Option<String>,
    },
    /// A rule's [`Apply`](crate::Apply) (its name), globs, folder and body.
    RuleApply {
        apply: String,
        globs: Vec<String>,
        folder: Option<String>,
        body: Option<String>,
    },
}

impl ExtraRecord {
    fn source(source: &crate::Source) -> ExtraRecord {
        ExtraRecord::Source {
            path: source.path.clone(),
            lines: source.lines.map(|[first, last]| (first, last)),
            headings: source.headings.clone(),
            hash: source.hash.clone(),
            root: source.root.clone(),
        }
    }

    /// The extra fields of `doc` that differ from their defaults.
    fn of(doc: &Document) -> Vec<ExtraRecord> {
        let mut extras: Vec<ExtraRecord> =
            doc.source().map(ExtraRecord::source).into_iter().collect();
        if let Document::Rule(rule) = doc
            && (rule.apply != crate::Apply::Relevant
                || !rule.globs.is_empty()
                || rule.folder.is_some()
                || rule.body.is_some())
        {
            extras.push(ExtraRecord::RuleApply {
                apply: rule.apply.name().to_string(),
                globs: rule.globs.clone(),
                folder: rule.folder.clone(),
                body: rule.body.clone(),
            });
        }
        extras
    }

    /// Whether the field makes a document of `kind` other than plain (see
    /// [`RecordSummary::plain`]): every rule field beyond the first form does (a rule
    /// search looks such rules up among the tenant's rules that are not plain).
    fn unplain(&self, kind: crate::Kind) -> bool {
        kind == crate::Kind::Rule
    }

    /// Sets the field on `doc`.
    fn apply(&self, doc: &mut Document) -> Result<()> {
        match self {
            ExtraRecord::Source {
                path,
                lines,
                headings,
                hash,
                root,
            } => {
                let mut source = crate::Source::new(path.clone()).with_headings(headings.clone());
                source.lines = lines.map(|(first, last)| [first, last]);
                source.hash = hash.clone();
                source.root = root.clone();
                match doc {
                    Document::Chunk(chunk) => chunk.source = Some(source),
                    Document::Rule(rule) => rule.source = Some(source),
                    Document::Tool(tool) => tool.source = Some(source),
                    Document::Scenario(_) => {}
                }
            }
            ExtraRecord::RuleApply {
                apply,
                globs,
                folder,
                body,
            } => {
                if let Document::Rule(rule) = doc {
                    rule.apply = serde_json::from_value(serde_json::Value::String(apply.clone()))
                        .map_err(|_| Error::corrupt(format!("rule apply `{apply}`")))?;
                    rule.globs.clone_from(globs);
                    rule.folder.clone_from(folder);
                    rule.body.clone_from(body);
                }
            }
        }
        Ok(())
    }
}

/// A document's entities and relations (`(type, target)`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct LinksRecord {
    entities: Vec<String>,
    relations: Vec<(String, String)>,
}

impl LinksRecord {
    fn of(entities: &[String], relations: &[crate::model::doc::Relation]) -> Option<LinksRecord> {
        (!entities.is_empty() || !relations.is_empty()).then(|| LinksRecord {
            entities: entities.to_vec(),
            relations: relations
                .iter()
                .map(|r| (r.kind.clone(), r.target.clone()))
                .collect(),
        })
    }

    fn relations(&self) -> Vec<crate::model::doc::Relation> {
        self.relations
            .iter()
            .map(|(kind, target)| crate::model::doc::Relation::new(kind.clone(), target.clone()))
            .collect()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RuleRecord {
    id: String,
    tenant_id: String,
    agent_id: Option<String>,
    scope: ScopeRecord,
    condition: String,
    action: String,
    priority: i32,
    enabled: bool,
    tags: Vec<String>,
    patterns: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
enum ScopeRecord {
    Global,
    Scenario(String),
    Step(String, String),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ChunkRecord {
    id: String,
    tenant_id: String,
    agent_id: Option<String>,
    context_id: Option<String>,
    memory_id: Option<String>,
    content: String,
    importance: Option<u8>,
    created_at: Option<i64>,
    expires_at: Option<i64>,
    /// `metadata` as a JSON object, empty when there is none.
    metadata_json: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ScenarioRecord {
    id: String,
    tenant_id: String,
    agent_id: Option<String>,
    name: String,
    description: String,
    examples: Vec<String>,
    /// `(id, description)` of each step.
    steps: Vec<(String, String)>,
    enabled: bool,
    tags: Vec<String>,
}

impl ScenarioRecord {
    fn of(s: &Scenario) -> ScenarioRecord {
        ScenarioRecord {
            id: s.id.clone(),
            tenant_id: s.tenant_id.clone(),
            agent_id: s.agent_id.clone(),
            name: s.name.clone(),
            description: s.description.clone(),
            examples: s.examples.clone(),
            steps: s
                .steps
                .iter()
                .map(|step| (step.id.clone(), step.description.clone()))
                .collect(),
            enabled: s.enabled,
            tags: s.tags.clone(),
        }
    }

    fn to_scenario(&self) -> Scenario {
        let mut scenario = Scenario::new(&self.id, &self.name, &self.description)
            .with_tenant(&self.tenant_id)
            .with_examples(self.examples.iter().cloned())
            .with_steps(self.steps.iter().map(|(id, d)| Step::new(id, d)))
            .with_enabled(self.enabled)
            .with_tags(self.tags.iter().cloned());
        scenario.agent_id = self.agent_id.clone();
        scenario
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ToolRecord {
    id: String,
    tenant_id: String,
    agent_id: Option<String>,
    name: String,
    description: String,
    /// `parameters` as JSON, empty when null.
    parameters_json: String,
    examples: Vec<String>,
    enabled: bool,
    tags: Vec<String>,
}

impl ToolRecord {
    fn of(t: &Tool) -> ToolRecord {
        ToolRecord {
            id: t.id.clone(),
            tenant_id: t.tenant_id.clone(),
            agent_id: t.agent_id.clone(),
            name: t.name.clone(),
            description: t.description.clone(),
            parameters_json: if t.parameters.is_null() {
                String::new()
            } else {
                t.parameters.to_string()
            },
            examples: t.examples.clone(),
            enabled: t.enabled,
            tags: t.tags.clone(),
        }
    }

    fn to_tool(&self) -> Result<Tool> {
        let mut tool = Tool::new(&self.id, &self.name, &self.description)
            .with_tenant(&self.tenant_id)
            .with_examples(self.examples.iter().cloned())
            .with_enabled(self.enabled)
            .with_tags(self.tags.iter().cloned());
        tool.agent_id = self.agent_id.clone();
        if !self.parameters_json.is_empty() {
            tool.parameters = serde_json::from_str(&self.parameters_json)
                .map_err(|err| Error::corrupt(format!("tool parameters: {err}")))?;
        }
        Ok(tool)
    }
}

/// The vectors of one document, as given or as embedded (not normalised).
///
/// Stored in a compact binary form (see [`StoredVectors::encode`]) rather than bincode:
/// an index of 100,000 chunks reads 150 MB of them at open.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct StoredVectors {
    /// The embedding of the document's text.
    pub(crate) main: Option<Vec<f32>>,
    /// One slot per pattern of a rule (empty for chunks); `None` where a pattern has
    /// nothing to embed.
    pub(crate) patterns: Vec<Option<Vec<f32>>>,
    /// Whether the caller supplied the vectors (exported back) or the embedder made them.
    pub(crate) external: bool,
}

/// The version byte of the vector encoding.
const VECTORS_V1: u8 = 1;

impl StoredVectors {
    /// The example vectors a caller gave, when it gave them (they are then all present:
    /// validated at upsert).
    pub(crate) fn given_examples(&self) -> Option<Vec<Vec<f32>>> {
        if self.patterns.is_empty() {
            return None;
        }
        self.patterns.iter().cloned().collect()
    }

    /// `[version u8][flags u8: bit 0 external][patterns u32 BE][rows u16 BE][dim u32 BE]`,
    /// then each row's index within the document (u16 BE: 0 main, i + 1 pattern i), then
    /// the rows' components (f32 LE, row after row).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let rows: Vec<(usize, &[f32])> = self.indexed().collect();
        let dim = rows.first().map_or(0, |(_, v)| v.len());
        let mut out = Vec::with_capacity(12 + rows.len() * (2 + 4 * dim));
        out.push(VECTORS_V1);
        out.push(u8::from(self.external));
        out.extend_from_slice(&(self.patterns.len() as u32).to_be_bytes());
        out.extend_from_slice(&(rows.len() as u16).to_be_bytes());
        out.extend_from_slice(&(dim as u32).to_be_bytes());
        for (idx, _) in &rows {
            out.extend_from_slice(&(*idx as u16).to_be_bytes());
        }
        for (_, vector) in &rows {
            // Sized first, then filled: a loop the compiler turns into a copy.
            let start = out.len();
            out.resize(start + 4 * vector.len(), 0);
            for (bytes, x) in out[start..].chunks_exact_mut(4).zip(*vector) {
                bytes.copy_from_slice(&x.to_le_bytes());
            }
        }
        out
    }

    /// Decodes [`StoredVectors::encode`]'s form.
    pub(crate) fn decode(bytes: &[u8]) -> Result<StoredVectors> {
        let corrupt = || Error::corrupt("vector record");
        let header = bytes.get(..12).ok_or_else(corrupt)?;
        if header[0] != VECTORS_V1 {
            return Err(corrupt());
        }
        let external = header[1] & 1 == 1;
        let n_patterns = u32::from_be_bytes(header[2..6].try_into().expect("4 bytes")) as usize;
        let n_rows = usize::from(u16::from_be_bytes(
            header[6..8].try_into().expect("2 bytes"),
        ));
        let dim = u32::from_be_bytes(header[8..12].try_into().expect("4 bytes")) as usize;
        let index_end = 12 + 2 * n_rows;
        let data = bytes.get(index_end..).ok_or_else(corrupt)?;
        if data.len() != n_rows * dim * 4 || n_patterns >= 1 << 16 {
            return Err(corrupt());
        }
        let mut stored = StoredVectors {
            main: None,
            patterns: vec![None; n_patterns],
            external,
        };
        for (row, index) in bytes[12..index_end].chunks_exact(2).enumerate() {
            let index = usize::from(u16::from_be_bytes([index[0], index[1]]));
            let vector: Vec<f32> = data[row * dim * 4..(row + 1) * dim * 4]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            match index {
                0 => stored.main = Some(vector),
                i => *stored.patterns.get_mut(i - 1).ok_or_else(corrupt)? = Some(vector),
            }
        }
        Ok(stored)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.main.is_none() && self.patterns.iter().all(Option::is_none)
    }

    /// Every present vector with its index within the document (0 = main, 1.. = patterns).
    pub(crate) fn indexed(&self) -> impl Iterator<Item = (usize, &[f32])> {
        self.main.iter().map(|v| (0, v.as_slice())).chain(
            self.patterns
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.as_ref().map(|v| (i + 1, v.as_slice()))),
        )
    }
}

/// A document's record as a catalog sees it (see [`DocRecord::summary`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecordSummary<'a> {
    pub(crate) kind: crate::Kind,
    pub(crate) tenant: &'a str,
    pub(crate) id: &'a str,
    /// A chunk's context.
    pub(crate) context: Option<&'a str>,
    /// Whether every search of its kind, tenant and (for a chunk) context that asks for
    /// no tags and no metadata admits it: a rule enabled, global, and of its first form
    /// (applied by relevance, no globs, folder, body or source), a chunk that never
    /// expires, a scenario or tool enabled; and none of them restricted to an agent.
    pub(crate) plain: bool,
}

/// A write-ahead entry of the change log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum LogEntry {
    /// A document version was written, replacing `replaced` if any.
    Upsert { doc: u64, replaced: Option<u64> },
    /// A document version was removed.
    Delete { doc: u64 },
}

impl DocRecord {
    /// Converts a document (its vectors are stored apart and ignored here).
    pub(crate) fn from_document(doc: &Document, seq: u64) -> DocRecord {
        let body = match doc {
            Document::Rule(rule) => {
                let record = RuleRecord {
                    id: rule.id.clone(),
                    tenant_id: rule.tenant_id.clone(),
                    agent_id: rule.agent_id.clone(),
                    scope: match &rule.scope {
                        Scope::Global => ScopeRecord::Global,
                        Scope::Scenario { scenario_id } => {
                            ScopeRecord::Scenario(scenario_id.clone())
                        }
                        Scope::Step {
                            scenario_id,
                            step_id,
                        } => ScopeRecord::Step(scenario_id.clone(), step_id.clone()),
                    },
                    condition: rule.condition.clone(),
                    action: rule.action.clone(),
                    priority: rule.priority,
                    enabled: rule.enabled,
                    tags: rule.tags.clone(),
                    patterns: rule.patterns.clone(),
                };
                match LinksRecord::of(&rule.entities, &rule.relations) {
                    Some(links) => RecordBody::LinkedRule(record, links),
                    None => RecordBody::Rule(record),
                }
            }
            Document::Chunk(chunk) => {
                let record = ChunkRecord {
                    id: chunk.id.clone(),
                    tenant_id: chunk.tenant_id.clone(),
                    agent_id: chunk.agent_id.clone(),
                    context_id: chunk.context_id.clone(),
                    memory_id: chunk.memory_id.clone(),
                    content: chunk.content.clone(),
                    importance: chunk.importance,
                    created_at: chunk.created_at.map(Timestamp::unix_millis),
                    expires_at: chunk.expires_at.map(Timestamp::unix_millis),
                    metadata_json: if chunk.metadata.is_empty() {
                        String::new()
                    } else {
                        serde_json::to_string(&chunk.metadata).expect("a JSON map serialises")
                    },
                };
                match LinksRecord::of(&chunk.entities, &chunk.relations) {
                    Some(links) => RecordBody::LinkedChunk(record, links),
                    None => RecordBody::Chunk(record),
                }
            }
            Document::Scenario(scenario) => RecordBody::Scenario(ScenarioRecord::of(scenario)),
            Document::Tool(tool) => RecordBody::Tool(ToolRecord::of(tool)),
        };
        let extras = ExtraRecord::of(doc);
        let body = if extras.is_empty() {
            body
        } else {
            RecordBody::Extended(Box::new(body), extras)
        };
        DocRecord { seq, body }
    }

    /// The body without its extra fields, and those fields.
    fn parts(&self) -> (&RecordBody, &[ExtraRecord]) {
        match &self.body {
            RecordBody::Extended(body, extras) => (innermost(body), extras),
            body => (body, &[]),
        }
    }

    pub(crate) fn kind(&self) -> crate::Kind {
        body_kind(self.parts().0)
    }

    /// What a catalog needs of the document without converting it: its kind, tenant,
    /// id and context (a chunk's), and whether it is [plain](RecordSummary::plain).
    pub(crate) fn summary(&self) -> RecordSummary<'_> {
        let body = self.parts().0;
        let (tenant, id, agent) = match body {
            RecordBody::Rule(r) | RecordBody::LinkedRule(r, _) => {
                (&r.tenant_id, &r.id, &r.agent_id)
            }
            RecordBody::Chunk(c) | RecordBody::LinkedChunk(c, _) => {
                (&c.tenant_id, &c.id, &c.agent_id)
            }
            RecordBody::Scenario(s) => (&s.tenant_id, &s.id, &s.agent_id),
            RecordBody::Tool(t) => (&t.tenant_id, &t.id, &t.agent_id),
            RecordBody::Extended(..) => unreachable!("an extended body is never nested"),
        };
        let (context, plain) = match body {
            RecordBody::Rule(r) | RecordBody::LinkedRule(r, _) => {
                (None, r.enabled && matches!(r.scope, ScopeRecord::Global))
            }
            RecordBody::Chunk(c) | RecordBody::LinkedChunk(c, _) => {
                (c.context_id.as_deref(), c.expires_at.is_none())
            }
            RecordBody::Scenario(s) => (None, s.enabled),
            RecordBody::Tool(t) => (None, t.enabled),
            RecordBody::Extended(..) => unreachable!("an extended body is never nested"),
        };
        let extras = self.parts().1;
        RecordSummary {
            kind: self.kind(),
            tenant,
            id,
            context,
            plain: plain && agent.is_none() && !extras.iter().any(|e| e.unplain(self.kind())),
        }
    }

    /// The document without vectors, consuming the record (no string is copied).
    pub(crate) fn into_document(self) -> Result<Document> {
        if let RecordBody::Extended(body, extras) = self.body {
            let mut doc = DocRecord {
                seq: self.seq,
                body: *body,
            }
            .into_document()?;
            for extra in &extras {
                extra.apply(&mut doc)?;
            }
            return Ok(doc);
        }
        let (body, links) = match self.body {
            RecordBody::LinkedRule(r, links) => (RecordBody::Rule(r), Some(links)),
            RecordBody::LinkedChunk(c, links) => (RecordBody::Chunk(c), Some(links)),
            plain => (plain, None),
        };
        let links = links.unwrap_or_default();
        Ok(match body {
            RecordBody::LinkedRule(..) | RecordBody::LinkedChunk(..) | RecordBody::Extended(..) => {
                unreachable!("unwrapped above")
            }
            RecordBody::Rule(r) => {
                let mut rule = Rule::new(r.id, r.condition, r.action)
                    .with_tenant(r.tenant_id)
                    .with_priority(r.priority)
                    .with_enabled(r.enabled)
                    .with_tags(r.tags)
                    .with_patterns(r.patterns);
                rule.agent_id = r.agent_id;
                rule.scope = match r.scope {
                    ScopeRecord::Global => Scope::Global,
                    ScopeRecord::Scenario(s) => Scope::scenario(s),
                    ScopeRecord::Step(s, t) => Scope::step(s, t),
                };
                rule.relations = links.relations();
                rule.entities = links.entities;
                Document::Rule(rule)
            }
            RecordBody::Chunk(c) => {
                let mut chunk = Chunk::new(c.id, c.content).with_tenant(c.tenant_id);
                chunk.agent_id = c.agent_id;
                chunk.context_id = c.context_id;
                chunk.memory_id = c.memory_id;
                chunk.importance = c.importance;
                chunk.created_at = c.created_at.map(Timestamp::from_unix_millis);
                chunk.expires_at = c.expires_at.map(Timestamp::from_unix_millis);
                if !c.metadata_json.is_empty() {
                    chunk.metadata = serde_json::from_str(&c.metadata_json)
                        .map_err(|err| Error::corrupt(format!("chunk metadata: {err}")))?;
                }
                chunk.relations = links.relations();
                chunk.entities = links.entities;
                Document::Chunk(chunk)
            }
            RecordBody::Scenario(s) => Document::Scenario(s.to_scenario()),
            RecordBody::Tool(t) => Document::Tool(t.to_tool()?),
        })
    }

    /// The document, without vectors unless `vectors` are given and were external.
    pub(crate) fn to_document(&self, vectors: Option<&StoredVectors>) -> Result<Document> {
        let (body, extras) = self.parts();
        let mut doc = body_document(body, vectors)?;
        for extra in extras {
            extra.apply(&mut doc)?;
        }
        Ok(doc)
    }
}

/// The body an [`RecordBody::Extended`] wraps (damaged data could nest them).
fn innermost(mut body: &RecordBody) -> &RecordBody {
    while let RecordBody::Extended(inner, _) = body {
        body = inner;
    }
    body
}

fn body_kind(body: &RecordBody) -> crate::Kind {
    match innermost(body) {
        RecordBody::Rule(_) | RecordBody::LinkedRule(..) => crate::Kind::Rule,
        RecordBody::Chunk(_) | RecordBody::LinkedChunk(..) => crate::Kind::Chunk,
        RecordBody::Scenario(_) => crate::Kind::Scenario,
        RecordBody::Tool(_) => crate::Kind::Tool,
        RecordBody::Extended(..) => unreachable!("innermost unwraps every extension"),
    }
}

/// The document of a body that is not [`RecordBody::Extended`], without vectors unless
/// `vectors` are given and were external.
fn body_document(body: &RecordBody, vectors: Option<&StoredVectors>) -> Result<Document> {
    {
        let external = vectors.filter(|v| v.external);
        let empty = LinksRecord::default();
        let links = match body {
            RecordBody::LinkedRule(_, links) | RecordBody::LinkedChunk(_, links) => links,
            _ => &empty,
        };
        Ok(match body {
            RecordBody::Rule(r) | RecordBody::LinkedRule(r, _) => {
                let mut rule = Rule::new(r.id.clone(), r.condition.clone(), r.action.clone())
                    .with_tenant(r.tenant_id.clone())
                    .with_priority(r.priority)
                    .with_enabled(r.enabled)
                    .with_tags(r.tags.iter().cloned())
                    .with_patterns(r.patterns.iter().cloned());
                rule.agent_id = r.agent_id.clone();
                rule.scope = match &r.scope {
                    ScopeRecord::Global => Scope::Global,
                    ScopeRecord::Scenario(s) => Scope::scenario(s.clone()),
                    ScopeRecord::Step(s, t) => Scope::step(s.clone(), t.clone()),
                };
                rule.entities = links.entities.clone();
                rule.relations = links.relations();
                if let Some(vectors) = external {
                    rule.embedding = vectors.main.clone();
                    rule.pattern_embeddings = vectors.given_examples();
                }
                Document::Rule(rule)
            }
            RecordBody::Chunk(c) | RecordBody::LinkedChunk(c, _) => {
                let mut chunk =
                    Chunk::new(c.id.clone(), c.content.clone()).with_tenant(c.tenant_id.clone());
                chunk.entities = links.entities.clone();
                chunk.relations = links.relations();
                chunk.agent_id = c.agent_id.clone();
                chunk.context_id = c.context_id.clone();
                chunk.memory_id = c.memory_id.clone();
                chunk.importance = c.importance;
                chunk.created_at = c.created_at.map(Timestamp::from_unix_millis);
                chunk.expires_at = c.expires_at.map(Timestamp::from_unix_millis);
                if !c.metadata_json.is_empty() {
                    chunk.metadata = serde_json::from_str(&c.metadata_json)
                        .map_err(|err| Error::corrupt(format!("chunk metadata: {err}")))?;
                }
                if let Some(vectors) = external {
                    chunk.embedding = vectors.main.clone();
                }
                Document::Chunk(chunk)
            }
            RecordBody::Scenario(s) => {
                let mut doc = Document::Scenario(s.to_scenario());
                if let Some(vectors) = external {
                    doc.set_embeddings(vectors.main.clone(), vectors.given_examples());
                }
                doc
            }
            RecordBody::Extended(..) => unreachable!("given the innermost body"),
            RecordBody::Tool(t) => {
                let mut doc = Document::Tool(t.to_tool()?);
                if let Some(vectors) = external {
                    doc.set_embeddings(vectors.main.clone(), vectors.given_examples());
                }
                doc
            }
        })
    }
}

/// Encodes a record with bincode (fixed-width little-endian integers).
pub(crate) fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    bincode::serialize(value).expect("in-memory records always serialise")
}

/// Decodes a bincode record, naming `what` in the error.
pub(crate) fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8], what: &str) -> Result<T> {
    bincode::deserialize(bytes).map_err(|err| Error::corrupt(format!("{what}: {err}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_round_trip() {
        let rule = Rule::new("r", "c", "a")
            .with_scope(Scope::step("s", "t"))
            .with_agent("bot")
            .with_priority(-3)
            .with_enabled(false)
            .with_tags(["x"])
            .with_patterns(["p"]);
        let chunk = Chunk::new("c", "text")
            .with_importance(3)
            .with_created_at(Timestamp::from_unix_millis(1_000))
            .with_metadata("k", serde_json::json!({"nested": [1, 2]}));
        let sourced = Chunk::new("docs/a.md#1", "text")
            .with_context("u")
            .with_relation("see", "b")
            .with_source(
                crate::Source::new("docs/a.md")
                    .with_lines(3, 9)
                    .with_headings(["A", "B"])
                    .with_hash("h1"),
            );
        for doc in [
            Document::Rule(rule),
            Document::Chunk(chunk),
            Document::Chunk(sourced),
        ] {
            let record = DocRecord::from_document(&doc, 42);
            let decoded: DocRecord = decode(&encode(&record), "doc").unwrap();
            assert_eq!(decoded.seq, 42);
            assert_eq!(decoded.kind(), doc.kind());
            assert_eq!(decoded.summary().id, doc.id());
            assert_eq!(decoded.to_document(None).unwrap(), doc);
            assert_eq!(decoded.into_document().unwrap(), doc);
        }
    }

    #[test]
    fn external_vectors_come_back() {
        let rule = Rule::new("r", "c", "a")
            .with_patterns(["p"])
            .with_embedding(vec![1.0, 0.0])
            .with_pattern_embeddings(vec![vec![0.0, 1.0]]);
        let vectors = StoredVectors {
            main: rule.embedding.clone(),
            patterns: vec![Some(vec![0.0, 1.0])],
            external: true,
        };
        let record = DocRecord::from_document(&Document::Rule(rule.clone()), 1);
        assert_eq!(
            record.to_document(Some(&vectors)).unwrap(),
            Document::Rule(rule)
        );
        let internal = StoredVectors {
            external: false,
            ..vectors
        };
        let doc = record.to_document(Some(&internal)).unwrap();
        assert_eq!(doc.as_rule().unwrap().embedding, None);
    }

    #[test]
    fn vectors_round_trip_and_reject_truncation() {
        let vectors = StoredVectors {
            main: Some(vec![1.0, -2.5, 3.25]),
            patterns: vec![None, Some(vec![0.5, 0.0, -1.0]), None],
            external: true,
        };
        let bytes = vectors.encode();
        // The layout on disk: header, row indices, then each row's f32s little-endian.
        let rows: Vec<u8> = [1.0f32, -2.5, 3.25, 0.5, 0.0, -1.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        assert_eq!(bytes[..12], [1, 1, 0, 0, 0, 3, 0, 2, 0, 0, 0, 3]);
        assert_eq!(bytes[12..16], [0, 0, 0, 2]);
        assert_eq!(bytes[16..], rows[..]);
        assert_eq!(StoredVectors::decode(&bytes).unwrap(), vectors);
        for len in 0..bytes.len() {
            assert!(StoredVectors::decode(&bytes[..len]).is_err(), "{len}");
        }
        let empty = StoredVectors::default();
        assert_eq!(StoredVectors::decode(&empty.encode()).unwrap(), empty);
    }

    #[test]
    fn into_document_matches_to_document() {
        let doc = Document::Chunk(
            Chunk::new("c", "x")
                .with_metadata("k", 1)
                .with_importance(4),
        );
        let record = DocRecord::from_document(&doc, 3);
        assert_eq!(
            record.clone().into_document().unwrap(),
            record.to_document(None).unwrap()
        );
    }

    #[test]
    fn truncated_records_are_corrupt_not_panics() {
        let record = DocRecord::from_document(&Document::Chunk(Chunk::new("c", "x")), 1);
        let bytes = encode(&record);
        for len in 0..bytes.len() {
            assert!(decode::<DocRecord>(&bytes[..len], "doc").is_err());
        }
    }
}
