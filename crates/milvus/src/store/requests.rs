//! Every request an index sends to Milvus once its collections exist: writes, deletes,
//! counts, BM25 and dense searches, fetches.

use std::collections::HashMap;

use milvus::v2::prelude::*;
use ruchedb::{Document, Error, ErrorKind, Kind};

use crate::filter::{list, literal};

use super::collections::{MAX_VARCHAR, Pair};
use super::location::{Location, here, sdk};
use super::rows::{FilterRow, document_json, filter_columns, parse_document, row_of};

/// Writes documents and their vector rows: upserts first, then deletes the rows of the
/// documents' previous versions that the new ones do not have (so a document is never
/// missing from either leg).
pub(crate) async fn write_docs(
    client: &ClientV2,
    pair: &Pair,
    docs: &[&Document],
    vectors: &[&ruchedb::VectorRows],
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

pub(crate) async fn upsert(
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

/// The documents `expr` admits, at most `limit`.
pub(crate) async fn query_docs(
    client: &ClientV2,
    pair: &Pair,
    kind: Kind,
    expr: &str,
    limit: usize,
) -> ruchedb::Result<Vec<Document>> {
    let request = sdk(QueryRequest::builder()
        .collection_name(&pair.docs)
        .filter(expr)
        .output_fields(["pk", "doc"])
        .limit(limit as i64)
        .consistency_level(ConsistencyLevel::Strong)
        .build())?;
    let response = sdk(client.query(request).await)?;
    let results = response.results();
    let mut docs = Vec::new();
    for row in sdk(results.rows())? {
        docs.push(parse_document(kind, sdk(row.get_str("doc"))?)?);
    }
    Ok(docs)
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
