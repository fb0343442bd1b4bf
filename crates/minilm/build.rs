//! Joins the model blob's parts (`model/all-MiniLM-L6-v2.q8.bin.{0,1,2}`, each under
//! 8 MB so that no file of the repository or of a published crate is large) into one
//! file in `OUT_DIR`, which `src/lib.rs` embeds with `include_bytes!`.

use std::path::PathBuf;

const PARTS: usize = 3;

fn main() {
    if std::env::var_os("CARGO_FEATURE_BUNDLED").is_none() {
        return;
    }
    let model = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap()).join("model");
    let mut blob = Vec::new();
    for part in 0..PARTS {
        let path = model.join(format!("all-MiniLM-L6-v2.q8.bin.{part}"));
        println!("cargo::rerun-if-changed={}", path.display());
        let bytes = std::fs::read(&path).unwrap_or_else(|err| {
            panic!("{}: {err} (scripts/make_blob.py writes it)", path.display())
        });
        blob.extend_from_slice(&bytes);
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap()).join("all-MiniLM-L6-v2.q8.bin");
    // Written only when it changed: the file's time is what reruns the embedding.
    if std::fs::read(&out).ok().as_deref() != Some(blob.as_slice()) {
        std::fs::write(&out, &blob).unwrap_or_else(|err| panic!("{}: {err}", out.display()));
    }
}
