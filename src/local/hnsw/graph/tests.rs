use std::collections::HashMap;

use super::*;

const DIM: usize = 8;

fn vector(i: u64) -> Vec<f32> {
    let v: Vec<f32> = (0..DIM as u64)
        .map(|d| {
            let mut x = (i * 8 + d + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            x ^= x >> 29;
            (x % 1_000) as f32 - 500.0
        })
        .collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / norm).collect()
}

/// A graph of 60 points keyed as documents' first rows are, and its dump.
fn dumped() -> (Graph, Vec<Vec<u8>>, HashMap<u64, Vec<f32>>) {
    let graph = Graph::new(HnswParams::default(), 60);
    let rows: HashMap<u64, Vec<f32>> = (0..60u64).map(|i| (i << 16, vector(i))).collect();
    let mut keys: Vec<u64> = rows.keys().copied().collect();
    keys.sort_unstable();
    let items: Vec<(&[f32], VectorKey)> = keys
        .iter()
        .map(|key| (rows[key].as_slice(), VectorKey::from_u64(*key)))
        .collect();
    assert!(graph.insert(&items).is_empty());
    let files = graph.dump().unwrap();
    (graph, files, rows)
}

/// A checkpoint of flat lists holds what hnsw_rs's dump does: its keyed data file is
/// the dump's keyed, byte for byte, and hnsw_rs's graph file written back from it is
/// the dump's graph file, byte for byte (but for the entry point, which may differ
/// after a parallel insert); the graph hnsw_rs loads from it searches as the first.
#[test]
fn a_flat_checkpoint_gives_back_hnsw_rs_dump_and_graph() {
    let n = 3_000u64;
    let graph = Graph::new(HnswParams::default(), n as usize);
    let rows: HashMap<u64, Vec<f32>> = (0..n).map(|i| (i << 16, vector(i))).collect();
    let mut keys: Vec<u64> = rows.keys().copied().collect();
    keys.sort_unstable();
    for batch in keys.chunks(700) {
        let items: Vec<(&[f32], VectorKey)> = batch
            .iter()
            .map(|key| (rows[key].as_slice(), VectorKey::from_u64(*key)))
            .collect();
        assert!(graph.insert(&items).is_empty());
    }
    assert!(graph.flat().levels() >= 2, "several levels");
    // Documents 0 to 99 deleted before the checkpoint: their vectors kept whole.
    let row = |key: VectorKey| {
        (key.as_u64() >> 16 >= 100)
            .then(|| rows.get(&key.as_u64()).cloned())
            .flatten()
    };
    let dumped = graph.dump().unwrap();
    let (files, flat) = graph.checkpoint_files(row);
    assert_eq!(flat, graph.flat());
    assert_eq!(files[1], key_data(&dumped[1], row).unwrap(), "keyed data");
    assert!(
        files[0].len() * 3 < dumped[0].len(),
        "{} {}",
        files[0].len(),
        dumped[0].len()
    );
    let manifest = CheckpointManifest {
        covered_seq: n,
        n_points: n as usize,
        dimensions: DIM,
        files: Graph::file_sums(&files),
    };
    let unpacked = Graph::unpack(&manifest, files.clone(), row).unwrap();
    assert_eq!(unpacked[1], dumped[1], "data file");
    let written_back = hnsw_graph_file(&unpacked[0], &unpacked[1]).unwrap();
    let (ours, theirs) = (&written_back, &dumped[0]);
    assert_eq!(ours.len(), theirs.len());
    // The entry point is the last 8 + 1 + 4 bytes.
    let body = ours.len() - 13;
    assert_eq!(ours[..body], theirs[..body], "graph file");
    let scratch = tempfile::tempdir().unwrap();
    let loaded = Graph::load(&manifest, &unpacked, HnswParams::default(), scratch.path()).unwrap();
    assert_eq!(loaded.len(), n as usize);
    assert_eq!(loaded.flat(), graph.flat());
    for i in (0..n).step_by(97) {
        let query = vector(i + 7 * n);
        assert_eq!(
            loaded.search(&query, 10, None),
            graph.search(&query, 10, None)
        );
    }
    // Damage is an error, never a panic.
    for len in (0..files[0].len()).step_by(997) {
        let mut cut = files.clone();
        cut[0].truncate(len);
        let manifest = CheckpointManifest {
            files: Graph::file_sums(&cut),
            ..manifest.clone()
        };
        let loaded = Graph::unpack(&manifest, cut, row).and_then(|files| {
            Graph::load(&manifest, &files, HnswParams::default(), scratch.path())
        });
        assert!(loaded.is_err(), "truncated at {len}");
    }
}

