//! Chunk selection (seed 001): relevance, importance and recency into one score.
//!
//! [`ChunkSelector`] scores any list of [`Chunk`]s, with or without an index: the engine
//! uses it to rank the chunks its two legs retrieve (relevance is then the hybrid
//! score), and users can call [`ChunkSelector::select_chunks`] on chunks of their own.
//!
//! ```text
//! relevance  = precomputed | max(0, cosine(query, chunk)) | jaccard(words) | 0.5 without query
//! importance = i / 10 for i in 1..=10, 0.5 when absent
//! recency    = exp(-age_hours * ln 2 / decay_hours), 1.0 in the future, 0.5 when absent
//! final      = (wr * relevance + wi * importance + wt * recency) / (wr + wi + wt)
//! ```

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::embed::Embedder;
use crate::model::doc::Chunk;
use crate::model::fields::check_importance;
use crate::model::metric;
use crate::model::time::Timestamp;
use crate::{Error, Result};

/// The weights and decay of chunk scoring.
///
/// The weights need not sum to 1: scores are divided by their sum. The
/// [`Default`] is seed 001's: relevance 0.5, importance 0.3, recency 0.2, a half-life
/// of 168 hours (one week).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct ChunkWeights {
    /// Weight of relevance to the query.
    pub relevance_weight: f64,
    /// Weight of importance.
    pub importance_weight: f64,
    /// Weight of recency.
    pub recency_weight: f64,
    /// Age in hours at which recency is exactly 0.5.
    pub recency_decay_hours: f64,
}

impl Default for ChunkWeights {
    fn default() -> ChunkWeights {
        ChunkWeights {
            relevance_weight: 0.5,
            importance_weight: 0.3,
            recency_weight: 0.2,
            recency_decay_hours: 168.0,
        }
    }
}

impl ChunkWeights {
    /// These three weights, with the default decay (168 hours).
    ///
    /// ```
    /// use ruchedb::chunk::ChunkWeights;
    ///
    /// let relevance_only = ChunkWeights::new(1.0, 0.0, 0.0);
    /// assert_eq!(relevance_only.recency_decay_hours, 168.0);
    /// ```
    pub fn new(relevance_weight: f64, importance_weight: f64, recency_weight: f64) -> ChunkWeights {
        ChunkWeights {
            relevance_weight,
            importance_weight,
            recency_weight,
            ..ChunkWeights::default()
        }
    }

    /// Checks the weights and the decay; `key` prefixes the names in errors.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) for a negative or
    /// non-finite weight, weights that are all zero, or a decay that is not > 0.
    pub fn validate(&self, key: &str) -> Result<()> {
        for (name, value) in [
            ("relevance_weight", self.relevance_weight),
            ("importance_weight", self.importance_weight),
            ("recency_weight", self.recency_weight),
        ] {
            if !value.is_finite() || value < 0.0 {
                return Err(Error::invalid_config(
                    format!("{key}.{name}"),
                    format!("must be a finite number >= 0, got {value}"),
                ));
            }
        }
        if self.relevance_weight + self.importance_weight + self.recency_weight <= 0.0 {
            return Err(Error::invalid_config(
                key,
                "relevance, importance and recency weights are all zero",
            ));
        }
        if !self.recency_decay_hours.is_finite() || self.recency_decay_hours <= 0.0 {
            return Err(Error::invalid_config(
                format!("{key}.recency_decay_hours"),
                format!("must be a number > 0, got {}", self.recency_decay_hours),
            ));
        }
        Ok(())
    }

    /// The weights divided by their sum.
    fn normalized(&self) -> [f64; 3] {
        let sum = self.relevance_weight + self.importance_weight + self.recency_weight;
        [
            self.relevance_weight / sum,
            self.importance_weight / sum,
            self.recency_weight / sum,
        ]
    }
}

/// The kind of a [`Memory`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum MemoryType {
    /// A fact about the world or the user.
    Fact,
    /// Something that happened.
    Episode,
    /// A preference of the user.
    Preference,
    /// An instruction the agent was given.
    Instruction,
    /// A summary of other memories.
    Summary,
}

