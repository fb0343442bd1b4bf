//! Embedders through the engine: the bundled default, recorded at creation and reloaded;
//! mismatches; records with their own vectors; the embedding cache; re-embedding.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ruchedb::{
    Chunk, Config, DEFAULT_TENANT, Embedder, EmbedderSpec, EmbedderSpecs, Engine, ErrorKind, Kind,
    MiniLmEmbedder, Rule, SearchRequest, SearchResponse, StaticEmbedder, TurnRequest,
};

use crate::common::ids;

const MODEL_ID: &str = StaticEmbedder::BUNDLED_MODEL_ID;

/// The bundled model, counting the texts it embeds.
struct Counting {
    inner: StaticEmbedder,
    texts: AtomicUsize,
}

impl Counting {
    fn new() -> Arc<Counting> {
        Arc::new(Counting {
            inner: StaticEmbedder::bundled().unwrap(),
            texts: AtomicUsize::new(0),
        })
    }

    fn texts(&self) -> usize {
        self.texts.load(Ordering::SeqCst)
    }
}

impl Embedder for Counting {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }

    fn embed_batch(&self, texts: &[&str]) -> ruchedb::Result<Vec<Vec<f32>>> {
        self.texts.fetch_add(texts.len(), Ordering::SeqCst);
        self.inner.embed_batch(texts)
    }
}

/// Another model: a fixed unit vector for every text.
struct Toy {
    model_id: &'static str,
    dimensions: usize,
}

