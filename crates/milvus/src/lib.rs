//! Milvus as a ruchedb [`Retriever`]: both legs run in Milvus, everything ruchedb decides
//! (fusion, the relevance gate, priority and scope or importance and recency, the
//! tiebreak, k-selection, explain) runs in the agent's process, unchanged.
//!
//! ```no_run
//! use ruchedb::{Rule, SearchRequest};
//! use ruchedb_milvus::{MilvusIndex, MilvusOptions};
//!
//! let index = MilvusIndex::create("milvus://127.0.0.1:19530/support", MilvusOptions::default())?;
//! index.upsert_rules([Rule::new("refund", "the customer asks for a refund", "refund")])?;
//! index.commit()?;
//! let response = index.search(&SearchRequest::rules("I want my money back"))?;
//! # Ok::<(), ruchedb::Error>(())
//! ```
//!
//! # Layout in Milvus
//!
//! An index `NAME` is a few collections: `NAME_meta` (its embedder and dimensions), and
//! per kind (rule, chunk, scenario, tool) `NAME_KIND_docs` (one row per document: the text
//! with a server-side BM25 function, the document as JSON, the filter fields) and
//! `NAME_KIND_vecs` (one row per vector: a document's text, each pattern or example and
//! their centroid, as the local index keeps them; HNSW, cosine). `tenant_id` is the
//! partition key. Separate collections per kind keep BM25 statistics per kind, as the
//! local index does; Milvus keeps them per collection, so tenants sharing a collection
//! share IDF. [`MilvusOptions::collection_per_tenant`] gives each tenant its own
//! collections (`NAME_chunk_docs_t<hash>`), and thus its own statistics, at the cost of
//! more collections.
//!
//! # What "committed" means here
//!
//! Writes are buffered until [`MilvusIndex::commit`], which sends them: documents are
//! visible to searches (Strong consistency) once it returns. A commit is not atomic
//! across documents: a failure half-way leaves some written (each document's rows are
//! upserted before its stale rows are deleted, so a document is never missing); commit
//! again, upserts are idempotent. Durability is Milvus's (its write-ahead log).
//!
//! # Differences from the local index
//!
//! - BM25 is Milvus's: its analyzer and scores differ from tantivy's; the fusion
//!   normalises both the same way, so rankings agree on most queries, not all.
//! - Text coverage (the relevance gate's text signal) is measured on the client with
//!   every query word weighing the same (Milvus does not expose document frequencies).
//! - Metadata filters are checked on the client (the legs fetch more candidates then).
//! - No feedback loop and no query log: leg weights come from the configuration.
//!
//! The API is blocking (it runs its own single-threaded tokio runtime): from async code,
//! call it inside `spawn_blocking`.

mod filter;
mod store;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use milvus::v2::prelude::*;
use ruchedb::rank::search_with;
use ruchedb::retrieve::{
    RetrievalQuery, Retrieved, RetrievedDoc, Retriever, coverage, indexed_text,
};
use ruchedb::{
    Config, Document, EmbedderSpecs, Embedders, Error, ErrorKind, Kind, PerLeg, SearchResponse,
};
use ruchedb::{VectorRows, document_vectors};

pub use crate::store::Location;
use crate::store::{Collections, Meta};

/// How to open or create an index in Milvus.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct MilvusOptions {
    /// Ranking configuration (fusion, gate, weights, selection): the same as the local
    /// index's.
    pub config: Config,
    /// The embedder of each kind of a new index (default: as a local index's,
    /// [`EmbedderSpecs::default`]); an existing index keeps those it was created with.
    pub embedders: EmbedderSpecs,
    /// Dimensions of the kinds of a new index whose vectors the caller supplies
    /// (embedder `none`).
    pub dimensions: Option<usize>,
    /// A new index gets collections per tenant (per-tenant BM25 statistics).
    pub collection_per_tenant: bool,
    /// The token (`user:password`).
    pub token: String,
    /// How long to wait for the server to answer a connection.
    pub connect_timeout: Duration,
}

impl Default for MilvusOptions {
    fn default() -> MilvusOptions {
        MilvusOptions {
            config: Config::default(),
            embedders: EmbedderSpecs::default(),
            dimensions: None,
            collection_per_tenant: false,
            token: "root:Milvus".to_string(),
            connect_timeout: Duration::from_secs(5),
        }
    }
}

