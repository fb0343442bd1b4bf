//! A search's filter bound to a catalog ([`Admit`]): answered from the entry for a plain
//! document, decoded only when the filter asks for tags or metadata.

use crate::Kind;
use crate::retrieve::DocFilter;

use super::entry::Entry;

/// A [`DocFilter`] bound to one catalog (see [`Catalog::admit`]): its tenant as the
/// catalog numbers it, so that a plain document (most are) is admitted or not from its
/// entry alone, without reading the document or its tenant's name.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Admit<'a> {
    pub(crate) filter: &'a DocFilter<'a>,
    /// The filter's tenant's number; `None` when no document of the catalog has ever
    /// had that tenant.
    pub(crate) tenant: Option<u32>,
}

impl Admit<'_> {
    /// Whether the filter admits `entry`'s document (an entry of the catalog it was
    /// bound to): [`DocFilter::matches`], answered from the entry (kind, tenant number,
    /// plainness, a chunk's context, which a mapped base's record gives) for a plain
    /// document and a filter that asks for no tag and no metadata, so that such a
    /// document is never decoded to be filtered. A document that cannot be decoded is
    /// not admitted (and logged: its file's checksum was verified, so that is a bug,
    /// not damage).
    pub(crate) fn admits(&self, entry: &Entry) -> bool {
        let filter = self.filter;
        if entry.kind != filter.kind || self.tenant != Some(entry.tenant) {
            return false;
        }
        if entry.plain && filter.tags.is_empty() && filter.metadata.is_empty() {
            return filter.kind != Kind::Chunk
                || filter
                    .context
                    .is_none_or(|context| entry.context_id() == Some(context));
        }
        match entry.doc() {
            Ok(doc) => filter.matches(doc),
            Err(err) => {
                tracing::error!(id = entry.id(), error = %err, "a published document does not decode");
                false
            }
        }
    }

    pub(crate) fn filter(&self) -> &DocFilter<'_> {
        self.filter
    }
}
