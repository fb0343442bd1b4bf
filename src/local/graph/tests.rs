use super::*;
use crate::model::doc::{Chunk, Rule};

#[test]
fn a_document_mentions_its_codes_context_entities_and_relation_targets() {
    let chunk = Chunk::new("n1", "Order NW-15699 was placed by CUST-48213 for 2 tents.")
        .with_context("customer-48213")
        .with_entities(["  Alice   Smith "])
        .with_relation("follows_up", "n0");
    let entities = entities_of(&Document::Chunk(chunk));
    for expected in [
        "nw-15699",
        "cust-48213",
        "customer-48213",
        "alice smith",
        "n0",
    ] {
        assert!(
            entities.contains(&expected.to_string()),
            "{expected} in {entities:?}"
        );
    }
    // A related id as a node of its own (its own id is implicit); quantities and
    // plain words are no entities.
    assert!(entities.contains(&id_node("n0")) && !entities.contains(&id_node("n1")));
    assert!(
        !entities
            .iter()
            .any(|e| e == "2" || e == "tents" || e == "order")
    );

    let rule = Rule::new("r", "the customer quotes ticket SUP-20931", "escalate")
        .with_patterns(["about INC-77812"]);
    let entities = entities_of(&Document::Rule(rule));
    assert!(
        entities.contains(&"sup-20931".to_string()) && entities.contains(&"inc-77812".to_string())
    );
}

proptest::proptest! {
    /// Reading only the words with two digits finds the codes a reading of the
    /// whole text finds.
    #[test]
    fn codes_come_from_the_words_with_digits(
        words in proptest::collection::vec(
            proptest::string::string_regex(
                "[A-Za-z]{0,4}[-_/.#]?[0-9]{0,6}[A-Za-z]{0,2}[,.;:)!?]?|\\(?[a-z]{1,8}|é[0-9]{2}x"
            ).unwrap(),
            0..20,
        ),
        separators in proptest::collection::vec(
            proptest::sample::select(vec![" ", "  ", "\n", "\t", "\u{a0}", "\u{2003}"]),
            20,
        ),
    ) {
        let mut text = String::new();
        for (word, sep) in words.iter().zip(&separators) {
            text.push_str(word);
            text.push_str(sep);
        }
        let mut whole: Vec<String> = analyzer::tokens(Analysis::Ident, &text)
            .into_iter()
            .filter(|token| analyzer::is_code(token))
            .collect();
        whole.sort();
        whole.dedup();
        proptest::prop_assert_eq!(entities_of(&Document::Chunk(Chunk::new("x", text))), whole);
    }
}

#[test]
fn a_query_names_only_entities_the_graph_knows() {
    let mut graph = EntityGraph::default();
    let docs = [
        Chunk::new("a", "Order NW-15699 was placed by CUST-48213.").with_entities(["Alice Smith"]),
        Chunk::new("refund", "refund notes"),
    ];
    for (i, chunk) in docs.into_iter().enumerate() {
        let doc = Document::Chunk(chunk);
        let entities = entities_of(&doc);
        graph.insert(DocId::new(i as u64), doc.kind(), doc.tenant_id(), entities);
    }
    let found = graph.query_entities(
        Kind::Chunk,
        "default",
        "Did alice smith pay for nw-15699 or NW-99999?",
    );
    assert_eq!(found, ["nw-15699", "alice smith"]);
    // A document id is never a query entity, nor is another kind's or tenant's entity.
    assert!(
        graph
            .query_entities(Kind::Chunk, "default", "refund")
            .is_empty()
    );
    assert!(
        graph
            .query_entities(Kind::Rule, "default", "NW-15699")
            .is_empty()
    );
    assert!(
        graph
            .query_entities(Kind::Chunk, "other", "NW-15699")
            .is_empty()
    );
    // Removing the document removes its entities.
    graph.remove(DocId::new(0), Kind::Chunk, "default");
    assert!(
        graph
            .query_entities(Kind::Chunk, "default", "NW-15699")
            .is_empty()
    );
    // The other document mentions nothing but its own id, which the graph keeps
    // no node of while nothing relates to it.
    assert_eq!(graph.size(), (0, 0));
}

