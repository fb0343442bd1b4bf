//! The default embedder: a static (model2vec) model distilled from all-MiniLM-L6-v2.
//!
//! A static model keeps one vector per WordPiece token; a text's vector is the mean of its
//! tokens' vectors, L2-normalised. There is no transformer at run time, so embedding costs
//! a tokenisation and a few table lookups. The bundled model lives in
//! `crates/minilm/model/minilm-static/` (its provenance:
//! `crates/minilm/model/minilm-static/PROVENANCE.md`; `scripts/distill_model.py` rebuilds
//! it) and is compiled into the binary with the `bundled-model` feature. Loading and
//! inference are `model2vec-rs`'s.

use std::fmt;
use std::path::Path;
#[cfg(feature = "bundled-model")]
use std::sync::OnceLock;

use model2vec_rs::model::StaticModel;
use rayon::prelude::*;

use crate::embed::Embedder;
use crate::error::{Error, ErrorKind};

/// The files of a model folder, in model2vec's layout.
const TOKENIZER_FILE: &str = "tokenizer.json";
const MODEL_FILE: &str = "model.safetensors";
const CONFIG_FILE: &str = "config.json";

/// Batches at least this long are embedded on the rayon thread pool.
const PARALLEL_BATCH_LEN: usize = 64;

/// The fingerprint ([`fingerprint`]) of the bundled model's three files, so that loading
/// its folder with [`StaticEmbedder::from_dir`] gives the same model id as
/// [`StaticEmbedder::bundled`]. A unit test checks it against the bundled bytes.
const BUNDLED_FINGERPRINT: u64 = 0xd398_d38b_8122_7928;

#[cfg(feature = "bundled-model")]
mod bundled {
    pub(super) use ruchedb_minilm::static_model::{CONFIG, MODEL, TOKENIZER};
}

/// An [`Embedder`] backed by a static model2vec model: tokens' vectors, mean pooled.
///
/// The default embedder of ruche is [`StaticEmbedder::bundled`], 256 dimensions, model id
/// `minilm-static-v1`. Texts are cut at 512 tokens. A text without any known token (empty,
/// only whitespace, only characters outside the vocabulary) embeds to the all-zero vector.
///
/// Cloning is cheap: clones share the model.
#[derive(Clone)]
pub struct StaticEmbedder {
    model: StaticModel,
    model_id: String,
}

impl StaticEmbedder {
    /// The model id of the bundled model (and of its folder loaded with
    /// [`StaticEmbedder::from_dir`]).
    pub const BUNDLED_MODEL_ID: &'static str = "minilm-static-v1";

    /// Loads the model compiled into the binary (the `bundled-model` feature, on by
    /// default). The model is parsed once per process; later calls share it.
    ///
    /// # Errors
    ///
    /// Returns [`ErrorKind::Embedder`] if the bundled files cannot be parsed, which a
    /// build whose tests pass never does.
    ///
    /// # Example
    ///
    /// ```
    /// use ruchedb::{Embedder, StaticEmbedder};
    ///
    /// let embedder = StaticEmbedder::bundled()?;
    /// let texts = ["my card still hasn't arrived", "card delivery", "exchange rate"];
    /// let vectors = embedder.embed_batch(&texts)?;
    /// let cosine = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    /// assert!(cosine(&vectors[0], &vectors[1]) > cosine(&vectors[0], &vectors[2]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "bundled-model")]
    pub fn bundled() -> crate::Result<StaticEmbedder> {
        static BUNDLED: OnceLock<StaticModel> = OnceLock::new();
        let model = match BUNDLED.get() {
            Some(model) => model.clone(),
            None => {
                let model = load(bundled::TOKENIZER, bundled::MODEL, bundled::CONFIG)
                    .map_err(|err| load_error("the bundled model", err))?;
                BUNDLED.get_or_init(|| model).clone()
            }
        };
        Ok(StaticEmbedder {
            model,
            model_id: StaticEmbedder::BUNDLED_MODEL_ID.to_owned(),
        })
    }

