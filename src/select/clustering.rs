//! The `clustering` strategy: keep the best items of each group of similar scores.

use serde_json::{Map, Value};

use super::param;
use super::strategy::{SelectionInput, SelectionResult, SelectionStrategy};

/// Groups the scores with a 1-D DBSCAN and keeps the best items of each group.
///
/// For queries that match several distinct topics, each forming its own band of scores.
///
/// 1. Candidates are the items at or above `min_score` (when fewer than `min_k` are, the
///    first `min_k` items instead). With no more than `min_cluster_size` candidates they
///    are all kept, up to `max_k` (reason `too_few_items`).
/// 2. DBSCAN over the candidate scores: a score is a *core* point when at least
///    `min_cluster_size` scores, itself included, lie within `eps` of it; core points
///    within `eps` of each other share a cluster, and a non-core score within `eps` of a
///    core point joins the first (best) such cluster. The other scores are *noise*.
///    Clusters are numbered from the best score down.
/// 3. The first `top_per_cluster` items of each cluster, best cluster first; then the noise
///    items scoring strictly above `min_score`; then, while fewer than `min_k` items are
///    selected, the best candidates not yet selected. Nothing beyond `max_k` is added.
/// 4. The selection is sorted by score descending. Unlike the other strategies it need not
///    be a prefix of the input: a lower cluster's best item can come before a higher
///    cluster's fourth.
///
/// ## Defaults
///
/// `eps` 0.1, `min_cluster_size` 2, `top_per_cluster` 3, `min_score` 0.4 (seed 000).
///
/// ## Metadata
///
/// Either `clusters` (1) and `reason` (`too_few_items`), or `num_clusters`,
/// `cluster_sizes` (an object from cluster number, as a string, to its number of items)
/// and `noise_count`.
///
/// # Example
///
/// ```
/// use ruchedb::select::{ClusteringSelection, SelectionStrategy};
///
/// let clustering = ClusteringSelection::default().with_top_per_cluster(1)?;
/// let scores = [0.92, 0.89, 0.71, 0.45, 0.42];
/// let result = clustering.select_scores(&scores, 30, 1)?;
/// // Clusters {0.92, 0.89} and {0.45, 0.42}, and 0.71 alone (noise above min_score).
/// assert_eq!(result.selected, [0, 2, 3]);
/// assert_eq!(result.metadata["num_clusters"], 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ClusteringSelection {
    /// The DBSCAN neighbourhood radius, as a score distance; finite and greater than 0.
    eps: f64,
    /// The number of scores (itself included) within `eps` that make a core point, and the
    /// candidate count up to which no clustering is done; at least 1.
    min_cluster_size: usize,
    /// The number of items kept from each cluster, at least 1.
    top_per_cluster: usize,
    /// Items scoring below this are not candidates (beyond the first `min_k`), in `0..=1`.
    min_score: f64,
}

impl Default for ClusteringSelection {
    fn default() -> Self {
        ClusteringSelection {
            eps: 0.1,
            min_cluster_size: 2,
            top_per_cluster: 3,
            min_score: 0.4,
        }
    }
}

impl ClusteringSelection {
    /// Sets the DBSCAN neighbourhood radius (a score distance).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) (key `eps`) unless
    /// `eps` is finite and greater than 0.
    pub fn with_eps(mut self, eps: f64) -> crate::Result<Self> {
        check_eps("eps", eps)?;
        self.eps = eps;
        Ok(self)
    }

    /// Sets the number of scores within `eps` that make a core point.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) (key
    /// `min_cluster_size`) if `min_cluster_size` is 0.
    pub fn with_min_cluster_size(mut self, min_cluster_size: usize) -> crate::Result<Self> {
        check_count("min_cluster_size", min_cluster_size)?;
        self.min_cluster_size = min_cluster_size;
        Ok(self)
    }

    /// Sets the number of items kept from each cluster.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) (key
    /// `top_per_cluster`) if `top_per_cluster` is 0.
    pub fn with_top_per_cluster(mut self, top_per_cluster: usize) -> crate::Result<Self> {
        check_count("top_per_cluster", top_per_cluster)?;
        self.top_per_cluster = top_per_cluster;
        Ok(self)
    }

    /// Sets the score below which items are not candidates.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) (key `min_score`)
    /// unless `min_score` is in `0..=1`.
    pub fn with_min_score(mut self, min_score: f64) -> crate::Result<Self> {
        param::min_score("min_score", min_score)?;
        self.min_score = min_score;
        Ok(self)
    }

    /// Returns the DBSCAN neighbourhood radius.
    pub fn eps(&self) -> f64 {
        self.eps
    }

    /// Returns the number of scores within `eps` that make a core point.
    pub fn min_cluster_size(&self) -> usize {
        self.min_cluster_size
    }

    /// Returns the number of items kept from each cluster.
    pub fn top_per_cluster(&self) -> usize {
        self.top_per_cluster
    }

    /// Returns the score below which items are not candidates.
    pub fn min_score(&self) -> f64 {
        self.min_score
    }
}

/// Checks an `eps`: finite and greater than 0.
pub(crate) fn check_eps(key: &str, eps: f64) -> crate::Result<()> {
    param::positive(key, eps)
}

/// Checks `min_cluster_size` or `top_per_cluster`: at least 1.
pub(crate) fn check_count(key: &str, count: usize) -> crate::Result<()> {
    param::count_at_least(key, count, 1)
}

