//! Counting tokens as a language model does, for budgets: how much of a prompt the hits a
//! search returns take.
//!
//! The tokenizer is OpenAI's `o200k_base` (GPT-4o and later, through `tiktoken-rs`),
//! loaded the first time a budget is counted (about 0.15 s), then shared. Other models'
//! tokenizers differ by a few percent on English text: leave a margin.

use std::sync::OnceLock;

/// The token encoding budgets are counted in (an LLM's, not the BM25 analysis).
pub const TOKEN_ENCODING: &str = "o200k_base";

/// The encoding itself (loaded once), for whoever counts sizes in it.
pub(crate) fn encoder() -> &'static tiktoken_rs::CoreBPE {
    static ENCODER: OnceLock<tiktoken_rs::CoreBPE> = OnceLock::new();
    ENCODER
        .get_or_init(|| tiktoken_rs::o200k_base().expect("the bundled o200k_base encoding loads"))
}

/// The number of tokens of `text` ([`TOKEN_ENCODING`]).
///
/// # Example
///
/// ```
/// assert_eq!(ruchedb::count_tokens("hello world"), 2);
/// assert_eq!(ruchedb::count_tokens(""), 0);
/// ```
pub fn count_tokens(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    encoder().encode_ordinary(text).len()
}

/// How many segments' counts [`count_segment`] keeps before it starts over.
const SEGMENTS_KEPT: usize = 16_384;

/// [`count_tokens`] of a segment of a rendered block, remembered: an agent's rules, tools
/// and memories come back turn after turn, and counting is most of a turn's rendering.
pub(crate) fn count_segment(segment: &str) -> usize {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static COUNTS: OnceLock<Mutex<HashMap<String, usize>>> = OnceLock::new();
    let counts = COUNTS.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(&count) = counts
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(segment)
    {
        return count;
    }
    let count = count_tokens(segment);
    let mut counts = counts.lock().unwrap_or_else(|p| p.into_inner());
    if counts.len() >= SEGMENTS_KEPT {
        counts.clear();
    }
    counts.insert(segment.to_string(), count);
    count
}
