//! Dynamic k-selection on seed 000's "I want to return my order" example.
//!
//! A search for "I want to return my order" retrieved five rules. A fixed top-5 would
//! keep the noise at the bottom, a fixed top-2 could miss "Order status inquiry". Each
//! strategy below looks at the scores to decide where the relevant results end.
//!
//! Run with `cargo run --example selection`.

use ruchedb::select::{SelectionConfig, SelectionStrategy, SelectionStrategyExt};
use serde_json::{Map, Value, json};

fn main() -> ruchedb::Result<()> {
    // # Step 1: the candidates, sorted by score descending
    //
    // Any type that implements `ruchedb::select::Scored` can be selected; `(item, score)` pairs do.
    let candidates = vec![
        ("Customer wants refund", 0.92),
        ("Customer asks about return", 0.89),
        ("Order status inquiry", 0.71),
        ("Shipping question", 0.45),
        ("General greeting", 0.42),
    ];
    println!("Query: \"I want to return my order\"");
    for (rank, (label, score)) in candidates.iter().enumerate() {
        println!("  {}. {label:<28} {score:.2}", rank + 1);
    }

    // # Step 2: one configuration per strategy
    //
    // These are the same name-plus-parameters pairs that the CLI's `--strategy` and
    // `--select-param` flags produce; parameters left out take each strategy's defaults.
    let strategies: [(&str, Value); 6] = [
        ("elbow", json!({})),
        ("adaptive_k", json!({})),
        ("entropy", json!({})),
        ("clustering", json!({})),
        ("fixed_k", json!({"k": 5})),
        ("autocut", json!({"jumps": 1})),
    ];

    // # Step 3: select under each strategy and show what it kept and why
    //
    // `max_k` caps the result and `min_k` asks for at least one item.
    let (max_k, min_k) = (30, 1);
    for (name, params) in strategies {
        let params: Map<String, Value> = params.as_object().cloned().unwrap_or_default();
        let strategy = SelectionConfig::from_params(name, &params)?.build()?;
        let result = strategy.select(candidates.clone(), max_k, min_k)?;

        let kept: Vec<&str> = result.selected.iter().map(|(label, _)| *label).collect();
        println!();
        println!(
            "{:<10} keeps {} (cutoff {:.2}): {}",
            result.method,
            kept.len(),
            result.cutoff_score,
            kept.join(", ")
        );
        println!("{:<10} metadata {}", "", Value::Object(result.metadata));
    }

    // # Step 4: bad input is an error, not a panic
    //
    // Scores must be finite and sorted descending; the error says where they are not.
    let strategy = SelectionConfig::from_params("elbow", &Map::new())?.build()?;
    let err = strategy
        .select_scores(&[0.42, 0.92], max_k, min_k)
        .unwrap_err();
    println!();
    println!("unsorted input: {err}");
    Ok(())
}
