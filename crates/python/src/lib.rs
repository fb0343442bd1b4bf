//! The native module of the `ruchedb` Python package (`ruchedb._ruchedb`).
//!
//! A thin layer: records, requests and responses cross the boundary as JSON text (the
//! library's own record format, validated by it), and the Python package (`ruchedb/`)
//! turns them into dicts. Every call that touches the index releases the GIL.

use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use rand::SeedableRng;
use ruchedb::fusion::FusionSpec;
use ruchedb::policy::{Candidate, PolicyContext, PolicyRegistry};
use ruchedb::select::SelectionConfig;
use ruchedb::{
    Chunk, Config, Document, EmbedderSpecs, Engine, Kind, Rule, Scenario, SearchRequest, Timestamp,
    Tool, TurnRequest,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

create_exception!(
    _ruchedb,
    RucheError,
    PyException,
    "An error of the engine: `args` is `(message, kind)`, kind as in ruchedb's ErrorKind."
);

/// A library error as a Python exception.
fn py_err(err: ruchedb::Error) -> PyErr {
    RucheError::new_err((err.to_string(), err.kind().name()))
}

/// An error of the arguments themselves.
fn invalid(message: impl Into<String>) -> PyErr {
    RucheError::new_err((message.into(), "InvalidInput".to_string()))
}

fn json_err(what: &str, err: serde_json::Error) -> PyErr {
    invalid(format!("{what}: {err}"))
}

fn config_of(toml: Option<&str>) -> PyResult<Config> {
    match toml {
        Some(toml) => Config::from_toml(toml).map_err(py_err),
        None => Ok(Config::default()),
    }
}

/// A builder with the configuration `config_toml` and, when given, the embedders `spec`
/// (one spec, or `KIND=SPEC,...`).
fn builder(spec: Option<&str>, config_toml: Option<&str>) -> PyResult<ruchedb::EngineBuilder> {
    let mut builder = Engine::builder().with_config(config_of(config_toml)?);
    if let Some(spec) = spec {
        builder = builder.with_embedder_specs(spec.parse::<EmbedderSpecs>().map_err(py_err)?);
    }
    Ok(builder)
}

/// An open index.
#[pyclass(module = "ruchedb._ruchedb", name = "Engine")]
struct PyEngine {
    /// `None` once closed.
    engine: Mutex<Option<Engine>>,
}

impl PyEngine {
    fn new(engine: Engine) -> PyEngine {
        PyEngine {
            engine: Mutex::new(Some(engine)),
        }
    }

    /// Runs `f` on the open engine without the GIL.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Engine) -> ruchedb::Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let guard = self.engine.lock().unwrap_or_else(|p| p.into_inner());
            match guard.as_ref() {
                Some(engine) => f(engine).map_err(py_err),
                None => Err(invalid("the index is closed")),
            }
        })
    }
}

/// A turn as the Python package sends it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TurnArgs {
    #[serde(default)]
    text: String,
    tenant: Option<String>,
    agent: Option<String>,
    context: Option<String>,
    scenario: Option<String>,
    step: Option<String>,
    embedding: Option<Vec<f32>>,
    budget_tokens: Option<usize>,
    now: Option<Timestamp>,
    #[serde(default)]
    files: Vec<String>,
    #[serde(default)]
    rules: Vec<String>,
}

impl TurnArgs {
    fn into_request(self) -> ruchedb::Result<TurnRequest> {
        let mut request = TurnRequest::new(self.text);
        for file in self.files {
            request = request.with_file(file);
        }
        for rule in self.rules {
            request = request.with_rule(rule);
        }
        if let Some(tenant) = self.tenant {
            request = request.with_tenant(tenant);
        }
        if let Some(agent) = self.agent {
            request = request.with_agent(agent);
        }
        if let Some(context) = self.context {
            request = request.with_context(context);
        }
        match (self.scenario, self.step) {
            (Some(scenario), step) => {
                request = request.with_scenario(scenario);
                if let Some(step) = step {
                    request = request.with_step(step);
                }
            }
            (None, Some(_)) => {
                return Err(ruchedb::Error::invalid_input(
                    "a `step` needs its `scenario`",
                ));
            }
            (None, None) => {}
        }
        if let Some(embedding) = self.embedding {
            request = request.with_embedding(embedding);
        }
        if let Some(budget) = self.budget_tokens {
            request = request.with_budget_tokens(budget);
        }
        if let Some(now) = self.now {
            request = request.with_now(now);
        }
        Ok(request)
    }
}

