//! The published base, mapped: what a reader's catalog needs, laid out to be used in place.
//!
//! A base stored as a plain part would make a reader decode every document and normalise
//! every vector at open (at 100,000 chunks, about half a second and a copy of each
//! vector in memory). This base keeps, beside the documents' entries, a table of fixed-width
//! records (each document's id, tenant, context, sequence number, token counts, and where
//! its entry and its vectors lie), the ids' bytes, and each kind's vectors as rows of
//! `f32` as stored, with the inverse of each row's norm and which of its document's
//! vectors each row is. A reader maps the file, checks it, builds its catalog from the
//! table without decoding a document, and searches the rows where they lie: one copy of
//! each vector in memory, shared by every reader of the file. A document is decoded from
//! its entry when a search returns it.
//!
//! The entries keep every record but only the vectors no row holds (vectors without a
//! direction, kept as given), so each vector is once in the file.
//!
//! ```text
//! section 0            PartHeader (bincode): meta, feedback windows, entity lists
//! section 1            the entries, in the block encoding, in ascending DocId
//! section 2            BaseHeader (bincode)
//! section 3            the table: one RECORD-byte record per entry, in entry order
//! section 4            the ids' bytes (UTF-8)
//! section 5            names (bincode Vec<String>): tenants and contexts
//! section 6 + 3k       kind k's rows: f32 LE, `dimensions` each
//! section 7 + 3k       kind k's inverse norms: f32 LE, one per row
//! section 8 + 3k       kind k's vector indices: u16 LE, one per row (0 the main
//!                      vector, i + 1 example i, u16::MAX the centroid)
//!
//! record = [doc u64] [seq u64] [entry start u64] [entry length u32] [words u32]
//!          [ident u32] [kind u8] [flags u8: bit 0 plain] [0 u16] [id start u32]
//!          [id length u32] [tenant u32] [context u32, u32::MAX: none] [first row u32]
//!          [rows u32], all little-endian
//! ```

use std::path::Path;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::block::{self, BlockEntry, EntryRef};
use super::file::{PartHeader, Section, Sections};
use super::record::{DocRecord, StoredVectors};
use super::rows::DocRows;
use crate::model::id::CENTROID_ROW;
use crate::model::id::DocId;
use crate::{Error, Kind, Result};

/// The bytes of a table record.
const RECORD: usize = 64;
/// The sections of a mapped base.
pub(crate) const SECTIONS: usize = 6 + 3 * Kind::COUNT;
/// The table's flag of a plain document (see [`super::record::RecordSummary::plain`]).
const PLAIN: u8 = 1;
/// A record's context when it has none.
const NO_CONTEXT: u32 = u32::MAX;
/// The version of the layout [`BaseHeader`] describes: every kind's rows of one
/// dimension.
const LAYOUT: u32 = 1;
/// The layout whose kinds' rows have dimensions of their own ([`KindDimensions`] follows
/// the header). Written only when kinds differ, so that a base of one dimension stays
/// readable by the versions before.
const LAYOUT_BY_KIND: u32 = 2;

/// What a mapped base says of itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct BaseHeader {
    layout: u32,
    /// The dimensions of every row (0 without vectors; layout 2: 0).
    dimensions: u32,
    /// Documents (entries and records).
    docs: u64,
    /// Rows of each kind, by [`Kind::index`].
    rows: Vec<u64>,
}

/// [`BaseHeader`] of layout 2: each kind's row dimension, by [`Kind::index`].
#[derive(Debug, Clone, Serialize, Deserialize)]
struct KindDimensions {
    header: BaseHeader,
    dimensions: Vec<u32>,
}

/// One record of the table, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) doc: DocId,
    pub(crate) seq: u64,
    entry: (u64, u32),
    pub(crate) tokens: [u32; 2],
    pub(crate) kind: Kind,
    pub(crate) plain: bool,
    id: (u32, u32),
    tenant: u32,
    context: u32,
    /// The first row in its kind's rows, and how many.
    pub(crate) rows: (u32, u32),
}

impl Record {
    /// The index of its tenant's name (see [`MappedBase::name`]).
    pub(crate) fn tenant_index(&self) -> usize {
        self.tenant as usize
    }

