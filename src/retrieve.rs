//! The seam between where candidates come from and what ruchedb decides about them.
//!
//! A [`Retriever`] runs the two legs of a search (BM25 and vector) over some store of
//! documents and returns [`RetrievedDoc`]s: each document with each leg's raw score, how
//! much of the query text it contains, and the document itself (its priority, scope,
//! importance and timestamps are what ranking weighs). [`search_with`](crate::rank::search_with) then does
//! everything else, without I/O: fusion, the relevance gate, priority and scope or
//! importance and recency, the deterministic tiebreak, k-selection and explain.
//!
//! The local index ([`Engine`](crate::Engine)) is one retriever; the `ruchedb-milvus`
//! crate is another; a user can write their own and call
//! [`search_with`](crate::rank::search_with) with it.
//!
//! # The contract
//!
//! - Candidates are filtered: every one is of the query's kind and tenant and passes
//!   every filter of the request ([`SearchRequest`]) at [`RetrievalQuery::now`].
//! - Each leg returns at most [`RetrievalQuery::limit`] candidates, its best ones.
//! - [`Retriever::retrieve`] marks which legs found each candidate ([`PerLeg<bool>`]) and
//!   gives at least those legs' scores; [`Retriever::fill`] then gives every candidate
//!   the score of the leg that did not find it (a BM25 score of 0 or `None` means the
//!   text does not match), its [`Coverage`] and its best [`VectorMatch`].
//! - Scores are raw and higher-is-better: BM25 as the engine computes it (any scale: the
//!   fusion normalises it), cosine similarity in `[-1, 1]`.

use std::sync::Arc;

use crate::Apply;
use crate::analysis::is_stop_word;
use crate::analysis::text::{self as analyzer, Analysis};
pub use crate::model::apply::AppliedBy;
use crate::model::apply::in_folder;
use crate::model::doc::{Document, Scope};
use crate::model::leg::PerLeg;
use crate::model::time::Timestamp;
use crate::query::{SearchRequest, VectorMatch};
use crate::relevance::EmbedderFamily;
use crate::{Kind, Result};

/// What a retriever is asked for: the request (kind, tenant, filters, text) and what the
/// pipeline decided around it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct RetrievalQuery<'a> {
    /// The search request: kind, tenant and every filter apply to both legs.
    pub request: &'a SearchRequest,
    /// The normalised query vector; `None`: the vector leg does not run.
    pub vector: Option<&'a [f32]>,
    /// Each leg's most candidates.
    pub limit: usize,
    /// The time filters (expiry) are evaluated at.
    pub now: Timestamp,
    /// A browse of chunks ([`SearchRequest::browse`]) with no query text and no vector:
    /// every document that passes the filters is a candidate (by importance and
    /// recency).
    pub browse: bool,
    /// The family of the embedder that made [`RetrievalQuery::vector`] (what a
    /// [`Retrieved::background`] is computed for); the pipeline sets it.
    pub family: EmbedderFamily,
}

impl<'a> RetrievalQuery<'a> {
    /// A query for `request` with the pipeline's choices.
    pub fn new(
        request: &'a SearchRequest,
        vector: Option<&'a [f32]>,
        limit: usize,
        now: Timestamp,
    ) -> RetrievalQuery<'a> {
        let browse = request.browse
            && request.kind() == Kind::Chunk
            && request.text().trim().is_empty()
            && vector.is_none();
        RetrievalQuery {
            request,
            vector,
            limit,
            now,
            browse,
            family: EmbedderFamily::MiniLm,
        }
    }
}

