//! Blocks: the documents of 64 consecutive `DocId`s, packed into one sled value.
//!
//! sled's cost is per key: writing or iterating 100,000 small values is ten times slower
//! than the same bytes in 1,600 values. New `DocId`s are consecutive, so a bulk import
//! fills whole blocks, and opening an index reads one value per 64 documents.
//!
//! ```text
//! block  = [entries: u32 BE] entry*
//! entry  = [doc: u64 BE] [record length: u32 BE] [record: bincode DocRecord]
//!          [vectors length: u32 BE] [vectors: StoredVectors::encode, or empty]
//! ```

use super::record::{self, DocRecord, StoredVectors};
use crate::model::id::DocId;
use crate::{Error, Result};

/// log2 of the number of `DocId`s per block.
pub(crate) const BLOCK_BITS: u32 = 6;

/// The block a document lives in.
pub(crate) fn block_of(doc: DocId) -> u64 {
    doc.as_u64() >> BLOCK_BITS
}

/// One document of a block, still encoded.
#[derive(Debug, Clone)]
pub(crate) struct BlockEntry {
    pub(crate) doc: DocId,
    record: Vec<u8>,
    vectors: Vec<u8>,
}

impl BlockEntry {
    pub(crate) fn new(doc: DocId, record: &DocRecord, vectors: &StoredVectors) -> BlockEntry {
        BlockEntry {
            doc,
            record: record::encode(record),
            vectors: if vectors.is_empty() {
                Vec::new()
            } else {
                vectors.encode()
            },
        }
    }

    /// `entry`'s record with other vectors: `None` for none (the entry encodes no
    /// vector), or `stored`, encoded whatever it holds (a published base keeps the header
    /// of vectors its rows hold, see `base.rs`).
    pub(crate) fn with_vectors(entry: &BlockEntry, stored: Option<&StoredVectors>) -> BlockEntry {
        BlockEntry {
            doc: entry.doc,
            record: entry.record.clone(),
            vectors: stored.map(StoredVectors::encode).unwrap_or_default(),
        }
    }

    /// The entry, borrowed.
    pub(crate) fn as_ref(&self) -> EntryRef<'_> {
        EntryRef {
            doc: self.doc,
            record: &self.record,
            vectors: &self.vectors,
        }
    }

    /// The bytes of the entry in the block encoding.
    pub(crate) fn encoded_len(&self) -> usize {
        16 + self.record.len() + self.vectors.len()
    }

    pub(crate) fn record(&self) -> Result<DocRecord> {
        record::decode(&self.record, "document")
    }

    pub(crate) fn vectors(&self) -> Result<Option<StoredVectors>> {
        if self.vectors.is_empty() {
            return Ok(None);
        }
        StoredVectors::decode(&self.vectors).map(Some)
    }
}

/// One document of a block, borrowed from its encoding.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EntryRef<'a> {
    pub(crate) doc: DocId,
    record: &'a [u8],
    vectors: &'a [u8],
}

impl EntryRef<'_> {
    pub(crate) fn record(&self) -> Result<DocRecord> {
        record::decode(self.record, "document")
    }

    pub(crate) fn vectors(&self) -> Result<Option<StoredVectors>> {
        if self.vectors.is_empty() {
            return Ok(None);
        }
        StoredVectors::decode(self.vectors).map(Some)
    }

    pub(crate) fn to_owned(self) -> BlockEntry {
        BlockEntry {
            doc: self.doc,
            record: self.record.to_vec(),
            vectors: self.vectors.to_vec(),
        }
    }
}

/// The span (start, end) of each entry of a list in the block encoding, checked to be
/// whole: what [`entry_at`] decodes.
pub(crate) fn spans(bytes: &[u8], what: &str) -> Result<Vec<(DocId, usize, usize)>> {
    let corrupt = || Error::corrupt(what);
    let mut reader = Reader { bytes, at: 0 };
    let n_entries = reader.u32().ok_or_else(corrupt)? as usize;
    if n_entries > bytes.len() / 16 {
        return Err(corrupt());
    }
    let mut spans = Vec::with_capacity(n_entries);
    for _ in 0..n_entries {
        let start = reader.at;
        let doc = DocId::new(reader.u64().ok_or_else(corrupt)?);
        let record_len = reader.u32().ok_or_else(corrupt)? as usize;
        reader.take(record_len).ok_or_else(corrupt)?;
        let vectors_len = reader.u32().ok_or_else(corrupt)? as usize;
        reader.take(vectors_len).ok_or_else(corrupt)?;
        spans.push((doc, start, reader.at));
    }
    if reader.at != bytes.len() {
        return Err(corrupt());
    }
    Ok(spans)
}

