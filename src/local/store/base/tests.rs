use super::*;
use crate::local::store::view::{self, Part};
use crate::model::doc::{Chunk, Document, Rule, Scope};
use crate::model::time::Timestamp;
use crate::{Scenario, Tool};

const DIM: usize = 4;

fn vector(i: usize) -> Vec<f32> {
    let x = i as f32;
    vec![1.0 + x, (x * 0.37).sin() * 3.0, -x, 0.5]
}

/// Documents of every kind and shape: rules with patterns (one pattern's vector
/// zero: kept by the entry, not a row), in scopes, disabled or an agent's; chunks with
/// and without context, expiring, with no vector or a zero one; scenarios and tools;
/// two tenants.
fn documents() -> Vec<(Document, Option<StoredVectors>)> {
    let mut docs = Vec::new();
    for i in 0..40usize {
        let (doc, stored) = match i % 8 {
            0 => (
                Document::Rule(
                    Rule::new(format!("r{i}"), "the customer asks", "answer")
                        .with_patterns(["one", "two", "three"]),
                ),
                StoredVectors {
                    main: Some(vector(i)),
                    patterns: vec![Some(vector(i + 1)), Some(vec![0.0; DIM]), None],
                    external: true,
                },
            ),
            1 => (
                Document::Rule(
                    Rule::new(format!("r{i}"), "c", "a")
                        .with_scope(Scope::step("returns", "confirm"))
                        .with_tenant("acme"),
                ),
                StoredVectors {
                    main: Some(vector(i)),
                    patterns: Vec::new(),
                    external: false,
                },
            ),
            // Disabled, always applied, or for a folder (with globs).
            2 => (
                Document::Rule(match i / 8 % 3 {
                    0 => Rule::new(format!("r{i}"), "c", "a").with_enabled(false),
                    1 => Rule::new(format!("r{i}"), "c", "a").with_apply(crate::Apply::Always),
                    _ => Rule::new(format!("r{i}"), "c", "a")
                        .with_folder("crates/cli")
                        .with_globs(["*.rs"])
                        .with_body("in full"),
                }),
                StoredVectors::default(),
            ),
            3 => (
                Document::Chunk(Chunk::new(format!("c{i}"), "a note").with_context("u1")),
                StoredVectors {
                    main: Some(vector(i)),
                    patterns: Vec::new(),
                    external: true,
                },
            ),
            4 => (
                Document::Chunk(
                    Chunk::new(format!("c{i}"), "expires")
                        .with_expires_at(Timestamp::from_unix_millis(5))
                        .with_agent("bot"),
                ),
                StoredVectors {
                    main: Some(vec![0.0; DIM]),
                    patterns: Vec::new(),
                    external: true,
                },
            ),
            5 => (
                Document::Scenario(Scenario::new(format!("s{i}"), "Returns", "send back")),
                StoredVectors {
                    main: Some(vector(i)),
                    patterns: Vec::new(),
                    external: false,
                },
            ),
            6 => (
                Document::Tool(Tool::new(format!("t{i}"), "track", "where is it")),
                StoredVectors::default(),
            ),
            _ => (
                Document::Chunk(Chunk::new(format!("c{i}"), "plain").with_tenant("acme")),
                StoredVectors {
                    main: Some(vector(i)),
                    patterns: Vec::new(),
                    external: true,
                },
            ),
        };
        docs.push((doc, (!stored.is_empty()).then_some(stored)));
    }
    docs
}

fn entries() -> Vec<BlockEntry> {
    entries_of(&documents())
}

fn entries_of(documents: &[(Document, Option<StoredVectors>)]) -> Vec<BlockEntry> {
    documents
        .iter()
        .enumerate()
        .map(|(i, (doc, stored))| {
            BlockEntry::new(
                DocId::new(10 + 3 * i as u64),
                &DocRecord::from_document(doc, 100 + i as u64),
                &stored.clone().unwrap_or_default(),
            )
        })
        .collect()
}

fn tokens(doc: DocId) -> [u32; 2] {
    [doc.as_u64() as u32 * 2, 1]
}

