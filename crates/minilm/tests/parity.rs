//! End-to-end checks against vectors computed in Python (scripts/dump_ids.py):
//! sentence-transformers' float32 output, and the numpy simulation of this crate's
//! numerics. Needs the blob: `scripts/make_blob.py` writes it to model/all-MiniLM-L6-v2.q8.bin.{0,1,2}
//! (or set MINILM_BLOB).

use std::sync::OnceLock;

use ruchedb_minilm::{DIM, Embedding, Error, Isa, Model};

struct RefSet {
    ids: Vec<Vec<u32>>,
    reference: Vec<Embedding>,
    simulated: Vec<Embedding>,
}

fn blob() -> &'static [u8] {
    static BLOB: OnceLock<Vec<u8>> = OnceLock::new();
    BLOB.get_or_init(|| {
        let read = |path: &str| {
            std::fs::read(path)
                .unwrap_or_else(|e| panic!("{path}: {e} (run scripts/make_blob.py first)"))
        };
        match std::env::var("MINILM_BLOB") {
            Ok(path) => read(&path),
            // The repository's blob, in its parts (see build.rs).
            Err(_) => (0..3)
                .flat_map(|part| {
                    read(&format!(
                        "{}/model/all-MiniLM-L6-v2.q8.bin.{part}",
                        env!("CARGO_MANIFEST_DIR")
                    ))
                })
                .collect(),
        }
    })
}

fn refs() -> &'static RefSet {
    static REFS: OnceLock<RefSet> = OnceLock::new();
    REFS.get_or_init(|| {
        let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/ref50.bin"))
            .expect("testdata/ref50.bin");
        assert_eq!(&bytes[..8], b"MLMIDS01");
        let mut at = 8;
        let mut u32_next = || {
            let v = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
            at += 4;
            v
        };
        let (count, dim) = (u32_next() as usize, u32_next() as usize);
        assert_eq!(dim, DIM);
        let ids: Vec<Vec<u32>> = (0..count)
            .map(|_| {
                let n = u32_next() as usize;
                (0..n).map(|_| u32_next()).collect()
            })
            .collect();
        let vectors = |at: &mut usize| -> Vec<Embedding> {
            (0..count)
                .map(|_| {
                    let mut e = [0.0f32; DIM];
                    for v in e.iter_mut() {
                        *v = f32::from_le_bytes(bytes[*at..*at + 4].try_into().unwrap());
                        *at += 4;
                    }
                    e
                })
                .collect()
        };
        let mut at2 = 8 + 8 + ids.iter().map(|t| 4 + 4 * t.len()).sum::<usize>();
        let reference = vectors(&mut at2);
        let simulated = vectors(&mut at2);
        RefSet {
            ids,
            reference,
            simulated,
        }
    })
}

fn cos(a: &Embedding, b: &Embedding) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

fn batch() -> Vec<&'static [u32]> {
    refs().ids.iter().map(|t| t.as_slice()).collect()
}

fn isas() -> Vec<Isa> {
    [Isa::Scalar, Isa::Avx2, Isa::Avx512]
        .into_iter()
        .filter(|i| i.is_supported())
        .collect()
}

#[test]
fn matches_reference_and_simulation_on_every_isa() {
    let r = refs();
    for isa in isas() {
        let model = Model::from_bytes(blob()).unwrap().with_isa(isa).unwrap();
        let got = model.embed(&batch()).unwrap();
        let (mut min_ref, mut min_sim, mut worst_gap, mut mean_ref) =
            (1.0f32, 1.0f32, 0.0f32, 0.0f32);
        for i in 0..got.len() {
            let (c_ref, c_sim) = (cos(&got[i], &r.reference[i]), cos(&got[i], &r.simulated[i]));
            let sim_ref = cos(&r.simulated[i], &r.reference[i]);
            min_ref = min_ref.min(c_ref);
            min_sim = min_sim.min(c_sim);
            worst_gap = worst_gap.max((c_ref - sim_ref).abs());
            mean_ref += c_ref / got.len() as f32;
        }
        eprintln!(
            "{isa:?}: cos to sentence-transformers min {min_ref:.5} mean {mean_ref:.6}; \
                   to the numpy simulation min {min_sim:.7}; |gap| max {worst_gap:.2e}"
        );
        assert!(
            min_ref >= 0.99 && mean_ref >= 0.998,
            "{isa:?}: min {min_ref} mean {mean_ref}"
        );
        assert!(min_sim >= 0.9999, "{isa:?}: simulation cosine {min_sim}");
        assert!(worst_gap <= 1e-4, "{isa:?}: gap {worst_gap}");
    }
}

