//! BM25 statistics of one scope (kind and tenant): document counts and term frequencies
//! counted over the live documents of that scope only, remembered between searches.

use std::sync::Mutex;

use rustc_hash::FxHashMap;
use tantivy::Term;
use tantivy::schema::{Field, IndexRecordOption};

use super::schema::Fields;

/// BM25 statistics of one scope (one kind of one tenant): its live documents and their
/// token counts per field. Terms carry their scope as a prefix, so document frequencies
/// are the scope's own too: no tenant's scores depend on another tenant's documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ScopeStats {
    /// Live documents.
    pub(crate) docs: u64,
    /// Tokens of the live documents: `[words, ident]`.
    pub(crate) tokens: [u64; 2],
}

/// tantivy's BM25 statistics, taken from one scope: its live documents and tokens, and
/// document frequencies counted over live documents only (so that when deleted
/// documents are merged away, a moment other tenants' writes decide, no score moves).
pub(crate) struct ScopedStatistics<'a> {
    pub(crate) searcher: &'a tantivy::Searcher,
    pub(crate) scope: ScopeStats,
    pub(crate) fields: Fields,
    pub(crate) live: &'a LiveFreqs,
    /// Frequencies already looked up (a plan's), answered without the term dictionary.
    pub(crate) known: Option<&'a FxHashMap<Term, u64>>,
}

impl tantivy::query::Bm25StatisticsProvider for ScopedStatistics<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        Ok(if field == self.fields.ident {
            self.scope.tokens[1]
        } else {
            self.scope.tokens[0]
        })
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.scope.docs)
    }

    /// At most the scope's documents: BM25's idf (tantivy asserts it) needs no more
    /// documents with a term than documents.
    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let freq = match self.known.and_then(|known| known.get(term)) {
            Some(&freq) => freq,
            None => self.live.doc_freq(self.searcher, term)?,
        };
        Ok(freq.min(self.scope.docs))
    }
}

/// The live document frequencies of terms in segments with deleted documents, which
/// only a walk of the term's postings counts: remembered per segment, its number of
/// deleted documents (deletions only accumulate, so the same number is the same set)
/// and term. Without it, a query would walk the whole postings of each of its terms
/// three times as soon as a few documents are deleted.
pub(crate) struct LiveFreqs(Remembered<(tantivy::index::SegmentId, u32, Term), u32>);

impl Default for LiveFreqs {
    fn default() -> LiveFreqs {
        LiveFreqs(Remembered::new(1 << 16))
    }
}

/// Values derived from what a segment holds, which does not change, remembered by key up
/// to `kept` of them, then all forgotten at once (so are those of segments merged away).
pub(crate) struct Remembered<K, V> {
    pub(crate) values: Mutex<FxHashMap<K, V>>,
    pub(crate) kept: usize,
}

impl<K: std::hash::Hash + Eq, V: Clone> Remembered<K, V> {
    pub(crate) fn new(kept: usize) -> Remembered<K, V> {
        Remembered {
            values: Mutex::default(),
            kept,
        }
    }

    /// The value of `key`, made by `make` the first time (outside the lock: two threads
    /// may both make it, and make the same).
    pub(crate) fn get<E>(
        &self,
        key: K,
        make: impl FnOnce() -> std::result::Result<V, E>,
    ) -> std::result::Result<V, E> {
        let lock = || self.values.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(value) = lock().get(&key) {
            return Ok(value.clone());
        }
        let value = make()?;
        let mut values = lock();
        if values.len() >= self.kept {
            values.clear();
        }
        values.insert(key, value.clone());
        Ok(value)
    }
}

impl LiveFreqs {
    /// The number of live documents that contain `term`.
    pub(crate) fn doc_freq(
        &self,
        searcher: &tantivy::Searcher,
        term: &Term,
    ) -> tantivy::Result<u64> {
        let mut total = 0u64;
        for segment in searcher.segment_readers() {
            let inverted = segment.inverted_index(term.field())?;
            let Some(alive) = segment.alive_bitset() else {
                total += u64::from(inverted.doc_freq(term)?);
                continue;
            };
            let key = (
                segment.segment_id(),
                segment.num_deleted_docs(),
                term.clone(),
            );
            let live = self.0.get(key, || {
                Ok::<_, tantivy::TantivyError>(
                    inverted
                        .read_postings(term, IndexRecordOption::Basic)?
                        .map_or(0, |postings| postings.doc_freq_given_deletes(alive)),
                )
            })?;
            total += u64::from(live);
        }
        Ok(total)
    }
}