    /// The index of its context's name, if it has one.
    pub(crate) fn context_index(&self) -> Option<usize> {
        (self.context != NO_CONTEXT).then_some(self.context as usize)
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.doc.as_u64().to_le_bytes());
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.entry.0.to_le_bytes());
        out.extend_from_slice(&self.entry.1.to_le_bytes());
        out.extend_from_slice(&self.tokens[0].to_le_bytes());
        out.extend_from_slice(&self.tokens[1].to_le_bytes());
        out.push(self.kind.as_u8());
        out.push(if self.plain { PLAIN } else { 0 });
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&self.id.0.to_le_bytes());
        out.extend_from_slice(&self.id.1.to_le_bytes());
        out.extend_from_slice(&self.tenant.to_le_bytes());
        out.extend_from_slice(&self.context.to_le_bytes());
        out.extend_from_slice(&self.rows.0.to_le_bytes());
        out.extend_from_slice(&self.rows.1.to_le_bytes());
    }

    /// Decodes `bytes` (one record): `None` for a kind that does not exist.
    fn decode(bytes: &[u8]) -> Option<Record> {
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8"));
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4"));
        Some(Record {
            doc: DocId::new(u64_at(0)),
            seq: u64_at(8),
            entry: (u64_at(16), u32_at(24)),
            tokens: [u32_at(28), u32_at(32)],
            kind: Kind::from_u8(bytes[36])?,
            plain: bytes[37] & PLAIN != 0,
            id: (u32_at(40), u32_at(44)),
            tenant: u32_at(48),
            context: u32_at(52),
            rows: (u32_at(56), u32_at(60)),
        })
    }
}

/// The sections of a mapped base, encoded (see the module's doc).
pub(crate) struct Encoded {
    header: Vec<u8>,
    entries: Vec<BlockEntry>,
    base_header: Vec<u8>,
    table: Vec<u8>,
    ids: Vec<u8>,
    names: Vec<u8>,
    rows: Vec<KindRows>,
}

/// One kind's rows while a base is encoded.
#[derive(Default)]
struct KindRows {
    data: Vec<f32>,
    inverse: Vec<f32>,
    indices: Vec<u16>,
}

impl Encoded {
    /// The sections, in order, to write.
    pub(crate) fn sections(&self) -> Vec<Section<'_>> {
        let mut sections = vec![
            Section::Bytes(&self.header),
            Section::Entries(&self.entries),
            Section::Bytes(&self.base_header),
            Section::Bytes(&self.table),
            Section::Bytes(&self.ids),
            Section::Bytes(&self.names),
        ];
        for rows in &self.rows {
            sections.push(Section::F32s(&rows.data));
            sections.push(Section::F32s(&rows.inverse));
            sections.push(Section::U16s(&rows.indices));
        }
        sections
    }

    /// Documents in the base.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

/// One entry as the base keeps it, prepared in parallel.
struct BaseEntry {
    entry: BlockEntry,
    seq: u64,
    kind: Kind,
    plain: bool,
    tenant: String,
    id: String,
    context: Option<String>,
    rows: Option<DocRows>,
}