impl RetrievalQuery<'_> {
    /// Whether `document` passes every filter of the request at [`RetrievalQuery::now`]:
    /// kind, tenant, agent, scope and `enabled` (rules), context and expiry (chunks),
    /// tags and metadata. The one definition both local legs use; a retriever whose
    /// store cannot express a filter applies this to what it returns.
    pub fn admits(&self, document: &Document) -> bool {
        self.filter().matches(document)
    }

    /// The catalog filter of this query.
    pub(crate) fn filter(&self) -> crate::retrieve::DocFilter<'_> {
        let request = self.request;
        crate::retrieve::DocFilter {
            kind: request.kind,
            tenant: &request.tenant_id,
            agent: request.agent_id.as_deref(),
            scenario: request.scenario_id.as_deref(),
            step: request.step_id.as_deref(),
            context: request.context_id.as_deref(),
            tags: &request.tags,
            metadata: &request.filters,
            files: &request.files,
            now: self.now,
        }
    }
}

/// How much of a query one document contains.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Coverage {
    /// The idf-weighted fraction of the query's words (function words left out) the
    /// document contains, in `[0, 1]`.
    pub words: f32,
    /// How many of the query's codes (identifiers such as `NW-15699`) the document
    /// contains verbatim.
    pub codes: u32,
    /// Which of the query's words the document contains: bit `i` for the `i`-th word
    /// (function words and the words of codes left out; the first 64).
    pub matched: u64,
}

/// A document a retriever found, with what ranking needs to know about it.
#[derive(Debug, Clone)]
pub struct RetrievedDoc {
    /// The document: its kind, tenant and id are the candidate's key.
    pub document: Arc<Document>,
    /// Raw BM25; `None` when the text does not match (or the text leg did not run).
    pub bm25: Option<f64>,
    /// Cosine similarity of the query vector and the document's best vector; `None`
    /// when the vector leg did not run or the document has no vector.
    pub cosine: Option<f32>,
    /// How much of the query text the document contains.
    pub coverage: Coverage,
    /// Which of the document's vectors gave `cosine`.
    pub vector_match: Option<VectorMatch>,
    /// Which legs returned it among their best.
    pub found_by: PerLeg<bool>,
    /// The graph leg's score; `None` when it did not reach the document.
    pub graph: Option<f64>,
    /// The strongest path that reached it.
    pub graph_path: Option<crate::query::GraphPath>,
    /// For a turn of a conversation (a chunk of a context), the ids of the turns written
    /// just before and just after it, when the retriever knows them: ranking lends a
    /// turn part of its neighbours' relevance ([`crate::config::ScoringConfig::neighbour_weight`]).
    /// A retriever that knows them also returns a candidate's neighbours as candidates.
    pub neighbours: [Option<String>; 2],
    /// The cosine of the query vector and the document's centroid (the normalised mean
    /// of its text's and examples' vectors; its one vector when it has one), when the
    /// retriever knows it: with [`Retrieved::background`], what the relevance of a
    /// rule or tool with examples is made of.
    pub centroid: Option<f32>,
}

impl RetrievedDoc {
    /// A candidate with no score yet.
    pub fn new(document: Arc<Document>) -> RetrievedDoc {
        RetrievedDoc {
            document,
            bm25: None,
            cosine: None,
            coverage: Coverage::default(),
            vector_match: None,
            found_by: PerLeg::NONE,
            graph: None,
            graph_path: None,
            neighbours: [None, None],
            centroid: None,
        }
    }

    /// The document's id.
    pub fn id(&self) -> &str {
        self.document.id()
    }
}

/// What a retriever returns: the candidates of both legs, and which legs ran.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Retrieved {
    /// Every candidate once, in any order.
    pub candidates: Vec<RetrievedDoc>,
    /// Which legs ran ([`PerLeg::NONE`]: none, as when there is no text to match and no
    /// vector). Relevance is calibrated by which of the text and vector legs ran.
    pub legs: PerLeg<bool>,
    /// How many candidates each leg returned.
    pub leg_candidates: PerLeg<usize>,
    /// Time each leg took, in microseconds (for [`Timings`](crate::query::Timings)).
    pub micros: PerLeg<u64>,
    /// Time [`Retriever::fill`] took, in microseconds.
    pub fill_micros: u64,
    /// The query entities the graph leg started from; empty when it did not run (the
    /// query names no entity the graph knows, or the retriever has no graph).
    pub graph_entities: Vec<String>,
    /// The dot product of the query vector with the mean direction of the searched
    /// kind's documents of the tenant (see [`background_of`](crate::relevance::background_of)), when the
    /// retriever knows it; `None` keeps the relevance of rules and tools to its
    /// two-term form.
    pub background: Option<f64>,
    /// The rarity of the query's words in the searched scope: the sum of their idf over
    /// `ln(1 + documents)`, `Some(0.0)` when the query has none; `None` when the retriever
    /// does not know it (the memory anchor then does not apply).
    pub query_information: Option<f32>,
}

