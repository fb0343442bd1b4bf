//! The two analyzers of the text leg.
//!
//! - `words`: English prose. Splits on anything that is not a letter or a digit and at
//!   camelCase boundaries (`EntityStore` gives `entity` and `store`), lowercases, drops
//!   English stop words and stems (Porter/Snowball English).
//! - `ident`: exact identifiers. Keeps a whitespace-delimited word, trimmed of surrounding
//!   punctuation and lowercased, only when it looks like an identifier (`order_1234`,
//!   `EntityStore`, `src/main.rs`, `v2.1`, `user@example.com`), so that a query naming an
//!   identifier finds it exactly and ranks it above documents that only share its parts.

use std::cell::RefCell;

use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, StopWordFilter, TextAnalyzer, Token, TokenFilter,
    TokenStream, Tokenizer,
};

pub(crate) const WORDS: &str = "ruche_words";
pub(crate) const IDENT: &str = "ruche_ident";

/// Tokens longer than this many bytes are dropped (base64 blobs, hashes).
const MAX_TOKEN_BYTES: usize = 64;

pub(crate) fn words_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(WordTokenizer)
        .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
        .filter(LowerCaser)
        .filter(StopWordFilter::new(Language::English).expect("English stop words exist"))
        .filter(RememberingStemmer)
        .build()
}

/// tantivy's English stemmer (Snowball, through frostem) that remembers the stems it
/// made, per thread: words follow Zipf's law, so a few thousand stems serve most of an
/// import's tokens (the stemmer was a sixth of the text index's analysis). A pure
/// function remembered: the tokens are those of `tantivy::tokenizer::Stemmer`.
#[derive(Clone, Copy, Default)]
pub(crate) struct RememberingStemmer;

/// Stems remembered by each thread before it forgets them all (a few MB at most).
const REMEMBERED_STEMS: usize = 1 << 16;

thread_local! {
    static STEMS: RefCell<rustc_hash::FxHashMap<Box<str>, Box<str>>> =
        RefCell::new(rustc_hash::FxHashMap::default());
}

/// `word`'s English stem, into `out`.
fn stem_into(word: &str, out: &mut String) {
    STEMS.with(|stems| {
        let mut stems = stems.borrow_mut();
        out.clear();
        if let Some(stem) = stems.get(word) {
            out.push_str(stem);
            return;
        }
        let stem = frostem::Stemmer::new(frostem::Algorithm::English).stem(word);
        out.push_str(&stem);
        if stems.len() >= REMEMBERED_STEMS {
            stems.clear();
        }
        stems.insert(word.into(), stem.into());
    });
}

impl TokenFilter for RememberingStemmer {
    type Tokenizer<T: Tokenizer> = RememberingStemmerFilter<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> RememberingStemmerFilter<T> {
        RememberingStemmerFilter { inner: tokenizer }
    }
}

/// The tokenizer [`RememberingStemmer`] makes of the one before it.
#[derive(Clone)]
pub(crate) struct RememberingStemmerFilter<T> {
    inner: T,
}

impl<T: Tokenizer> Tokenizer for RememberingStemmerFilter<T> {
    type TokenStream<'a> = RememberingStemmerStream<T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        RememberingStemmerStream {
            tail: self.inner.token_stream(text),
            buffer: String::new(),
        }
    }
}

/// The token stream of [`RememberingStemmerFilter`].
pub(crate) struct RememberingStemmerStream<T> {
    tail: T,
    buffer: String,
}

impl<T: TokenStream> TokenStream for RememberingStemmerStream<T> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        let token = self.tail.token_mut();
        stem_into(&token.text, &mut self.buffer);
        std::mem::swap(&mut token.text, &mut self.buffer);
        true
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}

pub(crate) fn ident_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(IdentTokenizer)
        .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
        .filter(LowerCaser)
        .build()
}

/// Every token `analyzer` makes of `text`, in order.
pub(crate) fn tokens(analyzer: &mut TextAnalyzer, text: &str) -> Vec<String> {
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while let Some(token) = stream.next() {
        out.push(token.text.clone());
    }
    out
}

