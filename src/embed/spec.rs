//! [`EmbedderSpec`]: an embedder named by a string, so an index can record and reload it.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use super::Embedder;
use crate::{Error, ErrorKind, Result};

/// Which embedder to use, as written on the command line and recorded in an index.
///
/// | text | meaning |
/// | --- | --- |
/// | `default` | the static model bundled into the binary ([`StaticEmbedder::bundled`](crate::StaticEmbedder::bundled)) |
/// | `none` | no embedder: records and queries without vectors use the text leg alone |
/// | `static:DIR` | a model2vec static model in `DIR` |
/// | `bert:DIR` | a sentence-transformers BERT model in `DIR` (cargo feature `bert`) |
///
/// # Example
///
/// ```
/// use ruchedb::EmbedderSpec;
///
/// let spec: EmbedderSpec = "bert:/models/all-MiniLM-L6-v2".parse()?;
/// assert_eq!(spec.to_string(), "bert:/models/all-MiniLM-L6-v2");
/// assert_eq!("default".parse::<EmbedderSpec>()?, EmbedderSpec::Default);
/// # Ok::<(), ruchedb::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EmbedderSpec {
    /// The bundled static model.
    Default,
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
            EmbedderSpec::Default => {
                #[cfg(feature = "bundled-model")]
                {
                    Ok(Some(Arc::new(super::StaticEmbedder::bundled()?)))
                }
                #[cfg(not(feature = "bundled-model"))]
                {
                    Err(missing_feature("default", "bundled-model"))
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
            "default" => Ok(EmbedderSpec::Default),
            "none" => Ok(EmbedderSpec::None),
            _ => match s.split_once(':') {
                Some(("static", dir)) if !dir.is_empty() => Ok(EmbedderSpec::Static(dir.into())),
                Some(("bert", dir)) if !dir.is_empty() => Ok(EmbedderSpec::Bert(dir.into())),
                _ => Err(Error::invalid_input(format!(
                    "unknown embedder `{s}` (expected `default`, `none`, `static:DIR` or `bert:DIR`)"
                ))),
            },
        }
    }
}

impl fmt::Display for EmbedderSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmbedderSpec::Default => f.write_str("default"),
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
        for text in ["default", "none", "static:/m/x", "bert:relative/dir"] {
            assert_eq!(text.parse::<EmbedderSpec>().unwrap().to_string(), text);
        }
        for bad in ["", "bert", "bert:", "gpt:dir", "Default"] {
            assert!(bad.parse::<EmbedderSpec>().is_err(), "{bad}");
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