#[test]
fn a_keyed_checkpoint_keeps_only_the_vectors_the_catalog_lacks_and_loads_back() {
    let (graph, files, rows) = dumped();
    let data = &files[1];
    // At the checkpoint, documents 0 to 4 were deleted already and document 6's row
    // differs (the graph's copy is what counts): those stay whole.
    let mut changed = rows[&(6 << 16)].clone();
    changed[0] += 0.5;
    let at_checkpoint = |key: VectorKey| match key.as_u64() >> 16 {
        0..=4 => None,
        6 => Some(changed.clone()),
        _ => rows.get(&key.as_u64()).cloned(),
    };
    let keyed = key_data(data, at_checkpoint).unwrap();
    assert!(is_keyed(&keyed));
    assert!(!is_keyed(data));
    let code_len = super::super::distance::graph_code_len(DIM);
    assert_eq!(keyed.len(), 24 + 60 * 9 + 6 * code_len);

    // Unkeyed with the same rows: hnsw_rs's file, byte for byte.
    let (again, missing) = unkey_data(&keyed, DIM, at_checkpoint).unwrap();
    assert_eq!((&again, missing), (data, 0));

    // Documents 10 to 14 deleted since: their nodes get zeros, the rest is as dumped.
    let now = |key: VectorKey| match key.as_u64() >> 16 {
        10..=14 => None,
        _ => rows.get(&key.as_u64()).cloned(),
    };
    let (unkeyed, missing) = unkey_data(&keyed, DIM, now).unwrap();
    assert_eq!(missing, 5);
    assert_eq!(unkeyed.len(), data.len());
    let record = 4 + 8 + 8 + code_len;
    let mut differing = 0;
    for (a, b) in data[12..].chunks(record).zip(unkeyed[12..].chunks(record)) {
        assert_eq!(a[..20], b[..20]);
        if a != b {
            differing += 1;
            assert!(b[20..].iter().all(|&byte| byte == 0));
            let key = u64::from_le_bytes(a[4..12].try_into().unwrap());
            assert!((10..=14).contains(&(key >> 16)), "key {key:#x}");
        }
    }
    assert_eq!(differing, 5);

    // The graph hnsw_rs loads from the unpacked files finds what the original finds.
    let manifest = CheckpointManifest {
        covered_seq: 60,
        n_points: 60,
        dimensions: DIM,
        files: Graph::file_sums(&[files[0].clone(), keyed.clone()]),
    };
    let unpacked = Graph::unpack(&manifest, vec![files[0].clone(), keyed.clone()], now).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let loaded = Graph::load(&manifest, &unpacked, HnswParams::default(), scratch.path()).unwrap();
    assert_eq!(loaded.len(), 60);
    for i in [20u64, 33, 59] {
        let query = vector(i);
        let found = loaded.search(&query, 5, None);
        assert_eq!(found[0].0.as_u64(), i << 16);
        assert_eq!(found[0], graph.search(&query, 5, None)[0]);
        for (key, cosine) in found {
            let exact = metric::dot(&query, &rows[&key.as_u64()]);
            // The codes' estimate.
            assert!((10..=14).contains(&(key.as_u64() >> 16)) || (cosine - exact).abs() < 0.02);
        }
    }
    // An earlier version's keyed file keeps vectors whole, not codes: unkeyed, the
    // same data file.
    let mut earlier = KEYED_MAGIC_V1.to_vec();
    earlier.extend_from_slice(&keyed[8..24]);
    let mut at = 24;
    while at < keyed.len() {
        let key = u64::from_le_bytes(keyed[at..at + 8].try_into().unwrap());
        earlier.extend_from_slice(&keyed[at..at + 9]);
        at += 9;
        if keyed[at - 1] == 1 {
            rows[&key]
                .iter()
                .for_each(|x| earlier.extend_from_slice(&x.to_le_bytes()));
            at += code_len;
        }
    }
    assert!(is_keyed(&earlier));
    assert_eq!(
        unkey_data(&earlier, DIM, at_checkpoint).unwrap(),
        (data.clone(), 0)
    );

    // A damaged keyed file is refused before it is unkeyed.
    let mut damaged = keyed.clone();
    damaged[30] ^= 1;
    assert!(Graph::unpack(&manifest, vec![files[0].clone(), damaged], now).is_err());
}

