//! The documents an index holds: [`Rule`]s and [`Chunk`]s (and, in their own modules,
//! [`Scenario`]s and [`Tool`]s).
//!
//! Their serde form is the JSONL record format of the CLI (`ruche index`, `ruche
//! export`): optional fields may be left out, unknown fields are an error, and every
//! value is validated when a record is read or upserted.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::apply::{Apply, check_globs};
pub use crate::model::fields::DEFAULT_TENANT;
use crate::model::fields::{check_examples, check_importance, check_name, check_vector};
use crate::model::source::{HEADING_SEPARATOR, Source};
use crate::model::time::Timestamp;
use crate::{Error, Kind, Result, Scenario, Tool};

/// Where a rule applies.
///
/// Global rules apply to every query; scenario rules only when the query names that
/// active scenario; step rules only when the query names that scenario and that step.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum Scope {
    /// Applies everywhere.
    #[default]
    Global,
    /// Applies while the named scenario is active.
    Scenario {
        /// The scenario.
        scenario_id: String,
    },
    /// Applies while the named step of the named scenario is active.
    Step {
        /// The scenario the step belongs to.
        scenario_id: String,
        /// The step.
        step_id: String,
    },
}

impl Scope {
    /// The scope's name as in JSONL records (`global`, `scenario`, `step`).
    pub fn name(&self) -> &'static str {
        match self {
            Scope::Global => "global",
            Scope::Scenario { .. } => "scenario",
            Scope::Step { .. } => "step",
        }
    }

    /// A scenario scope.
    pub fn scenario(scenario_id: impl Into<String>) -> Scope {
        Scope::Scenario {
            scenario_id: scenario_id.into(),
        }
    }

    /// A step scope.
    pub fn step(scenario_id: impl Into<String>, step_id: impl Into<String>) -> Scope {
        Scope::Step {
            scenario_id: scenario_id.into(),
            step_id: step_id.into(),
        }
    }
}

/// "When CONDITION, do ACTION" guidance for an agent.
///
/// The text indexed for a rule (and embedded, when it carries no embedding of its own)
/// is `condition + " " + action`. Patterns are example messages that should match the
/// rule; each gets its own embedding, and the rule's vector score is the best over its
/// main embedding and its patterns.
///
/// # Example
///
/// ```
/// use ruchedb::{Rule, Scope};
///
/// let rule = Rule::new("refund", "customer asks for a refund", "explain the refund policy")
///     .with_priority(80)
///     .with_scope(Scope::scenario("returns"))
///     .with_patterns(["I want my money back"]);
/// assert_eq!(rule.text(), "customer asks for a refund explain the refund policy");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RuleRecord", into = "RuleRecord")]
#[non_exhaustive]
pub struct Rule {
    /// The user's id, unique per tenant among rules.
    pub id: String,
    /// The tenant (default [`DEFAULT_TENANT`]).
    pub tenant_id: String,
    /// The agent the rule is restricted to; `None` applies to every agent of the tenant.
    pub agent_id: Option<String>,
    /// Where the rule applies.
    pub scope: Scope,
    /// When the rule applies, in words.
    pub condition: String,
    /// What the agent should do.
    pub action: String,
    /// Business priority; higher wins (default 0).
    pub priority: i32,
    /// Disabled rules never match (default `true`).
    pub enabled: bool,
    /// Free tags, usable as search filters.
    pub tags: Vec<String>,
    /// Example messages that should match the rule.
    pub patterns: Vec<String>,
    /// The embedding of [`Rule::text`], when the caller brings its own vectors.
    pub embedding: Option<Vec<f32>>,
    /// One embedding per pattern, in the order of `patterns`.
    pub pattern_embeddings: Option<Vec<Vec<f32>>>,
    /// Entities the rule is about, beyond the identifiers its text names (see the graph
    /// leg).
    pub entities: Vec<String>,
    /// Typed links to other rules (by id) or to entities, such as `depends_on` or
    /// `excludes`: stored and returned, and edges of the entity graph.
    pub relations: Vec<Relation>,
    /// How the rule comes to apply (default [`Apply::Relevant`]: the gate decides).
    pub apply: Apply,
    /// Globs of the files the rule is for (`src/**/*.ts`; `*.py` in any folder): with
    /// [`Apply::Files`] the rule applies when a request names a matching file, with
    /// [`Apply::Relevant`] it also does.
    pub globs: Vec<String>,
    /// The folder the rule is for (an `AGENTS.md`'s): when a request names files and
    /// none is inside it, the rule is no candidate.
    pub folder: Option<String>,
    /// What the agent is told beyond the action, in full: rendered after it (within a
    /// turn's budget, cut with a marker when it does not fit), never searched.
    pub body: Option<String>,
    /// The file the rule was read from (set by [`Engine::sync`](crate::Engine::sync)).
    pub source: Option<Source>,
}

