//! Relevance first: abstention, identifiers, and business weights that only order what is
//! relevant. The benchmarks behind the relevance gate's defaults and the README's
//! quality table (`docs/relevance.md` has the method and the numbers).
//!
//! ```text
//! cargo run --release -p ruchedb-research --bin relevance -- [--eval DIR] [--bert DIR] [TASK ...]
//! ```
//!
//! Tasks (all by default except `fit`):
//!
//! - `clinc`: CLINC150 val as rule matching with abstention, as the project's check runs
//!   it: one rule per intent with 10 random training messages as patterns and a random
//!   priority in 0..=100; the 3,000 in-scope and 100 out-of-scope messages as queries,
//!   default configuration. In-scope top-1, out-of-scope answered with no rule, and
//!   accuracy with abstention with out-of-scope messages weighted to a 1:4.5 mix.
//! - `scenarios`: CLINC150 val as scenario detection: its 10 domains as scenarios (the
//!   description names the domain and its intents, 5 or 2 random training messages per
//!   intent as examples), the val messages and the out-of-scope ones as queries, default
//!   configuration: how often the first scenario is the message's domain, how often an
//!   out-of-scope message activates none, accuracy with abstention (1:4.5 mix).
//! - `banking`: BANKING77 (first 10 messages of each intent as patterns, the rest as
//!   queries), top-1 with the gate off: the ranking itself.
//! - `scifact`: SciFact train with the given MiniLM vectors: nDCG@10 with `top_k(10)`,
//!   and the precision, recall and F1 of the set the default selection keeps.
//! - `identifiers [N]`: N generated support notes (default 20,000; see
//!   `tests/common/identifiers.rs`) with random importance and dates, 500 queries
//!   that ask about one identifier: how often the first hit contains it.
//! - `sample`: out-of-scope messages against the bundled sample index.
//! - `fit`: fits the gate's calibrations by logistic regression (rules: CLINC150 train
//!   and BANKING77 with held-out intents as out-of-scope; chunks: SciFact train, with
//!   CLINC150's out-of-scope messages as unrelated queries) and prints them with the
//!   threshold that maximises accuracy with abstention.
//!
//! - `fit-scenarios`: fits the scenarios' calibrations the same way, on CLINC150 train
//!   with its domains as scenarios, two domains held out as out-of-scope in each of five
//!   folds.
//!
//! With `--bert DIR` (feature `bert`), rules and queries are embedded with
//! all-MiniLM-L6-v2 instead of the bundled static model.

#[path = "../common/data.rs"]
mod data;
#[path = "../../../../tests/common/identifiers.rs"]
mod identifiers;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use data::{Res, read_csv, read_jsonl};
use rand::prelude::*;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use ruchedb::{
    Chunk, Config, Embedder, EmbedderSpec, Engine, Hit, Rule, Scenario, SearchRequest,
    StaticEmbedder, Timestamp,
};

/// Out-of-scope messages weigh as in a realistic mix of 1,000 to 4,500 in-scope ones.
const OOS_SHARE: f64 = 1000.0 / 4500.0;

struct Setup {
    eval: PathBuf,
    embedder: Arc<dyn Embedder>,
    name: String,
}

impl Setup {
    fn engine(&self, config: Config) -> Res<Engine> {
        Ok(Engine::builder()
            .with_config(config)
            .with_embedder(self.embedder.clone())
            .temporary()?)
    }
}

// # CLINC150

struct Labelled {
    text: String,
    /// `None`: out of scope.
    intent: Option<String>,
}

fn clinc_file(eval: &Path, name: &str) -> Res<Vec<Labelled>> {
    Ok(read_jsonl(&eval.join("clinc150").join(name))?
        .into_iter()
        .map(|v| {
            let intent = v["intent"].as_str().unwrap_or_default().to_string();
            Labelled {
                text: v["text"].as_str().unwrap_or_default().to_string(),
                intent: (intent != "oos").then_some(intent),
            }
        })
        .collect())
}

/// One rule per intent: condition the intent in words, 10 random patterns, a random
/// priority.
fn intent_rules(
    by_intent: &ByIntent,
    rng: &mut ChaCha8Rng,
    patterns: usize,
) -> (Vec<Rule>, HashSet<String>) {
    let mut used = HashSet::new();
    let rules = by_intent
        .iter()
        .map(|(intent, messages)| {
            let chosen: Vec<String> = messages.choose_multiple(rng, patterns).cloned().collect();
            used.extend(chosen.iter().cloned());
            Rule::new(intent, intent.replace('_', " "), format!("handle {intent}"))
                .with_priority(rng.random_range(0..=100))
                .with_patterns(chosen)
        })
        .collect();
    (rules, used)
}

fn group(messages: &[Labelled]) -> ByIntent {
    let mut by = ByIntent::new();
    for m in messages {
        if let Some(intent) = &m.intent {
            by.entry(intent.clone()).or_default().push(m.text.clone());
        }
    }
    by
}

/// In-scope top-1, out-of-scope abstention, accuracy with abstention (weighted mix),
/// false abstention.
#[derive(Debug, Default, Clone, Copy)]
struct AbstentionScore {
    in_scope_top1: f64,
    oos_abstention: f64,
    accuracy: f64,
    false_abstention: f64,
}

