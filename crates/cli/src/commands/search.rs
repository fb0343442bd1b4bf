//! `ruche search` and `ruche turn`, one message or a batch, and the action policy applied to a response.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use ruchedb::Config;

use crate::args::{SearchArgs, TurnArgs};
use crate::input::{self, QueryDefaults, QueryLine};
use crate::output;

use super::feedback::fusion_base;

pub(crate) fn defaults(config: &Config, args: &SearchArgs) -> Result<QueryDefaults> {
    Ok(QueryDefaults {
        kind: Some(args.kind.into()),
        tenant: Some(args.tenant.clone()),
        agent: args.agent.clone(),
        scenario: args.scenario.clone(),
        step: args.step.clone(),
        context: args.context.clone(),
        tags: args.tags.clone(),
        filters: args
            .filters
            .iter()
            .map(|pair| input::key_value(pair))
            .collect::<Result<_>>()?,
        top_k: args.top_k,
        min_relevance: args.min_relevance,
        max_tokens: args.max_tokens,
        now: args.now.as_deref().map(input::timestamp).transpose()?,
        selection: args
            .strategy
            .as_deref()
            .map(|name| input::selection(name, &args.select_params))
            .transpose()?,
        max_k: args.max_k,
        min_k: args.min_k,
        fusion: input::fusion(&args.fusion, fusion_base(config, args.kind.into()))?,
        adaptive: input::adaptive(&args.fusion),
        files: args.files.clone(),
        rules: args.rules.clone(),
    })
}

