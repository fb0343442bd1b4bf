//! The commands that reach an index in Milvus (`milvus://HOST:PORT/NAME` in place of a
//! directory): `index`, `search`, `delete` and `stats`.

use std::path::Path;

use anyhow::{Result, bail};
use ruchedb::{Config, EmbedderSpec, EmbedderSpecs, Kind, SearchRequest, SearchResponse};

/// Where a command's index is: a local directory or a Milvus location.
pub fn is_milvus(dir: &Path) -> bool {
    dir.to_str()
        .is_some_and(|d| d.starts_with("milvus://") || d.starts_with("milvus+https://"))
}

/// The index a search runs on.
pub enum Searcher {
    Local(crate::commands::ReadHandle),
    #[cfg(feature = "milvus")]
    Milvus(Box<ruchedb_milvus::MilvusIndex>),
}

impl Searcher {
    pub fn open(config: &Config, dir: &Path) -> Result<Searcher> {
        if is_milvus(dir) {
            return open_milvus(config, dir);
        }
        Ok(Searcher::Local(crate::commands::open_to_read(config, dir)?))
    }

    pub fn search(&self, request: &SearchRequest) -> ruchedb::Result<SearchResponse> {
        match self {
            Searcher::Local(engine) => engine.search(request),
            #[cfg(feature = "milvus")]
            Searcher::Milvus(index) => index.search(request),
        }
    }

    pub fn turn(&self, request: &ruchedb::TurnRequest) -> ruchedb::Result<ruchedb::TurnResponse> {
        match self {
            Searcher::Local(engine) => engine.turn(request),
            #[cfg(feature = "milvus")]
            Searcher::Milvus(index) => index.turn(request),
        }
    }

    /// Ends a command that is about to exit ([`crate::commands::ReadHandle::finish`]).
    pub fn finish(self) {
        match self {
            Searcher::Local(handle) => handle.finish(),
            #[cfg(feature = "milvus")]
            Searcher::Milvus(index) => drop(index),
        }
    }
}

#[cfg(feature = "milvus")]
fn options(config: &Config) -> ruchedb_milvus::MilvusOptions {
    let mut options = ruchedb_milvus::MilvusOptions::default();
    options.config = config.clone();
    if let Ok(token) = std::env::var("RUCHE_MILVUS_TOKEN") {
        options.token = token;
    }
    options
}

#[cfg(feature = "milvus")]
fn open_milvus(config: &Config, dir: &Path) -> Result<Searcher> {
    let location = dir.to_string_lossy();
    let index = ruchedb_milvus::MilvusIndex::open(&location, options(config))?;
    Ok(Searcher::Milvus(Box::new(index)))
}

#[cfg(not(feature = "milvus"))]
fn open_milvus(_config: &Config, dir: &Path) -> Result<Searcher> {
    bail!(
        "{}: this `ruche` was built without the `milvus` feature",
        dir.display()
    )
}

/// `ruche index milvus://...`: creates the index when missing (the embedder as for a
/// directory: `--embedder`, or none when the records carry vectors, else the bundled
/// model), then upserts and commits. Returns how many documents were sent.
#[cfg(feature = "milvus")]
pub fn index(
    config: &Config,
    dir: &Path,
    explicit: Option<EmbedderSpecs>,
    collection_per_tenant: bool,
    docs: Vec<ruchedb::Document>,
) -> Result<usize> {
    use ruchedb::ErrorKind;
    use ruchedb_milvus::MilvusIndex;
    let location = dir.to_string_lossy();
    let index = match MilvusIndex::open(&location, options(config)) {
        Ok(index) => {
            if explicit.is_some() || collection_per_tenant {
                bail!(
                    "{location} exists: --embedder and --collection-per-tenant apply when an index is created"
                );
            }
            index
        }
        Err(err) if matches!(err.kind(), ErrorKind::IndexNotFound { .. }) => {
            let first_vector = docs.iter().find_map(|d| d.embedding().map(<[f32]>::len));
            let mut options = options(config);
            options.embedders = match explicit {
                Some(explicit) => explicit,
                None if first_vector.is_some() => EmbedderSpecs::uniform(EmbedderSpec::None),
                None => config.embed.specs()?,
            };
            options.dimensions = first_vector;
            options.collection_per_tenant = collection_per_tenant;
            MilvusIndex::create(&location, options)?
        }
        Err(err) => return Err(err.into()),
    };
    index.upsert(docs)?;
    Ok(index.commit()?)
}

#[cfg(not(feature = "milvus"))]
pub fn index(
    config: &Config,
    dir: &Path,
    _explicit: Option<EmbedderSpecs>,
    _collection_per_tenant: bool,
    _docs: Vec<ruchedb::Document>,
) -> Result<usize> {
    open_milvus(config, dir).map(|_| 0)
}

/// `ruche delete milvus://...`: ids of one kind, or a whole tenant with `--all`.
#[cfg(feature = "milvus")]
pub fn delete(
    config: &Config,
    dir: &Path,
    kind: Option<Kind>,
    tenant: &str,
    ids: &[String],
    all: bool,
) -> Result<u64> {
    let index = ruchedb_milvus::MilvusIndex::open(&dir.to_string_lossy(), options(config))?;
    let mut deleted = 0;
    if all {
        deleted += index.delete_tenant(tenant)?;
    }
    if let Some(kind) = kind {
        for id in ids {
            index.delete(kind, tenant, id);
        }
        deleted += index.commit()? as u64;
    }
    Ok(deleted)
}

#[cfg(not(feature = "milvus"))]
pub fn delete(
    config: &Config,
    dir: &Path,
    _kind: Option<Kind>,
    _tenant: &str,
    _ids: &[String],
    _all: bool,
) -> Result<u64> {
    open_milvus(config, dir).map(|_| 0)
}

/// `ruche stats milvus://... --tenant T`: the tenant's counts.
#[cfg(feature = "milvus")]
pub fn counts(config: &Config, dir: &Path, tenant: &str) -> Result<Vec<(Kind, u64)>> {
    let index = ruchedb_milvus::MilvusIndex::open(&dir.to_string_lossy(), options(config))?;
    Kind::ALL
        .into_iter()
        .map(|kind| Ok((kind, index.count(kind, tenant)?)))
        .collect()
}

#[cfg(not(feature = "milvus"))]
pub fn counts(config: &Config, dir: &Path, _tenant: &str) -> Result<Vec<(Kind, u64)>> {
    open_milvus(config, dir).map(|_| Vec::new())
}