impl Embedder for Toy {
    fn model_id(&self) -> &str {
        self.model_id
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn embed_batch(&self, texts: &[&str]) -> ruchedb::Result<Vec<Vec<f32>>> {
        let mut unit = vec![0.0; self.dimensions];
        unit[0] = 1.0;
        Ok(vec![unit; texts.len()])
    }
}

/// Support rules whose conditions and actions share no word with the queries of
/// [`semantic_neighbours_rank_above_unrelated_text`].
fn rules() -> Vec<Rule> {
    vec![
        Rule::new(
            "refund",
            "customer asks for a refund",
            "explain the refund policy",
        ),
        Rule::new(
            "delivery",
            "the parcel has not arrived yet",
            "track the shipment",
        ),
        Rule::new(
            "password",
            "customer cannot log in to the account",
            "send a password reset link",
        ),
        Rule::new("greet", "the conversation starts", "greet the customer"),
    ]
}

fn chunks() -> Vec<Chunk> {
    vec![
        Chunk::new("dog", "the user's dog is called Rex"),
        Chunk::new("city", "the user lives in Lyon, France"),
        Chunk::new("email", "prefers to be contacted by email"),
        Chunk::new("tea", "drinks green tea every morning"),
    ]
}

fn create_default(dir: &Path) -> Engine {
    let engine = Engine::builder()
        .with_embedder_spec(EmbedderSpec::StaticBundled)
        .create(dir)
        .unwrap();
    engine.upsert_rules(rules()).unwrap();
    engine.upsert_chunks(chunks()).unwrap();
    engine.commit().unwrap();
    engine
}

/// A search with the relevance gate off: these tests are about what each leg finds
/// (`relevance.rs` tests the gate).
fn search(engine: &Engine, request: SearchRequest) -> SearchResponse {
    engine
        .search(&request.with_top_k(10).with_min_relevance(0.0))
        .unwrap()
}

#[track_caller]
fn assert_finite(response: &SearchResponse) {
    for hit in &response.hits {
        let b = &hit.breakdown;
        let values = [
            hit.score,
            b.bm25,
            b.bm25_normalized,
            b.vector_normalized,
            b.hybrid,
        ]
        .into_iter()
        .chain(b.vector)
        .chain(b.relevance)
        .chain(b.importance)
        .chain(b.recency);
        for value in values {
            assert!(value.is_finite(), "{hit:?}");
        }
    }
    let fusion = &response.fusion;
    assert!(fusion.vector_weight.is_finite() && fusion.text_weight.is_finite());
}

#[test]
fn semantic_neighbours_rank_above_unrelated_text() {
    let engine = Engine::builder()
        .with_embedder_spec(EmbedderSpec::StaticBundled)
        .temporary()
        .unwrap();
    engine.upsert_rules(rules()).unwrap();
    engine.upsert_chunks(chunks()).unwrap();
    engine.commit().unwrap();
    for (query, expected) in [
        ("my delivery is late", "delivery"),
        ("forgot my credentials", "password"),
        ("hello there", "greet"),
    ] {
        let response = search(&engine, SearchRequest::rules(query));
        assert_eq!(response.leg_candidates[0], 0, "{query}: no shared word");
        assert_eq!(
            response.hits[0].id,
            expected,
            "{query}: {:?}",
            ids(&response.hits)
        );
        assert!(response.hits[0].breakdown.found_by.vector);
    }
    for (query, expected) in [
        ("what is their pet", "dog"),
        ("beverage", "tea"),
        ("city", "city"),
    ] {
        let response = search(&engine, SearchRequest::chunks(query));
        assert_eq!(response.leg_candidates[0], 0, "{query}: no shared word");
        assert_eq!(
            response.hits[0].id,
            expected,
            "{query}: {:?}",
            ids(&response.hits)
        );
    }
}

#[test]
fn the_default_embedder_is_recorded_and_reloaded() {
    let dir = tempfile::tempdir().unwrap();
    let engine = create_default(dir.path());
    let stats = engine.stats();
    assert_eq!(stats.model_id.as_deref(), Some(MODEL_ID));
    assert_eq!(stats.dimensions, Some(256));
    assert_eq!(stats.embedder.as_deref(), Some("static"));
    assert_eq!(stats.rule_graph.live_vectors, 4);
    assert_eq!(stats.chunk_graph.live_vectors, 4);
    drop(engine);

    // Opening without naming an embedder loads the recorded one.
    let engine = Engine::builder().open(dir.path()).unwrap();
    assert_eq!(engine.embedder(Kind::Rule).unwrap().model_id(), MODEL_ID);
    let response = search(&engine, SearchRequest::rules("my delivery is late"));
    assert_eq!(response.vector_leg_skipped, None);
    assert_eq!(response.hits[0].id, "delivery");
    // Records without vectors are embedded too.
    engine
        .upsert_rules([Rule::new("cancel", "end the subscription", "cancel it")])
        .unwrap();
    engine.commit().unwrap();
    assert_eq!(engine.stats().rule_graph.live_vectors, 5);
}

#[test]
fn another_embedder_cannot_open_the_index() {
    let dir = tempfile::tempdir().unwrap();
    drop(create_default(dir.path()));
    let open = |model_id: &'static str, dimensions: usize| {
        Engine::builder()
            .with_embedder(Arc::new(Toy {
                model_id,
                dimensions,
            }))
            .open(dir.path())
            .unwrap_err()
    };
    let err = open("toy", 8);
    assert_eq!(
        err.kind(),
        &ErrorKind::DimensionMismatch {
            expected: 256,
            got: 8
        }
    );
    let err = open("toy", 256);
    assert!(
        matches!(err.kind(), ErrorKind::InvalidInput { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("toy"), "{err}");
    // The same model under a wrapper is accepted.
    let engine = Engine::builder()
        .with_embedder(Counting::new())
        .open(dir.path());
    assert!(engine.is_ok());
}

#[test]
fn vectors_of_another_dimension_are_rejected() {
    let engine = Engine::builder()
        .with_embedder_spec(EmbedderSpec::StaticBundled)
        .temporary()
        .unwrap();
    let mismatch = ErrorKind::DimensionMismatch {
        expected: 256,
        got: 8,
    };
    let err = engine
        .upsert_rules([Rule::new("r", "a condition", "an action").with_embedding(vec![0.5; 8])])
        .unwrap_err();
    assert_eq!(err.kind(), &mismatch);
    let err = engine
        .upsert_chunks([Chunk::new("c", "some content").with_embedding(vec![0.5; 8])])
        .unwrap_err();
    assert_eq!(err.kind(), &mismatch);
    let err = engine
        .search(&SearchRequest::rules("refund").with_embedding(vec![0.5; 8]))
        .unwrap_err();
    assert_eq!(err.kind(), &mismatch);
    // A vector of the right dimension bypasses the embedder.
    engine
        .upsert_chunks([Chunk::new("c", "some content").with_embedding(vec![0.5; 256])])
        .unwrap();
    assert_eq!(engine.commit().unwrap(), 1);
    // Nothing of the failed calls was buffered.
    assert_eq!(engine.stats().rules, 0);
}

/// With no configuration, a new index embeds rules, scenarios and tools with the
/// compiled-in all-MiniLM-L6-v2 and chunks with the static model, records it, and loads
/// them again at the next open.
#[test]
fn the_builder_defaults_to_the_compiled_in_models() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::builder().create(dir.path()).unwrap();
    engine.upsert_rules(rules()).unwrap();
    engine.upsert_chunks(chunks()).unwrap();
    engine.commit().unwrap();
    let stats = engine.stats();
    assert_eq!(stats.dimensions, None, "two vector spaces");
    for (kind, model, dimensions) in [
        (Kind::Rule, MiniLmEmbedder::MODEL_ID, 384),
        (Kind::Scenario, MiniLmEmbedder::MODEL_ID, 384),
        (Kind::Tool, MiniLmEmbedder::MODEL_ID, 384),
        (Kind::Chunk, MODEL_ID, 256),
    ] {
        let space = stats.spaces.get(kind);
        assert_eq!(space.model_id.as_deref(), Some(model), "{kind}");
        assert_eq!(space.dimensions, Some(dimensions), "{kind}");
    }
    assert_eq!(
        stats.embedder.as_deref(),
        Some("rules=minilm,chunks=static,scenarios=minilm,tools=minilm")
    );
    assert_eq!(stats.rule_graph.live_vectors, 4);
    assert_eq!(stats.chunk_graph.live_vectors, 4);
    let response = search(&engine, SearchRequest::rules("my delivery is late"));
    assert_eq!(response.vector_leg_skipped, None);
    assert_eq!(response.hits[0].id, "delivery");
    let memory = search(&engine, SearchRequest::chunks("where does the user live"));
    assert_eq!(memory.vector_leg_skipped, None);
    drop(engine);

    let engine = Engine::builder().open(dir.path()).unwrap();
    assert_eq!(
        engine.embedder(Kind::Rule).unwrap().model_id(),
        MiniLmEmbedder::MODEL_ID
    );
    assert_eq!(engine.embedder(Kind::Chunk).unwrap().model_id(), MODEL_ID);
    let reader = Engine::builder().open_read_only(dir.path()).unwrap();
    assert_eq!(
        reader.embedder(Kind::Tool).unwrap().model_id(),
        MiniLmEmbedder::MODEL_ID
    );
    assert_eq!(reader.stats().spaces, engine.stats().spaces);
    drop(reader);
    // An explicit `none` makes a BM25-only index.
    let engine = Engine::builder()
        .with_embedder_spec(EmbedderSpec::None)
        .temporary()
        .unwrap();
    engine.upsert_rules(rules()).unwrap();
    engine.commit().unwrap();
    assert_eq!(engine.stats().dimensions, None);
    assert_eq!(engine.stats().embedder.as_deref(), Some("none"));
    let response = search(&engine, SearchRequest::rules("my delivery is late"));
    assert!(response.vector_leg_skipped.is_some());
}

#[test]
fn records_with_their_own_vectors_make_an_external_index() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::builder().create(dir.path()).unwrap();
    assert_eq!(engine.stats().model_id, None);
    engine
        .upsert_rules([
            Rule::new("refund", "customer asks for a refund", "explain the policy")
                .with_embedding(vec![1.0, 0.0, 0.0, 0.0]),
            Rule::new("greet", "the conversation starts", "greet the customer")
                .with_embedding(vec![0.0, 1.0, 0.0, 0.0]),
        ])
        .unwrap();
    engine.commit().unwrap();
    let stats = engine.stats();
    assert_eq!(stats.model_id.as_deref(), Some("external"));
    assert_eq!(stats.dimensions, Some(4));
    assert_eq!(stats.embedder.as_deref(), Some("none"));
    // Other dimensions are rejected, in one call or across calls.
    let err = engine
        .upsert_rules([Rule::new("x", "c", "a").with_embedding(vec![1.0; 3])])
        .unwrap_err();
    assert_eq!(
        err.kind(),
        &ErrorKind::DimensionMismatch {
            expected: 4,
            got: 3
        }
    );
    drop(engine);