fn abstention_score(queries: &[Labelled], tops: &[Option<String>]) -> AbstentionScore {
    let (mut right, mut silent_in, mut n_in, mut silent_oos, mut n_oos) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (q, top) in queries.iter().zip(tops) {
        match &q.intent {
            Some(intent) => {
                n_in += 1.0;
                right += f64::from(top.as_deref() == Some(intent.as_str()));
                silent_in += f64::from(top.is_none());
            }
            None => {
                n_oos += 1.0;
                silent_oos += f64::from(top.is_none());
            }
        }
    }
    let w = if n_oos > 0.0 {
        OOS_SHARE / (n_oos / n_in)
    } else {
        0.0
    };
    AbstentionScore {
        in_scope_top1: right / n_in,
        oos_abstention: if n_oos > 0.0 { silent_oos / n_oos } else { 0.0 },
        accuracy: (right + w * silent_oos) / (n_in + w * n_oos),
        false_abstention: silent_in / n_in,
    }
}

fn run_rules(engine: &Engine, queries: &[Labelled], top_k: Option<usize>) -> Res<Vec<Vec<Hit>>> {
    queries
        .par_iter()
        .map(|q| {
            let mut request = SearchRequest::rules(q.text.clone());
            if let Some(k) = top_k {
                request = request.with_top_k(k).with_min_relevance(0.0);
            }
            Ok(engine.search(&request)?.hits)
        })
        .collect()
}