/// A search request as the Python package sends it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestArgs {
    #[serde(default)]
    text: String,
    kind: String,
    tenant: Option<String>,
    agent: Option<String>,
    scenario: Option<String>,
    step: Option<String>,
    context: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    filters: Map<String, Value>,
    embedding: Option<Vec<f32>>,
    top_k: Option<usize>,
    max_k: Option<usize>,
    min_k: Option<usize>,
    max_candidates: Option<usize>,
    min_relevance: Option<f64>,
    strategy: Option<String>,
    #[serde(default)]
    strategy_params: Map<String, Value>,
    fusion: Option<String>,
    #[serde(default)]
    fusion_params: Map<String, Value>,
    adaptive: Option<bool>,
    chunk_weights: Option<ruchedb::chunk::ChunkWeights>,
    now: Option<Timestamp>,
    #[serde(default)]
    browse: bool,
    #[serde(default)]
    files: Vec<String>,
    #[serde(default)]
    rules: Vec<String>,
}

impl RequestArgs {
    fn into_request(self, config: &Config) -> ruchedb::Result<SearchRequest> {
        let kind: Kind = self.kind.parse()?;
        let mut r = SearchRequest::new(kind, self.text);
        for file in self.files {
            r = r.with_file(file);
        }
        for rule in self.rules {
            r = r.with_rule(rule);
        }
        if self.browse {
            r = r.browse();
        }
        if let Some(tenant) = self.tenant {
            r = r.with_tenant(tenant);
        }
        if let Some(agent) = self.agent {
            r = r.with_agent(agent);
        }
        if let Some(scenario) = self.scenario {
            r = r.with_scenario(scenario);
        }
        if let Some(step) = self.step {
            r = r.with_step(step);
        }
        if let Some(context) = self.context {
            r = r.with_context(context);
        }
        for tag in self.tags {
            r = r.with_tag(tag);
        }
        for (key, value) in self.filters {
            let value = match value {
                Value::String(s) => s,
                other => other.to_string(),
            };
            r = r.with_filter(key, value);
        }
        if let Some(embedding) = self.embedding {
            r = r.with_embedding(embedding);
        }
        if let Some(k) = self.top_k {
            r = r.with_top_k(k);
        }
        if let Some(k) = self.max_k {
            r = r.with_max_k(k);
        }
        if let Some(k) = self.min_k {
            r = r.with_min_k(k);
        }
        if let Some(n) = self.max_candidates {
            r = r.with_max_candidates(n);
        }
        if let Some(x) = self.min_relevance {
            r = r.with_min_relevance(x);
        }
        if let Some(name) = self.strategy {
            r = r.with_selection(SelectionConfig::from_params(&name, &self.strategy_params)?);
        }
        match self.fusion {
            Some(name) => r = r.with_fusion(FusionSpec::from_params(&name, &self.fusion_params)?),
            None if !self.fusion_params.is_empty() => {
                r = r.with_fusion(config.fusion.spec(kind).with_params(&self.fusion_params)?);
            }
            None => {}
        }
        if let Some(adaptive) = self.adaptive {
            r = r.with_adaptive(adaptive);
        }
        if let Some(weights) = self.chunk_weights {
            r = r.with_chunk_weights(weights);
        }
        if let Some(now) = self.now {
            r = r.with_now(now);
        }
        Ok(r)
    }
}

/// A document of `kind` from its JSON record.
fn document(kind: Kind, json: &str) -> Result<Document, serde_json::Error> {
    Ok(match kind {
        Kind::Rule => Document::Rule(serde_json::from_str::<Rule>(json)?),
        Kind::Chunk => Document::Chunk(serde_json::from_str::<Chunk>(json)?),
        Kind::Scenario => Document::Scenario(serde_json::from_str::<Scenario>(json)?),
        Kind::Tool => Document::Tool(serde_json::from_str::<Tool>(json)?),
    })
}

#[pymethods]
impl PyEngine {
    /// Creates an index in `path` (missing or empty), with `embedder` (`default`,
    /// `none`, `static:DIR`, `bert:DIR`; by default the bundled model) and the
    /// configuration `config_toml`.
    #[staticmethod]
    #[pyo3(signature = (path, embedder=None, config_toml=None))]
    fn create(
        py: Python<'_>,
        path: PathBuf,
        embedder: Option<&str>,
        config_toml: Option<&str>,
    ) -> PyResult<PyEngine> {
        let builder = builder(embedder, config_toml)?;
        py.detach(|| builder.create(path).map(PyEngine::new).map_err(py_err))
    }

