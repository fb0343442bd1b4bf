//! The `m` keyspace: format version, counters and the index's vector space.

use super::keys;
use super::sled_errors::sled_err;
use crate::{Error, ErrorKind, Kind, Result};

/// The on-disk format this build reads and writes.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// The index-wide values of the `m` keyspace.
///
/// Each kind has a vector space (a dimension and the model that makes its vectors). When
/// every kind has the same one, `dimensions` and `model_id` hold it, as in indexes made
/// before kinds had spaces of their own (which therefore read as one space for every
/// kind). When they differ, `dimensions` is `None` and `model_id` lists each kind's:
/// `rules=MODEL@DIM,chunks=MODEL@DIM,...` ([`Meta::space`]). The fields, and so the
/// published files that carry them, keep their layout either way.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Meta {
    /// The next `DocId` to assign.
    pub(crate) next_doc: u64,
    /// The sequence number of the last committed change (0: none yet).
    pub(crate) last_seq: u64,
    /// The vector dimension of every kind, when they share one.
    pub(crate) dimensions: Option<usize>,
    /// The model that makes the vectors (`external` when records bring their own), or
    /// each kind's (see above).
    pub(crate) model_id: Option<String>,
    /// How to load the embedders again (an [`EmbedderSpecs`](crate::EmbedderSpecs)
    /// string: one spec, or one per kind).
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

/// The vector space of one kind: its dimension and the model that makes its vectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Space {
    pub(crate) dimensions: usize,
    pub(crate) model_id: String,
}

impl Meta {
    /// The vector space of `kind`, once known.
    pub(crate) fn space(&self, kind: Kind) -> Option<Space> {
        self.spaces()[kind.index()].clone()
    }

    /// The vector dimension of `kind`, once known.
    pub(crate) fn dimensions_of(&self, kind: Kind) -> Option<usize> {
        self.space(kind).map(|space| space.dimensions)
    }

    /// Every kind's vector space, by [`Kind::index`].
    pub(crate) fn spaces(&self) -> [Option<Space>; Kind::COUNT] {
        if let Some(dimensions) = self.dimensions {
            let model_id = self.model_id.clone().unwrap_or_else(|| "external".into());
            return std::array::from_fn(|_| {
                Some(Space {
                    dimensions,
                    model_id: model_id.clone(),
                })
            });
        }
        let mut spaces: [Option<Space>; Kind::COUNT] = Default::default();
        for pair in self.model_id.iter().flat_map(|ids| ids.split(',')) {
            let parsed = pair.split_once('=').and_then(|(kind, space)| {
                let (model_id, dimensions) = space.rsplit_once('@')?;
                Some((
                    kind.parse::<Kind>().ok()?,
                    model_id,
                    dimensions.parse().ok()?,
                ))
            });
            if let Some((kind, model_id, dimensions)) = parsed {
                spaces[kind.index()] = Some(Space {
                    dimensions,
                    model_id: model_id.to_string(),
                });
            }
        }
        spaces
    }

    /// Records the vector space of `kinds` (one shared space is written as indexes
    /// before per-kind spaces wrote it).
    pub(crate) fn set_space(&mut self, kinds: &[Kind], space: &Space) {
        let mut spaces = self.spaces();
        for kind in kinds {
            spaces[kind.index()] = Some(space.clone());
        }
        let first = &spaces[0];
        if first.is_some() && spaces.iter().all(|s| s == first) {
            let first = first.clone().expect("checked");
            self.dimensions = Some(first.dimensions);
            self.model_id = Some(first.model_id);
            return;
        }
        self.dimensions = None;
        let listed: Vec<String> = Kind::ALL
            .into_iter()
            .filter_map(|kind| {
                let space = spaces[kind.index()].as_ref()?;
                Some(format!(
                    "{}={}@{}",
                    kind.plural(),
                    space.model_id,
                    space.dimensions
                ))
            })
            .collect();
        self.model_id = (!listed.is_empty()).then(|| listed.join(","));
    }

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
        // A value that became `None` (one shared dimension that kinds no longer share)
        // is removed.
        match self.dimensions {
            Some(dimensions) => batch.insert(
                keys::meta_key(DIMENSIONS),
                &(dimensions as u64).to_be_bytes(),
            ),
            None => batch.remove(keys::meta_key(DIMENSIONS)),
        }
        match &self.model_id {
            Some(model_id) => batch.insert(keys::meta_key(MODEL_ID), model_id.as_bytes()),
            None => batch.remove(keys::meta_key(MODEL_ID)),
        }
        match &self.embedder {
            Some(embedder) => batch.insert(keys::meta_key(EMBEDDER), embedder.as_bytes()),
            None => batch.remove(keys::meta_key(EMBEDDER)),
        }
        if let Some(id_key) = &self.id_key {
            batch.insert(keys::meta_key(ID_KEY), id_key.as_slice());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_shared_space_is_written_as_before_and_kinds_of_their_own_are_listed() {
        let mut meta = Meta::new();
        assert!(Kind::ALL.iter().all(|&k| meta.space(k).is_none()));
        let minilm = Space {
            dimensions: 384,
            model_id: "all-minilm-l6-v2-q8".into(),
        };
        let static_space = Space {
            dimensions: 256,
            model_id: "minilm-static-v1".into(),
        };
        meta.set_space(&Kind::ALL, &minilm);
        assert_eq!(meta.dimensions, Some(384));
        assert_eq!(meta.model_id.as_deref(), Some("all-minilm-l6-v2-q8"));
        meta.set_space(&[Kind::Chunk], &static_space);
        assert_eq!(meta.dimensions, None);
        assert_eq!(meta.space(Kind::Chunk), Some(static_space.clone()));
        assert_eq!(meta.space(Kind::Tool), Some(minilm.clone()));
        assert_eq!(
            meta.model_id.as_deref(),
            Some(
                "rules=all-minilm-l6-v2-q8@384,chunks=minilm-static-v1@256,scenarios=all-minilm-l6-v2-q8@384,tools=all-minilm-l6-v2-q8@384"
            )
        );
        // Back to one space: written as one again.
        meta.set_space(&[Kind::Chunk], &minilm);
        assert_eq!(meta.dimensions, Some(384));
        // An index made before: one space for every kind.
        let old = Meta {
            dimensions: Some(256),
            model_id: Some("minilm-static-v1".into()),
            embedder: Some("default".into()),
            ..Meta::new()
        };
        assert!(Kind::ALL.iter().all(|&k| old.dimensions_of(k) == Some(256)));
    }
}