    let engine = Engine::builder().open(dir.path()).unwrap();
    assert!(engine.embedders().is_empty());
    // No query vector: the text leg alone, and the response says why.
    let response = search(&engine, SearchRequest::rules("refund"));
    assert!(response.vector_leg_skipped.is_some());
    assert_eq!(response.leg_candidates[1], 0);
    assert_eq!(
        (response.fusion.vector_weight, response.fusion.text_weight),
        (0.0, 1.0)
    );
    assert_eq!(ids(&response.hits), ["refund"]);
    assert!(!response.hits[0].breakdown.found_by.vector);
    // A query vector runs the vector leg.
    let response = search(
        &engine,
        SearchRequest::rules("").with_embedding(vec![0.0, 1.0, 0.0, 0.0]),
    );
    assert_eq!(response.vector_leg_skipped, None);
    assert_eq!(response.hits[0].id, "greet");
    assert!(response.hits[0].breakdown.found_by.vector);
}

#[test]
fn the_embedding_cache_avoids_re_embedding() {
    // An embedder is cached unless it says it is faster than the cache (the bundled
    // static model does): the counting wrapper keeps the default, so it is cached.
    let dir = tempfile::tempdir().unwrap();
    let counting = Counting::new();
    let engine = Engine::builder()
        .with_embedder(counting.clone())
        .create(dir.path())
        .unwrap();
    engine.upsert_chunks(chunks()).unwrap();
    engine.commit().unwrap();
    assert_eq!(counting.texts(), 4);
    let counters = engine.stats().counters;
    assert_eq!(
        (counters.embedded_texts, counters.embedding_cache_hits),
        (4, 0)
    );
    // The same texts again, in a later commit: all from the cache.
    engine.upsert_chunks(chunks()).unwrap();
    engine.commit().unwrap();
    assert_eq!(counting.texts(), 4);
    let counters = engine.stats().counters;
    assert_eq!(
        (counters.embedded_texts, counters.embedding_cache_hits),
        (4, 4)
    );
    drop(engine);

    // After reopening, the cache is still there: the embedder is never called for them.
    let counting = Counting::new();
    let engine = Engine::builder()
        .with_embedder(counting.clone())
        .open(dir.path())
        .unwrap();
    engine.upsert_chunks(chunks()).unwrap();
    engine.commit().unwrap();
    assert_eq!(counting.texts(), 0);
    let counters = engine.stats().counters;
    assert_eq!(
        (counters.embedded_texts, counters.embedding_cache_hits),
        (0, 4)
    );
    // A changed text is embedded, once.
    engine
        .upsert_chunks([Chunk::new("tea", "drinks black coffee every morning")])
        .unwrap();
    engine.commit().unwrap();
    assert_eq!(counting.texts(), 1);
    assert_eq!(engine.stats().counters.embedded_texts, 1);
    // Queries are embedded (and counted) too.
    search(&engine, SearchRequest::chunks("morning drink"));
    assert_eq!(counting.texts(), 2);
    assert_eq!(engine.stats().chunks, 4);
}