pub fn search(config: &Config, args: &SearchArgs) -> Result<ExitCode> {
    let defaults = defaults(config, args)?;
    if let Some(batch) = &args.batch {
        // Validate every query line before running any.
        let lines: Vec<(usize, QueryLine)> = input::read_numbered(batch)?;
        let requests = lines
            .iter()
            .map(|(line_no, line)| {
                line.to_request(&defaults)
                    .with_context(|| format!("{}: line {line_no}", batch.display()))
            })
            .collect::<Result<Vec<_>>>()?;
        let engine = crate::milvus::Searcher::open(config, &args.dir)?;
        let mut out = BufWriter::new(std::io::stdout().lock());
        for ((line_no, line), request) in lines.iter().zip(&requests) {
            // The lines before are written; the error names the line that failed.
            let response = engine
                .search(request)
                .with_context(|| format!("{}: line {line_no} (id {})", batch.display(), line.id))?;
            output::write_line(
                &mut out,
                &output::response_json(Some(&line.id), &response, args.explain),
            )?;
        }
        out.flush()?;
        engine.finish();
        return Ok(ExitCode::SUCCESS);
    }
    // The message given on the command line: an empty one is a mistake (an unset shell
    // variable), not a question.
    if args
        .text
        .as_deref()
        .is_some_and(|text| text.trim().is_empty())
    {
        bail!("the message is empty: give the text to search for (or --browse with --kind chunks)");
    }
    let line = QueryLine {
        id: serde_json::Value::Null,
        text: args.text.clone(),
        embedding: None,
        kind: None,
        tenant_id: None,
        agent_id: None,
        scenario_id: None,
        step_id: None,
        context_id: None,
        tags: Vec::new(),
        filters: Default::default(),
        top_k: None,
        min_relevance: None,
        max_tokens: None,
        now: None,
        browse: args.browse,
        files: Vec::new(),
        rules: Vec::new(),
        note: None,
    };
    let request = line.to_request(&defaults)?;
    let engine = crate::milvus::Searcher::open(config, &args.dir)?;
    let response = engine.search(&request)?;
    let policy = match &args.policy {
        Some(name) => Some(apply_policy(
            name,
            &args.policy_params,
            args.seed,
            &response,
        )?),
        None => None,
    };
    let mut out = BufWriter::new(std::io::stdout().lock());
    if args.json {
        let mut line = output::response_json(None, &response, args.explain);
        if let (Some(choice), Some(object)) = (&policy, line.as_object_mut()) {
            object.insert("policy".into(), choice.to_json());
        }
        output::write_line(&mut out, &line)?;
    } else {
        output::write_table(&mut out, &response, args.explain)?;
        if let Some(choice) = &policy {
            choice.write(&mut out)?;
        }
    }
    out.flush()?;
    engine.finish();
    Ok(if response.hits.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

pub fn turn(config: &Config, args: &TurnArgs) -> Result<ExitCode> {
    let defaults = input::TurnLine {
        id: serde_json::Value::Null,
        text: None,
        embedding: None,
        kind: None,
        tenant_id: Some(args.tenant.clone()),
        agent_id: args.agent.clone(),
        context_id: args.context.clone(),
        scenario_id: args.scenario.clone(),
        step_id: args.step.clone(),
        budget_tokens: args.budget_tokens,
        now: args.now.as_deref().map(input::timestamp).transpose()?,
        files: args.files.clone(),
        rules: args.rules.clone(),
        note: None,
    };
    if let Some(batch) = &args.batch {
        // Validate every line before running any.
        let lines: Vec<(usize, input::TurnLine)> = input::read_numbered(batch)?;
        let requests = lines
            .iter()
            .map(|(line_no, line)| {
                line.to_request(&defaults)
                    .with_context(|| format!("{}: line {line_no}", batch.display()))
            })
            .collect::<Result<Vec<_>>>()?;
        let engine = crate::milvus::Searcher::open(config, &args.dir)?;
        let mut out = BufWriter::new(std::io::stdout().lock());
        for ((line_no, line), request) in lines.iter().zip(&requests) {
            let turn = engine
                .turn(request)
                .with_context(|| format!("{}: line {line_no} (id {})", batch.display(), line.id))?;
            output::write_line(
                &mut out,
                &output::turn_json(Some(&line.id), &turn, args.explain, args.render),
            )?;
        }
        out.flush()?;
        engine.finish();
        return Ok(ExitCode::SUCCESS);
    }
    if args
        .text
        .as_deref()
        .is_some_and(|text| text.trim().is_empty())
    {
        bail!("the message is empty: give the user's message");
    }
    let line = input::TurnLine {
        text: args.text.clone(),
        ..defaults
    };
    let request = line.to_request(&input::TurnLine {
        id: serde_json::Value::Null,
        text: None,
        embedding: None,
        kind: None,
        tenant_id: None,
        agent_id: None,
        context_id: None,
        scenario_id: None,
        step_id: None,
        budget_tokens: None,
        now: None,
        files: Vec::new(),
        rules: Vec::new(),
        note: None,
    })?;
    let engine = crate::milvus::Searcher::open(config, &args.dir)?;
    let turn = engine.turn(&request)?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    if args.json {
        output::write_line(
            &mut out,
            &output::turn_json(None, &turn, args.explain, args.render),
        )?;
    } else if args.render {
        out.write_all(turn.render().as_bytes())?;
    } else {
        output::write_turn(&mut out, &turn, args.explain)?;
    }
    out.flush()?;
    engine.finish();
    Ok(if turn.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// What `--policy` chose among the hits of a search.
pub(crate) struct PolicyChoice {
    name: String,
    /// The candidates in the policy's order, with its scores.
    ranking: Vec<(ruchedb::policy::Candidate, f64)>,
    /// The one selected (`None` when there was no hit).
    chosen: Option<ruchedb::policy::Candidate>,
}

impl PolicyChoice {
    fn to_json(&self) -> serde_json::Value {
        let summary = |c: &ruchedb::policy::Candidate| serde_json::json!({"id": c.id(), "action": c.action_type()});
        serde_json::json!({
            "name": self.name,
            "chosen": self.chosen.as_ref().map(summary),
            "ranking": self.ranking.iter().map(|(c, score)| {
                let mut entry = summary(c);
                entry["score"] = (*score).into();
                entry
            }).collect::<Vec<_>>(),
        })
    }

    pub(crate) fn write(&self, out: &mut impl Write) -> std::io::Result<()> {
        match &self.chosen {
            Some(chosen) => writeln!(
                out,
                "policy {}: chose {} ({})",
                self.name,
                chosen.id().unwrap_or_default(),
                chosen.action_type()
            )?,
            None => writeln!(out, "policy {}: nothing to choose from", self.name)?,
        }
        for (rank, (candidate, score)) in self.ranking.iter().enumerate() {
            writeln!(
                out,
                "  {:>2}. {:<28} {score:.3}  {}",
                rank + 1,
                candidate.id().unwrap_or_default(),
                candidate.action_type()
            )?;
        }
        Ok(())
    }
}

/// Lets the policy `name` (with `--policy-param` values, JSON when they parse as JSON)
/// choose among the hits of `response`, with a random generator seeded by `seed`.
pub(crate) fn apply_policy(
    name: &str,
    params: &[String],
    seed: u64,
    response: &ruchedb::SearchResponse,
) -> Result<PolicyChoice> {
    use rand::SeedableRng;
    let mut config = serde_json::Map::new();
    for pair in params {
        let (key, value) = input::key_value(pair)?;
        let value = serde_json::from_str(&value).unwrap_or(serde_json::Value::String(value));
        config.insert(key, value);
    }
    let mut policy = ruchedb::policy::PolicyRegistry::new()
        .get_action(name, &config)
        .context("--policy")?;
    let candidates: Vec<ruchedb::policy::Candidate> = response
        .hits
        .iter()
        .map(ruchedb::policy::Candidate::from_hit)
        .collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut ctx = ruchedb::policy::PolicyContext::new(&mut rng);
    let (ranking, chosen) = if candidates.is_empty() {
        (Vec::new(), None)
    } else {
        let ranking = policy
            .rank(&candidates, &ctx)?
            .into_iter()
            .map(|(c, score)| (c.clone(), score))
            .collect();
        let chosen = policy.select(&candidates, &mut ctx)?.clone();
        (ranking, Some(chosen))
    };
    Ok(PolicyChoice {
        name: name.to_string(),
        ranking,
        chosen,
    })
}
