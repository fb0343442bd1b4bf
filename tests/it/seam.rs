//! The seam: the local index as a `Retriever`, and the pipeline (`search_with`) over it.

use proptest::prelude::*;
use ruchedb::rank::search_with;
use ruchedb::retrieve::{RetrievalQuery, Retrieved, RetrievedDoc, Retriever};
use ruchedb::{Chunk, Config, Engine, Kind, Rule, Scope, SearchRequest, Timestamp};

fn engine() -> Engine {
    let engine = Engine::builder().temporary().unwrap();
    engine
        .upsert_rules([
            Rule::new(
                "refund",
                "the customer asks for a refund",
                "check the order, then refund",
            )
            .with_priority(10)
            .with_patterns(["I want my money back", "can I get reimbursed"]),
            Rule::new("vip", "a VIP customer asks for a refund", "refund at once")
                .with_priority(90)
                .with_scope(Scope::scenario("vip")),
            Rule::new("card", "the customer lost a card", "block the card").with_priority(50),
            Rule::new("late", "an order is late", "give the tracking link").with_priority(20),
        ])
        .unwrap();
    engine
        .upsert_chunks((0..40).map(|i| {
            Chunk::new(
                format!("n{i:02}"),
                format!(
                    "note {i}: order NW-{} about a refund of {} euros",
                    15000 + i,
                    i * 3
                ),
            )
            .with_importance((i % 10) as u8 + 1)
        }))
        .unwrap();
    engine.commit().unwrap();
    engine
}

fn summary(hits: &[ruchedb::Hit]) -> Vec<(String, f64)> {
    hits.iter().map(|h| (h.id.clone(), h.score)).collect()
}