#[test]
fn texts_without_known_tokens_get_no_vector() {
    let embedder = StaticEmbedder::bundled().unwrap();
    assert_eq!(embedder.model_id(), MODEL_ID);
    assert_eq!(embedder.dimensions(), 256);
    let vectors = embedder.embed_batch(&["", "ꙮꙮꙮ", "refund"]).unwrap();
    assert!(vectors.iter().all(|v| v.len() == 256));
    assert!(vectors[0].iter().all(|x| *x == 0.0), "empty text");
    assert!(vectors[1].iter().all(|x| *x == 0.0), "unknown tokens");
    let norm: f32 = vectors[2].iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-4, "{norm}");

    let engine = Engine::builder()
        .with_embedder_spec(EmbedderSpec::StaticBundled)
        .temporary()
        .unwrap();
    engine
        .upsert_chunks([
            Chunk::new("empty", "ꙮꙮ"),
            Chunk::new("unknown", "ꙮꙮꙮ"),
            Chunk::new("refund", "asked for a refund of order 17"),
            Chunk::new("tea", "drinks green tea every morning"),
        ])
        .unwrap();
    engine.commit().unwrap();
    let stats = engine.stats();
    assert_eq!(stats.chunks, 4);
    assert_eq!(stats.chunk_graph.live_vectors, 2);

    // A query without a vector skips the vector leg, and says so.
    let response = search(&engine, SearchRequest::chunks("ꙮꙮꙮ"));
    assert!(response.vector_leg_skipped.is_some());
    assert_eq!(ids(&response.hits), ["unknown"]);
    assert_finite(&response);
    // Documents without a vector have no vector score, and nothing is NaN.
    let response = search(&engine, SearchRequest::chunks("refund ꙮꙮꙮ"));
    assert_eq!(response.vector_leg_skipped, None);
    assert_finite(&response);
    let unknown = response.hits.iter().find(|h| h.id == "unknown").unwrap();
    assert_eq!(unknown.breakdown.vector, None);
    let browse = search(&engine, SearchRequest::chunks("").browse());
    assert_eq!(browse.hits.len(), 4);
    assert!(search(&engine, SearchRequest::chunks("")).hits.is_empty());
    assert_finite(&browse);
}