/// Lays out `header` and `entries` (every live document, in ascending `DocId`, with its
/// vectors as stored) as a mapped base; `tokens` gives each document's token counts.
pub(crate) fn encode(
    header: &PartHeader,
    entries: &[BlockEntry],
    dimensions: [Option<usize>; Kind::COUNT],
    tokens: &(dyn Fn(DocId) -> [u32; 2] + Sync),
) -> Result<Encoded> {
    let dims = dimensions.map(|d| d.unwrap_or(0));
    let prepared: Vec<BaseEntry> = entries
        .par_iter()
        .map(|entry| {
            let record = entry.record()?;
            let summary = record.summary();
            let dim = dims[summary.kind.index()];
            let (kept, rows) = match entry.vectors()? {
                None => (None, None),
                Some(stored) => {
                    let rows = DocRows::from_stored(&stored).filter(|r| r.dim() == dim);
                    (Some(without_rows(stored, rows.as_ref())), rows)
                }
            };
            Ok(BaseEntry {
                entry: BlockEntry::with_vectors(entry, kept.as_ref()),
                seq: record.seq,
                kind: summary.kind,
                plain: summary.plain,
                tenant: summary.tenant.to_string(),
                id: summary.id.to_string(),
                context: summary.context.map(str::to_string),
                rows,
            })
        })
        .collect::<Result<_>>()?;
    let mut names: Vec<String> = Vec::new();
    let mut name_of: crate::local::StrMap<u32> = crate::local::StrMap::default();
    let mut intern = |name: &str| -> u32 {
        if let Some(&n) = name_of.get(name) {
            return n;
        }
        let n = names.len() as u32;
        names.push(name.to_string());
        name_of.insert(name.to_string(), n);
        n
    };
    let mut table = Vec::with_capacity(prepared.len() * RECORD);
    let mut ids = Vec::new();
    let mut rows: Vec<KindRows> = Kind::ALL.iter().map(|_| KindRows::default()).collect();
    let mut entry_at = 4u64;
    let mut kept = Vec::with_capacity(prepared.len());
    for p in prepared {
        let too_large = || Error::corrupt("a base too large for its table (4 GiB of ids or rows)");
        let kind_rows = &mut rows[p.kind.index()];
        let first_row = u32::try_from(kind_rows.inverse.len()).map_err(|_| too_large())?;
        let n_rows = match &p.rows {
            Some(doc_rows) => {
                kind_rows.data.extend_from_slice(&doc_rows.data);
                kind_rows.inverse.extend_from_slice(&doc_rows.inverse);
                kind_rows.indices.extend_from_slice(&doc_rows.rows);
                doc_rows.rows.len() as u32
            }
            None => 0,
        };
        let entry_len = p.entry.encoded_len() as u64;
        let record = Record {
            doc: p.entry.doc,
            seq: p.seq,
            entry: (entry_at, u32::try_from(entry_len).map_err(|_| too_large())?),
            tokens: tokens(p.entry.doc),
            kind: p.kind,
            plain: p.plain,
            id: (
                u32::try_from(ids.len()).map_err(|_| too_large())?,
                u32::try_from(p.id.len()).map_err(|_| too_large())?,
            ),
            tenant: intern(&p.tenant),
            context: p.context.as_deref().map_or(NO_CONTEXT, &mut intern),
            rows: (first_row, n_rows),
        };
        ids.extend_from_slice(p.id.as_bytes());
        record.encode(&mut table);
        entry_at += entry_len;
        kept.push(p.entry);
    }
    // One dimension for every kind that has rows: the layout of the versions before.
    let mut with_rows = Kind::ALL
        .into_iter()
        .filter(|kind| !rows[kind.index()].inverse.is_empty())
        .map(|kind| dims[kind.index()]);
    let first = with_rows.next();
    let uniform = with_rows.all(|dim| Some(dim) == first);
    let base_header = BaseHeader {
        layout: if uniform { LAYOUT } else { LAYOUT_BY_KIND },
        dimensions: if uniform {
            first.unwrap_or(0) as u32
        } else {
            0
        },
        docs: kept.len() as u64,
        rows: rows.iter().map(|r| r.inverse.len() as u64).collect(),
    };
    let base_header = if uniform {
        bincode::serialize(&base_header)
    } else {
        bincode::serialize(&KindDimensions {
            header: base_header,
            dimensions: dims.iter().map(|&d| d as u32).collect(),
        })
    };
    Ok(Encoded {
        header: bincode::serialize(header).expect("a part header serialises"),
        entries: kept,
        base_header: base_header.expect("a base header serialises"),
        table,
        ids,
        names: bincode::serialize(&names).expect("names serialise"),
        rows,
    })
}

/// `stored` without the vectors `rows` holds (those with a direction): what the entry
/// keeps beside the rows.
fn without_rows(mut stored: StoredVectors, rows: Option<&DocRows>) -> StoredVectors {
    for &index in rows.map_or(&[][..], |r| r.rows.as_slice()) {
        match index {
            CENTROID_ROW => {}
            0 => stored.main = None,
            i => {
                if let Some(slot) = stored.patterns.get_mut(usize::from(i) - 1) {
                    *slot = None;
                }
            }
        }
    }
    stored
}

/// Whether `sections` are those of a mapped base (a base of earlier versions is a part,
/// of two sections).
pub(crate) fn is_mapped_base(sections: &Sections) -> bool {
    sections.len() == SECTIONS
}

/// A published base, mapped and checked: its table, ids, names and rows read in place.
pub(crate) struct MappedBase {
    sections: Sections,
    header: PartHeader,
    /// Each kind's row dimension, by [`Kind::index`].
    dimensions: [usize; Kind::COUNT],
    docs: usize,
    names: Vec<String>,
    /// Each kind's rows, inverse norms and vector indices, copied out of the file on a
    /// host that is not little-endian (read in place otherwise).
    #[cfg(target_endian = "big")]
    owned: Vec<(Vec<f32>, Vec<f32>, Vec<u16>)>,
}

