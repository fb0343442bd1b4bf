//! One call per turn of a conversation: the scenario, the rules, the memory and the tools
//! an agent needs for one message, within a token budget.
//!
//! A turn prepares its message once (the query vector and the query analysis) and runs
//! four searches through the same pipeline as [`search_with`](crate::rank::search_with),
//! each with its own gate and selection:
//!
//! 1. **scenarios**: without an active scenario, the best scenario of the message is
//!    activated when its relevance reaches `turn.scenario_confidence` ("detected");
//!    with one, it is kept unless the message clearly leaves it: another scenario is the
//!    best, is selected, reaches that confidence, and the active one is not selected and
//!    has a relevance at least `turn.switch_margin` below the best's and, when a step is
//!    active, below the relevance gate ("switched");
//! 2. **rules**, matched inside the active scenario and step;
//! 3. **memory**: chunks, within the conversation's context when the turn names one;
//! 4. **tools**.
//!
//! The budget is shared: the scenario line first, then the rules applied whatever their
//! relevance ([`Apply`](crate::Apply): always, by a named file, by name), then rules of
//! at least `turn.keep_priority`, then the parts in the order of `turn.order` (rules,
//! memory, tools by default), each part its hits best first until the next one does not
//! fit; what does not fit is cut and counted, except a rule's body, which is cut to the
//! lines that fit and ends with `[…cut to the budget]`. Tokens are counted ([`count_tokens`](crate::count_tokens)) over the block
//! [`TurnResponse::render`] writes, which never exceeds the budget.
//!
//! # The rendered block
//!
//! One line per item, a heading line per part that has items, parts in this order,
//! `\n` after every line:
//!
//! ```text
//! Scenario: <name> (<id>, step <step>): <description>
//! Rules to follow:
//! - <condition>: <action>
//!   <body line>
//! Known from memory:
//! - [<YYYY-MM-DD>] <speaker>: <content>
//! Tools that fit:
//! - <name>: <description> Parameters: <JSON schema>
//! ```
//!
//! A rule's body ([`Rule::body`](crate::Rule::body)) follows its line, each line
//! indented by two spaces (a rule with a body and no action reads `- <condition>:`). The
//! scenario line names the active scenario (`Scenario: <id>` when the turn did not
//! retrieve it, `, step <step>` only with one); a memory line has its date only when the
//! chunk has a `created_at` and its speaker only when the chunk's `metadata` has a
//! `speaker` string that its content does not already start with (`Caroline: ...`), and
//! a chunk cut from a file says where after them (`(docs/install.md:12-14, Install ›
//! Linux) `); a tool line has its parameters only when it has some, and a skill the path
//! to load it from (`(load skills/x/SKILL.md)`).
//! Whitespace inside a field is collapsed to single spaces.

use std::time::Instant;

use serde::Serialize;

use crate::config::{Config, TurnPart};
use crate::embed::Embedders;
use crate::model::doc::{DEFAULT_TENANT, Document};
use crate::model::leg::PerLeg;
use crate::model::time::Timestamp;
use crate::model::time::micros;
use crate::query::{Hit, SearchRequest, SearchResponse, SelectionSummary};
use crate::rank::{PreparedQuery, Searcher, search_with_id};
use crate::retrieve::Retriever;
use crate::tokens::{TOKEN_ENCODING, count_segment};
use crate::{Error, Kind, Result};

/// One turn: the message, who sends it, the conversation and the agent's state.
///
/// # Example
///
/// ```
/// use ruchedb::{SearchRequest, TurnRequest};
///
/// let turn = TurnRequest::new("I want my money back")
///     .with_tenant("acme")
///     .with_context("conversation-42")
///     .with_budget_tokens(500)
///     .with_options(SearchRequest::tools("").with_max_k(3));
/// assert_eq!(turn.text(), "I want my money back");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRequest {
    pub(crate) text: String,
    pub(crate) embedding: Option<Vec<f32>>,
    pub(crate) tenant_id: String,
    pub(crate) agent_id: Option<String>,
    pub(crate) context_id: Option<String>,
    pub(crate) scenario_id: Option<String>,
    pub(crate) step_id: Option<String>,
    pub(crate) budget_tokens: Option<usize>,
    pub(crate) now: Option<Timestamp>,
    /// Per kind ([`Kind::index`]): the settings of that part's search.
    pub(crate) options: [Option<SearchRequest>; 4],
    pub(crate) files: Vec<String>,
    pub(crate) named: Vec<String>,
}

impl TurnRequest {
    /// A turn of the default tenant, with no active scenario, no context and no budget.
    pub fn new(text: impl Into<String>) -> TurnRequest {
        TurnRequest {
            text: text.into(),
            embedding: None,
            tenant_id: DEFAULT_TENANT.to_string(),
            agent_id: None,
            context_id: None,
            scenario_id: None,
            step_id: None,
            budget_tokens: None,
            now: None,
            options: [None, None, None, None],
            files: Vec::new(),
            named: Vec::new(),
        }
    }

    /// The message's own vector (the engine then embeds nothing).
    #[must_use]
    pub fn with_embedding(mut self, embedding: Vec<f32>) -> TurnRequest {
        self.embedding = Some(embedding);
        self
    }

