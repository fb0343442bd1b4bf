//! One live document as the catalog keeps it ([`Entry`]): its kind, tenant, version,
//! plainness and source (a record of its own, or a mapped base's); and the sets of
//! documents a filter starts from.

use std::sync::Arc;

use rustc_hash::FxHashSet;

use crate::Kind;
use crate::local::store::base::{MappedBase, Record};
use crate::model::doc::{Document, Scope};
use crate::model::id::DocId;

use super::arena::Vectors;

/// A set of documents (hashed by their ids' bits, not SipHash: the hot path of every
/// search looks documents up by id).
pub(crate) type DocSet = FxHashSet<DocId>;

/// The live chunks of one context, in the order they were written (`DocId`s grow with
/// each write): a conversation's turns in order.
pub(crate) type ContextSet = std::collections::BTreeSet<DocId>;

/// The smallest indexed superset of what a filter admits ([`Catalog::superset`]).
#[derive(Clone, Copy)]
pub(crate) enum Superset<'a> {
    /// The documents of a kind and tenant.
    Tenant(&'a DocSet),
    /// The chunks of one context.
    Context(&'a ContextSet),
}

impl Superset<'_> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Superset::Tenant(set) => set.len(),
            Superset::Context(set) => set.len(),
        }
    }

    pub(crate) fn docs(&self) -> Vec<DocId> {
        self.docs_where(|_| true)
    }

    /// The documents `keep` keeps, without collecting the others first.
    pub(crate) fn docs_where(&self, keep: impl Fn(DocId) -> bool) -> Vec<DocId> {
        match self {
            Superset::Tenant(set) => set.iter().copied().filter(|&d| keep(d)).collect(),
            Superset::Context(set) => set.iter().copied().filter(|&d| keep(d)).collect(),
        }
    }
}

/// One live document.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) doc: Source,
    pub(crate) kind: Kind,
    /// Whether every search of its kind and tenant that asks for no context, tag or
    /// metadata admits it (as [`crate::local::store::DocRecord::summary`] says of a record).
    pub(crate) plain: bool,
    /// Its tenant's number in the catalog that holds it (see [`Catalog::admit`]), set
    /// when the catalog links it.
    pub(crate) tenant: u32,
    /// The sequence number of the upsert that wrote this version.
    pub(crate) seq: u64,
    /// Where its vectors are in its kind's [`Arena`] (set by [`Catalog::insert`]);
    /// `None` when the document has no vector.
    pub(crate) vectors: Option<Vectors>,
    /// Its token counts in the text index, `[words, ident]` (for its scope's BM25
    /// statistics).
    pub(crate) tokens: [u32; 2],
}

/// Where an entry's document is.
#[derive(Debug)]
pub(crate) enum Source {
    /// Decoded.
    Ready(Arc<Document>),
    /// Record `index` of a mapped base, decoded when first asked for.
    Mapped {
        base: Arc<MappedBase>,
        index: u32,
        decoded: std::sync::OnceLock<Arc<Document>>,
    },
}

impl Entry {
    /// A document version, its vectors not yet placed (see [`Catalog::insert`]).
    pub(crate) fn new(doc: Document, seq: u64) -> Entry {
        Entry {
            kind: doc.kind(),
            plain: is_plain(&doc),
            tenant: 0,
            doc: Source::Ready(Arc::new(doc)),
            seq,
            vectors: None,
            tokens: [0, 0],
        }
    }

    /// Record `index` of `base`, its vectors not yet placed.
    pub(crate) fn mapped(
        base: &Arc<MappedBase>,
        index: usize,
        record: &Record,
        tenant: u32,
    ) -> Entry {
        Entry {
            kind: record.kind,
            plain: record.plain,
            tenant,
            doc: Source::Mapped {
                base: Arc::clone(base),
                index: index as u32,
                decoded: std::sync::OnceLock::new(),
            },
            seq: record.seq,
            vectors: None,
            tokens: record.tokens,
        }
    }

    /// The document, decoded if it was not.
    ///
    /// # Errors
    ///
    /// [`crate::ErrorKind::Corrupt`] when a mapped base's entry does not decode.
    pub(crate) fn doc(&self) -> crate::Result<&Arc<Document>> {
        match &self.doc {
            Source::Ready(doc) => Ok(doc),
            Source::Mapped {
                base,
                index,
                decoded,
            } => {
                if let Some(doc) = decoded.get() {
                    return Ok(doc);
                }
                let record = base.record(*index as usize);
                let doc = base.doc_record(&record)?.into_document()?;
                Ok(decoded.get_or_init(|| Arc::new(doc)))
            }
        }
    }

    /// The document, decoded without keeping it when it was not: for a pass over many
    /// documents that must not leave them all in memory.
    ///
    /// # Errors
    ///
    /// As [`Entry::doc`].
    pub(crate) fn doc_passing(&self) -> crate::Result<Arc<Document>> {
        match &self.doc {
            Source::Ready(doc) => Ok(Arc::clone(doc)),
            Source::Mapped {
                base,
                index,
                decoded,
            } => match decoded.get() {
                Some(doc) => Ok(Arc::clone(doc)),
                None => {
                    let record = base.record(*index as usize);
                    Ok(Arc::new(base.doc_record(&record)?.into_document()?))
                }
            },
        }
    }

    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    pub(crate) fn tenant_id(&self) -> &str {
        match &self.doc {
            Source::Ready(doc) => doc.tenant_id(),
            Source::Mapped { base, index, .. } => base.tenant(&base.record(*index as usize)),
        }
    }

    /// The user id.
    pub(crate) fn id(&self) -> &str {
        match &self.doc {
            Source::Ready(doc) => doc.id(),
            Source::Mapped { base, index, .. } => base.id(&base.record(*index as usize)),
        }
    }

    /// A chunk's context.
    pub(crate) fn context_id(&self) -> Option<&str> {
        match &self.doc {
            Source::Ready(doc) => doc.as_chunk().and_then(|c| c.context_id.as_deref()),
            Source::Mapped { base, index, .. } => base.context(&base.record(*index as usize)),
        }
    }
}

impl crate::local::text::UserId for Entry {
    fn user_id(&self) -> &str {
        self.id()
    }
}

/// Whether `doc` is plain (as [`crate::local::store::DocRecord::summary`] says of its record):
/// a rule enabled, global and of its first form (applied by relevance, no globs, folder,
/// body or source), a chunk that never expires, a scenario or tool enabled,
/// and none of them restricted to an agent.
pub(crate) fn is_plain(doc: &Document) -> bool {
    let (plain, agent) = match doc {
        Document::Rule(rule) => (
            rule.enabled
                && matches!(rule.scope, Scope::Global)
                && rule.apply == crate::Apply::Relevant
                && rule.globs.is_empty()
                && rule.folder.is_none()
                && rule.body.is_none()
                && rule.source.is_none(),
            &rule.agent_id,
        ),
        Document::Chunk(chunk) => (chunk.expires_at.is_none(), &chunk.agent_id),
        Document::Scenario(scenario) => (scenario.enabled, &scenario.agent_id),
        Document::Tool(tool) => (tool.enabled, &tool.agent_id),
    };
    plain && agent.is_none()
}