impl std::fmt::Debug for MappedBase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedBase")
            .field("docs", &self.docs)
            .field("dimensions", &self.dimensions)
            .finish_non_exhaustive()
    }
}

/// A kind's rows in a mapped base: `dim` floats each, the inverse of each row's norm,
/// and which vector of its document each row is.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BaseRows<'a> {
    pub(crate) data: &'a [f32],
    pub(crate) inverse: &'a [f32],
    pub(crate) indices: &'a [u16],
}

impl MappedBase {
    /// Checks `sections` (a file whose checksum was verified) as a mapped base: every
    /// record's entry, id, names and rows within their sections, ids in UTF-8, documents
    /// in ascending order. The accessors then never fail on the table; only a document's
    /// own entry is decoded (and checked) when it is asked for.
    pub(crate) fn load(sections: Sections, path: &Path) -> Result<MappedBase> {
        let damaged =
            |why: String| Error::corrupt(format!("{}: published base: {why}", path.display()));
        if !is_mapped_base(&sections) {
            return Err(damaged(format!("{} sections", sections.len())));
        }
        let header: PartHeader = bincode::deserialize(sections.get(0))
            .map_err(|err| damaged(format!("header: {err}")))?;
        let base_header: BaseHeader = bincode::deserialize(sections.get(2))
            .map_err(|err| damaged(format!("layout: {err}")))?;
        let dims: [usize; Kind::COUNT] = match base_header.layout {
            LAYOUT => [base_header.dimensions as usize; Kind::COUNT],
            LAYOUT_BY_KIND => {
                let by_kind: KindDimensions = bincode::deserialize(sections.get(2))
                    .map_err(|err| damaged(format!("layout: {err}")))?;
                let dims: Vec<usize> = by_kind.dimensions.iter().map(|&d| d as usize).collect();
                dims.try_into()
                    .map_err(|_| damaged("dimensions of another number of kinds".into()))?
            }
            other => return Err(damaged(format!("layout {other} unknown"))),
        };
        if base_header.rows.len() != Kind::COUNT {
            return Err(damaged(format!("rows of {} kinds", base_header.rows.len())));
        }
        let names: Vec<String> = bincode::deserialize(sections.get(5))
            .map_err(|err| damaged(format!("names: {err}")))?;
        let docs = usize::try_from(base_header.docs).map_err(|_| damaged("size".into()))?;
        let table = sections.get(3);
        if Some(table.len()) != docs.checked_mul(RECORD) {
            return Err(damaged("table of another size".into()));
        }
        for kind in Kind::ALL {
            let rows = base_header.rows[kind.index()];
            let dim = dims[kind.index()];
            let section = |i: usize| sections.get(6 + 3 * kind.index() + i).len() as u64;
            let expected = [
                rows.checked_mul(dim as u64 * 4),
                rows.checked_mul(4),
                rows.checked_mul(2),
            ];
            if (0..3).any(|i| Some(section(i)) != expected[i]) {
                return Err(damaged(format!("{kind} rows of another size")));
            }
        }
        let entries = sections.get(1);
        let n_entries = entries
            .get(..4)
            .map(|b| u32::from_be_bytes(b.try_into().expect("4")) as usize);
        if n_entries != Some(docs) {
            return Err(damaged("entries and table differ".into()));
        }
        let ids = sections.get(4);
        let mut last: Option<DocId> = None;
        let mut entry_end = 4u64;
        for bytes in table.chunks_exact(RECORD) {
            let record =
                Record::decode(bytes).ok_or_else(|| damaged("a record of no kind".into()))?;
            let id_end = u64::from(record.id.0) + u64::from(record.id.1);
            let rows_end = u64::from(record.rows.0) + u64::from(record.rows.1);
            let ok = last.is_none_or(|last| last < record.doc)
                && record.entry.0 == entry_end
                && id_end <= ids.len() as u64
                && std::str::from_utf8(&ids[record.id.0 as usize..id_end as usize]).is_ok()
                && (record.tenant as usize) < names.len()
                && (record.context == NO_CONTEXT || (record.context as usize) < names.len())
                && (record.context == NO_CONTEXT || record.kind == Kind::Chunk)
                && rows_end <= base_header.rows[record.kind.index()];
            if !ok {
                return Err(damaged(format!("record of {}", record.doc.as_u64())));
            }
            last = Some(record.doc);
            entry_end += u64::from(record.entry.1);
        }
        if entry_end != entries.len() as u64 {
            return Err(damaged("entries and table differ".into()));
        }
        let base = MappedBase {
            #[cfg(target_endian = "big")]
            owned: Kind::ALL
                .iter()
                .map(|kind| {
                    let at = 6 + 3 * kind.index();
                    (
                        floats_of(sections.get(at)),
                        floats_of(sections.get(at + 1)),
                        sections
                            .get(at + 2)
                            .chunks_exact(2)
                            .map(|b| u16::from_le_bytes([b[0], b[1]]))
                            .collect(),
                    )
                })
                .collect(),
            sections,
            header,
            dimensions: dims,
            docs,
            names,
        };
        // The rows are read in place: they must lie where `f32`s can.
        for kind in Kind::ALL {
            let rows = base.rows(kind);
            let n = base_header.rows[kind.index()] as usize;
            let dim = dims[kind.index()];
            if rows.data.len() != n * dim || rows.inverse.len() != n || rows.indices.len() != n {
                return Err(damaged("rows not aligned".into()));
            }
        }
        Ok(base)
    }