    /// Opens the index in `path`, waiting up to `wait` seconds for another process.
    #[staticmethod]
    #[pyo3(signature = (path, wait=0.0, config_toml=None))]
    fn open(
        py: Python<'_>,
        path: PathBuf,
        wait: f64,
        config_toml: Option<&str>,
    ) -> PyResult<PyEngine> {
        let config = config_of(config_toml)?;
        if !(0.0..=86_400.0).contains(&wait) {
            return Err(invalid(format!(
                "`wait` must be 0 to 86400 seconds, got {wait}"
            )));
        }
        py.detach(|| {
            Engine::builder()
                .with_config(config)
                .with_wait(std::time::Duration::from_secs_f64(wait))
                .open(path)
                .map(PyEngine::new)
                .map_err(py_err)
        })
    }

    /// An index in a temporary directory, removed when it is closed.
    #[staticmethod]
    #[pyo3(signature = (embedder=None, config_toml=None))]
    fn temporary(
        py: Python<'_>,
        embedder: Option<&str>,
        config_toml: Option<&str>,
    ) -> PyResult<PyEngine> {
        let builder = builder(embedder, config_toml)?;
        py.detach(|| builder.temporary().map(PyEngine::new).map_err(py_err))
    }

    /// Buffers documents of `kind`, each a JSON record; nothing is buffered when one is
    /// invalid (the error names its position and field).
    fn upsert(&self, py: Python<'_>, kind: &str, records: Vec<String>) -> PyResult<()> {
        let kind: Kind = kind.parse().map_err(py_err)?;
        let docs = records
            .iter()
            .enumerate()
            .map(|(i, json)| document(kind, json).map_err(|e| json_err(&format!("{kind} {i}"), e)))
            .collect::<PyResult<Vec<_>>>()?;
        self.with(py, |engine| engine.upsert(docs))
    }

    /// Buffers the deletion of one document.
    #[pyo3(signature = (kind, id, tenant=None))]
    fn delete(&self, py: Python<'_>, kind: &str, id: &str, tenant: Option<&str>) -> PyResult<()> {
        let kind: Kind = kind.parse().map_err(py_err)?;
        let tenant = tenant.unwrap_or(ruchedb::DEFAULT_TENANT);
        self.with(py, |engine| {
            engine.delete(kind, tenant, id);
            Ok(())
        })
    }

    /// Brings the index in line with the Markdown and text files under `paths`
    /// (`Engine::sync`); returns the report as JSON.
    #[pyo3(signature = (paths, tenant=None, agent=None, chunk_tokens=None, dry_run=false))]
    fn sync(
        &self,
        py: Python<'_>,
        paths: Vec<std::path::PathBuf>,
        tenant: Option<String>,
        agent: Option<String>,
        chunk_tokens: Option<usize>,
        dry_run: bool,
    ) -> PyResult<String> {
        let mut options = ruchedb::engine::SyncOptions::default().with_dry_run(dry_run);
        if let Some(tenant) = tenant {
            options = options.with_tenant(tenant);
        }
        if let Some(agent) = agent {
            options = options.with_agent(agent);
        }
        if let Some(tokens) = chunk_tokens {
            options = options.with_chunk_tokens(tokens);
        }
        let report = self.with(py, |engine| engine.sync(&paths, &options))?;
        serde_json::to_string(&report).map_err(|e| invalid(e.to_string()))
    }

