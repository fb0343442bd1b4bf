//! The entity graph and the graph leg (seed 004's third search strategy).
//!
//! Every document mentions entities: the identifiers its text names (the codes of the
//! relevance gate, such as `NW-15699` or `CUST-48213`), a chunk's `context_id`, the
//! record's own `entities`, the targets of its `relations`, and its own id (so that a
//! relation to a document id is an edge to that document). The graph links documents
//! to the entities they mention, per kind and tenant: no path crosses a tenant.
//!
//! The graph leg runs when the query names an entity the tenant's graph knows. It scores
//! the documents that mention a query entity (hop 1) and the documents that share
//! another entity with those (hop 2), each path weighted by the rarity of the entities
//! it goes through (an IDF: an entity mentioned by many documents is a weak bridge;
//! beyond `max_fanout` documents it is no bridge at all) and by `decay` per hop. A
//! document's score is the sum of its paths' weights.
//!
//! Each document's entity list is stored beside the document, in the same commit batch
//! (`store/entities.rs`); the graph lives in memory beside the catalog, built from the
//! stored lists at open and updated at commit, so it is always the committed state's.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::BuildHasher;

use rustc_hash::FxHashMap;

use crate::Kind;
use crate::analysis::text::{self as analyzer, Analysis};
use crate::config::GraphConfig;
use crate::model::doc::Document;
use crate::model::id::DocId;
use crate::query::GraphPath;

/// An entity as the graph keys it: trimmed, lowercased, inner whitespace collapsed.
pub(crate) fn normalize(entity: &str) -> String {
    entity
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The fewest documents rarity is computed over (see [`EntityGraph::search`]).
const RARITY_FLOOR: usize = 1_000;

/// The node of a document id: apart from entities, so that an id that is also a word
/// (`refund`) never switches the graph leg on.
///
/// Every document mentions its own id node, implicitly: lists leave it out (otherwise
/// an open of 100,000 chunks would build 100,000 names, numbers and lists, for nodes
/// that link nothing until another document relates to one). The graph keeps an id
/// node only when a document relates to it, and [`ScopeDocs::owner`] adds the document
/// whose id it is to its documents.
fn id_node(id: &str) -> String {
    format!("\u{0}{id}")
}

/// The id of the document an id node stands for (`None`: an entity).
fn id_of_node(node: &str) -> Option<&str> {
    node.strip_prefix('\u{0}')
}

/// `list` (a stored entity list of the document `id`) without the document's own id
/// node: lists stored before own id nodes were implicit have it.
pub(crate) fn without_own_id(mut list: Vec<String>, id: &str) -> Vec<String> {
    list.retain(|entity| id_of_node(entity) != Some(id));
    list
}

static NONE: Vec<String> = Vec::new();
static NO_LINKS: Vec<crate::model::doc::Relation> = Vec::new();

/// The entities a document mentions, normalised, sorted, without repeats (its own id
/// node is implicit: see [`id_node`]).
pub(crate) fn entities_of(doc: &Document) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let (text, explicit, relations): (std::borrow::Cow<'_, str>, _, _) = match doc {
        Document::Rule(rule) => {
            let mut text = rule.text();
            for pattern in &rule.patterns {
                text.push(' ');
                text.push_str(pattern);
            }
            (text.into(), &rule.entities, &rule.relations)
        }
        Document::Chunk(chunk) => {
            if let Some(context) = &chunk.context_id {
                out.push(normalize(context));
            }
            (
                chunk.content.as_str().into(),
                &chunk.entities,
                &chunk.relations,
            )
        }
        // Scenarios and tools carry no explicit entities: the codes their name,
        // description and examples name.
        Document::Scenario(_) | Document::Tool(_) => {
            (doc.indexed_text(true).into(), &NONE, &NO_LINKS)
        }
    };
    // The identifier analysis reads each whitespace-separated word on its own, and a
    // code has at least two digits: only the words that have them are analysed (every
    // document is read at open).
    for word in text
        .split(char::is_whitespace)
        .filter(|word| word.bytes().filter(u8::is_ascii_digit).nth(1).is_some())
    {
        out.extend(
            analyzer::tokens(Analysis::Ident, word)
                .into_iter()
                .filter(|token| analyzer::is_code(token)),
        );
    }
    out.extend(explicit.iter().map(|e| normalize(e)));
    // A relation's target is an entity, or a document id: both are edges (a document
    // mentions its own id node, which no query word reaches).
    for relation in relations {
        out.push(normalize(&relation.target));
        out.push(id_node(&relation.target));
    }
    // Its own id node is implicit (see `id_node`), even when it relates to itself.
    out.retain(|e| !e.is_empty() && id_of_node(e) != Some(doc.id()));
    out.sort();
    out.dedup();
    out
}