impl Rule {
    /// A global, enabled rule of the default tenant with priority 0.
    pub fn new(
        id: impl Into<String>,
        condition: impl Into<String>,
        action: impl Into<String>,
    ) -> Rule {
        Rule {
            id: id.into(),
            tenant_id: DEFAULT_TENANT.to_string(),
            agent_id: None,
            scope: Scope::Global,
            condition: condition.into(),
            action: action.into(),
            priority: 0,
            enabled: true,
            tags: Vec::new(),
            patterns: Vec::new(),
            embedding: None,
            pattern_embeddings: None,
            entities: Vec::new(),
            relations: Vec::new(),
            apply: Apply::Relevant,
            globs: Vec::new(),
            folder: None,
            body: None,
            source: None,
        }
    }

    document_setters!(owner Rule, "rule");

    /// Sets how the rule comes to apply.
    #[must_use]
    pub fn with_apply(mut self, apply: Apply) -> Rule {
        self.apply = apply;
        self
    }

    /// Sets the globs of the files the rule is for.
    #[must_use]
    pub fn with_globs<S: Into<String>>(mut self, globs: impl IntoIterator<Item = S>) -> Rule {
        self.globs = globs.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the folder the rule is for.
    #[must_use]
    pub fn with_folder(mut self, folder: impl Into<String>) -> Rule {
        self.folder = Some(folder.into());
        self
    }

    /// Sets what the agent is told beyond the action.
    #[must_use]
    pub fn with_body(mut self, body: impl Into<String>) -> Rule {
        self.body = Some(body.into());
        self
    }

    /// Names the file the rule was read from.
    #[must_use]
    pub fn with_source(mut self, source: Source) -> Rule {
        self.source = Some(source);
        self
    }

    /// The rule's name for `@name` in a message: its file's stem (`python-style` of
    /// `.cursor/rules/python-style.mdc`), its id without one.
    pub fn name(&self) -> &str {
        match &self.source {
            Some(source) => crate::model::source::file_stem(&source.path),
            None => &self.id,
        }
    }
    document_setters!(listed Rule, "rule");

    /// Sets the scope.
    #[must_use]
    pub fn with_scope(mut self, scope: Scope) -> Rule {
        self.scope = scope;
        self
    }

    /// Sets the priority.
    #[must_use]
    pub fn with_priority(mut self, priority: i32) -> Rule {
        self.priority = priority;
        self
    }

    /// Sets the example messages.
    #[must_use]
    pub fn with_patterns<S: Into<String>>(mut self, patterns: impl IntoIterator<Item = S>) -> Rule {
        self.patterns = patterns.into_iter().map(Into::into).collect();
        self
    }

    /// Sets one embedding per pattern.
    #[must_use]
    pub fn with_pattern_embeddings(mut self, embeddings: Vec<Vec<f32>>) -> Rule {
        self.pattern_embeddings = Some(embeddings);
        self
    }

    /// Adds entities the rule is about.
    pub fn with_entities<S: Into<String>>(mut self, entities: impl IntoIterator<Item = S>) -> Rule {
        self.entities.extend(entities.into_iter().map(Into::into));
        self
    }

    /// Adds a typed link to another rule (by id) or to an entity.
    pub fn with_relation(mut self, kind: impl Into<String>, target: impl Into<String>) -> Rule {
        self.relations.push(Relation::new(kind, target));
        self
    }

    /// The text indexed and embedded for the rule: `condition + " " + action` (the
    /// condition alone when the action is empty; never the body).
    pub fn text(&self) -> String {
        if self.action.is_empty() {
            self.condition.clone()
        } else {
            format!("{} {}", self.condition, self.action)
        }
    }

    /// Checks every field.
    ///
    /// # Errors
    ///
    /// Returns [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) naming the
    /// field, or [`ErrorKind::NonFiniteScore`](crate::ErrorKind::NonFiniteScore) for a
    /// NaN or infinite vector component.
    pub fn validate(&self) -> Result<()> {
        check_name("id", &self.id)?;
        check_name("tenant_id", &self.tenant_id)?;
        if let Some(agent) = &self.agent_id {
            check_name("agent_id", agent)?;
        }
        match &self.scope {
            Scope::Global => {}
            Scope::Scenario { scenario_id } => check_name("scenario_id", scenario_id)?,
            Scope::Step {
                scenario_id,
                step_id,
            } => {
                check_name("scenario_id", scenario_id)?;
                check_name("step_id", step_id)?;
            }
        }
        // The action may be left empty when a body says what to do.
        let blank_action = self.action.trim().is_empty() && self.body.is_none();
        for (field, blank) in [
            ("condition", self.condition.trim().is_empty()),
            ("action", blank_action),
        ] {
            if blank {
                return Err(Error::invalid_input(format!(
                    "rule `{}`: `{field}` must not be empty or blank",
                    self.id
                )));
            }
        }
        if self.body.as_deref().is_some_and(|b| b.trim().is_empty()) {
            return Err(Error::invalid_input(format!(
                "rule `{}`: `body` must not be blank (leave it out)",
                self.id
            )));
        }
        check_globs(&self.id, self.apply, &self.globs)?;
        if let Some(folder) = &self.folder {
            check_name("folder", folder)?;
        }
        if let Some(source) = &self.source {
            source
                .validate()
                .map_err(|err| Error::invalid_input(format!("rule `{}`: {err}", self.id)))?;
        }
        check_links("rule", &self.id, &self.entities, &self.relations)?;
        for tag in &self.tags {
            check_name("tags", tag)?;
        }
        if let Some(embedding) = &self.embedding {
            check_vector("embedding", embedding)?;
        }
        check_examples(
            "rule",
            &self.id,
            ("patterns", &self.patterns),
            ("pattern_embeddings", self.pattern_embeddings.as_deref()),
        )?;
        Ok(())
    }
}

/// A piece of memory or knowledge.
///
/// # Example
///
/// ```
/// use ruchedb::Chunk;
///
/// let chunk = Chunk::new("c1", "The customer prefers email over phone calls.")
///     .with_importance(8)
///     .with_context("user-42");
/// assert_eq!(chunk.importance, Some(8));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ChunkRecord", into = "ChunkRecord")]
#[non_exhaustive]
pub struct Chunk {
    /// The user's id, unique per tenant among chunks.
    pub id: String,
    /// The tenant (default [`DEFAULT_TENANT`]).
    pub tenant_id: String,
    /// The agent the chunk belongs to; `None` is visible to every agent of the tenant.
    pub agent_id: Option<String>,
    /// A context (conversation, user, session) the chunk belongs to.
    pub context_id: Option<String>,
    /// The memory this chunk was cut from, if any.
    pub memory_id: Option<String>,
    /// The text.
    pub content: String,
    /// Importance from 1 to 10 (5 is neutral); `None` scores as neutral.
    pub importance: Option<u8>,
    /// When the chunk was written; `None` scores as neutral recency.
    pub created_at: Option<Timestamp>,
    /// After this time the chunk is never returned.
    pub expires_at: Option<Timestamp>,
    /// Free key-value metadata, usable as search filters.
    pub metadata: BTreeMap<String, serde_json::Value>,
    /// The embedding of `content`, when the caller brings its own vectors.
    pub embedding: Option<Vec<f32>>,
    /// Entities the chunk is about, beyond the identifiers its content names and its
    /// `context_id` (see the graph leg).
    pub entities: Vec<String>,
    /// Typed links to other chunks (by id) or to entities, e.g. `{"type": "placed_by",
    /// "target": "CUST-48213"}`: edges of the entity graph.
    pub relations: Vec<Relation>,
    /// The file the chunk was cut from (set by [`Engine::sync`](crate::Engine::sync)):
    /// its heading path is searched with the content and shown with the hit.
    pub source: Option<Source>,
}

impl Chunk {
    /// A chunk of the default tenant with no importance, timestamp or metadata.
    pub fn new(id: impl Into<String>, content: impl Into<String>) -> Chunk {
        Chunk {
            id: id.into(),
            tenant_id: DEFAULT_TENANT.to_string(),
            agent_id: None,
            context_id: None,
            memory_id: None,
            content: content.into(),
            importance: None,
            created_at: None,
            expires_at: None,
            metadata: BTreeMap::new(),
            embedding: None,
            entities: Vec::new(),
            relations: Vec::new(),
            source: None,
        }
    }

