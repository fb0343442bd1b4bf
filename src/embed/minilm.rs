//! The compiled-in transformer: all-MiniLM-L6-v2 as `ruchedb-minilm` runs it (int8
//! weights, runtime-dispatched SIMD kernels), tokenised by its own `tokenizer.json`.
//!
//! The default embedder of rules, scenarios and tools: a sentence-transformers quality
//! vector in a few milliseconds a query, with nothing to fetch. Its vectors match
//! sentence-transformers' to a cosine of at least 0.99 (see `crates/minilm/README.md`).

use std::fmt;
use std::sync::OnceLock;

use model2vec_tokenizers::{Tokenizer, TruncationParams, TruncationStrategy};

use crate::embed::Embedder;
use crate::error::{Error, ErrorKind};

/// Texts embedded per call of the model: it groups their word pieces itself and shares
/// the work between its threads.
const MODEL_BATCH: usize = 256;

/// An [`Embedder`] running the compiled-in all-MiniLM-L6-v2: 384 dimensions, model id
/// [`MiniLmEmbedder::MODEL_ID`], texts cut at 256 word pieces as sentence-transformers
/// does. A text that is empty or only whitespace gets the all-zero vector ("no vector").
///
/// Loading is cheap after the first time in a process (the model and its tokenizer are
/// parsed once, their weights stay in the binary's pages); the model keeps a helper
/// thread per extra core, which shares each query's layers with the caller.
///
/// # Example
///
/// ```
/// use ruchedb::{Embedder, MiniLmEmbedder};
///
/// let embedder = MiniLmEmbedder::bundled()?;
/// let texts = ["where is my parcel?", "track my order", "exchange rate for euros"];
/// let vectors = embedder.embed_batch(&texts)?;
/// let cosine = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
/// assert!(cosine(&vectors[0], &vectors[1]) > cosine(&vectors[0], &vectors[2]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy)]
pub struct MiniLmEmbedder {
    model: &'static ruchedb_minilm::Model,
    tokenizer: &'static Tokenizer,
}

impl MiniLmEmbedder {
    /// The model id an index records for it.
    pub const MODEL_ID: &'static str = "all-minilm-l6-v2-q8";

    /// The compiled-in model.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Embedder`] if the compiled-in files cannot be parsed, which a build
    /// whose tests pass never does.
    pub fn bundled() -> crate::Result<MiniLmEmbedder> {
        static TOKENIZER: OnceLock<Result<Tokenizer, String>> = OnceLock::new();
        let tokenizer = TOKENIZER
            .get_or_init(|| {
                let mut tokenizer = Tokenizer::from_bytes(ruchedb_minilm::TOKENIZER_JSON)
                    .map_err(|err| err.to_string())?;
                let max_length = ruchedb_minilm::MAX_TOKENS;
                tokenizer
                    .with_truncation(Some(TruncationParams {
                        max_length,
                        strategy: TruncationStrategy::LongestFirst,
                        ..TruncationParams::default()
                    }))
                    .map_err(|err| err.to_string())?;
                tokenizer.with_padding(None);
                Ok(tokenizer)
            })
            .as_ref()
            .map_err(|err| load_error(format!("the compiled-in tokenizer: {err}")))?;
        let model = ruchedb_minilm::bundled()
            .map_err(|err| load_error(format!("the compiled-in model: {err}")))?;
        Ok(MiniLmEmbedder { model, tokenizer })
    }
}

fn load_error(message: String) -> Error {
    Error::new(ErrorKind::Embedder { message })
}

impl Embedder for MiniLmEmbedder {
    fn model_id(&self) -> &str {
        MiniLmEmbedder::MODEL_ID
    }

    fn dimensions(&self) -> usize {
        ruchedb_minilm::DIM
    }

