//! `ruche demo`: the bundled sample corpus, indexed and queried.
//!
//! The corpus (`index_data/`) is compiled into the binary, so the demo runs from any
//! directory without files.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use ruchedb::{Config, Engine};

use crate::args::DemoArgs;
use crate::input::{QueryDefaults, QueryLine};
use crate::output;

const RULES: &str = include_str!("../../../index_data/rules.toml");
const CHUNKS: &str = include_str!("../../../index_data/chunks.jsonl");
const CONVERSATION: &str = include_str!("../../../index_data/conversation.jsonl");
const QUERIES: &str = include_str!("../../../index_data/queries.jsonl");
const SCENARIOS: &str = include_str!("../../../index_data/scenarios.toml");
const TOOLS: &str = include_str!("../../../index_data/tools.toml");
/// The sample's documentation folder and its rules in the coding agents' formats, synced
/// by the demo: (its path, text).
const FILES: [(&str, &str); 9] = [
    (
        "index_data/rules/.continue/rules/invoices.md",
        include_str!("../../../index_data/rules/.continue/rules/invoices.md"),
    ),
    (
        "index_data/rules/.cursor/rules/angry-customer.mdc",
        include_str!("../../../index_data/rules/.cursor/rules/angry-customer.mdc"),
    ),
    (
        "index_data/rules/.windsurf/rules/sign-off.md",
        include_str!("../../../index_data/rules/.windsurf/rules/sign-off.md"),
    ),
    (
        "index_data/rules/AGENTS.md",
        include_str!("../../../index_data/rules/AGENTS.md"),
    ),
    (
        "index_data/rules/skills/return-label/SKILL.md",
        include_str!("../../../index_data/rules/skills/return-label/SKILL.md"),
    ),
    (
        "index_data/docs/app/troubleshooting.md",
        include_str!("../../../index_data/docs/app/troubleshooting.md"),
    ),
    (
        "index_data/docs/glossary.txt",
        include_str!("../../../index_data/docs/glossary.txt"),
    ),
    (
        "index_data/docs/handbook/shipping.md",
        include_str!("../../../index_data/docs/handbook/shipping.md"),
    ),
    (
        "index_data/docs/handbook/warranty.md",
        include_str!("../../../index_data/docs/handbook/warranty.md"),
    ),
];

/// The `[[KEY]]` entries of a bundled TOML file.
fn parse_toml<T: serde::de::DeserializeOwned>(text: &str, key: &str, name: &str) -> Result<Vec<T>> {
    let mut file: std::collections::BTreeMap<String, Vec<T>> =
        toml::from_str(text).with_context(|| format!("index_data/{name}"))?;
    file.remove(key)
        .with_context(|| format!("index_data/{name}: no [[{key}]]"))
}

fn parse_jsonl<T: serde::de::DeserializeOwned>(text: &str, name: &str) -> Result<Vec<T>> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(idx, line)| {
            serde_json::from_str(line).with_context(|| format!("{name}: line {}", idx + 1))
        })
        .collect()
}