    document_setters!(owner Chunk, "chunk");

    /// Names the file the chunk was cut from.
    #[must_use]
    pub fn with_source(mut self, source: Source) -> Chunk {
        self.source = Some(source);
        self
    }

    /// The text indexed and embedded for the chunk: its source's heading path on a line
    /// of its own, then the content (the content alone without headings).
    pub fn text(&self) -> String {
        match &self.source {
            Some(source) if !source.headings.is_empty() => {
                format!(
                    "{}\n{}",
                    source.headings.join(HEADING_SEPARATOR),
                    self.content
                )
            }
            _ => self.content.clone(),
        }
    }

    /// Sets the context.
    #[must_use]
    pub fn with_context(mut self, context_id: impl Into<String>) -> Chunk {
        self.context_id = Some(context_id.into());
        self
    }

    /// Names the memory the chunk was cut from.
    #[must_use]
    pub fn with_memory(mut self, memory_id: impl Into<String>) -> Chunk {
        self.memory_id = Some(memory_id.into());
        self
    }

    /// Sets the importance (1..=10; checked by [`Chunk::validate`]).
    #[must_use]
    pub fn with_importance(mut self, importance: u8) -> Chunk {
        self.importance = Some(importance);
        self
    }

    /// Sets the creation time.
    #[must_use]
    pub fn with_created_at(mut self, created_at: Timestamp) -> Chunk {
        self.created_at = Some(created_at);
        self
    }