impl Retrieved {
    /// What a retriever found.
    pub fn new(
        candidates: Vec<RetrievedDoc>,
        legs: PerLeg<bool>,
        leg_candidates: PerLeg<usize>,
    ) -> Retrieved {
        Retrieved {
            candidates,
            legs,
            leg_candidates,
            micros: PerLeg::default(),
            fill_micros: 0,
            graph_entities: Vec::new(),
            background: None,
            query_information: None,
        }
    }
}

/// Where candidates come from: the local index, a distributed engine, or your own.
pub trait Retriever {
    /// The dimension of the vectors of `kind`'s documents the retriever searches; `None`
    /// when it holds none (the vector leg then does not run). A query vector of another
    /// dimension is refused before any leg runs.
    fn dimensions(&self, kind: Kind) -> Option<usize>;

    /// Runs both legs (those that can run) and returns their candidates, each with the
    /// scores of the legs that found it.
    ///
    /// # Errors
    ///
    /// Storage or network errors, and invalid requests the retriever cannot serve.
    fn retrieve(&self, query: &RetrievalQuery<'_>) -> Result<Retrieved>;

    /// Gives each candidate the score of the leg that did not find it, its coverage of
    /// the query text and its best vector match. Candidates whose scores are already
    /// there may be left as they are.
    ///
    /// # Errors
    ///
    /// Storage or network errors.
    fn fill(&self, query: &RetrievalQuery<'_>, candidates: &mut [RetrievedDoc]) -> Result<()>;

    /// The rules a rule search applies whatever their relevance: those [`applied_by`]
    /// says apply (always, by a named file, by name), in any order. Asked for every
    /// search of rules. The default finds none: a retriever whose rules are all applied
    /// by relevance may keep it.
    ///
    /// # Errors
    ///
    /// Storage or network errors.
    fn applied_rules(&self, query: &RetrievalQuery<'_>) -> Result<Vec<Arc<Document>>> {
        let _ = query;
        Ok(Vec::new())
    }

    /// [`Retriever::retrieve`], then [`Retriever::fill`]: what the pipeline calls. A
    /// retriever whose `retrieve` already fills its candidates overrides it.
    ///
    /// # Errors
    ///
    /// As those two.
    fn candidates(&self, query: &RetrievalQuery<'_>) -> Result<Retrieved> {
        let mut retrieved = self.retrieve(query)?;
        let started = std::time::Instant::now();
        self.fill(query, &mut retrieved.candidates)?;
        retrieved.fill_micros += u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        Ok(retrieved)
    }
}

/// The text the BM25 leg indexes for a document: [`Document::text`] (a rule's condition
/// and action, a chunk's content, a scenario's or a tool's name and description), and
/// its examples (a rule's patterns) when `patterns_in_text`.
pub fn indexed_text(document: &Document, patterns_in_text: bool) -> String {
    document.indexed_text(patterns_in_text)
}

/// How much of `query` the text `document` contains, measured with the local index's
/// analyzers: the fraction of the query's words (function words and the words of its
/// codes left out) the document holds, each weighted by `idf(word)` (pass `|_| 1.0` when the corpus statistics are
/// unknown), and how many of the query's codes it holds verbatim.
///
/// For retrievers that cannot measure it in their index; the local index measures it
/// from its postings, with the tenant's idf.
///
/// # Example
///
/// ```
/// let c = ruchedb::retrieve::coverage("order NW-15699 is late", "Order NW-15699 shipped", &|_| 1.0);
/// assert_eq!(c.codes, 1);
/// assert_eq!(c.words, 0.5); // `order` of `order` and `late`: the code counts apart
/// // Another order's note covers the words as well: the code is not a word it lacks.
/// let other = ruchedb::retrieve::coverage("order NW-15699 is late", "Order NW-20000 is late", &|_| 1.0);
/// assert_eq!((other.codes, other.words), (0, 1.0));
/// ```
pub fn coverage(query: &str, document: &str, idf: &dyn Fn(&str) -> f64) -> Coverage {
    let doc_words: std::collections::HashSet<String> = analyzer::tokens(Analysis::Words, document)
        .into_iter()
        .collect();
    let doc_ident: std::collections::HashSet<String> = analyzer::tokens(Analysis::Ident, document)
        .into_iter()
        .collect();
    let mut seen: Vec<String> = Vec::new();
    let (mut held, mut total) = (0.0f64, 0.0f64);
    let mut matched = 0u64;
    let mut of_codes = analyzer::words_of_codes(query);
    for (token, source) in analyzer::tokens_with_source(Analysis::Words, query) {
        let in_code = analyzer::take_one(&mut of_codes, &token);
        if in_code || is_stop_word(&source.to_lowercase()) || seen.contains(&token) {
            continue;
        }
        let weight = idf(&token).max(0.0);
        total += weight;
        if doc_words.contains(&token) {
            held += weight;
            if seen.len() < 64 {
                matched |= 1 << seen.len();
            }
        }
        seen.push(token);
    }
    let mut codes: Vec<String> = analyzer::tokens(Analysis::Ident, query)
        .into_iter()
        .filter(|token| analyzer::is_code(token))
        .collect();
    codes.sort();
    codes.dedup();
    Coverage {
        words: if total > 0.0 {
            (held / total).clamp(0.0, 1.0) as f32
        } else {
            0.0
        },
        codes: codes.iter().filter(|c| doc_ident.contains(*c)).count() as u32,
        matched,
    }
}

/// What a search admits, checked against every candidate of both legs.
#[derive(Debug, Clone)]
pub(crate) struct DocFilter<'a> {
    pub(crate) kind: Kind,
    pub(crate) tenant: &'a str,
    pub(crate) agent: Option<&'a str>,
    pub(crate) scenario: Option<&'a str>,
    pub(crate) step: Option<&'a str>,
    pub(crate) context: Option<&'a str>,
    pub(crate) tags: &'a [String],
    pub(crate) metadata: &'a [(String, String)],
    /// The files the request names: a rule for a folder is a candidate only when one
    /// is inside it.
    pub(crate) files: &'a [String],
    /// Chunks expired at this time are excluded.
    pub(crate) now: Timestamp,
}

impl DocFilter<'_> {
    /// Whether a rule's tenant, agent, `enabled` and scope admit it.
    pub(crate) fn rule_in_scope(&self, rule: &crate::Rule) -> bool {
        if rule.tenant_id != self.tenant
            || !rule.enabled
            || !agent_matches(rule.agent_id.as_deref(), self.agent)
        {
            return false;
        }
        match &rule.scope {
            Scope::Global => true,
            Scope::Scenario { scenario_id } => self.scenario == Some(scenario_id),
            Scope::Step {
                scenario_id,
                step_id,
            } => self.scenario == Some(scenario_id) && self.step == Some(step_id),
        }
    }