    /// The tenant.
    #[must_use]
    pub fn with_tenant(mut self, tenant_id: impl Into<String>) -> TurnRequest {
        self.tenant_id = tenant_id.into();
        self
    }

    /// The agent: documents restricted to other agents are left out.
    #[must_use]
    pub fn with_agent(mut self, agent_id: impl Into<String>) -> TurnRequest {
        self.agent_id = Some(agent_id.into());
        self
    }

    /// The conversation: memory is searched within this context.
    #[must_use]
    pub fn with_context(mut self, context_id: impl Into<String>) -> TurnRequest {
        self.context_id = Some(context_id.into());
        self
    }

    /// The scenario the agent has active (kept unless the message clearly leaves it).
    #[must_use]
    pub fn with_scenario(mut self, scenario_id: impl Into<String>) -> TurnRequest {
        self.scenario_id = Some(scenario_id.into());
        self
    }

    /// The active step of the active scenario.
    #[must_use]
    pub fn with_step(mut self, step_id: impl Into<String>) -> TurnRequest {
        self.step_id = Some(step_id.into());
        self
    }

    /// The most tokens the rendered block may take ([`TurnResponse::render`]).
    #[must_use]
    pub fn with_budget_tokens(mut self, tokens: usize) -> TurnRequest {
        self.budget_tokens = Some(tokens);
        self
    }

    /// A file the agent is working on: the rules for it apply
    /// ([`SearchRequest::with_file`]). Repeatable.
    #[must_use]
    pub fn with_file(mut self, path: impl Into<String>) -> TurnRequest {
        self.files.push(path.into());
        self
    }

    /// A rule to apply whatever its relevance, by id or name
    /// ([`SearchRequest::with_rule`]). Repeatable.
    #[must_use]
    pub fn with_rule(mut self, name: impl Into<String>) -> TurnRequest {
        self.named.push(name.into());
        self
    }

    /// The time filters and recency are evaluated at (default: now).
    #[must_use]
    pub fn with_now(mut self, now: Timestamp) -> TurnRequest {
        self.now = Some(now);
        self
    }

    /// The settings of one part's search: `request`'s kind says which part
    /// (scenarios, rules, chunks for memory, tools). Every setting applies (selection,
    /// `top_k`, tags, filters, fusion...) except those the turn sets: the text, the
    /// vector, the tenant, the agent, the time, the scenario and step (rules) and the
    /// context (memory).
    #[must_use]
    pub fn with_options(mut self, request: SearchRequest) -> TurnRequest {
        let at = request.kind.index();
        self.options[at] = Some(request);
        self
    }

    /// The message.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The tenant.
    pub fn tenant_id(&self) -> &str {
        &self.tenant_id
    }

    /// The budget, if any.
    pub fn budget(&self) -> Option<usize> {
        self.budget_tokens
    }

    /// The single-kind search a turn runs for `kind`, to run one part again or explain
    /// it: the part's options with the turn's message, tenant, agent and (memory) context;
    /// for rules, the scenario and step that `scenario` decided. Without [`now`](Self::with_now)
    /// on the turn, the search's `now` is when it is built.
    ///
    /// ```
    /// use ruchedb::{Engine, Kind, TurnRequest};
    ///
    /// let engine = Engine::builder().temporary()?;
    /// let request = TurnRequest::new("where is my parcel?").with_now("2026-11-28T12:00:00Z".parse()?);
    /// let turn = engine.turn(&request)?;
    /// let rules = engine.search(&request.search_request(Kind::Rule, &turn.scenario))?;
    /// assert_eq!(rules.hits.len(), turn.rules.hits.len());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn search_request(&self, kind: Kind, scenario: &TurnScenario) -> SearchRequest {
        self.decided_part(kind, self.now.unwrap_or_else(Timestamp::now), scenario)
    }

    /// The search of one part once the scenario is decided: rules inside it.
    fn decided_part(&self, kind: Kind, now: Timestamp, scenario: &TurnScenario) -> SearchRequest {
        let mut request = self.part(kind, now);
        if kind == Kind::Rule {
            request.scenario_id.clone_from(&scenario.active);
            request.step_id.clone_from(&scenario.step);
        }
        request
    }

    /// The search of one part: its options with what the turn sets.
    fn part(&self, kind: Kind, now: Timestamp) -> SearchRequest {
        let mut request = self.options[kind.index()]
            .clone()
            .unwrap_or_else(|| SearchRequest::new(kind, ""));
        request.kind = kind;
        request.text.clone_from(&self.text);
        request.embedding.clone_from(&self.embedding);
        request.tenant_id.clone_from(&self.tenant_id);
        request.agent_id.clone_from(&self.agent_id);
        request.now = Some(now);
        request.scenario_id = None;
        request.step_id = None;
        request.context_id = None;
        if kind == Kind::Chunk {
            request.context_id.clone_from(&self.context_id);
        }
        if kind == Kind::Rule {
            request.files.extend(self.files.iter().cloned());
            request.named.extend(self.named.iter().cloned());
        }
        request
    }
}