    /// Sets the expiry time.
    #[must_use]
    pub fn with_expires_at(mut self, expires_at: Timestamp) -> Chunk {
        self.expires_at = Some(expires_at);
        self
    }

    /// Adds one metadata entry.
    #[must_use]
    pub fn with_metadata(
        mut self,
        key: impl Into<String>,
        value: impl Into<serde_json::Value>,
    ) -> Chunk {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Sets the chunk's own embedding.
    #[must_use]
    pub fn with_embedding(mut self, embedding: Vec<f32>) -> Chunk {
        self.embedding = Some(embedding);
        self
    }

    /// Whether the chunk has expired at `now`.
    pub fn is_expired(&self, now: Timestamp) -> bool {
        self.expires_at.is_some_and(|expires_at| expires_at <= now)
    }

    /// Adds entities the chunk is about.
    pub fn with_entities<S: Into<String>>(
        mut self,
        entities: impl IntoIterator<Item = S>,
    ) -> Chunk {
        self.entities.extend(entities.into_iter().map(Into::into));
        self
    }

    /// Adds a typed link to another chunk (by id) or to an entity.
    pub fn with_relation(mut self, kind: impl Into<String>, target: impl Into<String>) -> Chunk {
        self.relations.push(Relation::new(kind, target));
        self
    }

    /// Checks every field.
    ///
    /// # Errors
    ///
    /// Returns [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) naming the
    /// field (an importance outside 1..=10 is an error, never clamped), or
    /// [`ErrorKind::NonFiniteScore`](crate::ErrorKind::NonFiniteScore) for a NaN or
    /// infinite vector component.
    pub fn validate(&self) -> Result<()> {
        check_name("id", &self.id)?;
        check_name("tenant_id", &self.tenant_id)?;
        for (field, value) in [
            ("agent_id", &self.agent_id),
            ("context_id", &self.context_id),
            ("memory_id", &self.memory_id),
        ] {
            if let Some(value) = value {
                check_name(field, value)?;
            }
        }
        if self.content.trim().is_empty() {
            return Err(Error::invalid_input(format!(
                "chunk `{}`: `content` must not be empty or blank",
                self.id
            )));
        }
        check_importance(self.importance)
            .map_err(|message| Error::invalid_input(format!("chunk `{}`: {message}", self.id)))?;
        check_links("chunk", &self.id, &self.entities, &self.relations)?;
        if let Some(embedding) = &self.embedding {
            check_vector("embedding", embedding)?;
        }
        if let Some(source) = &self.source {
            source
                .validate()
                .map_err(|err| Error::invalid_input(format!("chunk `{}`: {err}", self.id)))?;
        }
        Ok(())
    }
}

/// A typed link from a document to another document of its kind and tenant (by id) or
/// to an entity: `{"type": "depends_on", "target": "refund-policy"}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Relation {
    /// What the link means (`depends_on`, `excludes`, `placed_by`, ...): free text, kept
    /// and returned.
    #[serde(rename = "type")]
    pub kind: String,
    /// A document id of the same kind and tenant, or an entity.
    pub target: String,
}

impl Relation {
    /// A relation of type `kind` to `target`.
    pub fn new(kind: impl Into<String>, target: impl Into<String>) -> Relation {
        Relation {
            kind: kind.into(),
            target: target.into(),
        }
    }
}

/// The most entities or relations one document may carry.
const MAX_LINKS: usize = 256;

/// Checks a document's entities and relations.
fn check_links(what: &str, id: &str, entities: &[String], relations: &[Relation]) -> Result<()> {
    for (field, n) in [("entities", entities.len()), ("relations", relations.len())] {
        if n > MAX_LINKS {
            return Err(Error::invalid_input(format!(
                "{what} `{id}`: `{field}` has {n} entries (at most {MAX_LINKS})"
            )));
        }
    }
    for entity in entities {
        check_name("entities", entity)?;
    }
    for relation in relations {
        check_name("relations.type", &relation.kind)?;
        check_name("relations.target", &relation.target)?;
    }
    Ok(())
}

/// A stored document of any kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Document {
    /// A rule.
    Rule(Rule),
    /// A chunk.
    Chunk(Chunk),
    /// A scenario.
    Scenario(Scenario),
    /// A tool.
    Tool(Tool),
}

