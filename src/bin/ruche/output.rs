//! Printing responses: compact JSON lines, or a readable table.

use std::io::Write;

use ruche::{Document, Hit, SearchResponse};
use serde_json::{Map, Value, json};

/// One hit as a JSON object: id, score, and its breakdown (chunks: relevance,
/// importance and recency); with `explain`, also the document's text.
pub fn hit_json(hit: &Hit, explain: bool) -> Value {
    let b = &hit.breakdown;
    let mut object = Map::new();
    object.insert("id".into(), json!(hit.id));
    object.insert("score".into(), json!(hit.score));
    object.insert("vector".into(), json!(b.vector));
    object.insert("bm25".into(), json!(b.bm25));
    object.insert("bm25_norm".into(), json!(b.bm25_normalized));
    object.insert("vector_norm".into(), json!(b.vector_normalized));
    object.insert("hybrid".into(), json!(b.hybrid));
    if let Some(priority) = b.priority_term {
        object.insert("priority_term".into(), json!(priority));
    }
    if let Some(scope) = b.scope_term {
        object.insert("scope_term".into(), json!(scope));
    }
    for (key, value) in [
        ("relevance", b.relevance),
        ("importance", b.importance),
        ("recency", b.recency),
    ] {
        if let Some(value) = value {
            object.insert(key.into(), json!(value));
        }
    }
    let mut legs = Vec::new();
    if b.found_by.text {
        legs.push("text");
    }
    if b.found_by.vector {
        legs.push("vector");
    }
    object.insert("legs".into(), json!(legs));
    if explain {
        match hit.document.as_ref() {
            Document::Rule(rule) => {
                object.insert("condition".into(), json!(rule.condition));
                object.insert("action".into(), json!(rule.action));
                object.insert("priority".into(), json!(rule.priority));
                object.insert("scope".into(), json!(rule.scope.name()));
            }
            Document::Chunk(chunk) => {
                object.insert("content".into(), json!(chunk.content));
                if let Some(created_at) = chunk.created_at {
                    object.insert("created_at".into(), json!(created_at.to_string()));
                }
            }
        }
    }
    Value::Object(object)
}

/// The JSON line of one response (batch and `--json` output).
pub fn response_json(id: Option<&Value>, response: &SearchResponse, explain: bool) -> Value {
    let mut object = Map::new();
    if let Some(id) = id {
        object.insert("id".into(), id.clone());
    }
    object.insert("query_id".into(), json!(response.query_id));
    object.insert(
        "hits".into(),
        Value::Array(response.hits.iter().map(|h| hit_json(h, explain)).collect()),
    );
    object.insert("timings_us".into(), json!(response.timings));
    if explain {
        object.insert("selection".into(), json!(response.selection));
        object.insert("fusion".into(), json!(response.fusion));
        object.insert(
            "leg_contributions".into(),
            json!(response.leg_contributions),
        );
        object.insert(
            "leg_candidates".into(),
            json!({
                "text": response.leg_candidates[0],
                "vector": response.leg_candidates[1],
            }),
        );
        object.insert(
            "vector_leg_skipped".into(),
            json!(response.vector_leg_skipped),
        );
    }
    Value::Object(object)
}

/// Writes `value` as one compact line.
pub fn write_line(out: &mut dyn Write, value: &Value) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    out.write_all(b"\n")
}

fn shorten(text: &str, max: usize) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.chars().count() <= max {
        return text;
    }
    let mut short: String = text.chars().take(max.saturating_sub(1)).collect();
    short.push('…');
    short
}

fn opt(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_string(), |v| format!("{v:.3}"))
}

/// A readable table of a response.
pub fn write_table(
    out: &mut dyn Write,
    response: &SearchResponse,
    explain: bool,
) -> std::io::Result<()> {
    if response.hits.is_empty() {
        writeln!(out, "no hits")?;
    }
    for (rank, hit) in response.hits.iter().enumerate() {
        let b = &hit.breakdown;
        let text = match hit.document.as_ref() {
            Document::Rule(rule) => format!("when {} → {}", rule.condition, rule.action),
            Document::Chunk(chunk) => chunk.content.clone(),
        };
        writeln!(
            out,
            "{:>2}. {:<28} {:.3}  {}",
            rank + 1,
            hit.id,
            hit.score,
            shorten(&text, 90)
        )?;
        if explain {
            let legs = match (b.found_by.text, b.found_by.vector) {
                (true, true) => "text+vector",
                (true, false) => "text",
                (false, true) => "vector",
                (false, false) => "filter",
            };
            write!(
                out,
                "    vector {}  bm25 {:.3} (norm {:.3})  hybrid {:.3}  found by {legs}",
                opt(b.vector),
                b.bm25,
                b.bm25_normalized,
                b.hybrid
            )?;
            if let (Some(p), Some(s)) = (b.priority_term, b.scope_term) {
                write!(out, "  priority {p:.3}  scope {s:.3}")?;
            }
            if let (Some(r), Some(i), Some(t)) = (b.relevance, b.importance, b.recency) {
                write!(out, "  relevance {r:.3}  importance {i:.3}  recency {t:.3}")?;
            }
            writeln!(out)?;
        }
    }
    if explain {
        let s = &response.selection;
        writeln!(
            out,
            "selection: {} kept {} of {} (cutoff {:.3}) {}",
            s.strategy,
            s.output_count,
            s.input_count,
            s.cutoff_score,
            Value::Object(s.metadata.clone())
        )?;
        let f = &response.fusion;
        writeln!(
            out,
            "fusion: {} with weights vector {:.3}, text {:.3}{}{}",
            f.method,
            f.vector_weight,
            f.text_weight,
            if f.adaptive {
                " (adapted to the query)"
            } else {
                ""
            },
            f.feedback_factors
                .map(|[v, t]| format!(" (feedback factors vector {v:.2}, text {t:.2})"))
                .unwrap_or_default()
        )?;
        let c = &response.leg_contributions;
        writeln!(
            out,
            "hits found by: both legs {}, text only {}, vector only {}",
            c.both, c.text_only, c.vector_only
        )?;
        if let Some(reason) = &response.vector_leg_skipped {
            writeln!(out, "vector leg skipped: {reason}")?;
        }
        let t = &response.timings;
        writeln!(
            out,
            "timings: embed {}µs, text {}µs, vector {}µs, fuse {}µs, select {}µs, total {}µs",
            t.embed_us, t.text_us, t.vector_us, t.fuse_us, t.select_us, t.total_us
        )?;
    }
    Ok(())
}
