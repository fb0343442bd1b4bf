//! Document identity: the user's string ids and the internal ordinal.
//!
//! Users name documents with strings, unique per tenant and [`Kind`]. Internally every
//! stored version of a document gets a [`DocId`], a `u64` ordinal that is never reused:
//! replacing a document assigns a new one, so an ordinal found in a derived index (the
//! text index, the vector graph) either names the live version or a dead one, never a
//! different document. Ordinals never decide an order that users see; ties break on the
//! user id.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The kinds of documents an index holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// "When CONDITION, do ACTION" guidance ([`Rule`](crate::Rule)).
    Rule,
    /// A piece of memory or knowledge ([`Chunk`](crate::Chunk)).
    Chunk,
    /// A conversation flow an agent can activate ([`Scenario`](crate::Scenario)).
    Scenario,
    /// A tool an agent can call ([`Tool`](crate::Tool)).
    Tool,
}

impl Kind {
    /// Every kind, in the order the engine numbers them.
    pub const ALL: [Kind; 4] = [Kind::Rule, Kind::Chunk, Kind::Scenario, Kind::Tool];
    /// The number of kinds.
    pub const COUNT: usize = Kind::ALL.len();

    /// The name used in JSON and on the command line (`rule`, `chunk`, `scenario`,
    /// `tool`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Rule => "rule",
            Kind::Chunk => "chunk",
            Kind::Scenario => "scenario",
            Kind::Tool => "tool",
        }
    }

    /// The plural name, as in configuration sections (`[relevance.rules]`).
    pub fn plural(self) -> &'static str {
        match self {
            Kind::Rule => "rules",
            Kind::Chunk => "chunks",
            Kind::Scenario => "scenarios",
            Kind::Tool => "tools",
        }
    }

    pub(crate) fn as_u8(self) -> u8 {
        match self {
            Kind::Rule => 0,
            Kind::Chunk => 1,
            Kind::Scenario => 2,
            Kind::Tool => 3,
        }
    }

    /// The kind [`Kind::as_u8`] gives `value` for.
    pub(crate) fn from_u8(value: u8) -> Option<Kind> {
        Kind::ALL.get(usize::from(value)).copied()
    }

    /// The index of the kind in per-kind arrays (its place in [`Kind::ALL`]).
    pub fn index(self) -> usize {
        usize::from(self.as_u8())
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Kind {
    type Err = crate::Error;

    fn from_str(s: &str) -> crate::Result<Kind> {
        match s {
            "rule" | "rules" => Ok(Kind::Rule),
            "chunk" | "chunks" => Ok(Kind::Chunk),
            "scenario" | "scenarios" => Ok(Kind::Scenario),
            "tool" | "tools" => Ok(Kind::Tool),
            other => Err(crate::Error::unknown_name("kind", other)),
        }
    }
}

/// The internal ordinal of one stored version of a document.
///
/// Assigned from a counter in the store, never reused. Stored big-endian in keys so that
/// sled orders them numerically, and as a fast field in the text index.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct DocId(u64);

impl DocId {
    /// The largest ordinal: vector keys reserve the low 16 bits for the vector's index.
    pub(crate) const MAX: u64 = (1 << 48) - 1;

    pub(crate) fn new(value: u64) -> DocId {
        DocId(value)
    }

    pub(crate) fn as_u64(self) -> u64 {
        self.0
    }
}

/// The key of one vector in the vector graph: a document ordinal and the index of the
/// vector within the document (0 = the main embedding, 1.. = patterns, in order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct VectorKey(u64);

impl VectorKey {
    /// The largest number of vectors one document may carry.
    pub(crate) const MAX_VECTORS_PER_DOC: usize = 1 << 16;

    pub(crate) fn new(doc: DocId, vector_idx: usize) -> VectorKey {
        debug_assert!(vector_idx < Self::MAX_VECTORS_PER_DOC);
        VectorKey((doc.as_u64() << 16) | vector_idx as u64)
    }

    pub(crate) fn from_u64(value: u64) -> VectorKey {
        VectorKey(value)
    }

    pub(crate) fn as_u64(self) -> u64 {
        self.0
    }

    pub(crate) fn doc(self) -> DocId {
        DocId(self.0 >> 16)
    }
}

/// The row of a document's centroid (the normalised mean of its vectors); patterns are rows
/// `1..CENTROID_ROW`.
pub(crate) const CENTROID_ROW: u16 = u16::MAX;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_key_round_trips() {
        let doc = DocId::new(DocId::MAX);
        let key = VectorKey::new(doc, 65_535);
        assert_eq!(key.doc(), doc);
        assert_eq!(VectorKey::from_u64(key.as_u64()), key);
        assert_eq!(VectorKey::new(DocId::new(7), 0).doc(), DocId::new(7));
    }

    #[test]
    fn kind_parses() {
        assert_eq!("rules".parse::<Kind>().unwrap(), Kind::Rule);
        assert_eq!("chunk".parse::<Kind>().unwrap(), Kind::Chunk);
        assert_eq!("scenarios".parse::<Kind>().unwrap(), Kind::Scenario);
        assert_eq!("tool".parse::<Kind>().unwrap(), Kind::Tool);
        assert!("memory".parse::<Kind>().is_err());
        for kind in Kind::ALL {
            assert_eq!(kind.as_str().parse::<Kind>().unwrap(), kind);
            assert_eq!(kind.plural().parse::<Kind>().unwrap(), kind);
            assert_eq!(Kind::ALL[kind.index()], kind);
        }
    }
}
