//! The seam: the local index as a `Retriever`, and the pure `rank` stage over it.

use proptest::prelude::*;
use ruchedb::{
    Chunk, Config, EmbedderFamily, Engine, RankPlan, RetrievalQuery, Retriever, Rule, Scope,
    SearchRequest, Timestamp, rank, search_with,
};

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
    let embedder = engine.embedder().unwrap();
    let family = EmbedderFamily::of(Some(embedder.model_id()));
    for request in [
        SearchRequest::rules("I want my money back"),
        SearchRequest::rules("refund please")
            .scenario("vip")
            .top_k(3),
        SearchRequest::rules("xyzzy plugh"),
        SearchRequest::chunks("order NW-15007"),
        SearchRequest::chunks("refund euros").top_k(10),
        SearchRequest::chunks("").top_k(5).now(Timestamp::now()),
    ] {
        let by_engine = engine.search(&request).unwrap();
        let vector = (!request.text().trim().is_empty()).then(|| {
            let mut v = embedder
                .embed_batch(&[ruchedb::text_to_embed(request.text()).as_ref()])
                .unwrap()
                .pop()
                .unwrap();
            // As the engine normalises a query vector.
            let norm = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
            v.iter_mut()
                .for_each(|x| *x = (f64::from(*x) / norm) as f32);
            v
        });
        let by_seam =
            search_with(&engine, &config, &request, vector.as_deref(), family, None).unwrap();
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

/// `fill` alone gives candidates the scores `retrieve` gave them under one snapshot.
#[test]
fn fill_gives_what_retrieve_gave() {
    let engine = engine();
    let request = SearchRequest::chunks("refund of 21 euros NW-15007");
    let query = RetrievalQuery::new(&request, None, 50, Timestamp::now());
    let complete = engine.candidates(&query).unwrap();
    assert!(complete.candidates.len() >= 10);
    let mut bare: Vec<_> = complete
        .candidates
        .iter()
        .map(|c| ruchedb::RetrievedDoc::new(c.document.clone()))
        .collect();
    engine.fill(&query, &mut bare).unwrap();
    for (a, b) in complete.candidates.iter().zip(&bare) {
        assert_eq!((a.id(), a.bm25, a.coverage), (b.id(), b.bm25, b.coverage));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// `rank` depends on the candidates, not on the order a retriever returns them in.
    #[test]
    fn rank_ignores_the_order_of_candidates(
        seed in any::<u64>(),
        text in prop::sample::select(vec!["refund", "order NW-15003", "euros note", "lost card", ""]),
        top_k in prop::option::of(1usize..20),
    ) {
        thread_local!(static ENGINE: Engine = engine());
        ENGINE.with(|engine| {
            let mut request = SearchRequest::chunks(text).now(Timestamp::now());
            if let Some(k) = top_k {
                request = request.top_k(k);
            }
            let query = RetrievalQuery::new(&request, None, 100, Timestamp::now());
            let retrieved = engine.candidates(&query).unwrap();
            let plan = RankPlan::new(&Config::default(), &request, retrieved.legs, EmbedderFamily::MiniLm, None).unwrap();
            let expected = summary(&rank(retrieved.candidates.clone(), &plan).unwrap().hits);
            let mut shuffled = retrieved.candidates;
            let mut state = seed | 1;
            for i in (1..shuffled.len()).rev() {
                state ^= state << 13; state ^= state >> 7; state ^= state << 17;
                shuffled.swap(i, (state % (i as u64 + 1)) as usize);
            }
            prop_assert_eq!(summary(&rank(shuffled, &plan).unwrap().hits), expected);
            Ok(())
        })?;
    }
}
