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
//! | `b`    | `b` + block number (u64 BE, DocId >> 6)     | a block of documents (`block.rs`) |
//! | `l`    | `l` + last sequence number of a commit (u64 BE) | bincode `Vec<(seq, LogEntry)>` |
//! | `e`    | `e` + block number (u64 BE)                 | the entities of the block's documents (`entities.rs`) |

use crate::{Error, Result};

pub(crate) const META: u8 = b'm';
pub(crate) const BLOCK: u8 = b'b';
pub(crate) const LOG: u8 = b'l';
pub(crate) const ENTITIES: u8 = b'e';

pub(crate) fn meta_key(name: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + name.len());
    key.push(META);
    key.extend_from_slice(name.as_bytes());
    key
}

pub(crate) fn block_key(block_no: u64) -> [u8; 9] {
    prefixed_u64(BLOCK, block_no)
}

pub(crate) fn entities_key(block_no: u64) -> [u8; 9] {
    prefixed_u64(ENTITIES, block_no)
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
        assert!(block_key(255) < block_key(256));
        assert!(log_key(9) < log_key(10));
    }
}
