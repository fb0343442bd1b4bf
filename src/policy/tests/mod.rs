//! Unit tests of the action selection policies, one module per policy.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value, json};

use super::*;
use crate::ErrorKind;

mod beam;
mod candidate;
mod greedy;
mod mcts;
mod properties;
mod registry;
mod sampling;

/// A candidate from a compact description: id, action type, confidence.
fn candidate(id: &str, action_type: &str, confidence: f64) -> Candidate {
    Candidate::new(action_type)
        .with_id(id)
        .with_confidence(confidence)
}

/// The candidates of the seed's greedy and sampling examples.
fn approaches(confidences: [f64; 3]) -> Vec<Candidate> {
    vec![
        candidate("approach_a", "code", confidences[0]),
        candidate("approach_b", "code", confidences[1]),
        candidate("approach_c", "code", confidences[2]),
    ]
}

/// The candidates of the seed's beam search worked example.
fn beam_example() -> Vec<Candidate> {
    vec![
        candidate("approach_a", "code", 0.8),
        candidate("approach_b", "code", 0.75),
        candidate("FINAL", "final", 0.7),
    ]
}

fn seeded_rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// A ranking as (key, score rounded to `decimals`) pairs, for readable expectations.
fn rounded(ranked: &[(&Candidate, f64)], decimals: usize) -> Vec<(String, String)> {
    ranked
        .iter()
        .map(|(candidate, score)| (candidate.key().to_owned(), format!("{score:.decimals$}")))
        .collect()
}

/// Expected ranking from `(key, rounded score)` literals.
fn expected(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(key, score)| ((*key).to_owned(), (*score).to_owned()))
        .collect()
}

fn config(value: Value) -> Map<String, Value> {
    value.as_object().expect("a JSON object literal").clone()
}

/// The key of an `InvalidConfig` error, `None` for errors of other kinds.
fn invalid_config_key(err: &crate::Error) -> Option<&str> {
    match err.kind() {
        ErrorKind::InvalidConfig { key, .. } => Some(key),
        _ => None,
    }
}

#[track_caller]
fn assert_kind<T: std::fmt::Debug>(result: crate::Result<T>, expected: ErrorKind) {
    let err = result.expect_err("expected an error");
    assert_eq!(err.kind(), &expected);
}
