//! Rules applied whatever their relevance ([`Apply`](crate::Apply)): always, by a file
//! the request names, by name. They come first in a rule search's hits, before what the
//! gate passed, and are never cut by its selection.

use std::sync::Arc;

use crate::Result;
use crate::model::doc::Document;
use crate::model::leg::PerLeg;
use crate::query::{Hit, ScoreBreakdown, SearchRequest, SearchResponse};
use crate::relevance::GateDecision;
use crate::retrieve::{AppliedBy, RetrievalQuery, Retriever, applied_by};

/// Puts the rules `request` applies whatever their relevance in front of `response`'s
/// hits (always-applied, then by file, then by name; by priority, then id, within
/// each), and drops them from where the gate had them.
pub(crate) fn add_applied(
    retriever: &(impl Retriever + ?Sized),
    request: &SearchRequest,
    now: crate::Timestamp,
    response: &mut SearchResponse,
) -> Result<()> {
    let query = RetrievalQuery::new(request, None, 0, now);
    let mut applied: Vec<(AppliedBy, Arc<Document>)> = retriever
        .applied_rules(&query)?
        .into_iter()
        .filter_map(|doc| {
            let by = applied_by(&query, doc.as_rule()?)?;
            Some((by, doc))
        })
        .collect();
    if applied.is_empty() {
        return Ok(());
    }
    applied.sort_by(|(a, x), (b, y)| {
        let priority = |d: &Document| d.as_rule().map_or(0, |r| r.priority);
        a.cmp(b)
            .then(priority(y).cmp(&priority(x)))
            .then_with(|| x.id().cmp(y.id()))
    });
    applied.dedup_by(|(_, a), (_, b)| a.id() == b.id());
    let ids: Vec<String> = applied.iter().map(|(_, d)| d.id().to_string()).collect();
    response.hits.retain(|hit| !ids.contains(&hit.id));
    let hits: Vec<Hit> = applied
        .into_iter()
        .map(|(by, document)| Hit {
            id: document.id().to_string(),
            score: 1.0,
            breakdown: breakdown(by),
            document,
        })
        .collect();
    let count = hits.len();
    response.hits.splice(0..0, hits);
    let metadata = &mut response.selection.metadata;
    metadata.insert("applied".into(), count.into());
    // `max_tokens` holds with them: the longest prefix within the budget, as the
    // selection's own cut.
    if let Some(budget) = request.max_tokens {
        let mut spent = 0usize;
        let mut keep = 0;
        for hit in &response.hits {
            let tokens = budget_tokens(&hit.document);
            if spent + tokens > budget {
                break;
            }
            spent += tokens;
            keep += 1;
        }
        let cut = response.hits.len() - keep;
        response.hits.truncate(keep);
        metadata.insert("tokens".into(), spent.into());
        if cut > 0 {
            let before = metadata
                .get("cut_by_budget")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0);
            metadata.insert("cut_by_budget".into(), (before + cut as u64).into());
        }
    }
    response.selection.output_count = response.hits.len();
    Ok(())
}

/// The tokens a hit takes in `max_tokens`: its text, and a rule's body.
pub(crate) fn budget_tokens(document: &Document) -> usize {
    let body = document
        .as_rule()
        .and_then(|rule| rule.body.as_deref())
        .map_or(0, crate::tokens::count_tokens);
    crate::tokens::count_tokens(&document.text()) + body
}

/// The breakdown of a rule applied whatever its relevance: no leg's score, the gate's
/// [`GateDecision::Applied`].
fn breakdown(by: AppliedBy) -> ScoreBreakdown {
    ScoreBreakdown {
        vector: None,
        bm25: 0.0,
        bm25_normalized: 0.0,
        text_coverage: 0.0,
        codes_matched: 0,
        vector_match: None,
        code_term: None,
        vector_normalized: 0.0,
        hybrid: 0.0,
        priority_term: None,
        scope_term: None,
        relevance: None,
        gate: GateDecision::Applied(by),
        importance: None,
        recency: None,
        found_by: PerLeg::default(),
        graph: None,
        graph_normalized: 0.0,
        graph_path: None,
        centroid: None,
        neighbour_term: None,
        speaker_term: None,
    }
}

/// Among rules for a folder (an `AGENTS.md`'s sections) on one topic (their last
/// heading), the nearest file wins: for each file the request names, only the deepest
/// folder holding it keeps its rule on that topic; a rule stays a candidate when it is
/// the nearest for one of the files (the candidates were admitted for being for one).
pub(crate) fn keep_nearest(candidates: &mut Vec<crate::retrieve::RetrievedDoc>, files: &[String]) {
    use crate::model::apply::in_folder;
    use std::collections::HashMap;
    let topic = |doc: &Document| -> Option<(String, String)> {
        let rule = doc.as_rule()?;
        let folder = rule.folder.clone()?;
        let heading = rule
            .source
            .as_ref()
            .and_then(|s| s.headings.last())
            .map_or(rule.condition.as_str(), String::as_str);
        Some((heading.to_lowercase(), folder))
    };
    let depth = |folder: &str| match folder.trim_matches('/') {
        "" | "." => 0,
        folder => folder.split('/').count(),
    };
    // For each topic and file: the depth of the nearest folder holding the file.
    let mut nearest: HashMap<(String, usize), usize> = HashMap::new();
    for candidate in candidates.iter() {
        if let Some((heading, folder)) = topic(&candidate.document) {
            for (at, file) in files.iter().enumerate() {
                if in_folder(&folder, file) {
                    let best = nearest.entry((heading.clone(), at)).or_insert(0);
                    *best = (*best).max(depth(&folder));
                }
            }
        }
    }
    candidates.retain(|candidate| {
        topic(&candidate.document).is_none_or(|(heading, folder)| {
            files.iter().enumerate().any(|(at, file)| {
                in_folder(&folder, file)
                    && nearest.get(&(heading.clone(), at)) == Some(&depth(&folder))
            })
        })
    });
}