    /// Checks the file's checksum (`file`, as the manifest lists it): [`MappedBase::load`]
    /// only checks the layout, so that the checksum can be computed meanwhile.
    pub(crate) fn verify_checksum(&self, file: &super::file::ViewFile, path: &Path) -> Result<()> {
        self.sections.verify(file, path)
    }

    /// Checks that the table and the rows say what the entries do: each record's kind,
    /// tenant, id, context, plainness and sequence number are its entry's, its vectors
    /// decode, and each row's inverse norm and vector index are its vector's (`ruche
    /// check`; a reader trusts them).
    pub(crate) fn verify(&self, path: &Path) -> Result<()> {
        let damaged = |doc: DocId, why: &str| {
            Error::corrupt(format!(
                "{}: published base: document {}: {why}",
                path.display(),
                doc.as_u64()
            ))
        };
        (0..self.docs).into_par_iter().try_for_each(|i| {
            let record = self.record(i);
            let dim = self.dimensions[record.kind.index()];
            let stored = self.doc_record(&record)?;
            let summary = stored.summary();
            let same = summary.kind == record.kind
                && summary.tenant == self.tenant(&record)
                && summary.id == self.id(&record)
                && summary.context == self.context(&record)
                && summary.plain == record.plain
                && stored.seq == record.seq;
            if !same {
                return Err(damaged(record.doc, "its record differs from its entry"));
            }
            let expected = self
                .stored_vectors(&record)?
                .as_ref()
                .and_then(DocRows::from_stored)
                .filter(|rows| rows.dim() == dim)
                .unwrap_or_default();
            let rows = self.rows(record.kind);
            let (start, n) = (record.rows.0 as usize, record.rows.1 as usize);
            let same_rows = expected.rows == rows.indices[start..start + n]
                && expected.inverse == rows.inverse[start..start + n]
                && expected.data == rows.data[start * dim..(start + n) * dim];
            if !same_rows {
                return Err(damaged(record.doc, "its rows differ from its vectors"));
            }
            Ok(())
        })
    }

    /// The header: meta values, feedback windows and entity lists.
    pub(crate) fn header(&self) -> &PartHeader {
        &self.header
    }

    /// Takes the entity lists out of the header (the catalog built from them is the
    /// only one made of this base).
    pub(crate) fn take_entities(&mut self) -> Vec<(u64, Vec<String>)> {
        std::mem::take(&mut self.header.entities)
    }

    pub(crate) fn len(&self) -> usize {
        self.docs
    }

    /// The row dimension of `kind` (0: it has no rows).
    pub(crate) fn dimensions(&self, kind: Kind) -> usize {
        self.dimensions[kind.index()]
    }

    /// Record `i` (checked at load).
    pub(crate) fn record(&self, i: usize) -> Record {
        let bytes = &self.sections.get(3)[i * RECORD..(i + 1) * RECORD];
        Record::decode(bytes).expect("records checked at load")
    }

