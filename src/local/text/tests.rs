use rustc_hash::FxHashMap;
use tantivy::query::{EnableScoring, Query};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocSet, TERMINATED, TantivyDocument};

use crate::Result;
use crate::analysis::text::{self as analyzer, Analysis};
use crate::model::id::DocId;

use super::guard::*;
use super::index::*;
use super::query::*;
use super::schema::*;
use super::stats::*;
use super::tokenizer::PreAnalyzed;
use super::walk::*;
use super::*;
use crate::parallel::WalkShare;

/// The analysis as tantivy's own filters make it (its tokenizer made of the analysis's
/// spans): what `analysis::text` must give, token for token.
fn tantivy_analyzer(analysis: Analysis) -> tantivy::tokenizer::TextAnalyzer {
    use tantivy::tokenizer::{
        Language, LowerCaser, RemoveLongFilter, Stemmer, StopWordFilter, TextAnalyzer, Token,
        TokenStream, Tokenizer,
    };
    #[derive(Clone)]
    struct Spans(fn(&str) -> Vec<(usize, usize)>);
    struct Stream<'a> {
        text: &'a str,
        spans: std::vec::IntoIter<(usize, usize)>,
        token: Token,
    }
    impl Tokenizer for Spans {
        type TokenStream<'a> = Stream<'a>;
        fn token_stream<'a>(&'a mut self, text: &'a str) -> Stream<'a> {
            Stream {
                text,
                spans: (self.0)(text).into_iter(),
                token: Token::default(),
            }
        }
    }
    impl TokenStream for Stream<'_> {
        fn advance(&mut self) -> bool {
            let Some((from, to)) = self.spans.next() else {
                return false;
            };
            // `Token::default()` starts at `usize::MAX`: the first token is at 0.
            self.token.position = self.token.position.wrapping_add(1);
            self.token.position_length = 1;
            self.token.text = self.text[from..to].to_string();
            self.token.offset_from = from;
            self.token.offset_to = to;
            true
        }
        fn token(&self) -> &Token {
            &self.token
        }
        fn token_mut(&mut self) -> &mut Token {
            &mut self.token
        }
    }
    let limit = RemoveLongFilter::limit(analyzer::MAX_TOKEN_BYTES);
    match analysis {
        Analysis::Words => TextAnalyzer::builder(Spans(analyzer::word_spans))
            .filter(limit)
            .filter(LowerCaser)
            .filter(StopWordFilter::new(Language::English).unwrap())
            .filter(Stemmer::new(Language::English))
            .build(),
        Analysis::Ident => TextAnalyzer::builder(Spans(analyzer::ident_spans))
            .filter(limit)
            .filter(LowerCaser)
            .build(),
    }
}

proptest::proptest! {
    /// The analysis gives tantivy's own filters' tokens, whatever the text: ASCII,
    /// accents, capitals (camelCase, `ΣΑΣ`), identifiers, long runs.
    #[test]
    fn the_analysis_is_tantivys_filters(
        text in "[a-zA-Z0-9 _./:@#-]{0,60}|[a-zA-Zéßİ ΣΑςσ0-9]{0,40}|(the|a|Running|APIs|entityStore|NW-15699|x{70}| ){0,12}",
    ) {
        for analysis in [Analysis::Words, Analysis::Ident] {
            let mut theirs = tantivy_analyzer(analysis);
            let mut stream = theirs.token_stream(&text);
            let mut expected = Vec::new();
            while let Some(token) = stream.next() {
                expected.push(token.text.clone());
            }
            proptest::prop_assert_eq!(analyzer::tokens(analysis, &text), expected);
        }
    }
}

impl UserId for String {
    fn user_id(&self) -> &str {
        self
    }
}
use crate::{Chunk, Document};

