//! Where an index lives on a Milvus server (`milvus://HOST:PORT/NAME`), and Milvus's errors
//! named with it.

use std::fmt;
use std::str::FromStr;

use ruchedb::{Error, ErrorKind};

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

pub(crate) fn here() -> Location {
    Location {
        endpoint: "milvus".to_string(),
        name: String::new(),
    }
}

pub(crate) fn sdk<T>(
    result: std::result::Result<T, milvus::v2::error::Error>,
) -> ruchedb::Result<T> {
    result.map_err(|err| error(&here(), err))
}