/// How the turn's scenario was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Activation {
    /// No scenario is active: none was given, and none was confident enough.
    None,
    /// The agent's active scenario is kept.
    Kept,
    /// No scenario was active, and the message's best scenario was confident enough.
    Detected,
    /// The message clearly left the active scenario for another one.
    Switched,
}

/// The turn's scenario: the scenario search, and what the turn made of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TurnScenario {
    /// The scenario search (its hits are the scenarios of the message).
    pub search: SearchResponse,
    /// The scenario the rules were matched in; `None`: global rules only.
    pub active: Option<String>,
    /// The active step (only when the agent's scenario is kept).
    pub step: Option<String>,
    /// How `active` was decided.
    pub activation: Activation,
    /// The scenario the agent had active, when the message left it.
    pub left: Option<String>,
    /// The relevance of the scenario detected or switched to.
    pub confidence: Option<f64>,
}

/// What the budget did to one part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[non_exhaustive]
pub struct PartBudget {
    /// Tokens of its lines in the block (its heading included).
    pub tokens: usize,
    /// Hits kept.
    pub kept: usize,
    /// Hits the budget cut (selected, but not rendered).
    pub cut: usize,
}

/// The token accounting of a turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct TurnBudget {
    /// The budget; `None`: nothing was cut.
    pub limit: Option<usize>,
    /// Tokens of the rendered block.
    pub used: usize,
    /// The tokenizer the tokens are counted with.
    pub tokenizer: &'static str,
    /// The order the parts spent the budget in.
    pub order: Vec<TurnPart>,
    /// Whether the scenario line fitted (`false` also when there is none).
    pub scenario_line: bool,
    /// The rules' part.
    pub rules: PartBudget,
    /// The memory's part.
    pub memory: PartBudget,
    /// The tools' part.
    pub tools: PartBudget,
}

/// Time spent in each part of a turn, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[non_exhaustive]
pub struct TurnTimings {
    /// Embedding the message (once).
    pub embed_us: u64,
    /// The scenario search.
    pub scenarios_us: u64,
    /// The rules search.
    pub rules_us: u64,
    /// The memory search.
    pub memory_us: u64,
    /// The tools search.
    pub tools_us: u64,
    /// Rendering and counting the block.
    pub budget_us: u64,
    /// The whole turn (the memory search runs beside the scenario, rules and tools
    /// searches on the local index).
    pub total_us: u64,
}

/// The result of [`Engine::turn`](crate::Reader::turn): what the agent needs for one
/// message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TurnResponse {
    /// A unique id of the turn, about 75 characters: feedback on it
    /// ([`Engine::feedback`](crate::Engine::feedback)) credits each part that had hits
    /// (each part's own `query_id` is made from it).
    pub turn_id: String,
    /// The scenario.
    pub scenario: TurnScenario,
    /// The rules to follow, within the budget.
    pub rules: SearchResponse,
    /// What is known from memory, within the budget.
    pub memory: SearchResponse,
    /// The tools that fit, within the budget.
    pub tools: SearchResponse,
    /// What the budget did.
    pub budget: TurnBudget,
    /// Time per part.
    pub timings: TurnTimings,
}

impl TurnResponse {
    /// The part's response.
    pub fn part(&self, part: TurnPart) -> &SearchResponse {
        match part {
            TurnPart::Rules => &self.rules,
            TurnPart::Memory => &self.memory,
            TurnPart::Tools => &self.tools,
        }
    }

    /// Whether the turn found nothing for the message: no scenario, no rule, no memory,
    /// no tool.
    pub fn is_empty(&self) -> bool {
        self.scenario.active.is_none()
            && self.rules.hits.is_empty()
            && self.memory.hits.is_empty()
            && self.tools.hits.is_empty()
    }

    /// The prompt-ready block (see the [module docs](crate::turn) for its format): within
    /// the budget, and what the budget counted.
    pub fn render(&self) -> String {
        let mut block = Block::default();
        if self.budget.scenario_line
            && let Some(line) = scenario_line(&self.scenario)
        {
            block.scenario = Some(line);
        }
        for part in TurnPart::ALL {
            for hit in &self.part(part).hits {
                block.lines[part_index(part)].push(line_of(hit));
            }
        }
        block.text()
    }
}

/// The searches' query ids a turn id of an earlier version listed (`turn-…~q…~q…`),
/// still credited by feedback; `None` for any other id.
pub(crate) fn listed_part_ids(id: &str) -> Option<Vec<&str>> {
    let mut parts = id.split('~');
    let own = parts.next()?;
    (own.starts_with("turn-") && id.contains('~')).then(|| parts.collect())
}

/// The whole turn over any retriever, one search after another: what the Milvus backend
/// runs. [`Engine::turn`](crate::Reader::turn) is this over the local index, with the
/// memory search beside the scenario, rules and tools searches, and feedback.
///
/// # Errors
///
/// As [`search_with`](crate::rank::search_with), for the turn's searches; an invalid
/// turn ([`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput)): a step without its
/// scenario, an empty tenant.
pub fn turn_with(
    retriever: &(impl Retriever + Sync + ?Sized),
    config: &Config,
    request: &TurnRequest,
    embedders: &Embedders,
) -> Result<TurnResponse> {
    let plain = |_: Kind, base: String, _: Option<&Hit>| base;
    let run = Run {
        config,
        embedders,
        factors: &|_| None,
        query_id: &plain,
        embedded: &|| {},
        turn_id: &|base, _| base.to_string(),
        beside: false,
    };
    run.turn(retriever, request)
}