pub fn run(config: &Config, args: &DemoArgs) -> Result<ExitCode> {
    let rules: Vec<ruchedb::Rule> = parse_toml(RULES, "rules", "rules.toml")?;
    let mut chunks: Vec<ruchedb::Chunk> = parse_jsonl(CHUNKS, "index_data/chunks.jsonl")?;
    chunks.extend(parse_jsonl::<ruchedb::Chunk>(
        CONVERSATION,
        "index_data/conversation.jsonl",
    )?);
    let scenarios: Vec<ruchedb::Scenario> = parse_toml(SCENARIOS, "scenarios", "scenarios.toml")?;
    let tools: Vec<ruchedb::Tool> = parse_toml(TOOLS, "tools", "tools.toml")?;
    let queries: Vec<QueryLine> = parse_jsonl(QUERIES, "index_data/queries.jsonl")?;

    let temp;
    let dir = match &args.dir {
        Some(dir) => {
            if dir.join("store").exists() {
                bail!(
                    "{} already holds an index; the demo builds a fresh one",
                    dir.display()
                );
            }
            dir.clone()
        }
        None => {
            temp = tempfile::Builder::new().prefix("ruche-demo-").tempdir()?;
            temp.path().join("index")
        }
    };
    let mut out = BufWriter::new(std::io::stdout().lock());
    writeln!(out, "# ruche demo")?;
    writeln!(
        out,
        "Indexing {} rules, {} chunks, {} scenarios and {} tools of the sample corpus (a customer-support agent) into {}",
        rules.len(),
        chunks.len(),
        scenarios.len(),
        tools.len(),
        dir.display()
    )?;
    let engine = Engine::builder().with_config(config.clone()).create(&dir)?;
    engine.upsert_rules(rules)?;
    engine.upsert_chunks(chunks)?;
    engine.upsert_scenarios(scenarios)?;
    engine.upsert_tools(tools)?;
    engine.commit()?;
    engine.sync_graph()?;
    let stats = engine.stats();
    writeln!(
        out,
        "Indexed: {} rules, {} chunks, {} scenarios, {} tools, {} tenants; vectors: {}\n",
        stats.rules,
        stats.chunks,
        stats.scenarios,
        stats.tools,
        stats.tenants,
        crate::output::vector_spaces(&stats)
    )?;

    for query in &queries {
        let request = query.to_request(&QueryDefaults::default())?;
        let response = engine.search(&request)?;
        writeln!(
            out,
            "## {}",
            query.id.as_str().unwrap_or(&query.id.to_string())
        )?;
        if let Some(note) = &query.note {
            writeln!(out, "{note}")?;
        }
        let mut context = vec![format!("{}s", request.kind())];
        for (name, value) in [
            ("tenant", query.tenant_id.as_deref()),
            ("agent", query.agent_id.as_deref()),
            ("scenario", query.scenario_id.as_deref()),
            ("step", query.step_id.as_deref()),
            ("context", query.context_id.as_deref()),
        ] {
            if let Some(value) = value {
                context.push(format!("{name}={value}"));
            }
        }
        writeln!(
            out,
            "query: {:?} [{}]",
            query.text.as_deref().unwrap_or_default(),
            context.join(", ")
        )?;
        output::write_table(&mut out, &response, true)?;
        // Tools found, then a policy chooses one: the two calls of an agent's tool use.
        if request.kind() == ruchedb::Kind::Tool {
            crate::commands::apply_policy("greedy", &[], 0, &response)?.write(&mut out)?;
        }
        writeln!(out)?;
    }

    // One turn: the scenario, rules, memory and tools of a message in one call.
    let message = "I want to return the boots I bought, they are too small";
    writeln!(out, "## one-turn")?;
    writeln!(
        out,
        "Everything an agent needs for one message in one call (`ruche turn`): the scenario it activates, the rules inside it, what memory holds and the tools that fit, rendered as a prompt block within a budget of 300 tokens."
    )?;
    writeln!(out, "message: {message:?} [budget 300 tokens]")?;
    let turn = engine.turn(
        &ruchedb::TurnRequest::new(message)
            .with_budget_tokens(300)
            .with_now("2026-11-21T12:00:00Z".parse()?),
    )?;
    output::write_turn(&mut out, &turn, false)?;
    writeln!(out, "\nthe rendered block:\n{}", turn.render())?;

    // Documents kept in files: the sample's docs folder, synced (written out first: the
    // demo carries it compiled in).
    writeln!(out, "\n## sync")?;
    writeln!(
        out,
        "A folder of Markdown and text files kept in sync (`ruche sync DIR docs`): each file cut into chunks that remember their lines and headings; a second sync of the same files changes nothing."
    )?;
    let tree = tempfile::Builder::new()
        .prefix("ruche-demo-docs-")
        .tempdir()?;
    for (name, text) in FILES {
        let name = name
            .strip_prefix("index_data/")
            .expect("a file of the sample");
        let path = tree.path().join(name);
        std::fs::create_dir_all(path.parent().expect("a file of a folder"))?;
        std::fs::write(path, text)?;
    }
    let options = ruchedb::engine::SyncOptions::default().with_base(tree.path());
    let first = engine.sync(&["docs"], &options)?;
    let again = engine.sync(&["docs"], &options)?;
    writeln!(
        out,
        "sync docs: {} files added, {} chunks; again: {} changes, {} unchanged",
        first.added,
        first.documents_written,
        again.changes(),
        again.unchanged
    )?;
    let question = "the courier wants me to pay import duties before he hands over my parcel";
    writeln!(out, "query: {question:?} [chunks]")?;
    let response = engine.search(&ruchedb::SearchRequest::chunks(question).with_top_k(3))?;
    output::write_table(&mut out, &response, true)?;

    // Rules kept where coding agents keep them: each applies as its format says.
    writeln!(out, "\n## rule-files")?;
    writeln!(
        out,
        "Rules in the coding agents' formats (`ruche sync DIR rules`: Cursor, Windsurf, Continue, AGENTS.md, an Agent Skill), each applied as its format says: always, by description, by the file the agent works on, or by name."
    )?;
    let rules = engine.sync(&["rules"], &options)?;
    writeln!(
        out,
        "sync rules: {} files added, {} rules and skills",
        rules.added, rules.documents_written
    )?;
    let message = "I attached the invoice, why is there no VAT number on it?";
    writeln!(
        out,
        "message: {message:?} [file invoices/INV-2291.pdf, budget 300 tokens]"
    )?;
    let turn = engine.turn(
        &ruchedb::TurnRequest::new(message)
            .with_file("invoices/INV-2291.pdf")
            .with_budget_tokens(300)
            .with_now("2026-11-21T12:00:00Z".parse()?),
    )?;
    writeln!(out, "the rendered block:\n{}", turn.render())?;
    out.flush()?;
    engine.close()?;
    Ok(ExitCode::SUCCESS)
}