impl Document {
    /// The document's kind.
    pub fn kind(&self) -> Kind {
        match self {
            Document::Rule(_) => Kind::Rule,
            Document::Chunk(_) => Kind::Chunk,
            Document::Scenario(_) => Kind::Scenario,
            Document::Tool(_) => Kind::Tool,
        }
    }

    /// The user's id.
    pub fn id(&self) -> &str {
        match self {
            Document::Rule(rule) => &rule.id,
            Document::Chunk(chunk) => &chunk.id,
            Document::Scenario(scenario) => &scenario.id,
            Document::Tool(tool) => &tool.id,
        }
    }

    /// The tenant.
    pub fn tenant_id(&self) -> &str {
        match self {
            Document::Rule(rule) => &rule.tenant_id,
            Document::Chunk(chunk) => &chunk.tenant_id,
            Document::Scenario(scenario) => &scenario.tenant_id,
            Document::Tool(tool) => &tool.tenant_id,
        }
    }

    /// The agent the document is restricted to, if any.
    pub fn agent_id(&self) -> Option<&str> {
        match self {
            Document::Rule(rule) => rule.agent_id.as_deref(),
            Document::Chunk(chunk) => chunk.agent_id.as_deref(),
            Document::Scenario(scenario) => scenario.agent_id.as_deref(),
            Document::Tool(tool) => tool.agent_id.as_deref(),
        }
    }

    /// The rule, if this is one.
    pub fn as_rule(&self) -> Option<&Rule> {
        match self {
            Document::Rule(rule) => Some(rule),
            _ => None,
        }
    }

    /// The chunk, if this is one.
    pub fn as_chunk(&self) -> Option<&Chunk> {
        match self {
            Document::Chunk(chunk) => Some(chunk),
            _ => None,
        }
    }

    /// The scenario, if this is one.
    pub fn as_scenario(&self) -> Option<&Scenario> {
        match self {
            Document::Scenario(scenario) => Some(scenario),
            _ => None,
        }
    }

    /// The tool, if this is one.
    pub fn as_tool(&self) -> Option<&Tool> {
        match self {
            Document::Tool(tool) => Some(tool),
            _ => None,
        }
    }

    /// The text of the text leg: a rule's condition and action, a chunk's content (after
    /// its heading path, when it has one), a
    /// scenario's or a tool's name and description.
    pub fn text(&self) -> String {
        match self {
            Document::Rule(rule) => rule.text(),
            Document::Chunk(chunk) => chunk.text(),
            Document::Scenario(scenario) => scenario.text(),
            Document::Tool(tool) => tool.text(),
        }
    }

    /// The example messages that should match the document, each with a vector of its
    /// own: a rule's patterns, a scenario's or a tool's examples (none for a chunk).
    pub fn examples(&self) -> &[String] {
        match self {
            Document::Rule(rule) => &rule.patterns,
            Document::Chunk(_) => &[],
            Document::Scenario(scenario) => &scenario.examples,
            Document::Tool(tool) => &tool.examples,
        }
    }

    /// The text the text leg indexes: [`Document::text`], followed by the examples when
    /// `with_examples` (`fusion.patterns_in_text`).
    pub(crate) fn indexed_text(&self, with_examples: bool) -> String {
        let examples = self.examples();
        if with_examples && !examples.is_empty() {
            format!("{} {}", self.text(), examples.join(" "))
        } else {
            self.text()
        }
    }

