//! The collections of an index and every request sent to Milvus.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use milvus::v2::prelude::*;
use ruchedb::query::VectorMatch;
use ruchedb::{Document, Error, ErrorKind, Kind};

use crate::filter::{list, literal};

/// The version of the collections' layout.
pub(crate) const FORMAT: u32 = 1;

/// Longest text or document JSON Milvus takes in a VARCHAR field.
const MAX_VARCHAR: usize = 65_535;

/// The vector row of a rule's centroid (as the local index numbers it).
const CENTROID_ROW: i64 = u16::MAX as i64;

/// Where an index is: `milvus://HOST:PORT/NAME` (or `milvus+https://`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// `http://HOST:PORT` or `https://HOST:PORT`.
    pub endpoint: String,
    /// The index name: the prefix of its collections.
    pub name: String,
}

impl Location {
    /// Whether `text` names a Milvus index rather than a directory.
    pub fn is_milvus(text: &str) -> bool {
        text.starts_with("milvus://") || text.starts_with("milvus+https://")
    }

    pub(crate) fn uri(&self) -> String {
        self.endpoint.clone()
    }
}

impl FromStr for Location {
    type Err = Error;

    fn from_str(text: &str) -> ruchedb::Result<Location> {
        let (scheme, rest) = if let Some(rest) = text.strip_prefix("milvus://") {
            ("http", rest)
        } else if let Some(rest) = text.strip_prefix("milvus+https://") {
            ("https", rest)
        } else {
            return Err(Error::invalid_input(format!(
                "`{text}` is not a Milvus location: expected milvus://HOST:PORT/NAME"
            )));
        };
        let Some((host, name)) = rest.split_once('/') else {
            return Err(Error::invalid_input(format!(
                "`{text}` names no index: expected milvus://HOST:PORT/NAME"
            )));
        };
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.len() <= 128
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if host.is_empty() || !valid {
            return Err(Error::invalid_input(format!(
                "`{text}`: the host must not be empty and the name must be letters, digits \
                 and underscores (at most 128, not starting with a digit)"
            )));
        }
        Ok(Location {
            endpoint: format!("{scheme}://{host}"),
            name: name.to_string(),
        })
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rest = self
            .endpoint
            .strip_prefix("http://")
            .map(|h| format!("milvus://{h}"))
            .or_else(|| {
                self.endpoint
                    .strip_prefix("https://")
                    .map(|h| format!("milvus+https://{h}"))
            })
            .unwrap_or_else(|| self.endpoint.clone());
        write!(f, "{rest}/{}", self.name)
    }
}

/// What an index records about itself (in its `_meta` collection).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Meta {
    pub(crate) format: u32,
    /// Each kind's vector dimension, by `Kind::index` (recorded as one `dimensions` when
    /// they are the same, as indexes made before wrote it; `kinds` lists them otherwise).
    pub(crate) dimensions: [usize; Kind::COUNT],
    /// The embedders, as `EmbedderSpecs` prints them.
    pub(crate) embedder: String,
    pub(crate) collection_per_tenant: bool,
}

impl Meta {
    /// The dimension of `kind`'s vectors.
    pub(crate) fn dimensions(&self, kind: Kind) -> usize {
        self.dimensions[kind.index()]
    }

    fn to_json(&self) -> String {
        let mut value = serde_json::json!({
            "format": self.format,
            "dimensions": self.dimensions[0],
            "embedder": self.embedder,
            "collection_per_tenant": self.collection_per_tenant,
        });
        if self.dimensions.iter().any(|&d| d != self.dimensions[0]) {
            let kinds: serde_json::Map<String, serde_json::Value> = Kind::ALL
                .into_iter()
                .map(|kind| (kind.plural().to_string(), self.dimensions(kind).into()))
                .collect();
            value["kinds"] = kinds.into();
        }
        value.to_string()
    }

