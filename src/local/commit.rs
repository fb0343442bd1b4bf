//! A commit of the local index: a resolved batch written to the store, the text index
//! and the catalog, in the order that keeps each derived index behind the store.

use rayon::prelude::*;

use super::LocalIndex;
use super::catalog::Entry;
use super::store::{Change, DocRows};
use crate::Result;
use crate::model::doc::Document;

/// What a commit of the local index did.
pub(crate) struct Committed {
    /// The store's last sequence number, the batch's last.
    pub(crate) last_seq: u64,
    /// Whether the text index and the catalog took the batch. An error here leaves the
    /// batch in the store (the commit happened): the text index catches up at the next
    /// open, and nothing is published until then.
    pub(crate) derived: Result<()>,
}

impl LocalIndex {
    /// Writes a resolved batch (`next_doc`: the next free document number): the store first,
    /// with the text index's analysis beside it; then the text index's commit; then the
    /// catalog and the text reader together, under the catalog's write guard.
    ///
    /// # Errors
    ///
    /// The store's: nothing of the batch is then applied (the text index's adds are
    /// rolled back).
    pub(crate) fn commit(&self, applied: &[Change], next_doc: u64) -> Result<Committed> {
        let phase = std::time::Instant::now();
        // Each written version as a document, once, for the text index and the catalog
        // (a record that does not convert fails the commit before anything is written).
        let documents: Vec<Option<Document>> = applied
            .par_iter()
            .map(|change| {
                change
                    .written
                    .as_ref()
                    .map(|(_, record, _)| record.to_document(None))
                    .transpose()
            })
            .collect::<Result<_>>()?;
        tracing::debug!(
            elapsed_ms = phase.elapsed().as_millis() as u64,
            "documents made"
        );
        // The store's write and the text index's analysis run side by side; the text
        // index commits only once the store has the batch (else its adds are rolled
        // back), so it is never ahead of the store.
        let (stored, text_added) = rayon::join(
            || {
                let stored = self.store.commit(applied, next_doc);
                tracing::debug!(
                    elapsed_ms = phase.elapsed().as_millis() as u64,
                    changes = applied.len(),
                    "store committed"
                );
                stored
            },
            || {
                let added = self.add_to_text(applied, &documents);
                tracing::debug!(
                    elapsed_ms = phase.elapsed().as_millis() as u64,
                    "text index added"
                );
                added
            },
        );
        if let Err(err) = stored {
            if let Err(rollback) = self.text.rollback() {
                tracing::warn!(error = %rollback, "could not roll the text index's adds back");
            }
            return Err(err);
        }
        crate::crash::point("commit:stored");
        let last_seq = self.store.meta().last_seq;
        // Text index: one commit recording `last_seq`.
        let (tokens, text_result) = match text_added {
            Ok(tokens) => (tokens, self.text.commit(last_seq)),
            Err(err) => (vec![None; applied.len()], Err(err)),
        };
        crate::crash::point("commit:text-committed");
        tracing::debug!(
            elapsed_ms = phase.elapsed().as_millis() as u64,
            "text index committed"
        );
        let phase = std::time::Instant::now();

        // The catalog and the text reader change together, under the write lock.
        // The entries are built in parallel before the lock is taken.
        let catalog_result = {
            let built: Vec<Option<_>> = applied
                .par_iter()
                .zip(documents)
                .zip(&tokens)
                .map(|((change, document), tokens)| {
                    let (_, record, vectors) = change.written.as_ref()?;
                    let mut entry = Entry::new(document?, record.seq);
                    entry.tokens = tokens.unwrap_or_default();
                    Some((entry, DocRows::from_stored(vectors)))
                })
                .collect();
            let mut catalog = self.write_catalog();
            for (change, built) in applied.iter().zip(built) {
                if let Some(removed) = change.removed {
                    catalog.remove(removed);
                }
                if let (Some((doc, _, _)), Some((entry, vectors))) = (&change.written, built) {
                    catalog.insert(*doc, entry, vectors, change.entities.clone());
                }
            }
            self.text.reload()
        };
        tracing::debug!(
            elapsed_ms = phase.elapsed().as_millis() as u64,
            "catalog updated"
        );
        Ok(Committed {
            last_seq,
            derived: text_result.and(catalog_result),
        })
    }

    /// Adds a batch's versions to the text index, uncommitted (deletes first where a
    /// change replaces a version): analysed in parallel, added in order, since a delete
    /// applies to what came before it. Returns each change's written version's token
    /// counts, in the order of `applied`.
    fn add_to_text(
        &self,
        applied: &[Change],
        documents: &[Option<Document>],
    ) -> Result<Vec<Option<[u32; 2]>>> {
        let prepared: Vec<Option<crate::local::text::AnalysedDoc>> = applied
            .par_iter()
            .zip(documents)
            .map(|(change, document)| {
                let (doc, _, _) = change.written.as_ref()?;
                Some(self.text.prepare(*doc, document.as_ref()?))
            })
            .collect();
        let mut tokens = Vec::with_capacity(prepared.len());
        for (change, prepared) in applied.iter().zip(prepared) {
            if let Some(removed) = change.removed {
                self.text.delete(removed)?;
            }
            tokens.push(prepared.as_ref().map(|prepared| prepared.counts));
            if let Some(prepared) = prepared {
                self.text.add_prepared(prepared)?;
            }
        }
        Ok(tokens)
    }
}