fn header() -> PartHeader {
    PartHeader {
        entities: vec![(10, vec!["order-1".to_string()])],
        ..PartHeader::default()
    }
}

/// Writes `encoded` and reads it back as a mapped base.
fn written(dir: &Path, encoded: &Encoded) -> Result<MappedBase> {
    let file = view::write_sections(dir, "base-1.rv", &encoded.sections())?;
    let sections = view::read_file(dir, &file)?.expect("written");
    MappedBase::load(sections, Path::new("base-1.rv"))
}

/// Kinds whose vectors have dimensions of their own (rules of the transformer,
/// chunks of the static model): layout 2, every row read back exactly; one shared
/// dimension keeps the layout of the versions before.
#[test]
fn kinds_of_their_own_dimensions_read_back_exactly() {
    let shorter = |stored: &StoredVectors| StoredVectors {
        main: stored.main.as_ref().map(|v| v[..3].to_vec()),
        patterns: stored
            .patterns
            .iter()
            .map(|p| p.as_ref().map(|v| v[..3].to_vec()))
            .collect(),
        external: stored.external,
    };
    let documents: Vec<(Document, Option<StoredVectors>)> = documents()
        .into_iter()
        .map(|(doc, stored)| {
            let stored = match doc.kind() {
                Kind::Chunk => stored.as_ref().map(shorter),
                _ => stored,
            };
            (doc, stored)
        })
        .collect();
    let entries = entries_of(&documents);
    let mut dims = [Some(DIM); Kind::COUNT];
    dims[Kind::Chunk.index()] = Some(3);
    let encoded = encode(&header(), &entries, dims, &tokens).unwrap();
    let layout: BaseHeader = bincode::deserialize(&encoded.base_header).unwrap();
    assert_eq!(layout.layout, LAYOUT_BY_KIND);
    let dir = tempfile::tempdir().unwrap();
    let base = written(dir.path(), &encoded).unwrap();
    base.verify(Path::new("base-1.rv")).unwrap();
    assert_eq!(base.dimensions(Kind::Chunk), 3);
    assert_eq!(base.dimensions(Kind::Rule), DIM);
    for (i, (_, stored)) in documents.into_iter().enumerate() {
        let record = base.record(i);
        assert_eq!(base.stored_vectors(&record).unwrap(), stored, "{i}");
    }
    let uniform = encode(
        &header(),
        &self::entries(),
        [Some(DIM); Kind::COUNT],
        &tokens,
    )
    .unwrap();
    let layout: BaseHeader = bincode::deserialize(&uniform.base_header).unwrap();
    assert_eq!((layout.layout, layout.dimensions), (LAYOUT, DIM as u32));
}