    fn from_json(text: &str) -> ruchedb::Result<Meta> {
        let corrupt = |what: &str| {
            Error::new(ErrorKind::Corrupt {
                what: format!("the index's meta record: {what}"),
            })
        };
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|err| corrupt(&err.to_string()))?;
        let format = value["format"]
            .as_u64()
            .ok_or_else(|| corrupt("no format"))? as u32;
        if format != FORMAT {
            return Err(Error::new(ErrorKind::IncompatibleFormat {
                found: format,
                expected: FORMAT,
            }));
        }
        let shared = value["dimensions"]
            .as_u64()
            .ok_or_else(|| corrupt("no dimensions"))? as usize;
        let mut dimensions = [shared; Kind::COUNT];
        if let Some(kinds) = value["kinds"].as_object() {
            for kind in Kind::ALL {
                dimensions[kind.index()] = kinds
                    .get(kind.plural())
                    .and_then(serde_json::Value::as_u64)
                    .ok_or_else(|| corrupt(&format!("no dimensions for {}", kind.plural())))?
                    as usize;
            }
        }
        Ok(Meta {
            format,
            dimensions,
            embedder: value["embedder"]
                .as_str()
                .ok_or_else(|| corrupt("no embedder"))?
                .to_string(),
            collection_per_tenant: value["collection_per_tenant"].as_bool().unwrap_or(false),
        })
    }
}

/// The names of an index's collections.
pub(crate) struct Collections<'a> {
    name: &'a str,
    per_tenant: bool,
    pub(crate) meta: String,
}

/// The two collections of one kind (and one tenant, with collections per tenant).
pub(crate) struct Pair {
    /// One row per document: text (BM25), the document, filter fields.
    pub(crate) docs: String,
    /// One row per vector.
    pub(crate) vecs: String,
}

impl<'a> Collections<'a> {
    pub(crate) fn new(name: &'a str, meta: &Meta) -> Collections<'a> {
        Collections {
            name,
            per_tenant: meta.collection_per_tenant,
            meta: format!("{name}_meta"),
        }
    }

    /// What distinguishes a tenant's collections ("" when tenants share them).
    pub(crate) fn tenant_part(&self, tenant: &str) -> String {
        if self.per_tenant {
            format!("_t{:016x}", xxhash_rust::xxh3::xxh3_64(tenant.as_bytes()))
        } else {
            String::new()
        }
    }

    pub(crate) fn pair(&self, kind: Kind, tenant: &str) -> Pair {
        let suffix = self.tenant_part(tenant);
        Pair {
            docs: format!("{}_{kind}_docs{suffix}", self.name),
            vecs: format!("{}_{kind}_vecs{suffix}", self.name),
        }
    }
}

/// The key of a document: a hash of its kind, tenant and id (safe in any expression).
pub(crate) fn doc_key(kind: Kind, tenant: &str, id: &str) -> String {
    let mut bytes = Vec::with_capacity(tenant.len() + id.len() + 3);
    bytes.push(match kind {
        Kind::Rule => b'r',
        Kind::Chunk => b'c',
        Kind::Scenario => b's',
        Kind::Tool => b't',
    });
    bytes.extend_from_slice(tenant.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(id.as_bytes());
    format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&bytes))
}

pub(crate) fn vector_match(row: i64) -> VectorMatch {
    match row {
        0 => VectorMatch::Text,
        CENTROID_ROW => VectorMatch::Centroid,
        n => VectorMatch::Pattern(usize::try_from(n - 1).unwrap_or(0)),
    }
}

fn row_of(m: VectorMatch) -> i64 {
    match m {
        VectorMatch::Text => 0,
        VectorMatch::Pattern(i) => i as i64 + 1,
        VectorMatch::Centroid => CENTROID_ROW,
    }
}

/// A Milvus error as a ruchedb error: transport failures are `Unavailable`.
pub(crate) fn error(location: &Location, err: milvus::v2::error::Error) -> Error {
    use milvus::v2::error::Error as E;
    let backend = format!("milvus at {}", location.endpoint);
    let transport = |err: &E| matches!(err, E::Grpc(_) | E::Timeout(_) | E::Cancelled(_));
    let unavailable = match &err {
        E::RetryExhausted { source, .. } => transport(source),
        other => transport(other),
    };
    let message = err.to_string();
    let kind = if unavailable {
        ErrorKind::Unavailable { backend, message }
    } else {
        ErrorKind::Backend { backend, message }
    };
    Error::with_source(kind, err)
}