/// Coverage is the idf-weighted share of the query's words a document contains, and
/// counts the query's codes it contains verbatim.
#[test]
fn coverage_weighs_words_by_rarity_and_counts_codes() {
    let dir = tempfile::tempdir().unwrap();
    let text = TextIndex::create(&dir.path().join("text"), false, &Protected::default()).unwrap();
    let docs = [
        "refund for order NW-15699 please",
        "refund for order NW-15609",
        "the order shipped",
        "the order was late",
        "an unrelated note",
    ];
    for (i, content) in docs.iter().enumerate() {
        let chunk = Chunk::new(format!("c{i}"), *content);
        text.add_document(DocId::new(i as u64), &Document::Chunk(chunk))
            .unwrap();
    }
    text.commit(1).unwrap();
    text.reload().unwrap();
    let scope = ScopeStats {
        docs: docs.len() as u64,
        tokens: [30, 10],
    };
    let query = text.analyze(
        "refund order NW-15699",
        crate::Kind::Chunk,
        "default",
        scope,
    );
    assert_eq!(
        crate::analysis::query_codes("refund order NW-15699"),
        ["nw-15699"]
    );
    let all: Vec<DocId> = (0..docs.len() as u64).map(DocId::new).collect();
    let scored = text
        .score_docs(&text.plan(query.clone()).unwrap(), &all)
        .unwrap();
    let of = |i: u64| {
        scored
            .get(&DocId::new(i))
            .map(|found| found.coverage)
            .unwrap_or_default()
    };
    assert!((of(0).words - 1.0).abs() < 1e-6, "{:?}", of(0));
    assert_eq!(of(0).codes, 1);
    // The look-alike holds `refund` and `order`, not the code: the code's pieces
    // (`nw`, `15699`) are not words of the query's coverage, only the code counts.
    assert!((of(1).words - 1.0).abs() < 1e-6, "{:?}", of(1));
    assert_eq!(of(1).codes, 0);
    // `order` is common: covering it alone is worth less than covering `refund`.
    assert!(
        of(2).words < of(1).words && of(2).words > 0.0,
        "{:?}",
        of(2)
    );
    assert_eq!(of(4), Coverage::default());
}

/// BM25's live document frequencies, remembered per segment, follow every round of
/// deletes.
#[test]
fn live_document_frequencies_follow_every_delete() {
    let dir = tempfile::tempdir().unwrap();
    let text = TextIndex::create(&dir.path().join("text"), false, &Protected::default()).unwrap();
    let words = ["order", "refund", "parcel", "late", "card"];
    let has = |id: u64, word: usize| id % 5 == word as u64 || (id / 5) % 5 == word as u64;
    for id in 0..400u64 {
        let content: Vec<&str> = (0..5).filter(|&w| has(id, w)).map(|w| words[w]).collect();
        let chunk = Chunk::new(format!("c{id}"), content.join(" "));
        text.add_document(DocId::new(id), &Document::Chunk(chunk))
            .unwrap();
    }
    text.commit(1).unwrap();
    let mut deleted = std::collections::BTreeSet::new();
    // Each round deletes more: a frequency remembered from the round before must not
    // be given for the same segment with more of its documents deleted.
    for (round, step) in [0u64, 9, 7, 3].into_iter().enumerate() {
        if step > 0 {
            for id in (0..400).step_by(step as usize) {
                text.delete(DocId::new(id)).unwrap();
                deleted.insert(id);
            }
            text.commit(round as u64 + 1).unwrap();
        }
        text.reload().unwrap();
        let searcher = text.reader.searcher();
        for (w, word) in words.iter().enumerate() {
            let query = text.analyze(word, crate::Kind::Chunk, "default", ScopeStats::default());
            let term = query.query.as_ref().unwrap().words[0].clone();
            let expected = (0..400)
                .filter(|id| has(*id, w) && !deleted.contains(id))
                .count() as u64;
            for _ in 0..2 {
                let got = text.live_freqs.doc_freq(&searcher, &term).unwrap();
                assert_eq!(got, expected, "round {round}, {word}");
            }
        }
    }
}