/// One buffered write.
#[derive(Debug, Clone)]
enum Op {
    Upsert(Box<Document>),
    Delete {
        kind: Kind,
        tenant: String,
        id: String,
    },
}

/// An index in Milvus: the writes of an [`Engine`](ruchedb::Engine) and its search, with
/// both legs in Milvus.
pub struct MilvusIndex {
    runtime: tokio::runtime::Runtime,
    client: ClientV2,
    location: Location,
    meta: Meta,
    embedders: Embedders,
    config: Config,
    /// milvus-lite returns −BM25.
    negated_bm25: bool,
    pending: Mutex<Vec<Op>>,
}

impl std::fmt::Debug for MilvusIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MilvusIndex")
            .field("location", &self.location)
            .field("meta", &self.meta)
            .finish()
    }
}

/// The most rows one request sends or asks for.
const BATCH: usize = 1_000;

/// The most rules of a tenant a rule search reads to find those applied whatever their
/// relevance (Milvus's largest query).
const APPLIED_SCAN: usize = 16_384;

impl MilvusIndex {
    /// Creates a new index at `location` (`milvus://HOST:PORT/NAME`).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::IndexExists`] when it exists, [`ErrorKind::Unavailable`] when the
    /// server cannot be reached, [`ErrorKind::Backend`] when it refuses.
    pub fn create(location: &str, options: MilvusOptions) -> ruchedb::Result<MilvusIndex> {
        let location: Location = location.parse()?;
        let embedders = options.embedders.load()?;
        let mut dimensions = [0; Kind::COUNT];
        for kind in Kind::ALL {
            dimensions[kind.index()] = match (embedders.get(kind), options.dimensions) {
                (Some(embedder), _) => embedder.dimensions(),
                (None, Some(dimensions)) if dimensions > 0 => dimensions,
                (None, _) => {
                    return Err(Error::invalid_input(format!(
                        "{} without an embedder need their dimensions",
                        kind.plural()
                    )));
                }
            };
        }
        let meta = Meta {
            format: store::FORMAT,
            dimensions,
            embedder: options.embedders.to_string(),
            collection_per_tenant: options.collection_per_tenant,
        };
        let (runtime, client, negated_bm25) = connect(&location, &options)?;
        let collections = Collections::new(&location.name, &meta);
        runtime.block_on(async {
            if store::exists(&client, &location, &collections.meta).await? {
                return Err(Error::new(ErrorKind::IndexExists {
                    path: location.to_string().into(),
                }));
            }
            store::create_meta(&client, &location, &collections.meta, &meta).await
        })?;
        Ok(MilvusIndex::assemble(
            (runtime, client, negated_bm25),
            location,
            meta,
            embedders,
            options.config,
        ))
    }

    /// An index handle over a connection.
    fn assemble(
        (runtime, client, negated_bm25): (tokio::runtime::Runtime, ClientV2, bool),
        location: Location,
        meta: Meta,
        embedders: Embedders,
        config: Config,
    ) -> MilvusIndex {
        MilvusIndex {
            runtime,
            client,
            location,
            meta,
            embedders,
            config,
            negated_bm25,
            pending: Mutex::new(Vec::new()),
        }
    }

    /// Opens the index at `location`, with the embedder it was created with.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::IndexNotFound`] when there is none, and connection errors.
    pub fn open(location: &str, options: MilvusOptions) -> ruchedb::Result<MilvusIndex> {
        let location: Location = location.parse()?;
        let (runtime, client, negated_bm25) = connect(&location, &options)?;
        let meta = runtime.block_on(store::read_meta(&client, &location))?;
        let embedders = meta.embedder.parse::<EmbedderSpecs>()?.load()?;
        Ok(MilvusIndex::assemble(
            (runtime, client, negated_bm25),
            location,
            meta,
            embedders,
            options.config,
        ))
    }

    /// Deletes every collection of the index at `location`.
    ///
    /// # Errors
    ///
    /// Connection and server errors.
    pub fn remove(location: &str, options: &MilvusOptions) -> ruchedb::Result<()> {
        let location: Location = location.parse()?;
        let (runtime, client, _) = connect(&location, options)?;
        runtime.block_on(store::drop_all(&client, &location))
    }