/// Shorthand: a Milvus result as a ruchedb result.
macro_rules! call {
    ($location:expr, $e:expr) => {
        $e.map_err(|err| error($location, err))
    };
}

fn here() -> Location {
    Location {
        endpoint: "milvus".to_string(),
        name: String::new(),
    }
}

fn sdk<T>(result: std::result::Result<T, milvus::v2::error::Error>) -> ruchedb::Result<T> {
    result.map_err(|err| error(&here(), err))
}

pub(crate) async fn exists(
    client: &ClientV2,
    location: &Location,
    collection: &str,
) -> ruchedb::Result<bool> {
    let request = sdk(HasCollectionRequest::builder()
        .collection_name(collection)
        .build())?;
    Ok(call!(location, client.has_collection(request).await)?.exists())
}

pub(crate) async fn create_meta(
    client: &ClientV2,
    location: &Location,
    collection: &str,
    meta: &Meta,
) -> ruchedb::Result<()> {
    let schema = CollectionSchema::new()
        .enable_dynamic_field(false)
        .add_field(varchar("key", 1024).primary_key(true).auto_id(false))
        .add_field(varchar("value", MAX_VARCHAR as u32))
        .add_field(
            FieldSchema::new()
                .name("unused")
                .data_type(DataType::FloatVector)
                .dimension(2),
        );
    create(client, collection, schema, vec![dense_index("unused")]).await?;
    let columns = vec![
        FieldData::varchar("key", vec!["meta".to_string()]),
        FieldData::varchar("value", vec![meta.to_json()]),
        FieldData::FloatVector {
            name: "unused".into(),
            values: vec![vec![1.0, 0.0]],
        },
    ];
    let request = sdk(InsertRequest::builder()
        .collection_name(collection)
        .columns(columns)
        .build())?;
    call!(location, client.insert(request).await)?;
    Ok(())
}

pub(crate) async fn read_meta(client: &ClientV2, location: &Location) -> ruchedb::Result<Meta> {
    let collection = format!("{}_meta", location.name);
    if !exists(client, location, &collection).await? {
        return Err(Error::new(ErrorKind::IndexNotFound {
            path: location.to_string().into(),
        }));
    }
    let request = sdk(QueryRequest::builder()
        .collection_name(&collection)
        .filter("key == \"meta\"")
        .output_fields(["value"])
        .limit(1)
        .consistency_level(ConsistencyLevel::Strong)
        .build())?;
    let response = call!(location, client.query(request).await)?;
    let results = response.results();
    let rows = sdk(results.rows())?;
    if let Some(row) = rows.into_iter().next() {
        return Meta::from_json(sdk(row.get_str("value"))?);
    }
    Err(Error::new(ErrorKind::Corrupt {
        what: format!("{collection} holds no meta record"),
    }))
}

/// Drops every collection of the index: those its meta collection lists, then the meta
/// collection. (Listing the server's collections is not portable: milvus-lite answers
/// `ShowCollections` with arrays the SDK rejects.)
pub(crate) async fn drop_all(client: &ClientV2, location: &Location) -> ruchedb::Result<()> {
    let meta = format!("{}_meta", location.name);
    if !exists(client, location, &meta).await? {
        return Ok(());
    }
    let request = sdk(QueryRequest::builder()
        .collection_name(&meta)
        .filter("key like \"pair:%\"")
        .output_fields(["key"])
        .limit(16_384)
        .consistency_level(ConsistencyLevel::Strong)
        .build())?;
    let response = call!(location, client.query(request).await)?;
    let results = response.results();
    let mut names = Vec::new();
    for row in sdk(results.rows())? {
        if let Some(docs) = sdk(row.get_str("key"))?.strip_prefix("pair:") {
            names.push(docs.to_string());
            names.push(docs.replacen("_docs", "_vecs", 1));
        }
    }
    names.push(meta);
    for name in names {
        if exists(client, location, &name).await? {
            let request = sdk(DropCollectionRequest::builder()
                .collection_name(name.as_str())
                .build())?;
            call!(location, client.drop_collection(request).await)?;
        }
    }
    Ok(())
}

fn varchar(name: &str, max: u32) -> FieldSchema {
    FieldSchema::new()
        .name(name)
        .data_type(DataType::VarChar)
        .max_length(max)
}