#[test]
fn documents_are_found_in_segments_written_in_any_order() {
    let dir = tempfile::tempdir().unwrap();
    let text = TextIndex::create(&dir.path().join("text"), false, &Protected::default()).unwrap();
    let words = ["order", "refund", "parcel", "late", "card"];
    // One segment written in id order, one shuffled (ids 1000.. in a scattered
    // order), each with a deleted document and ids missing between them.
    let ascending: Vec<u64> = (0..200).map(|i| i * 2).collect();
    let shuffled: Vec<u64> = (0..200).map(|i| 1000 + (i * 77) % 200).collect();
    for (commit, ids) in [&ascending, &shuffled].into_iter().enumerate() {
        for &id in ids {
            let content = format!(
                "{} {}",
                words[id as usize % 5],
                words[(id / 5) as usize % 5]
            );
            let chunk = Chunk::new(format!("c{id}"), content);
            text.add_document(DocId::new(id), &Document::Chunk(chunk))
                .unwrap();
        }
        text.commit(commit as u64 + 1).unwrap();
    }
    text.delete(DocId::new(40)).unwrap();
    text.delete(DocId::new(1010)).unwrap();
    text.commit(3).unwrap();
    text.reload().unwrap();

    let searcher = text.reader.searcher();
    let mut kinds = Vec::new();
    for segment in searcher.segment_readers() {
        kinds.push(text.ascending_ids(segment).unwrap().is_some());
    }
    assert!(
        kinds.contains(&false) && kinds.contains(&true),
        "both ways of locating are exercised: {kinds:?}"
    );

    // Every id asked, present or not, is located as a naive scan of the columns finds it.
    let asked: Vec<DocId> = (0..1300).rev().map(DocId::new).collect();
    for segment in searcher.segment_readers() {
        let ids = segment.fast_fields().u64("doc_id").unwrap();
        let alive = segment.alive_bitset();
        let mut naive: Vec<(u32, DocId)> = (0..segment.max_doc())
            .filter(|&seg_doc| alive.is_none_or(|alive| alive.is_alive(seg_doc)))
            .map(|seg_doc| (seg_doc, DocId::new(ids.first(seg_doc).unwrap())))
            .collect();
        naive.sort_unstable();
        let mut located = Vec::new();
        text.locate(segment, &asked, &mut located).unwrap();
        assert_eq!(located, naive);
        text.locate(segment, &asked[..3], &mut located).unwrap();
        assert!(located.iter().all(|(_, doc)| asked[..3].contains(doc)));
    }
    let counts = text
        .token_counts_of(&[
            DocId::new(40),
            DocId::new(42),
            DocId::new(1011),
            DocId::new(7),
        ])
        .unwrap();
    let found: Vec<DocId> = counts.iter().map(|(doc, _)| *doc).collect();
    assert_eq!(found.len(), 2);
    assert!(found.contains(&DocId::new(42)) && found.contains(&DocId::new(1011)));
}

/// `score_docs` (seek to each document) gives exactly the scores of a full visit, over
/// several segments and with deleted documents; so does the text leg's top k, by
/// block-max WAND and by a walk of every posting.
#[test]
fn pruned_top_k_and_score_docs_match_a_full_visit() {
    for walk in [false, true] {
        FORCE_WALK.with(|force| force.set(Some(walk)));
        top_k_and_score_docs_match_a_full_visit();
    }
    FORCE_WALK.with(|force| force.set(None));
}

