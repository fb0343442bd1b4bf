//! Query plans: a query's terms in its scope, the boolean query tantivy runs, and which
//! of the query's words each candidate covers.

use rustc_hash::FxHashMap;
use tantivy::query::{BooleanQuery, EnableScoring, Occur, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocSet, TERMINATED, TantivyDocument, Term};

use crate::Result;

use super::guard::tantivy_err;
use super::stats::{ScopeStats, ScopedStatistics};

/// An analysed query: the terms of each field, in one scope (kind and tenant), with the
/// scope's statistics.
#[derive(Debug, Clone, Default)]
pub(crate) struct TextQuery {
    pub(crate) query: Option<BooleanQueryParts>,
    pub(crate) scope: ScopeStats,
}

#[derive(Debug, Clone)]
pub(crate) struct BooleanQueryParts {
    /// Every term of both fields, sorted, without repeats.
    pub(crate) terms: Vec<Term>,
    /// The `words` terms (prose) that are not function words (`i`, `my`, `what`), without
    /// repeats: what coverage is measured on.
    pub(crate) words: Vec<Term>,
    /// The `ident` terms that are codes ([`analyzer::is_code`]), without repeats.
    pub(crate) codes: Vec<Term>,
}

pub(crate) use crate::retrieve::Coverage;

impl TextQuery {
    /// Whether the query has no searchable term (empty text, only stop words), or its
    /// scope has no document.
    pub(crate) fn is_empty(&self) -> bool {
        self.query.is_none() || self.scope.docs == 0
    }

    /// The BM25 weight of each term of the query, in the order of the clauses of
    /// [`TextQuery::to_query`] (none for an empty query or scope).
    pub(crate) fn term_weights(
        &self,
        statistics: &ScopedStatistics<'_>,
        searcher: &tantivy::Searcher,
    ) -> Result<Vec<Box<dyn tantivy::query::Weight>>> {
        let Some(parts) = self.query.as_ref().filter(|_| self.scope.docs > 0) else {
            return Ok(Vec::new());
        };
        parts
            .terms
            .iter()
            .map(|term| {
                TermQuery::new(term.clone(), IndexRecordOption::WithFreqs)
                    .weight(EnableScoring::enabled_from_statistics_provider(
                        statistics, searcher,
                    ))
                    .map_err(tantivy_err)
            })
            .collect()
    }

    pub(crate) fn to_query(&self) -> Option<BooleanQuery> {
        if self.scope.docs == 0 {
            return None;
        }
        let parts = self.query.as_ref()?;
        let clauses: Vec<(Occur, Box<dyn Query>)> = parts
            .terms
            .iter()
            .map(|term| {
                let query: Box<dyn Query> =
                    Box::new(TermQuery::new(term.clone(), IndexRecordOption::WithFreqs));
                (Occur::Should, query)
            })
            .collect();
        Some(BooleanQuery::new(clauses))
    }
}

/// A document version analysed for the index, with its token counts `[words, ident]`.
pub(crate) struct AnalysedDoc {
    pub(crate) entry: TantivyDocument,
    pub(crate) counts: [u32; 2],
}

/// What coverage counts of `query`'s terms, and what each of its words weighs: its idf
/// as BM25 has it, in the query's scope (so that a word every document of the tenant
/// contains weighs little), over the sum of the words' idf.
pub(crate) fn cover_plan(
    query: &TextQuery,
    statistics: &ScopedStatistics<'_>,
) -> Result<CoverPlan> {
    use tantivy::query::Bm25StatisticsProvider;
    let Some(parts) = query.query.as_ref() else {
        return Ok(CoverPlan::default());
    };
    let total = query.scope.docs as f64;
    let mut idf = Vec::with_capacity(parts.words.len());
    for term in &parts.words {
        let df = statistics.doc_freq(term).map_err(tantivy_err)? as f64;
        idf.push(((total - df + 0.5).max(0.0) / (df + 0.5)).ln_1p() as f32);
    }
    let idf_sum: f32 = idf.iter().sum();
    let shares = idf
        .iter()
        .map(|idf| idf / idf_sum.max(f32::MIN_POSITIVE))
        .collect();
    let information = if total > 0.0 {
        idf_sum / (total.ln_1p() as f32)
    } else {
        0.0
    };
    let roles = parts
        .terms
        .iter()
        .map(|term| {
            if let Some(word) = parts.words.iter().position(|word| word == term) {
                Role::Word(word)
            } else if parts.codes.contains(term) {
                Role::Code
            } else {
                Role::Other
            }
        })
        .collect();
    Ok(CoverPlan {
        roles,
        shares,
        information,
    })
}