/// A memory that chunks can name (by `memory_id`) to inherit its importance and time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    /// The memory's id, named by [`Chunk::memory_id`].
    pub id: String,
    /// The context (user, conversation) it belongs to.
    pub context_id: String,
    /// Its text.
    pub content: String,
    /// What kind of memory it is.
    pub memory_type: MemoryType,
    /// When it was formed.
    pub created_at: Timestamp,
    /// Importance from 1 to 10.
    pub importance: Option<u8>,
}

/// A chunk with its score components, as [`ChunkSelector::select_chunks`] returns it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ScoredChunk {
    /// The chunk.
    pub chunk: Chunk,
    /// Relevance to the query, in `[0, 1]`.
    pub relevance_score: f64,
    /// Importance, in `[0, 1]`.
    pub importance_score: f64,
    /// Recency, in `[0, 1]`.
    pub recency_score: f64,
    /// The weighted final score, in `[0, 1]`.
    pub final_score: f64,
    /// How each component was obtained (`relevance_source`, `importance_source`, ...).
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

/// What to select chunks for: a query (text and/or vector), memories, limits and time.
#[derive(Debug, Clone, Default)]
pub struct ChunkQuery<'a> {
    /// The query text (lexical relevance, or embedded when the selector has an embedder).
    pub text: Option<&'a str>,
    /// A precomputed query vector.
    pub embedding: Option<&'a [f32]>,
    /// Memories that chunks may name by `memory_id`.
    pub memories: &'a [Memory],
    /// At most this many chunks are returned.
    pub max_chunks: Option<usize>,
    /// Chunks scoring below this are dropped (0..=1, default 0).
    pub min_score: f64,
    /// The time recency is measured against (default: the clock).
    pub now: Option<Timestamp>,
}

impl<'a> ChunkQuery<'a> {
    /// A query by text.
    pub fn text(text: &'a str) -> ChunkQuery<'a> {
        ChunkQuery {
            text: Some(text),
            ..ChunkQuery::default()
        }
    }
}

/// Scores and selects chunks by relevance, importance and recency (seed 001).
///
/// # Example
///
/// ```
/// use ruchedb::{Chunk, Timestamp};
/// use ruchedb::chunk::{ChunkQuery, ChunkSelector};
///
/// let now: Timestamp = "2026-11-21T12:00:00Z".parse()?;
/// let chunks = [
///     Chunk::new("old", "machine learning notes").with_importance(9)
///         .with_created_at("2026-10-01T12:00:00Z".parse()?),
///     Chunk::new("new", "machine learning today").with_importance(5)
///         .with_created_at("2026-11-21T11:00:00Z".parse()?),
/// ];
/// let selector = ChunkSelector::new();
/// let query = ChunkQuery { now: Some(now), ..ChunkQuery::text("machine learning") };
/// let scored = selector.select_chunks(&chunks, &query)?;
/// assert_eq!(scored[0].chunk.id, "new");
/// # Ok::<(), ruchedb::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct ChunkSelector {
    weights: ChunkWeights,
    embedder: Option<Arc<dyn Embedder>>,
}

impl std::fmt::Debug for ChunkSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkSelector")
            .field("weights", &self.weights)
            .field(
                "embedder",
                &self.embedder.as_ref().map(|e| e.model_id().to_string()),
            )
            .finish()
    }
}

/// Importance `i` in 1..=10 as `i / 10`; 0.5 when absent.
pub fn importance_score(importance: Option<u8>) -> f64 {
    importance.map_or(0.5, |i| f64::from(i) / 10.0)
}

