//! The full-transformer embedder: a sentence-transformers BERT model run on the CPU with
//! candle.
//!
//! [`BertEmbedder`] loads a sentence-transformers model directory (`config.json`,
//! `tokenizer.json`, `model.safetensors`) and embeds the way sentence-transformers does
//! for models such as all-MiniLM-L6-v2: the tokens (at most 256, longer texts are
//! truncated) run through the encoder, the last hidden states are averaged over the
//! attention mask, and the mean is L2-normalised. Texts are embedded in batches of similar
//! length, padded to the longest text of their batch.

use std::fmt;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{Encoding, Tokenizer, TruncationParams};

use crate::embed::Embedder;
use crate::error::{Error, ErrorKind};

/// The longest token sequence the model sees, special tokens included (the
/// `max_seq_length` of sentence-transformers' all-MiniLM-L6-v2); longer texts are cut.
const MAX_SEQUENCE_LENGTH: usize = 256;

/// The most texts run through the model at once.
const MAX_BATCH_TEXTS: usize = 32;

/// The most tokens, padding included, run through the model at once. It bounds the memory
/// of a batch of long texts (the attention scores grow with the square of the length).
const MAX_BATCH_TOKENS: usize = 4096;

/// An [`Embedder`] running a sentence-transformers BERT model (such as all-MiniLM-L6-v2)
/// with candle, on the CPU.
///
/// Vectors match sentence-transformers' (cosine ≥ 0.999): mean pooling over the attention
/// mask, then L2 normalisation. A text that is empty or only whitespace gets the all-zero
/// vector ("no vector"); any other text gets a unit vector.
///
/// Available with the `bert` cargo feature. `scripts/fetch_bert_model.sh` unpacks
/// all-MiniLM-L6-v2 into `target/models/all-MiniLM-L6-v2`.
///
/// # Example
///
/// ```no_run
/// use ruchedb::{BertEmbedder, Embedder};
///
/// let embedder = BertEmbedder::from_dir("target/models/all-MiniLM-L6-v2")?;
/// let vectors = embedder.embed_batch(&["I want my money back", ""])?;
/// assert_eq!(vectors[0].len(), embedder.dimensions());
/// assert!(vectors[1].iter().all(|&component| component == 0.0));
/// # Ok::<(), ruchedb::Error>(())
/// ```
pub struct BertEmbedder {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    model_id: String,
    dimensions: usize,
    pad_token_id: u32,
}