/// Every token `analyzer` makes of `text` with the text it came from, in order.
pub(crate) fn tokens_with_source<'t>(
    analyzer: &mut TextAnalyzer,
    text: &'t str,
) -> Vec<(String, &'t str)> {
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while let Some(token) = stream.next() {
        let source = text
            .get(token.offset_from..token.offset_to)
            .unwrap_or_default();
        out.push((token.text.clone(), source));
    }
    out
}

/// Analyses `text` with `analyzer` into the encoding [`PreAnalyzed`] reads back: each
/// term `prefix + token` is indexed; returns the number of tokens.
///
/// A document is analysed on the committing threads (the counts go into its `tokens`
/// fast field), and tantivy's indexing threads only split what this wrote. (tantivy's
/// own pre-tokenized values pass through JSON twice per document: 30 % of a large
/// commit.) Entries are `LEN:BYTES`, the prefix first, so any byte may occur in them.
pub(crate) fn encode_analyzed(
    analyzer: &mut TextAnalyzer,
    prefix: &str,
    text: &str,
    out: &mut String,
) -> u32 {
    out.clear();
    push_entry(out, prefix);
    let mut count = 0u32;
    let mut stream = analyzer.token_stream(text);
    while let Some(token) = stream.next() {
        push_entry(out, &token.text);
        count = count.saturating_add(1);
    }
    count
}

/// Appends `LEN:BYTES` for `text`, the length in decimal without the formatting
/// machinery for the lengths of tokens (at most [`MAX_TOKEN_BYTES`]).
fn push_entry(out: &mut String, text: &str) {
    let len = text.len();
    if len < 100 {
        if len >= 10 {
            out.push(char::from(b'0' + (len / 10) as u8));
        }
        out.push(char::from(b'0' + (len % 10) as u8));
    } else {
        out.push_str(&len.to_string());
    }
    out.push(':');
    out.push_str(text);
}

/// The tokenizer of the index's fields: reads what [`encode_analyzed`] wrote, each token
/// carrying the prefix. Anything else (which no code path writes) ends the stream where it
/// stops parsing.
#[derive(Clone, Default)]
pub(crate) struct PreAnalyzed;

/// The token stream of [`PreAnalyzed`].
pub(crate) struct PreAnalyzedStream<'a> {
    rest: &'a str,
    prefix: &'a str,
    token: Token,
}

/// The next `LEN:BYTES` entry of `text` and what follows it.
fn next_entry(text: &str) -> Option<(&str, &str)> {
    let colon = text.find(':')?;
    let len: usize = text[..colon].parse().ok()?;
    let body = &text[colon + 1..];
    Some((body.get(..len)?, body.get(len..)?))
}

impl Tokenizer for PreAnalyzed {
    type TokenStream<'a> = PreAnalyzedStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> PreAnalyzedStream<'a> {
        let (prefix, rest) = next_entry(text).unwrap_or(("", ""));
        PreAnalyzedStream {
            rest,
            prefix,
            token: Token::default(),
        }
    }
}

impl TokenStream for PreAnalyzedStream<'_> {
    fn advance(&mut self) -> bool {
        let Some((token, rest)) = next_entry(self.rest) else {
            self.rest = "";
            return false;
        };
        self.rest = rest;
        self.token.text.clear();
        self.token.text.push_str(self.prefix);
        self.token.text.push_str(token);
        // `Token::default()` starts at `usize::MAX`, so the first token is at 0.
        self.token.position = self.token.position.wrapping_add(1);
        self.token.position_length = 1;
        true
    }

    fn token(&self) -> &Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

/// Splits on non-alphanumeric characters and at camelCase boundaries.
#[derive(Clone, Default)]
pub(crate) struct WordTokenizer;

/// Emits identifier-like words whole.
#[derive(Clone, Default)]
pub(crate) struct IdentTokenizer;

/// A token stream over a precomputed list of byte ranges.
pub(crate) struct SpanStream<'a> {
    text: &'a str,
    spans: std::vec::IntoIter<(usize, usize)>,
    token: Token,
}