/// Feedback factors of a kind's searches.
pub(crate) type Factors<'a> = &'a (dyn Fn(Kind) -> Option<PerLeg<f64>> + Sync);

/// Query ids of a kind's searches, from the base id and the top hit.
pub(crate) type QueryIds<'a> = &'a (dyn Fn(Kind, String, Option<&Hit>) -> String + Sync);

/// A turn's id from its base id and its parts' top hits, in [`TURN_PARTS`] order.
pub(crate) type TurnIds<'a> = &'a (dyn Fn(&str, [Option<&Hit>; 4]) -> String + Sync);

/// The kinds of a turn's parts, in the order its id lists them.
pub(crate) const TURN_PARTS: [Kind; 4] = [Kind::Scenario, Kind::Rule, Kind::Chunk, Kind::Tool];

/// The base id of a turn's search of `kind`: the turn's base id (`q…`) and a letter, so
/// that the turn id names its parts without listing them.
pub(crate) fn part_base(base: &str, kind: Kind) -> String {
    let letter = match kind {
        Kind::Scenario => 's',
        Kind::Rule => 'r',
        Kind::Chunk => 'm',
        Kind::Tool => 't',
    };
    format!("{base}.{letter}")
}

/// A turn's settings beyond its request.
pub(crate) struct Run<'a> {
    pub(crate) config: &'a Config,
    pub(crate) embedders: &'a Embedders,
    pub(crate) factors: Factors<'a>,
    pub(crate) query_id: QueryIds<'a>,
    /// Called once for each embedding of the message (counted by the local index).
    pub(crate) embedded: &'a (dyn Fn() + Sync),
    /// The turn's id, from its own base id (`turn-…`) and each part's top hit
    /// (scenarios, rules, memory, tools).
    pub(crate) turn_id: TurnIds<'a>,
    /// Whether the memory search runs on another thread than the other parts' (the local
    /// index), or after them (a remote backend, whose searches wait on the network).
    pub(crate) beside: bool,
}