/// Decodes the one entry `bytes` holds (a span [`spans`] gave).
pub(crate) fn entry_at(bytes: &[u8]) -> Result<EntryRef<'_>> {
    let corrupt = || Error::corrupt("published document");
    let mut reader = Reader { bytes, at: 0 };
    let doc = DocId::new(reader.u64().ok_or_else(corrupt)?);
    let record_len = reader.u32().ok_or_else(corrupt)? as usize;
    let record = reader.take(record_len).ok_or_else(corrupt)?;
    let vectors_len = reader.u32().ok_or_else(corrupt)? as usize;
    let vectors = reader.take(vectors_len).ok_or_else(corrupt)?;
    if reader.at != bytes.len() {
        return Err(corrupt());
    }
    Ok(EntryRef {
        doc,
        record,
        vectors,
    })
}

/// Decodes a block's entries, in `DocId` order.
pub(crate) fn decode(bytes: &[u8]) -> Result<Vec<BlockEntry>> {
    decode_at_most(bytes, 1 << BLOCK_BITS, "document block")
}

/// Decodes a list of entries in the block encoding, of any length (a published part).
pub(crate) fn decode_list(bytes: &[u8], what: &str) -> Result<Vec<BlockEntry>> {
    decode_at_most(bytes, bytes.len() / 16, what)
}

fn decode_at_most(bytes: &[u8], max: usize, what: &str) -> Result<Vec<BlockEntry>> {
    let corrupt = || Error::corrupt(what);
    let mut reader = Reader { bytes, at: 0 };
    let n_entries = reader.u32().ok_or_else(corrupt)? as usize;
    if n_entries > max {
        return Err(corrupt());
    }
    let mut entries = Vec::with_capacity(n_entries);
    for _ in 0..n_entries {
        let doc = DocId::new(reader.u64().ok_or_else(corrupt)?);
        let record_len = reader.u32().ok_or_else(corrupt)? as usize;
        let record = reader.take(record_len).ok_or_else(corrupt)?.to_vec();
        let vectors_len = reader.u32().ok_or_else(corrupt)? as usize;
        let vectors = reader.take(vectors_len).ok_or_else(corrupt)?.to_vec();
        entries.push(BlockEntry {
            doc,
            record,
            vectors,
        });
    }
    if reader.at != bytes.len() {
        return Err(corrupt());
    }
    Ok(entries)
}

/// Encodes entries (sorted by `DocId`) as a block.
pub(crate) fn encode<'a>(entries: impl IntoIterator<Item = &'a BlockEntry> + Clone) -> Vec<u8> {
    let mut out = Vec::with_capacity(encoded_size(entries.clone()));
    encode_into(entries, &mut |bytes| {
        out.extend_from_slice(bytes);
        Ok(())
    })
    .expect("a Vec takes every byte");
    out
}

/// The length of [`encode`]'s bytes for `entries`.
pub(crate) fn encoded_size<'a>(entries: impl IntoIterator<Item = &'a BlockEntry>) -> usize {
    4 + entries
        .into_iter()
        .map(BlockEntry::encoded_len)
        .sum::<usize>()
}

/// Hands [`encode`]'s bytes for `entries` to `put`, piece by piece (a large list is
/// written out without being copied into one buffer first).
pub(crate) fn encode_into<'a>(
    entries: impl IntoIterator<Item = &'a BlockEntry> + Clone,
    put: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let count = entries.clone().into_iter().count() as u32;
    put(&count.to_be_bytes())?;
    for entry in entries {
        put(&entry.doc.as_u64().to_be_bytes())?;
        put(&(entry.record.len() as u32).to_be_bytes())?;
        put(&entry.record)?;
        put(&(entry.vectors.len() as u32).to_be_bytes())?;
        put(&entry.vectors)?;
    }
    Ok(())
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let slice = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(slice)
    }

    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_be_bytes(b.try_into().expect("4 bytes")))
    }

    fn u64(&mut self) -> Option<u64> {
        self.take(8)
            .map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::doc::{Chunk, Document};

    #[test]
    fn blocks_round_trip_and_reject_damage() {
        let entries: Vec<BlockEntry> = (0..3)
            .map(|i| {
                let doc = Document::Chunk(Chunk::new(format!("c{i}"), "text"));
                let vectors = StoredVectors {
                    main: (i != 1).then(|| vec![i as f32, 1.0]),
                    patterns: Vec::new(),
                    external: true,
                };
                BlockEntry::new(
                    DocId::new(64 + i),
                    &DocRecord::from_document(&doc, i),
                    &vectors,
                )
            })
            .collect();
        let bytes = encode(&entries);
        let decoded = decode(&bytes).unwrap();
        assert_eq!(decoded.len(), 3);
        assert_eq!(decoded[2].record().unwrap().seq, 2);
        assert!(decoded[1].vectors().unwrap().is_none());
        assert_eq!(
            decoded[2].vectors().unwrap().unwrap().main,
            Some(vec![2.0, 1.0])
        );
        for len in 0..bytes.len() {
            assert!(decode(&bytes[..len]).is_err(), "{len}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer).is_err());
        assert_eq!(block_of(DocId::new(63)), 0);
        assert_eq!(block_of(DocId::new(64)), 1);
    }
}