#[test]
fn isas_and_thread_counts_agree() {
    let sentences = batch();
    let base = Model::from_bytes(blob())
        .unwrap()
        .with_threads(1)
        .with_isa(Isa::Scalar)
        .unwrap();
    let want = base.embed(&sentences).unwrap();
    // Concurrent calls on one model (one gets the helpers, the others run alone).
    let model = Model::from_bytes(blob()).unwrap();
    std::thread::scope(|s| {
        for t in 0..3 {
            let (model, sentences, want) = (&model, &sentences, &want);
            s.spawn(move || {
                for i in (t..sentences.len()).step_by(5) {
                    close_one(
                        &model.embed(&[sentences[i]]).unwrap()[0],
                        &want[i],
                        &format!("concurrent {i}"),
                    );
                }
            });
        }
    });
    let close = |a: &[Embedding], what: &str| {
        for (x, y) in a.iter().zip(&want) {
            close_one(x, y, what);
        }
    };
    // One thread and three (the caller and two helpers); scalar on one thread is `want`.
    for isa in isas() {
        for threads in [1, 3] {
            if (isa, threads) == (Isa::Scalar, 1) {
                continue;
            }
            let model = Model::from_bytes(blob())
                .unwrap()
                .with_threads(threads)
                .with_isa(isa)
                .unwrap();
            // The whole batch (groups of sentences).
            close(
                &model.embed(&sentences).unwrap(),
                &format!("{isa:?} x{threads} batch"),
            );
            // One sentence at a time.
            for (i, s) in sentences.iter().enumerate().step_by(7) {
                let one = model.embed(&[s]).unwrap();
                close_one(
                    &one[0],
                    &want[i],
                    &format!("{isa:?} x{threads} sentence {i}"),
                );
            }
        }
    }
}

/// Paths agree up to f32 rounding: the integer sums are identical on every instruction set,
/// but the f32 steps differ slightly (vector widths, fused multiply-add in attention).
fn close_one(a: &Embedding, b: &Embedding, what: &str) {
    let diff = a
        .iter()
        .zip(b)
        .map(|(p, q)| (p - q).abs())
        .fold(0.0f32, f32::max);
    let c = cos(a, b);
    assert!(
        diff < 2e-4 && c > 0.999_99,
        "{what}: max abs diff {diff}, cosine {c}"
    );
}

#[test]
fn rejects_bad_input() {
    let model = Model::from_bytes(blob()).unwrap();
    assert_eq!(model.embed(&[]).unwrap().len(), 0);
    assert_eq!(
        model.embed(&[&[101, 102], &[]]),
        Err(Error::EmptyInput { index: 1 })
    );
    let long = vec![100u32; 257];
    assert_eq!(
        model.embed(&[&long]),
        Err(Error::TooLong {
            index: 0,
            len: 257,
            max: 256
        })
    );
    assert_eq!(
        model.embed(&[&[101, 30522, 102]]),
        Err(Error::UnknownToken {
            index: 0,
            token: 30522
        })
    );
    // The longest input works.
    let max = vec![1000u32; 256];
    assert_eq!(model.embed(&[&max]).unwrap().len(), 1);
}

#[test]
fn rejects_bad_blobs() {
    let good = blob();
    assert!(matches!(
        Model::from_bytes(&good[..100]),
        Err(Error::Format(_))
    ));
    assert!(matches!(
        Model::from_bytes(&good[..good.len() - 1]),
        Err(Error::Format(_))
    ));
    // `from_bytes` wants 'static bytes (the product embeds the blob): leak the test copies.
    let corrupt = |at: usize, bytes: &[u8]| -> &'static [u8] {
        let mut bad = good.to_vec();
        bad[at..at + bytes.len()].copy_from_slice(bytes);
        bad.leak()
    };
    assert!(matches!(
        Model::from_bytes(corrupt(0, b"X")),
        Err(Error::Format(_))
    ));
    assert_eq!(
        Model::from_bytes(corrupt(8, &[9])).err(),
        Some(Error::UnsupportedVersion(9))
    );
    // A tensor table entry pointing out of the file.
    assert!(matches!(
        Model::from_bytes(corrupt(128, &u64::MAX.to_le_bytes())),
        Err(Error::Format(_))
    ));
    // Unaligned input still loads (alignment is only for speed).
    let mut shifted = vec![0u8; good.len() + 1];
    shifted[1..].copy_from_slice(good);
    let m = Model::from_bytes(&shifted.leak()[1..]).unwrap();
    let e = m.embed(&[&[101, 7592, 102]]).unwrap();
    let want = Model::from_bytes(good)
        .unwrap()
        .embed(&[&[101, 7592, 102]])
        .unwrap();
    close_one(&e[0], &want[0], "unaligned blob");
}

#[test]
fn model_is_shareable() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Model>();
}