fn top_k_and_score_docs_match_a_full_visit() {
    let dir = tempfile::tempdir().unwrap();
    let text = TextIndex::create(&dir.path().join("text"), false, &Protected::default()).unwrap();
    let words = [
        "order", "refund", "parcel", "late", "card", "label", "tent", "email",
    ];
    let mut next = 0u64;
    for commit in 0..3 {
        for i in 0..120 {
            let content: Vec<&str> = (0..1 + (i * 7 + commit) % 5)
                .map(|j| words[(i * 3 + j * 5 + commit) % words.len()])
                .collect();
            let chunk = Chunk::new(format!("c{next}"), content.join(" "));
            text.add_document(DocId::new(next), &Document::Chunk(chunk))
                .unwrap();
            next += 1;
        }
        text.commit(commit as u64 + 1).unwrap();
    }
    for doc in (0..next).step_by(9) {
        text.delete(DocId::new(doc)).unwrap();
    }
    text.commit(4).unwrap();
    text.reload().unwrap();
    assert!(text.segment_count() > 1, "the test needs several segments");

    let scope = ScopeStats {
        docs: next,
        tokens: [3 * next, 0],
    };
    let query = text.analyze("late parcel refund", crate::Kind::Chunk, "default", scope);
    let all: Vec<DocId> = (0..next).map(DocId::new).collect();
    // A limit above the number of matches never fills the heap: nothing is pruned.
    let user_ids: Vec<String> = all.iter().map(|d| format!("c{:04}", d.as_u64())).collect();
    let accept_all = |doc: DocId| Some(&user_ids[doc.as_u64() as usize] as &dyn UserId);
    fn top<'a>(
        text: &TextIndex,
        query: &TextQuery,
        k: usize,
        accept: &(dyn Fn(DocId) -> Option<&'a dyn UserId> + Sync),
    ) -> Vec<(DocId, f32)> {
        let hits = text
            .search(&text.plan(query.clone()).unwrap(), k, accept, None)
            .unwrap();
        // Each hit's coverage is the one `score_docs` measures.
        let again = text
            .score_docs(
                &text.plan(query.clone()).unwrap(),
                &hits.iter().map(|(doc, _)| *doc).collect::<Vec<_>>(),
            )
            .unwrap();
        for (doc, found) in &hits {
            assert_eq!(again.get(doc), Some(found), "{doc:?}");
        }
        hits.into_iter()
            .map(|(doc, found)| (doc, found.bm25))
            .collect()
    }
    let full: FxHashMap<DocId, f32> = top(&text, &query, all.len(), &accept_all)
        .into_iter()
        .collect();
    let scored: FxHashMap<DocId, f32> = text
        .score_docs(&text.plan(query.clone()).unwrap(), &all)
        .unwrap()
        .into_iter()
        .map(|(doc, found)| (doc, found.bm25))
        .collect();
    assert_eq!(scored, full);
    // Both are tantivy's own scores: its boolean query visiting every match.
    let searcher = text.reader.searcher();
    let statistics = text.statistics(&searcher, query.scope, None);
    let weight = query
        .to_query()
        .unwrap()
        .weight(EnableScoring::enabled_from_statistics_provider(
            &statistics,
            &searcher,
        ))
        .unwrap();
    let mut visited = FxHashMap::default();
    for segment in searcher.segment_readers() {
        let doc_ids = segment.fast_fields().u64("doc_id").unwrap();
        let alive = segment.alive_bitset();
        weight
            .for_each(segment, &mut |seg_doc, score| {
                if alive.is_none_or(|alive| alive.is_alive(seg_doc)) {
                    visited.insert(DocId::new(doc_ids.first(seg_doc).unwrap()), score);
                }
            })
            .unwrap();
    }
    assert_eq!(scored, visited);
    assert!(scored.len() > 50 && scored.len() < all.len());
    assert!(!scored.contains_key(&DocId::new(0)), "deleted");

    // The pruned top-k is the naive top-k: score descending, then user id.
    let mut naive: Vec<(DocId, f32)> = full.iter().map(|(d, s)| (*d, *s)).collect();
    naive.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then_with(|| user_ids[a.0.as_u64() as usize].cmp(&user_ids[b.0.as_u64() as usize]))
    });
    for k in [1, 3, 10, 40] {
        let pruned = top(&text, &query, k, &accept_all);
        assert_eq!(pruned, naive[..k], "top {k}");
    }
    // A filter applies before the cut.
    let odd = |doc: DocId| {
        (doc.as_u64() % 2 == 1).then(|| &user_ids[doc.as_u64() as usize] as &dyn UserId)
    };
    let naive_odd: Vec<(DocId, f32)> = naive
        .iter()
        .copied()
        .filter(|(d, _)| d.as_u64() % 2 == 1)
        .take(10)
        .collect();
    assert_eq!(top(&text, &query, 10, &odd), naive_odd);

    let some: Vec<DocId> = (0..next).step_by(4).map(DocId::new).collect();
    let partial = text
        .score_docs(&text.plan(query.clone()).unwrap(), &some)
        .unwrap();
    for doc in &some {
        assert_eq!(
            partial.get(doc).map(|found| found.bm25),
            full.get(doc).copied(),
            "{doc:?}"
        );
    }
}

/// Every (field, term) of an index with its postings `doc_id -> term frequency`, and
/// each document's fieldnorms, whatever the segments.
type Postings = std::collections::BTreeMap<(u32, Vec<u8>), std::collections::BTreeMap<u64, u32>>;

fn index_contents(text: &TextIndex) -> (Postings, std::collections::BTreeMap<(u32, u64), u8>) {
    use tantivy::postings::Postings as _;
    let searcher = text.reader.searcher();
    let mut postings = Postings::new();
    let mut norms = std::collections::BTreeMap::new();
    for segment in searcher.segment_readers() {
        let ids = segment.fast_fields().u64("doc_id").unwrap();
        for field in [text.fields.words, text.fields.ident] {
            let inverted = segment.inverted_index(field).unwrap();
            let mut terms = inverted.terms().stream().unwrap();
            while terms.advance() {
                let info = terms.value().clone();
                let mut list = inverted
                    .read_postings_from_terminfo(&info, IndexRecordOption::WithFreqs)
                    .unwrap();
                let entry = postings
                    .entry((field.field_id(), terms.key().to_vec()))
                    .or_default();
                while list.doc() != TERMINATED {
                    entry.insert(ids.first(list.doc()).unwrap(), list.term_freq());
                    list.advance();
                }
            }
            let fieldnorms = segment.get_fieldnorms_reader(field).unwrap();
            for seg_doc in segment.doc_ids_alive() {
                norms.insert(
                    (field.field_id(), ids.first(seg_doc).unwrap()),
                    fieldnorms.fieldnorm_id(seg_doc),
                );
            }
        }
    }
    (postings, norms)
}