    pub(crate) fn matches(&self, doc: &Document) -> bool {
        if doc.kind() != self.kind || doc.tenant_id() != self.tenant {
            return false;
        }
        match doc {
            Document::Rule(rule) => {
                // Rules applied otherwise than by relevance never come from the legs
                // (see `applied_rules`).
                if rule.apply != Apply::Relevant || !self.rule_in_scope(rule) {
                    return false;
                }
                let for_files = match &rule.folder {
                    Some(folder) if !self.files.is_empty() => {
                        self.files.iter().any(|file| in_folder(folder, file))
                    }
                    _ => true,
                };
                for_files && self.tags.iter().all(|tag| rule.tags.contains(tag))
            }
            Document::Chunk(chunk) => {
                agent_matches(chunk.agent_id.as_deref(), self.agent)
                    && self
                        .context
                        .is_none_or(|context| chunk.context_id.as_deref() == Some(context))
                    && !chunk.is_expired(self.now)
                    && self.tags.iter().all(|tag| chunk_has_tag(chunk, tag))
                    && self.metadata.iter().all(|(key, value)| {
                        chunk
                            .metadata
                            .get(key)
                            .is_some_and(|found| json_equals(found, value))
                    })
            }
            Document::Scenario(scenario) => {
                scenario.enabled
                    && agent_matches(scenario.agent_id.as_deref(), self.agent)
                    && self.tags.iter().all(|tag| scenario.tags.contains(tag))
            }
            Document::Tool(tool) => {
                tool.enabled
                    && agent_matches(tool.agent_id.as_deref(), self.agent)
                    && self.tags.iter().all(|tag| tool.tags.contains(tag))
            }
        }
    }
}