fn clinc(setup: &Setup) -> Res<()> {
    let train = clinc_file(&setup.eval, "train.jsonl")?;
    let mut queries = clinc_file(&setup.eval, "val.jsonl")?;
    queries.extend(clinc_file(&setup.eval, "oos_val.jsonl")?);
    let by_intent = group(&train);
    println!(
        "\n## CLINC150 val, {} ({} in-scope + {} out-of-scope messages, 150 rules with 10 patterns and random priorities)\n",
        setup.name,
        queries.iter().filter(|q| q.intent.is_some()).count(),
        queries.iter().filter(|q| q.intent.is_none()).count()
    );
    println!(
        "| seed | in-scope top-1 | out-of-scope with no rule | accuracy with abstention | in-scope with no rule | in-scope top-1, gate off |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let mut sums = [0.0; 5];
    let seeds = [3u64, 4, 5];
    for seed in seeds {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (rules, _) = intent_rules(&by_intent, &mut rng, 10);
        let engine = setup.engine(Config::default())?;
        engine.upsert_rules(rules)?;
        engine.commit()?;
        let tops: Vec<Option<String>> = run_rules(&engine, &queries, None)?
            .into_iter()
            .map(|hits| hits.into_iter().next().map(|h| h.id))
            .collect();
        let s = abstention_score(&queries, &tops);
        let ungated: Vec<Option<String>> = run_rules(&engine, &queries, Some(1))?
            .into_iter()
            .map(|hits| hits.into_iter().next().map(|h| h.id))
            .collect();
        let open = abstention_score(&queries, &ungated).in_scope_top1;
        println!(
            "| {seed} | {:.3} | {:.3} | {:.3} | {:.3} | {open:.3} |",
            s.in_scope_top1, s.oos_abstention, s.accuracy, s.false_abstention
        );
        for (sum, x) in sums.iter_mut().zip([
            s.in_scope_top1,
            s.oos_abstention,
            s.accuracy,
            s.false_abstention,
            open,
        ]) {
            *sum += x / seeds.len() as f64;
        }
    }
    println!(
        "| mean | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
        sums[0], sums[1], sums[2], sums[3], sums[4]
    );
    Ok(())
}

// # CLINC150 domains as scenarios

/// The 10 domains of CLINC150 as scenarios: the description names the domain and its
/// intents, the examples are `per_intent` random training messages of each intent.
fn domain_scenarios(
    eval: &Path,
    by_intent: &ByIntent,
    rng: &mut ChaCha8Rng,
    per_intent: usize,
) -> Res<(Vec<Scenario>, BTreeMap<String, String>)> {
    let domains: BTreeMap<String, Vec<String>> = serde_json::from_str(&std::fs::read_to_string(
        eval.join("clinc150/domains.json"),
    )?)?;
    let mut domain_of = BTreeMap::new();
    let scenarios = domains
        .iter()
        .map(|(domain, intents)| {
            let mut examples = Vec::new();
            for intent in intents {
                domain_of.insert(intent.clone(), domain.clone());
                let messages = by_intent.get(intent).map(Vec::as_slice).unwrap_or_default();
                examples.extend(messages.choose_multiple(rng, per_intent).cloned());
            }
            let words = |s: &str| s.replace('_', " ");
            let description = format!(
                "{}: {}",
                words(domain),
                intents
                    .iter()
                    .map(|i| words(i))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            Scenario::new(domain, words(domain), description).with_examples(examples)
        })
        .collect();
    Ok((scenarios, domain_of))
}

/// CLINC150 val with its 10 domains as scenarios: the message's domain should come
/// first, an out-of-scope message should activate none.
fn scenarios(setup: &Setup) -> Res<()> {
    let train = clinc_file(&setup.eval, "train.jsonl")?;
    let by_intent = group(&train);
    let val = clinc_file(&setup.eval, "val.jsonl")?;
    let oos = clinc_file(&setup.eval, "oos_val.jsonl")?;
    println!(
        "\n## CLINC150 val as scenario detection, {} ({} in-scope + {} out-of-scope messages, 10 domains as scenarios)\n",
        setup.name,
        val.len(),
        oos.len()
    );
    println!(
        "| examples per intent | seed | first is the domain | out-of-scope with none | accuracy with abstention | in-scope with none | first is the domain, gate off | mean hits |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    for per_intent in [5, 2] {
        for seed in [3u64, 4] {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let (scenarios, domain_of) =
                domain_scenarios(&setup.eval, &by_intent, &mut rng, per_intent)?;
            let mut queries: Vec<Labelled> = val
                .iter()
                .map(|q| Labelled {
                    text: q.text.clone(),
                    intent: q.intent.as_ref().and_then(|i| domain_of.get(i).cloned()),
                })
                .collect();
            queries.extend(oos.iter().map(|q| Labelled {
                text: q.text.clone(),
                intent: None,
            }));
            // The defaults, or `RUCHE_*` overrides for experiments.
            let engine = setup.engine(Config::load(None)?)?;
            engine.upsert_scenarios(scenarios)?;
            engine.commit()?;
            let run = |top_k: Option<usize>| -> Res<Vec<Vec<Hit>>> {
                queries
                    .par_iter()
                    .map(|q| {
                        let mut request = SearchRequest::scenarios(q.text.clone());
                        if let Some(k) = top_k {
                            request = request.with_top_k(k).with_min_relevance(0.0);
                        }
                        Ok(engine.search(&request)?.hits)
                    })
                    .collect()
            };
            if std::env::var_os("SWEEP").is_some() {
                for t in [0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5] {
                    let tops: Vec<Option<String>> = queries
                        .par_iter()
                        .map(|q| {
                            let r = SearchRequest::scenarios(q.text.clone()).with_min_relevance(t);
                            engine
                                .search(&r)
                                .map(|r| r.hits.into_iter().next().map(|h| h.id))
                        })
                        .collect::<Result<_, _>>()?;
                    let s = abstention_score(&queries, &tops);
                    println!(
                        "min_relevance {t}: {:.3} {:.3} {:.3}",
                        s.in_scope_top1, s.oos_abstention, s.accuracy
                    );
                }
            }
            let gated = run(None)?;
            let mean_hits = gated.iter().map(Vec::len).sum::<usize>() as f64 / gated.len() as f64;
            let tops: Vec<Option<String>> = gated
                .into_iter()
                .map(|hits| hits.into_iter().next().map(|h| h.id))
                .collect();
            let s = abstention_score(&queries, &tops);
            let open: Vec<Option<String>> = run(Some(1))?
                .into_iter()
                .map(|hits| hits.into_iter().next().map(|h| h.id))
                .collect();
            let open = abstention_score(&queries, &open).in_scope_top1;
            println!(
                "| {per_intent} | {seed} | {:.3} | {:.3} | {:.3} | {:.3} | {open:.3} | {mean_hits:.2} |",
                s.in_scope_top1, s.oos_abstention, s.accuracy, s.false_abstention
            );
        }
    }
    Ok(())
}

// # BANKING77

/// Messages by intent.
type ByIntent = BTreeMap<String, Vec<String>>;

fn banking_data(eval: &Path) -> Res<(ByIntent, Vec<Labelled>)> {
    let mut patterns: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut queries = Vec::new();
    for row in read_csv(&eval.join("banking77/train.csv"))?
        .into_iter()
        .skip(1)
    {
        let [text, intent] = <[String; 2]>::try_from(row).map_err(|r| format!("bad row {r:?}"))?;
        let examples = patterns.entry(intent.clone()).or_default();
        if examples.len() < 10 {
            examples.push(text);
        } else {
            queries.push(Labelled {
                text,
                intent: Some(intent),
            });
        }
    }
    Ok((patterns, queries))
}

fn banking(setup: &Setup) -> Res<()> {
    let (patterns, queries) = banking_data(&setup.eval)?;
    let engine = setup.engine(Config::default())?;
    engine.upsert_rules(patterns.iter().map(|(intent, examples)| {
        let words = intent.replace('_', " ");
        Rule::new(intent, &words, &words).with_patterns(examples.clone())
    }))?;
    engine.commit()?;
    let tops: Vec<Option<String>> = run_rules(&engine, &queries, Some(1))?
        .into_iter()
        .map(|hits| hits.into_iter().next().map(|h| h.id))
        .collect();
    let gated: Vec<Option<String>> = run_rules(&engine, &queries, None)?
        .into_iter()
        .map(|hits| hits.into_iter().next().map(|h| h.id))
        .collect();
    let open = abstention_score(&queries, &tops);
    let with_gate = abstention_score(&queries, &gated);
    println!(
        "\n## BANKING77, {} ({} messages, 77 rules with 10 patterns)\n\ntop-1 {:.3} with the gate off; with the default gate: top-1 {:.3}, no rule for {:.3} of the messages",
        setup.name,
        queries.len(),
        open.in_scope_top1,
        with_gate.in_scope_top1,
        with_gate.false_abstention
    );
    Ok(())
}

// # SciFact

struct SciFact {
    engine: Engine,
    queries: Vec<(String, Vec<f32>, HashSet<String>)>,
}

fn scifact_index(eval: &Path) -> Res<SciFact> {
    let (abstracts, claims) = data::scifact(eval)?;
    let engine = Engine::builder()
        .with_embedder_spec(EmbedderSpec::None)
        .temporary()?;
    engine.upsert_chunks(
        abstracts
            .into_iter()
            .map(|a| Chunk::new(a.id, a.content).with_embedding(a.vector)),
    )?;
    engine.commit()?;
    let queries = claims
        .into_iter()
        .map(|c| (c.text, c.vector, c.qrels.into_keys().collect()))
        .collect();
    Ok(SciFact { engine, queries })
}

fn ndcg10(ids: &[String], relevant: &HashSet<String>) -> f64 {
    let dcg: f64 = ids
        .iter()
        .take(10)
        .enumerate()
        .filter(|(_, id)| relevant.contains(*id))
        .map(|(i, _)| 1.0 / (i as f64 + 2.0).log2())
        .sum();
    let ideal: f64 = (0..relevant.len().min(10))
        .map(|i| 1.0 / (i as f64 + 2.0).log2())
        .sum();
    dcg / ideal
}

fn scifact(setup: &Setup) -> Res<()> {
    let sf = scifact_index(&setup.eval)?;
    let run = |top_k: Option<usize>, gate: bool| -> Res<Vec<Vec<String>>> {
        sf.queries
            .par_iter()
            .map(|(text, vector, _)| {
                let mut request =
                    SearchRequest::chunks(text.clone()).with_embedding(vector.clone());
                if let Some(k) = top_k {
                    request = request.with_top_k(k);
                }
                if !gate {
                    request = request.with_min_relevance(0.0);
                }
                Ok(sf
                    .engine
                    .search(&request)?
                    .hits
                    .into_iter()
                    .map(|h| h.id)
                    .collect())
            })
            .collect()
    };
    let top10 = run(Some(10), true)?;
    let selected = run(None, true)?;
    let n = sf.queries.len() as f64;
    let ndcg = |lists: &[Vec<String>]| {
        sf.queries
            .iter()
            .zip(lists)
            .map(|((_, _, r), ids)| ndcg10(ids, r))
            .sum::<f64>()
            / n
    };
    let ndcg_open = ndcg(&run(Some(10), false)?);
    let ndcg = ndcg(&top10);
    let (mut p, mut r, mut f1, mut kept, mut empty) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for ((_, _, relevant), ids) in sf.queries.iter().zip(&selected) {
        let tp = ids.iter().filter(|id| relevant.contains(*id)).count() as f64;
        let precision = if ids.is_empty() {
            0.0
        } else {
            tp / ids.len() as f64
        };
        let recall = tp / relevant.len() as f64;
        p += precision / n;
        r += recall / n;
        f1 += if tp > 0.0 {
            2.0 * precision * recall / (precision + recall) / n
        } else {
            0.0
        };
        kept += ids.len() as f64 / n;
        empty += f64::from(ids.is_empty()) / n;
    }
    let fixed = |k: usize| {
        sf.queries
            .iter()
            .zip(&top10)
            .map(|((_, _, relevant), ids)| {
                let ids = &ids[..k.min(ids.len())];
                let tp = ids.iter().filter(|id| relevant.contains(*id)).count() as f64;
                if tp == 0.0 {
                    0.0
                } else {
                    2.0 * tp / (ids.len() as f64 + relevant.len() as f64)
                }
            })
            .sum::<f64>()
            / n
    };
    println!(
        "\n## SciFact train ({} claims, MiniLM vectors supplied)\n\nnDCG@10 {ndcg:.4} (top_k 10; {ndcg_open:.4} with the gate off); default selection keeps {kept:.2} hits (none for {empty:.3} of claims): precision {p:.3}, recall {r:.3}, F1 {f1:.3}; fixed k=1 F1 {:.3}, k=2 {:.3}, k=3 {:.3}",
        sf.queries.len(),
        fixed(1),
        fixed(2),
        fixed(3)
    );
    Ok(())
}

// # Identifiers

fn identifiers_bench(setup: &Setup, n: usize) -> Res<()> {
    let started = Instant::now();
    let (notes, queries) = identifiers::generate(n, 500, 7);
    let build = |config: Config| -> Res<Engine> {
        let engine = setup.engine(config)?;
        for batch in notes.chunks(5_000) {
            engine.upsert_chunks(batch.iter().map(|note| {
                Chunk::new(&note.id, &note.content)
                    .with_importance(note.importance)
                    .with_created_at(Timestamp::from_unix_millis(note.created_at * 1000))
                    .with_context(&note.context_id)
            }))?;
        }
        engine.commit()?;
        Ok(engine)
    };
    let engine = build(Config::default())?;
    let indexed = started.elapsed();
    // As before the relevance gate: seed 001's weights over every candidate, no gate, no
    // code boost.
    let mut before = Config::default();
    before.scoring.chunks = ruchedb::chunk::ChunkWeights::default();
    before.relevance.chunks.min_relevance = 0.0;
    before.relevance.code_boost = 0.0;
    let before = build(before)?;
    let now: Timestamp = identifiers::NOW.parse()?;
    let measure = |engine: &Engine| -> Res<(f64, f64)> {
        let results: Vec<(bool, bool)> = queries
            .par_iter()
            .map(|q| {
                let request = SearchRequest::chunks(q.text.clone())
                    .with_now(now)
                    .with_top_k(10);
                let hits = engine.search(&request)?.hits;
                let holds = |h: &Hit| match h.document.as_ref() {
                    ruchedb::Document::Chunk(c) => c.content.contains(&q.identifier),
                    _ => false,
                };
                Ok((hits.first().is_some_and(holds), hits.iter().any(holds)))
            })
            .collect::<Res<_>>()?;
        let n = results.len() as f64;
        Ok((
            results.iter().filter(|r| r.0).count() as f64 / n,
            results.iter().filter(|r| r.1).count() as f64 / n,
        ))
    };
    let mut unrelated = clinc_file(&setup.eval, "oos_val.jsonl")?;
    unrelated.extend(
        clinc_file(&setup.eval, "val.jsonl")?
            .into_iter()
            .step_by(10),
    );
    let silent = unrelated
        .par_iter()
        .map(|m| {
            let request = SearchRequest::chunks(m.text.clone()).with_now(now);
            Ok(engine.search(&request)?.hits.is_empty())
        })
        .collect::<Res<Vec<bool>>>()?;
    let silent = silent.iter().filter(|s| **s).count() as f64 / silent.len() as f64;
    let (first, top10) = measure(&engine)?;
    let (before_first, before_top10) = measure(&before)?;
    // The default selection (no `top_k`): its first hit, and how many it returns.
    let selected: Vec<(bool, usize)> = queries
        .par_iter()
        .map(|q| {
            let hits = engine
                .search(&SearchRequest::chunks(q.text.clone()).with_now(now))?
                .hits;
            let first = hits.first().is_some_and(|h| match h.document.as_ref() {
                ruchedb::Document::Chunk(c) => c.content.contains(&q.identifier),
                _ => false,
            });
            Ok((first, hits.len()))
        })
        .collect::<Res<_>>()?;
    println!(
        "default selection: first hit holds the identifier {:.3}, {:.2} hits returned on average",
        selected.iter().filter(|s| s.0).count() as f64 / selected.len() as f64,
        selected.iter().map(|s| s.1).sum::<usize>() as f64 / selected.len() as f64
    );
    println!(
        "\n## Identifiers, {}: {n} notes, {} queries (indexed in {:.1} s)\n\nfirst hit holds the identifier: {first:.3} (within the top 10: {top10:.3}); before the gate (seed 001's weights over every candidate, no code boost): {before_first:.3} ({before_top10:.3}); {} CLINC150 messages answered with no note: {silent:.3}",
        setup.name,
        queries.len(),
        indexed.as_secs_f64(),
        unrelated.len()
    );
    Ok(())
}

// # The sample index

fn sample(setup: &Setup) -> Res<()> {
    let engine = setup.engine(Config::default())?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("index_data");
    let rules: toml::Value = toml::from_str(&std::fs::read_to_string(root.join("rules.toml"))?)?;
    let rules: Vec<Rule> = rules["rules"]
        .as_array()
        .ok_or("no [[rules]]")?
        .iter()
        .map(|r| Ok(serde_json::from_value(serde_json::to_value(r)?)?))
        .collect::<Res<_>>()?;
    engine.upsert_rules(rules)?;
    engine.commit()?;
    println!(
        "\n## The sample index ({}): out-of-scope messages\n",
        setup.name
    );
    for text in [
        "what is the weather tomorrow",
        "ok",
        "xyzzy qwerty plugh",
        "1234",
        "who won the football game last night",
        "tell me a joke",
    ] {
        let response = engine.search(&SearchRequest::rules(text))?;
        let top = response.hits.first().map_or("no hit".to_string(), |h| {
            format!("`{}` ({:.3})", h.id, h.score)
        });
        println!(
            "- \"{text}\": {top}; best rejected: {:?}",
            response.gate.best_rejected
        );
    }
    Ok(())
}

// # Fitting the calibrations

/// One candidate: its signals and whether it is the right answer.
#[derive(Debug, Clone, Copy)]
struct Sample {
    vector: f64,
    coverage: f64,
    /// 1 for a rule without patterns (its only vector is its text's), else 0.
    bare: f64,
    right: bool,
}

impl Sample {
    fn of(hit: &Hit, right: bool) -> Sample {
        let bare = match hit.document.as_ref() {
            ruchedb::Document::Rule(rule) if rule.patterns.is_empty() => 1.0,
            _ => 0.0,
        };
        Sample {
            vector: hit.breakdown.vector.unwrap_or(0.0),
            coverage: hit.breakdown.text_coverage,
            bare,
            right,
        }
    }

    fn x(&self) -> [f64; 4] {
        [self.vector, self.coverage, self.bare, 1.0]
    }
}

/// `[vector_weight, coverage_weight, bias_without_patterns, bias]`.
type Weights = [f64; 4];

fn sigmoid(w: &Weights, s: &Sample) -> f64 {
    let z: f64 = w.iter().zip(s.x()).map(|(w, x)| w * x).sum();
    1.0 / (1.0 + (-z).exp())
}

/// Logistic regression by Newton's method with a small ridge; `used` says which
/// columns are fitted (the others stay 0).
fn logistic(samples: &[Sample], used: [bool; 4]) -> Weights {
    let mut w = [0.0f64; 4];
    for _ in 0..50 {
        let mut grad = [0.0; 4];
        let mut hess = [[0.0; 4]; 4];
        for s in samples {
            let x = s.x();
            let p = sigmoid(&w, s);
            let y = f64::from(u8::from(s.right));
            for a in (0..4).filter(|&a| used[a]) {
                grad[a] += (p - y) * x[a];
                for b in (0..4).filter(|&b| used[b]) {
                    hess[a][b] += p * (1.0 - p) * x[a] * x[b];
                }
            }
        }
        for (a, row) in hess.iter_mut().enumerate() {
            grad[a] += 1e-3 * w[a];
            row[a] += 1e-3;
        }
        let step = solve(hess, grad);
        for (wa, step) in w.iter_mut().zip(step) {
            *wa -= step;
        }
    }
    w
}

/// Gauss-Jordan elimination with partial pivoting.
fn solve(mut a: [[f64; 4]; 4], mut b: [f64; 4]) -> [f64; 4] {
    for col in 0..4 {
        let pivot = (col..4)
            .max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))
            .unwrap_or(col);
        a.swap(col, pivot);
        b.swap(col, pivot);
        let d = a[col][col];
        if d.abs() < 1e-12 {
            continue;
        }
        for row in 0..4 {
            if row != col {
                let f = a[row][col] / d;
                let pivot_row = a[col];
                for (x, p) in a[row].iter_mut().zip(pivot_row) {
                    *x -= f * p;
                }
                b[row] -= f * b[col];
            }
        }
    }
    std::array::from_fn(|i| {
        if a[i][i].abs() < 1e-12 {
            0.0
        } else {
            b[i] / a[i][i]
        }
    })
}