    /// Loads a model2vec model from a folder holding `tokenizer.json`,
    /// `model.safetensors` (tensor `embeddings`: float32, float16 or int8) and
    /// `config.json`, as `model2vec`'s `save_pretrained` writes them.
    ///
    /// The model id is [`StaticEmbedder::BUNDLED_MODEL_ID`] for a copy of the bundled
    /// model, and otherwise `static-` followed by 16 hex digits that fingerprint the three
    /// files, so it follows the model's content, not the folder's name.
    ///
    /// # Errors
    ///
    /// Returns [`ErrorKind::Embedder`] if a file is missing or unreadable (the I/O error
    /// is the source) or the files are not a model2vec model.
    pub fn from_dir(path: impl AsRef<Path>) -> crate::Result<StaticEmbedder> {
        let dir = path.as_ref();
        let read = |name: &str| {
            let file = dir.join(name);
            std::fs::read(&file).map_err(|err| {
                let message = format!("cannot read the model file {}", file.display());
                Error::with_source(ErrorKind::Embedder { message }, err)
            })
        };
        let tokenizer = read(TOKENIZER_FILE)?;
        let model_bytes = read(MODEL_FILE)?;
        let config = read(CONFIG_FILE)?;
        let model = load(&tokenizer, &model_bytes, &config)
            .and_then(|model| check_rows(&tokenizer, &model_bytes).map(|()| model))
            .map_err(|err| load_error(&format!("the static model in {}", dir.display()), err))?;
        let fingerprint = fingerprint(&[&tokenizer, &model_bytes, &config]);
        let model_id = if fingerprint == BUNDLED_FINGERPRINT {
            StaticEmbedder::BUNDLED_MODEL_ID.to_owned()
        } else {
            format!("static-{fingerprint:016x}")
        };
        Ok(StaticEmbedder { model, model_id })
    }

    fn embed_one(&self, text: &str) -> Vec<f32> {
        // `encode_single` cuts the text at 512 tokens and leaves a text without known tokens
        // at zero. A model with non-finite weights would give NaN: that becomes zero too.
        let mut vector = self.model.encode_single(text);
        if !vector.iter().all(|component| component.is_finite()) {
            vector.fill(0.0);
        }
        vector
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Parses a model from its three files; it always L2-normalises, whatever `config.json` says.
fn load(tokenizer: &[u8], model: &[u8], config: &[u8]) -> crate::Result<StaticModel, BoxError> {
    StaticModel::from_bytes(tokenizer, model, config, Some(true)).map_err(BoxError::from)
}

/// Checks that every token id the tokenizer can produce has a row in the embedding table
/// (or in the token mapping, when there is one): model2vec-rs would index past the table
/// and panic at embedding time otherwise.
fn check_rows(tokenizer: &[u8], model: &[u8]) -> crate::Result<(), BoxError> {
    let tokenizer: serde_json::Value = serde_json::from_slice(tokenizer)?;
    let vocab_ids = match &tokenizer["model"]["vocab"] {
        serde_json::Value::Object(vocab) => vocab.values().filter_map(|id| id.as_u64()).max(),
        // Unigram: a list of (token, score) pairs, the id being the position.
        serde_json::Value::Array(vocab) => vocab.len().checked_sub(1).map(|id| id as u64),
        _ => None,
    };
    let added_ids = tokenizer["added_tokens"]
        .as_array()
        .and_then(|added| added.iter().filter_map(|token| token["id"].as_u64()).max());
    let Some(max_id) = vocab_ids.max(added_ids) else {
        return Err("tokenizer.json has no vocabulary".into());
    };

    // A safetensors file starts with the length of its JSON header (u64, little-endian).
    let header_len = model
        .get(..8)
        .and_then(|bytes| bytes.try_into().ok())
        .map(u64::from_le_bytes)
        .and_then(|len| usize::try_from(len).ok())
        .ok_or("model.safetensors is truncated")?;
    let header = model
        .get(8..8 + header_len)
        .ok_or("model.safetensors is truncated")?;
    let header: serde_json::Value = serde_json::from_slice(header)?;
    let rows = |name: &str| header[name]["shape"][0].as_u64();
    let (rows, what) = match rows("mapping") {
        Some(rows) => (rows, "token mapping"),
        None => {
            let table = ["embeddings", "0", "embedding.weight"]
                .into_iter()
                .find_map(rows);
            (table.unwrap_or(0), "embedding table")
        }
    };
    if max_id >= rows {
        return Err(
            format!("the tokenizer has token id {max_id} but the {what} has {rows} rows").into(),
        );
    }
    Ok(())
}

fn load_error(what: &str, source: BoxError) -> Error {
    let message = format!("cannot load {what}");
    Error::with_source(ErrorKind::Embedder { message }, source)
}

/// 64-bit FNV-1a over the files, each followed by its length (stable across builds and
/// platforms, unlike `std`'s hashers).
fn fingerprint(files: &[&[u8]]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    for file in files {
        let len = u64::try_from(file.len()).unwrap_or(u64::MAX);
        for &byte in file.iter().chain(&len.to_le_bytes()) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(PRIME);
        }
    }
    hash
}

impl Embedder for StaticEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    /// The static model embeds faster than the cache could be read: never cached.
    fn cacheable(&self) -> bool {
        false
    }

