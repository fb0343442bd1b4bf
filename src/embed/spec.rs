//! [`EmbedderSpec`]: an embedder named by a string, so an index can record and reload it.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use super::Embedder;
use crate::{Error, ErrorKind, Kind, Result};

/// Which embedder to use, as written on the command line and recorded in an index.
///
/// | text | meaning |
/// | --- | --- |
/// | `minilm` | all-MiniLM-L6-v2 compiled into the binary ([`MiniLmEmbedder`](crate::MiniLmEmbedder)): the default of rules, scenarios and tools |
/// | `static` | the static model compiled into the binary ([`StaticEmbedder::bundled`](crate::StaticEmbedder::bundled)): the default of chunks; `default`, its name in indexes made before, is read as `static` |
/// | `none` | no embedder: records and queries without vectors use the text leg alone |
/// | `static:DIR` | a model2vec static model in `DIR` |
/// | `bert:DIR` | a sentence-transformers BERT model in `DIR` (cargo feature `bert`) |
///
/// Each kind of document has its own ([`EmbedderSpecs`]).
///
/// # Example
///
/// ```
/// use ruchedb::EmbedderSpec;
///
/// let spec: EmbedderSpec = "bert:/models/all-MiniLM-L6-v2".parse()?;
/// assert_eq!(spec.to_string(), "bert:/models/all-MiniLM-L6-v2");
/// assert_eq!("minilm".parse::<EmbedderSpec>()?, EmbedderSpec::MiniLm);
/// assert_eq!("default".parse::<EmbedderSpec>()?, EmbedderSpec::StaticBundled);
/// # Ok::<(), ruchedb::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EmbedderSpec {
    /// The compiled-in all-MiniLM-L6-v2.
    MiniLm,
    /// The compiled-in static model.
    StaticBundled,
    /// No embedder.
    None,
    /// A model2vec static model directory.
    Static(PathBuf),
    /// A sentence-transformers BERT directory.
    Bert(PathBuf),
}

impl EmbedderSpec {
    /// Loads the embedder (`None` for [`EmbedderSpec::None`]).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Embedder`] when the model cannot be loaded, or when this build lacks
    /// the cargo feature it needs (`bundled-model`, `bert`).
    pub fn load(&self) -> Result<Option<Arc<dyn Embedder>>> {
        match self {
            EmbedderSpec::None => Ok(None),
            EmbedderSpec::MiniLm => {
                #[cfg(feature = "bundled-model")]
                {
                    Ok(Some(Arc::new(super::MiniLmEmbedder::bundled()?)))
                }
                #[cfg(not(feature = "bundled-model"))]
                {
                    Err(missing_feature("minilm", "bundled-model"))
                }
            }
            EmbedderSpec::StaticBundled => {
                #[cfg(feature = "bundled-model")]
                {
                    Ok(Some(Arc::new(super::StaticEmbedder::bundled()?)))
                }
                #[cfg(not(feature = "bundled-model"))]
                {
                    Err(missing_feature("static", "bundled-model"))
                }
            }
            EmbedderSpec::Static(dir) => Ok(Some(Arc::new(super::StaticEmbedder::from_dir(dir)?))),
            EmbedderSpec::Bert(dir) => {
                #[cfg(feature = "bert")]
                {
                    Ok(Some(Arc::new(super::BertEmbedder::from_dir(dir)?)))
                }
                #[cfg(not(feature = "bert"))]
                {
                    let _ = dir;
                    Err(missing_feature("bert:DIR", "bert"))
                }
            }
        }
    }

    /// The spec with its directory made absolute, as an index records it.
    pub fn absolute(&self) -> EmbedderSpec {
        let absolute = |dir: &PathBuf| std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
        match self {
            EmbedderSpec::Static(dir) => EmbedderSpec::Static(absolute(dir)),
            EmbedderSpec::Bert(dir) => EmbedderSpec::Bert(absolute(dir)),
            other => other.clone(),
        }
    }
}

