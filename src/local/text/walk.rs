//! The term-at-a-time walk: a query's postings read a decoded block at a time and scored
//! into one slot a document, when the rarest term is common enough that a walk beats
//! skipping; the best hits by score, then user id.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

use tantivy::Term;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::query::{Bm25StatisticsProvider, Bm25Weight};
use tantivy::schema::IndexRecordOption;

use crate::Result;
use crate::model::id::DocId;

use super::guard::{guarded, tantivy_err};
use super::query::{Coverage, Role, TextMatch, TextPlan};
use super::stats::ScopedStatistics;
use crate::parallel::WalkShare;

/// What the text leg's tiebreak reads of an admitted document: its user id, asked for
/// only when two scores tie (reading it costs a look at the document).
pub(crate) trait UserId: Sync {
    fn user_id(&self) -> &str;
}

/// Per-thread scratch of [`term_at_a_time`]: one slot per document of a segment, valid
/// where its `stamp` holds the current walk's number (so nothing is cleared between
/// walks).
#[derive(Default)]
pub(crate) struct Accumulators {
    pub(crate) walk: u32,
    pub(crate) slots: Vec<Slot>,
    /// The documents of this walk, in the order first reached.
    pub(crate) reached: Vec<u32>,
}

/// What a walk has added up for one document: one 24-byte slot, so that a posting
/// touches one cache line (the walk's hot loop; four arrays cost four).
#[derive(Default, Clone, Copy)]
pub(crate) struct Slot {
    pub(crate) stamp: u32,
    pub(crate) score: f32,
    /// Bit `w`: the document contains word `w` of the query.
    pub(crate) words: u64,
    pub(crate) codes: u32,
}

// SAFETY: every field is an integer or a float, for which all-zero bytes are a valid
// value: a zeroed `Slot` is `Slot::default()`.
unsafe impl bytemuck::Zeroable for Slot {}

impl Accumulators {
    /// Starts a walk of a segment of `max_doc` documents.
    pub(crate) fn start(&mut self, max_doc: usize) {
        if self.slots.len() < max_doc {
            // Zeroed memory straight from the allocator (fresh pages are zero already),
            // not written slot by slot: a zero stamp is no walk's, so every slot is
            // empty. Writing the slots one by one (2.4 MB at 100,000 documents) would be a
            // large part of a process's first walk.
            self.slots = bytemuck::zeroed_vec(max_doc);
        }
        self.walk = self.walk.wrapping_add(1);
        if self.walk == 0 {
            self.slots.iter_mut().for_each(|slot| slot.stamp = 0);
            self.walk = 1;
        }
        self.reached.clear();
    }

    /// The slot of `doc`, emptied on its first posting of this walk.
    #[inline]
    pub(crate) fn slot(&mut self, doc: u32) -> &mut Slot {
        let slot = &mut self.slots[doc as usize];
        if slot.stamp != self.walk {
            *slot = Slot {
                stamp: self.walk,
                ..Slot::default()
            };
            self.reached.push(doc);
        }
        slot
    }

    /// Adds a posting's score to its document's slot, and what its term counts for.
    #[inline(always)]
    pub(crate) fn add(&mut self, doc: u32, score: f32, role: Role) {
        let slot = self.slot(doc);
        slot.score += score;
        match role {
            Role::Word(word) => slot.words |= 1 << word,
            Role::Code => slot.codes += 1,
            Role::Other => {}
        }
    }