impl Run<'_> {
    /// The turn: the message prepared once, the scenario, rules and tools searches
    /// beside the memory search (or before it), the budget, the log event.
    pub(crate) fn turn(
        &self,
        retriever: &(impl Retriever + Sync + ?Sized),
        request: &TurnRequest,
    ) -> Result<TurnResponse> {
        let started = Instant::now();
        // The turn's base id: its parts' ids and its own are made from it.
        let base = crate::rank::next_query_id();
        validate(request)?;
        let now = request.now.unwrap_or_else(Timestamp::now);
        let rules_request = request.part(Kind::Rule, now);
        let analysis = crate::analysis::analyze(&rules_request.text);
        // The message embedded once per embedder.
        let prepare = |kinds: &[Kind]| -> Result<Vec<(Kind, PreparedQuery)>> {
            let (prepared, embedded) = PreparedQuery::for_kinds(
                &rules_request,
                kinds,
                self.embedders,
                &|kind| retriever.dimensions(kind),
                &analysis,
            )?;
            for _ in 0..embedded {
                (self.embedded)();
            }
            Ok(prepared)
        };
        let answers = crate::rank::answers_embedder(self.embedders);
        let search = |part: &SearchRequest,
                      prepared: &[(Kind, PreparedQuery)]|
         -> Result<SearchResponse> {
            let kind = part.kind;
            // Each part's id is the turn's base and the part's letter.
            let query_id =
                |_: String, top: Option<&Hit>| (self.query_id)(kind, part_base(&base, kind), top);
            let searcher = Searcher {
                query_id: &query_id,
                log_selection: false,
                answers: answers.as_deref(),
            };
            let prepared = prepared
                .iter()
                .find(|(k, _)| *k == kind)
                .map(|(_, p)| p)
                .expect("the kind's message was prepared");
            search_with_id(
                retriever,
                self.config,
                part,
                self.embedders.get(kind).map(|e| e.as_ref()),
                (self.factors)(kind),
                &searcher,
                Some(prepared),
            )
        };
        // When memory shares an embedder with another kind, the message is embedded once
        // for all four, before the searches; otherwise each side embeds its own.
        const OTHERS: [Kind; 3] = [Kind::Scenario, Kind::Rule, Kind::Tool];
        let shared = self
            .embedders
            .distinct()
            .iter()
            .any(|(_, kinds)| kinds.contains(&Kind::Chunk) && kinds.len() > 1);
        let all = if shared {
            Some(prepare(&Kind::ALL)?)
        } else {
            None
        };
        let mut first: Option<Result<(TurnScenario, SearchResponse, SearchResponse, u64)>> = None;
        let mut second: Option<Result<(SearchResponse, u64)>> = None;
        let mut others = || {
            first = Some((|| {
                let own;
                let prepared = match &all {
                    Some(all) => all,
                    None => {
                        own = prepare(&OTHERS)?;
                        &own
                    }
                };
                let embed_us: u64 = prepared.iter().map(|(_, p)| p.embed_us).sum();
                let search = |part: &SearchRequest| search(part, prepared);
                let scenarios_request = request.part(Kind::Scenario, now);
                let scenarios = search(&scenarios_request)?;
                let mut scenario = decide(request, scenarios, self.config.turn.scenario_confidence);
                if scenario.activation == Activation::Switched {
                    // Left only when the active scenario is clearly less about the
                    // message: its relevance (0 when it is no candidate at all) at
                    // least `switch_margin` below the best's and, inside a step (an
                    // answer to the step's question is often short), below the gate.
                    let all = search(
                        &scenarios_request
                            .clone()
                            .with_top_k(MAX_SCENARIOS)
                            .with_min_relevance(0.0),
                    )?;
                    let active = all
                        .hits
                        .iter()
                        .find(|h| Some(&h.id) == request.scenario_id.as_ref())
                        .and_then(|h| h.breakdown.relevance)
                        .unwrap_or(0.0);
                    let best = scenario.confidence.unwrap_or(0.0);
                    let gate = scenarios_request
                        .min_relevance
                        .unwrap_or(self.config.relevance.kind(Kind::Scenario).min_relevance);
                    if best - active < self.config.turn.switch_margin
                        || (request.step_id.is_some() && active >= gate)
                    {
                        scenario.keep(request);
                    }
                }
                let rules = search(&request.decided_part(Kind::Rule, now, &scenario))?;
                Ok((
                    scenario,
                    rules,
                    search(&request.part(Kind::Tool, now))?,
                    embed_us,
                ))
            })());
        };
        // Memory, the longest search (chunks are many, and their ranking weighs recency,
        // importance and neighbours), beside the three others.
        let mut memory = || {
            second = Some(match &all {
                Some(all) => search(&request.part(Kind::Chunk, now), all).map(|m| (m, 0)),
                None => prepare(&[Kind::Chunk]).and_then(|prepared| {
                    let memory = search(&request.part(Kind::Chunk, now), &prepared)?;
                    Ok((memory, prepared[0].1.embed_us))
                }),
            });
        };
        if self.beside {
            crate::parallel::join(others, memory);
        } else {
            others();
            memory();
        }
        let (scenario, rules, tools, embed_us) = first.expect("the first closure ran")?;
        let (memory, memory_embed_us) = second.expect("the second closure ran")?;
        let stage = Instant::now();
        let mut response = TurnResponse {
            turn_id: String::new(),
            timings: TurnTimings {
                embed_us: embed_us + memory_embed_us,
                scenarios_us: scenario.search.timings.total_us,
                rules_us: rules.timings.total_us,
                memory_us: memory.timings.total_us,
                tools_us: tools.timings.total_us,
                budget_us: 0,
                total_us: 0,
            },
            scenario,
            rules,
            memory,
            tools,
            budget: TurnBudget {
                limit: request.budget_tokens,
                used: 0,
                tokenizer: TOKEN_ENCODING,
                order: self.config.turn.order.clone(),
                scenario_line: false,
                rules: PartBudget::default(),
                memory: PartBudget::default(),
                tools: PartBudget::default(),
            },
        };
        spend(&mut response, self.config.turn.keep_priority);
        let own_id = base.replacen('q', "turn-", 1);
        response.turn_id = (self.turn_id)(
            &own_id,
            [
                response.scenario.search.hits.first(),
                response.rules.hits.first(),
                response.memory.hits.first(),
                response.tools.hits.first(),
            ],
        );
        response.timings.budget_us = micros(stage);
        response.timings.total_us = micros(started);
        log(&response, &own_id);
        Ok(response)
    }
}

fn validate(request: &TurnRequest) -> Result<()> {
    if request.tenant_id.is_empty() {
        return Err(Error::invalid_input("`tenant_id` must not be empty"));
    }
    if request.step_id.is_some() && request.scenario_id.is_none() {
        return Err(Error::invalid_input("a `step_id` needs its `scenario_id`"));
    }
    if let Some(budget) = request.budget_tokens
        && budget > crate::model::MAX_COUNT
    {
        return Err(Error::invalid_input(format!(
            "`budget_tokens` must be between 0 and {}, got {budget}",
            crate::model::MAX_COUNT
        )));
    }
    Ok(())
}

/// How many scenarios the check of a switch looks at: every one that passes the gate.
const MAX_SCENARIOS: usize = 10_000;

impl TurnScenario {
    /// Keeps the agent's active scenario after all.
    fn keep(&mut self, request: &TurnRequest) {
        self.active.clone_from(&request.scenario_id);
        self.step.clone_from(&request.step_id);
        self.activation = Activation::Kept;
        self.left = None;
        self.confidence = None;
    }
}

