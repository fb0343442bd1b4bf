//! The `m` keyspace: format version, counters and the index's vector space.

use super::{keys, sled_err};
use crate::{Error, ErrorKind, Result};

/// The on-disk format this build reads and writes.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// The index-wide values of the `m` keyspace.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Meta {
    /// The next `DocId` to assign.
    pub(crate) next_doc: u64,
    /// The sequence number of the last committed change (0: none yet).
    pub(crate) last_seq: u64,
    /// The vector dimension, once known.
    pub(crate) dimensions: Option<usize>,
    /// The model that makes the vectors (`external` when records bring their own).
    pub(crate) model_id: Option<String>,
    /// How to load the embedder again (an [`EmbedderSpec`](crate::EmbedderSpec) string).
    pub(crate) embedder: Option<String>,
    /// The key that signs query ids (random, made with the index or at its first open
    /// by a version that signs them).
    pub(crate) id_key: Option<[u8; 32]>,
}

const FORMAT: &str = "format_version";
const NEXT_DOC: &str = "next_doc";
const LAST_SEQ: &str = "last_seq";
const DIMENSIONS: &str = "dimensions";
const MODEL_ID: &str = "model_id";
const METRIC: &str = "metric";
const EMBEDDER: &str = "embedder";
pub(crate) const ID_KEY: &str = "id_key";

impl Meta {
    pub(crate) fn new() -> Meta {
        Meta {
            next_doc: 1,
            last_seq: 0,
            dimensions: None,
            model_id: None,
            embedder: None,
            id_key: Some(rand::random()),
        }
    }

    /// Reads and checks the meta values of an existing store.
    pub(crate) fn read(main: &sled::Tree) -> Result<Meta> {
        let get = |name: &str| main.get(keys::meta_key(name)).map_err(sled_err);
        let format = get(FORMAT)?.ok_or_else(|| {
            Error::corrupt("the store has no format version (not a ruche index, or truncated)")
        })?;
        let format = u32::from_be_bytes(
            format
                .as_ref()
                .try_into()
                .map_err(|_| Error::corrupt("format version"))?,
        );
        if format != FORMAT_VERSION {
            return Err(Error::new(ErrorKind::IncompatibleFormat {
                found: format,
                expected: FORMAT_VERSION,
            }));
        }
        let u64_of = |name: &str| -> Result<u64> {
            let value = get(name)?.ok_or_else(|| Error::corrupt(format!("missing `{name}`")))?;
            keys::decode_u64(&value)
        };
        let dimensions = match get(DIMENSIONS)? {
            Some(value) => Some(keys::decode_u64(&value)? as usize),
            None => None,
        };
        let string_of = |name: &str| -> Result<Option<String>> {
            get(name)?
                .map(|value| {
                    String::from_utf8(value.to_vec())
                        .map_err(|_| Error::corrupt(format!("`{name}`")))
                })
                .transpose()
        };
        let model_id = string_of(MODEL_ID)?;
        let embedder = string_of(EMBEDDER)?;
        let id_key = match get(ID_KEY)? {
            Some(value) => Some(
                <[u8; 32]>::try_from(value.as_ref())
                    .map_err(|_| Error::corrupt(format!("`{ID_KEY}`")))?,
            ),
            None => None,
        };
        Ok(Meta {
            next_doc: u64_of(NEXT_DOC)?,
            last_seq: u64_of(LAST_SEQ)?,
            dimensions,
            model_id,
            embedder,
            id_key,
        })
    }

    /// Adds every value to `batch`.
    pub(crate) fn write(&self, batch: &mut sled::Batch) {
        batch.insert(keys::meta_key(FORMAT), &FORMAT_VERSION.to_be_bytes());
        batch.insert(keys::meta_key(NEXT_DOC), &self.next_doc.to_be_bytes());
        batch.insert(keys::meta_key(LAST_SEQ), &self.last_seq.to_be_bytes());
        batch.insert(keys::meta_key(METRIC), b"cosine".as_slice());
        if let Some(dimensions) = self.dimensions {
            batch.insert(
                keys::meta_key(DIMENSIONS),
                &(dimensions as u64).to_be_bytes(),
            );
        }
        if let Some(model_id) = &self.model_id {
            batch.insert(keys::meta_key(MODEL_ID), model_id.as_bytes());
        }
        if let Some(embedder) = &self.embedder {
            batch.insert(keys::meta_key(EMBEDDER), embedder.as_bytes());
        }
        if let Some(id_key) = &self.id_key {
            batch.insert(keys::meta_key(ID_KEY), id_key.as_slice());
        }
    }
}