impl<'a> SpanStream<'a> {
    fn new(text: &'a str, spans: Vec<(usize, usize)>) -> SpanStream<'a> {
        SpanStream {
            text,
            spans: spans.into_iter(),
            token: Token::default(),
        }
    }
}

impl TokenStream for SpanStream<'_> {
    fn advance(&mut self) -> bool {
        let Some((from, to)) = self.spans.next() else {
            return false;
        };
        let position = if self.token.offset_to == 0 && self.token.text.is_empty() {
            0
        } else {
            self.token.position + 1
        };
        self.token.text.clear();
        self.token.text.push_str(&self.text[from..to]);
        self.token.offset_from = from;
        self.token.offset_to = to;
        self.token.position = position;
        self.token.position_length = 1;
        true
    }

    fn token(&self) -> &Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

impl Tokenizer for WordTokenizer {
    type TokenStream<'a> = SpanStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> SpanStream<'a> {
        SpanStream::new(text, word_spans(text))
    }
}

impl Tokenizer for IdentTokenizer {
    type TokenStream<'a> = SpanStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> SpanStream<'a> {
        SpanStream::new(text, ident_spans(text))
    }
}

/// Byte ranges of alphanumeric runs, split at camelCase boundaries.
fn word_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut start: Option<usize> = None;
    for (i, &(offset, c)) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if let Some(from) = start.take() {
                spans.push((from, offset));
            }
            continue;
        }
        match start {
            None => start = Some(offset),
            Some(from) => {
                let prev = chars[i - 1].1;
                let next = chars.get(i + 1).map(|&(_, c)| c);
                // `entityStore` and `v2Beta` split before the capital; `HTTPServer` splits
                // before the last capital of the run (`HTTP`, `Server`).
                let lower_to_upper = c.is_uppercase() && (prev.is_lowercase() || prev.is_numeric());
                let acronym_end =
                    c.is_uppercase() && prev.is_uppercase() && next.is_some_and(char::is_lowercase);
                if lower_to_upper || acronym_end {
                    spans.push((from, offset));
                    start = Some(offset);
                }
            }
        }
    }
    if let Some(from) = start {
        spans.push((from, text.len()));
    }
    spans
}

/// Byte ranges of identifier-like words.
fn ident_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    for word in text.split(char::is_whitespace) {
        // The separator may be several bytes long (a no-break space is 2): the word's
        // offset is where it is, not a count of what came before.
        // Most words are plain words: letters, no lowercase-to-capital step.
        if is_plain_word(word) {
            continue;
        }
        let word_start = word.as_ptr() as usize - text.as_ptr() as usize;
        let trimmed = word.trim_matches(|c: char| !(c.is_alphanumeric() || "_/\\@#$~".contains(c)));
        if trimmed.is_empty() || !is_identifier(trimmed) {
            continue;
        }
        let from = word_start + (trimmed.as_ptr() as usize - word.as_ptr() as usize);
        spans.push((from, from + trimmed.len()));
    }
    spans
}

/// Whether `word` is ASCII letters with no lowercase letter before a capital: its own
/// trimmed form, and no identifier (what [`is_identifier`] says of it, in one pass).
fn is_plain_word(word: &str) -> bool {
    let bytes = word.as_bytes();
    bytes.iter().all(u8::is_ascii_alphabetic)
        && !bytes
            .windows(2)
            .any(|pair| pair[0].is_ascii_lowercase() && pair[1].is_ascii_uppercase())
}

/// Whether a word (trimmed of surrounding punctuation) looks like an identifier.
fn is_identifier(word: &str) -> bool {
    let has_alpha = word.chars().any(char::is_alphabetic);
    let has_digit = word.chars().any(|c| c.is_ascii_digit());
    let has_joiner = word.contains(['_', '/', '\\', '.', ':', '-', '@', '#', '$', '~']);
    let camel = word
        .chars()
        .zip(word.chars().skip(1))
        .any(|(a, b)| a.is_lowercase() && b.is_uppercase());
    (has_alpha && has_digit)
        || is_long_number(word)
        || (has_joiner && word.chars().filter(|c| c.is_alphanumeric()).count() >= 2)
        || camel
}