/// A query made ready against one searcher (see [`TextIndex::plan`]).
pub(crate) struct TextPlan {
    pub(crate) query: TextQuery,
    pub(crate) searcher: tantivy::Searcher,
    /// Each term's live document frequency in the query's scope.
    pub(crate) freqs: FxHashMap<Term, u64>,
    /// Each term's weight, in the order of [`BooleanQueryParts::terms`].
    pub(crate) terms: Vec<Box<dyn tantivy::query::Weight>>,
    pub(crate) cover: CoverPlan,
}

impl TextPlan {
    /// The rarity of the query's words in its scope: their idf summed over
    /// `ln(1 + documents)` (0 without words).
    pub(crate) fn information(&self) -> f32 {
        self.cover.information
    }

    /// Whether its query has no searchable term, or its scope no document.
    pub(crate) fn is_empty(&self) -> bool {
        self.query.is_empty()
    }

    /// Whether the text leg walks every posting ([`term_at_a_time`]) for its best
    /// `limit` rather than letting block-max WAND skip: when the terms have few postings
    /// each, or when the terms that are not common have too few documents to fill the
    /// best `limit`, so that the common terms decide them and WAND cannot skip (see
    /// [`WALK_POSTINGS_PER_TERM`]), and no segment is larger than
    /// [`WALK_MAX_SEGMENT_DOCS`].
    pub(crate) fn walks_every_posting(&self, limit: usize) -> bool {
        let segments_fit = self
            .searcher
            .segment_readers()
            .iter()
            .all(|segment| segment.max_doc() <= WALK_MAX_SEGMENT_DOCS);
        let postings: u64 = self.freqs.values().sum();
        let common = WALK_COMMON_SHARE * self.query.scope.docs as f64;
        let rare_postings: u64 = self
            .freqs
            .values()
            .filter(|&&freq| (freq as f64) < common)
            .sum();
        let chosen = postings <= WALK_POSTINGS_PER_TERM * self.terms.len() as u64
            || rare_postings <= limit as u64;
        #[cfg(test)]
        let chosen = FORCE_WALK.with(std::cell::Cell::get).unwrap_or(chosen);
        self.cover.shares.len() <= 64 && segments_fit && chosen
    }
}

/// A document's match of a text query: its BM25 score and how much of the query it
/// covers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TextMatch {
    pub(crate) bm25: f32,
    pub(crate) coverage: Coverage,
}

/// What coverage counts of a query's terms (see [`TextIndex::score_docs`]).
#[derive(Debug, Default)]
pub(crate) struct CoverPlan {
    /// What each term of the query ([`BooleanQueryParts::terms`]) counts for.
    pub(crate) roles: Vec<Role>,
    /// Each word's share of a full coverage, in the order of [`BooleanQueryParts::words`].
    pub(crate) shares: Vec<f32>,
    /// The words' idf summed, over the largest idf of the scope (`ln(1 + documents)`).
    pub(crate) information: f32,
}