fn int64(name: &str) -> FieldSchema {
    FieldSchema::new().name(name).data_type(DataType::Int64)
}

fn dense_index(field: &str) -> IndexParam {
    IndexParam::new()
        .field_name(field)
        .index_type(IndexType::Hnsw)
        .metric_type(MetricType::Cosine)
        .extra_params(HashMap::from([
            ("M".to_owned(), "16".to_owned()),
            ("efConstruction".to_owned(), "200".to_owned()),
        ]))
}

/// The filter fields, the same in both collections of a pair.
fn with_filter_fields(schema: CollectionSchema) -> CollectionSchema {
    schema
        .add_field(varchar("doc_key", 64))
        .add_field(varchar("tenant_id", 1024).partition_key(true))
        .add_field(varchar("agent_id", 1024))
        .add_field(varchar("scenario_id", 1024))
        .add_field(varchar("step_id", 1024))
        .add_field(varchar("context_id", 1024))
        .add_field(FieldSchema::new().name("enabled").data_type(DataType::Bool))
        .add_field(
            FieldSchema::new()
                .name("tags")
                .data_type(DataType::Array)
                .element_type(DataType::VarChar)
                .max_capacity(256)
                .max_length(1024),
        )
        .add_field(int64("priority"))
        .add_field(int64("importance"))
        .add_field(int64("created_at"))
        .add_field(int64("expires_at"))
}

async fn create(
    client: &ClientV2,
    collection: &str,
    schema: CollectionSchema,
    indexes: Vec<IndexParam>,
) -> ruchedb::Result<()> {
    let request = sdk(CreateCollectionRequest::builder()
        .collection_name(collection)
        .schema(schema)
        .consistency_level(ConsistencyLevel::Strong)
        .build())?;
    sdk(client.create_collection(request).await)?;
    // `sync(false)`: waiting for the build polls a method milvus-lite lacks; a search
    // waits for the index anyway.
    let request = sdk(CreateIndexRequest::builder()
        .collection_name(collection)
        .index_params(indexes)
        .sync(false)
        .build())?;
    sdk(client.create_index(request).await)?;
    let request = sdk(LoadCollectionRequest::builder()
        .collection_name(collection)
        .build())?;
    sdk(client.load_collection(request).await)?;
    Ok(())
}

/// Creates the collections of a pair when missing, and lists them in the meta
/// collection (what `remove` drops).
pub(crate) async fn ensure_pair(
    client: &ClientV2,
    meta: &str,
    pair: &Pair,
    dimensions: usize,
) -> ruchedb::Result<()> {
    let location = here();
    if !exists(client, &location, &pair.docs).await?
        || !exists(client, &location, &pair.vecs).await?
    {
        let columns = vec![
            FieldData::varchar("key", vec![format!("pair:{}", pair.docs)]),
            FieldData::varchar("value", vec![String::new()]),
            FieldData::FloatVector {
                name: "unused".into(),
                values: vec![vec![1.0, 0.0]],
            },
        ];
        let insert = sdk(InsertRequest::builder()
            .collection_name(meta)
            .columns(columns)
            .build())?;
        let request = sdk(UpsertRequest::builder().insert(insert).build())?;
        sdk(client.upsert(request).await)?;
    }
    if !exists(client, &location, &pair.docs).await? {
        let schema = with_filter_fields(
            CollectionSchema::new()
                .enable_dynamic_field(false)
                .add_field(varchar("pk", 64).primary_key(true).auto_id(false)),
        )
        .add_field(varchar("doc", MAX_VARCHAR as u32))
        .add_field(varchar("text", MAX_VARCHAR as u32).enable_analyzer(true))
        .add_field(
            FieldSchema::new()
                .name("sparse")
                .data_type(DataType::SparseFloatVector),
        )
        .add_function(
            Function::new()
                .name("text_bm25")
                .function_type(FunctionType::Bm25)
                .input_fields(["text"])
                .output_fields(["sparse"]),
        );
        let bm25 = IndexParam::new()
            .field_name("sparse")
            .index_type(IndexType::SparseInvertedIndex)
            .metric_type(MetricType::Bm25);
        create(client, &pair.docs, schema, vec![bm25]).await?;
    }
    if !exists(client, &location, &pair.vecs).await? {
        let schema = with_filter_fields(
            CollectionSchema::new()
                .enable_dynamic_field(false)
                .add_field(varchar("pk", 96).primary_key(true).auto_id(false)),
        )
        .add_field(int64("row"))
        .add_field(
            FieldSchema::new()
                .name("dense")
                .data_type(DataType::FloatVector)
                .dimension(dimensions as u32),
        );
        create(client, &pair.vecs, schema, vec![dense_index("dense")]).await?;
    }
    Ok(())
}