/// The embedder of each kind of document, as configured (`[embed]`), given on the
/// command line (`--embedder SPEC`, or `--embedder KIND=SPEC` repeated) and recorded in
/// an index.
///
/// Written as one [`EmbedderSpec`] (every kind), or as `KIND=SPEC` pairs separated by
/// commas, the kinds not named taking their default: `minilm` for rules, scenarios and
/// tools (the decisions an agent acts on), `static` for chunks (memory is written at every
/// turn and searched by its words as much as its meaning: the static model embeds it in
/// microseconds).
///
/// # Example
///
/// ```
/// use ruchedb::{EmbedderSpec, EmbedderSpecs, Kind};
///
/// let specs: EmbedderSpecs = "chunks=minilm".parse()?;
/// assert_eq!(specs.get(Kind::Chunk), &EmbedderSpec::MiniLm);
/// assert_eq!(specs.get(Kind::Rule), &EmbedderSpec::MiniLm);
/// assert_eq!(specs.to_string(), "minilm");
/// assert_eq!(EmbedderSpecs::default().to_string(), "rules=minilm,chunks=static,scenarios=minilm,tools=minilm");
/// assert_eq!("none".parse::<EmbedderSpecs>()?, EmbedderSpecs::uniform(EmbedderSpec::None));
/// # Ok::<(), ruchedb::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EmbedderSpecs {
    /// By kind, in the order of [`Kind::ALL`].
    by_kind: [EmbedderSpec; Kind::COUNT],
}

impl Default for EmbedderSpecs {
    fn default() -> EmbedderSpecs {
        EmbedderSpecs::uniform(EmbedderSpec::MiniLm).with(Kind::Chunk, EmbedderSpec::StaticBundled)
    }
}

impl EmbedderSpecs {
    /// The same embedder for every kind.
    pub fn uniform(spec: EmbedderSpec) -> EmbedderSpecs {
        EmbedderSpecs {
            by_kind: std::array::from_fn(|_| spec.clone()),
        }
    }

    /// These specs with `kind`'s replaced.
    #[must_use]
    pub fn with(mut self, kind: Kind, spec: EmbedderSpec) -> EmbedderSpecs {
        self.by_kind[kind.index()] = spec;
        self
    }

    /// The embedder of `kind`.
    pub fn get(&self, kind: Kind) -> &EmbedderSpec {
        &self.by_kind[kind.index()]
    }

    /// The one spec of every kind, when they all have the same.
    pub fn as_uniform(&self) -> Option<&EmbedderSpec> {
        let first = &self.by_kind[0];
        self.by_kind.iter().all(|s| s == first).then_some(first)
    }

    /// Each spec made absolute ([`EmbedderSpec::absolute`]).
    pub fn absolute(&self) -> EmbedderSpecs {
        EmbedderSpecs {
            by_kind: std::array::from_fn(|i| self.by_kind[i].absolute()),
        }
    }

    /// Loads each distinct embedder once; kinds with the same spec share it.
    ///
    /// # Errors
    ///
    /// As [`EmbedderSpec::load`].
    pub fn load(&self) -> Result<super::Embedders> {
        let mut loaded: Vec<(&EmbedderSpec, Option<Arc<dyn Embedder>>)> = Vec::new();
        let mut by_kind: [Option<Arc<dyn Embedder>>; Kind::COUNT] = Default::default();
        for kind in Kind::ALL {
            let spec = self.get(kind);
            let embedder = match loaded.iter().find(|(s, _)| *s == spec) {
                Some((_, embedder)) => embedder.clone(),
                None => {
                    let embedder = spec.load()?;
                    loaded.push((spec, embedder.clone()));
                    embedder
                }
            };
            by_kind[kind.index()] = embedder;
        }
        Ok(super::Embedders::from_kinds(by_kind))
    }
}

impl FromStr for EmbedderSpecs {
    type Err = Error;

