//! The collections of an index: its meta record, and a pair per kind and dimension
//! (documents, vectors) created with their schemas and indexes.

use std::collections::HashMap;

use milvus::v2::prelude::*;
use ruchedb::{Error, ErrorKind, Kind};

use super::location::{Location, here, sdk};

/// The version of the collections' layout.
pub(crate) const FORMAT: u32 = 1;

/// Longest text or document JSON Milvus takes in a VARCHAR field.
pub(crate) const MAX_VARCHAR: usize = 65_535;

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

    pub(crate) fn to_json(&self) -> String {
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

    pub(crate) fn from_json(text: &str) -> ruchedb::Result<Meta> {
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
    pub(crate) name: &'a str,
    pub(crate) per_tenant: bool,
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

pub(crate) fn varchar(name: &str, max: u32) -> FieldSchema {
    FieldSchema::new()
        .name(name)
        .data_type(DataType::VarChar)
        .max_length(max)
}

pub(crate) fn dense_index(field: &str) -> IndexParam {
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
pub(crate) fn with_filter_fields(schema: CollectionSchema) -> CollectionSchema {
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

pub(crate) async fn create(
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

pub(crate) fn int64(name: &str) -> FieldSchema {
    FieldSchema::new().name(name).data_type(DataType::Int64)
}
