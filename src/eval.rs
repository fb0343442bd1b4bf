//! Retrieval metrics: nDCG, recall, reciprocal rank, and set precision/recall.
//!
//! Pure functions over a ranked list of ids and a relevance judgement (`qrels`: id to
//! graded relevance, where 0 or absent means not relevant), as `trec_eval` computes them
//! (gain = relevance, discount = log2(rank + 1)). This is what `ruche eval` reports, and
//! what users call to tune the engine on their own judgements.

use std::collections::HashMap;

/// Relevance judgements of one query: document id to relevance (> 0 is relevant).
pub type Qrels = HashMap<String, u32>;

/// nDCG@k of `ranked` (best first) against `qrels`; 0 when nothing is relevant.
///
/// # Example
///
/// ```
/// use ruchedb::eval::{ndcg_at, Qrels};
///
/// let qrels: Qrels = [("a".to_string(), 1)].into_iter().collect();
/// assert_eq!(ndcg_at(&["a", "b"], &qrels, 10), 1.0);
/// assert!((ndcg_at(&["b", "a"], &qrels, 10) - 1.0 / 3f64.log2()).abs() < 1e-12);
/// ```
pub fn ndcg_at<S: AsRef<str>>(ranked: &[S], qrels: &Qrels, k: usize) -> f64 {
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .map(|(rank, id)| gain(qrels, id.as_ref()) / (rank as f64 + 2.0).log2())
        .sum();
    let mut ideal: Vec<u32> = qrels.values().copied().filter(|r| *r > 0).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(k)
        .enumerate()
        .map(|(rank, rel)| f64::from(*rel) / (rank as f64 + 2.0).log2())
        .sum();
    if idcg == 0.0 { 0.0 } else { dcg / idcg }
}

/// The fraction of relevant documents found in the first `k` of `ranked`.
pub fn recall_at<S: AsRef<str>>(ranked: &[S], qrels: &Qrels, k: usize) -> f64 {
    let relevant = n_relevant(qrels);
    if relevant == 0 {
        return 0.0;
    }
    let found = ranked
        .iter()
        .take(k)
        .filter(|id| gain(qrels, id.as_ref()) > 0.0)
        .count();
    found as f64 / relevant as f64
}

/// 1 / rank of the first relevant document within the first `k`, else 0.
pub fn reciprocal_rank_at<S: AsRef<str>>(ranked: &[S], qrels: &Qrels, k: usize) -> f64 {
    ranked
        .iter()
        .take(k)
        .position(|id| gain(qrels, id.as_ref()) > 0.0)
        .map_or(0.0, |rank| 1.0 / (rank as f64 + 1.0))
}

/// Precision, recall and F1 of a selected set (order ignored).
///
/// An empty selection has precision 1 when nothing is relevant and 0 otherwise.
pub fn set_precision_recall_f1<S: AsRef<str>>(selected: &[S], qrels: &Qrels) -> (f64, f64, f64) {
    let relevant = n_relevant(qrels);
    let hits = selected
        .iter()
        .filter(|id| gain(qrels, id.as_ref()) > 0.0)
        .count();
    let precision = if selected.is_empty() {
        if relevant == 0 { 1.0 } else { 0.0 }
    } else {
        hits as f64 / selected.len() as f64
    };
    let recall = if relevant == 0 {
        1.0
    } else {
        hits as f64 / relevant as f64
    };
    let f1 = if precision + recall == 0.0 {
        0.0
    } else {
        2.0 * precision * recall / (precision + recall)
    };
    (precision, recall, f1)
}

/// The `q`-quantile (0..=1) of `values` by nearest rank; 0 for an empty list.
pub fn percentile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (q.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn gain(qrels: &Qrels, id: &str) -> f64 {
    f64::from(qrels.get(id).copied().unwrap_or(0))
}

fn n_relevant(qrels: &Qrels) -> usize {
    qrels.values().filter(|r| **r > 0).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qrels(pairs: &[(&str, u32)]) -> Qrels {
        pairs.iter().map(|(id, r)| (id.to_string(), *r)).collect()
    }

    #[test]
    fn ndcg_matches_hand_computation() {
        let q = qrels(&[("a", 1), ("b", 1), ("z", 0)]);
        assert_eq!(ndcg_at(&["a", "b", "c"], &q, 10), 1.0);
        let dcg = 1.0 / 3f64.log2() + 1.0 / 4f64.log2();
        let idcg = 1.0 + 1.0 / 3f64.log2();
        assert!((ndcg_at(&["c", "a", "b"], &q, 10) - dcg / idcg).abs() < 1e-12);
        assert_eq!(ndcg_at(&["c", "a", "b"], &q, 1), 0.0);
        assert_eq!(ndcg_at::<&str>(&[], &q, 10), 0.0);
        assert_eq!(ndcg_at(&["a"], &qrels(&[]), 10), 0.0);
        // Graded relevance.
        let graded = qrels(&[("a", 2), ("b", 1)]);
        assert!(ndcg_at(&["b", "a"], &graded, 10) < 1.0);
    }

    #[test]
    fn recall_mrr_and_sets() {
        let q = qrels(&[("a", 1), ("b", 1)]);
        assert_eq!(recall_at(&["x", "a", "y"], &q, 2), 0.5);
        assert_eq!(reciprocal_rank_at(&["x", "y", "b"], &q, 10), 1.0 / 3.0);
        assert_eq!(reciprocal_rank_at(&["x", "y", "b"], &q, 2), 0.0);
        let (p, r, f1) = set_precision_recall_f1(&["a", "x"], &q);
        assert_eq!((p, r), (0.5, 0.5));
        assert!((f1 - 0.5).abs() < 1e-12);
        assert_eq!(set_precision_recall_f1::<&str>(&[], &q), (0.0, 0.0, 0.0));
    }

    #[test]
    fn percentiles() {
        let values = [5.0, 1.0, 3.0, 2.0, 4.0];
        assert_eq!(percentile(&values, 0.5), 3.0);
        assert_eq!(percentile(&values, 0.99), 5.0);
        assert_eq!(percentile(&values, 0.0), 1.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }
}