/// `Engine::search` is `search_with` over the engine as a retriever: same hits, same
/// scores, same explain.
#[test]
fn engine_search_is_the_pipeline_over_the_local_retriever() {
    let engine = engine();
    let config = Config::default();
    for request in [
        SearchRequest::rules("I want my money back"),
        SearchRequest::rules("refund please")
            .with_scenario("vip")
            .with_top_k(3),
        SearchRequest::rules("xyzzy plugh"),
        SearchRequest::chunks("order NW-15007"),
        SearchRequest::chunks("refund euros").with_top_k(10),
        SearchRequest::chunks("")
            .browse()
            .with_top_k(5)
            .with_now(Timestamp::now()),
    ] {
        let by_engine = engine.search(&request).unwrap();
        let embedder = engine.embedder(request.kind()).unwrap();
        let by_seam =
            search_with(&engine, &config, &request, Some(embedder.as_ref()), None).unwrap();
        assert_eq!(
            summary(&by_engine.hits),
            summary(&by_seam.hits),
            "{request:?}"
        );
        let breakdowns = |r: &ruchedb::SearchResponse| {
            r.hits
                .iter()
                .map(|h| h.breakdown.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(breakdowns(&by_engine), breakdowns(&by_seam), "{request:?}");
        assert_eq!(by_engine.gate, by_seam.gate);
        assert_eq!(by_engine.selection, by_seam.selection);
    }
}

/// `fill` alone gives candidates the scores `retrieve` gave them under one snapshot
/// (where each leg measured its own hits for the other beside it).
#[test]
fn fill_gives_what_retrieve_gave() {
    let engine = engine();
    let embedder = engine.embedder(Kind::Chunk).unwrap();
    let request = SearchRequest::chunks("refund of 21 euros NW-15007");
    let mut vector = embedder
        .embed_batch(&[request.text()])
        .unwrap()
        .pop()
        .unwrap();
    normalise(&mut vector);
    for vector in [None, Some(vector.as_slice())] {
        // Few per leg, so that each leg finds some the other does not.
        let query = RetrievalQuery::new(&request, vector, 8, Timestamp::now());
        let complete = engine.candidates(&query).unwrap();
        assert!(complete.candidates.len() >= 8);
        if vector.is_some() {
            let only = |text: bool| {
                complete
                    .candidates
                    .iter()
                    .any(|c| c.found_by.text == text && c.found_by.vector != text)
            };
            assert!(only(true) && only(false));
        }
        assert_fill_gives(&engine, &query, &complete.candidates);
    }
}

fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    v.iter_mut()
        .for_each(|x| *x = (f64::from(*x) / norm) as f32);
}

/// Each of `candidates` as `fill` scores it from nothing: BM25, coverage, cosine and
/// the vector that gave it.
fn assert_fill_gives(
    engine: &Engine,
    query: &RetrievalQuery<'_>,
    candidates: &[ruchedb::retrieve::RetrievedDoc],
) {
    let mut bare: Vec<_> = candidates
        .iter()
        .map(|c| ruchedb::retrieve::RetrievedDoc::new(c.document.clone()))
        .collect();
    engine.fill(query, &mut bare).unwrap();
    for (a, b) in candidates.iter().zip(&bare) {
        assert_eq!(
            (a.id(), a.bm25, a.coverage, a.cosine, a.vector_match),
            (b.id(), b.bm25, b.coverage, b.cosine, b.vector_match)
        );
    }
}

/// With legs side by side (a scope of 2,000 documents or more, text and vector), what
/// each leg measured of its hits for the other, on its own thread, is what `fill`
/// gives, whichever thread was done first.
#[test]
fn legs_side_by_side_measure_what_fill_gives() {
    const WORDS: [&str; 12] = [
        "refund", "order", "card", "late", "parcel", "euros", "invoice", "account", "password",
        "delivery", "address", "payment",
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let vector = |next: &mut dyn FnMut() -> u64| -> Vec<f32> {
        (0..16)
            .map(|_| (next() % 2_001) as f32 / 1_000.0 - 1.0)
            .collect()
    };
    let engine = Engine::builder().temporary().unwrap();
    let chunks: Vec<Chunk> = (0..2_500)
        .map(|i| {
            let text: Vec<&str> = (0..6).map(|_| WORDS[(next() % 12) as usize]).collect();
            Chunk::new(format!("c{i:04}"), text.join(" ")).with_embedding(vector(&mut next))
        })
        .collect();
    engine.upsert_chunks(chunks).unwrap();
    engine.commit().unwrap();
    for i in 0..200 {
        let text = format!("{} {}", WORDS[i % 12], WORDS[(i * 5 + 1) % 12]);
        let request = SearchRequest::chunks(text);
        let mut query_vector = vector(&mut next);
        normalise(&mut query_vector);
        let query = RetrievalQuery::new(&request, Some(&query_vector), 30, Timestamp::now());
        let retrieved = engine.candidates(&query).unwrap();
        assert!(
            retrieved
                .candidates
                .iter()
                .any(|c| c.found_by.text && !c.found_by.vector)
        );
        assert!(
            retrieved
                .candidates
                .iter()
                .any(|c| c.found_by.vector && !c.found_by.text)
        );
        assert_fill_gives(&engine, &query, &retrieved.candidates);
    }
}

/// The engine's candidates for at most 100 per leg, shuffled and some returned twice:
/// what another retriever may hand the pipeline.
struct Shuffled<'a> {
    engine: &'a Engine,
    seed: u64,
    duplicates: usize,
}

impl Retriever for Shuffled<'_> {
    fn dimensions(&self, kind: Kind) -> Option<usize> {
        self.engine.dimensions(kind)
    }

    fn retrieve(&self, query: &RetrievalQuery<'_>) -> ruchedb::Result<Retrieved> {
        self.engine.retrieve(query)
    }

    fn fill(
        &self,
        query: &RetrievalQuery<'_>,
        candidates: &mut [RetrievedDoc],
    ) -> ruchedb::Result<()> {
        self.engine.fill(query, candidates)
    }

    fn candidates(&self, query: &RetrievalQuery<'_>) -> ruchedb::Result<Retrieved> {
        let capped = RetrievalQuery::new(query.request, query.vector, 100, query.now);
        let mut retrieved = self.engine.candidates(&capped)?;
        let shuffled = &mut retrieved.candidates;
        let mut state = self.seed | 1;
        for i in (1..shuffled.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            shuffled.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let again: Vec<_> = shuffled.iter().take(self.duplicates).cloned().collect();
        shuffled.extend(again);
        Ok(retrieved)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Ranking depends on the candidates, not on the order a retriever returns them in.
    #[test]
    fn rank_ignores_the_order_of_candidates(
        seed in any::<u64>(),
        text in prop::sample::select(vec!["refund", "order NW-15003", "euros note", "lost card", ""]),
        top_k in prop::option::of(1usize..20),
    ) {
        thread_local!(static ENGINE: Engine = engine());
        ENGINE.with(|engine| {
            let mut request = SearchRequest::chunks(text).with_now(Timestamp::now());
            if let Some(k) = top_k {
                request = request.with_top_k(k);
            }
            let ranked = |seed| {
                let retriever = Shuffled { engine, seed, duplicates: 0 };
                search_with(&retriever, &Config::default(), &request, None, None).unwrap()
            };
            prop_assert_eq!(summary(&ranked(seed).hits), summary(&ranked(0).hits));
            Ok(())
        })?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// The best `k` are the first `k` of the whole order (ranking orders only what the
    /// top `k` needs when the candidates' ids are distinct), ties included: browsing
    /// scores many candidates alike, and their order falls to priority and id.
    #[test]
    fn the_best_k_are_the_first_k_of_the_whole_order(
        text in prop::sample::select(vec!["refund", "order NW-15003", "euros note", ""]),
        k in 1usize..45,
        duplicates in 0usize..3,
    ) {
        thread_local!(static ENGINE: Engine = engine());
        ENGINE.with(|engine| {
            let now = Timestamp::now();
            let ranked = |k: usize| {
                let request = SearchRequest::chunks(text).with_now(now).with_top_k(k);
                // Candidates a retriever returned twice take the path that sorts all.
                let retriever = Shuffled { engine, seed: 0, duplicates };
                search_with(&retriever, &Config::default(), &request, None, None).unwrap()
            };
            let all = ranked(1_000);
            let best = ranked(k);
            let expected: Vec<_> = summary(&all.hits).into_iter().take(k).collect();
            prop_assert_eq!(summary(&best.hits), expected);
            prop_assert_eq!(best.selection.input_count, all.selection.input_count);
            prop_assert_eq!(
                best.selection.cutoff_score,
                best.hits.last().map_or(0.0, |h| h.score)
            );
            Ok(())
        })?;
    }
}