/// What the turn makes of its scenario search (see the module docs).
fn decide(request: &TurnRequest, search: SearchResponse, confidence: f64) -> TurnScenario {
    let relevance = |hit: &Hit| hit.breakdown.relevance.unwrap_or(0.0);
    let best = search
        .hits
        .first()
        .filter(|hit| relevance(hit) >= confidence)
        .map(|hit| (hit.id.clone(), relevance(hit)));
    let (active, step, activation, left, confidence) = match (&request.scenario_id, best) {
        (Some(given), Some((best, confidence)))
            if best != *given && !search.hits.iter().any(|h| h.id == *given) =>
        {
            (
                Some(best),
                None,
                Activation::Switched,
                Some(given.clone()),
                Some(confidence),
            )
        }
        (Some(given), _) => (
            Some(given.clone()),
            request.step_id.clone(),
            Activation::Kept,
            None,
            None,
        ),
        (None, Some((best, confidence))) => (
            Some(best),
            None,
            Activation::Detected,
            None,
            Some(confidence),
        ),
        (None, None) => (None, None, Activation::None, None, None),
    };
    TurnScenario {
        search,
        active,
        step,
        activation,
        left,
        confidence,
    }
}

/// The rendered block's lines, by section.
#[derive(Default)]
struct Block {
    scenario: Option<String>,
    /// Rules, memory, tools.
    lines: [Vec<String>; 3],
}

const HEADINGS: [&str; 3] = ["Rules to follow:", "Known from memory:", "Tools that fit:"];

/// Tokens of one line of the block, its `\n` included. A block's count is the sum of its
/// lines': every line ends with `\n` and the next begins with a character that is not
/// whitespace, where `o200k_base`'s pre-tokenizer always splits, so no token spans two
/// lines.
fn line_tokens(line: &str) -> usize {
    let mut segment = String::with_capacity(line.len() + 1);
    segment.push_str(line);
    segment.push('\n');
    count_segment(&segment)
}

impl Block {
    /// Tokens of [`Block::text`].
    fn tokens(&self) -> usize {
        self.scenario.as_deref().map_or(0, line_tokens)
            + (0..3)
                .map(|at| section_tokens(at, &self.lines[at]))
                .sum::<usize>()
    }

    fn text(&self) -> String {
        let mut text = String::new();
        if let Some(line) = &self.scenario {
            text.push_str(line);
            text.push('\n');
        }
        for (heading, lines) in HEADINGS.iter().zip(&self.lines) {
            if lines.is_empty() {
                continue;
            }
            text.push_str(heading);
            text.push('\n');
            for line in lines {
                text.push_str(line);
                text.push('\n');
            }
        }
        text
    }
}

fn part_index(part: TurnPart) -> usize {
    match part {
        TurnPart::Rules => 0,
        TurnPart::Memory => 1,
        TurnPart::Tools => 2,
    }
}

/// `text` on one line, its whitespace collapsed.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn scenario_line(scenario: &TurnScenario) -> Option<String> {
    let id = scenario.active.as_deref()?;
    let step = scenario
        .step
        .as_deref()
        .map(|step| format!(", step {}", flat(step)))
        .unwrap_or_default();
    let found = scenario
        .search
        .hits
        .iter()
        .find(|hit| hit.id == id)
        .and_then(|hit| match &*hit.document {
            Document::Scenario(s) => Some(s),
            _ => None,
        });
    Some(match found {
        Some(s) => format!(
            "Scenario: {} ({}{step}): {}",
            flat(&s.name),
            flat(id),
            flat(&s.description)
        ),
        None => format!("Scenario: {}{step}", flat(id)),
    })
}

/// One hit's line in the block.
fn line_of(hit: &Hit) -> String {
    match &*hit.document {
        Document::Rule(rule) => rule_lines(rule),
        Document::Chunk(chunk) => {
            let mut line = String::from("- ");
            if let Some(at) = chunk.created_at {
                line.push_str(&format!("[{}] ", date(at)));
            }
            // The speaker, unless the content already starts with it ("Caroline: ...").
            if let Some(speaker) = chunk.metadata.get("speaker").and_then(|s| s.as_str()) {
                let speaker = flat(speaker);
                let content = chunk.content.trim_start();
                let named = content
                    .strip_prefix(speaker.as_str())
                    .is_some_and(|rest| rest.starts_with(':'));
                if !speaker.is_empty() && !named {
                    line.push_str(&speaker);
                    line.push_str(": ");
                }
            }
            // Where a chunk cut from a file is: `(docs/install.md:12-14, Install › Linux) `.
            if let Some(source) = &chunk.source {
                line.push('(');
                line.push_str(&flat(&source.location()));
                if !source.headings.is_empty() {
                    line.push_str(", ");
                    line.push_str(&flat(&source.heading_path()));
                }
                line.push_str(") ");
            }
            line.push_str(&flat(&chunk.content));
            line
        }
        Document::Tool(tool) => {
            let mut line = format!("- {}: {}", flat(&tool.name), flat(&tool.description));
            let empty = tool.parameters.is_null()
                || tool.parameters.as_object().is_some_and(|o| o.is_empty());
            if !empty {
                line.push_str(" Parameters: ");
                line.push_str(&tool.parameters.to_string());
            }
            // A skill read from a file: where the agent loads it from.
            if let Some(source) = &tool.source {
                line.push_str(" (load ");
                line.push_str(&flat(&source.path));
                line.push(')');
            }
            line
        }
        Document::Scenario(s) => format!("- {}: {}", flat(&s.name), flat(&s.description)),
    }
}