/// Lexical relevance: |words of a ∩ words of b| / |words of a ∪ words of b|, over
/// lowercased alphanumeric words; 0 when both are empty.
pub fn lexical_similarity(a: &str, b: &str) -> f64 {
    let words = |text: &str| -> BTreeSet<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let (a, b) = (words(a), words(b));
    let union = a.union(&b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(&b).count() as f64 / union as f64
}

impl ChunkSelector {
    /// A selector with seed 001's default weights and no embedder.
    pub fn new() -> ChunkSelector {
        ChunkSelector::default()
    }

    /// A selector with the given weights.
    ///
    /// # Errors
    ///
    /// See [`ChunkWeights::validate`].
    pub fn with_weights(weights: ChunkWeights) -> Result<ChunkSelector> {
        weights.validate("chunk_selector")?;
        Ok(ChunkSelector {
            weights,
            embedder: None,
        })
    }

    /// Uses `embedder` for semantic relevance of chunks and queries without vectors.
    #[must_use]
    pub fn embedder(mut self, embedder: Arc<dyn Embedder>) -> ChunkSelector {
        self.embedder = Some(embedder);
        self
    }

    /// The weights in use.
    pub fn weights(&self) -> &ChunkWeights {
        &self.weights
    }

    /// Recency at `now` of something created at `created_at`: exactly 0.5 at
    /// `recency_decay_hours`, 1.0 for the present or the future, 0.5 when unknown.
    pub fn recency_score(&self, created_at: Option<Timestamp>, now: Timestamp) -> f64 {
        let Some(created_at) = created_at else {
            return 0.5;
        };
        let age_hours = created_at.hours_until(now);
        if age_hours <= 0.0 {
            return 1.0;
        }
        (-age_hours * std::f64::consts::LN_2 / self.weights.recency_decay_hours)
            .exp()
            .clamp(0.0, 1.0)
    }

    /// The weighted final score of three components in `[0, 1]`.
    pub fn combine(&self, relevance: f64, importance: f64, recency: f64) -> f64 {
        let [wr, wi, wt] = self.weights.normalized();
        (wr * relevance + wi * importance + wt * recency).clamp(0.0, 1.0)
    }

    /// Scores `chunks` for `query` and returns those scoring at least `min_score`, best
    /// first (ties by chunk id, then tenant), at most `max_chunks`.
    ///
    /// Expired chunks are left out. A chunk without importance or timestamp of its own
    /// takes them from the memory it names by `memory_id`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) for a `min_score`
    /// outside 0..=1 or an importance outside 1..=10;
    /// [`ErrorKind::DimensionMismatch`](crate::ErrorKind::DimensionMismatch) when a
    /// chunk's vector and the query vector differ in length; embedder errors.
    pub fn select_chunks(
        &self,
        chunks: &[Chunk],
        query: &ChunkQuery<'_>,
    ) -> Result<Vec<ScoredChunk>> {
        if !(0.0..=1.0).contains(&query.min_score) {
            return Err(Error::invalid_input(format!(
                "`min_score` must be in 0..=1, got {}",
                query.min_score
            )));
        }
        let now = query.now.unwrap_or_else(Timestamp::now);
        let memories: HashMap<&str, &Memory> =
            query.memories.iter().map(|m| (m.id.as_str(), m)).collect();
        for memory in query.memories {
            check_importance(memory.importance).map_err(|message| {
                Error::invalid_input(format!("memory `{}`: {message}", memory.id))
            })?;
        }
        let query_text = query.text.filter(|t| !t.trim().is_empty());
        let query_vector = self.query_vector(query_text, query.embedding)?;
        let chunk_vectors = self.chunk_vectors(chunks, query_vector.is_some())?;

        let mut scored = Vec::new();
        for (chunk, chunk_vector) in chunks.iter().zip(chunk_vectors) {
            chunk.validate()?;
            if chunk.is_expired(now) {
                continue;
            }
            let mut metadata = serde_json::Map::new();
            let precomputed = chunk
                .metadata
                .get("relevance_score")
                .and_then(serde_json::Value::as_f64)
                .filter(|r| (0.0..=1.0).contains(r));
            let (relevance, source) = match (precomputed, &query_vector, chunk_vector) {
                (Some(relevance), _, _) => (relevance, "precomputed"),
                (None, Some(q), Some(c)) => {
                    if q.len() != c.len() {
                        return Err(Error::new(crate::ErrorKind::DimensionMismatch {
                            expected: q.len(),
                            got: c.len(),
                        }));
                    }
                    (metric::score_of_cosine(metric::dot(q, &c)), "embedding")
                }
                _ => match query_text {
                    Some(text) => (lexical_similarity(text, &chunk.content), "lexical"),
                    None if query_vector.is_some() => (0.0, "no_chunk_vector"),
                    None => (0.5, "no_query"),
                },
            };
            metadata.insert("relevance_source".into(), source.into());
            let memory = chunk.memory_id.as_deref().and_then(|id| memories.get(id));
            let importance = chunk.importance.or(memory.and_then(|m| m.importance));
            let created_at = chunk.created_at.or(memory.map(|m| m.created_at));
            if memory.is_some() {
                metadata.insert("memory_id".into(), chunk.memory_id.clone().into());
            }
            let importance_score = importance_score(importance);
            let recency_score = self.recency_score(created_at, now);
            let final_score = self.combine(relevance, importance_score, recency_score);
            if final_score < query.min_score {
                continue;
            }
            scored.push(ScoredChunk {
                chunk: chunk.clone(),
                relevance_score: relevance,
                importance_score,
                recency_score,
                final_score,
                metadata,
            });
        }
        scored.sort_by(|a, b| {
            b.final_score
                .total_cmp(&a.final_score)
                .then_with(|| a.chunk.id.cmp(&b.chunk.id))
                .then_with(|| a.chunk.tenant_id.cmp(&b.chunk.tenant_id))
        });
        if let Some(max) = query.max_chunks {
            scored.truncate(max);
        }
        Ok(scored)
    }

    /// The normalised query vector: the given one, or the embedder's, if any.
    fn query_vector(&self, text: Option<&str>, given: Option<&[f32]>) -> Result<Option<Vec<f32>>> {
        let mut vector = match (given, text, &self.embedder) {
            (Some(v), _, _) => v.to_vec(),
            (None, Some(text), Some(embedder)) => {
                embedder.embed_batch(&[text])?.pop().unwrap_or_default()
            }
            _ => return Ok(None),
        };
        if vector.iter().any(|x| !x.is_finite()) {
            return Err(Error::new(crate::ErrorKind::NonFiniteScore {
                context: "query embedding".to_string(),
            }));
        }
        Ok(metric::normalize(&mut vector).then_some(vector))
    }

    /// The normalised vector of each chunk: its own, or the embedder's when the query has
    /// a vector.
    fn chunk_vectors(&self, chunks: &[Chunk], wanted: bool) -> Result<Vec<Option<Vec<f32>>>> {
        if !wanted {
            return Ok(vec![None; chunks.len()]);
        }
        let missing: Vec<&str> = chunks
            .iter()
            .filter(|c| c.embedding.is_none())
            .map(|c| c.content.as_str())
            .collect();
        let mut embedded = match (&self.embedder, missing.is_empty()) {
            (Some(embedder), false) => embedder.embed_batch(&missing)?.into_iter(),
            _ => Vec::new().into_iter(),
        };
        Ok(chunks
            .iter()
            .map(|chunk| {
                let mut v = match &chunk.embedding {
                    Some(v) => v.clone(),
                    None => embedded.next()?,
                };
                metric::normalize(&mut v).then_some(v)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    const NOW: &str = "2026-11-21T12:00:00Z";

    #[test]
    fn recency_is_exactly_half_at_the_horizon() {
        let selector = ChunkSelector::new();
        let now = ts(NOW);
        let week_ago = Timestamp::from_unix_millis(now.unix_millis() - 168 * 3_600_000);
        assert_eq!(selector.recency_score(Some(week_ago), now), 0.5);
        assert_eq!(selector.recency_score(Some(now), now), 1.0);
        assert_eq!(
            selector.recency_score(Some(ts("2027-01-01T00:00:00Z")), now),
            1.0
        );
        assert_eq!(selector.recency_score(None, now), 0.5);
        let two_weeks = Timestamp::from_unix_millis(now.unix_millis() - 336 * 3_600_000);
        assert!((selector.recency_score(Some(two_weeks), now) - 0.25).abs() < 1e-15);
    }

    #[test]
    fn neutral_defaults() {
        assert_eq!(importance_score(None), 0.5);
        assert_eq!(importance_score(Some(5)), 0.5);
        assert_eq!(importance_score(Some(10)), 1.0);
        let selector = ChunkSelector::new();
        let scored = selector
            .select_chunks(&[Chunk::new("c", "anything")], &ChunkQuery::default())
            .unwrap();
        assert_eq!(scored[0].relevance_score, 0.5);
        assert_eq!(scored[0].final_score, 0.5);
    }

    #[test]
    fn weights_are_normalised_and_validated() {
        let selector = ChunkSelector::with_weights(ChunkWeights {
            relevance_weight: 2.0,
            importance_weight: 1.0,
            recency_weight: 1.0,
            recency_decay_hours: 24.0,
        })
        .unwrap();
        assert!((selector.combine(1.0, 0.0, 0.0) - 0.5).abs() < 1e-15);
        assert!((selector.combine(1.0, 1.0, 1.0) - 1.0).abs() < 1e-15);
        let zero = ChunkWeights {
            relevance_weight: 0.0,
            importance_weight: 0.0,
            recency_weight: 0.0,
            ..ChunkWeights::default()
        };
        assert!(ChunkSelector::with_weights(zero).is_err());
        let bad_decay = ChunkWeights {
            recency_decay_hours: 0.0,
            ..ChunkWeights::default()
        };
        let err = ChunkSelector::with_weights(bad_decay).unwrap_err();
        assert!(err.to_string().contains("recency_decay_hours"), "{err}");
    }

    #[test]
    fn lexical_relevance_is_jaccard() {
        assert_eq!(
            lexical_similarity("Machine learning!", "machine LEARNING"),
            1.0
        );
        assert!((lexical_similarity("a b", "b c") - 1.0 / 3.0).abs() < 1e-15);
        assert_eq!(lexical_similarity("", ""), 0.0);
    }

    #[test]
    fn min_score_and_max_chunks() {
        let now = ts(NOW);
        let chunks: Vec<Chunk> = (1..=10)
            .map(|i| Chunk::new(format!("c{i:02}"), "text").with_importance(i))
            .collect();
        let selector = ChunkSelector::with_weights(ChunkWeights {
            relevance_weight: 0.0,
            importance_weight: 1.0,
            recency_weight: 0.0,
            ..ChunkWeights::default()
        })
        .unwrap();
        let query = ChunkQuery {
            min_score: 0.7,
            now: Some(now),
            ..ChunkQuery::default()
        };
        let ids: Vec<String> = selector
            .select_chunks(&chunks, &query)
            .unwrap()
            .into_iter()
            .map(|s| s.chunk.id)
            .collect();
        assert_eq!(ids, ["c10", "c09", "c08", "c07"]);
        let limited = ChunkQuery {
            max_chunks: Some(2),
            ..query
        };
        assert_eq!(selector.select_chunks(&chunks, &limited).unwrap().len(), 2);
        let bad = ChunkQuery {
            min_score: 1.5,
            ..ChunkQuery::default()
        };
        assert!(selector.select_chunks(&chunks, &bad).is_err());
    }

    #[test]
    fn memories_supply_importance_and_time() {
        let now = ts(NOW);
        let memory = Memory {
            id: "m1".into(),
            context_id: "u".into(),
            content: "fact".into(),
            memory_type: MemoryType::Fact,
            created_at: now,
            importance: Some(9),
        };
        let chunks = [
            Chunk::new("a", "x").with_memory("m1"),
            Chunk::new("b", "x").with_memory("m1").with_importance(2),
        ];
        let query = ChunkQuery {
            memories: std::slice::from_ref(&memory),
            now: Some(now),
            ..ChunkQuery::default()
        };
        let scored = ChunkSelector::new().select_chunks(&chunks, &query).unwrap();
        let a = scored.iter().find(|s| s.chunk.id == "a").unwrap();
        let b = scored.iter().find(|s| s.chunk.id == "b").unwrap();
        assert_eq!((a.importance_score, a.recency_score), (0.9, 1.0));
        assert_eq!((b.importance_score, b.recency_score), (0.2, 1.0));
    }

    #[test]
    fn expired_chunks_are_never_returned() {
        let now = ts(NOW);
        let chunks = [
            Chunk::new("gone", "x").with_expires_at(now),
            Chunk::new("kept", "x"),
        ];
        let query = ChunkQuery {
            now: Some(now),
            ..ChunkQuery::default()
        };
        let scored = ChunkSelector::new().select_chunks(&chunks, &query).unwrap();
        assert_eq!(scored.len(), 1);
        assert_eq!(scored[0].chunk.id, "kept");
    }

    #[test]
    fn embeddings_give_cosine_relevance() {
        let chunks = [
            Chunk::new("near", "x").with_embedding(vec![1.0, 0.1]),
            Chunk::new("far", "x").with_embedding(vec![-1.0, 0.0]),
        ];
        let query = ChunkQuery {
            embedding: Some(&[1.0, 0.0]),
            ..ChunkQuery::default()
        };
        let scored = ChunkSelector::new().select_chunks(&chunks, &query).unwrap();
        assert_eq!(scored[0].chunk.id, "near");
        assert_eq!(scored[1].relevance_score, 0.0, "negative cosine scores 0");
        let wrong = ChunkQuery {
            embedding: Some(&[1.0, 0.0, 0.0]),
            ..ChunkQuery::default()
        };
        assert!(ChunkSelector::new().select_chunks(&chunks, &wrong).is_err());
    }

    proptest! {
        #[test]
        fn final_scores_are_in_unit_range_and_sorted(
            items in prop::collection::vec((1u8..=10, 0i64..2_000, any::<bool>()), 0..30),
            weights in (0.0f64..5.0, 0.0f64..5.0, 0.01f64..5.0),
        ) {
            let now = Timestamp::from_unix_millis(1_000 * 3_600_000);
            let chunks: Vec<Chunk> = items.iter().enumerate().map(|(i, (imp, age, has_time))| {
                let chunk = Chunk::new(format!("c{i}"), format!("word{} shared", i % 3)).with_importance(*imp);
                if *has_time {
                    chunk.with_created_at(Timestamp::from_unix_millis(now.unix_millis() - age * 3_600_000))
                } else {
                    chunk
                }
            }).collect();
            let selector = ChunkSelector::with_weights(ChunkWeights {
                relevance_weight: weights.0,
                importance_weight: weights.1,
                recency_weight: weights.2,
                recency_decay_hours: 168.0,
            }).unwrap();
            let query = ChunkQuery { now: Some(now), ..ChunkQuery::text("shared word1") };
            let first = selector.select_chunks(&chunks, &query).unwrap();
            let second = selector.select_chunks(&chunks, &query).unwrap();
            prop_assert_eq!(&first, &second);
            for pair in first.windows(2) {
                prop_assert!(pair[0].final_score >= pair[1].final_score);
            }
            for s in &first {
                prop_assert!((0.0..=1.0).contains(&s.final_score));
            }
        }

        #[test]
        fn recency_only_ranks_newest_first(ages in prop::collection::btree_set(0i64..(10 * 168 * 60), 1..25)) {
            let now = Timestamp::from_unix_millis(10_000 * 3_600_000);
            // Distinct past timestamps (in minutes) within ten half-lives.
            let chunks: Vec<Chunk> = ages.iter().enumerate().map(|(i, age_min)| {
                Chunk::new(format!("c{i:03}"), "x")
                    .with_created_at(Timestamp::from_unix_millis(now.unix_millis() - (age_min + 1) * 60_000))
            }).collect();
            let selector = ChunkSelector::with_weights(ChunkWeights {
                relevance_weight: 0.0,
                importance_weight: 0.0,
                recency_weight: 1.0,
                recency_decay_hours: 168.0,
            }).unwrap();
            let query = ChunkQuery { now: Some(now), ..ChunkQuery::default() };
            let scored = selector.select_chunks(&chunks, &query).unwrap();
            let times: Vec<i64> = scored.iter().map(|s| s.chunk.created_at.unwrap().unix_millis()).collect();
            let mut sorted = times.clone();
            sorted.sort_by(|a, b| b.cmp(a));
            prop_assert_eq!(times, sorted);
        }
    }
}
