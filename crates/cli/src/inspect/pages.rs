//! The inspector's pages, as maud templates: every string spliced in is escaped; only
//! the charts' SVG (made by plotters, which escapes its text) is inserted as is.

use super::form::{Form, Shown};
use std::collections::BTreeMap;
use std::path::PathBuf;

use maud::{DOCTYPE, Markup, PreEscaped, html};
use ruchedb::turn::Activation;
use ruchedb::{Chunk, DEFAULT_TENANT, Document, Hit, Kind, Rule, Scope, SearchRequest, Stats};

use super::chart::{self, CurvePoint};
use super::explain::{Candidate, ExampleCheck, Explained, ExplainedTurn, Fate};
use crate::eval::{Evaluation, Judged, Outcome};

const STYLE: &str = "
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1f2937}
header{background:#111827;color:#e5e7eb;padding:8px 16px;display:flex;gap:18px;align-items:baseline;flex-wrap:wrap}
header a{color:#e5e7eb;text-decoration:none}header a.on{color:#fff;font-weight:600;border-bottom:2px solid #60a5fa}
header .dir{margin-left:auto;color:#9ca3af;font-size:12px}
main{padding:12px 16px;max-width:1280px}
h1{font-size:20px;margin:8px 0}h2{font-size:17px;margin:18px 0 6px}h3{font-size:15px;margin:12px 0 4px}
table{border-collapse:collapse;width:100%;margin:6px 0 14px}
th,td{border-bottom:1px solid #e5e7eb;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f3f4f6;font-weight:600}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.cut td,tr.refused td{color:#9ca3af}tr.cut a,tr.refused a{color:#9ca3af}
.legs{font-size:12px;color:#4b5563;white-space:nowrap}
mark{background:#fde68a;padding:0 2px}
ul.ex{margin:2px 0;padding-left:18px;font-size:12px;color:#4b5563}
.box{background:#f9fafb;border:1px solid #e5e7eb;padding:8px 12px;margin:8px 0}
.bad{color:#b91c1c;font-weight:600}.ok{color:#15803d}
.err{background:#fef2f2;border:1px solid #fecaca;padding:8px 12px;margin:8px 0}
form.q{display:flex;flex-wrap:wrap;gap:6px 12px;align-items:end;margin:8px 0}
form.q label{display:flex;flex-direction:column;font-size:12px;color:#4b5563}
form.q textarea{width:520px;height:46px;font:inherit}
form.q input[type=text]{width:110px}form.q input.path{width:300px}
svg{max-width:100%;height:auto;border:1px solid #e5e7eb}
pre{white-space:pre-wrap;background:#f9fafb;padding:6px}
";

/// The header's links: (path, label).
const NAV: [(&str, &str); 6] = [
    ("/", "Playground"),
    ("/rules", "Rules"),
    ("/chunks", "Chunks"),
    ("/scenarios", "Scenarios"),
    ("/tools", "Tools"),
    ("/eval", "Evaluate"),
];

/// What every page of the server says about the index.
pub struct Site<'a> {
    pub dir: &'a str,
    pub stats: &'a Stats,
    /// The path of the header link to mark as current.
    pub current: &'a str,
    /// Why the page shows an older commit than the writer's last, when it does.
    pub stale: Option<&'a str>,
}

/// A whole page: the header (when served) and `body`.
pub fn layout(title: &str, site: Option<&Site<'_>>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · ruche inspect" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                @if let Some(site) = site {
                    header {
                        strong { "ruche inspect" }
                        @for (path, label) in NAV {
                            a href=(path) class=[(path == site.current).then_some("on")] { (label) }
                        }
                        span.dir {
                            (site.dir) " · " (site.stats.rules) " rules, " (site.stats.chunks)
                            " chunks, " (site.stats.scenarios) " scenarios, " (site.stats.tools)
                            " tools · commit " (site.stats.last_seq) " · read-only"
                        }
                    }
                }
                main {
                    @if let Some(stale) = site.and_then(|site| site.stale) {
                        (error_box(&format!("Showing an earlier commit: the last one could not be opened ({stale}).")))
                    }
                    (body)
                }
            }
        }
    }
}

/// An error shown in a page.
pub fn error_box(message: &str) -> Markup {
    html! { div.err { (message) } }
}

/// The URL of a search in the playground.
pub fn playground_link(request: &SearchRequest) -> String {
    let mut pairs: Vec<(&str, &str)> =
        vec![("q", request.text()), ("kind", request.kind().plural())];
    if request.tenant_id() != DEFAULT_TENANT {
        pairs.push(("tenant", request.tenant_id()));
    }
    for (key, value) in [
        ("agent", request.agent_id()),
        ("scenario", request.scenario_id()),
        ("step", request.step_id()),
        ("context", request.context_id()),
    ] {
        if let Some(value) = value {
            pairs.push((key, value));
        }
    }
    format!("/?{}", encode(&pairs))
}

fn encode(pairs: &[(&str, &str)]) -> String {
    serde_urlencoded::to_string(pairs).unwrap_or_default()
}

/// The URL of a document's page.
pub fn doc_link(kind: Kind, tenant: &str, id: &str) -> String {
    let mut pairs = vec![("kind", kind.as_str()), ("id", id)];
    if tenant != DEFAULT_TENANT {
        pairs.push(("tenant", tenant));
    }
    format!("/doc?{}", encode(&pairs))
}

fn text_input(label: &str, name: &str, value: &Option<String>) -> Markup {
    html! {
        label { (label) input type="text" name=(name) value=[value.as_deref()]; }
    }
}

/// The kinds to choose from (`None`: a whole turn, offered when `turn`).
fn kind_select(selected: Option<Kind>, turn: bool) -> Markup {
    html! {
        label {
            "kind"
            select name="kind" {
                @for kind in Kind::ALL {
                    option value=(kind.plural()) selected[Some(kind) == selected] { (kind.plural()) }
                }
                @if turn { option value="turn" selected[selected.is_none()] { "whole turn" } }
            }
        }
    }
}

/// The playground: the form, and the explained search when there is a message.
pub fn playground(form: &Form, result: Option<Result<Shown, String>>) -> Result<Markup, String> {
    let kind = (!form.is_turn()).then(|| form.kind().unwrap_or(Kind::Rule));
    let shown = match &result {
        Some(Ok(Shown::Search(explained))) => Some(html! {
            (explanation(explained, &curve(explained).map_err(|e| e.to_string())?))
        }),
        Some(Ok(Shown::Turn(turn))) => Some(turn_explanation(turn)?),
        _ => None,
    };
    Ok(html! {
        h1 { "Playground" }
        form.q method="get" action="/" {
            label { "message" textarea name="q" autofocus { (form.q.as_deref().unwrap_or("")) } }
            (kind_select(kind, true))
            (text_input("tenant", "tenant", &form.tenant))
            (text_input("agent", "agent", &form.agent))
            (text_input("scenario", "scenario", &form.scenario))
            (text_input("step", "step", &form.step))
            (text_input("context", "context", &form.context))
            (text_input("budget (turn, tokens)", "budget", &form.budget))
            button type="submit" { "Search" }
        }
        @match (&result, shown) {
            (Some(Err(message)), _) => (error_box(message)),
            (_, Some(markup)) => (markup),
            _ => p { "Type a message as the agent would receive it: the page shows what the engine returns, every candidate it ranked, and why each was kept or refused. A whole turn shows the scenario, rules, memory and tools at once, and the prompt block within the budget." },
        }
    })
}

/// A whole turn: its decisions, its block, and each part's search explained.
fn turn_explanation(explained: &ExplainedTurn) -> Result<Markup, String> {
    let turn = &explained.turn;
    let scenario = &turn.scenario;
    let budget = &turn.budget;
    let activation = match scenario.activation {
        Activation::None => "no scenario is active".to_string(),
        Activation::Kept => "the active scenario is kept".to_string(),
        Activation::Detected => format!("detected (relevance {})", opt(scenario.confidence)),
        Activation::Switched => format!(
            "switched from {} (relevance {})",
            scenario.left.as_deref().unwrap_or("?"),
            opt(scenario.confidence)
        ),
        _ => format!("{:?}", scenario.activation),
    };
    let mut parts = Vec::with_capacity(explained.parts.len());
    for (kind, part) in &explained.parts {
        let svg = curve(part).map_err(|e| e.to_string())?;
        parts.push((*kind, part, svg));
    }
    Ok(html! {
        div.box {
            p {
                "Turn " code { (turn.turn_id) } ": scenario "
                @match &scenario.active {
                    Some(id) => { strong { (id) } @if let Some(step) = &scenario.step { " step " (step) } }
                    None => "none",
                }
                ", " (activation) ". "
                (turn.rules.hits.len()) " rules, " (turn.memory.hits.len()) " memory chunks, "
                (turn.tools.hits.len()) " tools in " (turn.timings.total_us) " µs."
            }
            p {
                "Budget: " (budget.used) " tokens used"
                @if let Some(limit) = budget.limit { " of " (limit) }
                " (" (budget.tokenizer) "); cut: rules " (budget.rules.cut) ", memory "
                (budget.memory.cut) ", tools " (budget.tools.cut) "."
            }
        }
        h2 { "Prompt block" }
        @let block = turn.render();
        @if block.is_empty() { p { "Empty: nothing fits this message." } } @else { pre.block { (block) } }
        @for (kind, part, svg) in &parts {
            h2.part { (capitalised(kind.plural())) @if *kind == Kind::Rule { @if let Some(id) = &scenario.active { " (inside " (id) ")" } } }
            (explanation(part, svg))
        }
    })
}

/// The score curve of an explained search.
pub fn curve(explained: &Explained) -> anyhow::Result<String> {
    let points: Vec<CurvePoint> = explained
        .candidates
        .iter()
        .map(|c| CurvePoint {
            score: c.hit.score,
            relevance: c.hit.breakdown.relevance,
            fate: c.fate,
        })
        .collect();
    let selection = &explained.response.selection;
    chart::score_curve(
        &points,
        explained.response.gate.min_relevance,
        explained
            .cutoff()
            .map(|cutoff| (cutoff, selection.strategy.as_str())),
    )
}

fn explanation(explained: &Explained, svg: &str) -> Markup {
    let response = &explained.response;
    let gate = &response.gate;
    let selection = &response.selection;
    let fusion = &response.fusion;
    let (refused, cut) = explained.runners_up();
    let kept = response.hits.len();
    html! {
        div.box {
            p {
                strong { (kept) " kept" } " of " (explained.candidates.len()) " candidates. "
                @if let Some(reason) = gate.abstention_reason() { span.bad { "Abstained: " (reason) } }
            }
            p {
                "Gate: relevance ≥ " strong { (format!("{:.3}", gate.min_relevance)) }
                " (" (format!("{:?}", gate.family)) " calibration), " (gate.passed) " passed, "
                (gate.rejected) " refused. Selection: " strong { (selection.strategy) } " kept "
                (selection.output_count) " of " (selection.input_count) " (cutoff "
                (format!("{:.3}", selection.cutoff_score)) ") "
                code { (serde_json::Value::Object(selection.metadata.clone())) }
            }
            p {
                "Fusion: " (fusion.method) " with weights vector " (format!("{:.3}", fusion.vector_weight))
                ", text " (format!("{:.3}", fusion.text_weight))
                @if fusion.graph_weight > 0.0 { ", graph " (format!("{:.3}", fusion.graph_weight)) }
                @if fusion.adaptive { " (adapted to the query)" }
                ". Query keywords: " (response.analysis.keywords.join(", "))
                @if let Some(reason) = &response.vector_leg_skipped { ". Vector leg skipped: " (reason) }
            }
            @if let Some(c) = refused {
                p { "Runner-up refused by the gate: " (doc_anchor(&c.hit)) " — " (explained.why(c)) "." }
            }
            @if let Some(c) = cut {
                p { "First cut by the selection: " (doc_anchor(&c.hit)) " — " (explained.why(c)) "." }
            }
        }
        figure { (PreEscaped(svg)) }
        h2 { "Response" }
        @if response.hits.is_empty() {
            p { "No hit." }
        } @else {
            (hits_table(explained, explained.candidates.iter().filter(|c| c.fate == Fate::Kept), true))
        }
        @let others: Vec<&Candidate> = explained.candidates.iter().filter(|c| c.fate != Fate::Kept).collect();
        @if !others.is_empty() {
            h2 { "Refused candidates" }
            (hits_table(explained, others.into_iter(), false))
        }
    }
}

fn doc_anchor(hit: &Hit) -> Markup {
    let doc = hit.document.as_ref();
    html! { a href=(doc_link(doc.kind(), doc.tenant_id(), doc.id())) { (hit.id) } }
}

fn num(value: f64) -> String {
    format!("{value:.3}")
}

fn opt(value: Option<f64>) -> String {
    value.map_or_else(|| "–".into(), num)
}

fn hits_table<'a>(
    explained: &Explained,
    candidates: impl Iterator<Item = &'a Candidate>,
    kept: bool,
) -> Markup {
    let fusion = &explained.response.fusion;
    html! {
        table {
            tr {
                th { "#" } th { "id" } th { "score" } th { "legs × weights" } th { "terms" }
                th { "relevance" } th { (if kept { "why it passed" } else { "why not" }) } th { "text (matched pattern marked)" }
            }
            @for (rank, c) in candidates.enumerate() {
                @let hit = &c.hit;
                @let b = &hit.breakdown;
                tr class=(match c.fate { Fate::Kept => "kept", Fate::Cut => "cut", Fate::Refused => "refused" }) {
                    td.n { (rank + 1) }
                    td { (doc_anchor(hit)) }
                    td.n { strong { (num(hit.score)) } }
                    td.legs {
                        "vector " (opt(b.vector)) " → " (num(b.vector_normalized)) " × " (num(fusion.vector_weight)) br;
                        "bm25 " (num(b.bm25)) " → " (num(b.bm25_normalized)) " × " (num(fusion.text_weight)) br;
                        @if let Some(graph) = b.graph { "graph " (num(graph)) " → " (num(b.graph_normalized)) " × " (num(fusion.graph_weight)) br; }
                        "hybrid " (num(b.hybrid))
                        @if let Some(n) = b.neighbour_term { " (neighbour +" (num(n)) ")" }
                        @if let Some(n) = b.speaker_term { " (speaker +" (num(n)) ")" }
                        br; "found by " (found_by(hit))
                    }
                    td.legs {
                        @if let Some(p) = b.priority_term { "priority " (num(p)) br; }
                        @if let Some(s) = b.scope_term { "scope " (num(s)) br; }
                        @if let Some(i) = b.importance { "importance " (num(i)) br; }
                        @if let Some(r) = b.recency { "recency " (num(r)) br; }
                        @if let Some(c) = b.code_term { "codes +" (num(c)) br; }
                        "coverage " (num(b.text_coverage))
                    }
                    td.n { (opt(b.relevance)) }
                    td { (explained.why(c)) @if let Some(path) = &b.graph_path { br; "through " (path.to_string()) } }
                    td { (doc_text(hit.document.as_ref(), super::explain::matched_example(hit))) }
                }
            }
        }
    }
}

fn found_by(hit: &Hit) -> String {
    let f = &hit.breakdown.found_by;
    let legs: Vec<&str> = [("text", f.text), ("vector", f.vector), ("graph", f.graph)]
        .into_iter()
        .filter(|(_, by)| *by)
        .map(|(leg, _)| leg)
        .collect();
    if legs.is_empty() {
        "filter".into()
    } else {
        legs.join("+")
    }
}

/// A document's text in a table cell, its patterns or examples listed with the matched
/// one marked.
fn doc_text(doc: &Document, matched: Option<usize>) -> Markup {
    html! {
        @match doc {
            Document::Rule(rule) => { "when " (rule.condition) " → " (rule.action) }
            Document::Chunk(chunk) => { (shorten(&chunk.content, 240)) }
            Document::Scenario(s) => { strong { (s.name) } ": " (s.description) }
            Document::Tool(t) => { strong { (t.name) } ": " (t.description) }
        }
        @if !doc.examples().is_empty() {
            ul.ex {
                @for (i, example) in doc.examples().iter().enumerate() {
                    @if matched == Some(i) { li { mark { (example) } " ← matched" } } @else { li { (example) } }
                }
            }
        }
    }
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut short: String = text.chars().take(max - 1).collect();
    short.push('…');
    short
}

fn scope_cell(scope: &Scope) -> Markup {
    html! {
        @match scope {
            Scope::Global => "global",
            Scope::Scenario { scenario_id } => { "scenario " (scenario_id) }
            Scope::Step { scenario_id, step_id } => { "step " (scenario_id) " / " (step_id) }
        }
    }
}

fn tenant_note(tenant: &str) -> Markup {
    html! { @if tenant != DEFAULT_TENANT { br; small { "tenant " (tenant) } } }
}

/// Rules grouped by where they apply: global, then each scenario and its steps.
pub fn rules(rules: &[Rule]) -> Markup {
    let mut groups: BTreeMap<(Option<&str>, Option<&str>), Vec<&Rule>> = BTreeMap::new();
    for rule in rules {
        let key = match &rule.scope {
            Scope::Global => (None, None),
            Scope::Scenario { scenario_id } => (Some(scenario_id.as_str()), None),
            Scope::Step {
                scenario_id,
                step_id,
            } => (Some(scenario_id.as_str()), Some(step_id.as_str())),
        };
        groups.entry(key).or_default().push(rule);
    }
    html! {
        h1 { "Rules" }
        @if rules.is_empty() { p { "No rule." } }
        @for ((scenario, step), rules) in &groups {
            @match (scenario, step) {
                (None, _) => h2 { "Global" },
                (Some(s), None) => h2 { "Scenario " a href=(doc_link(Kind::Scenario, rules[0].tenant_id.as_str(), s)) { (s) } },
                (Some(s), Some(step)) => h3 { "Scenario " (s) ", step " (step) },
            }
            table {
                tr { th { "id" } th { "priority" } th { "when" } th { "do" } th { "patterns" } }
                @for rule in rules {
                    tr {
                        td {
                            a href=(doc_link(Kind::Rule, &rule.tenant_id, &rule.id)) { (rule.id) }
                            (tenant_note(&rule.tenant_id))
                            @if !rule.enabled { br; small { "disabled" } }
                        }
                        td.n { (rule.priority) }
                        td { (rule.condition) }
                        td { (rule.action) }
                        td.n { (rule.patterns.len()) }
                    }
                }
            }
        }
    }
}

/// Chunks by context: the contexts with their counts, and one context's chunks.
pub fn chunks(all: &[Chunk], context: Option<&str>) -> Markup {
    const SHOWN: usize = 1_000;
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for chunk in all {
        *counts
            .entry(chunk.context_id.as_deref().unwrap_or(""))
            .or_default() += 1;
    }
    let label = |c: &str| {
        if c.is_empty() {
            "(no context)".to_string()
        } else {
            c.to_string()
        }
    };
    html! {
        h1 { "Chunks" }
        @if all.is_empty() { p { "No chunk." } }
        table {
            tr { th { "context" } th { "chunks" } }
            @for (c, n) in &counts {
                tr { td { a href=(format!("/chunks?{}", encode(&[("context", c)]))) { (label(c)) } } td.n { (n) } }
            }
        }
        @if let Some(context) = context {
            h2 { "Context " (label(context)) }
            table {
                tr { th { "id" } th { "content" } th { "importance" } th { "created" } }
                @for chunk in all.iter().filter(|c| c.context_id.as_deref().unwrap_or("") == context).take(SHOWN) {
                    tr {
                        td { a href=(doc_link(Kind::Chunk, &chunk.tenant_id, &chunk.id)) { (chunk.id) } (tenant_note(&chunk.tenant_id)) }
                        td { (shorten(&chunk.content, 200)) }
                        td.n { (chunk.importance.map(|i| i.to_string()).unwrap_or_default()) }
                        td { (chunk.created_at.map(|t| t.to_string()).unwrap_or_default()) }
                    }
                }
            }
            @if counts.get(context).copied().unwrap_or(0) > SHOWN { p { "The first " (SHOWN) " are shown." } }
        }
    }
}

/// Scenarios or tools: name, description, and how many examples.
pub fn catalog(kind: Kind, docs: &[Document]) -> Markup {
    html! {
        h1 { (capitalised(kind.plural())) }
        @if docs.is_empty() { p { "No " (kind.as_str()) "." } }
        table {
            tr {
                th { "id" } th { "name" } th { "description" }
                @if kind == Kind::Scenario { th { "steps" } }
                th { "examples" }
            }
            @for doc in docs {
                tr {
                    td { a href=(doc_link(kind, doc.tenant_id(), doc.id())) { (doc.id()) } (tenant_note(doc.tenant_id())) }
                    @match doc {
                        Document::Scenario(s) => {
                            td { (s.name) } td { (s.description) }
                            td { (s.steps.iter().map(|s| s.id.as_str()).collect::<Vec<_>>().join(", ")) }
                        }
                        Document::Tool(t) => { td { (t.name) } td { (t.description) } }
                        _ => { td {} td {} }
                    }
                    td.n { (doc.examples().len()) }
                }
            }
        }
    }
}

pub fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// A document: its fields, and its patterns or examples run as queries.
pub fn document(doc: &Document, checks: &[ExampleCheck]) -> Markup {
    let conflicts = checks.iter().filter(|c| c.conflict()).count();
    let try_text = super::explain::request_for(doc, &doc.text());
    html! {
        h1 { (capitalised(doc.kind().as_str())) " " (doc.id()) }
        table {
            @if doc.tenant_id() != DEFAULT_TENANT { tr { th { "tenant" } td { (doc.tenant_id()) } } }
            @if let Some(agent) = doc.agent_id() { tr { th { "agent" } td { (agent) } } }
            @match doc {
                Document::Rule(rule) => {
                    tr { th { "when" } td { (rule.condition) } }
                    tr { th { "do" } td { (rule.action) } }
                    tr { th { "priority" } td { (rule.priority) } }
                    tr { th { "scope" } td { (scope_cell(&rule.scope)) } }
                    tr { th { "enabled" } td { (rule.enabled) } }
                    @if !rule.tags.is_empty() { tr { th { "tags" } td { (rule.tags.join(", ")) } } }
                }
                Document::Chunk(chunk) => {
                    tr { th { "content" } td { (chunk.content) } }
                    @if let Some(context) = &chunk.context_id {
                        tr { th { "context" } td { a href=(format!("/chunks?{}", encode(&[("context", context)]))) { (context) } } }
                    }
                    @if let Some(i) = chunk.importance { tr { th { "importance" } td { (i) } } }
                    @if let Some(t) = chunk.created_at { tr { th { "created" } td { (t.to_string()) } } }
                    @if let Some(t) = chunk.expires_at { tr { th { "expires" } td { (t.to_string()) } } }
                    @if !chunk.metadata.is_empty() {
                        tr { th { "metadata" } td { pre { (serde_json::to_string_pretty(&chunk.metadata).unwrap_or_default()) } } }
                    }
                }
                Document::Scenario(s) => {
                    tr { th { "name" } td { (s.name) } }
                    tr { th { "description" } td { (s.description) } }
                    tr { th { "steps" } td {
                        ul.ex { @for step in &s.steps { li { strong { (step.id) } ": " (step.description) } } }
                    } }
                    tr { th { "enabled" } td { (s.enabled) } }
                }
                Document::Tool(t) => {
                    tr { th { "name" } td { (t.name) } }
                    tr { th { "description" } td { (t.description) } }
                    @if !t.parameters.is_null() {
                        tr { th { "parameters" } td { pre { (serde_json::to_string_pretty(&t.parameters).unwrap_or_default()) } } }
                    }
                    tr { th { "enabled" } td { (t.enabled) } }
                }
            }
        }
        p { a href=(playground_link(&try_text)) { "Search its text in the playground" } }
        @if doc.kind() != Kind::Chunk {
            h2 { (if doc.kind() == Kind::Rule { "Patterns" } else { "Examples" }) " run as queries" }
            @if checks.is_empty() {
                p { "None: it is found by its text alone." }
            } @else {
                p {
                    @if conflicts == 0 { span.ok { "Each finds this " (doc.kind().as_str()) " first." } }
                    @else { span.bad { (conflicts) " of " (checks.len()) " do not find this " (doc.kind().as_str()) " first: a conflict to resolve." } }
                }
                table {
                    tr { th { "query" } th { "first hit" } th { "its rank" } th { "verdict" } }
                    @for check in checks {
                        tr {
                            td { a href=(playground_link(&check.request)) { (check.text) } }
                            td {
                                @if let Some((id, score)) = &check.first {
                                    a href=(doc_link(doc.kind(), doc.tenant_id(), id)) { (id) } " " (num(*score))
                                } @else { "no hit" }
                            }
                            td.n { (check.own_rank.map(|r| r.to_string()).unwrap_or_else(|| "not kept".into())) }
                            td {
                                @if !check.conflict() { span.ok { "ok" } }
                                @else if let Some((id, _)) = &check.first {
                                    @if check.own_rank.is_some() { span.bad { "conflict: " (id) " comes first" } }
                                    @else { span.bad { "conflict: finds " (id) ", not this one" } }
                                } @else { span.bad { "finds nothing" } }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The Evaluate page's form: the kind and tenant to evaluate; the files are the ones
/// given on the command line (`files`), shown, never asked for.
pub fn eval_form(files: Option<(&PathBuf, &PathBuf)>, kind: Kind, tenant: &str) -> Markup {
    html! {
        h1 { "Evaluate" }
        @if let Some((queries, qrels)) = files {
            p { "Judged messages " code { (queries.display()) } ", judgements " code { (qrels.display()) } "." }
        }
        form.q method="get" action="/eval" {
            (kind_select(Some(kind), false))
            label { "tenant" input type="text" name="tenant" value=(tenant); }
            button type="submit" { "Evaluate" }
        }
    }
}

/// An evaluation: metrics, confusions, wrong answers and refusals; with `links`, each
/// message links to its playground view, and `curves` holds score curves by query id.
pub fn evaluation(
    evaluation: &Evaluation,
    links: bool,
    curves: &BTreeMap<String, String>,
) -> anyhow::Result<Markup> {
    let e = evaluation;
    let bars = chart::bars(&[
        ("nDCG@10", e.ndcg10),
        ("recall@10", e.recall10),
        ("recall@100", e.recall100),
        ("MRR@10", e.mrr10),
        ("selection precision", e.precision),
        ("selection recall", e.recall),
        ("selection F1", e.f1),
    ])?;
    let [right, wrong, refused] = e.outcomes();
    let mut confusions: BTreeMap<(String, String), usize> = BTreeMap::new();
    for q in e.queries.iter().filter(|q| q.outcome() == Outcome::Wrong) {
        let expected = q
            .expected
            .first()
            .cloned()
            .unwrap_or_else(|| "(nothing)".into());
        let answered = q.selected.first().cloned().unwrap_or_default();
        *confusions.entry((expected, answered)).or_default() += 1;
    }
    let mut confusions: Vec<((String, String), usize)> = confusions.into_iter().collect();
    confusions.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let message = |q: &Judged| -> Markup {
        html! {
            @if links { a href=(playground_link(&q.request)) { (q.request.text()) } }
            @else { (q.request.text()) }
        }
    };
    let doc = |kind: Kind, tenant: &str, id: &str| -> Markup {
        html! {
            @if links { a href=(doc_link(kind, tenant, id)) { (id) } } @else { (id) }
        }
    };
    Ok(html! {
        h2 { "Metrics over " (e.queries.len()) " judged messages" }
        p {
            span.ok { (right) " answered right" } ", " span.bad { (wrong) " answered wrong" } ", "
            span.bad { (refused) " refused" } " (first hit of the " (e.strategy) " selection)."
            " As in " code { "ruche eval" } ", each leg fetches at least 100 candidates; the playground fetches the configured number."
        }
        table {
            tr { th { "nDCG@10" } th { "recall@10" } th { "recall@100" } th { "MRR@10" } th { "selection" } th { "mean size" } th { "precision" } th { "recall" } th { "F1" } th { "latency p50 / p99" } }
            tr {
                td.n { (format!("{:.4}", e.ndcg10)) } td.n { (format!("{:.4}", e.recall10)) }
                td.n { (format!("{:.4}", e.recall100)) } td.n { (format!("{:.4}", e.mrr10)) }
                td { (e.strategy) } td.n { (format!("{:.2}", e.mean_size)) }
                td.n { (format!("{:.4}", e.precision)) } td.n { (format!("{:.4}", e.recall)) }
                td.n { (format!("{:.4}", e.f1)) } td.n { (format!("{:.2} / {:.2} ms", e.p50_ms, e.p99_ms)) }
            }
        }
        figure { (PreEscaped(bars)) }
        h2 { "Confusions" }
        @if confusions.is_empty() { p { "None: no message got another document first." } }
        @else {
            table {
                tr { th { "expected" } th { "answered instead" } th { "messages" } }
                @for ((expected, answered), n) in &confusions {
                    tr { td { (expected) } td { (answered) } td.n { (n) } }
                }
            }
        }
        h2 { "Answered wrong (" (wrong) ")" }
        @if wrong > 0 {
            table {
                tr { th { "id" } th { "message" } th { "expected" } th { "answered" } th { "score" } }
                @for q in e.queries.iter().filter(|q| q.outcome() == Outcome::Wrong) {
                    tr {
                        td { (q.id) } td { (message(q)) }
                        td { @if q.expected.is_empty() { "nothing (should refuse)" } @else { (doc(q.request.kind(), q.request.tenant_id(), &q.expected[0])) } }
                        td { (doc(q.request.kind(), q.request.tenant_id(), q.selected.first().map(String::as_str).unwrap_or_default())) }
                        td.n { (opt(q.first_score)) }
                    }
                    @if let Some(svg) = curves.get(&q.id) { tr { td colspan="5" { (PreEscaped(svg)) } } }
                }
            }
        }
        h2 { "Refused (" (refused) ")" }
        @if refused > 0 {
            table {
                tr { th { "id" } th { "message" } th { "expected" } th { "why" } }
                @for q in e.queries.iter().filter(|q| q.outcome() == Outcome::Refused) {
                    tr {
                        td { (q.id) } td { (message(q)) }
                        td { (doc(q.request.kind(), q.request.tenant_id(), &q.expected[0])) }
                        td { (q.abstention.as_deref().unwrap_or_default()) }
                    }
                    @if let Some(svg) = curves.get(&q.id) { tr { td colspan="4" { (PreEscaped(svg)) } } }
                }
            }
        }
    })
}