/// One labelled query: its candidates best first, and whether it is in scope.
type LabelledQuery = (Vec<Sample>, bool);

/// Rules on CLINC150 train (30 intents held out as out-of-scope) and BANKING77 (15
/// intents held out), each with 10 random patterns per rule and without patterns; 10
/// other messages per intent as queries. Per query, the top 10 candidates, labelled, and
/// whether its rules have patterns.
fn rule_queries(setup: &Setup, legs: Legs) -> Res<Vec<(bool, LabelledQuery)>> {
    let mut per_query = Vec::new();
    let clinc = group(&clinc_file(&setup.eval, "train.jsonl")?);
    let (banking, banking_queries) = banking_data(&setup.eval)?;
    let mut banking_by = banking.clone();
    for q in &banking_queries {
        if let Some(intent) = &q.intent {
            banking_by
                .get_mut(intent)
                .expect("intent")
                .push(q.text.clone());
        }
    }
    let sets = [
        (&clinc, 30, 11u64, 10),
        (&banking_by, 15, 12, 10),
        (&clinc, 30, 13, 0),
        (&banking_by, 15, 14, 0),
    ];
    for (data, held_out, seed, patterns) in sets {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (rules, used) = intent_rules(data, &mut rng, patterns);
        let mut intents: Vec<String> = data.keys().cloned().collect();
        intents.shuffle(&mut rng);
        let out: HashSet<String> = intents[..held_out].iter().cloned().collect();
        let mut config = Config::default();
        config.pipeline.retrieval.max_candidates = 10;
        let engine = match legs {
            Legs::Text => Engine::builder()
                .with_config(config)
                .with_embedder_spec(EmbedderSpec::None)
                .temporary()?,
            _ => setup.engine(config)?,
        };
        engine.upsert_rules(rules.into_iter().filter(|r| !out.contains(&r.id)))?;
        engine.commit()?;
        let mut queries = Vec::new();
        for (intent, messages) in data {
            let fresh: Vec<&String> = messages.iter().filter(|m| !used.contains(*m)).collect();
            for m in fresh.choose_multiple(&mut rng, 10) {
                queries.push((
                    (*m).clone(),
                    (!out.contains(intent)).then(|| intent.clone()),
                ));
            }
        }
        let results: Vec<Vec<Hit>> = queries
            .par_iter()
            .map(|(text, _)| {
                let mut request = SearchRequest::rules(text.clone())
                    .with_top_k(10)
                    .with_min_relevance(0.0);
                if legs == Legs::Vector {
                    let v = setup.embedder.embed_batch(&[text.as_str()])?.remove(0);
                    request = SearchRequest::rules("")
                        .with_embedding(v)
                        .with_top_k(10)
                        .with_min_relevance(0.0);
                }
                Ok(engine.search(&request)?.hits)
            })
            .collect::<Res<_>>()?;
        for ((_, intent), hits) in queries.iter().zip(results) {
            let cands: Vec<Sample> = hits
                .iter()
                .map(|h| Sample::of(h, intent.as_deref() == Some(h.id.as_str())))
                .collect();
            per_query.push((patterns > 0, (cands, intent.is_some())));
        }
    }
    Ok(per_query)
}