/// A graph an earlier version built and hnsw_rs dumped (its nodes hold `f32`
/// vectors, compared by `CosineDistance`) loads as a graph of codes with the same
/// edges, which finds each vector's own node first.
#[test]
fn an_earlier_versions_dump_of_vectors_loads_as_a_graph_of_codes() {
    let n = 500u64;
    let earlier: Hnsw<'_, f32, CosineDistance> =
        Hnsw::new(16, n as usize, MAX_LAYERS, 200, CosineDistance);
    let rows: Vec<Vec<f32>> = (0..n).map(vector).collect();
    for (i, row) in rows.iter().enumerate() {
        earlier.insert_slice((row, i << 16));
    }
    let dir = tempfile::tempdir().unwrap();
    let basename = earlier.file_dump(dir.path(), "old").unwrap();
    let manifest = CheckpointManifest {
        covered_seq: n,
        n_points: n as usize,
        dimensions: DIM,
        files: Vec::new(),
    };
    let loaded = Graph::load_from(&manifest, dir.path(), &basename, HnswParams::default()).unwrap();
    assert_eq!(loaded.len(), n as usize);
    // The same edges (each list in the order of the codes' distances).
    let edges = |flat: &super::super::FlatGraph| {
        let mut edges: Vec<(u64, usize, Vec<u64>)> = (0..flat.len() as u32)
            .flat_map(|node| {
                (0..flat.levels()).map(move |level| {
                    let mut next: Vec<u64> = flat
                        .neighbours(node, level)
                        .iter()
                        .map(|&n| flat.key(n).as_u64())
                        .collect();
                    next.sort_unstable();
                    (flat.key(node).as_u64(), level, next)
                })
            })
            .collect();
        edges.sort_unstable();
        edges
    };
    assert_eq!(
        edges(&loaded.flat()),
        edges(&super::super::FlatGraph::from_hnsw(&earlier))
    );
    for (i, row) in rows.iter().enumerate().step_by(7) {
        assert_eq!(loaded.search(row, 1, None)[0].0.as_u64(), (i as u64) << 16);
    }
    // A point count the manifest does not record is refused.
    let other = CheckpointManifest {
        n_points: n as usize + 1,
        ..manifest
    };
    assert!(Graph::load_from(&other, dir.path(), &basename, HnswParams::default()).is_err());
}

/// An `ef_construction` or `ef_search` of 0 is refused under its own key.
#[test]
fn a_zero_ef_is_refused_by_name() {
    for (params, key) in [
        (
            HnswParams {
                ef_construction: 0,
                ..HnswParams::default()
            },
            "vector.ef_construction",
        ),
        (
            HnswParams {
                ef_search: 0,
                ..HnswParams::default()
            },
            "vector.ef_search",
        ),
    ] {
        let err = params.validate().unwrap_err();
        assert!(err.to_string().contains(key), "{err}");
    }
    assert!(HnswParams::default().validate().is_ok());
}