/// The filter fields of a document, one value per row.
struct FilterRow {
    doc_key: String,
    tenant: String,
    agent: String,
    scenario: String,
    step: String,
    context: String,
    enabled: bool,
    tags: Vec<String>,
    priority: i64,
    importance: i64,
    created_at: i64,
    expires_at: i64,
}

impl FilterRow {
    fn of(doc: &Document) -> FilterRow {
        let key = doc_key(doc.kind(), doc.tenant_id(), doc.id());
        match doc {
            Document::Rule(rule) => {
                let (scenario, step) = match &rule.scope {
                    ruchedb::Scope::Global => (String::new(), String::new()),
                    ruchedb::Scope::Scenario { scenario_id } => {
                        (scenario_id.clone(), String::new())
                    }
                    ruchedb::Scope::Step {
                        scenario_id,
                        step_id,
                    } => (scenario_id.clone(), step_id.clone()),
                };
                FilterRow {
                    doc_key: key,
                    tenant: rule.tenant_id.clone(),
                    agent: rule.agent_id.clone().unwrap_or_default(),
                    scenario,
                    step,
                    context: String::new(),
                    enabled: rule.enabled,
                    tags: rule.tags.clone(),
                    priority: i64::from(rule.priority),
                    importance: 0,
                    created_at: 0,
                    expires_at: 0,
                }
            }
            Document::Chunk(chunk) => {
                let tags = match chunk.metadata.get("tags") {
                    Some(serde_json::Value::String(s)) => vec![s.clone()],
                    Some(serde_json::Value::Array(values)) => values
                        .iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect(),
                    _ => Vec::new(),
                };
                FilterRow {
                    doc_key: key,
                    tenant: chunk.tenant_id.clone(),
                    agent: chunk.agent_id.clone().unwrap_or_default(),
                    scenario: String::new(),
                    step: String::new(),
                    context: chunk.context_id.clone().unwrap_or_default(),
                    enabled: true,
                    tags,
                    priority: 0,
                    importance: chunk.importance.map_or(0, i64::from),
                    created_at: chunk.created_at.map_or(0, |t| t.unix_millis()),
                    expires_at: chunk.expires_at.map_or(0, |t| t.unix_millis()),
                }
            }
            Document::Scenario(_) | Document::Tool(_) => {
                let (enabled, tags) = match doc {
                    Document::Scenario(s) => (s.enabled, s.tags.clone()),
                    Document::Tool(t) => (t.enabled, t.tags.clone()),
                    _ => unreachable!("matched above"),
                };
                FilterRow {
                    doc_key: key,
                    tenant: doc.tenant_id().to_string(),
                    agent: doc.agent_id().unwrap_or_default().to_string(),
                    scenario: String::new(),
                    step: String::new(),
                    context: String::new(),
                    enabled,
                    tags,
                    priority: 0,
                    importance: 0,
                    created_at: 0,
                    expires_at: 0,
                }
            }
        }
    }
}

fn filter_columns(rows: &[&FilterRow]) -> Vec<FieldData> {
    let s = |f: fn(&FilterRow) -> &String| rows.iter().map(|r| f(r).clone()).collect::<Vec<_>>();
    let i = |f: fn(&FilterRow) -> i64| rows.iter().map(|r| f(r)).collect::<Vec<_>>();
    vec![
        FieldData::varchar("doc_key", s(|r| &r.doc_key)),
        FieldData::varchar("tenant_id", s(|r| &r.tenant)),
        FieldData::varchar("agent_id", s(|r| &r.agent)),
        FieldData::varchar("scenario_id", s(|r| &r.scenario)),
        FieldData::varchar("step_id", s(|r| &r.step)),
        FieldData::varchar("context_id", s(|r| &r.context)),
        FieldData::boolean("enabled", rows.iter().map(|r| r.enabled).collect()),
        FieldData::ArrayVarChar {
            name: "tags".into(),
            values: rows.iter().map(|r| r.tags.clone()).collect(),
        },
        FieldData::int64("priority", i(|r| r.priority)),
        FieldData::int64("importance", i(|r| r.importance)),
        FieldData::int64("created_at", i(|r| r.created_at)),
        FieldData::int64("expires_at", i(|r| r.expires_at)),
    ]
}