#[test]
fn a_base_reads_back_every_record_entry_and_vector_exactly() {
    let entries = entries();
    let encoded = encode(&header(), &entries, [Some(DIM); Kind::COUNT], &tokens).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let base = written(dir.path(), &encoded).unwrap();
    assert_eq!(base.len(), entries.len());
    assert_eq!(base.header().entities, header().entities);
    base.verify(Path::new("base-1.rv")).unwrap();
    for ((i, original), (doc, stored)) in entries.iter().enumerate().zip(documents()) {
        let record = base.record(i);
        assert_eq!(base.find(original.doc), Some(i));
        assert_eq!(record.doc, original.doc);
        assert_eq!(record.seq, 100 + i as u64);
        assert_eq!(record.tokens, tokens(original.doc));
        assert_eq!(record.kind, doc.kind());
        assert_eq!(base.id(&record), doc.id());
        assert_eq!(base.tenant(&record), doc.tenant_id());
        let context = doc.as_chunk().and_then(|c| c.context_id.as_deref());
        assert_eq!(base.context(&record), context);
        assert_eq!(
            record.plain,
            DocRecord::from_document(&doc, 0).summary().plain
        );
        // The vectors as stored, bit for bit (a zero vector kept by the entry).
        assert_eq!(base.stored_vectors(&record).unwrap(), stored, "{i}");
        // The entry a part would hold, byte for byte.
        let entry = base.block_entry(&record).unwrap();
        assert_eq!(block::encode([&entry]), block::encode([original]), "{i}");
        assert_eq!(
            base.doc_record(&record).unwrap().into_document().unwrap(),
            doc
        );
        // Rows of vectors with a direction, each with its inverse norm.
        let rows = base.rows(record.kind);
        let range = record.rows.0 as usize..(record.rows.0 + record.rows.1) as usize;
        let expected = stored
            .as_ref()
            .and_then(DocRows::from_stored)
            .unwrap_or_default();
        assert_eq!(&rows.indices[range.clone()], expected.rows.as_slice());
        assert_eq!(&rows.inverse[range.clone()], expected.inverse.as_slice());
        assert_eq!(
            &rows.data[range.start * DIM..range.end * DIM],
            expected.data.as_slice()
        );
    }
    assert_eq!(base.find(DocId::new(11)), None);
    assert_eq!(base.find(DocId::new(1_000)), None);
    // Each vector is once in the file: the rows hold them, the entries do not.
    let stored_floats: usize = documents()
        .iter()
        .filter_map(|(_, s)| s.as_ref())
        .map(|s| s.indexed().count() * DIM)
        .sum();
    let part = Part {
        header: header(),
        written: entries,
    };
    let part_len = view::write_sections(
        dir.path(),
        "part-1.rv",
        &[
            Section::Bytes(&part.encode_header()),
            Section::Entries(&part.written),
        ],
    )
    .unwrap()
    .len;
    let base_len = std::fs::metadata(dir.path().join("view/base-1.rv"))
        .unwrap()
        .len();
    // The base adds its table, ids, inverse norms, indices and centroids, not a
    // second copy of the vectors.
    assert!(
        base_len < part_len + 40 * (RECORD as u64 + 64) + 8 * 64 * 12,
        "{base_len} {part_len} {stored_floats}"
    );
}

#[test]
fn a_mapped_base_read_as_a_part_is_the_part_it_was_written_from() {
    let entries = entries();
    let encoded = encode(&header(), &entries, [Some(DIM); Kind::COUNT], &tokens).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = view::write_sections(dir.path(), "base-1.rv", &encoded.sections()).unwrap();
    let part = view::read_part(dir.path(), &file).unwrap().unwrap();
    assert_eq!(part.header.entities, header().entities);
    assert!(part.header.removed.is_empty());
    assert_eq!(block::encode(&part.written), block::encode(&entries));
    // A bit changed: the checksum refuses the file.
    let path = dir.path().join("view/base-1.rv");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    std::fs::write(&path, bytes).unwrap();
    assert!(view::read_part(dir.path(), &file).is_err());
}

