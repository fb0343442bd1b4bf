//! ruchedb's ranking over your own retriever.
//!
//! The documents live somewhere else (here: a `Vec` in memory, with a toy term-count
//! score for the text leg and exact cosines for the vector leg). Implementing
//! [`Retriever`] is all it takes to get ruchedb's fusion, relevance gate, priority and
//! scope weighting, tiebreak, k-selection and explain on them: [`search_with`] runs the
//! pipeline (with vectors the request carries, or an embedder of yours).
//!
//! Run with `cargo run --example custom_retriever`.

use std::sync::Arc;

use ruchedb::rank::search_with;
use ruchedb::retrieve::{
    RetrievalQuery, Retrieved, RetrievedDoc, Retriever, coverage, indexed_text,
};
use ruchedb::{Config, Document, Kind, PerLeg, Rule, Scope, SearchRequest};

/// Documents with their vectors, kept in memory.
struct InMemory {
    docs: Vec<(Arc<Document>, Vec<f32>)>,
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b)).max(f32::MIN_POSITIVE)
}

/// A toy text score: how many query words the document holds.
fn term_count(query: &str, text: &str) -> Option<f64> {
    let text = text.to_lowercase();
    let n = query
        .to_lowercase()
        .split_whitespace()
        .filter(|w| w.len() > 2 && text.contains(w))
        .count();
    (n > 0).then_some(n as f64)
}

impl InMemory {
    /// The documents of the query's kind and tenant (a real retriever applies every
    /// filter of the request here).
    fn admitted<'a>(
        &'a self,
        query: &'a RetrievalQuery<'_>,
    ) -> impl Iterator<Item = &'a (Arc<Document>, Vec<f32>)> {
        let request = query.request;
        self.docs.iter().filter(move |(d, _)| {
            d.kind() == request.kind() && d.tenant_id() == request.tenant_id()
        })
    }
}

impl Retriever for InMemory {
    fn dimensions(&self, _kind: Kind) -> Option<usize> {
        Some(3)
    }

    fn retrieve(&self, query: &RetrievalQuery<'_>) -> ruchedb::Result<Retrieved> {
        let text = query.request.text();
        // Each leg: its best `limit` documents.
        let mut by_text: Vec<(f64, &Arc<Document>)> = self
            .admitted(query)
            .filter_map(|(d, _)| Some((term_count(text, &indexed_text(d, true))?, d)))
            .collect();
        by_text.sort_by(|a, b| b.0.total_cmp(&a.0));
        by_text.truncate(query.limit);
        let mut by_vector: Vec<(f32, &Arc<Document>)> = match query.vector {
            Some(q) => self
                .admitted(query)
                .map(|(d, v)| (cosine(q, v), d))
                .collect(),
            None => Vec::new(),
        };
        by_vector.sort_by(|a, b| b.0.total_cmp(&a.0));
        by_vector.truncate(query.limit);

        let mut candidates: Vec<RetrievedDoc> = Vec::new();
        for (score, doc) in &by_text {
            let mut c = RetrievedDoc::new(Arc::clone(doc));
            c.bm25 = Some(*score);
            c.found_by.text = true;
            candidates.push(c);
        }
        for (cos, doc) in &by_vector {
            match candidates.iter_mut().find(|c| c.id() == doc.id()) {
                Some(c) => c.cosine = Some(*cos),
                None => {
                    let mut c = RetrievedDoc::new(Arc::clone(doc));
                    c.cosine = Some(*cos);
                    candidates.push(c);
                }
            }
            let c = candidates.iter_mut().find(|c| c.id() == doc.id()).unwrap();
            c.found_by.vector = true;
        }
        // The legs that ran: the text leg when there is text to match, the vector leg
        // when there is a query vector.
        let legs = PerLeg {
            text: !text.trim().is_empty(),
            vector: query.vector.is_some(),
            graph: false,
        };
        let counts = PerLeg {
            text: by_text.len(),
            vector: by_vector.len(),
            graph: 0,
        };
        Ok(Retrieved::new(candidates, legs, counts))
    }

    fn fill(
        &self,
        query: &RetrievalQuery<'_>,
        candidates: &mut [RetrievedDoc],
    ) -> ruchedb::Result<()> {
        let text = query.request.text();
        for c in candidates {
            let stored = self.docs.iter().find(|(d, _)| d.id() == c.id());
            let doc_text = indexed_text(&c.document, true);
            if c.bm25.is_none() {
                c.bm25 = term_count(text, &doc_text);
            }
            if let (None, Some(q), Some((_, v))) = (c.cosine, query.vector, stored) {
                c.cosine = Some(cosine(q, v));
            }
            // Without corpus statistics, every word weighs the same.
            c.coverage = coverage(text, &doc_text, &|_| 1.0);
        }
        Ok(())
    }
}

fn main() -> ruchedb::Result<()> {
    // Three rules with hand-made 3-d "embeddings" (a real setup uses a model's).
    let rule = |r: Rule, v: [f32; 3]| (Arc::new(Document::from(r)), v.to_vec());
    let store = InMemory {
        docs: vec![
            rule(
                Rule::new(
                    "refund",
                    "the customer asks for a refund",
                    "check the order, then refund",
                )
                .with_priority(10),
                [0.9, 0.1, 0.0],
            ),
            rule(
                Rule::new(
                    "vip-refund",
                    "a VIP customer asks for a refund",
                    "refund at once",
                )
                .with_priority(90)
                .with_scope(Scope::scenario("vip")),
                [0.8, 0.3, 0.0],
            ),
            rule(
                Rule::new(
                    "weather",
                    "the user asks about the weather",
                    "say we cannot tell",
                )
                .with_priority(100),
                [0.0, 0.1, 0.9],
            ),
        ],
    };
    let config = Config::default();

    // The whole pipeline over the custom retriever; the request carries its vector (no
    // embedder), which ruchedb takes to be on a sentence-transformers (MiniLM) scale.
    let request = SearchRequest::rules("customer wants a refund for the order")
        .with_embedding(vec![0.95, 0.2, 0.0]);
    let response = search_with(&store, &config, &request, None, None)?;
    println!("search_with: {} hit(s)", response.hits.len());
    for hit in &response.hits {
        let b = &hit.breakdown;
        println!(
            "  {:<10} score {:.3} (relevance {:.2}, hybrid {:.3}, priority term {:.3})",
            hit.id,
            hit.score,
            b.relevance.unwrap_or(0.0),
            b.hybrid,
            b.priority_term.unwrap_or(0.0)
        );
    }
    assert_eq!(response.hits[0].id, "refund");
    // The weather rule has the highest priority but is not about the query: the gate
    // drops it, priority never lifts it.
    assert!(response.hits.iter().all(|h| h.id != "weather"));

    // Nothing about the query: the answer is "nothing matches".
    let off_topic = SearchRequest::rules("xyzzy plugh").with_embedding(vec![0.0, -1.0, 0.0]);
    let none = search_with(&store, &config, &off_topic, None, None)?;
    println!(
        "off-topic: {} hit(s): {}",
        none.hits.len(),
        none.gate.abstention_reason().unwrap_or_default()
    );
    assert!(none.hits.is_empty());
    Ok(())
}