/// The document as stored: the record, without vectors.
fn document_json(doc: &Document) -> String {
    serde_json::to_string(doc).unwrap_or_default()
}

fn parse_document(kind: Kind, text: &str) -> ruchedb::Result<Document> {
    let corrupt = |err: serde_json::Error| {
        Error::new(ErrorKind::Corrupt {
            what: format!("a stored {kind} in Milvus: {err}"),
        })
    };
    Ok(match kind {
        Kind::Rule => Document::Rule(serde_json::from_str(text).map_err(corrupt)?),
        Kind::Chunk => Document::Chunk(serde_json::from_str(text).map_err(corrupt)?),
        Kind::Scenario => Document::Scenario(serde_json::from_str(text).map_err(corrupt)?),
        Kind::Tool => Document::Tool(serde_json::from_str(text).map_err(corrupt)?),
    })
}

/// Writes documents and their vector rows: upserts first, then deletes the rows of the
/// documents' previous versions that the new ones do not have (so a document is never
/// missing from either leg).
pub(crate) async fn write_docs(
    client: &ClientV2,
    pair: &Pair,
    docs: &[&Document],
    vectors: &[&ruchedb::engine::VectorRows],
    dimensions: usize,
    patterns_in_text: bool,
) -> ruchedb::Result<()> {
    let filters: Vec<FilterRow> = docs.iter().map(|d| FilterRow::of(d)).collect();
    let mut texts = Vec::with_capacity(docs.len());
    let mut jsons = Vec::with_capacity(docs.len());
    for doc in docs {
        let text = ruchedb::retrieve::indexed_text(doc, patterns_in_text);
        let json = document_json(doc);
        if text.len() > MAX_VARCHAR || json.len() > MAX_VARCHAR {
            return Err(Error::invalid_input(format!(
                "{} `{}`: its text or record is longer than {MAX_VARCHAR} bytes, Milvus's limit",
                doc.kind(),
                doc.id()
            )));
        }
        texts.push(text);
        jsons.push(json);
    }
    let all: Vec<&FilterRow> = filters.iter().collect();
    let mut columns = vec![FieldData::varchar(
        "pk",
        filters.iter().map(|f| f.doc_key.clone()).collect(),
    )];
    columns.extend(filter_columns(&all));
    columns.push(FieldData::varchar("doc", jsons));
    columns.push(FieldData::varchar("text", texts));
    upsert(client, &pair.docs, columns).await?;

    // Vector rows; a document without any vector gets none.
    let mut pks = Vec::new();
    let mut rows = Vec::new();
    let mut values = Vec::new();
    let mut owners: Vec<&FilterRow> = Vec::new();
    let mut stale = Vec::new();
    for (filter, doc_vectors) in filters.iter().zip(vectors) {
        let mut kept = Vec::new();
        for (m, v) in doc_vectors.iter() {
            if v.len() != dimensions {
                return Err(Error::new(ErrorKind::DimensionMismatch {
                    expected: dimensions,
                    got: v.len(),
                }));
            }
            let row = row_of(*m);
            kept.push(row);
            pks.push(format!("{}:{row}", filter.doc_key));
            rows.push(row);
            values.push(v.clone());
            owners.push(filter);
        }
        let kept: Vec<String> = kept.iter().map(i64::to_string).collect();
        stale.push(format!(
            "(doc_key == {} and row not in [{}])",
            literal(&filter.doc_key),
            kept.join(", ")
        ));
    }
    for start in (0..pks.len()).step_by(crate::BATCH) {
        let end = (start + crate::BATCH).min(pks.len());
        let mut columns = vec![FieldData::varchar("pk", pks[start..end].to_vec())];
        columns.extend(filter_columns(&owners[start..end]));
        columns.push(FieldData::int64("row", rows[start..end].to_vec()));
        columns.push(FieldData::FloatVector {
            name: "dense".into(),
            values: values[start..end].to_vec(),
        });
        upsert(client, &pair.vecs, columns).await?;
    }
    for batch in stale.chunks(100) {
        delete_where(client, &pair.vecs, &batch.join(" or "), &here()).await?;
    }
    Ok(())
}