    /// The file the document was read from, for the kinds that carry one (rules, chunks,
    /// tools).
    pub fn source(&self) -> Option<&Source> {
        match self {
            Document::Rule(rule) => rule.source.as_ref(),
            Document::Chunk(chunk) => chunk.source.as_ref(),
            Document::Tool(tool) => tool.source.as_ref(),
            Document::Scenario(_) => None,
        }
    }

    /// The document's own main embedding, when it brings one.
    pub fn embedding(&self) -> Option<&[f32]> {
        match self {
            Document::Rule(rule) => rule.embedding.as_deref(),
            Document::Chunk(chunk) => chunk.embedding.as_deref(),
            Document::Scenario(scenario) => scenario.embedding.as_deref(),
            Document::Tool(tool) => tool.embedding.as_deref(),
        }
    }

    /// Whether the document brings vectors of its own (a main embedding or its
    /// examples').
    pub fn has_embeddings(&self) -> bool {
        match self {
            Document::Rule(rule) => rule.embedding.is_some() || rule.pattern_embeddings.is_some(),
            Document::Chunk(chunk) => chunk.embedding.is_some(),
            Document::Scenario(s) => s.embedding.is_some() || s.example_embeddings.is_some(),
            Document::Tool(t) => t.embedding.is_some() || t.example_embeddings.is_some(),
        }
    }

    /// Takes the document's own vectors out of it: the main embedding and one per
    /// example (`None` when not given).
    pub(crate) fn take_embeddings(&mut self) -> (Option<Vec<f32>>, Option<Vec<Vec<f32>>>) {
        match self {
            Document::Rule(rule) => (rule.embedding.take(), rule.pattern_embeddings.take()),
            Document::Chunk(chunk) => (chunk.embedding.take(), None),
            Document::Scenario(s) => (s.embedding.take(), s.example_embeddings.take()),
            Document::Tool(t) => (t.embedding.take(), t.example_embeddings.take()),
        }
    }

    /// Gives the document its vectors back (`examples`: one per example, when any).
    pub(crate) fn set_embeddings(
        &mut self,
        main: Option<Vec<f32>>,
        examples: Option<Vec<Vec<f32>>>,
    ) {
        match self {
            Document::Rule(rule) => {
                rule.embedding = main;
                rule.pattern_embeddings = examples;
            }
            Document::Chunk(chunk) => chunk.embedding = main,
            Document::Scenario(s) => {
                s.embedding = main;
                s.example_embeddings = examples;
            }
            Document::Tool(t) => {
                t.embedding = main;
                t.example_embeddings = examples;
            }
        }
    }

    /// Checks every field, as an upsert does.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) naming the field.
    pub fn validate(&self) -> Result<()> {
        match self {
            Document::Rule(rule) => rule.validate(),
            Document::Chunk(chunk) => chunk.validate(),
            Document::Scenario(scenario) => scenario.validate(),
            Document::Tool(tool) => tool.validate(),
        }
    }
}

impl From<Rule> for Document {
    fn from(rule: Rule) -> Document {
        Document::Rule(rule)
    }
}

impl From<Chunk> for Document {
    fn from(chunk: Chunk) -> Document {
        Document::Chunk(chunk)
    }
}

impl From<Scenario> for Document {
    fn from(scenario: Scenario) -> Document {
        Document::Scenario(scenario)
    }
}

impl From<Tool> for Document {
    fn from(tool: Tool) -> Document {
        Document::Tool(tool)
    }
}

/// The scope names of the JSONL format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ScopeName {
    Global,
    Scenario,
    Step,
}

/// The flat JSONL form of a rule.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleRecord {
    id: String,
    condition: String,
    action: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    priority: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scope: Option<ScopeName>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scenario_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    step_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tenant_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    patterns: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    embedding: Option<Vec<f32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pattern_embeddings: Option<Vec<Vec<f32>>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    entities: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    relations: Vec<Relation>,
    #[serde(default, skip_serializing_if = "is_relevant")]
    apply: Apply,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    globs: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    folder: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source: Option<Source>,
}

fn is_relevant(apply: &Apply) -> bool {
    *apply == Apply::Relevant
}

fn is_zero(value: &i32) -> bool {
    *value == 0
}

impl TryFrom<RuleRecord> for Rule {
    type Error = String;