impl CoverPlan {
    /// The coverage of a document that contains the words `has_word` says (by index in
    /// the query's words) and `codes` of its codes: the words' shares added in the order
    /// of the query's words, so that every path gives the same `f32`.
    pub(crate) fn coverage(&self, has_word: impl Fn(usize) -> bool, codes: u32) -> Coverage {
        let mut words = 0.0f32;
        let mut matched = 0u64;
        for (word, share) in self.shares.iter().enumerate() {
            if has_word(word) {
                words += share;
                if word < 64 {
                    matched |= 1 << word;
                }
            }
        }
        Coverage {
            words: words.clamp(0.0, 1.0),
            codes,
            matched,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Role {
    /// The word of this index in [`BooleanQueryParts::words`].
    Word(usize),
    /// A code.
    Code,
    /// Scored, not counted (a function word, a piece of an identifier).
    Other,
}

/// The match of each of `targets` (documents of `segment`, ascending) that contains a
/// term, `None` for the others, from one walk of each term's postings.
///
/// The BM25 score is the sum of the terms' scores in `terms`' order, as the union of the
/// query's clauses adds them, so equal to the query's own score. Each term's postings
/// seek from target to target; the union scorer would refill a window of 4,096
/// documents of every term at each seek. A coverage adds its words' shares in the
/// order of the query's words.
pub(crate) fn match_each(
    terms: &[Box<dyn tantivy::query::Weight>],
    cover: &CoverPlan,
    segment: &tantivy::SegmentReader,
    targets: &[u32],
) -> Result<Vec<Option<TextMatch>>> {
    let n = targets.len();
    let mut scores = vec![None; n];
    let mut has_word = vec![false; cover.shares.len() * n];
    let mut codes = vec![0u32; n];
    for (term, role) in terms.iter().zip(&cover.roles) {
        let mut scorer = term.scorer(segment, 1.0).map_err(tantivy_err)?;
        each_found(scorer.as_mut(), targets.iter().copied(), |i, scorer| {
            *scores[i].get_or_insert(0.0) += scorer.score();
            match *role {
                Role::Word(word) => has_word[word * n + i] = true,
                Role::Code => codes[i] += 1,
                Role::Other => {}
            }
        });
    }
    Ok(scores
        .into_iter()
        .enumerate()
        .map(|(i, score)| {
            let bm25 = score?;
            let coverage = cover.coverage(|word| has_word[word * n + i], codes[i]);
            Some(TextMatch { bm25, coverage })
        })
        .collect())
}

/// Walks `set` along `targets` (ascending documents of its segment), calling `found`
/// with the position of each target it contains, positioned on it.
pub(crate) fn each_found<D: DocSet + ?Sized>(
    set: &mut D,
    targets: impl Iterator<Item = u32>,
    mut found: impl FnMut(usize, &mut D),
) {
    for (i, target) in targets.enumerate() {
        let mut at = set.doc();
        if at < target {
            at = set.seek(target);
        }
        if at == TERMINATED {
            break;
        }
        if at == target {
            found(i, set);
        }
    }
}

/// When the text leg walks every posting of every term, adding up each document's
/// score, instead of letting block-max WAND skip ([`TextPlan::walks_every_posting`]).
///
/// A walk costs about 2.5 ns a posting (it reads a block of decoded postings at a
/// time). WAND skips the more, the rarer the query's rarest terms, and its cost per
/// document grows with the number of terms. Per query, text leg only:
/// - SciFact's claims (a dozen terms and more, function words included): the walk takes
///   40 % of WAND's time at the median (59 against 147 µs) and at the 99th percentile;
/// - four terms over 10,000 documents: about the same median, a 99th percentile of 174
///   against 250 µs;
/// - four terms over 100,000: WAND takes 40 % of the walk's time at the median (225
///   against 545 µs), but once even the rarest term is in a tenth of the documents
///   WAND visits nearly every posting, and takes up to twice the walk's time (1.0 to
///   2.1 ms where the walk takes 0.6 to 0.9).
pub(crate) const WALK_POSTINGS_PER_TERM: u64 = 8_192;

/// The share of the scope's documents from which a term is common: when the other
/// terms of a query have at most as many postings as the leg returns candidates, the
/// text leg walks (see [`WALK_POSTINGS_PER_TERM`]). Those are the queries WAND cannot
/// prune (a rare word beside common ones: the common terms decide the best `limit` and
/// WAND visits nearly all their postings, at up to twice the walk's cost). Shares of
/// 10 % and 15 % gave the lowest tail on synthetic 100,000-document sets; 20 % and
/// more leave slow WAND queries, and walking every query doubles the median.
pub(crate) const WALK_COMMON_SHARE: f64 = 0.15;

/// The largest segment the text leg walks: the walk's scratch takes 24 bytes a
/// document of the largest segment walked, kept by each searching thread (6.3 MB at
/// this limit).
pub(crate) const WALK_MAX_SEGMENT_DOCS: u32 = 1 << 18;

#[cfg(test)]
thread_local! {
    /// Makes the text leg walk every posting (`Some(true)`) or let WAND skip
    /// (`Some(false)`) whatever the query, on this thread.
    pub(crate) static FORCE_WALK: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
}
