use super::*;
use crate::local::store::normalised_rows;
use crate::model::doc::{Document, Scope};
use crate::model::metric::inverse_norm;
use crate::model::time::Timestamp;
use crate::{Chunk, Rule};

fn filter<'a>(kind: Kind) -> DocFilter<'a> {
    DocFilter {
        kind,
        tenant: "default",
        agent: None,
        scenario: None,
        step: None,
        context: None,
        tags: &[],
        metadata: &[],
        files: &[],
        now: Timestamp::from_unix_millis(0),
    }
}

/// Model-based: the arena follows inserts, removals, re-inserts of a version and its
/// compactions; every live document's vectors are the ones it was inserted with.
#[test]
fn arena_keeps_each_live_documents_vectors_through_compactions() {
    let mut catalog = Catalog::default();
    let mut model: BTreeMap<u64, Vec<f32>> = BTreeMap::new();
    let mut random = crate::testing::Xorshift(0x9e37_79b9_7f4a_7c15);
    let mut next = move || random.next();
    // An open's arena first: filled in one piece, with a spare row after each
    // document (a zero vector's) that no span covers. Rows are kept as stored (not
    // normalised), with their inverse norms.
    let inverses = |rows: &[f32]| -> Vec<f32> {
        rows.chunks_exact(4)
            .map(|row| inverse_norm(row).unwrap())
            .collect()
    };
    let (mut data, mut inverse) = (Vec::new(), Vec::new());
    for doc in 0..500u64 {
        let rows: Vec<f32> = (0..8).map(|_| 1.0 + (next() % 1_000) as f32).collect();
        data.extend_from_slice(&rows);
        data.extend_from_slice(&[0.0; 4]);
        inverse.extend(inverses(&rows));
        inverse.push(0.0);
        model.insert(doc, rows);
    }
    let indices = (0..500).flat_map(|_| [0, 1, 0]).collect();
    catalog.adopt_arena(Kind::Chunk, 4, data, inverse, indices);
    for doc in 0..500u64 {
        let chunk = Document::Chunk(crate::Chunk::new(format!("c{doc}"), "x"));
        let placed = Placed {
            start: doc as u32 * 3,
            rows: 2,
        };
        catalog.insert_placed(DocId::new(doc), Entry::new(chunk, doc), Some(placed));
    }
    let mut compactions = 0;
    // The 8-bit copy made now, then kept up to date through the sequence.
    let _ = catalog.scan_view(Kind::Chunk).1;
    for step in 500..20_000u64 {
        let doc = next() % 3_000;
        let before = catalog.arenas[Kind::Chunk.index()].spans.len();
        if next() % 3 == 0 {
            assert_eq!(
                catalog.remove(DocId::new(doc)).is_some(),
                model.remove(&doc).is_some()
            );
        } else {
            let rows = 1 + (next() % 3) as usize;
            let data: Vec<f32> = (0..rows * 4)
                .map(|_| 1.0 + (next() % 1_000) as f32)
                .collect();
            let chunk = Document::Chunk(crate::Chunk::new(format!("c{doc}"), "x"));
            let vectors = DocRows {
                inverse: inverses(&data),
                data: data.clone(),
                rows: (0..rows as u16).collect(),
            };
            catalog.insert(
                DocId::new(doc),
                Entry::new(chunk, step),
                Some(vectors),
                Vec::new(),
            );
            model.insert(doc, data);
        }
        if catalog.arenas[Kind::Chunk.index()].spans.len() < before {
            compactions += 1;
        }
    }
    assert!(compactions > 0, "the sequence compacted the arena");
    let rows: usize = model.values().map(|v| v.len() / 4).sum();
    assert_eq!(catalog.n_vectors(Kind::Chunk), rows);
    for (doc, data) in &model {
        let got = catalog.vectors(DocId::new(*doc)).expect("live");
        assert_eq!(got.data, data.as_slice());
        assert_eq!(got.inverse, inverses(data).as_slice());
    }
    let (arena, quantized, spans) = catalog.scan_view(Kind::Chunk);
    let dim = arena.dim;
    let mut blocks = BTreeMap::new();
    for (doc, start, rows) in spans {
        let (block, inverse) = arena.rows(start, rows);
        // The 8-bit copy moved with the rows: each row's bounds hold its own cosine.
        let normalised = normalised_rows(block, inverse, dim);
        for (i, row) in normalised.chunks_exact(dim).enumerate() {
            let query = metric::QuantizedQuery::new(row);
            let (low, high) = quantized.bounds(&query, start + i, dim);
            let own = metric::dot(row, &block[i * dim..(i + 1) * dim]) * inverse[i];
            assert!(low <= own && own <= high, "{low} {own} {high}");
        }
        blocks.insert(doc.as_u64(), block.to_vec());
    }
    assert_eq!(blocks, model);
}

#[test]
fn scope_rules() {
    let global = Document::Rule(Rule::new("g", "c", "a"));
    let scenario = Document::Rule(Rule::new("s", "c", "a").with_scope(Scope::scenario("s1")));
    let step = Document::Rule(Rule::new("t", "c", "a").with_scope(Scope::step("s1", "t1")));
    let mut f = filter(Kind::Rule);
    assert!(f.matches(&global) && !f.matches(&scenario) && !f.matches(&step));
    f.scenario = Some("s1");
    assert!(f.matches(&global) && f.matches(&scenario) && !f.matches(&step));
    f.step = Some("t1");
    assert!(f.matches(&global) && f.matches(&scenario) && f.matches(&step));
    f.scenario = Some("s2");
    assert!(f.matches(&global) && !f.matches(&scenario) && !f.matches(&step));
}

#[test]
fn agents_tenants_enabled_tags() {
    let any_agent = Document::Rule(Rule::new("a", "c", "a"));
    let bot = Document::Rule(
        Rule::new("b", "c", "a")
            .with_agent("bot")
            .with_tags(["vip"]),
    );
    let disabled = Document::Rule(Rule::new("d", "c", "a").with_enabled(false));
    let other_tenant = Document::Rule(Rule::new("o", "c", "a").with_tenant("acme"));
    let mut f = filter(Kind::Rule);
    assert!(f.matches(&any_agent) && f.matches(&bot));
    assert!(!f.matches(&disabled) && !f.matches(&other_tenant));
    f.agent = Some("other");
    assert!(f.matches(&any_agent) && !f.matches(&bot));
    f.agent = Some("bot");
    assert!(f.matches(&bot));
    let tags = ["vip".to_string()];
    f.tags = &tags;
    assert!(f.matches(&bot) && !f.matches(&any_agent));
}

#[test]
fn chunk_filters() {
    let chunk = Document::Chunk(
        Chunk::new("c", "x")
            .with_context("u1")
            .with_metadata("source", "chat")
            .with_metadata("turn", 3)
            .with_expires_at(Timestamp::from_unix_millis(1_000)),
    );
    let mut f = filter(Kind::Chunk);
    assert!(f.matches(&chunk));
    f.context = Some("u2");
    assert!(!f.matches(&chunk));
    f.context = Some("u1");
    let meta = [
        ("source".to_string(), "chat".to_string()),
        ("turn".to_string(), "3".to_string()),
    ];
    f.metadata = &meta;
    assert!(f.matches(&chunk));
    let wrong = [("source".to_string(), "mail".to_string())];
    f.metadata = &wrong;
    assert!(!f.matches(&chunk));
    f.metadata = &[];
    f.now = Timestamp::from_unix_millis(1_000);
    assert!(!f.matches(&chunk), "expired chunks never match");
    assert!(!filter(Kind::Rule).matches(&chunk));
}