#[test]
fn reembed_keeps_every_document_and_changes_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let engine = create_default(dir.path());
    // Feedback given before a reembed counts once after it (and after a compaction):
    // the ids, their marks and the key that signs them carry over.
    let given = search(&engine, SearchRequest::rules("refund")).query_id;
    let pending = search(&engine, SearchRequest::rules("refund")).query_id;
    let records = engine.feedback(&given, true).unwrap().len();
    drop(engine);
    let index = dir.path();

    let n = Engine::reembed(index, &EmbedderSpec::None, &Config::default()).unwrap();
    assert_eq!(n, 8);
    Engine::compact(index, &Config::default()).unwrap();
    let engine = Engine::builder().open(index).unwrap();
    assert_eq!(engine.feedback(&given, true).unwrap().len(), records);
    assert!(engine.feedback(&pending, true).unwrap().len() > records);
    let stats = engine.stats();
    assert_eq!((stats.rules, stats.chunks), (4, 4));
    assert_eq!(stats.model_id, None);
    assert_eq!(stats.rule_graph.live_vectors, 0);
    let response = search(&engine, SearchRequest::rules("refund"));
    assert!(response.vector_leg_skipped.is_some());
    assert_eq!(response.hits[0].id, "refund");
    drop(engine);

    let n = Engine::reembed(index, &EmbedderSpec::StaticBundled, &Config::default()).unwrap();
    assert_eq!(n, 8);
    let engine = Engine::builder().open(index).unwrap();
    let stats = engine.stats();
    assert_eq!((stats.rules, stats.chunks), (4, 4));
    assert_eq!(stats.model_id.as_deref(), Some(MODEL_ID));
    assert_eq!(stats.rule_graph.live_vectors, 4);
    for id in ["city", "dog", "email", "tea"] {
        let chunk = engine.get(Kind::Chunk, DEFAULT_TENANT, id).unwrap();
        assert!(chunk.is_some(), "{id}");
    }
    let response = search(&engine, SearchRequest::rules("my delivery is late"));
    assert_eq!(response.vector_leg_skipped, None);
    assert_eq!(response.hits[0].id, "delivery");
}

#[test]
fn reembed_replaces_external_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::builder().create(dir.path()).unwrap();
    engine
        .upsert_rules([
            Rule::new("refund", "customer asks for a refund", "explain the policy")
                .with_embedding(vec![1.0, 0.0, 0.0]),
        ])
        .unwrap();
    engine.commit().unwrap();
    assert_eq!(engine.stats().model_id.as_deref(), Some("external"));
    drop(engine);
    assert_eq!(
        Engine::reembed(dir.path(), &EmbedderSpec::StaticBundled, &Config::default()).unwrap(),
        1
    );
    let engine = Engine::builder().open(dir.path()).unwrap();
    let stats = engine.stats();
    assert_eq!(stats.model_id.as_deref(), Some(MODEL_ID));
    assert_eq!(stats.dimensions, Some(256));
    assert_eq!(stats.rules, 1);
}