/// The graph of one kind of one tenant. Each entity is a number: its name is kept once
/// (moved from the list it came in), and found by a table of numbers hashed by the names
/// they stand for.
#[derive(Debug, Default)]
struct ScopeGraph {
    /// Each entity's name, by number (empty for a number free again).
    names: Vec<Box<str>>,
    /// Each entity's documents, by number.
    postings: Vec<Postings>,
    /// Numbers whose entity is gone, to give again.
    free: Vec<u32>,
    /// Entity numbers, hashed by their names.
    index: hashbrown::HashTable<u32>,
    hasher: foldhash::fast::RandomState,
    /// Document → the numbers of the entities it mentions (a document that mentions
    /// none but its own id is not kept).
    entities_of: FxHashMap<DocId, Box<[u32]>>,
    /// The longest entity, in words (how long an n-gram of the query to look up).
    longest: usize,
}

/// The documents that mention an entity: most entities (a document's own id, most
/// codes) are one document's, kept without an allocation.
#[derive(Debug)]
enum Postings {
    One(DocId),
    Many(Vec<DocId>),
}

impl Postings {
    fn push(&mut self, doc: DocId) {
        match self {
            Postings::One(first) => *self = Postings::Many(vec![*first, doc]),
            Postings::Many(docs) => docs.push(doc),
        }
    }

    /// Removes `doc`; whether none is left.
    fn remove(&mut self, doc: DocId) -> bool {
        match self {
            Postings::One(only) => *only == doc,
            Postings::Many(docs) => {
                docs.retain(|d| *d != doc);
                docs.is_empty()
            }
        }
    }

    fn as_slice(&self) -> &[DocId] {
        match self {
            Postings::One(doc) => std::slice::from_ref(doc),
            Postings::Many(docs) => docs,
        }
    }
}

/// How the table of entity numbers hashes a number again (by its name) when it grows.
fn rehash<'a>(
    names: &'a [Box<str>],
    hasher: &'a foldhash::fast::RandomState,
) -> impl Fn(&u32) -> u64 + 'a {
    move |&n| hasher.hash_one(&*names[n as usize])
}

impl ScopeGraph {
    fn reserve(&mut self, docs: usize) {
        self.entities_of.reserve(docs);
        self.names.reserve(docs);
        self.postings.reserve(docs);
        self.index.reserve(docs, rehash(&self.names, &self.hasher));
    }

    /// The number of `entity`, if the scope knows it.
    fn number(&self, entity: &str) -> Option<u32> {
        self.find(self.hasher.hash_one(entity), entity)
    }

    /// The number of `entity`, whose hash is `hash`, if the scope knows it.
    fn find(&self, hash: u64, entity: &str) -> Option<u32> {
        self.index
            .find(hash, |&n| &*self.names[n as usize] == entity)
            .copied()
    }

    /// The documents that mention `entity`.
    fn docs_of(&self, entity: &str) -> Option<&[DocId]> {
        self.number(entity)
            .map(|n| self.postings[n as usize].as_slice())
    }

    /// The documents that mention entity `n`: those that name it, and for an id node
    /// the document whose id it is ([`ScopeDocs::owner`]).
    fn docs_of_number(&self, n: u32, owner: &dyn Fn(&str) -> Option<DocId>) -> Cow<'_, [DocId]> {
        let named = self.postings[n as usize].as_slice();
        match id_of_node(&self.names[n as usize]).and_then(owner) {
            Some(doc) if !named.contains(&doc) => {
                let mut docs = Vec::with_capacity(named.len() + 1);
                docs.extend_from_slice(named);
                docs.push(doc);
                Cow::Owned(docs)
            }
            _ => Cow::Borrowed(named),
        }
    }

    /// The entities `doc` (whose id is `id`) mentions, by number, in the order of
    /// their names as its list has them: its own id node among them when the scope
    /// keeps it (a document relates to it).
    fn numbers_of(&self, doc: DocId, id: &str) -> Vec<u32> {
        let mut numbers = self
            .entities_of
            .get(&doc)
            .map_or_else(Vec::new, |numbers| numbers.to_vec());
        if let Some(own) = self.number(&id_node(id))
            && !numbers.contains(&own)
        {
            let name = &*self.names[own as usize];
            let at = numbers.partition_point(|&n| &*self.names[n as usize] < name);
            numbers.insert(at, own);
        }
        numbers
    }

    fn insert(&mut self, doc_id: DocId, entities: Vec<String>) {
        let mut numbers = Vec::with_capacity(entities.len());
        for entity in entities {
            self.longest = self.longest.max(entity.split(' ').count());
            let hash = self.hasher.hash_one(entity.as_str());
            if let Some(n) = self.find(hash, &entity) {
                self.postings[n as usize].push(doc_id);
                numbers.push(n);
                continue;
            }
            let n = match self.free.pop() {
                Some(n) => {
                    self.names[n as usize] = entity.into_boxed_str();
                    self.postings[n as usize] = Postings::One(doc_id);
                    n
                }
                None => {
                    self.names.push(entity.into_boxed_str());
                    self.postings.push(Postings::One(doc_id));
                    (self.names.len() - 1) as u32
                }
            };
            self.index
                .insert_unique(hash, n, rehash(&self.names, &self.hasher));
            numbers.push(n);
        }
        self.entities_of.insert(doc_id, numbers.into_boxed_slice());
    }

    fn remove(&mut self, doc_id: DocId) {
        let Some(numbers) = self.entities_of.remove(&doc_id) else {
            return;
        };
        for &n in numbers.iter() {
            if !self.postings[n as usize].remove(doc_id) {
                continue;
            }
            // No document mentions it any more: its number is free again.
            let hash = self.hasher.hash_one(&*self.names[n as usize]);
            if let Ok(entry) = self.index.find_entry(hash, |&m| m == n) {
                entry.remove();
            }
            self.names[n as usize] = Box::from("");
            self.postings[n as usize] = Postings::Many(Vec::new());
            self.free.push(n);
        }
    }
}