/// Why `rule` applies to `query` whatever its relevance, if it does: in scope (tenant,
/// agent, `enabled`, scenario and step) and always applied, or with globs that match a
/// file the request names (for a rule applied by relevance or by files), or named by
/// the request. `None` for any search but one of rules.
pub fn applied_by(query: &RetrievalQuery<'_>, rule: &crate::Rule) -> Option<AppliedBy> {
    let request = query.request;
    let filter = query.filter();
    if request.kind != Kind::Rule
        || !filter.rule_in_scope(rule)
        || !filter.tags.iter().all(|tag| rule.tags.contains(tag))
    {
        return None;
    }
    if rule.apply == Apply::Always {
        return Some(AppliedBy::Always);
    }
    if matches!(rule.apply, Apply::Files | Apply::Relevant)
        && !rule.globs.is_empty()
        && crate::model::apply::globs_match(&rule.globs, &request.files)
    {
        return Some(AppliedBy::File);
    }
    let named = |name: &str| name == rule.id || name == rule.name();
    if request.named.iter().any(|n| named(n)) || mentions(&request.text).any(named) {
        return Some(AppliedBy::Named);
    }
    None
}

/// The `@name` mentions of a text (`@python-style`): letters, digits, `-`, `_`, `.`.
pub(crate) fn mentions(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '"' | '\''))
        .filter_map(|word| word.strip_prefix('@'))
        .map(|name| name.trim_end_matches(['.', ':', '!', '?']))
        .filter(|name| !name.is_empty())
}

/// A document without agent applies to every agent; a query without agent sees all.
fn agent_matches(doc_agent: Option<&str>, query_agent: Option<&str>) -> bool {
    match (doc_agent, query_agent) {
        (None, _) | (_, None) => true,
        (Some(doc), Some(query)) => doc == query,
    }
}

/// A chunk's tags are its `tags` metadata entry: a string or an array of strings.
fn chunk_has_tag(chunk: &crate::Chunk, tag: &str) -> bool {
    match chunk.metadata.get("tags") {
        Some(serde_json::Value::String(s)) => s == tag,
        Some(serde_json::Value::Array(values)) => values.iter().any(|v| v.as_str() == Some(tag)),
        _ => false,
    }
}

/// Whether a metadata value equals a filter value given as text (`key=value`).
fn json_equals(found: &serde_json::Value, wanted: &str) -> bool {
    match found {
        serde_json::Value::String(s) => s == wanted,
        serde_json::Value::Array(values) => values.iter().any(|v| json_equals(v, wanted)),
        // A number or a boolean matches its JSON text (`turn=3`, `done=true`).
        other => {
            let text = other.to_string();
            text == wanted
        }
    }
}