/// A mapped entry is admitted by a filter bound to its catalog exactly when its
/// document matches: the entry's answer (kind, tenant number, plain, the record's
/// context) where it suffices, the document's otherwise; and the same once the
/// document is decoded, and for the same document inserted decoded into a writer's
/// catalog.
#[test]
fn a_mapped_entry_is_admitted_as_its_document_matches() {
    use crate::local::catalog::{Catalog, Entry};
    use crate::retrieve::DocFilter;
    let entries = entries();
    let encoded = encode(&header(), &entries, [Some(DIM); Kind::COUNT], &tokens).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let base = std::sync::Arc::new(written(dir.path(), &encoded).unwrap());
    let catalog = Catalog::from_base(&base, Vec::new());
    let mut ready = Catalog::default();
    for (entry, (doc, _)) in entries.iter().zip(documents()) {
        ready.insert(entry.doc, Entry::new(doc, 1), None, Vec::new());
    }
    let tags = [Vec::new(), vec!["vip".to_string()]];
    let metadata = [Vec::new(), vec![("source".to_string(), "chat".to_string())]];
    let files = [Vec::new(), vec!["other/x.rs".to_string()]];
    let mut checked = 0;
    for decode_first in [false, true] {
        for (entry, (doc, _)) in entries.iter().zip(documents()) {
            let mapped = catalog.get(entry.doc).unwrap();
            let inserted = ready.get(entry.doc).unwrap();
            if decode_first {
                mapped.doc().unwrap();
            }
            for kind in Kind::ALL {
                for tenant in ["default", "acme", "zeta"] {
                    for agent in [None, Some("bot"), Some("other")] {
                        for (scenario, step) in [
                            (None, None),
                            (Some("returns"), None),
                            (Some("returns"), Some("confirm")),
                        ] {
                            for context in [None, Some("u1"), Some("u2")] {
                                for (tags, metadata) in tags.iter().zip(&metadata) {
                                    for (now, files) in [0, 10].into_iter().zip(&files) {
                                        let filter = DocFilter {
                                            kind,
                                            tenant,
                                            agent,
                                            scenario,
                                            step,
                                            context,
                                            tags,
                                            metadata,
                                            files,
                                            now: Timestamp::from_unix_millis(now),
                                        };
                                        let matches = filter.matches(&doc);
                                        assert_eq!(
                                            catalog.admit(&filter).admits(mapped),
                                            matches,
                                            "bound: {filter:?} {doc:?}"
                                        );
                                        assert_eq!(
                                            ready.admit(&filter).admits(inserted),
                                            matches,
                                            "inserted: {filter:?} {doc:?}"
                                        );
                                        checked += 1;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 10_000);
}

/// Model-based: a reader's arena that starts as a mapped base's rows keeps each live
/// document's vectors (as stored, with their inverse norms) through removals of the
/// base's documents, documents added after it, and the compaction that copies the
/// live rows out of the base and lets it go.
#[test]
fn a_mapped_arena_keeps_every_live_documents_vectors_through_compactions() {
    use crate::local::catalog::{Catalog, Entry};
    use crate::model::metric::inverse_norm;
    use std::collections::BTreeMap;
    let mut random = crate::testing::Xorshift(0x9e37_79b9_7f4a_7c15);
    let vector = |random: &mut crate::testing::Xorshift| -> Vec<f32> {
        (0..DIM)
            .map(|_| 1.0 + (random.next() % 1_000) as f32)
            .collect()
    };
    let stored = |v: &[f32]| StoredVectors {
        main: Some(v.to_vec()),
        patterns: Vec::new(),
        external: true,
    };
    let mut model: BTreeMap<u64, Vec<f32>> = BTreeMap::new();
    let entries: Vec<BlockEntry> = (0..3_000u64)
        .map(|i| {
            let v = vector(&mut random);
            let doc = Document::Chunk(Chunk::new(format!("c{i}"), "note"));
            let entry = BlockEntry::new(
                DocId::new(i),
                &DocRecord::from_document(&doc, i),
                &stored(&v),
            );
            model.insert(i, v);
            entry
        })
        .collect();
    let encoded = encode(&header(), &entries, [Some(DIM); Kind::COUNT], &tokens).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let base = std::sync::Arc::new(written(dir.path(), &encoded).unwrap());
    let mut catalog = Catalog::from_base(&base, Vec::new());
    let check = |catalog: &Catalog, model: &BTreeMap<u64, Vec<f32>>| {
        assert_eq!(catalog.n_vectors(Kind::Chunk), model.len());
        for (&doc, v) in model {
            let got = catalog.vectors(DocId::new(doc)).expect("live");
            assert_eq!(got.data, v.as_slice(), "{doc}");
            assert_eq!(got.inverse, [inverse_norm(v).unwrap()], "{doc}");
            let key = crate::model::id::VectorKey::new(DocId::new(doc), 0);
            let row = catalog.arena_row(key).unwrap() as usize;
            assert_eq!(catalog.arena(Kind::Chunk).row(row).unwrap().0, v.as_slice());
        }
    };
    check(&catalog, &model);
    // The 8-bit copy made now, then kept up to date through the sequence.
    let _ = catalog.scan_view(Kind::Chunk);
    assert_eq!(catalog.base_rows(Kind::Chunk), 3_000);
    let mut new_doc = 10_000u64;
    for step in 0..6_000u64 {
        if random.next() % 5 < 3 {
            let live: Vec<u64> = model.keys().copied().collect();
            let doc = live[(random.next() % live.len() as u64) as usize];
            assert!(catalog.remove(DocId::new(doc)).is_some());
            model.remove(&doc);
        } else {
            let v = vector(&mut random);
            let doc = Document::Chunk(Chunk::new(format!("n{new_doc}"), "later"));
            let rows = DocRows::from_stored(&stored(&v));
            let entry = Entry::new(doc, 5_000 + step);
            catalog.insert(DocId::new(new_doc), entry, rows, Vec::new());
            model.insert(new_doc, v);
            new_doc += 1;
        }
        if step % 500 == 0 {
            check(&catalog, &model);
        }
    }
    assert_eq!(
        catalog.base_rows(Kind::Chunk),
        0,
        "compacted out of the base"
    );
    check(&catalog, &model);
    // The 8-bit copy moved with the rows: each live row's bounds hold its cosine.
    let query = vector(&mut random);
    let norm = inverse_norm(&query).unwrap();
    let query: Vec<f32> = query.iter().map(|x| x * norm).collect();
    let coded = crate::model::metric::QuantizedQuery::new(&query);
    let (arena, quantized, spans) = catalog.scan_view(Kind::Chunk);
    let mut seen = 0;
    for (doc, start, rows) in spans {
        assert!(model.contains_key(&doc.as_u64()));
        let (block, inverse) = arena.rows(start, rows);
        let exact = crate::model::metric::dot(&query, block) * inverse[0];
        let (low, high) = quantized.bounds(&coded, start, DIM);
        assert!(low <= exact && exact <= high, "{low} {exact} {high}");
        seen += 1;
    }
    assert_eq!(seen, model.len());
}

/// A table that loads but lies about a document (written with a right checksum) is
/// what `check` finds: a flag, a sequence number, a token count left alone.
#[test]
fn check_finds_a_table_that_differs_from_its_entries() {
    let entries = entries();
    let dir = tempfile::tempdir().unwrap();
    for (at, found) in [(37, true), (8, true), (28, false)] {
        let mut encoded = encode(&header(), &entries, [Some(DIM); Kind::COUNT], &tokens).unwrap();
        // Record 3 (a chunk): its flags byte, its sequence number, its word count.
        encoded.table[3 * RECORD + at] ^= 1;
        let base = written(dir.path(), &encoded).unwrap();
        assert_eq!(base.verify(Path::new("base-1.rv")).is_err(), found, "{at}");
    }
}

/// A base whose table says anything (its checksum right: written so) loads with an
/// error or answers without panicking.
#[test]
fn a_damaged_table_is_an_error_never_a_panic() {
    let entries = entries();
    let dir = tempfile::tempdir().unwrap();
    let mut random = crate::testing::Xorshift(0x2545_f491_4f6c_dd1d);
    let mut next = move || random.next();
    let mut refused = 0;
    for round in 0..400 {
        let mut encoded = encode(&header(), &entries, [Some(DIM); Kind::COUNT], &tokens).unwrap();
        let target = match round % 4 {
            0 | 1 => &mut encoded.table,
            2 => &mut encoded.ids,
            _ => &mut encoded.base_header,
        };
        if target.is_empty() {
            continue;
        }
        for _ in 0..1 + next() % 3 {
            let at = (next() % target.len() as u64) as usize;
            target[at] ^= 1 << (next() % 8);
        }
        match written(dir.path(), &encoded) {
            Err(err) => {
                assert!(
                    matches!(err.kind(), crate::ErrorKind::Corrupt { .. }),
                    "{err:?}"
                );
                refused += 1;
            }
            Ok(base) => {
                for i in 0..base.len() {
                    let record = base.record(i);
                    let _ = (
                        base.id(&record),
                        base.tenant(&record),
                        base.context(&record),
                    );
                    let _ = base.stored_vectors(&record);
                    let _ = base.block_entry(&record);
                    let _ = base.doc_record(&record);
                    let _ = base.find(record.doc);
                }
                let _ = base.verify(Path::new("base-1.rv"));
            }
        }
    }
    assert!(refused > 100, "{refused}");
}