/// The entity graph of an index: one [`ScopeGraph`] per kind and tenant.
#[derive(Debug, Default)]
pub(crate) struct EntityGraph {
    /// By kind (`Kind::index`), then tenant.
    scopes: [crate::local::StrMap<ScopeGraph>; Kind::COUNT],
}

/// What the graph leg needs of the catalog about the scope it searches.
pub(crate) struct ScopeDocs<'a, 'i> {
    /// The scope's live documents (rarity is computed over them).
    pub(crate) docs: usize,
    /// The scope's live document with a user id, if any: the document an id node
    /// stands for.
    pub(crate) owner: &'a dyn Fn(&str) -> Option<DocId>,
    /// The documents the search may return or go through, with their user ids.
    pub(crate) admit: &'a dyn Fn(DocId) -> Option<&'i str>,
}

/// A document the graph leg found.
#[derive(Debug, Clone)]
pub(crate) struct GraphHit {
    pub(crate) doc: DocId,
    pub(crate) score: f64,
    pub(crate) path: GraphPath,
}

impl EntityGraph {
    /// Links a document (of `kind`, in `tenant`) to the entities it mentions
    /// (`entities`: [`entities_of`] the document, as stored).
    pub(crate) fn insert(
        &mut self,
        doc_id: DocId,
        kind: Kind,
        tenant: &str,
        entities: Vec<String>,
    ) {
        if entities.is_empty() {
            return;
        }
        let scopes = &mut self.scopes[kind.index()];
        let scope = match scopes.get_mut(tenant) {
            Some(scope) => scope,
            None => scopes.entry(tenant.to_owned()).or_default(),
        };
        scope.insert(doc_id, entities);
    }

    /// [`EntityGraph::insert`] of many documents, those of a kind and tenant next to
    /// each other (a mapped base's, in `DocId` order): the scope is looked up once per
    /// run, and its maps are sized for the rest (`remaining` documents at most).
    pub(crate) fn insert_all<'a>(
        &mut self,
        docs: impl Iterator<Item = (DocId, Kind, &'a str, Vec<String>)>,
        remaining: usize,
    ) {
        let mut current: Option<(Kind, &str, &mut ScopeGraph)> = None;
        for (i, (doc, kind, tenant, entities)) in docs.enumerate() {
            if entities.is_empty() {
                continue;
            }
            let same = current
                .as_ref()
                .is_some_and(|(k, t, _)| *k == kind && *t == tenant);
            if !same {
                let scopes = &mut self.scopes[kind.index()];
                let scope = scopes.entry(tenant.to_owned()).or_default();
                scope.reserve(remaining - i);
                current = Some((kind, tenant, scope));
            }
            if let Some((_, _, scope)) = current.as_mut() {
                scope.insert(doc, entities);
            }
        }
    }

    pub(crate) fn remove(&mut self, doc_id: DocId, kind: Kind, tenant: &str) {
        let scopes = &mut self.scopes[kind.index()];
        let Some(scope) = scopes.get_mut(tenant) else {
            return;
        };
        scope.remove(doc_id);
        if scope.entities_of.is_empty() {
            scopes.remove(tenant);
        }
    }