/// Scenarios on CLINC150 train, five folds that each hold two of the ten domains out as
/// out-of-scope: the other eight domains as scenarios (5 random training messages per
/// intent as examples), 3 other training messages per intent of the eight and 10 per
/// intent of the two held out as queries. Per query, the candidates, labelled.
fn scenario_queries(setup: &Setup, legs: Legs) -> Res<Vec<LabelledQuery>> {
    let by_intent = group(&clinc_file(&setup.eval, "train.jsonl")?);
    let mut per_query = Vec::new();
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let (all, domain_of) = domain_scenarios(&setup.eval, &by_intent, &mut rng, 5)?;
    let mut order: Vec<String> = all.iter().map(|s| s.id.clone()).collect();
    order.shuffle(&mut rng);
    for fold in order.chunks(2) {
        let (scenarios, _) = domain_scenarios(&setup.eval, &by_intent, &mut rng, 5)?;
        let used: HashSet<&String> = scenarios.iter().flat_map(|s| &s.examples).collect();
        let engine = match legs {
            Legs::Text => Engine::builder()
                .with_config(Config::default())
                .with_embedder_spec(EmbedderSpec::None)
                .temporary()?,
            _ => setup.engine(Config::default())?,
        };
        engine.upsert_scenarios(scenarios.iter().filter(|s| !fold.contains(&s.id)).cloned())?;
        engine.commit()?;
        let mut queries: Vec<(String, Option<String>)> = Vec::new();
        for (intent, messages) in &by_intent {
            let domain = &domain_of[intent];
            let held_out = fold.contains(domain);
            let fresh: Vec<&String> = messages.iter().filter(|m| !used.contains(*m)).collect();
            let n = if held_out { 10 } else { 3 };
            for m in fresh.choose_multiple(&mut rng, n) {
                queries.push(((*m).clone(), (!held_out).then(|| domain.clone())));
            }
        }
        let results: Vec<Vec<Hit>> = queries
            .par_iter()
            .map(|(text, _)| {
                let request = if legs == Legs::Vector {
                    let v = setup.embedder.embed_batch(&[text.as_str()])?.remove(0);
                    SearchRequest::scenarios("").with_embedding(v)
                } else {
                    SearchRequest::scenarios(text.clone())
                };
                Ok(engine
                    .search(&request.with_top_k(10).with_min_relevance(0.0))?
                    .hits)
            })
            .collect::<Res<_>>()?;
        for ((_, domain), hits) in queries.iter().zip(results) {
            let cands: Vec<Sample> = hits
                .iter()
                .map(|h| Sample::of(h, domain.as_deref() == Some(h.id.as_str())))
                .collect();
            per_query.push((cands, domain.is_some()));
        }
    }
    Ok(per_query)
}