async fn upsert(
    client: &ClientV2,
    collection: &str,
    columns: Vec<FieldData>,
) -> ruchedb::Result<()> {
    let insert = sdk(InsertRequest::builder()
        .collection_name(collection)
        .columns(columns)
        .build())?;
    let request = sdk(UpsertRequest::builder().insert(insert).build())?;
    sdk(client.upsert(request).await)?;
    Ok(())
}

pub(crate) async fn delete_where(
    client: &ClientV2,
    collection: &str,
    expr: &str,
    location: &Location,
) -> ruchedb::Result<()> {
    let request = sdk(DeleteRequest::builder()
        .collection_name(collection)
        .filter(expr)
        .build())?;
    call!(location, client.delete(request).await)?;
    Ok(())
}

pub(crate) async fn delete_keys(
    client: &ClientV2,
    pair: &Pair,
    keys: &[String],
) -> ruchedb::Result<()> {
    for batch in keys.chunks(crate::BATCH) {
        let expr = format!("doc_key in {}", list(batch));
        delete_where(client, &pair.docs, &expr, &here()).await?;
        delete_where(client, &pair.vecs, &expr, &here()).await?;
    }
    Ok(())
}

pub(crate) async fn count(client: &ClientV2, pair: &Pair, expr: &str) -> ruchedb::Result<u64> {
    let request = sdk(QueryRequest::builder()
        .collection_name(&pair.docs)
        .filter(expr)
        .output_fields(["count(*)"])
        .consistency_level(ConsistencyLevel::Strong)
        .build())?;
    Ok(sdk(client.query(request).await)?.results().get_row_count())
}

/// The BM25 leg: `(doc_key, score)`, best first, higher is better.
pub(crate) async fn bm25(
    client: &ClientV2,
    pair: &Pair,
    text: &str,
    expr: &str,
    limit: usize,
    negated: bool,
) -> ruchedb::Result<Vec<(String, f64)>> {
    let request = sdk(SearchRequest::builder()
        .collection_name(&pair.docs)
        .vector_field("sparse")
        .vectors(SearchVectors::EmbeddedText(vec![text.to_string()]))
        .filter(expr)
        .limit(limit.clamp(1, 16_384) as i64)
        .output_fields(["doc_key"])
        .consistency_level(ConsistencyLevel::Strong)
        .build())?;
    let response = sdk(client.search(request).await)?;
    let mut out = Vec::new();
    for hits in response.results().iter() {
        let scores = hits.get_scores();
        for row in sdk(hits.rows())? {
            let raw = f64::from(scores[row.index()]);
            // milvus-lite returns −BM25.
            let score = if negated { raw.abs() } else { raw };
            if score > 0.0 {
                out.push((sdk(row.get_str("doc_key"))?.to_string(), score));
            }
        }
    }
    Ok(out)
}

/// The vector leg: `(doc_key, cosine, row)`, each document once (its best row), best
/// first, at most `limit` documents.
pub(crate) async fn dense(
    client: &ClientV2,
    pair: &Pair,
    vector: &[f32],
    expr: &str,
    limit: usize,
) -> ruchedb::Result<Vec<(String, f32, i64)>> {
    // A rule has several rows: ask for more rows than documents.
    let rows_wanted = (limit * 4).clamp(1, 16_384);
    let request = sdk(SearchRequest::builder()
        .collection_name(&pair.vecs)
        .vector_field("dense")
        .vectors(SearchVectors::Float(vec![vector.to_vec()]))
        .filter(expr)
        .limit(rows_wanted as i64)
        .output_fields(["doc_key", "row"])
        .consistency_level(ConsistencyLevel::Strong)
        .build())?;
    let response = sdk(client.search(request).await)?;
    let mut out: Vec<(String, f32, i64)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for hits in response.results().iter() {
        for (row, score) in sdk(hits.rows())?.zip(hits.get_scores()) {
            let key = sdk(row.get_str("doc_key"))?.to_string();
            if seen.insert(key.clone()) {
                out.push((key, *score, sdk(row.get_i64("row"))?));
            }
        }
    }
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out.truncate(limit);
    Ok(out)
}