    /// Where the index is.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The configuration in use.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Buffers rules for the next commit.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] for an invalid rule.
    pub fn upsert_rules(
        &self,
        rules: impl IntoIterator<Item = ruchedb::Rule>,
    ) -> ruchedb::Result<()> {
        self.upsert(rules.into_iter().map(Document::from).collect())
    }

    /// Buffers chunks for the next commit.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] for an invalid chunk.
    pub fn upsert_chunks(
        &self,
        chunks: impl IntoIterator<Item = ruchedb::Chunk>,
    ) -> ruchedb::Result<()> {
        self.upsert(chunks.into_iter().map(Document::from).collect())
    }

    /// Buffers documents for the next commit; nothing is buffered when one is invalid.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] for an invalid document.
    pub fn upsert(&self, docs: Vec<Document>) -> ruchedb::Result<()> {
        for doc in &docs {
            doc.validate()?;
        }
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.extend(docs.into_iter().map(|d| Op::Upsert(Box::new(d))));
        Ok(())
    }

    /// Buffers the deletion of a document for the next commit.
    pub fn delete(&self, kind: Kind, tenant: &str, id: &str) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.push(Op::Delete {
            kind,
            tenant: tenant.to_string(),
            id: id.to_string(),
        });
    }

    /// Sends the buffered writes; returns how many documents were written or deleted.
    /// See the crate docs for what "committed" means in Milvus.
    ///
    /// # Errors
    ///
    /// Embedder, connection and server errors; the writes not sent stay buffered.
    pub fn commit(&self) -> ruchedb::Result<usize> {
        let ops = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()));
        if ops.is_empty() {
            return Ok(0);
        }
        // The last write of each document wins, in order.
        let mut last: BTreeMap<(Kind, String, String), Op> = BTreeMap::new();
        for op in &ops {
            let key = match op {
                Op::Upsert(doc) => (
                    doc.kind(),
                    doc.tenant_id().to_string(),
                    doc.id().to_string(),
                ),
                Op::Delete { kind, tenant, id } => (*kind, tenant.clone(), id.clone()),
            };
            last.insert(key, op.clone());
        }
        let n = last.len();
        let result = self.send(last.into_values().collect());
        if result.is_err() {
            // Nothing is lost: what failed is sent again by the next commit.
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            let newer = std::mem::take(&mut *pending);
            *pending = ops;
            pending.extend(newer);
        }
        result.map(|()| n)
    }

    fn send(&self, ops: Vec<Op>) -> ruchedb::Result<()> {
        let mut upserts: Vec<Document> = Vec::new();
        let mut deletes: Vec<(Kind, String, String)> = Vec::new();
        for op in ops {
            match op {
                Op::Upsert(doc) => upserts.push(*doc),
                Op::Delete { kind, tenant, id } => deletes.push((kind, tenant, id)),
            }
        }
        let mut vectors = Vec::with_capacity(upserts.len());
        for batch in upserts.chunks_mut(256) {
            vectors.extend(document_vectors(batch, &self.embedders)?);
        }
        for (doc, rows) in upserts.iter().zip(&vectors) {
            let expected = self.meta.dimensions(doc.kind());
            if let Some((_, v)) = rows.first()
                && v.len() != expected
            {
                return Err(Error::new(ErrorKind::DimensionMismatch {
                    expected,
                    got: v.len(),
                }));
            }
        }
        let collections = Collections::new(&self.location.name, &self.meta);
        self.runtime.block_on(async {
            // Group by collection pair (kind, and tenant when collections are per tenant).
            type Group<'a> = (Vec<&'a Document>, Vec<&'a VectorRows>);
            let mut groups: HashMap<(Kind, String), Group<'_>> = HashMap::new();
            for (doc, rows) in upserts.iter().zip(&vectors) {
                let group = groups
                    .entry((doc.kind(), collections.tenant_part(doc.tenant_id())))
                    .or_default();
                group.0.push(doc);
                group.1.push(rows);
            }
            for ((kind, _), (docs, rows)) in &groups {
                let pair = collections.pair(*kind, docs[0].tenant_id());
                let dimensions = self.meta.dimensions(*kind);
                store::ensure_pair(&self.client, &collections.meta, &pair, dimensions).await?;
                for start in (0..docs.len()).step_by(BATCH) {
                    let end = (start + BATCH).min(docs.len());
                    store::write_docs(
                        &self.client,
                        &pair,
                        &docs[start..end],
                        &rows[start..end],
                        dimensions,
                        self.config.fusion.patterns_in_text,
                    )
                    .await?;
                }
            }
            let mut by_pair: HashMap<(Kind, String), Vec<(String, String)>> = HashMap::new();
            for (kind, tenant, id) in deletes {
                by_pair
                    .entry((kind, collections.tenant_part(&tenant)))
                    .or_default()
                    .push((tenant, id));
            }
            for ((kind, _), docs) in by_pair {
                let pair = collections.pair(kind, &docs[0].0);
                if !store::exists(&self.client, &self.location, &pair.docs).await? {
                    continue;
                }
                let keys: Vec<String> = docs
                    .iter()
                    .map(|(tenant, id)| store::doc_key(kind, tenant, id))
                    .collect();
                store::delete_keys(&self.client, &pair, &keys).await?;
            }
            Ok(())
        })
    }

    /// How many documents of `kind` the tenant has.
    ///
    /// # Errors
    ///
    /// Connection and server errors.
    pub fn count(&self, kind: Kind, tenant: &str) -> ruchedb::Result<u64> {
        let collections = Collections::new(&self.location.name, &self.meta);
        let pair = collections.pair(kind, tenant);
        self.runtime.block_on(async {
            if !store::exists(&self.client, &self.location, &pair.docs).await? {
                return Ok(0);
            }
            store::count(
                &self.client,
                &pair,
                &format!("tenant_id == {}", filter::literal(tenant)),
            )
            .await
        })
    }

    /// Deletes every document of `tenant`: each kind's rows of that tenant, at once (not
    /// buffered). Returns how many documents were deleted.
    ///
    /// # Errors
    ///
    /// Connection and server errors.
    pub fn delete_tenant(&self, tenant: &str) -> ruchedb::Result<u64> {
        let collections = Collections::new(&self.location.name, &self.meta);
        self.runtime.block_on(async {
            let mut deleted = 0;
            for kind in Kind::ALL {
                let pair = collections.pair(kind, tenant);
                if !store::exists(&self.client, &self.location, &pair.docs).await? {
                    continue;
                }
                let expr = format!("tenant_id == {}", filter::literal(tenant));
                deleted += store::count(&self.client, &pair, &expr).await?;
                store::delete_where(&self.client, &pair.docs, &expr, &self.location).await?;
                store::delete_where(&self.client, &pair.vecs, &expr, &self.location).await?;
            }
            Ok(deleted)
        })
    }

    /// Runs a search: both legs in Milvus, then ruchedb's [`ruchedb::rank::search_with`].
    ///
    /// # Errors
    ///
    /// As [`Engine::search`](ruchedb::Reader::search), plus connection and server errors.
    pub fn search(&self, request: &ruchedb::SearchRequest) -> ruchedb::Result<SearchResponse> {
        let embedder = self.embedders.get(request.kind()).map(|e| e.as_ref());
        search_with(self, &self.config, request, embedder, None)
    }

    /// Runs one turn (the scenario, rules, memory and tools of a message, within its
    /// budget): ruchedb's [`turn_with`](ruchedb::turn::turn_with) over Milvus.
    ///
    /// # Errors
    ///
    /// As [`Engine::turn`](ruchedb::Reader::turn), plus connection and server errors.
    pub fn turn(&self, request: &ruchedb::TurnRequest) -> ruchedb::Result<ruchedb::TurnResponse> {
        ruchedb::turn::turn_with(self, &self.config, request, &self.embedders)
    }
}