    fn dimensions(&self) -> usize {
        self.model.dim()
    }

    fn embed_batch(&self, texts: &[&str]) -> crate::Result<Vec<Vec<f32>>> {
        let vectors = if texts.len() >= PARALLEL_BATCH_LEN {
            texts.par_iter().map(|text| self.embed_one(text)).collect()
        } else {
            texts.iter().map(|text| self.embed_one(text)).collect()
        };
        Ok(vectors)
    }
}

impl fmt::Debug for StaticEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticEmbedder")
            .field("model_id", &self.model_id)
            .field("dimensions", &self.model.dim())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn bundled_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/minilm/model/minilm-static")
    }

    /// The bundled model, or its folder when the `bundled-model` feature is off.
    fn model() -> StaticEmbedder {
        #[cfg(feature = "bundled-model")]
        let embedder = StaticEmbedder::bundled();
        #[cfg(not(feature = "bundled-model"))]
        let embedder = StaticEmbedder::from_dir(bundled_dir());
        embedder.unwrap()
    }

    fn embed(embedder: &StaticEmbedder, text: &str) -> Vec<f32> {
        embedder.embed_batch(&[text]).unwrap().pop().unwrap()
    }

    fn norm(vector: &[f32]) -> f32 {
        vector.iter().map(|x| x * x).sum::<f32>().sqrt()
    }

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn bundled_model_has_its_id_and_dimensions() {
        let embedder = model();
        assert_eq!(embedder.model_id(), "minilm-static-v1");
        assert_eq!(embedder.dimensions(), 256);
        assert_eq!(
            format!("{embedder:?}"),
            r#"StaticEmbedder { model_id: "minilm-static-v1", dimensions: 256 }"#
        );
    }

    /// The reference comes from Python: `model2vec` 0.10.0,
    /// `StaticModel.from_pretrained("crates/minilm/model/minilm-static")
    /// .encode(["I want my money back"])[0][:6]`.
    #[test]
    fn known_vector_matches_python_model2vec() {
        let expected = [
            -0.031_684_447,
            -0.322_125_2,
            0.089_772_6,
            -0.242_914_07,
            -0.147_860_74,
        ];
        let vector = embed(&model(), "I want my money back");
        assert_eq!(vector.len(), 256);
        for (idx, (got, want)) in vector.iter().zip(expected).enumerate() {
            assert!(
                (got - want).abs() < 1e-5,
                "component {idx}: {got} != {want}"
            );
        }
        assert!((norm(&vector) - 1.0).abs() < 1e-5);
    }

    #[track_caller]
    fn check_neighbours(query: &str, near: &str, far: &str) {
        let embedder = model();
        let vectors = embedder.embed_batch(&[query, near, far]).unwrap();
        let (near_score, far_score) = (
            cosine(&vectors[0], &vectors[1]),
            cosine(&vectors[0], &vectors[2]),
        );
        assert!(
            near_score > far_score + 0.05,
            "{query:?}: {near:?} scores {near_score}, {far:?} scores {far_score}"
        );
    }

    #[test]
    fn semantic_neighbours_rank_above_unrelated_text() {
        check_neighbours("I lost my wallet yesterday", "stolen card", "top up limits");
        check_neighbours(
            "my card still hasn't arrived",
            "card delivery",
            "exchange rate",
        );
        check_neighbours(
            "the app says my payment was declined",
            "declined card payment",
            "age limit",
        );
        check_neighbours("I want my money back", "refund request", "card arrival");
    }

    #[test]
    fn nothing_to_embed_gives_the_zero_vector() {
        let embedder = model();
        for text in ["", "   \n\t", "🦀", "😀 🦀 ℵ"] {
            let vector = embed(&embedder, text);
            assert_eq!(vector.len(), 256, "{text:?}");
            assert!(
                vector.iter().all(|&x| x == 0.0),
                "{text:?} embeds to {vector:?}"
            );
        }
        assert_eq!(embedder.embed_batch(&[]).unwrap(), Vec::<Vec<f32>>::new());
    }

    #[test]
    fn vectors_are_normalised_and_deterministic() {
        let embedder = model();
        // Long enough to go through the parallel path, with repeats and an empty text.
        let texts: Vec<String> = (0..200)
            .map(|idx| match idx % 4 {
                0 => String::new(),
                1 => format!("transfer number {idx} has not arrived"),
                2 => "card payment declined".to_owned(),
                _ => "x ".repeat(idx * 10),
            })
            .collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let batch = embedder.embed_batch(&texts).unwrap();
        assert_eq!(batch.len(), texts.len());
        for (text, vector) in texts.iter().zip(&batch) {
            assert_eq!(vector, &embed(&embedder, text), "{text:?}");
            if !text.is_empty() {
                assert!((norm(vector) - 1.0).abs() < 1e-5, "{text:?}");
            }
        }
        assert_eq!(batch, embedder.embed_batch(&texts).unwrap());
    }

    #[test]
    fn folder_loads_like_the_bundled_model() {
        let from_dir = StaticEmbedder::from_dir(bundled_dir()).unwrap();
        assert_eq!(from_dir.model_id(), StaticEmbedder::BUNDLED_MODEL_ID);
        assert_eq!(from_dir.dimensions(), 256);
        let text = "How do I top up by bank transfer?";
        assert_eq!(embed(&from_dir, text), embed(&model(), text));
    }

    #[cfg(feature = "bundled-model")]
    #[test]
    fn fingerprint_of_the_bundled_files_is_pinned() {
        let files = [bundled::TOKENIZER, bundled::MODEL, bundled::CONFIG];
        assert_eq!(fingerprint(&files), BUNDLED_FINGERPRINT);
    }

    #[test]
    fn other_models_get_a_content_id() {
        assert_eq!(fingerprint(&[]), 0xcbf2_9ce4_8422_2325);
        assert_ne!(fingerprint(&[b"ab", b""]), fingerprint(&[b"a", b"b"]));
        // A copy of the folder with another config.json is another model.
        let dir = tempfile::tempdir().unwrap();
        for name in [TOKENIZER_FILE, MODEL_FILE] {
            std::fs::copy(bundled_dir().join(name), dir.path().join(name)).unwrap();
        }
        std::fs::write(dir.path().join(CONFIG_FILE), br#"{"normalize": true}"#).unwrap();
        let embedder = StaticEmbedder::from_dir(dir.path()).unwrap();
        assert!(
            embedder.model_id().starts_with("static-"),
            "{}",
            embedder.model_id()
        );
        assert_eq!(embedder.model_id().len(), "static-".len() + 16);
    }

    #[test]
    fn missing_or_broken_files_are_embedder_errors() {
        let dir = tempfile::tempdir().unwrap();
        let err = StaticEmbedder::from_dir(dir.path()).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Embedder { .. }), "{err:?}");
        assert!(err.to_string().contains("tokenizer.json"), "{err}");
        assert!(std::error::Error::source(&err).is_some());

        for name in [TOKENIZER_FILE, MODEL_FILE, CONFIG_FILE] {
            std::fs::write(dir.path().join(name), b"not a model").unwrap();
        }
        let err = StaticEmbedder::from_dir(dir.path()).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Embedder { .. }), "{err:?}");
        assert!(
            err.to_string()
                .starts_with("embedder error: cannot load the static model in")
        );
    }

    #[test]
    fn tokenizer_larger_than_the_table_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        for name in [MODEL_FILE, CONFIG_FILE] {
            std::fs::copy(bundled_dir().join(name), dir.path().join(name)).unwrap();
        }
        let tokenizer = std::fs::read_to_string(bundled_dir().join(TOKENIZER_FILE)).unwrap();
        let mut tokenizer: serde_json::Value = serde_json::from_str(&tokenizer).unwrap();
        tokenizer["model"]["vocab"]["zzzunseen"] = serde_json::json!(29_525);
        std::fs::write(dir.path().join(TOKENIZER_FILE), tokenizer.to_string()).unwrap();
        let err = StaticEmbedder::from_dir(dir.path()).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Embedder { .. }), "{err:?}");
        let source = std::error::Error::source(&err).unwrap().to_string();
        assert_eq!(
            source,
            "the tokenizer has token id 29525 but the embedding table has 29525 rows"
        );
    }

    #[test]
    fn embedder_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<StaticEmbedder>();
    }
}