#[test]
fn damaged_data_is_an_error_never_a_panic() {
    let (_, files, rows) = dumped();
    let row = |key: VectorKey| rows.get(&key.as_u64()).cloned();
    let keyed = key_data(&files[1], |key| {
        (key.as_u64() % 3 != 0).then(|| row(key)).flatten()
    })
    .unwrap();
    for len in (0..keyed.len()).step_by(7) {
        assert!(
            unkey_data(&keyed[..len], DIM, row).is_err(),
            "truncated at {len}"
        );
    }
    for len in (0..files[1].len()).step_by(13) {
        let _ = key_data(&files[1][..len], row);
    }
    let mut random = crate::testing::Xorshift(0x9e37_79b9_7f4a_7c15);
    for _ in 0..2_000 {
        let state = random.next();
        let mut bytes = keyed.clone();
        let at = (state as usize) % bytes.len();
        bytes[at] ^= (state >> 32) as u8 | 1;
        let _ = unkey_data(&bytes, DIM, row);
        let mut raw = files[1].clone();
        let at = (state >> 8) as usize % raw.len();
        raw[at] ^= (state >> 40) as u8 | 1;
        let _ = key_data(&raw, row);
    }
    // A count of points the file cannot hold is refused, not allocated.
    let mut huge = keyed.clone();
    huge[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(unkey_data(&huge, DIM, row).is_err());
}

/// Copies of one vector are one node: the others are left out (for the caller to scan),
/// and a walk from anywhere reaches every node. Inserted as nodes, 300 copies linked
/// only to each other, and a walk that entered them reached about a tenth of the graph.
#[test]
fn copies_of_a_vector_are_one_node_and_every_node_stays_reachable() {
    let params = HnswParams {
        ef_search: 2_000,
        ..HnswParams::default()
    };
    let graph = Graph::new(params, 900);
    let mut rows: Vec<Vec<f32>> = (0..600u64).map(vector).collect();
    rows.extend((0..300).map(|_| vector(3)));
    // Written in two insertions, the copies in both, most recent first.
    let items: Vec<(&[f32], VectorKey)> = rows
        .iter()
        .enumerate()
        .rev()
        .map(|(i, v)| (v.as_slice(), VectorKey::from_u64((i as u64) << 16)))
        .collect();
    let (first, second) = items.split_at(450);
    let mut left_out = graph.insert(first);
    left_out.extend(graph.insert(second));
    left_out.sort_unstable();
    let mut copies: Vec<VectorKey> = (600..900u64)
        .chain([3])
        .map(|i| VectorKey::from_u64(i << 16))
        .collect();
    copies.sort_unstable();
    // One of the 301 copies is a node; which one depends on the threads.
    assert_eq!(left_out.len(), 300);
    assert!(left_out.iter().all(|key| copies.contains(key)));
    assert_eq!(graph.len(), 600);
    assert_eq!(graph.keys().len(), 600);
    for query in [3, 500, 77] {
        assert_eq!(
            graph.search(&vector(query), 600, None).len(),
            600,
            "from {query}"
        );
    }
    // Loaded back, the graph knows its nodes' codes: a copy is left out again.
    let manifest_files = graph.dump().unwrap();
    let manifest = CheckpointManifest {
        covered_seq: 1,
        n_points: graph.len(),
        dimensions: DIM,
        files: Graph::file_sums(&manifest_files),
    };
    let scratch = tempfile::tempdir().unwrap();
    let loaded = Graph::load(&manifest, &manifest_files, params, scratch.path()).unwrap();
    let copy = vector(3);
    let again = loaded.insert(&[(copy.as_slice(), VectorKey::from_u64(5_000 << 16))]);
    assert_eq!(again, vec![VectorKey::from_u64(5_000 << 16)]);
    assert_eq!(loaded.len(), 600);
}