impl Retriever for MilvusIndex {
    fn dimensions(&self, kind: Kind) -> Option<usize> {
        Some(self.meta.dimensions(kind))
    }

    fn retrieve(&self, query: &RetrievalQuery<'_>) -> ruchedb::Result<Retrieved> {
        let request = query.request;
        let collections = Collections::new(&self.location.name, &self.meta);
        let pair = collections.pair(request.kind(), request.tenant_id());
        let text = request.text();
        let text_leg = text.chars().any(char::is_alphanumeric);
        let legs = PerLeg {
            text: text_leg,
            vector: query.vector.is_some(),
            graph: false,
        };
        let expr = filter::expression(query);
        // Metadata filters are checked here, after the cut: ask for more.
        let limit = if request.metadata_filters().is_empty() {
            query.limit
        } else {
            query.limit * 4
        };
        let started = std::time::Instant::now();
        let (text_hits, vector_hits) = self.runtime.block_on(async {
            if !store::exists(&self.client, &self.location, &pair.docs).await? {
                return Ok((Vec::new(), Vec::new()));
            }
            let bm25 = async {
                if text_leg {
                    store::bm25(&self.client, &pair, text, &expr, limit, self.negated_bm25).await
                } else {
                    Ok(Vec::new())
                }
            };
            let dense = async {
                match query.vector {
                    Some(v) => store::dense(&self.client, &pair, v, &expr, limit).await,
                    None => Ok(Vec::new()),
                }
            };
            let (bm25, dense) = tokio::join!(bm25, dense);
            Ok::<_, Error>((bm25?, dense?))
        })?;
        let legs_micros = started.elapsed().as_micros() as u64;
        let mut keys: Vec<String> = Vec::new();
        /// A document's BM25, and its cosine with the row that gave it.
        type Found = (Option<f64>, Option<(f32, i64)>);
        let mut found: HashMap<String, Found> = HashMap::new();
        for (key, score) in &text_hits {
            keys.push(key.clone());
            found.entry(key.clone()).or_default().0 = Some(*score);
        }
        for (key, cosine, row) in &vector_hits {
            let entry = found.entry(key.clone()).or_default();
            if entry.1.is_none() {
                if entry.0.is_none() {
                    keys.push(key.clone());
                }
                entry.1 = Some((*cosine, *row));
            }
        }
        let mut docs = self.runtime.block_on(store::fetch_docs(
            &self.client,
            &pair,
            request.kind(),
            &keys,
        ))?;
        let mut candidates = Vec::with_capacity(keys.len());
        let mut counts = PerLeg::default();
        for key in &keys {
            let Some(document) = docs.remove(key) else {
                continue;
            };
            if !query.admits(&document) {
                continue;
            }
            let (bm25, vector) = found[key];
            let mut candidate = RetrievedDoc::new(Arc::new(document));
            if bm25.is_some() && counts.text < query.limit {
                counts.text += 1;
                candidate.bm25 = bm25;
                candidate.found_by.text = true;
            }
            if let Some((cosine, row)) = vector
                && counts.vector < query.limit
            {
                counts.vector += 1;
                candidate.cosine = Some(cosine);
                candidate.vector_match = Some(store::vector_match(row));
                candidate.found_by.vector = true;
            }
            if candidate.found_by.text || candidate.found_by.vector {
                candidates.push(candidate);
            }
        }
        let mut retrieved = Retrieved::new(candidates, legs, counts);
        retrieved.micros = PerLeg {
            text: legs_micros,
            vector: legs_micros,
            graph: 0,
        };
        Ok(retrieved)
    }

