//! Key encodings of the `main` sled tree.
//!
//! The `main` tree holds every keyspace that one commit changes together, so that a
//! single `apply_batch` writes them atomically. Each key starts with a one-byte prefix
//! naming its keyspace; integers are big-endian so that sled's byte order is numeric
//! order.
//!
//! | prefix | key                                         | value                      |
//! |--------|---------------------------------------------|----------------------------|
//! | `m`    | `m` + name                                  | meta value (see `meta.rs`) |
//! | `d`    | `d` + DocId (u64 BE)                        | bincode `DocRecord`        |
//! | `v`    | `v` + DocId (u64 BE)                        | bincode `StoredVectors`    |
//! | `i`    | `i` + kind (u8) + tenant len (u32 BE) + tenant + user id | DocId (u64 BE) |
//! | `l`    | `l` + sequence number (u64 BE)              | bincode `LogEntry`         |

use crate::id::DocId;
use crate::{Error, Kind, Result};

pub(crate) const META: u8 = b'm';
pub(crate) const DOC: u8 = b'd';
pub(crate) const VECTORS: u8 = b'v';
pub(crate) const ID: u8 = b'i';
pub(crate) const LOG: u8 = b'l';

pub(crate) fn meta_key(name: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + name.len());
    key.push(META);
    key.extend_from_slice(name.as_bytes());
    key
}

pub(crate) fn doc_key(doc: DocId) -> [u8; 9] {
    prefixed_u64(DOC, doc.as_u64())
}

pub(crate) fn vectors_key(doc: DocId) -> [u8; 9] {
    prefixed_u64(VECTORS, doc.as_u64())
}

pub(crate) fn log_key(seq: u64) -> [u8; 9] {
    prefixed_u64(LOG, seq)
}

fn prefixed_u64(prefix: u8, value: u64) -> [u8; 9] {
    let mut key = [0u8; 9];
    key[0] = prefix;
    key[1..].copy_from_slice(&value.to_be_bytes());
    key
}

/// The key of a user id: unique per kind and tenant, ordered by kind, tenant, id.
pub(crate) fn id_key(kind: Kind, tenant: &str, id: &str) -> Vec<u8> {
    let mut key = id_prefix(kind, tenant);
    key.extend_from_slice(id.as_bytes());
    key
}

/// The prefix of every id key of one kind and tenant.
pub(crate) fn id_prefix(kind: Kind, tenant: &str) -> Vec<u8> {
    let tenant_len = u32::try_from(tenant.len()).expect("tenant names are at most 1 KiB");
    let mut key = Vec::with_capacity(6 + tenant.len());
    key.push(ID);
    key.push(kind.as_u8());
    key.extend_from_slice(&tenant_len.to_be_bytes());
    key.extend_from_slice(tenant.as_bytes());
    key
}

/// Decodes the u64 after a one-byte prefix.
pub(crate) fn decode_prefixed_u64(key: &[u8]) -> Result<u64> {
    let bytes: [u8; 8] = key
        .get(1..9)
        .and_then(|slice| slice.try_into().ok())
        .ok_or_else(|| Error::corrupt(format!("key of {} bytes, expected 9", key.len())))?;
    Ok(u64::from_be_bytes(bytes))
}

/// Decodes a big-endian u64 value.
pub(crate) fn decode_u64(value: &[u8]) -> Result<u64> {
    let bytes: [u8; 8] = value
        .try_into()
        .map_err(|_| Error::corrupt(format!("value of {} bytes, expected 8", value.len())))?;
    Ok(u64::from_be_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_numerically() {
        assert!(doc_key(DocId::new(255)) < doc_key(DocId::new(256)));
        assert!(log_key(9) < log_key(10));
        assert_eq!(decode_prefixed_u64(&log_key(1 << 40)).unwrap(), 1 << 40);
    }

    #[test]
    fn id_keys_do_not_collide_across_tenants() {
        // Without the length prefix, tenant "ab" + id "c" would equal tenant "a" + id "bc".
        assert_ne!(id_key(Kind::Rule, "ab", "c"), id_key(Kind::Rule, "a", "bc"));
        assert!(id_key(Kind::Rule, "t", "x").starts_with(&id_prefix(Kind::Rule, "t")));
        assert!(!id_key(Kind::Chunk, "t", "x").starts_with(&id_prefix(Kind::Rule, "t")));
    }
}