    /// Makes the buffered changes durable and visible; returns how many.
    fn commit(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, Engine::commit)
    }

    /// Runs a search given as JSON; returns the response as JSON.
    fn search(&self, py: Python<'_>, request: &str) -> PyResult<String> {
        let args: RequestArgs =
            serde_json::from_str(request).map_err(|e| json_err("search request", e))?;
        self.with(py, |engine| {
            let request = args.into_request(engine.config())?;
            let response = engine.search(&request)?;
            let mut value = serde_json::to_value(&response).map_err(|e| {
                ruchedb::Error::invalid_input(format!("cannot serialise the response: {e}"))
            })?;
            value["abstained"] = response
                .gate
                .abstention_reason()
                .map_or(Value::Null, Value::from);
            Ok(value.to_string())
        })
    }

    /// One turn (the scenario, rules, memory and tools of a message), as JSON, with the
    /// rendered block under `prompt`.
    fn turn(&self, py: Python<'_>, request: &str) -> PyResult<String> {
        let args: TurnArgs =
            serde_json::from_str(request).map_err(|e| json_err("turn request", e))?;
        self.with(py, |engine| {
            let turn = engine.turn(&args.into_request()?)?;
            let mut value = serde_json::to_value(&turn).map_err(|e| {
                ruchedb::Error::invalid_input(format!("cannot serialise the turn: {e}"))
            })?;
            value["prompt"] = turn.render().into();
            Ok(value.to_string())
        })
    }

    /// One document by kind, tenant and id, as JSON (`None` when there is none).
    #[pyo3(signature = (kind, id, tenant=None))]
    fn get(
        &self,
        py: Python<'_>,
        kind: &str,
        id: &str,
        tenant: Option<&str>,
    ) -> PyResult<Option<String>> {
        let kind: Kind = kind.parse().map_err(py_err)?;
        let tenant = tenant.unwrap_or(ruchedb::DEFAULT_TENANT);
        let doc = self.with(py, |engine| engine.get(kind, tenant, id))?;
        Ok(doc.map(|doc| serde_json::to_string(&doc).unwrap_or_default()))
    }

    /// Records whether search `query_id` was useful; returns the feedback window as JSON.
    fn feedback(&self, py: Python<'_>, query_id: &str, useful: bool) -> PyResult<String> {
        let window = self.with(py, |engine| engine.feedback(query_id, useful))?;
        let factors = window.factors();
        Ok(json!({
            "records": window.entries().len(),
            "factors": {"text": factors.text, "vector": factors.vector, "graph": factors.graph},
        })
        .to_string())
    }

    /// Counts and state of the index, as JSON.
    fn stats(&self, py: Python<'_>) -> PyResult<String> {
        let stats = self.with(py, |engine| Ok(engine.stats()))?;
        Ok(serde_json::to_string(&stats).unwrap_or_default())
    }

    /// Closes the index (committed data is durable; buffered changes are dropped).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| {
            let engine = self.engine.lock().unwrap_or_else(|p| p.into_inner()).take();
            match engine {
                Some(engine) => engine.close().map_err(py_err),
                None => Ok(()),
            }
        })
    }
}

/// Lets action-selection policy `policy` (with `params` as JSON) choose among
/// `candidates` (JSON: seed 002's dicts, or search hits as the package converts them);
/// returns `{"chosen": index, "ranking": [[index, score], ...]}` as JSON.
#[pyfunction]
#[pyo3(signature = (candidates, policy, params="{}", seed=0))]
fn select_action(candidates: &str, policy: &str, params: &str, seed: u64) -> PyResult<String> {
    let candidates: Vec<Candidate> =
        serde_json::from_str(candidates).map_err(|e| json_err("candidates", e))?;
    let params: Map<String, Value> =
        serde_json::from_str(params).map_err(|e| json_err("policy params", e))?;
    let mut policy = PolicyRegistry::new()
        .get_action(policy, &params)
        .map_err(py_err)?;
    if candidates.is_empty() {
        return Ok(json!({"chosen": null, "ranking": []}).to_string());
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut ctx = PolicyContext::new(&mut rng);
    let position = |c: &Candidate| {
        candidates
            .iter()
            .position(|x| std::ptr::eq(x, c))
            .unwrap_or_default()
    };
    let ranking: Vec<(usize, f64)> = policy
        .rank(&candidates, &ctx)
        .map_err(py_err)?
        .into_iter()
        .map(|(c, score)| (position(c), score))
        .collect();
    let chosen = position(policy.select(&candidates, &mut ctx).map_err(py_err)?);
    Ok(json!({"chosen": chosen, "ranking": ranking}).to_string())
}

/// The candidate of a search hit (JSON in, JSON out): what `Candidate::from_hit` makes.
#[pyfunction]
fn candidate_of_hit(id: &str, kind: &str, record: &str, score: f64) -> PyResult<String> {
    let kind: Kind = kind.parse().map_err(py_err)?;
    let doc = document(kind, record).map_err(|e| json_err("document", e))?;
    let candidate = Candidate::from_document(id, &doc, score);
    Ok(serde_json::to_string(&candidate).unwrap_or_default())
}

#[pymodule]
fn _ruchedb(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEngine>()?;
    m.add_function(wrap_pyfunction!(select_action, m)?)?;
    m.add_function(wrap_pyfunction!(candidate_of_hit, m)?)?;
    m.add("RucheError", m.py().get_type::<RucheError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
