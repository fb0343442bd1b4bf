//! Which embedder each kind of an index uses: the one the caller asks for (an object or a
//! spec, on the builder or in `[embed]`), else the one the index recorded, else, for a
//! new index, the defaults ([`EmbedderSpecs::default`]).

use std::sync::Arc;

use super::EngineBuilder;
use super::Inner;
use crate::embed::{Embedder, EmbedderSpec, EmbedderSpecs, Embedders};
use crate::local::store::{Meta, Store};
use crate::model::doc::Document;
use crate::{Error, ErrorKind, Kind, Result};

/// What the caller asked of one kind.
#[derive(Clone)]
enum Asked {
    /// An embedder object (never recorded: given again at every open).
    Object(Arc<dyn Embedder>),
    /// A named embedder (recorded in a new index).
    Spec(EmbedderSpec),
}

/// The caller's asks, by kind: the builder's, then the configuration's `[embed]`.
pub(super) struct Asks {
    by_kind: [Option<Asked>; Kind::COUNT],
    /// The builder fixed the dimension: an index of vectors the documents bring.
    dimensions: Option<usize>,
}

impl Asks {
    pub(super) fn of(builder: &EngineBuilder) -> Result<Asks> {
        let mut by_kind: [Option<Asked>; Kind::COUNT] = Default::default();
        for kind in Kind::ALL {
            by_kind[kind.index()] = if let Some(embedder) = builder.embedders.get(kind) {
                Some(Asked::Object(Arc::clone(embedder)))
            } else if let Some(spec) = &builder.embedder_specs[kind.index()] {
                Some(Asked::Spec(spec.absolute()))
            } else {
                builder
                    .config
                    .embed
                    .spec(kind)?
                    .map(|spec| Asked::Spec(spec.absolute()))
            };
        }
        Ok(Asks {
            by_kind,
            dimensions: builder.dimensions,
        })
    }

    /// Whether anything was asked (a new index with no ask decides at its first write).
    pub(super) fn any(&self) -> bool {
        self.dimensions.is_some() || self.by_kind.iter().any(Option::is_some)
    }

    fn get(&self, kind: Kind) -> Option<&Asked> {
        self.by_kind[kind.index()].as_ref()
    }
}

/// The embedders an open chose, and whether a new index still waits for its first
/// write to decide (see [`settle`]).
pub(super) struct Chosen {
    pub(super) embedders: Embedders,
    pub(super) undecided: bool,
}

/// Whether the index in `store` was made without a word about its embedders and has
/// recorded nothing yet: the defaults apply until its first write.
pub(super) fn undecided(asks: &Asks, meta: &Meta) -> bool {
    !asks.any()
        && meta.embedder.is_none()
        && meta.spaces().iter().all(Option::is_none)
        && meta.last_seq == 0
        && cfg!(feature = "bundled-model")
}

/// The embedders of a new index, recorded in its store: what was asked, and for the
/// kinds not asked the defaults (none when only a dimension was fixed: the documents
/// bring their vectors). With nothing asked, the defaults, recorded at the first write.
pub(super) fn create(asks: &Asks, store: &Store) -> Result<Chosen> {
    if undecided(asks, &store.meta()) {
        return Ok(Chosen {
            embedders: EmbedderSpecs::default().load()?,
            undecided: true,
        });
    }
    let defaults = EmbedderSpecs::default();
    let mut specs = EmbedderSpecs::uniform(EmbedderSpec::None);
    let mut recordable = true;
    let mut objects = Embedders::default();
    for kind in Kind::ALL {
        match asks.get(kind) {
            Some(Asked::Object(embedder)) => {
                recordable = false;
                objects = objects.with(kind, Some(Arc::clone(embedder)));
            }
            Some(Asked::Spec(spec)) => specs = specs.with(kind, spec.clone()),
            None if asks.dimensions.is_some() => {}
            None => specs = specs.with(kind, defaults.get(kind).clone()),
        }
    }
    let loaded = specs.load()?;
    let mut embedders = Embedders::default();
    for kind in Kind::ALL {
        let embedder = objects.get(kind).or(loaded.get(kind)).cloned();
        embedders = embedders.with(kind, embedder);
    }
    let recorded = recordable.then(|| specs.to_string());
    record(store, &embedders, asks.dimensions, recorded.as_deref())?;
    Ok(Chosen {
        embedders,
        undecided: false,
    })
}