    /// Adds every posting of `term` in `segment` whose document is in `range`, a block
    /// of decoded postings at a time, each scored by `bm25` as tantivy's `TermScorer`
    /// scores it (the term's role decided once, not per posting).
    pub(crate) fn add_term(
        &mut self,
        term: &Term,
        bm25: &Bm25Weight,
        segment: &tantivy::SegmentReader,
        role: Role,
        range: std::ops::Range<u32>,
    ) -> tantivy::Result<()> {
        let inverted = segment.inverted_index(term.field())?;
        let Some(info) = inverted.get_term_info(term)? else {
            return Ok(());
        };
        let mut block =
            inverted.read_block_postings_from_terminfo(&info, IndexRecordOption::WithFreqs)?;
        // As `TermWeight` reads them: a field without norms counts one token a document.
        let norms = segment
            .fieldnorms_readers()
            .get_field(term.field())?
            .unwrap_or_else(|| FieldNormReader::constant(segment.max_doc(), 1));
        // The first block's postings before `range` are skipped (the skip list jumps the
        // blocks before it), and the walk stops at the first posting after it.
        let mut from = if range.start > 0 {
            block.seek(range.start)
        } else {
            0
        };
        loop {
            let docs = block.docs();
            if docs.is_empty() || from >= docs.len() {
                return Ok(());
            }
            // The block's postings in `range` (the last block of the range ends early).
            let last = docs[docs.len() - 1] >= range.end;
            let to = if last {
                docs.partition_point(|&doc| doc < range.end)
            } else {
                docs.len()
            };
            if from == 0 && to == docs.len() {
                // A whole block (most of them), in the loop the compiler makes fastest: the
                // general loop below, with its range checks, is measurably slower.
                for (at, &doc) in docs.iter().enumerate() {
                    let score = bm25.score(norms.fieldnorm_id(doc), block.freq(at));
                    self.add(doc, score, role);
                }
            } else {
                for (at, &doc) in docs.iter().enumerate().take(to).skip(from) {
                    let score = bm25.score(norms.fieldnorm_id(doc), block.freq(at));
                    self.add(doc, score, role);
                }
            }
            if last {
                return Ok(());
            }
            from = 0;
            block.advance();
        }
    }
}