impl BertEmbedder {
    /// Loads the sentence-transformers model in `dir`.
    ///
    /// The directory holds `config.json` (a BERT configuration), `tokenizer.json` and
    /// `model.safetensors` (weight names with or without a `bert.` prefix). When
    /// `1_Pooling/config.json` is present it must select mean pooling. The model id is
    /// `bert:` followed by the directory's name, for example `bert:all-MiniLM-L6-v2`, so
    /// the same model keeps its id wherever its directory is moved.
    ///
    /// # Errors
    ///
    /// Returns [`ErrorKind::Embedder`] when a file is missing or unreadable, when the
    /// configuration is not a BERT one, when the weights do not match it, or when the model
    /// does not use mean pooling.
    pub fn from_dir(dir: impl AsRef<Path>) -> crate::Result<BertEmbedder> {
        let dir = dir.as_ref();
        let dir = dir.canonicalize().map_err(|err| {
            embedder_error(
                format!("cannot open model directory {}", dir.display()),
                err,
            )
        })?;

        let config_path = dir.join("config.json");
        let config_text = std::fs::read_to_string(&config_path)
            .map_err(|err| embedder_error(format!("cannot read {}", config_path.display()), err))?;
        let config: Config = serde_json::from_str(&config_text).map_err(|err| {
            embedder_error(
                format!("{} is not a BERT configuration", config_path.display()),
                err,
            )
        })?;
        check_pooling(&dir)?;

        let tokenizer_path = dir.join("tokenizer.json");
        let mut tokenizer = Tokenizer::from_file(&tokenizer_path).map_err(|err| {
            embedder_error(format!("cannot load {}", tokenizer_path.display()), err)
        })?;
        // The tokenizer.json of sentence-transformers models often pads and truncates to
        // a fixed length of its own: we pad each batch ourselves, and cut at the model's
        // sequence length.
        let max_length = MAX_SEQUENCE_LENGTH.min(config.max_position_embeddings);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length,
                ..TruncationParams::default()
            }))
            .map_err(|err| {
                embedder_error(format!("cannot truncate to {max_length} tokens"), err)
            })?;
        tokenizer.with_padding(None);

        let weights_path = dir.join("model.safetensors");
        let weights = std::fs::read(&weights_path).map_err(|err| {
            embedder_error(format!("cannot read {}", weights_path.display()), err)
        })?;
        let device = Device::Cpu;
        let load_error =
            |err| embedder_error(format!("cannot load {}", weights_path.display()), err);
        let var_builder = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(load_error)?;
        // sentence-transformers saves the bare `BertModel` (`embeddings.*`, `encoder.*`);
        // checkpoints of a task model put it under `bert.`.
        let var_builder = if var_builder.contains_tensor("embeddings.word_embeddings.weight") {
            var_builder
        } else if var_builder.contains_tensor("bert.embeddings.word_embeddings.weight") {
            var_builder.pp("bert")
        } else {
            return Err(Error::new(ErrorKind::Embedder {
                message: format!(
                    "{} has no BERT weights (no `embeddings.word_embeddings.weight`)",
                    weights_path.display()
                ),
            }));
        };
        let model = BertModel::load(var_builder, &config).map_err(load_error)?;

        let dir_name = dir
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|| "model".to_owned());
        Ok(BertEmbedder {
            model,
            tokenizer,
            device,
            model_id: format!("bert:{dir_name}"),
            dimensions: config.hidden_size,
            pad_token_id: u32::try_from(config.pad_token_id).unwrap_or(0),
        })
    }

    /// Embeds one batch of encodings of similar lengths, padded to the longest.
    fn embed_encodings(&self, encodings: &[&Encoding]) -> candle_core::Result<Vec<Vec<f32>>> {
        let n_texts = encodings.len();
        let max_len = encodings
            .iter()
            .map(|encoding| encoding.len())
            .max()
            .unwrap_or(0);
        let mut input_ids = Vec::with_capacity(n_texts * max_len);
        let mut type_ids = Vec::with_capacity(n_texts * max_len);
        let mut attention_mask = Vec::with_capacity(n_texts * max_len);
        for encoding in encodings {
            let n_padding = max_len - encoding.len();
            input_ids.extend_from_slice(encoding.get_ids());
            input_ids.extend(std::iter::repeat_n(self.pad_token_id, n_padding));
            type_ids.extend_from_slice(encoding.get_type_ids());
            type_ids.extend(std::iter::repeat_n(0, n_padding));
            attention_mask.extend_from_slice(encoding.get_attention_mask());
            attention_mask.extend(std::iter::repeat_n(0, n_padding));
        }
        let shape = (n_texts, max_len);
        let input_ids = Tensor::from_vec(input_ids, shape, &self.device)?;
        let type_ids = Tensor::from_vec(type_ids, shape, &self.device)?;
        let attention_mask = Tensor::from_vec(attention_mask, shape, &self.device)?;

        // [texts, tokens, hidden]
        let hidden = self
            .model
            .forward(&input_ids, &type_ids, Some(&attention_mask))?;
        // Mean over the real tokens, as sentence-transformers' `Pooling` does (it clamps
        // the token count at 1e-9 and the norm at 1e-12).
        let mask = attention_mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let n_tokens = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?;
        let mean = summed.broadcast_div(&n_tokens)?;
        let norm = mean
            .sqr()?
            .sum_keepdim(1)?
            .sqrt()?
            .clamp(1e-12f32, f32::MAX)?;
        mean.broadcast_div(&norm)?.to_vec2::<f32>()
    }
}

impl Embedder for BertEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn embed_batch(&self, texts: &[&str]) -> crate::Result<Vec<Vec<f32>>> {
        let mut vectors = vec![vec![0.0; self.dimensions]; texts.len()];
        // Texts with nothing but whitespace keep the all-zero vector. (sentence-transformers
        // would embed the bare `[CLS] [SEP]`, a vector that means nothing.)
        let text_indices: Vec<usize> = (0..texts.len())
            .filter(|&text_idx| !texts[text_idx].trim().is_empty())
            .collect();
        if text_indices.is_empty() {
            return Ok(vectors);
        }
        let inputs: Vec<&str> = text_indices
            .iter()
            .map(|&text_idx| texts[text_idx])
            .collect();
        let encodings = self
            .tokenizer
            .encode_batch_fast(inputs, true)
            .map_err(|err| embedder_error("cannot tokenise the texts", err))?;

