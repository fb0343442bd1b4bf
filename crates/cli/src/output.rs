//! Printing responses: compact JSON lines, or a readable table.

use std::io::Write;

use ruchedb::config::TurnPart;
use ruchedb::query::VectorMatch;
use ruchedb::relevance::GateDecision;
use ruchedb::{Document, Hit, SearchResponse, TurnResponse};
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
    object.insert("text_coverage".into(), json!(b.text_coverage));
    if b.codes_matched > 0 {
        object.insert("codes_matched".into(), json!(b.codes_matched));
    }
    if let Some(priority) = b.priority_term {
        object.insert("priority_term".into(), json!(priority));
    }
    if let Some(scope) = b.scope_term {
        object.insert("scope_term".into(), json!(scope));
    }
    for (key, value) in [
        ("relevance", b.relevance),
        ("code_term", b.code_term),
        ("importance", b.importance),
        ("recency", b.recency),
        ("speaker_term", b.speaker_term),
    ] {
        if let Some(value) = value {
            object.insert(key.into(), json!(value));
        }
    }
    object.insert("gate".into(), json!(b.gate));
    let mut legs = Vec::new();
    if b.found_by.text {
        legs.push("text");
    }
    if b.found_by.vector {
        legs.push("vector");
    }
    if b.found_by.graph {
        legs.push("graph");
    }
    object.insert("legs".into(), json!(legs));
    if let Some(graph) = b.graph {
        object.insert("graph".into(), json!(graph));
        object.insert("graph_norm".into(), json!(b.graph_normalized));
    }
    if let Some(path) = &b.graph_path {
        object.insert("graph_path".into(), json!(path.to_string()));
    }
    // Where a chunk cut from a file is: path, lines, heading path.
    if let Document::Chunk(chunk) = hit.document.as_ref()
        && let Some(source) = &chunk.source
    {
        object.insert("source".into(), json!(source));
        object.insert("location".into(), json!(source.location()));
    }
    if explain {
        if let Some(matched) = matched_vector(hit) {
            object.insert("matched".into(), json!(matched));
        }
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
            Document::Scenario(scenario) => {
                object.insert("name".into(), json!(scenario.name));
                object.insert("description".into(), json!(scenario.description));
                let steps: Vec<&str> = scenario.steps.iter().map(|s| s.id.as_str()).collect();
                object.insert("steps".into(), json!(steps));
            }
            Document::Tool(tool) => {
                object.insert("name".into(), json!(tool.name));
                object.insert("description".into(), json!(tool.description));
                if !tool.parameters.is_null() {
                    object.insert("parameters".into(), tool.parameters.clone());
                }
            }
        }
    }
    Value::Object(object)
}

/// Why a hit passed the relevance gate, in words.
pub(crate) fn gate_reason(hit: &Hit) -> String {
    let b = &hit.breakdown;
    match (b.gate, b.relevance) {
        (GateDecision::ExactCode, _) => format!(
            "contains {} code(s) of the query (+{:.3})",
            b.codes_matched,
            b.code_term.unwrap_or(0.0)
        ),
        (GateDecision::Relevant, Some(r)) => format!("relevance {r:.3}"),
        (GateDecision::Linked, _) => format!(
            "linked to an entity of the query (graph {:.3} of the best)",
            b.graph_normalized
        ),
        (GateDecision::Neighbour, _) => format!(
            "next to a relevant turn of its conversation (+{:.3})",
            b.neighbour_term.unwrap_or(0.0)
        ),
        (GateDecision::Applied(by), _) => match by {
            ruchedb::retrieve::AppliedBy::Always => "applies always".into(),
            ruchedb::retrieve::AppliedBy::File => {
                "a file the request names matches its globs".into()
            }
            ruchedb::retrieve::AppliedBy::Named => "named by the request".into(),
        },
        (_, Some(r)) => format!("relevance {r:.3} (gate off)"),
        (_, None) => "no query: gate off".into(),
    }
}

/// A short why for a hit (the MCP server's results): why it passed the gate, what
/// matched, and through which entity when the graph leg found it.
pub fn why(hit: &Hit) -> String {
    let mut parts = vec![gate_reason(hit)];
    if let Some(matched) = matched_vector(hit) {
        parts.push(format!("matched {}", shorten(&matched, 80)));
    }
    if let Some(path) = &hit.breakdown.graph_path {
        parts.push(format!("through {path}"));
    }
    if let Some(term) = hit.breakdown.speaker_term {
        parts.push(format!("said by whom the query names (+{term:.3})"));
    }
    parts.join("; ")
}