/// A number of at least this many digits is an identifier (order and ticket numbers);
/// shorter ones are quantities, years and times.
const LONG_NUMBER_DIGITS: usize = 5;

fn is_long_number(word: &str) -> bool {
    word.len() >= LONG_NUMBER_DIGITS && word.bytes().all(|b| b.is_ascii_digit())
}

/// Whether an `ident` token is a *code*: an identifier that names one thing, such as an
/// order number (`nw-15699`, `48213977`), a ticket, a SKU (`hl-lumen-542`), a lot
/// (`l2607`) or an error code (`pay_declined_51`). A document that contains a query's
/// code verbatim is about that thing.
///
/// A code has at least 4 characters and 2 digits, and is not a quantity with a unit or
/// an ordinal (`10am`, `15kg`, `23rd`). Names with a single digit (`HNF4A`, `Rac1`,
/// `PD-1`) are not codes: they name families of things that many documents discuss.
/// The word tokens that the query's codes are made of (`NW-15699`: `nw`, `15699`), one
/// per occurrence: coverage leaves them out. A code says which instance the query is
/// about, not what it is about: a document that holds it passes the gate by the code
/// itself, and one that does not (a rule, a tool, a note about another order) is no less
/// about the query's words for it.
pub(crate) fn words_of_codes(
    words: &mut TextAnalyzer,
    ident: &mut TextAnalyzer,
    text: &str,
) -> Vec<String> {
    tokens(ident, text)
        .into_iter()
        .filter(|token| is_code(token))
        .flat_map(|code| tokens(words, &code))
        .collect()
}

/// Removes one occurrence of `token` from `pool`; whether there was one.
pub(crate) fn take_one(pool: &mut Vec<String>, token: &str) -> bool {
    match pool.iter().position(|t| t == token) {
        Some(at) => {
            pool.swap_remove(at);
            true
        }
        None => false,
    }
}