    fn try_from(record: RuleRecord) -> std::result::Result<Rule, String> {
        let scope_name = match record.scope {
            Some(name) => name,
            // Without an explicit scope, the most specific id given decides it.
            None if record.step_id.is_some() => ScopeName::Step,
            None if record.scenario_id.is_some() => ScopeName::Scenario,
            None => ScopeName::Global,
        };
        let scope = match (scope_name, record.scenario_id, record.step_id) {
            (ScopeName::Global, None, None) => Scope::Global,
            (ScopeName::Global, _, _) => {
                return Err("scope `global` takes no `scenario_id` or `step_id`".to_string());
            }
            (ScopeName::Scenario, Some(scenario_id), None) => Scope::Scenario { scenario_id },
            (ScopeName::Scenario, None, _) => {
                return Err("scope `scenario` needs a `scenario_id`".to_string());
            }
            (ScopeName::Scenario, Some(_), Some(_)) => {
                return Err("scope `scenario` takes no `step_id` (use scope `step`)".to_string());
            }
            (ScopeName::Step, Some(scenario_id), Some(step_id)) => Scope::Step {
                scenario_id,
                step_id,
            },
            (ScopeName::Step, _, _) => {
                return Err("scope `step` needs a `scenario_id` and a `step_id`".to_string());
            }
        };
        let rule = Rule {
            id: record.id,
            tenant_id: record
                .tenant_id
                .unwrap_or_else(|| DEFAULT_TENANT.to_string()),
            agent_id: record.agent_id,
            scope,
            condition: record.condition,
            action: record.action,
            priority: record.priority,
            enabled: record.enabled.unwrap_or(true),
            tags: record.tags,
            patterns: record.patterns,
            embedding: record.embedding,
            pattern_embeddings: record.pattern_embeddings,
            entities: record.entities,
            relations: record.relations,
            apply: record.apply,
            globs: record.globs,
            folder: record.folder,
            body: record.body,
            source: record.source,
        };
        rule.validate().map_err(|err| err.to_string())?;
        Ok(rule)
    }
}

impl From<Rule> for RuleRecord {
    fn from(rule: Rule) -> RuleRecord {
        let (scope, scenario_id, step_id) = match rule.scope {
            Scope::Global => (None, None, None),
            Scope::Scenario { scenario_id } => (Some(ScopeName::Scenario), Some(scenario_id), None),
            Scope::Step {
                scenario_id,
                step_id,
            } => (Some(ScopeName::Step), Some(scenario_id), Some(step_id)),
        };
        RuleRecord {
            id: rule.id,
            condition: rule.condition,
            action: rule.action,
            priority: rule.priority,
            scope,
            scenario_id,
            step_id,
            tenant_id: (rule.tenant_id != DEFAULT_TENANT).then_some(rule.tenant_id),
            agent_id: rule.agent_id,
            enabled: (!rule.enabled).then_some(false),
            tags: rule.tags,
            patterns: rule.patterns,
            embedding: rule.embedding,
            pattern_embeddings: rule.pattern_embeddings,
            entities: rule.entities,
            relations: rule.relations,
            apply: rule.apply,
            globs: rule.globs,
            folder: rule.folder,
            body: rule.body,
            source: rule.source,
        }
    }
}

/// The JSONL form of a chunk.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChunkRecord {
    id: String,
    content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    importance: Option<serde_json::Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tenant_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    memory_id: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    metadata: BTreeMap<String, serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    embedding: Option<Vec<f32>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    entities: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    relations: Vec<Relation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source: Option<Source>,
}

impl TryFrom<ChunkRecord> for Chunk {
    type Error = String;

    fn try_from(record: ChunkRecord) -> std::result::Result<Chunk, String> {
        let importance = match record.importance {
            None => None,
            Some(number) => match number.as_u64() {
                Some(i @ 1..=10) => Some(i as u8),
                _ => {
                    return Err(format!(
                        "`importance` must be an integer from 1 to 10, got {number}"
                    ));
                }
            },
        };
        let chunk = Chunk {
            id: record.id,
            tenant_id: record
                .tenant_id
                .unwrap_or_else(|| DEFAULT_TENANT.to_string()),
            agent_id: record.agent_id,
            context_id: record.context_id,
            memory_id: record.memory_id,
            content: record.content,
            importance,
            created_at: record.created_at,
            expires_at: record.expires_at,
            metadata: record.metadata,
            embedding: record.embedding,
            entities: record.entities,
            relations: record.relations,
            source: record.source,
        };
        chunk.validate().map_err(|err| err.to_string())?;
        Ok(chunk)
    }
}

