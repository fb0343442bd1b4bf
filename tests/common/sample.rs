//! The bundled sample corpus (`index_data/`) loaded into an engine: shared by the
//! integration tests (`tests/it`) and the benchmarks (`benches/engine.rs`), dev-only.

use std::path::{Path, PathBuf};

use ruchedb::{Chunk, Engine, Rule, Scenario, Tool};

/// `index_data/`.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("index_data")
}

/// The records of `[[table]]` in the TOML file `index_data/FILE`.
pub fn toml_records<T: serde::de::DeserializeOwned>(file: &str, table: &str) -> Vec<T> {
    let text = std::fs::read_to_string(data_dir().join(file)).unwrap();
    let value: toml::Value = toml::from_str(&text).unwrap();
    value[table]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| serde_json::from_value(serde_json::to_value(r).unwrap()).unwrap())
        .collect()
}

/// The chunks of the JSONL file `index_data/FILE`.
pub fn chunks(file: &str) -> Vec<Chunk> {
    std::fs::read_to_string(data_dir().join(file))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The sample's rules.
pub fn rules() -> Vec<Rule> {
    toml_records("rules.toml", "rules")
}

/// A temporary engine with the whole sample: rules, scenarios, tools, the knowledge
/// base and the conversation, committed.
pub fn engine() -> Engine {
    engine_with(Engine::builder())
}

/// The sample index built by `builder` (an embedder of the test's choice).
pub fn engine_with(builder: ruchedb::EngineBuilder) -> Engine {
    let engine = builder.temporary().unwrap();
    engine.upsert_rules(rules()).unwrap();
    engine
        .upsert_scenarios(toml_records::<Scenario>("scenarios.toml", "scenarios"))
        .unwrap();
    engine
        .upsert_tools(toml_records::<Tool>("tools.toml", "tools"))
        .unwrap();
    engine.upsert_chunks(chunks("chunks.jsonl")).unwrap();
    engine.upsert_chunks(chunks("conversation.jsonl")).unwrap();
    engine.commit().unwrap();
    engine
}