/// Own id nodes left implicit change nothing: a graph of lists that name each
/// document's own id node (as lists were stored before) and a graph of lists that
/// leave it out find the same documents, with the same scores and paths, through
/// relations to ids, self-relations, shared entities and removals.
#[test]
fn implicit_own_id_nodes_search_as_explicit_ones() {
    use std::collections::BTreeMap;
    let mut random = crate::testing::Xorshift(0x9e37_79b9_7f4a_7c15);
    let mut next = move |n: u64| random.next() % n;
    for round in 0..200 {
        let (mut explicit, mut implicit) = (EntityGraph::default(), EntityGraph::default());
        let mut live: BTreeMap<u64, String> = BTreeMap::new();
        let n_docs = 2 + next(40);
        for step in 0..n_docs + next(20) {
            let doc = next(n_docs);
            let id = format!("d{doc}");
            if live.contains_key(&doc) && next(4) == 0 {
                explicit.remove(DocId::new(doc), Kind::Chunk, "default");
                implicit.remove(DocId::new(doc), Kind::Chunk, "default");
                live.remove(&doc);
                continue;
            }
            let mut chunk = Chunk::new(id.clone(), format!("note {step}"));
            if next(2) == 0 {
                chunk = chunk.with_entities([format!("E{}", next(6))]);
            }
            for _ in 0..next(3) {
                // Ids of live, removed and never-written documents, and its own.
                chunk = chunk.with_relation("rel", format!("d{}", next(n_docs + 3)));
            }
            let document = Document::Chunk(chunk);
            let list = entities_of(&document);
            let mut with_own = list.clone();
            with_own.push(id_node(&id));
            with_own.sort();
            with_own.dedup();
            for graph in [&mut explicit, &mut implicit] {
                graph.remove(DocId::new(doc), Kind::Chunk, "default");
            }
            explicit.insert(DocId::new(doc), Kind::Chunk, "default", with_own);
            implicit.insert(DocId::new(doc), Kind::Chunk, "default", list);
            live.insert(doc, id);
        }
        let ids: BTreeMap<String, u64> = live.iter().map(|(doc, id)| (id.clone(), *doc)).collect();
        let owner = |id: &str| ids.get(id).map(|&doc| DocId::new(doc));
        let refused = next(n_docs + 1);
        let admit = |doc: DocId| {
            (doc.as_u64() != refused)
                .then(|| live.get(&doc.as_u64()).map(String::as_str))
                .flatten()
        };
        let scope = ScopeDocs {
            docs: live.len(),
            owner: &owner,
            admit: &admit,
        };
        for query in 0..6 {
            let entities = vec![format!("e{query}"), format!("d{}", next(n_docs))];
            for config in [
                GraphConfig::default(),
                GraphConfig {
                    max_fanout: 3,
                    ..GraphConfig::default()
                },
            ] {
                let search = |graph: &EntityGraph| {
                    graph
                        .search(Kind::Chunk, "default", &entities, &config, 20, &scope)
                        .into_iter()
                        .map(|hit| (hit.doc, hit.score.to_bits(), hit.path))
                        .collect::<Vec<_>>()
                };
                assert_eq!(search(&explicit), search(&implicit), "round {round}");
            }
        }
    }
}

/// Model-based: through inserts and removals (numbers freed and given again), each
/// entity's documents and each document's entities are a naive model's.
#[test]
fn a_scope_keeps_each_entitys_documents_through_inserts_and_removals() {
    use std::collections::{BTreeMap, BTreeSet};
    let mut scope = ScopeGraph::default();
    let mut model: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let mut random = crate::testing::Xorshift(0x2545_f491_4f6c_dd1d);
    let mut next = move || random.next();
    let vocabulary: Vec<String> = (0..40).map(|i| format!("entity {i}")).collect();
    for step in 0..5_000u64 {
        let doc = next() % 300;
        if next() % 3 == 0 || model.contains_key(&doc) {
            scope.remove(DocId::new(doc));
            model.remove(&doc);
        } else {
            let mut list: Vec<String> = (0..next() % 4)
                .map(|_| vocabulary[(next() % 40) as usize].clone())
                .collect();
            list.push(format!("\u{0}own-{doc}-{step}"));
            list.sort();
            list.dedup();
            scope.insert(DocId::new(doc), list.clone());
            model.insert(doc, list);
        }
        if step % 250 == 0 || step == 4_999 {
            let mut expected: BTreeMap<&str, BTreeSet<u64>> = BTreeMap::new();
            for (doc, list) in &model {
                for entity in list {
                    expected.entry(entity).or_default().insert(*doc);
                }
            }
            assert_eq!(scope.index.len(), expected.len(), "step {step}");
            for (entity, docs) in &expected {
                let found: BTreeSet<u64> = scope
                    .docs_of(entity)
                    .unwrap()
                    .iter()
                    .map(|d| d.as_u64())
                    .collect();
                assert_eq!(&found, docs, "{entity}");
            }
            for (doc, list) in &model {
                let names: Vec<&str> = scope.entities_of[&DocId::new(*doc)]
                    .iter()
                    .map(|&n| &*scope.names[n as usize])
                    .collect();
                assert_eq!(names, *list);
            }
            assert!(scope.docs_of("entity 999").is_none());
        }
    }
    // Some 3,000 entities came and went: their numbers were given again.
    assert!(scope.names.len() < 1_000, "{}", scope.names.len());
}

#[test]
fn bridges_weigh_by_rarity_and_crowded_ones_are_cut() {
    let mut graph = EntityGraph::default();
    let mut docs = vec![
        Chunk::new("order", "Order NW-15699 by CUST-41 in region EU-0001."),
        Chunk::new("pref", "CUST-41 prefers email."),
    ];
    // 60 documents mention the region: more than max_fanout.
    docs.extend((0..60).map(|i| Chunk::new(format!("r{i}"), "Shipping to EU-0001 is slow.")));
    for (i, chunk) in docs.into_iter().enumerate() {
        let doc = Document::Chunk(chunk);
        let entities = entities_of(&doc);
        graph.insert(DocId::new(i as u64), doc.kind(), doc.tenant_id(), entities);
    }
    let config = GraphConfig::default();
    let scope = ScopeDocs {
        docs: 62,
        owner: &|_| None,
        admit: &|_| Some("doc"),
    };
    let hits = graph.search(
        Kind::Chunk,
        "default",
        &["nw-15699".into()],
        &config,
        10,
        &scope,
    );
    let ids: Vec<u64> = hits.iter().map(|h| h.doc.as_u64()).collect();
    assert_eq!(ids, [0, 1], "the crowded region is no bridge");
    assert!(hits[1].score < hits[0].score * config.decay + 1e-9);
    let one_hop = GraphConfig { hops: 1, ..config };
    assert_eq!(
        graph
            .search(
                Kind::Chunk,
                "default",
                &["nw-15699".into()],
                &one_hop,
                10,
                &scope,
            )
            .len(),
        1
    );
    // What the filter refuses is neither a hit nor a bridge.
    assert!(
        graph
            .search(
                Kind::Chunk,
                "default",
                &["nw-15699".into()],
                &config,
                10,
                &ScopeDocs {
                    admit: &|d| (d.as_u64() != 0).then_some("doc"),
                    ..scope
                }
            )
            .is_empty()
    );
}
