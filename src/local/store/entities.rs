//! Entity blocks: the entities each document of a block mentions, as the entity graph
//! links them (see [`crate::local::graph`]).
//!
//! They are written in the same atomic batch as the document blocks, so the stored
//! graph is always the committed documents' graph; an open builds the graph from them
//! without reading the texts again. An index written before they existed gets them at
//! its next open.
//!
//! ```text
//! block = bincode Vec<(doc: u64, entities: Vec<String>)>, in DocId order
//! ```

use std::collections::BTreeMap;

use crate::{Error, Result};

/// The entity lists of one block, by document.
pub(crate) type EntityBlock = BTreeMap<u64, Vec<String>>;

pub(crate) fn encode(block: &EntityBlock) -> Vec<u8> {
    let entries: Vec<(&u64, &Vec<String>)> = block.iter().collect();
    bincode::serialize(&entries).expect("entity lists serialise")
}

pub(crate) fn decode(bytes: &[u8]) -> Result<EntityBlock> {
    let entries: Vec<(u64, Vec<String>)> = bincode::deserialize(bytes)
        .map_err(|err| Error::corrupt(format!("entity block: {err}")))?;
    let n = entries.len();
    let block: EntityBlock = entries.into_iter().collect();
    if block.len() != n || n > 1 << super::block::BLOCK_BITS {
        return Err(Error::corrupt(
            "entity block: repeated or too many documents",
        ));
    }
    Ok(block)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_round_trip_and_garbage_is_corrupt() {
        let mut block = EntityBlock::new();
        block.insert(64, vec!["cust-48213".into(), "\u{0}n1".into()]);
        block.insert(65, Vec::new());
        assert_eq!(decode(&encode(&block)).unwrap(), block);
        assert!(decode(&[0xff; 5]).is_err());
    }
}