/// Records each kind's vector space (its embedder's, or the fixed dimension's) and the
/// specs that load the embedders again.
fn record(
    store: &Store,
    embedders: &Embedders,
    dimensions: Option<usize>,
    specs: Option<&str>,
) -> Result<()> {
    let groups = embedders.distinct();
    let without: Vec<Kind> = Kind::ALL
        .into_iter()
        .filter(|&kind| embedders.get(kind).is_none())
        .collect();
    if let (Some(dimensions), false) = (dimensions, without.is_empty()) {
        store.set_vector_space(&without, dimensions, "external", specs)?;
    }
    for (embedder, kinds) in &groups {
        store.set_vector_space(kinds, embedder.dimensions(), embedder.model_id(), specs)?;
    }
    if groups.is_empty()
        && dimensions.is_none()
        && let Some(specs) = specs
    {
        store.set_embedder(specs)?;
    }
    Ok(())
}

/// The embedders of an existing index: each kind's asked one (checked against what the
/// index recorded of that kind), else the recorded one.
///
/// # Errors
///
/// [`ErrorKind::Embedder`] when a recorded embedder cannot be loaded; the errors of
/// [`check`] when an asked one does not make the kind's vectors.
pub(super) fn open(asks: &Asks, meta: &Meta) -> Result<Chosen> {
    if undecided(asks, meta) {
        return Ok(Chosen {
            embedders: EmbedderSpecs::default().load()?,
            undecided: true,
        });
    }
    let recorded = match &meta.embedder {
        Some(text) => Some(text.parse::<EmbedderSpecs>().map_err(|err| {
            Error::new(ErrorKind::Embedder {
                message: format!("the index's embedder `{text}` cannot be read ({err})"),
            })
        })?),
        None => None,
    };
    let mut to_load = EmbedderSpecs::uniform(EmbedderSpec::None);
    let mut objects = Embedders::default();
    for kind in Kind::ALL {
        match asks.get(kind) {
            Some(Asked::Object(embedder)) => {
                objects = objects.with(kind, Some(Arc::clone(embedder)))
            }
            Some(Asked::Spec(spec)) => to_load = to_load.with(kind, spec.clone()),
            None => {
                if let Some(recorded) = &recorded {
                    to_load = to_load.with(kind, recorded.get(kind).clone());
                }
            }
        }
    }
    let loaded = to_load.load().map_err(|err| match &meta.embedder {
        Some(recorded) => Error::new(ErrorKind::Embedder {
            message: format!("the index's embedder `{recorded}` cannot be loaded ({err})"),
        }),
        None => err,
    })?;
    let mut embedders = Embedders::default();
    for kind in Kind::ALL {
        let embedder = objects.get(kind).or(loaded.get(kind)).cloned();
        if let Some(embedder) = &embedder {
            check(embedder.as_ref(), kind, meta)?;
        }
        embedders = embedders.with(kind, embedder);
    }
    Ok(Chosen {
        embedders,
        undecided: false,
    })
}

/// Checks that `embedder` makes the vectors the index recorded for `kind`.
///
/// # Errors
///
/// [`ErrorKind::DimensionMismatch`] for another dimension; [`ErrorKind::InvalidInput`]
/// for another model (re-embed the kind to change models).
pub(super) fn check(embedder: &dyn Embedder, kind: Kind, meta: &Meta) -> Result<()> {
    let Some(space) = meta.space(kind) else {
        return Ok(());
    };
    if embedder.dimensions() != space.dimensions {
        return Err(Error::new(ErrorKind::DimensionMismatch {
            expected: space.dimensions,
            got: embedder.dimensions(),
        }));
    }
    if space.model_id != embedder.model_id() && space.model_id != "external" {
        return Err(Error::invalid_input(format!(
            "the index's {} were embedded with `{}`, not `{}` (re-embed them to change models)",
            kind.plural(),
            space.model_id,
            embedder.model_id()
        )));
    }
    Ok(())
}

/// Decides the embedders of a new index made without a word about them, at its first
/// write: documents that carry their own vectors make it an index of external vectors,
/// any other write keeps the defaults and records them.
pub(super) fn settle(
    store: &Store,
    embedders: &mut Embedders,
    carries_vectors: bool,
) -> Result<()> {
    if carries_vectors {
        store.set_embedder(&EmbedderSpec::None.to_string())?;
        *embedders = Embedders::default();
        return Ok(());
    }
    record(
        store,
        embedders,
        None,
        Some(&EmbedderSpecs::default().to_string()),
    )
}

impl Inner {
    /// Settles the embedders of an index created without one named, at its first write:
    /// documents that carry their own vectors make it an index of external vectors, any
    /// other write keeps the defaults and records them.
    pub(crate) fn settle_embedder(&self, docs: &[Document]) -> Result<()> {
        let mut undecided = self
            .undecided
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if !*undecided {
            return Ok(());
        }
        let carries_vectors = docs.iter().any(Document::has_embeddings);
        let mut embedders = self
            .embedders
            .write()
            .unwrap_or_else(|poison| poison.into_inner());
        settle(&self.local.store, &mut embedders, carries_vectors)?;
        *undecided = false;
        Ok(())
    }
}