    /// Every record, in `DocId` order.
    pub(crate) fn records(&self) -> impl ExactSizeIterator<Item = Record> + '_ {
        (0..self.docs).map(|i| self.record(i))
    }

    /// The index of the record of `doc`, if the base holds it.
    pub(crate) fn find(&self, doc: DocId) -> Option<usize> {
        let table = self.sections.get(3);
        let doc_at = |i: usize| {
            DocId::new(u64::from_le_bytes(
                table[i * RECORD..i * RECORD + 8].try_into().expect("8"),
            ))
        };
        let (mut low, mut high) = (0, self.docs);
        while low < high {
            let mid = low + (high - low) / 2;
            match doc_at(mid).cmp(&doc) {
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    pub(crate) fn id(&self, record: &Record) -> &str {
        let (start, len) = (record.id.0 as usize, record.id.1 as usize);
        std::str::from_utf8(&self.sections.get(4)[start..start + len]).expect("ids checked at load")
    }

    /// The tenants' and contexts' names.
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    pub(crate) fn tenant(&self, record: &Record) -> &str {
        &self.names[record.tenant as usize]
    }

    pub(crate) fn context(&self, record: &Record) -> Option<&str> {
        (record.context != NO_CONTEXT).then(|| self.names[record.context as usize].as_str())
    }

    fn entry(&self, record: &Record) -> Result<EntryRef<'_>> {
        let start = record.entry.0 as usize;
        block::entry_at(&self.sections.get(1)[start..start + record.entry.1 as usize])
    }

    /// The stored record of `record`'s document.
    pub(crate) fn doc_record(&self, record: &Record) -> Result<DocRecord> {
        self.entry(record)?.record()
    }

    /// The vectors of `record`'s document as stored: those its entry keeps and those its
    /// rows hold.
    pub(crate) fn stored_vectors(&self, record: &Record) -> Result<Option<StoredVectors>> {
        let Some(mut stored) = self.entry(record)?.vectors()? else {
            return Ok(None);
        };
        let rows = self.rows(record.kind);
        let (start, n) = (record.rows.0 as usize, record.rows.1 as usize);
        let dim = self.dimensions[record.kind.index()];
        for (i, &index) in rows.indices[start..start + n].iter().enumerate() {
            let row = rows.data[(start + i) * dim..(start + i + 1) * dim].to_vec();
            match index {
                CENTROID_ROW => {}
                0 => stored.main = Some(row),
                i => {
                    *stored
                        .patterns
                        .get_mut(usize::from(i) - 1)
                        .ok_or_else(|| Error::corrupt("published base: a row of no vector"))? =
                        Some(row)
                }
            }
        }
        Ok(Some(stored))
    }

    /// `record`'s document as a part's entry: its record and its vectors as stored.
    pub(crate) fn block_entry(&self, record: &Record) -> Result<BlockEntry> {
        let entry = self.entry(record)?;
        Ok(match self.stored_vectors(record)? {
            Some(stored) => BlockEntry::with_vectors(&entry.to_owned(), Some(&stored)),
            None => entry.to_owned(),
        })
    }

    /// The rows of `kind`.
    pub(crate) fn rows(&self, kind: Kind) -> BaseRows<'_> {
        #[cfg(target_endian = "big")]
        {
            let (data, inverse, indices) = &self.owned[kind.index()];
            return BaseRows {
                data,
                inverse,
                indices,
            };
        }
        #[cfg(target_endian = "little")]
        {
            let at = 6 + 3 * kind.index();
            BaseRows {
                data: cast(self.sections.get(at)),
                inverse: cast(self.sections.get(at + 1)),
                indices: cast(self.sections.get(at + 2)),
            }
        }
    }
}

/// Numbers a mapped section is read as in place.
///
/// # Safety
///
/// Only for types of which every bit pattern of their size is a value, with no padding.
#[cfg(target_endian = "little")]
unsafe trait Plain: Copy {}

// SAFETY: every bit pattern of 4 bytes is an `f32` (NaNs included), of 2 a `u16`.
#[cfg(target_endian = "little")]
unsafe impl Plain for f32 {}
#[cfg(target_endian = "little")]
unsafe impl Plain for u16 {}

/// `bytes` (little-endian numbers, on a little-endian host) as numbers in place; empty
/// when they do not lie where such numbers can (the load then refuses the base).
#[cfg(target_endian = "little")]
fn cast<T: Plain>(bytes: &[u8]) -> &[T] {
    // SAFETY: `T: Plain`, so every bit pattern is a value, and `align_to` only yields the
    // part of `bytes` aligned for `T`; a misaligned section gives a prefix, refused here.
    let (head, body, tail) = unsafe { bytes.align_to::<T>() };
    if head.is_empty() && tail.is_empty() {
        body
    } else {
        &[]
    }
}

#[cfg(target_endian = "big")]
fn floats_of(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

#[cfg(test)]
mod tests;