    /// The tenant's rules in scope, fetched (at most 16,384) and checked on the
    /// client: Milvus holds no column of how a rule applies.
    fn applied_rules(&self, query: &RetrievalQuery<'_>) -> ruchedb::Result<Vec<Arc<Document>>> {
        let request = query.request;
        if request.kind() != Kind::Rule {
            return Ok(Vec::new());
        }
        let collections = Collections::new(&self.location.name, &self.meta);
        let pair = collections.pair(Kind::Rule, request.tenant_id());
        let expr = filter::expression(query);
        let docs = self.runtime.block_on(async {
            if !store::exists(&self.client, &self.location, &pair.docs).await? {
                return Ok(Vec::new());
            }
            store::query_docs(&self.client, &pair, Kind::Rule, &expr, APPLIED_SCAN).await
        })?;
        Ok(docs
            .into_iter()
            .filter(|doc| {
                doc.as_rule()
                    .is_some_and(|rule| ruchedb::retrieve::applied_by(query, rule).is_some())
            })
            .map(Arc::new)
            .collect())
    }

    fn fill(
        &self,
        query: &RetrievalQuery<'_>,
        candidates: &mut [RetrievedDoc],
    ) -> ruchedb::Result<()> {
        let request = query.request;
        let collections = Collections::new(&self.location.name, &self.meta);
        let pair = collections.pair(request.kind(), request.tenant_id());
        let text = request.text();
        let key_of =
            |c: &RetrievedDoc| store::doc_key(c.document.kind(), c.document.tenant_id(), c.id());
        let no_bm25: Vec<String> = candidates
            .iter()
            .filter(|c| c.bm25.is_none())
            .map(key_of)
            .collect();
        let no_cosine: Vec<String> = candidates
            .iter()
            .filter(|c| c.cosine.is_none())
            .map(key_of)
            .collect();
        let text_leg = text.chars().any(char::is_alphanumeric);
        let (bm25, vectors) = self.runtime.block_on(async {
            let bm25 = async {
                if text_leg && !no_bm25.is_empty() {
                    let expr = format!("doc_key in {}", filter::list(&no_bm25));
                    store::bm25(
                        &self.client,
                        &pair,
                        text,
                        &expr,
                        no_bm25.len(),
                        self.negated_bm25,
                    )
                    .await
                } else {
                    Ok(Vec::new())
                }
            };
            let vectors = async {
                if query.vector.is_some() && !no_cosine.is_empty() {
                    store::fetch_vectors(&self.client, &pair, &no_cosine).await
                } else {
                    Ok(HashMap::new())
                }
            };
            let (bm25, vectors) = tokio::join!(bm25, vectors);
            Ok::<_, Error>((bm25?, vectors?))
        })?;
        let bm25: HashMap<String, f64> = bm25.into_iter().collect();
        for candidate in candidates.iter_mut() {
            let key = key_of(candidate);
            if candidate.bm25.is_none() {
                candidate.bm25 = bm25.get(&key).copied();
            }
            if let (None, Some(q), Some(rows)) = (candidate.cosine, query.vector, vectors.get(&key))
            {
                let best = rows
                    .iter()
                    .map(|(row, v)| (v.iter().zip(q).map(|(a, b)| a * b).sum::<f32>(), *row))
                    .fold(None, |best: Option<(f32, i64)>, next| match best {
                        Some(b) if b.0 >= next.0 => Some(b),
                        _ => Some(next),
                    });
                if let Some((cosine, row)) = best {
                    candidate.cosine = Some(cosine);
                    candidate.vector_match = Some(store::vector_match(row));
                }
            }
            // Without document frequencies, every query word weighs the same.
            let doc_text = indexed_text(&candidate.document, self.config.fusion.patterns_in_text);
            candidate.coverage = coverage(text, &doc_text, &|_| 1.0);
        }
        Ok(())
    }
}

/// Connects, with bounded retries, and tells whether the server is milvus-lite.
fn connect(
    location: &Location,
    options: &MilvusOptions,
) -> ruchedb::Result<(tokio::runtime::Runtime, ClientV2, bool)> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| Error::with_source(ErrorKind::Io { path: None }, err))?;
    let config = ConnectConfig::new()
        .uri(location.uri())
        .token(options.token.clone())
        .connect_timeout(options.connect_timeout)
        .rpc_timeout(Duration::from_secs(60))
        // The SDK's default retries for minutes when the server is down.
        .retry(
            RetryConfig::new()
                .max_attempts(3)
                .max_retry_timeout(Duration::from_secs(2)),
        );
    let (client, lite) = runtime.block_on(async {
        let client = ClientV2::new(&config)
            .await
            .map_err(|err| store::error(location, err))?;
        let version = client
            .server_version(
                GetServerVersionRequest::builder()
                    .build()
                    .map_err(|err| store::error(location, err))?,
            )
            .await
            .map_err(|err| store::error(location, err))?;
        let lite = version.version().contains("milvus_lite");
        Ok::<_, Error>((client, lite))
    })?;
    Ok((runtime, client, lite))
}