    fn embed_batch(&self, texts: &[&str]) -> crate::Result<Vec<Vec<f32>>> {
        let mut vectors = vec![vec![0.0; ruchedb_minilm::DIM]; texts.len()];
        // Texts of nothing but whitespace keep the all-zero vector (the bare `[CLS]
        // [SEP]` sentence-transformers would embed means nothing).
        let kept: Vec<usize> = (0..texts.len())
            .filter(|&i| !texts[i].trim().is_empty())
            .collect();
        for batch in kept.chunks(MODEL_BATCH) {
            let inputs: Vec<&str> = batch.iter().map(|&i| texts[i]).collect();
            let encodings = self
                .tokenizer
                .encode_batch_fast(inputs, true)
                .map_err(|err| load_error(format!("cannot tokenise the texts: {err}")))?;
            let ids: Vec<&[u32]> = encodings.iter().map(|e| e.get_ids()).collect();
            let embedded = self.model.embed(&ids).map_err(|err| {
                Error::new(ErrorKind::Embedder {
                    message: format!("the model failed: {err}"),
                })
            })?;
            for (&i, vector) in batch.iter().zip(embedded) {
                if !vector.iter().all(|x| x.is_finite()) {
                    return Err(Error::new(ErrorKind::Embedder {
                        message: "the model produced a non-finite vector component".into(),
                    }));
                }
                vectors[i] = vector.to_vec();
            }
        }
        Ok(vectors)
    }
}

impl fmt::Debug for MiniLmEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MiniLmEmbedder")
            .field("model_id", &MiniLmEmbedder::MODEL_ID)
            .field("isa", &self.model.isa())
            .field("threads", &self.model.threads())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 100 SciFact claims and sentence-transformers' vectors of them
    /// (`tests/fixtures/bert_parity_*`, see `src/embed/bert.rs`).
    const PARITY_QUERIES: &str = include_str!("../../tests/fixtures/bert_parity_queries.jsonl");
    const PARITY_VECTORS: &[u8] =
        include_bytes!("../../tests/fixtures/bert_parity_vectors.f32.npy");

    fn reference_vectors() -> Vec<Vec<f32>> {
        let bytes = PARITY_VECTORS;
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
        let header_len = usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
        bytes[10 + header_len..]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect::<Vec<f32>>()
            .chunks_exact(ruchedb_minilm::DIM)
            .map(<[f32]>::to_vec)
            .collect()
    }

    /// Text in, vector out, the tokenizer included: the compiled-in model's vectors are
    /// sentence-transformers' (cosine ≥ 0.99 each, 0.998 on average).
    #[test]
    fn matches_sentence_transformers() {
        let embedder = MiniLmEmbedder::bundled().unwrap();
        let texts: Vec<String> = PARITY_QUERIES
            .lines()
            .map(|line| {
                let value: serde_json::Value = serde_json::from_str(line).unwrap();
                value["text"].as_str().unwrap().to_string()
            })
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = embedder.embed_batch(&refs).unwrap();
        let expected = reference_vectors();
        assert_eq!(vectors.len(), expected.len());
        let cosines: Vec<f32> = vectors
            .iter()
            .zip(&expected)
            .map(|(a, b)| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>())
            .collect();
        let min = cosines.iter().copied().fold(f32::INFINITY, f32::min);
        let mean = cosines.iter().sum::<f32>() / cosines.len() as f32;
        assert!(min >= 0.99 && mean >= 0.998, "min {min}, mean {mean}");
        // One at a time gives the batch's vectors.
        let one = embedder.embed_batch(&[refs[7]]).unwrap();
        assert_eq!(one[0], vectors[7]);
    }

    #[test]
    fn cuts_long_texts_and_leaves_blank_ones_at_zero() {
        let embedder = MiniLmEmbedder::bundled().unwrap();
        let encoding = embedder.tokenizer.encode("hello world", true).unwrap();
        assert_eq!(encoding.get_ids(), [101, 7592, 2088, 102]);
        let long = "word ".repeat(400);
        let encoding = embedder.tokenizer.encode(long.as_str(), true).unwrap();
        assert_eq!(encoding.get_ids().len(), ruchedb_minilm::MAX_TOKENS);
        let vectors = embedder
            .embed_batch(&["hello world", "", "  ", &long])
            .unwrap();
        assert!(vectors[1].iter().chain(&vectors[2]).all(|&x| x == 0.0));
        for v in [&vectors[0], &vectors[3]] {
            let norm: f32 = v.iter().map(|x| x * x).sum();
            assert!((norm - 1.0).abs() < 1e-3, "{norm}");
        }
    }
}