/// A rule's item: `- condition: action` (`- condition:` without an action), then its
/// body's lines, each indented by two spaces (blank lines left out).
fn rule_lines(rule: &crate::Rule) -> String {
    let mut item = if rule.action.trim().is_empty() {
        format!("- {}:", flat(&rule.condition))
    } else {
        format!("- {}: {}", flat(&rule.condition), flat(&rule.action))
    };
    for line in rule.body.iter().flat_map(|body| body.lines()) {
        if !line.trim().is_empty() {
            item.push_str("\n  ");
            item.push_str(line.trim_end());
        }
    }
    item
}

/// What marks a rule's body cut by the budget.
const CUT_MARKER: &str = "[…cut to the budget]";

/// `rule` with its body cut to the lines that fit in `room` tokens (its item, heading
/// aside), the last line saying it was cut; `None` when not even its first line fits,
/// or it has no body to cut.
fn cut_rule(rule: &crate::Rule, room: usize) -> Option<crate::Rule> {
    let body = rule.body.as_deref()?;
    let lines: Vec<&str> = body.lines().filter(|l| !l.trim().is_empty()).collect();
    let with = |n: usize| {
        let mut cut = rule.clone();
        let mut kept: Vec<&str> = lines[..n].to_vec();
        kept.push(CUT_MARKER);
        cut.body = Some(kept.join("\n"));
        cut
    };
    // The most lines that fit (a binary search: the count grows with the lines kept).
    let fits = |n: usize| line_tokens(&rule_lines(&with(n))) <= room;
    if lines.is_empty() || !fits(0) {
        return None;
    }
    let (mut low, mut high) = (0, lines.len() - 1);
    while low < high {
        let mid = (low + high).div_ceil(2);
        if fits(mid) {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    Some(with(low))
}

/// `YYYY-MM-DD` of a timestamp (UTC).
fn date(at: Timestamp) -> String {
    at.to_string().chars().take(10).collect()
}

/// Spends the budget (see the module docs): cuts the hits that do not fit from the parts
/// and fills in the accounting.
fn spend(response: &mut TurnResponse, keep_priority: i32) {
    let limit = response.budget.limit;
    let mut lines: [Vec<String>; 3] =
        TurnPart::ALL.map(|part| response.part(part).hits.iter().map(line_of).collect());
    let scenario = scenario_line(&response.scenario);
    let Some(limit) = limit else {
        // Nothing to cut: only the accounting.
        let block = Block {
            scenario: scenario.clone(),
            lines: lines.clone(),
        };
        response.budget.scenario_line = scenario.is_some();
        response.budget.used = block.tokens();
        for part in TurnPart::ALL {
            let at = part_index(part);
            *budget_of(&mut response.budget, part) = PartBudget {
                tokens: section_tokens(at, &lines[at]),
                kept: lines[at].len(),
                cut: 0,
            };
        }
        return;
    };
    // The order of spending: (part, hit index), the scenario line first.
    let mut sequence: Vec<(TurnPart, usize)> = Vec::new();
    let rule_priority = |i: usize| match &*response.rules.hits[i].document {
        Document::Rule(rule) => rule.priority,
        _ => i32::MIN,
    };
    // Rules applied whatever their relevance first (always, by file, by name), then the
    // rules of at least `keep_priority`.
    let applied = |i: usize| {
        matches!(
            response.rules.hits[i].breakdown.gate,
            crate::relevance::GateDecision::Applied(_)
        )
    };
    let kept_first: Vec<usize> = (0..lines[0].len())
        .filter(|&i| applied(i))
        .chain((0..lines[0].len()).filter(|&i| !applied(i) && rule_priority(i) >= keep_priority))
        .collect();
    sequence.extend(kept_first.iter().map(|&i| (TurnPart::Rules, i)));
    for &part in &response.budget.order {
        let at = part_index(part);
        sequence.extend(
            (0..lines[at].len())
                .filter(|i| part != TurnPart::Rules || !kept_first.contains(i))
                .map(|i| (part, i)),
        );
    }
    // Greedy by the lines' own counts: a part stops at its first hit that does not fit.
    let mut used = 0;
    let mut block_scenario = None;
    if let Some(line) = &scenario {
        let cost = line_tokens(line);
        if cost <= limit {
            used += cost;
            block_scenario = Some(line.clone());
        }
    }
    let mut kept: Vec<(TurnPart, usize)> = Vec::new();
    let mut stopped = [false; 3];
    let mut has_lines = [false; 3];
    // Rules whose body was cut to fit, by hit index.
    let mut cut_rules: Vec<(usize, crate::Rule)> = Vec::new();
    for &(part, i) in &sequence {
        let at = part_index(part);
        if stopped[at] {
            continue;
        }
        let heading = if has_lines[at] {
            0
        } else {
            line_tokens(HEADINGS[at])
        };
        let mut cost = heading + line_tokens(&lines[at][i]);
        if used + cost > limit && part == TurnPart::Rules {
            // A rule with a body is cut to what fits, with a marker, rather than left out.
            let room = limit.saturating_sub(used + heading);
            if let Some(cut) = response.rules.hits[i]
                .document
                .as_rule()
                .and_then(|rule| cut_rule(rule, room))
            {
                lines[at][i] = rule_lines(&cut);
                cost = heading + line_tokens(&lines[at][i]);
                cut_rules.push((i, cut));
            }
        }
        if used + cost > limit {
            stopped[at] = true;
            continue;
        }
        used += cost;
        has_lines[at] = true;
        kept.push((part, i));
    }
    // The block as rendered, counted again (the same sum): drop the last kept while it
    // does not fit.
    let build = |kept: &[(TurnPart, usize)], scenario: &Option<String>| {
        let mut block = Block {
            scenario: scenario.clone(),
            lines: Default::default(),
        };
        for (at, (section, part_lines)) in block.lines.iter_mut().zip(&lines).enumerate() {
            let mut indices: Vec<usize> = kept
                .iter()
                .filter(|(part, _)| part_index(*part) == at)
                .map(|&(_, i)| i)
                .collect();
            indices.sort_unstable();
            *section = indices.iter().map(|&i| part_lines[i].clone()).collect();
        }
        block
    };
    let mut block = build(&kept, &block_scenario);
    let mut total = block.tokens();
    while total > limit {
        if kept.pop().is_none() {
            block_scenario = None;
        }
        block = build(&kept, &block_scenario);
        total = block.tokens();
    }
    response.budget.used = total;
    response.budget.scenario_line = block_scenario.is_some();
    // What the block holds of a cut rule is what its hit carries.
    for (i, cut) in cut_rules {
        response.rules.hits[i].document = std::sync::Arc::new(Document::Rule(cut));
    }
    for part in TurnPart::ALL {
        let at = part_index(part);
        let mut keep: Vec<usize> = kept
            .iter()
            .filter(|(p, _)| *p == part)
            .map(|&(_, i)| i)
            .collect();
        keep.sort_unstable();
        let target = part_response(response, part);
        let before = target.hits.len();
        let mut index = 0;
        target.hits.retain(|_| {
            let keep_it = keep.binary_search(&index).is_ok();
            index += 1;
            keep_it
        });
        let cut = before - target.hits.len();
        if cut > 0 {
            target
                .selection
                .metadata
                .insert("cut_by_budget".into(), cut.into());
        }
        *budget_of(&mut response.budget, part) = PartBudget {
            tokens: section_tokens(at, &block.lines[at]),
            kept: keep.len(),
            cut,
        };
    }
}

/// Tokens of a section: its heading and its lines.
fn section_tokens(at: usize, lines: &[String]) -> usize {
    if lines.is_empty() {
        return 0;
    }
    line_tokens(HEADINGS[at]) + lines.iter().map(|line| line_tokens(line)).sum::<usize>()
}

fn budget_of(budget: &mut TurnBudget, part: TurnPart) -> &mut PartBudget {
    match part {
        TurnPart::Rules => &mut budget.rules,
        TurnPart::Memory => &mut budget.memory,
        TurnPart::Tools => &mut budget.tools,
    }
}

fn part_response(response: &mut TurnResponse, part: TurnPart) -> &mut SearchResponse {
    match part {
        TurnPart::Rules => &mut response.rules,
        TurnPart::Memory => &mut response.memory,
        TurnPart::Tools => &mut response.tools,
    }
}

/// Seed 000's structured log: one event per turn, each part's selection side by side.
fn log(response: &TurnResponse, logical_turn_id: &str) {
    if !tracing::enabled!(target: "ruchedb::turn", tracing::Level::INFO) {
        return;
    }
    let selection = |s: &SelectionSummary| {
        serde_json::json!({
            "strategy": s.strategy,
            "input_count": s.input_count,
            "output_count": s.output_count,
            "cutoff_score": s.cutoff_score,
            "metadata": s.metadata,
        })
    };
    let retrieval = serde_json::json!({
        "rules": selection(&response.rules.selection),
        "scenarios": selection(&response.scenario.search.selection),
        "memory": selection(&response.memory.selection),
        "tools": selection(&response.tools.selection),
    });
    tracing::info!(
        target: "ruchedb::turn",
        logical_turn_id = %logical_turn_id,
        retrieval = %retrieval,
        scenario = response.scenario.active.as_deref().unwrap_or(""),
        budget_used = response.budget.used,
        total_us = response.timings.total_us,
        "turn"
    );
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// A block's tokens are the sum of its lines' (each with its `\n`): the
        /// budget's accounting is exact, whatever the text.
        #[test]
        fn a_blocks_tokens_are_the_sum_of_its_lines(
            fields in prop::collection::vec(("\\PC{0,40}", any::<u8>()), 0..12),
            scenario in prop::option::of("\\PC{0,30}"),
        ) {
            let mut block = Block {
                scenario: scenario.map(|s| format!("Scenario: {}", flat(&s))),
                lines: Default::default(),
            };
            for (text, at) in &fields {
                block.lines[usize::from(*at % 3)].push(format!("- {}", flat(text)));
            }
            prop_assert_eq!(block.tokens(), crate::count_tokens(&block.text()));
        }
    }
}
