//! Latency and throughput of the embedded model (build with `--release`, no target-cpu:
//! the kernels dispatch at run time).
//!
//!   bench cold  [IDS]        first call in a fresh process (page faults on the weights)
//!   bench query [IDS] [N]    one 20-word query: p50/p99 over N runs, per ISA and thread count
//!   bench batch [IDS] [N]    N tool descriptions in one call, texts/s
//!   bench spawn [IDS]        cost of std::thread::scope + one spawn, and of a query whose
//!                            helper thread is started for the call (vs the persistent pool)
//!
//! IDS: token ids written by scripts/dump_ids.py (default scripts/out/bench_ids.bin): the query first,
//! then the tool descriptions.

use std::time::{Duration, Instant};

use ruchedb_minilm::{Aligned, Isa, Model};

// The blob build.rs joins from its parts.
static BLOB: &Aligned<[u8]> = &Aligned(*include_bytes!(concat!(
    env!("OUT_DIR"),
    "/all-MiniLM-L6-v2.q8.bin"
)));

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map_or("query", |s| s.as_str());
    let ids_path = args
        .get(2)
        .filter(|s| !s.is_empty())
        .cloned()
        .unwrap_or_else(|| {
            concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/out/bench_ids.bin").into()
        });
    let n_arg = args.get(3).and_then(|s| s.parse::<usize>().ok());
    if mode == "spawn" {
        spawn_cost();
        // A fresh model per call: its helper is spawned for the call and joined after it,
        // as with std::thread::scope (plus the blob parse, timed separately).
        let ids = read_ids(&ids_path);
        let runs = n_arg.unwrap_or(300);
        let (mut parse, mut total) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let t = Instant::now();
            drop(Model::from_bytes(&BLOB.0).expect("blob"));
            parse.push(t.elapsed());
            let t = Instant::now();
            let model = Model::from_bytes(&BLOB.0).expect("blob");
            std::hint::black_box(model.embed(&[&ids[0]]).expect("embed"));
            drop(model);
            total.push(t.elapsed());
        }
        parse.sort();
        total.sort();
        println!(
            "fresh model per call (helper spawned and joined) + query x{}: p50 {:.3} ms  p99 {:.3} ms; \
             model without query: p50 {:.3} ms",
            Model::from_bytes(&BLOB.0).expect("blob").threads(),
            ms(total[runs / 2]),
            ms(total[runs * 99 / 100]),
            ms(parse[runs / 2])
        );
        return;
    }
    if mode == "cold" {
        // Time before anything touches the blob's pages.
        let t0 = Instant::now();
        let model = Model::from_bytes(&BLOB.0).expect("blob");
        let t1 = Instant::now();
        let ids = read_ids(&ids_path);
        let t2 = Instant::now();
        let e = model.embed(&[&ids[0]]).expect("embed");
        let t3 = Instant::now();
        let _ = model.embed(&[&ids[0]]).expect("embed");
        let t4 = Instant::now();
        println!(
            "cold: from_bytes {:.3} ms, first embed ({} tokens) {:.3} ms, second {:.3} ms  [e0={:.4}]",
            ms(t1 - t0),
            ids[0].len(),
            ms(t3 - t2),
            ms(t4 - t3),
            e[0][0]
        );
        return;
    }
    let ids = read_ids(&ids_path);
    let base = Model::from_bytes(&BLOB.0).expect("blob");
    println!(
        "isa detected: {:?}, threads available: {}, load average: {}",
        base.isa(),
        base.threads(),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    // BENCH_ISA=avx512|avx2|scalar and BENCH_THREADS=N restrict the runs (for profiling).
    let isa_filter = std::env::var("BENCH_ISA")
        .unwrap_or_default()
        .to_lowercase();
    let isas: Vec<Isa> = [Isa::Avx512, Isa::Avx2, Isa::Scalar]
        .into_iter()
        .filter(|i| {
            i.is_supported()
                && (isa_filter.is_empty() || format!("{i:?}").to_lowercase() == isa_filter)
        })
        .collect();
    let thread_counts: Vec<usize> = match std::env::var("BENCH_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(n) => vec![n],
        None => vec![1, 2],
    };
    match mode {
        "query" => {
            let runs = n_arg.unwrap_or(1000);
            let query: &[u32] = &ids[0];
            for &isa in &isas {
                for &threads in &thread_counts {
                    let model = Model::from_bytes(&BLOB.0)
                        .unwrap()
                        .with_isa(isa)
                        .unwrap()
                        .with_threads(threads);
                    let runs = if isa == Isa::Scalar { runs / 10 } else { runs };
                    for _ in 0..20 {
                        model.embed(&[query]).unwrap();
                    }
                    let mut times: Vec<Duration> = (0..runs)
                        .map(|_| {
                            let t = Instant::now();
                            std::hint::black_box(model.embed(&[query]).unwrap());
                            t.elapsed()
                        })
                        .collect();
                    times.sort();
                    println!(
                        "query {} tokens  {:>6?} x{}: p50 {:.3} ms  p99 {:.3} ms  min {:.3} ms  ({} runs)",
                        query.len(),
                        isa,
                        threads,
                        ms(times[runs / 2]),
                        ms(times[runs * 99 / 100]),
                        ms(times[0]),
                        runs,
                    );
                }
            }
        }
        "batch" => {
            let n = n_arg.unwrap_or(2000).min(ids.len() - 1);
            let texts: Vec<&[u32]> = ids[1..=n].iter().map(|v| v.as_slice()).collect();
            let tokens: usize = texts.iter().map(|t| t.len()).sum();
            for &isa in isas.iter().filter(|&&i| i != Isa::Scalar) {
                for &threads in thread_counts.iter().rev() {
                    let model = Model::from_bytes(&BLOB.0)
                        .unwrap()
                        .with_isa(isa)
                        .unwrap()
                        .with_threads(threads);
                    model.embed(&texts[..50]).unwrap();
                    let t = Instant::now();
                    std::hint::black_box(model.embed(&texts).unwrap());
                    let s = t.elapsed().as_secs_f64();
                    println!(
                        "batch {n} texts ({tokens} tokens)  {isa:>6?} x{threads}: {:.2} s, {:.0} texts/s, {:.0} tokens/s",
                        s,
                        n as f64 / s,
                        tokens as f64 / s
                    );
                }
            }
        }
        _ => eprintln!("unknown mode {mode}; see the source for usage"),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn spawn_cost() {
    let runs = 2000;
    let t = Instant::now();
    for _ in 0..runs {
        std::thread::scope(|s| {
            s.spawn(|| std::hint::black_box(1));
        });
    }
    println!(
        "thread::scope + 1 spawn + join: {:.1} us each",
        t.elapsed().as_secs_f64() * 1e6 / runs as f64
    );
}

fn read_ids(path: &str) -> Vec<Vec<u32>> {
    let bytes =
        std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e} (run scripts/dump_ids.py)"));
    assert_eq!(&bytes[..8], b"MLMIDS01", "{path}: not an id file");
    let word = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
    let count = word(8) as usize;
    let mut at = 16;
    (0..count)
        .map(|_| {
            let n = word(at) as usize;
            let v = (0..n).map(|i| word(at + 4 + 4 * i)).collect();
            at += 4 + 4 * n;
            v
        })
        .collect()
}