impl From<Chunk> for ChunkRecord {
    fn from(chunk: Chunk) -> ChunkRecord {
        ChunkRecord {
            id: chunk.id,
            content: chunk.content,
            importance: chunk.importance.map(serde_json::Number::from),
            created_at: chunk.created_at,
            expires_at: chunk.expires_at,
            tenant_id: (chunk.tenant_id != DEFAULT_TENANT).then_some(chunk.tenant_id),
            agent_id: chunk.agent_id,
            context_id: chunk.context_id,
            memory_id: chunk.memory_id,
            metadata: chunk.metadata,
            embedding: chunk.embedding,
            entities: chunk.entities,
            relations: chunk.relations,
            source: chunk.source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn rule_err(json: &str, expected: &str) {
        let err = serde_json::from_str::<Rule>(json).unwrap_err().to_string();
        assert!(err.contains(expected), "{err}");
    }

    #[test]
    fn rule_defaults() {
        let rule: Rule =
            serde_json::from_str(r#"{"id":"r1","condition":"c","action":"a"}"#).unwrap();
        assert_eq!(rule, Rule::new("r1", "c", "a"));
        assert_eq!(
            serde_json::to_string(&rule).unwrap(),
            r#"{"id":"r1","condition":"c","action":"a"}"#
        );
    }

    #[test]
    fn rule_scopes() {
        let rule: Rule = serde_json::from_str(
            r#"{"id":"r","condition":"c","action":"a","scope":"step","scenario_id":"s","step_id":"t"}"#,
        )
        .unwrap();
        assert_eq!(rule.scope, Scope::step("s", "t"));
        let inferred: Rule =
            serde_json::from_str(r#"{"id":"r","condition":"c","action":"a","scenario_id":"s"}"#)
                .unwrap();
        assert_eq!(inferred.scope, Scope::scenario("s"));
        rule_err(
            r#"{"id":"r","condition":"c","action":"a","scope":"scenario"}"#,
            "needs a `scenario_id`",
        );
        rule_err(
            r#"{"id":"r","condition":"c","action":"a","scope":"step","scenario_id":"s"}"#,
            "needs a `scenario_id` and a `step_id`",
        );
        rule_err(
            r#"{"id":"r","condition":"c","action":"a","scope":"galaxy"}"#,
            "unknown variant `galaxy`",
        );
    }

    #[test]
    fn rule_rejects_bad_fields() {
        rule_err(
            r#"{"id":"r","condition":"c","action":"a","colour":1}"#,
            "unknown field `colour`",
        );
        rule_err(
            r#"{"id":"","condition":"c","action":"a"}"#,
            "`id` must not be empty",
        );
        rule_err(
            r#"{"id":"r","condition":" ","action":"a"}"#,
            "`condition` must not be empty",
        );
        rule_err(r#"{"id":"r","action":"a"}"#, "missing field `condition`");
        rule_err(
            r#"{"id":"r","condition":"c","action":"a","patterns":["x"],"pattern_embeddings":[]}"#,
            "has 0 vectors but `patterns` has 1",
        );
        rule_err(
            r#"{"id":"r","condition":"c","action":"a","embedding":[]}"#,
            "must not be empty",
        );
    }

    #[test]
    fn chunk_round_trip() {
        let json = r#"{"id":"c1","content":"hello","importance":7,"created_at":"2026-11-21T00:00:00Z","tenant_id":"t","context_id":"u1","metadata":{"source":"chat"}}"#;
        let chunk: Chunk = serde_json::from_str(json).unwrap();
        assert_eq!(chunk.importance, Some(7));
        assert_eq!(chunk.tenant_id, "t");
        assert_eq!(serde_json::to_string(&chunk).unwrap(), json);
        let unix: Chunk =
            serde_json::from_str(r#"{"id":"c1","content":"x","created_at":1795219200}"#).unwrap();
        assert_eq!(unix.created_at, chunk.created_at);
    }

    #[test]
    fn chunk_importance_out_of_range_is_an_error() {
        for bad in ["0", "11", "5.5", "-1", "\"5\""] {
            let json = format!(r#"{{"id":"c","content":"x","importance":{bad}}}"#);
            assert!(serde_json::from_str::<Chunk>(&json).is_err(), "{bad}");
        }
        assert!(Chunk::new("c", "x").with_importance(11).validate().is_err());
    }
}