pub(crate) fn is_code(token: &str) -> bool {
    if token.chars().count() < 4 || token.bytes().filter(u8::is_ascii_digit).count() < 2 {
        return false;
    }
    let digits = token.bytes().take_while(u8::is_ascii_digit).count();
    let rest = &token[digits..];
    let quantity = digits > 0
        && (1..=2).contains(&rest.len())
        && rest.bytes().all(|b| b.is_ascii_alphabetic());
    !quantity
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_words(text: &str, expected: &[&str]) {
        assert_eq!(tokens(&mut words_analyzer(), text), expected, "{text}");
    }

    #[track_caller]
    fn check_ident(text: &str, expected: &[&str]) {
        assert_eq!(tokens(&mut ident_analyzer(), text), expected, "{text}");
    }

    #[test]
    fn words_stem_and_drop_stop_words() {
        check_words(
            "The customer is asking for refunds",
            &["custom", "ask", "refund"],
        );
        check_words("title:x AND (", &["titl", "x"]);
        check_words("", &[]);
    }

    #[test]
    fn words_split_identifiers() {
        check_words("EntityStore", &["entiti", "store"]);
        check_words("HTTPServer v2Beta", &["http", "server", "v2", "beta"]);
        check_words("order_1234", &["order", "1234"]);
        check_words("src/main.rs", &["src", "main", "rs"]);
        check_words("café naïve", &["café", "naïv"]);
    }

    #[test]
    fn ident_keeps_identifiers_whole() {
        check_ident(
            "Where is order_1234? See src/main.rs, EntityStore and v2.1.",
            &["order_1234", "src/main.rs", "entitystore", "v2.1"],
        );
        check_ident("plain words only, nothing else", &[]);
        check_ident("follow-up call at 10am", &["follow-up", "10am"]);
        check_ident("\"quoted_name\" (paren_id)", &["quoted_name", "paren_id"]);
        check_ident("a-", &[]);
        check_ident("order 48213977, not 1234 or 2026", &["48213977"]);
        // Separators of more than one byte (a no-break space, an ideographic space).
        check_ident("see\u{a0}NW-15699\u{3000}and v2.1", &["nw-15699", "v2.1"]);
    }

    #[test]
    fn codes_name_one_thing() {
        for code in [
            "nw-15699",
            "tkt-482913",
            "hl-lumen-542",
            "l2607",
            "pay_declined_51",
            "48213977",
            "order_1234",
            "2026-11-21",
        ] {
            assert!(is_code(code), "{code}");
        }
        for not_code in [
            "10am",
            "15kg",
            "23rd",
            "40k",
            "v2",
            "a1b",
            "follow-up",
            "entitystore",
            "hnf4a",
            "pd-1",
        ] {
            assert!(!is_code(not_code), "{not_code}");
        }
    }

    /// The analyzer as tantivy's own filters make it, stemming every token afresh.
    fn words_with_tantivy_stemmer() -> TextAnalyzer {
        TextAnalyzer::builder(WordTokenizer)
            .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
            .filter(LowerCaser)
            .filter(StopWordFilter::new(Language::English).expect("English stop words exist"))
            .filter(tantivy::tokenizer::Stemmer::new(Language::English))
            .build()
    }

    use proptest::strategy::Strategy as _;

    proptest::proptest! {
        /// Remembered stems are tantivy's stems, whichever thread stems a word first and
        /// however often it comes back.
        #[test]
        fn remembered_stems_are_tantivys(
            words in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::sample::select(vec![
                        "running", "runs", "ran", "connection", "connected", "Connecting",
                        "generously", "happiness", "caresses", "ponies", "the", "a", "était",
                        "naïve", "straße", "APIs", "entityStore", "v2Beta",
                    ])
                    .prop_map(str::to_string),
                    "[a-zA-Zéß0-9]{1,12}",
                ],
                0..40,
            )
        ) {
            let text = words.join(" ");
            let expected = tokens(&mut words_with_tantivy_stemmer(), &text);
            proptest::prop_assert_eq!(tokens(&mut words_analyzer(), &text), expected.clone());
            // Again, from the memory this time.
            proptest::prop_assert_eq!(tokens(&mut words_analyzer(), &text), expected.clone());
            let on_another_thread = std::thread::spawn(move || tokens(&mut words_analyzer(), &text))
                .join()
                .unwrap();
            proptest::prop_assert_eq!(on_another_thread, expected);
        }

        /// A word the fast path skips is one `is_identifier` rejects, whole.
        #[test]
        fn plain_words_are_no_identifiers(word in "[a-zA-Z]{0,10}|[a-zA-Z0-9_.:/@-]{1,10}") {
            if is_plain_word(&word) {
                proptest::prop_assert!(word.is_empty() || !is_identifier(&word), "{}", word);
            }
        }
    }

    #[test]
    fn entries_read_back_at_every_length() {
        for len in [0, 1, 9, 10, 11, 64, 99, 100, 101, 1_000, 12_345] {
            let text = "é".repeat(len / 2) + &"x".repeat(len % 2);
            let mut out = String::from("0:");
            push_entry(&mut out, &text);
            push_entry(&mut out, "next");
            assert!(out.starts_with(&format!("0:{}:", text.len())), "{len}");
            let (first, rest) = next_entry(&out[2..]).unwrap();
            assert_eq!(first, text);
            assert_eq!(next_entry(rest), Some(("next", "")));
        }
    }

    #[test]
    fn the_stem_memory_forgets_when_full() {
        std::thread::spawn(|| {
            let mut out = String::new();
            for n in 0..REMEMBERED_STEMS + 10 {
                stem_into(&format!("word{n}ing"), &mut out);
            }
            STEMS.with(|stems| assert!(stems.borrow().len() <= 11));
            stem_into("running", &mut out);
            assert_eq!(out, "run");
        })
        .join()
        .unwrap();
    }
}