/// Fits the scenarios' calibrations as the rules' are fitted.
fn fit_scenarios(setup: &Setup) -> Res<()> {
    println!("\n## Scenario calibrations, {}\n", setup.name);
    for legs in [Legs::Both, Legs::Vector, Legs::Text] {
        fit_queries("scenarios", legs, &scenario_queries(setup, legs)?);
    }
    Ok(())
}

/// Fits a calibration on the best candidate of each query (a relevance of 0.8 means that
/// 80% of best candidates with these signals are the right answer), picks the threshold
/// that maximises accuracy with abstention, and prints it shifted to 0.5.
fn fit_queries(what: &str, legs: Legs, queries: &[LabelledQuery]) {
    let samples: Vec<Sample> = queries
        .iter()
        .filter_map(|q| q.0.first().copied())
        .collect();
    let w = logistic(
        &samples,
        [legs != Legs::Text, legs != Legs::Vector, false, true],
    );
    let (t, acc) = best_threshold(queries, &w);
    println!(
        "{what}, {legs:?}: threshold {t:.2}, accuracy with abstention {acc:.3} on the fitting data ({} queries)",
        queries.len()
    );
    print_weights("  at 0.5", &at_half(w, t));
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Legs {
    Both,
    Vector,
    Text,
}

/// The threshold on relevance that maximises accuracy with abstention (out-of-scope
/// weighted to the realistic mix): the answer is the first candidate that passes.
fn best_threshold(per_query: &[LabelledQuery], w: &Weights) -> (f64, f64) {
    let n_in = per_query.iter().filter(|q| q.1).count() as f64;
    let n_oos = per_query.len() as f64 - n_in;
    let weight = OOS_SHARE / (n_oos / n_in);
    let mut best = (0.0, 0.0);
    for step in 1..100 {
        let t = f64::from(step) / 100.0;
        let (mut right, mut silent) = (0.0, 0.0);
        for (cands, in_scope) in per_query {
            let top = cands.iter().find(|c| sigmoid(w, c) >= t);
            match (top, in_scope) {
                (Some(c), true) => right += f64::from(u8::from(c.right)),
                (None, false) => silent += 1.0,
                _ => {}
            }
        }
        let acc = (right + weight * silent) / (n_in + weight * n_oos);
        if acc > best.1 {
            best = (t, acc);
        }
    }
    best
}

/// Shifts the bias so that relevance 0.5 is the chosen threshold `t`.
fn at_half(mut w: Weights, t: f64) -> Weights {
    w[3] -= (t / (1.0 - t)).ln();
    w
}

/// Chunks: SciFact train claims against the abstracts (a relevant abstract among a
/// claim's top 10 candidates is a positive) and CLINC150 messages against the same
/// abstracts (every candidate a negative: nothing in a corpus of scientific abstracts
/// answers "how do i find the area of a circle"). With `minilm`, the given MiniLM
/// vectors and the setup's embedder (which must then be all-MiniLM-L6-v2) for the
/// messages; else the setup's embedder for everything.
fn chunk_samples(setup: &Setup, minilm: bool, legs: Legs) -> Res<Vec<Sample>> {
    let (abstracts, claims) = data::scifact(&setup.eval)?;
    let mut config = Config::default();
    config.pipeline.retrieval.max_candidates = 10;
    let engine = match (legs, minilm) {
        (Legs::Text, _) | (_, true) => Engine::builder()
            .with_config(config)
            .with_embedder_spec(EmbedderSpec::None)
            .temporary()?,
        _ => setup.engine(config)?,
    };
    let given = minilm && legs != Legs::Text;
    engine.upsert_chunks(abstracts.into_iter().map(|a| {
        let chunk = Chunk::new(a.id, a.content);
        if given {
            chunk.with_embedding(a.vector)
        } else {
            chunk
        }
    }))?;
    engine.commit()?;
    // (text, given vector, relevant ids: None for an unrelated message)
    type ChunkQuery = (String, Option<Vec<f32>>, Option<HashSet<String>>);
    let mut queries: Vec<ChunkQuery> = claims
        .into_iter()
        .map(|c| {
            let relevant = c.qrels.into_keys().collect();
            (c.text, minilm.then_some(c.vector), Some(relevant))
        })
        .collect();
    let mut messages = clinc_file(&setup.eval, "oos_val.jsonl")?;
    let mut val = clinc_file(&setup.eval, "val.jsonl")?;
    val.shuffle(&mut ChaCha8Rng::seed_from_u64(13));
    messages.extend(val.into_iter().take(700));
    for m in messages {
        let vector = if minilm {
            Some(setup.embedder.embed_batch(&[m.text.as_str()])?.remove(0))
        } else {
            None
        };
        queries.push((m.text, vector, None));
    }
    let results: Vec<Vec<Hit>> = queries
        .par_iter()
        .map(|(text, vector, _)| {
            let query_text = if legs == Legs::Vector {
                ""
            } else {
                text.as_str()
            };
            let mut request = SearchRequest::chunks(query_text)
                .with_top_k(10)
                .with_min_relevance(0.0);
            match (vector, legs) {
                (Some(v), Legs::Both | Legs::Vector) => request = request.with_embedding(v.clone()),
                (None, Legs::Vector) => {
                    let v = setup.embedder.embed_batch(&[text.as_str()])?.remove(0);
                    request = request.with_embedding(v);
                }
                _ => {}
            }
            Ok(engine.search(&request)?.hits)
        })
        .collect::<Res<_>>()?;
    let mut samples = Vec::new();
    for ((_, _, relevant), hits) in queries.iter().zip(results) {
        for h in hits {
            match relevant {
                Some(r) if r.contains(&h.id) => samples.push(Sample::of(&h, true)),
                Some(_) => {} // Not judged relevant, but perhaps relevant: left out.
                None => samples.push(Sample::of(&h, false)),
            }
        }
    }
    Ok(samples)
}

fn print_weights(what: &str, w: &Weights) {
    println!(
        "{what}: vector_weight {:.2}, coverage_weight {:.2}, bias {:.2}",
        w[0], w[1], w[3]
    );
}

fn fit(setup: &Setup) -> Res<()> {
    println!("\n## Calibrations, {}\n", setup.name);
    for legs in [Legs::Both, Legs::Vector, Legs::Text] {
        let per_query = rule_queries(setup, legs)?;
        // Rules with patterns (their best of 12 vectors) and without (one vector) score
        // on different scales: one calibration each.
        for (name, patterns) in [("with patterns", true), ("without patterns", false)] {
            let queries: Vec<LabelledQuery> = per_query
                .iter()
                .filter(|q| q.0 == patterns)
                .map(|q| q.1.clone())
                .collect();
            fit_queries(&format!("rules {name}"), legs, &queries);
        }
    }
    let minilm = setup.name.contains("bert");
    for legs in [Legs::Both, Legs::Vector, Legs::Text] {
        let samples = chunk_samples(setup, minilm, legs)?;
        let w = logistic(
            &samples,
            [legs != Legs::Text, legs != Legs::Vector, false, true],
        );
        let mut positives: Vec<f64> = samples
            .iter()
            .filter(|s| s.right)
            .map(|s| sigmoid(&w, s))
            .collect();
        positives.sort_by(f64::total_cmp);
        let negatives: Vec<&Sample> = samples.iter().filter(|s| !s.right).collect();
        println!(
            "chunks, {legs:?}: {} relevant abstracts, {} candidates of unrelated messages",
            positives.len(),
            negatives.len()
        );
        for keep in [0.98, 0.99, 0.995, 0.998] {
            let t = positives[((1.0 - keep) * positives.len() as f64) as usize];
            let rejected = negatives.iter().filter(|s| sigmoid(&w, s) < t).count() as f64
                / negatives.len() as f64;
            println!("  keeping {keep} of the relevant rejects {rejected:.3} of the unrelated");
            if keep == 0.998 {
                print_weights("  at 0.5", &at_half(w, t));
            }
        }
    }
    Ok(())
}

fn main() -> Res<()> {
    let mut args = std::env::args().skip(1).peekable();
    let mut eval = PathBuf::from("../shared/eval");
    let mut bert: Option<PathBuf> = None;
    let mut tasks: Vec<String> = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--eval" => eval = args.next().ok_or("--eval DIR")?.into(),
            "--bert" => bert = Some(args.next().ok_or("--bert DIR")?.into()),
            _ => tasks.push(arg),
        }
    }
    let (embedder, name): (Arc<dyn Embedder>, String) = match bert {
        #[cfg(feature = "bert")]
        Some(dir) => (
            Arc::new(ruchedb::BertEmbedder::from_dir(dir)?),
            "all-MiniLM-L6-v2 (bert)".into(),
        ),
        #[cfg(not(feature = "bert"))]
        Some(_) => return Err("--bert needs `--features bert`".into()),
        None => (
            Arc::new(StaticEmbedder::bundled()?),
            "bundled static embedder".into(),
        ),
    };
    let setup = Setup {
        eval,
        embedder,
        name,
    };
    if tasks.is_empty() {
        tasks = ["clinc", "banking", "scifact", "identifiers", "sample"]
            .map(String::from)
            .to_vec();
    }
    let mut i = 0;
    while i < tasks.len() {
        let started = Instant::now();
        match tasks[i].as_str() {
            "clinc" => clinc(&setup)?,
            "banking" => banking(&setup)?,
            "scenarios" => scenarios(&setup)?,
            "scifact" => scifact(&setup)?,
            "identifiers" => {
                let n = tasks
                    .get(i + 1)
                    .and_then(|s| s.parse().ok())
                    .inspect(|_| i += 1)
                    .unwrap_or(20_000);
                identifiers_bench(&setup, n)?;
            }
            "sample" => sample(&setup)?,
            "fit" => fit(&setup)?,
            "fit-scenarios" => fit_scenarios(&setup)?,
            other => return Err(format!("unknown task `{other}`").into()),
        }
        eprintln!("{}: {:.0} s", tasks[i], started.elapsed().as_secs_f64());
        i += 1;
    }
    Ok(())
}