        // Batches of similar lengths waste little work on padding.
        let mut order: Vec<usize> = (0..encodings.len()).collect();
        order.sort_by_key(|&encoding_idx| encodings[encoding_idx].len());
        let mut batch_start = 0;
        while batch_start < order.len() {
            // The lengths ascend, so the last text of a batch is its longest.
            let mut batch_end = batch_start + 1;
            while batch_end < order.len()
                && batch_end - batch_start < MAX_BATCH_TEXTS
                && (batch_end - batch_start + 1) * encodings[order[batch_end]].len()
                    <= MAX_BATCH_TOKENS
            {
                batch_end += 1;
            }
            let batch = &order[batch_start..batch_end];
            let batch_encodings: Vec<&Encoding> = batch
                .iter()
                .map(|&encoding_idx| &encodings[encoding_idx])
                .collect();
            let batch_vectors = self
                .embed_encodings(&batch_encodings)
                .map_err(|err| embedder_error("the model failed", err))?;
            for (&encoding_idx, vector) in batch.iter().zip(batch_vectors) {
                if vector.iter().any(|component| !component.is_finite()) {
                    return Err(Error::new(ErrorKind::Embedder {
                        message: "the model produced a non-finite vector component".to_owned(),
                    }));
                }
                vectors[text_indices[encoding_idx]] = vector;
            }
            batch_start = batch_end;
        }
        Ok(vectors)
    }
}

impl fmt::Debug for BertEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BertEmbedder")
            .field("model_id", &self.model_id)
            .field("dimensions", &self.dimensions)
            .finish_non_exhaustive()
    }
}

/// Fails unless the sentence-transformers pooling configuration, when there is one, asks
/// for mean pooling (the only pooling implemented).
fn check_pooling(dir: &Path) -> crate::Result<()> {
    let pooling_path = dir.join("1_Pooling").join("config.json");
    let Ok(pooling_text) = std::fs::read_to_string(&pooling_path) else {
        return Ok(());
    };
    let pooling: serde_json::Value = serde_json::from_str(&pooling_text)
        .map_err(|err| embedder_error(format!("cannot parse {}", pooling_path.display()), err))?;
    if pooling.get("pooling_mode_mean_tokens") == Some(&serde_json::Value::Bool(false)) {
        return Err(Error::new(ErrorKind::Embedder {
            message: format!(
                "{} does not select mean pooling, the only pooling supported",
                pooling_path.display()
            ),
        }));
    }
    Ok(())
}

/// An [`ErrorKind::Embedder`] error with its cause.
fn embedder_error(
    message: impl Into<String>,
    source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
) -> Error {
    Error::with_source(
        ErrorKind::Embedder {
            message: message.into(),
        },
        source,
    )
}

#[cfg(test)]
mod tests {
    //! The model is not in the repository: `scripts/fetch_bert_model.sh` unpacks it, and
    //! `RUCHE_BERT_MODEL_DIR` names its directory. These tests are compiled only with the
    //! `bert` feature, and then they fail rather than skip when the model is missing.
    //!
    //! Parity fixtures, from `../shared/eval/scifact/` of the evaluation data:
    //! `tests/fixtures/bert_parity_queries.jsonl` holds the first 100 lines of
    //! `queries.train.jsonl` (`{"_id", "text"}`), and
    //! `tests/fixtures/bert_parity_vectors.f32.npy` the first 100 rows of
    //! `minilm_queries.train.f32.npy`: sentence-transformers' all-MiniLM-L6-v2 vectors of
    //! those texts (`.npy` version 1, little-endian f32, shape (100, 384)).

    use super::*;

    const PARITY_QUERIES: &str = include_str!("../../tests/fixtures/bert_parity_queries.jsonl");
    const PARITY_VECTORS: &[u8] =
        include_bytes!("../../tests/fixtures/bert_parity_vectors.f32.npy");

    /// Loads the model named by `RUCHE_BERT_MODEL_DIR`, failing loudly without it.
    fn load_model() -> BertEmbedder {
        let Some(dir) = std::env::var_os("RUCHE_BERT_MODEL_DIR") else {
            panic!(
                "RUCHE_BERT_MODEL_DIR is not set: the `bert` tests need the all-MiniLM-L6-v2 \
                 model; run `export RUCHE_BERT_MODEL_DIR=\"$(scripts/fetch_bert_model.sh)\"`"
            );
        };
        let dir = Path::new(&dir);
        assert!(
            dir.join("model.safetensors").is_file(),
            "RUCHE_BERT_MODEL_DIR={} has no model.safetensors: run \
             `scripts/fetch_bert_model.sh {}`",
            dir.display(),
            dir.display()
        );
        BertEmbedder::from_dir(dir)
            .unwrap_or_else(|err| panic!("cannot load the model in {}: {err:?}", dir.display()))
    }