/// [`TextIndex::search`] by walking every posting of every term (the query's words at
/// most 64): each document's score is the sum of its terms' scores in the plan's order,
/// as [`match_each`] adds them, so a hit's BM25 and coverage are what `score_docs` gives
/// it, with no second walk.
///
/// A segment of at least [`SHARED_WALK_FROM`] postings is walked in parts of its
/// documents ([`SHARED_WALK_PARTS`]), claimed in turn by this thread and by the one
/// `share` offers them to, each keeping the best `limit` of the parts it walks. The
/// documents' scores do not depend on the split, and the best `limit` of both threads'
/// are the best `limit` of all: the same hits.
pub(crate) fn term_at_a_time<'a>(
    plan: &TextPlan,
    statistics: &ScopedStatistics<'_>,
    limit: usize,
    accept: &(dyn Fn(DocId) -> Option<&'a dyn UserId> + Sync),
    share: Option<&WalkShare>,
) -> Result<Vec<(DocId, TextMatch)>> {
    let terms = plan
        .query
        .query
        .as_ref()
        .map_or(&[][..], |parts| parts.terms.as_slice());
    // Each term's BM25 weight as `TermQuery` makes it (`Bm25Weight::for_terms` of the
    // one term), without its explanation; and the scope's postings of the terms, for
    // each segment's share of them.
    let scope_docs = statistics.total_num_docs().map_err(tantivy_err)?;
    let mut postings = 0u64;
    let weights = terms
        .iter()
        .map(|term| {
            let average = statistics.total_num_tokens(term.field())? as f32 / scope_docs as f32;
            let doc_freq = statistics.doc_freq(term)?;
            postings += doc_freq;
            Ok(Bm25Weight::for_one_term_without_explain(
                doc_freq, scope_docs, average,
            ))
        })
        .collect::<tantivy::Result<Vec<_>>>()
        .map_err(tantivy_err)?;
    let scope_docs = scope_docs.max(1);
    #[cfg(test)]
    let from = SHARED_WALK_FROM_TEST
        .with(std::cell::Cell::get)
        .unwrap_or(SHARED_WALK_FROM);
    #[cfg(not(test))]
    let from = SHARED_WALK_FROM;
    let shared = |max_doc: u32| {
        u128::from(postings) * u128::from(max_doc) >= u128::from(from) * u128::from(scope_docs)
            && max_doc >= SHARED_WALK_PARTS
    };
    let share = share.filter(|_| {
        plan.searcher
            .segment_readers()
            .iter()
            .any(|segment| shared(segment.max_doc()))
    });
    if let Some(share) = share {
        share.announce();
    }
    // The best `limit` of the segments walked so far; a document below the worst of a
    // full heap cannot enter it.
    let mut best: BinaryHeap<HeapEntry<'a>> = BinaryHeap::with_capacity(limit + 1);
    let keep = |entries: Vec<HeapEntry<'a>>, best: &mut BinaryHeap<HeapEntry<'a>>| {
        if best.is_empty() {
            // At most `limit` already: the first walk's best, as they are.
            *best = BinaryHeap::from(entries);
            return;
        }
        for entry in entries {
            if best.len() == limit && best.peek().is_some_and(|worst| entry.score < worst.score) {
                continue;
            }
            best.push(entry);
            if best.len() > limit {
                best.pop();
            }
        }
    };
    for (ord, segment) in plan.searcher.segment_readers().iter().enumerate() {
        let max_doc = segment.max_doc();
        let floor = match best.peek() {
            Some(worst) if best.len() == limit => worst.score,
            _ => f32::NEG_INFINITY,
        };
        let at = (ord, segment, floor);
        let share = share.filter(|_| shared(max_doc));
        // The segment's documents whole, or in parts, each walked whole by the thread
        // that claims it: this one, and the other once its own work is done.
        let whole_segment = 0..max_doc;
        let parts: Vec<std::ops::Range<u32>>;
        let ranges = match share {
            None => std::slice::from_ref(&whole_segment),
            Some(_) => {
                let part = max_doc.div_ceil(SHARED_WALK_PARTS);
                parts = (0..max_doc)
                    .step_by(part as usize)
                    .map(|start| start..(start + part).min(max_doc))
                    .collect();
                &parts
            }
        };
        let next = AtomicUsize::new(0);
        let walk = RangeWalk {
            ranges,
            next: &next,
        };
        let Some(share) = share else {
            keep(
                walk.walk(plan, terms, &weights, at, limit, accept)?,
                &mut best,
            );
            continue;
        };
        let theirs: Mutex<Option<Result<Vec<HeapEntry<'a>>>>> = Mutex::new(None);
        let job = || {
            let walked = guarded("searching", || {
                walk.walk(plan, terms, &weights, at, limit, accept)
            });
            *theirs.lock().unwrap_or_else(|p| p.into_inner()) = Some(walked);
        };
        let ours = share.share(&job, || walk.walk(plan, terms, &weights, at, limit, accept));
        keep(ours?, &mut best);
        if let Some(theirs) = theirs.into_inner().unwrap_or_else(|p| p.into_inner()) {
            keep(theirs?, &mut best);
        }
    }
    Ok(best_first(best.into_vec()))
}

/// The parts of a segment's documents that the threads of a shared walk claim in turn.
pub(crate) const SHARED_WALK_PARTS: u32 = 8;

/// The postings of a segment's walk from which its parts are offered to another thread
/// (about 160 µs of walking: more than a hand-off costs).
pub(crate) const SHARED_WALK_FROM: u64 = 65_536;

/// Parts of a segment's documents, claimed one at a time by the threads that walk them.
pub(crate) struct RangeWalk<'w> {
    pub(crate) ranges: &'w [std::ops::Range<u32>],
    pub(crate) next: &'w AtomicUsize,
}