/// What matched the query best in the vector leg, in words: a rule's pattern or
/// another kind's example (quoted), its text, or its examples as a whole.
pub(crate) fn matched_vector(hit: &Hit) -> Option<String> {
    let matched = hit.breakdown.vector_match?;
    let doc = hit.document.as_ref();
    let (example, text) = match doc {
        Document::Rule(_) => ("pattern", "the condition and action"),
        Document::Scenario(_) | Document::Tool(_) => ("example", "the name and description"),
        Document::Chunk(_) => return None,
    };
    Some(match matched {
        VectorMatch::Pattern(i) => format!("{example} {}: \"{}\"", i + 1, doc.examples().get(i)?),
        VectorMatch::Centroid => format!(
            "the {} as a whole (centroid of its text and {example}s)",
            doc.kind()
        ),
        VectorMatch::Text => text.into(),
    })
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
    if let Some(reason) = response.gate.abstention_reason() {
        object.insert("abstained".into(), json!(reason));
    }
    if explain {
        object.insert("gate".into(), json!(response.gate));
        object.insert("analysis".into(), json!(response.analysis));
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

/// The JSON line of one turn: `turn_id`, then `scenario`, `rules`, `memory` and `tools`,
/// each shaped as a search's line (`hits` always present), the budget and the timings.
pub fn turn_json(id: Option<&Value>, turn: &TurnResponse, explain: bool, render: bool) -> Value {
    let mut object = Map::new();
    if let Some(id) = id {
        object.insert("id".into(), id.clone());
    }
    object.insert("turn_id".into(), json!(turn.turn_id));
    let mut scenario = response_json(None, &turn.scenario.search, explain);
    if let Some(fields) = scenario.as_object_mut() {
        fields.insert("active".into(), json!(turn.scenario.active));
        fields.insert("step".into(), json!(turn.scenario.step));
        fields.insert("activation".into(), json!(turn.scenario.activation));
        fields.insert("left".into(), json!(turn.scenario.left));
        fields.insert("confidence".into(), json!(turn.scenario.confidence));
    }
    object.insert("scenario".into(), scenario);
    for part in TurnPart::ALL {
        object.insert(
            part.name().into(),
            response_json(None, turn.part(part), explain),
        );
    }
    object.insert("budget".into(), json!(turn.budget));
    object.insert("timings_us".into(), json!(turn.timings));
    if render {
        object.insert("prompt".into(), json!(turn.render()));
    }
    Value::Object(object)
}

/// A turn as text: the scenario, then each part's hits.
pub fn write_turn(out: &mut dyn Write, turn: &TurnResponse, explain: bool) -> std::io::Result<()> {
    let scenario = &turn.scenario;
    match &scenario.active {
        Some(active) => {
            let how = serde_json::to_value(scenario.activation)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            write!(out, "scenario: {active} ({how}")?;
            if let Some(confidence) = scenario.confidence {
                write!(out, ", relevance {confidence:.2}")?;
            }
            if let Some(left) = &scenario.left {
                write!(out, ", left {left}")?;
            }
            if let Some(step) = &scenario.step {
                write!(out, ", step {step}")?;
            }
            writeln!(out, ")")?;
        }
        None => writeln!(out, "scenario: none")?,
    }
    for part in TurnPart::ALL {
        let budget = match part {
            TurnPart::Rules => turn.budget.rules,
            TurnPart::Memory => turn.budget.memory,
            TurnPart::Tools => turn.budget.tools,
        };
        write!(out, "\n{}", part.name())?;
        if budget.cut > 0 {
            write!(out, " ({} cut by the budget)", budget.cut)?;
        }
        writeln!(out, ":")?;
        write_table(out, turn.part(part), explain)?;
    }
    let limit = turn
        .budget
        .limit
        .map_or(String::new(), |limit| format!(" of {limit}"));
    writeln!(
        out,
        "\n{} tokens{limit} ({}), {} µs",
        turn.budget.used, turn.budget.tokenizer, turn.timings.total_us
    )
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
        match response.gate.abstention_reason() {
            Some(reason) => writeln!(out, "no hits: {reason}")?,
            None => writeln!(out, "no hits")?,
        }
    }
    for (rank, hit) in response.hits.iter().enumerate() {
        let b = &hit.breakdown;
        let text = match hit.document.as_ref() {
            Document::Rule(rule) => format!("when {} → {}", rule.condition, rule.action),
            Document::Chunk(chunk) => match &chunk.source {
                Some(source) => format!("[{}] {}", source.location(), chunk.content),
                None => chunk.content.clone(),
            },
            Document::Scenario(s) => format!("{}: {}", s.name, s.description),
            Document::Tool(t) => format!("{}: {}", t.name, t.description),
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
            let mut found: Vec<&str> = Vec::new();
            for (leg, by) in [
                ("text", b.found_by.text),
                ("vector", b.found_by.vector),
                ("graph", b.found_by.graph),
            ] {
                if by {
                    found.push(leg);
                }
            }
            let legs = if found.is_empty() {
                "filter".to_string()
            } else {
                found.join("+")
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
            if let (Some(i), Some(t)) = (b.importance, b.recency) {
                write!(out, "  importance {i:.3}  recency {t:.3}")?;
            }
            writeln!(out)?;
            write!(
                out,
                "    passed: {}  text coverage {:.3}",
                gate_reason(hit),
                b.text_coverage
            )?;
            if let Some(matched) = matched_vector(hit) {
                write!(out, "  matched {}", shorten(&matched, 70))?;
            }
            writeln!(out)?;
            if let (Some(graph), Some(path)) = (b.graph, &b.graph_path) {
                writeln!(
                    out,
                    "    graph {graph:.3} (norm {:.3}): {path}",
                    b.graph_normalized
                )?;
            }
        }
    }
    if explain {
        let g = &response.gate;
        write!(
            out,
            "gate: min_relevance {:.3} ({:?} calibration), {} passed, {} rejected",
            g.min_relevance, g.family, g.passed, g.rejected
        )?;
        if let Some((id, relevance)) = &g.best_rejected {
            write!(out, "; best rejected {id} ({relevance:.3})")?;
        }
        if let Some(background) = g.background {
            write!(out, "; closeness to the whole catalog {background:.3}")?;
        }
        writeln!(out)?;
        let a = &response.analysis;
        let entities: Vec<&str> = a.entities.iter().map(|e| e.text.as_str()).collect();
        writeln!(
            out,
            "query: keywords [{}], entities [{}], codes [{}]{}",
            a.keywords.join(", "),
            entities.join(", "),
            g.codes.join(", "),
            if a.is_question { ", a question" } else { "" }
        )?;
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
                .map(|f| format!(
                    " (feedback factors vector {:.2}, text {:.2})",
                    f.vector, f.text
                ))
                .unwrap_or_default()
        )?;
        let c = &response.leg_contributions;
        writeln!(
            out,
            "hits found by: several legs {}, text only {}, vector only {}, graph only {}",
            c.several, c.only.text, c.only.vector, c.only.graph
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

/// Each kind's vectors in words: `256 dimensions (minilm-static-v1)` when every kind has
/// the same, else `rules, scenarios, tools: 384 dimensions (all-minilm-l6-v2-q8); chunks:
/// 256 dimensions (minilm-static-v1)`; `none` without vectors.
pub fn vector_spaces(stats: &ruchedb::Stats) -> String {
    let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
    for kind in ruchedb::Kind::ALL {
        let space = stats.spaces.get(kind);
        let Some(dimensions) = space.dimensions else {
            continue;
        };
        let model = space.model_id.as_deref().unwrap_or("external");
        let text = format!("{dimensions} dimensions ({model})");
        match groups.iter_mut().find(|(t, _)| *t == text) {
            Some((_, kinds)) => kinds.push(kind.plural()),
            None => groups.push((text, vec![kind.plural()])),
        }
    }
    match groups.as_slice() {
        [] => "none".to_string(),
        [(text, kinds)] if kinds.len() == ruchedb::Kind::COUNT => text.clone(),
        _ => groups
            .iter()
            .map(|(text, kinds)| format!("{}: {text}", kinds.join(", ")))
            .collect::<Vec<_>>()
            .join("; "),
    }
}