/// The documents of `keys`.
pub(crate) async fn fetch_docs(
    client: &ClientV2,
    pair: &Pair,
    kind: Kind,
    keys: &[String],
) -> ruchedb::Result<HashMap<String, Document>> {
    let mut out = HashMap::with_capacity(keys.len());
    for batch in keys.chunks(crate::BATCH) {
        let request = sdk(QueryRequest::builder()
            .collection_name(&pair.docs)
            .filter(format!("pk in {}", list(batch)))
            .output_fields(["pk", "doc"])
            .limit(batch.len() as i64)
            .consistency_level(ConsistencyLevel::Strong)
            .build())?;
        let response = sdk(client.query(request).await)?;
        let results = response.results();
        for row in sdk(results.rows())? {
            let key = sdk(row.get_str("pk"))?.to_string();
            out.insert(key, parse_document(kind, sdk(row.get_str("doc"))?)?);
        }
    }
    Ok(out)
}

/// The vector rows of `keys`: `doc_key → [(row, vector)]`.
pub(crate) async fn fetch_vectors(
    client: &ClientV2,
    pair: &Pair,
    keys: &[String],
) -> ruchedb::Result<HashMap<String, Vec<(i64, Vec<f32>)>>> {
    let mut out: HashMap<String, Vec<(i64, Vec<f32>)>> = HashMap::new();
    for batch in keys.chunks(100) {
        let request = sdk(QueryRequest::builder()
            .collection_name(&pair.vecs)
            .filter(format!("doc_key in {}", list(batch)))
            .output_fields(["doc_key", "row", "dense"])
            .limit(16_384)
            .consistency_level(ConsistencyLevel::Strong)
            .build())?;
        let response = sdk(client.query(request).await)?;
        let results = response.results();
        for row in sdk(results.rows())? {
            out.entry(sdk(row.get_str("doc_key"))?.to_string())
                .or_default()
                .push((
                    sdk(row.get_i64("row"))?,
                    sdk(row.get_float_vector("dense"))?.to_vec(),
                ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse_and_print() {
        let at: Location = "milvus://127.0.0.1:19530/support".parse().unwrap();
        assert_eq!(at.endpoint, "http://127.0.0.1:19530");
        assert_eq!(at.name, "support");
        assert_eq!(at.to_string(), "milvus://127.0.0.1:19530/support");
        for bad in [
            "/tmp/x",
            "milvus://host",
            "milvus://host/9x",
            "milvus:///x",
            "milvus://h/a-b",
        ] {
            let err = bad.parse::<Location>().unwrap_err();
            assert!(
                matches!(err.kind(), ErrorKind::InvalidInput { .. }),
                "{bad}"
            );
        }
    }

    #[test]
    fn keys_differ_by_kind_tenant_and_id() {
        let keys = [
            doc_key(Kind::Rule, "t", "a"),
            doc_key(Kind::Chunk, "t", "a"),
            doc_key(Kind::Rule, "t2", "a"),
            doc_key(Kind::Rule, "t", "a2"),
            doc_key(Kind::Rule, "ta", ""),
        ];
        let unique: std::collections::HashSet<_> = keys.iter().collect();
        assert_eq!(unique.len(), keys.len());
    }

    #[test]
    fn meta_round_trips_and_checks_its_format() {
        let meta = Meta {
            format: FORMAT,
            dimensions: [384; Kind::COUNT],
            embedder: "default".into(),
            collection_per_tenant: true,
        };
        assert_eq!(Meta::from_json(&meta.to_json()).unwrap(), meta);
        let newer = meta.to_json().replace("\"format\":1", "\"format\":9");
        assert!(matches!(
            Meta::from_json(&newer).unwrap_err().kind(),
            ErrorKind::IncompatibleFormat { .. }
        ));
    }
}