/// Hits and scores of a search, to compare two indexes' answers.
fn answers(engine: &Engine, request: SearchRequest) -> Vec<(String, u64)> {
    search(engine, request.with_min_relevance(0.0).with_top_k(10))
        .hits
        .into_iter()
        .map(|hit| (hit.id, hit.score.to_bits()))
        .collect()
}

/// `reembed_kind` moves one kind to another model: that kind's vectors and space change,
/// every other kind keeps its embedder, its vectors and its answers, bit for bit.
#[test]
fn reembed_of_one_kind_changes_only_that_kind() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::builder().create(dir.path()).unwrap();
    engine.upsert_rules(rules()).unwrap();
    engine.upsert_chunks(chunks()).unwrap();
    engine.commit().unwrap();
    let rules_before = answers(&engine, SearchRequest::rules("my delivery is late"));
    let chunks_before = answers(&engine, SearchRequest::chunks("where does the user live"));
    drop(engine);

    let n = Engine::reembed_kind(
        dir.path(),
        Kind::Chunk,
        &EmbedderSpec::MiniLm,
        &Config::default(),
    )
    .unwrap();
    assert_eq!(n, 4);
    let engine = Engine::builder().open(dir.path()).unwrap();
    let stats = engine.stats();
    assert_eq!(stats.embedder.as_deref(), Some("minilm"));
    assert_eq!(stats.dimensions, Some(384), "one space again");
    assert_eq!((stats.rules, stats.chunks), (4, 4));
    assert_eq!(stats.chunk_graph.live_vectors, 4);
    assert_eq!(
        engine.embedder(Kind::Chunk).unwrap().model_id(),
        MiniLmEmbedder::MODEL_ID
    );
    assert_eq!(
        answers(&engine, SearchRequest::rules("my delivery is late")),
        rules_before
    );
    assert_ne!(
        answers(&engine, SearchRequest::chunks("where does the user live")),
        chunks_before
    );
    // The rules' vectors came from the embedding cache, not the model.
    assert_eq!(stats.counters.embedded_texts, 0);
    drop(engine);

    // And back: chunks on the static model again, rules untouched.
    Engine::reembed_kind(
        dir.path(),
        Kind::Chunk,
        &EmbedderSpec::StaticBundled,
        &Config::default(),
    )
    .unwrap();
    let engine = Engine::builder().open(dir.path()).unwrap();
    assert_eq!(
        answers(&engine, SearchRequest::chunks("where does the user live")),
        chunks_before
    );
    assert_eq!(
        answers(&engine, SearchRequest::rules("my delivery is late")),
        rules_before
    );
}

/// A turn embeds its message once with each distinct embedder, whatever the number of
/// kinds that use it: twice with the defaults (the transformer for scenarios, rules and
/// tools, the static model for memory), once with one embedder for every kind, never
/// with none.
#[test]
fn a_turn_embeds_its_message_once_per_embedder() {
    for (specs, expected) in [
        (EmbedderSpecs::default(), 2),
        (EmbedderSpecs::uniform(EmbedderSpec::MiniLm), 1),
        (EmbedderSpecs::uniform(EmbedderSpec::StaticBundled), 1),
        (EmbedderSpecs::uniform(EmbedderSpec::None), 0),
    ] {
        let engine = Engine::builder()
            .with_embedder_specs(specs.clone())
            .temporary()
            .unwrap();
        engine.upsert_rules(rules()).unwrap();
        engine.upsert_chunks(chunks()).unwrap();
        engine.commit().unwrap();
        let before = engine.stats().counters.embedded_texts;
        let turn = engine
            .turn(&TurnRequest::new("my delivery is late"))
            .unwrap();
        let embedded = engine.stats().counters.embedded_texts - before;
        assert_eq!(embedded, expected, "{specs}");
        if expected > 0 {
            assert!(turn.timings.embed_us > 0, "{specs}");
        }
        // A single search embeds once with its kind's embedder.
        let before = engine.stats().counters.embedded_texts;
        search(&engine, SearchRequest::rules("my delivery is late"));
        assert_eq!(
            engine.stats().counters.embedded_texts - before,
            u64::from(expected > 0),
            "{specs}"
        );
    }
}
