//! Helpers shared by the integration tests.

use ruchedb::{Engine, Hit, Rule, Scope};

/// A deterministic pseudo-random generator for test data (splitmix64).
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    pub fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

/// `n` vectors of `dim` components in `n_clusters` clusters shaped like embeddings: each
/// cluster spreads along a few directions of its own (a low intrinsic dimension, as text
/// embeddings have) plus a little isotropic noise. (Isotropic noise alone, in every
/// dimension, is a known worst case for graph indexes that real embeddings are not.)
pub fn clustered_vectors(seed: u64, n: usize, dim: usize, n_clusters: usize) -> Vec<Vec<f32>> {
    const SPREAD_DIRECTIONS: usize = 4;
    let mut rng = SplitMix(seed);
    let random = |rng: &mut SplitMix| -> Vec<f32> { (0..dim).map(|_| rng.next_f32()).collect() };
    let clusters: Vec<(Vec<f32>, Vec<Vec<f32>>)> = (0..n_clusters)
        .map(|_| {
            let centre = random(&mut rng);
            let directions = (0..SPREAD_DIRECTIONS).map(|_| random(&mut rng)).collect();
            (centre, directions)
        })
        .collect();
    (0..n)
        .map(|i| {
            let (centre, directions) = &clusters[i % n_clusters];
            let weights: Vec<f32> = (0..SPREAD_DIRECTIONS)
                .map(|_| 0.5 * rng.next_f32())
                .collect();
            (0..dim)
                .map(|d| {
                    let spread: f32 = directions
                        .iter()
                        .zip(&weights)
                        .map(|(dir, w)| dir[d] * w)
                        .sum();
                    centre[d] + spread + 0.05 * rng.next_f32()
                })
                .collect()
        })
        .collect()
}

pub fn ids(hits: &[Hit]) -> Vec<&str> {
    hits.iter().map(|h| h.id.as_str()).collect()
}

/// A small support rule set: global, scenario and step rules.
pub fn support_rules() -> Vec<Rule> {
    vec![
        Rule::new("greet", "the conversation starts", "greet the customer").with_priority(10),
        Rule::new(
            "refund",
            "customer asks for a refund of an order",
            "explain the refund policy",
        )
        .with_priority(50),
        Rule::new(
            "order-status",
            "customer asks where the order is",
            "look up order status",
        )
        .with_priority(40),
        Rule::new(
            "returns-label",
            "customer needs a return label",
            "send a return label",
        )
        .with_scope(Scope::scenario("returns"))
        .with_priority(60),
        Rule::new(
            "returns-confirm",
            "customer confirms the return",
            "confirm and close the return",
        )
        .with_scope(Scope::step("returns", "confirm"))
        .with_priority(60),
        Rule::new(
            "vip",
            "a VIP customer asks for a refund",
            "escalate to a human",
        )
        .with_agent("premium-bot")
        .with_tags(["vip"])
        .with_priority(90),
        Rule::new("off", "customer asks for a refund", "never used").with_enabled(false),
        Rule::new(
            "ident",
            "order order_1234 of EntityStore in src/main.rs",
            "inspect the record",
        ),
    ]
}

/// A BM25-only engine (no embedder) holding `rules`.
pub fn engine_with(rules: Vec<Rule>) -> Engine {
    let engine = Engine::builder()
        .with_embedder_spec(ruchedb::EmbedderSpec::None)
        .temporary()
        .unwrap();
    engine.upsert_rules(rules).unwrap();
    engine.commit().unwrap();
    engine
}