/// Documents analysed by `prepare` and read back by the fields' tokenizer give the
/// index tantivy builds from its own pre-tokenized values (the way ruche added them
/// before): the same terms, postings, frequencies and fieldnorms, so the same scores.
#[test]
fn analysed_documents_index_as_tantivys_pre_tokenized_ones() {
    let contents = [
        (
            "default",
            "Refund for order NW-15699, please: 12:30 at src/main.rs",
        ),
        (
            "default",
            "The EntityStore keeps 3:4 ratios; 10:abc and  unicode café Ünïcödé",
        ),
        ("acme", "order NW-15699 shipped to user@example.com on v2.1"),
        ("acme:x", "the the the and of"),
        ("default", ""),
        ("t\u{e9}n", "colons::everywhere : 1:1 22:222 :::"),
    ];
    let dir = tempfile::tempdir().unwrap();
    let ours = TextIndex::create(&dir.path().join("ours"), false, &Protected::default()).unwrap();
    let theirs =
        TextIndex::create(&dir.path().join("theirs"), false, &Protected::default()).unwrap();
    for (i, (tenant, content)) in contents.iter().enumerate() {
        let document = Document::Chunk(Chunk::new(format!("c{i}"), *content).with_tenant(*tenant));
        let doc = DocId::new(i as u64);
        let counts = ours.add_document(doc, &document).unwrap();
        // tantivy's pre-tokenized values, analysed by the same analyzers.
        let text = document.indexed_text(false);
        let prefix = scope_prefix(document.kind(), document.tenant_id());
        let tokenized = |analyzer: &tantivy::tokenizer::TextAnalyzer| {
            let mut analyzer = analyzer.clone();
            let mut stream = analyzer.token_stream(&text);
            let mut tokens = Vec::new();
            while let Some(token) = stream.next() {
                let mut token = token.clone();
                token.text.insert_str(0, &prefix);
                tokens.push(token);
            }
            tantivy::tokenizer::PreTokenizedString {
                text: String::new(),
                tokens,
            }
        };
        let (words, ident) = (
            tokenized(&tantivy_analyzer(Analysis::Words)),
            tokenized(&tantivy_analyzer(Analysis::Ident)),
        );
        assert_eq!(
            counts,
            [words.tokens.len() as u32, ident.tokens.len() as u32]
        );
        let mut entry = TantivyDocument::default();
        entry.add_u64(theirs.fields.doc_id, doc.as_u64());
        entry.add_u64(
            theirs.fields.tokens,
            (u64::from(counts[0]) << 32) | u64::from(counts[1]),
        );
        entry.add_pre_tokenized_text(theirs.fields.words, words);
        entry.add_pre_tokenized_text(theirs.fields.ident, ident);
        theirs.add_prepared(AnalysedDoc { entry, counts }).unwrap();
    }
    for text in [&ours, &theirs] {
        text.commit(1).unwrap();
        text.reload().unwrap();
    }
    let (our_postings, our_norms) = index_contents(&ours);
    let (their_postings, their_norms) = index_contents(&theirs);
    assert!(our_postings.len() > 20, "{}", our_postings.len());
    assert_eq!(our_postings, their_postings);
    assert_eq!(our_norms, their_norms);
    let counts = |text: &TextIndex| {
        let mut counts = text.token_counts().unwrap();
        counts.sort();
        counts
    };
    assert_eq!(counts(&ours), counts(&theirs));
}