/// Labels sorted-descending `scores` with 1-D DBSCAN: `Some(cluster)` or `None` (noise).
///
/// Equivalent to scikit-learn's `DBSCAN(eps, min_samples).fit` on the scores as 1-D
/// points (neighbours at distance `<= eps`, clusters numbered in order of their first core
/// point, a border point joining the first cluster that reaches it), in linear time: in
/// one dimension each neighbourhood is a contiguous run of the sorted list, and each
/// cluster is a contiguous run too.
pub(super) fn dbscan_1d(
    scores: &[f64],
    eps: f64,
    min_samples: usize,
) -> (Vec<Option<usize>>, usize) {
    let n_scores = scores.len();
    // `first[i]..=last[i]` is the neighbourhood of score `i`; both only move forward as
    // `i` does, because float subtraction is monotonic.
    let mut first = vec![0; n_scores];
    let mut last = vec![0; n_scores];
    let (mut low, mut high) = (0, 0);
    for score_idx in 0..n_scores {
        while scores[low] - scores[score_idx] > eps {
            low += 1;
        }
        high = high.max(score_idx);
        while high + 1 < n_scores && scores[score_idx] - scores[high + 1] <= eps {
            high += 1;
        }
        first[score_idx] = low;
        last[score_idx] = high;
    }
    let is_core = |score_idx: usize| last[score_idx] + 1 - first[score_idx] >= min_samples;

    let mut labels = vec![None; n_scores];
    let mut n_clusters = 0;
    // The first index that no earlier cluster has claimed.
    let mut unclaimed = 0;
    let mut score_idx = 0;
    while score_idx < n_scores {
        if !is_core(score_idx) {
            score_idx += 1;
            continue;
        }
        // Extend the chain of core points that are within `eps` of the previous one.
        let mut chain_end = score_idx;
        let mut next = score_idx + 1;
        while next <= last[chain_end] {
            if is_core(next) {
                chain_end = next;
            }
            next += 1;
        }
        // The cluster covers the neighbourhoods of its core points, except border points
        // an earlier cluster already claimed.
        let start = first[score_idx].max(unclaimed);
        for label in &mut labels[start..=last[chain_end]] {
            *label = Some(n_clusters);
        }
        unclaimed = last[chain_end] + 1;
        n_clusters += 1;
        score_idx = chain_end + 1;
    }
    (labels, n_clusters)
}

impl SelectionStrategy for ClusteringSelection {
    fn name(&self) -> &'static str {
        "clustering"
    }

    fn select_sorted(&self, input: SelectionInput<'_>) -> SelectionResult<usize> {
        let scores = input.scores();
        let min_k = input.min_k();
        let max_k = input.max_k();
        // Scores are sorted, so the candidates are a prefix.
        let mut n_candidates = scores.partition_point(|&score| score >= self.min_score);
        if n_candidates < min_k {
            n_candidates = min_k.min(scores.len());
        }
        let candidates = &scores[..n_candidates];

        let mut metadata = Map::new();
        if n_candidates <= self.min_cluster_size {
            metadata.insert("clusters".into(), Value::from(1));
            metadata.insert("reason".into(), Value::from("too_few_items"));
            return SelectionResult::prefix(self.name(), scores, n_candidates.min(max_k), metadata);
        }

        let (labels, n_clusters) = dbscan_1d(candidates, self.eps, self.min_cluster_size);
        let mut cluster_sizes = vec![0_usize; n_clusters];
        let mut taken = vec![false; n_candidates];
        let mut selected = Vec::with_capacity(max_k.min(n_candidates));
        // Clusters are numbered from the best score down and each is a contiguous run, so
        // walking the candidates in order visits the clusters best-first.
        for (score_idx, label) in labels.iter().enumerate() {
            if let Some(cluster) = *label {
                cluster_sizes[cluster] += 1;
                if cluster_sizes[cluster] <= self.top_per_cluster && selected.len() < max_k {
                    selected.push(score_idx);
                    taken[score_idx] = true;
                }
            }
        }
        let mut n_noise = 0;
        for (score_idx, label) in labels.iter().enumerate() {
            if label.is_none() {
                n_noise += 1;
                if selected.len() < max_k && candidates[score_idx] > self.min_score {
                    selected.push(score_idx);
                    taken[score_idx] = true;
                }
            }
        }
        for (score_idx, is_taken) in taken.iter().enumerate() {
            if selected.len() >= min_k {
                break;
            }
            if !is_taken {
                selected.push(score_idx);
            }
        }
        // Stable, so equal scores keep the order in which they were selected.
        selected.sort_by(|&left, &right| {
            scores[right]
                .partial_cmp(&scores[left])
                .unwrap_or(std::cmp::Ordering::Equal)
        });

        let sizes: Map<String, Value> = cluster_sizes
            .iter()
            .enumerate()
            .map(|(cluster, &size)| (cluster.to_string(), Value::from(size)))
            .collect();
        metadata.insert("num_clusters".into(), Value::from(n_clusters));
        metadata.insert("cluster_sizes".into(), Value::Object(sizes));
        metadata.insert("noise_count".into(), Value::from(n_noise));
        SelectionResult::from_indices(self.name(), scores, selected, metadata)
    }
}