impl RangeWalk<'_> {
    /// The best `limit` documents of the parts this thread claims (until none is left)
    /// of segment `ord`, walking every posting of `terms` in them ([`term_at_a_time`]),
    /// on this thread's scratch; none scored below `floor`.
    pub(crate) fn walk<'a>(
        &self,
        plan: &TextPlan,
        terms: &[Term],
        weights: &[Bm25Weight],
        (ord, segment, floor): (usize, &tantivy::SegmentReader, f32),
        limit: usize,
        accept: &(dyn Fn(DocId) -> Option<&'a dyn UserId> + Sync),
    ) -> Result<Vec<HeapEntry<'a>>> {
        thread_local! {
            static SCRATCH: std::cell::RefCell<Accumulators> = Default::default();
        }
        SCRATCH.with(|scratch| {
            let acc = &mut *scratch.borrow_mut();
            acc.start(segment.max_doc() as usize);
            let mut claimed = false;
            while let Some(range) = self
                .ranges
                .get(self.next.fetch_add(1, AtomicOrdering::Relaxed))
            {
                claimed = true;
                for ((term, weight), role) in terms.iter().zip(weights).zip(&plan.cover.roles) {
                    acc.add_term(term, weight, segment, *role, range.clone())
                        .map_err(tantivy_err)?;
                }
            }
            if !claimed {
                return Ok(Vec::new());
            }
            let mut heap: BinaryHeap<HeapEntry<'a>> = BinaryHeap::with_capacity(limit + 1);
            let doc_ids = segment.fast_fields().u64("doc_id").map_err(tantivy_err)?;
            let alive = segment.alive_bitset();
            for &seg_doc in &acc.reached {
                let slot = acc.slots[seg_doc as usize];
                let score = slot.score;
                if score < floor
                    || heap.len() == limit && heap.peek().is_some_and(|worst| score < worst.score)
                {
                    continue;
                }
                if !alive.is_none_or(|alive| alive.is_alive(seg_doc)) {
                    continue;
                }
                let Some((doc, named)) = doc_ids
                    .first(seg_doc)
                    .map(DocId::new)
                    .and_then(|doc| Some((doc, accept(doc)?)))
                else {
                    continue;
                };
                heap.push(HeapEntry {
                    score,
                    named,
                    doc,
                    at: (ord, seg_doc),
                    coverage: plan
                        .cover
                        .coverage(|word| slot.words & (1 << word) != 0, slot.codes),
                });
                if heap.len() > limit {
                    heap.pop();
                }
            }
            Ok(heap.into_vec())
        })
    }
}

/// The text leg's hits, best first (the heap's order: score, then user id).
pub(crate) fn best_first(mut hits: Vec<HeapEntry<'_>>) -> Vec<(DocId, TextMatch)> {
    hits.sort();
    hits.into_iter()
        .map(|entry| {
            let matched = TextMatch {
                bm25: entry.score,
                coverage: entry.coverage,
            };
            (entry.doc, matched)
        })
        .collect()
}

/// A candidate in the top-k heap. The heap's maximum is the *worst* candidate, so that
/// popping evicts it: lower score is "greater", and among equal scores the larger user id.
pub(crate) struct HeapEntry<'a> {
    pub(crate) score: f32,
    /// Gives the user id, for ties.
    pub(crate) named: &'a dyn UserId,
    pub(crate) doc: DocId,
    /// Where the document is: segment ordinal and document within the segment.
    pub(crate) at: (usize, u32),
    /// Measured once the hits are known (not part of the order).
    pub(crate) coverage: Coverage,
}

impl PartialEq for HeapEntry<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for HeapEntry<'_> {}

impl PartialOrd for HeapEntry<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for HeapEntry<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then_with(|| self.named.user_id().cmp(other.named.user_id()))
            .then_with(|| self.doc.cmp(&other.doc))
    }
}

#[cfg(test)]
thread_local! {
    /// Replaces [`SHARED_WALK_FROM`] on this thread.
    pub(crate) static SHARED_WALK_FROM_TEST: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}