/// The fields' tokenizer never panics, whatever it is given, and stops where the
/// encoding stops making sense.
#[test]
fn the_fields_tokenizer_reads_its_encoding_and_survives_anything_else() {
    use tantivy::tokenizer::{TokenStream as _, Tokenizer as _};
    let read = |text: &str| {
        let mut tokenizer = PreAnalyzed;
        let mut stream = tokenizer.token_stream(text);
        let mut out = Vec::new();
        while let Some(token) = stream.next() {
            out.push(token.text.clone());
        }
        out
    };
    assert_eq!(read("2:p\u{0}3:a:b1:7"), ["p\u{0}a:b", "p\u{0}7"]);
    assert_eq!(read("0:2:é3:xyz"), ["é", "xyz"]);
    for garbage in [
        "",
        ":",
        "9:ab",
        "x:1:a",
        "2:é",
        "1:",
        "3:abc4:ab",
        "18446744073709551616:a",
        "0:1:\u{e9}",
    ] {
        let _ = read(garbage);
    }
    assert!(read("3:abc4:ab").is_empty());
    assert!(read("0:1:\u{e9}").is_empty());
}

/// A walk split in parts of the segment's documents (each term's postings entered
/// through the skip list, in the middle of a block) gives the unsplit walk's hits
/// and scores, bit for bit, whichever thread walks which part.
#[test]
fn a_walk_in_parts_gives_the_same_hits() {
    const WORDS: [&str; 6] = ["the", "order", "refund", "parcel", "late", "NW-15007"];
    let dir = tempfile::tempdir().unwrap();
    let text = TextIndex::create(&dir.path().join("text"), false, &Protected::default()).unwrap();
    let n = 1_531u64;
    for i in 0..n {
        // "the" everywhere, the others every 2nd, 3rd, ... document, with
        // repetitions: terms of thousands of postings, hundreds, and a few.
        let mut words = vec!["the"; 1 + (i % 3) as usize];
        for (w, word) in WORDS.iter().enumerate().skip(1) {
            if i % (w as u64 + 1) == 0 || (w == 5 && i % 97 == 0) {
                words.extend(std::iter::repeat_n(*word, 1 + (i as usize + w) % 2));
            }
        }
        let chunk = Chunk::new(format!("c{i:05}"), words.join(" "));
        text.add_document(DocId::new(i), &Document::Chunk(chunk))
            .unwrap();
    }
    text.commit(1).unwrap();
    text.reload().unwrap();
    let scope = ScopeStats {
        docs: n,
        tokens: [6 * n, n],
    };
    let user_ids: Vec<String> = (0..n).map(|i| format!("c{i:05}")).collect();
    FORCE_WALK.with(|force| force.set(Some(true)));
    for words in [
        "the order",
        "refund parcel late",
        "the NW-15007 late",
        "order order the",
    ] {
        let query = text.analyze(words, crate::Kind::Chunk, "default", scope);
        let plan = text.plan(query).unwrap();
        for filtered in [true, false] {
            let accept = |doc: DocId| {
                (!filtered || doc.as_u64().is_multiple_of(3))
                    .then(|| &user_ids[doc.as_u64() as usize] as &dyn UserId)
            };
            let accept = &accept;
            for k in [1, 10, 100, 2_000] {
                let whole = text.search(&plan, k, accept, None).unwrap();
                assert!(!whole.is_empty(), "{words}");
                SHARED_WALK_FROM_TEST.with(|from| from.set(Some(0)));
                let share = WalkShare::default();
                let taken_back = text.search(&plan, k, accept, Some(&share)).unwrap();
                let helped = std::thread::scope(|scope| {
                    let leg = share.leg();
                    let helper = scope.spawn(|| share.help_while_running());
                    let helped = text.search(&plan, k, accept, Some(&share)).unwrap();
                    drop(leg);
                    helper.join().unwrap();
                    helped
                });
                SHARED_WALK_FROM_TEST.with(|from| from.set(None));
                assert_eq!(taken_back, whole, "{words}, k {k}");
                assert_eq!(helped, whole, "{words}, k {k}");
            }
        }
    }
    FORCE_WALK.with(|force| force.set(None));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, ..Default::default() })]

    /// The walk of every posting, and `search_among` a superset of the admitted
    /// documents, give the naive top k: every document scored by `score_docs` (the
    /// same sums, BM25 and coverage), best first, ties by user id, the filter applied
    /// before the cut; over several segments, deleted documents, repeated query words
    /// and codes.
    #[test]
    fn the_walk_gives_the_naive_top_k(
        docs in proptest::collection::vec(proptest::collection::vec(0usize..10, 1..4), 20..120),
        query in proptest::collection::vec(0usize..10, 1..7),
        k in 1usize..25,
        modulus in 1u64..4,
        deleted in 0u64..7,
    ) {
        const WORDS: [&str; 10] = [
            "order", "refund", "parcel", "late", "card", "NW-15007", "the", "label", "tent", "email",
        ];
        let dir = tempfile::tempdir().unwrap();
        let text = TextIndex::create(&dir.path().join("text"), false, &Protected::default()).unwrap();
        let half = docs.len() / 2;
        for (i, words) in docs.iter().enumerate() {
            let content: Vec<&str> = words.iter().map(|&w| WORDS[w]).collect();
            let chunk = Chunk::new(format!("c{i}"), content.join(" "));
            text.add_document(DocId::new(i as u64), &Document::Chunk(chunk)).unwrap();
            if i == half {
                text.commit(1).unwrap();
            }
        }
        if deleted > 0 {
            for doc in (0..docs.len() as u64).step_by(deleted as usize + 1) {
                text.delete(DocId::new(doc)).unwrap();
            }
        }
        text.commit(2).unwrap();
        text.reload().unwrap();
        let live = docs.len() as u64 - if deleted > 0 { (docs.len() as u64).div_ceil(deleted + 1) } else { 0 };
        let scope = ScopeStats { docs: live, tokens: [4 * live, live] };
        let query: Vec<&str> = query.iter().map(|&w| WORDS[w]).collect();
        let query = text.analyze(&query.join(" "), crate::Kind::Chunk, "default", scope);
        let plan = text.plan(query).unwrap();
        let user_ids: Vec<String> = (0..docs.len()).map(|i| format!("c{i}")).collect();
        let accept = |doc: DocId| {
            doc.as_u64().is_multiple_of(modulus).then(|| &user_ids[doc.as_u64() as usize] as &dyn UserId)
        };
        let all: Vec<DocId> = (0..docs.len() as u64).map(DocId::new).collect();
        let mut naive: Vec<(DocId, TextMatch)> = text
            .score_docs(&plan, &all)
            .unwrap()
            .into_iter()
            .filter(|(doc, _)| accept(*doc).is_some())
            .collect();
        naive.sort_by(|a, b| {
            b.1.bm25.total_cmp(&a.1.bm25).then_with(|| {
                user_ids[a.0.as_u64() as usize].cmp(&user_ids[b.0.as_u64() as usize])
            })
        });
        naive.truncate(k);
        // Scoring each document of a superset of what the filter admits: the same.
        let among = text.search_among(&plan, &all, k, &accept).unwrap();
        proptest::prop_assert_eq!(&among, &naive);
        FORCE_WALK.with(|force| force.set(Some(true)));
        let walked = text.search(&plan, k, &accept, None);
        // The same walk in parts of each segment: taken back by this thread, then
        // shared with another that helps while the leg runs.
        SHARED_WALK_FROM_TEST.with(|from| from.set(Some(0)));
        let share = WalkShare::default();
        let parts = text.search(&plan, k, &accept, Some(&share));
        let shared = std::thread::scope(|scope| {
            let leg = share.leg();
            let helper = scope.spawn(|| share.help_while_running());
            let shared = text.search(&plan, k, &accept, Some(&share));
            drop(leg);
            helper.join().unwrap();
            shared
        });
        SHARED_WALK_FROM_TEST.with(|from| from.set(None));
        FORCE_WALK.with(|force| force.set(None));
        let walked = walked.unwrap();
        proptest::prop_assert_eq!(&parts.unwrap(), &walked);
        proptest::prop_assert_eq!(&shared.unwrap(), &walked);
        proptest::prop_assert_eq!(walked, naive);
    }
}

/// Run as a child of [`a_panic_turned_into_an_error_prints_nothing`].
#[test]
fn panic_child() {
    if std::env::var_os("RUCHE_TEST_PANIC_CHILD").is_none() {
        return;
    }
    let err = guarded("reading", || -> Result<()> { panic!("inside guarded") }).unwrap_err();
    eprintln!("error: {err}");
    let _ = std::panic::catch_unwind(|| panic!("outside guarded"));
}

/// A panic of tantivy's on damaged data becomes an error and prints no "thread
/// panicked" (the error says it all); any other panic is reported as before.
#[test]
fn a_panic_turned_into_an_error_prints_nothing() {
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "local::text::tests::panic_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("RUCHE_TEST_PANIC_CHILD", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("failed on damaged data (inside guarded)"),
        "{stderr}"
    );
    // One report: the panic outside.
    assert_eq!(stderr.matches("panicked at").count(), 1, "{stderr}");
    assert!(stderr.contains("outside guarded"), "{stderr}");
}