    /// The entities of `text` the tenant's graph knows: its codes and any run of up to
    /// the longest entity's words that names one, in order of appearance.
    pub(crate) fn query_entities(&self, kind: Kind, tenant: &str, text: &str) -> Vec<String> {
        let Some(scope) = self.scopes[kind.index()].get(tenant) else {
            return Vec::new();
        };
        let mut found: Vec<String> = Vec::new();
        let mut add = |entity: String| {
            if !entity.starts_with('\u{0}')
                && scope.number(&entity).is_some()
                && !found.contains(&entity)
            {
                found.push(entity);
            }
        };
        for code in crate::analysis::query_codes(text) {
            add(code);
        }
        let words: Vec<String> = text
            .split(|c: char| {
                c.is_whitespace() || matches!(c, ',' | '?' | '!' | ';' | '"' | '(' | ')')
            })
            .map(|w| w.trim_end_matches(['.', ':', '\'']).to_lowercase())
            .filter(|w| !w.is_empty())
            .collect();
        for start in 0..words.len() {
            for len in 1..=scope.longest.min(words.len() - start) {
                let phrase = words[start..start + len].join(" ");
                // A lone function word is never an entity worth following.
                if len == 1 && crate::analysis::is_stop_word(&phrase) {
                    continue;
                }
                add(phrase);
            }
        }
        found
    }

    /// The graph leg: documents reached from `entities`, best first, at most `limit`;
    /// only documents `scope.admit` accepts (it gives their user ids), as hits and as
    /// bridges.
    pub(crate) fn search<'i>(
        &self,
        kind: Kind,
        tenant: &str,
        entities: &[String],
        config: &GraphConfig,
        limit: usize,
        scope_docs: &ScopeDocs<'_, 'i>,
    ) -> Vec<GraphHit> {
        let admit = scope_docs.admit;
        let Some(scope) = self.scopes[kind.index()].get(tenant) else {
            return Vec::new();
        };
        // Rarity of an entity in (0, 1]: IDF over the scope's documents, 1 for an entity
        // one document mentions. The scope counts as at least 1,000 documents, so that
        // in a small memory a bridge between two documents is not made weak by the size.
        let n = scope_docs.docs.max(RARITY_FLOOR) as f64 + 1.0;
        let rarity = |df: usize| (n / (df as f64 + 0.5)).ln() / (n / 1.5).ln();
        // Per document: the sum of its paths' weights, and its strongest path.
        let mut best: HashMap<DocId, (f64, f64, GraphPath)> = HashMap::new();
        let offer = |doc: DocId,
                     score: f64,
                     path: GraphPath,
                     best: &mut HashMap<DocId, (f64, f64, GraphPath)>| {
            let entry = best
                .entry(doc)
                .or_insert((0.0, f64::NEG_INFINITY, path.clone()));
            entry.0 += score;
            if score > entry.1 {
                entry.1 = score;
                entry.2 = path;
            }
        };
        let mut hop1: Vec<(DocId, f64, &String, &str)> = Vec::new();
        for entity in entities {
            let Some(docs) = scope.docs_of(entity) else {
                continue;
            };
            if docs.len() > config.max_fanout {
                continue;
            }
            let weight = rarity(docs.len());
            for &doc in docs {
                let Some(id) = admit(doc) else {
                    continue;
                };
                hop1.push((doc, weight, entity, id));
                let path = GraphPath {
                    entity: entity.clone(),
                    via: None,
                    answers: None,
                };
                offer(doc, weight, path, &mut best);
            }
        }
        if config.hops >= 2 {
            let direct: std::collections::HashSet<DocId> = hop1.iter().map(|h| h.0).collect();
            for &(bridge, weight, entity, bridge_id) in &hop1 {
                for number in scope.numbers_of(bridge, bridge_id) {
                    let other = &*scope.names[number as usize];
                    if entities.iter().any(|entity| entity == other) {
                        continue;
                    }
                    let docs = scope.docs_of_number(number, scope_docs.owner);
                    if docs.len() > config.max_fanout || docs.len() < 2 {
                        continue;
                    }
                    let score = weight * config.decay * rarity(docs.len());
                    for &doc in docs.iter() {
                        if doc == bridge || direct.contains(&doc) || admit(doc).is_none() {
                            continue;
                        }
                        // A document id node reads as the id.
                        let shared = other.trim_start_matches('\u{0}').to_string();
                        let path = GraphPath {
                            entity: entity.clone(),
                            via: Some((bridge_id.to_string(), shared)),
                            answers: None,
                        };
                        offer(doc, score, path, &mut best);
                    }
                }
            }
        }
        let mut hits: Vec<GraphHit> = best
            .into_iter()
            .map(|(doc, (score, _, path))| GraphHit { doc, score, path })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc)));
        hits.truncate(limit);
        hits
    }

    /// How many documents and entities the graph holds (for stats).
    pub(crate) fn size(&self) -> (usize, usize) {
        self.scopes
            .iter()
            .flat_map(HashMap::values)
            .fold((0, 0), |(docs, entities), scope| {
                (docs + scope.entities_of.len(), entities + scope.index.len())
            })
    }
}

#[cfg(test)]
mod tests;