    fn from_str(s: &str) -> Result<EmbedderSpecs> {
        if !s.contains('=') {
            return Ok(EmbedderSpecs::uniform(s.parse()?));
        }
        let mut specs = EmbedderSpecs::default();
        for pair in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((kind, spec)) = pair.split_once('=') else {
                return Err(Error::invalid_input(format!(
                    "`{pair}`: expected KIND=SPEC (rules, chunks, scenarios or tools = an embedder)"
                )));
            };
            let kind: Kind = kind.trim().parse()?;
            specs = specs.with(kind, spec.trim().parse()?);
        }
        Ok(specs)
    }
}

impl fmt::Display for EmbedderSpecs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(spec) = self.as_uniform() {
            return write!(f, "{spec}");
        }
        for (i, kind) in Kind::ALL.into_iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}={}", kind.plural(), self.get(kind))?;
        }
        Ok(())
    }
}

#[allow(dead_code)] // Unused when every feature is on.
fn missing_feature(spec: &str, feature: &str) -> Error {
    Error::new(ErrorKind::Embedder {
        message: format!("embedder `{spec}` needs ruche built with the `{feature}` cargo feature"),
    })
}

impl FromStr for EmbedderSpec {
    type Err = Error;

    fn from_str(s: &str) -> Result<EmbedderSpec> {
        match s {
            "minilm" => Ok(EmbedderSpec::MiniLm),
            // `default`: the static model's name in indexes made before `minilm`.
            "static" | "default" => Ok(EmbedderSpec::StaticBundled),
            "none" => Ok(EmbedderSpec::None),
            _ => match s.split_once(':') {
                Some(("static", dir)) if !dir.is_empty() => Ok(EmbedderSpec::Static(dir.into())),
                Some(("bert", dir)) if !dir.is_empty() => Ok(EmbedderSpec::Bert(dir.into())),
                _ => Err(Error::invalid_input(format!(
                    "unknown embedder `{s}` (expected `minilm`, `static`, `none`, `static:DIR` or `bert:DIR`)"
                ))),
            },
        }
    }
}

impl fmt::Display for EmbedderSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmbedderSpec::MiniLm => f.write_str("minilm"),
            EmbedderSpec::StaticBundled => f.write_str("static"),
            EmbedderSpec::None => f.write_str("none"),
            EmbedderSpec::Static(dir) => write!(f, "static:{}", dir.display()),
            EmbedderSpec::Bert(dir) => write!(f, "bert:{}", dir.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        for text in [
            "minilm",
            "static",
            "none",
            "static:/m/x",
            "bert:relative/dir",
        ] {
            assert_eq!(text.parse::<EmbedderSpec>().unwrap().to_string(), text);
        }
        assert_eq!(
            "default".parse::<EmbedderSpec>().unwrap(),
            EmbedderSpec::StaticBundled
        );
        for bad in ["", "bert", "bert:", "gpt:dir", "Default", "MiniLM"] {
            assert!(bad.parse::<EmbedderSpec>().is_err(), "{bad}");
        }
        for text in [
            "minilm",
            "rules=minilm,chunks=static,scenarios=minilm,tools=minilm",
            "rules=none,chunks=bert:/m,scenarios=minilm,tools=static:/s",
        ] {
            assert_eq!(text.parse::<EmbedderSpecs>().unwrap().to_string(), text);
        }
        let specs: EmbedderSpecs = "tools = none, chunks=minilm".parse().unwrap();
        assert_eq!(specs.get(Kind::Tool), &EmbedderSpec::None);
        assert_eq!(specs.get(Kind::Scenario), &EmbedderSpec::MiniLm);
        for bad in ["rules=", "rulez=minilm", "rules=minilm,x", "=minilm"] {
            assert!(bad.parse::<EmbedderSpecs>().is_err(), "{bad}");
        }
    }

    #[test]
    fn missing_directories_are_embedder_errors() {
        let Err(err) = EmbedderSpec::Static("/nonexistent/model".into()).load() else {
            panic!("loaded a model from a missing directory");
        };
        assert!(matches!(err.kind(), ErrorKind::Embedder { .. }), "{err}");
    }
}