    /// Reads a `.npy` (version 1, little-endian f32, two dimensions) into rows.
    fn read_npy_rows(bytes: &[u8], n_columns: usize) -> Vec<Vec<f32>> {
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00", "not a version 1 .npy");
        let header_len = usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
        let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
        assert!(
            header.contains("'descr': '<f4'"),
            "not little-endian f32: {header}"
        );
        let components: Vec<f32> = bytes[10 + header_len..]
            .chunks_exact(4)
            .map(|chunk| f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
            .collect();
        components
            .chunks_exact(n_columns)
            .map(<[f32]>::to_vec)
            .collect()
    }

    fn cosine(left: &[f32], right: &[f32]) -> f32 {
        let dot: f32 = left.iter().zip(right).map(|(l, r)| l * r).sum();
        let left_norm = left.iter().map(|l| l * l).sum::<f32>().sqrt();
        let right_norm = right.iter().map(|r| r * r).sum::<f32>().sqrt();
        dot / (left_norm * right_norm)
    }

    #[track_caller]
    fn check_unit_vector(vector: &[f32], dimensions: usize) {
        assert_eq!(vector.len(), dimensions);
        let norm = vector.iter().map(|c| c * c).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
    }

    #[test]
    fn matches_sentence_transformers() {
        let embedder = load_model();
        assert_eq!(embedder.dimensions(), 384);
        let texts: Vec<String> = PARITY_QUERIES
            .lines()
            .map(|line| {
                let query: serde_json::Value = serde_json::from_str(line).unwrap();
                query["text"].as_str().unwrap().to_owned()
            })
            .collect();
        let expected = read_npy_rows(PARITY_VECTORS, embedder.dimensions());
        assert_eq!(texts.len(), 100);
        assert_eq!(expected.len(), 100);

        let text_refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = embedder.embed_batch(&text_refs).unwrap();
        let cosines: Vec<f32> = vectors
            .iter()
            .zip(&expected)
            .map(|(got, want)| cosine(got, want))
            .collect();
        let min_cosine = cosines.iter().copied().fold(f32::INFINITY, f32::min);
        let mean_cosine = cosines.iter().sum::<f32>() / cosines.len() as f32;
        eprintln!(
            "parity over {} queries: min cosine {min_cosine:.7}, mean {mean_cosine:.7}",
            cosines.len()
        );
        for ((text, vector), cosine) in texts.iter().zip(&vectors).zip(&cosines) {
            check_unit_vector(vector, 384);
            assert!(*cosine >= 0.999, "cosine {cosine} < 0.999 for {text:?}");
        }
    }

    #[test]
    fn batched_and_single_embeddings_agree() {
        let embedder = load_model();
        let long_text = "a sentence long enough to be truncated at the model's limit ".repeat(40);
        let texts = [
            "I want my money back",
            "How do I reset my password?",
            "",
            "refund",
            long_text.as_str(),
            "   ",
            "Die Katze sitzt auf der Matte.",
            "0-dimensional biomaterials lack inductive properties.",
        ];
        let batched = embedder.embed_batch(&texts).unwrap();
        assert_eq!(batched.len(), texts.len());
        for (text, batched_vector) in texts.iter().zip(&batched) {
            let single = embedder.embed_batch(&[text]).unwrap().remove(0);
            if text.trim().is_empty() {
                assert_eq!(&single, batched_vector);
                continue;
            }
            check_unit_vector(&single, embedder.dimensions());
            let max_difference = single
                .iter()
                .zip(batched_vector)
                .map(|(s, b)| (s - b).abs())
                .fold(0.0f32, f32::max);
            assert!(
                max_difference < 1e-4,
                "{text:?}: batched and single differ by {max_difference}"
            );
        }
        assert!(embedder.embed_batch(&[]).unwrap().is_empty());
    }

    #[test]
    fn empty_text_is_the_zero_vector() {
        let embedder = load_model();
        let vectors = embedder.embed_batch(&["", " \n\t", "x"]).unwrap();
        assert_eq!(vectors[0], vec![0.0; 384]);
        assert_eq!(vectors[1], vec![0.0; 384]);
        assert!(vectors[2].iter().all(|c| c.is_finite()));
        check_unit_vector(&vectors[2], 384);
    }

    #[test]
    fn model_id_names_the_directory() {
        let embedder = load_model();
        let dir = std::env::var_os("RUCHE_BERT_MODEL_DIR").unwrap();
        let dir_name = Path::new(&dir).canonicalize().unwrap();
        let dir_name = dir_name.file_name().unwrap().to_string_lossy();
        assert_eq!(embedder.model_id(), format!("bert:{dir_name}"));
    }

    #[test]
    fn missing_directory_is_an_embedder_error() {
        let err = BertEmbedder::from_dir("/nonexistent/ruche-bert-model").unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Embedder { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "embedder error: cannot open model directory /nonexistent/ruche-bert-model"
        );
    }
}
