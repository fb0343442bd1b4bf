//! k-selection on a fixed list of 30 candidate scores, every strategy at its defaults.
//!
//! Target (`docs/benchmarks.md`): at most 5 µs per selection for every strategy, 20 µs for
//! `clustering`. Run with `cargo bench --bench selection`.

// `criterion_group!` generates an undocumented `pub fn`.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use ruchedb::select::{SelectionConfig, SelectionStrategy};
use serde_json::Map;

/// Thirty candidate scores as a hybrid search returns them: a clear head, a middle band
/// and a noise tail, sorted descending.
const SCORES: [f64; 30] = [
    0.93, 0.91, 0.90, 0.86, 0.74, 0.72, 0.71, 0.69, 0.66, 0.61, 0.58, 0.57, 0.55, 0.52, 0.49, 0.47,
    0.46, 0.44, 0.41, 0.39, 0.36, 0.34, 0.31, 0.29, 0.27, 0.24, 0.22, 0.19, 0.15, 0.12,
];

fn selection(c: &mut Criterion) {
    let mut group = c.benchmark_group("select_30");
    for name in SelectionConfig::STRATEGY_NAMES {
        let strategy = SelectionConfig::from_params(name, &Map::new())
            .and_then(|config| config.build())
            .expect("default configuration builds");
        group.bench_function(*name, |b| {
            b.iter(|| {
                let result = strategy
                    .select_scores(black_box(&SCORES), black_box(30), black_box(1))
                    .expect("valid scores");
                assert!(!result.selected.is_empty(), "{name} selected nothing");
                result
            })
        });
    }
    group.finish();
}

criterion_group!(benches, selection);
criterion_main!(benches);
