//! The analysis both legs share: how a text becomes the terms the text leg indexes and
//! matches, and the words coverage counts. No index is named here: the local index
//! registers these analyses with its text engine (`local::text`), and other backends use
//! them through [`crate::retrieve::coverage`].
//!
//! - `words`: English prose. Splits on anything that is not a letter or a digit and at
//!   camelCase boundaries (`EntityStore` gives `entity` and `store`), drops tokens of 64
//!   bytes or more, lowercases, drops English stop words (Lucene's list) and stems
//!   (Snowball English, through frostem).
//! - `ident`: exact identifiers. Keeps a whitespace-delimited word, trimmed of surrounding
//!   punctuation and lowercased, only when it looks like an identifier (`order_1234`,
//!   `EntityStore`, `src/main.rs`, `v2.1`, `user@example.com`), so that a query naming an
//!   identifier finds it exactly and ranks it above documents that only share its parts.

use std::cell::RefCell;

/// The two analyses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Analysis {
    /// Prose: words split, lowercased, stop words dropped, stemmed.
    Words,
    /// Identifiers kept whole, lowercased.
    Ident,
}

/// Tokens of this many bytes or more are dropped (base64 blobs, hashes).
pub(crate) const MAX_TOKEN_BYTES: usize = 64;

/// English stop words: Lucene's list (the one tantivy's English filter uses).
pub(crate) const STOP_WORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];

/// Calls `f` with each token of `text` and the byte range of `text` it came from, in order.
pub(crate) fn for_each_token(
    analysis: Analysis,
    text: &str,
    mut f: impl FnMut(&str, std::ops::Range<usize>),
) {
    let spans = match analysis {
        Analysis::Words => word_spans(text),
        Analysis::Ident => ident_spans(text),
    };
    let mut lower = String::new();
    let mut stem = String::new();
    for (from, to) in spans {
        let source = &text[from..to];
        if source.len() >= MAX_TOKEN_BYTES {
            continue;
        }
        lowercase_into(source, &mut lower);
        match analysis {
            Analysis::Ident => f(&lower, from..to),
            Analysis::Words => {
                if STOP_WORDS.contains(&lower.as_str()) {
                    continue;
                }
                stem_into(&lower, &mut stem);
                f(&stem, from..to);
            }
        }
    }
}

/// `text` lowercased into `out`: ASCII in place, anything else a character at a time
/// (without the final sigma's special case: the same letter either way, for search).
fn lowercase_into(text: &str, out: &mut String) {
    out.clear();
    if text.is_ascii() {
        out.push_str(text);
        out.make_ascii_lowercase();
    } else {
        for c in text.chars() {
            out.extend(c.to_lowercase());
        }
    }
}

/// Every token of `text`, in order.
pub(crate) fn tokens(analysis: Analysis, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(analysis, text, |token, _| out.push(token.to_string()));
    out
}

/// Every token of `text` with the text it came from, in order.
pub(crate) fn tokens_with_source(analysis: Analysis, text: &str) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    for_each_token(analysis, text, |token, span| {
        out.push((token.to_string(), &text[span]));
    });
    out
}

/// Analyses `text` into entries `LEN:BYTES` (the prefix first, then each token), which
/// the local index's tokenizers split back; returns the number of tokens. A document is
/// analysed on the committing threads (the counts go into the index), so that the text
/// engine's indexing threads only split what this wrote.
pub(crate) fn encode_analyzed(
    analysis: Analysis,
    prefix: &str,
    text: &str,
    out: &mut String,
) -> u32 {
    out.clear();
    push_entry(out, prefix);
    let mut count = 0u32;
    for_each_token(analysis, text, |token, _| {
        push_entry(out, token);
        count = count.saturating_add(1);
    });
    count
}

/// English stems remembered per thread: words follow Zipf's law, so a few thousand stems
/// serve most of an import's tokens (the stemmer was a sixth of the text index's
/// analysis). A pure function remembered: the stems are the Snowball stemmer's.
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

/// The next `LEN:BYTES` entry of `text` and what follows it.
pub(crate) fn next_entry(text: &str) -> Option<(&str, &str)> {
    let colon = text.find(':')?;
    let len: usize = text[..colon].parse().ok()?;
    let body = &text[colon + 1..];
    Some((body.get(..len)?, body.get(len..)?))
}

/// Byte ranges of alphanumeric runs, split at camelCase boundaries.
pub(crate) fn word_spans(text: &str) -> Vec<(usize, usize)> {
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
pub(crate) fn ident_spans(text: &str) -> Vec<(usize, usize)> {
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

/// The word tokens that the query's codes are made of (`NW-15699`: `nw`, `15699`), one
/// per occurrence: coverage leaves them out. A code says which instance the query is
/// about, not what it is about: a document that holds it passes the gate by the code
/// itself, and one that does not (a rule, a tool, a note about another order) is no less
/// about the query's words for it.
pub(crate) fn words_of_codes(text: &str) -> Vec<String> {
    tokens(Analysis::Ident, text)
        .into_iter()
        .filter(|token| is_code(token))
        .flat_map(|code| tokens(Analysis::Words, &code))
        .collect()
}

/// `H:MM` or `HH:MM`, a time of day (a reservation at `2:00` is not about the rule
/// whose example says `2:00`).
fn is_clock_time(token: &str) -> bool {
    let Some((hours, minutes)) = token.split_once(':') else {
        return false;
    };
    (1..=2).contains(&hours.len())
        && minutes.len() == 2
        && hours
            .bytes()
            .chain(minutes.bytes())
            .all(|b| b.is_ascii_digit())
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

/// Whether an `ident` token is a *code*: an identifier that names one thing, such as an
/// order number (`nw-15699`, `48213977`), a ticket, a SKU (`hl-lumen-542`), a lot
/// (`l2607`) or an error code (`pay_declined_51`). A document that contains a query's
/// code verbatim is about that thing.
///
/// A code has at least 4 characters and 2 digits, and is not a quantity with a unit or
/// an ordinal (`10am`, `15kg`, `23rd`), nor a time of day (`2:00`, `14:30`). Names with a
/// single digit (`HNF4A`, `Rac1`, `PD-1`) are not codes: they name families of things
/// that many documents discuss.
pub(crate) fn is_code(token: &str) -> bool {
    if token.chars().count() < 4 || token.bytes().filter(u8::is_ascii_digit).count() < 2 {
        return false;
    }
    if is_clock_time(token) {
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
        assert_eq!(tokens(Analysis::Words, text), expected, "{text}");
    }

    #[track_caller]
    fn check_ident(text: &str, expected: &[&str]) {
        assert_eq!(tokens(Analysis::Ident, text), expected, "{text}");
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
            "2:00",
            "14:30",
        ] {
            assert!(!is_code(not_code), "{not_code}");
        }
    }

    use proptest::strategy::Strategy as _;

    proptest::proptest! {
        /// Remembered stems are the stemmer's, whichever thread stems a word first and
        /// however often it comes back. (`local::text` checks the whole analysis against
        /// its text engine's own filters.)
        #[test]
        fn remembered_stems_are_the_stemmers(
            words in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::sample::select(vec![
                        "running", "runs", "ran", "connection", "connected", "connecting",
                        "generously", "happiness", "caresses", "ponies", "était",
                        "naïve", "straße", "apis",
                    ])
                    .prop_map(str::to_string),
                    "[a-zéß0-9]{1,12}",
                ],
                0..40,
            )
        ) {
            let fresh = |word: &str| {
                frostem::Stemmer::new(frostem::Algorithm::English).stem(word).into_owned()
            };
            let expected: Vec<String> = words.iter().map(|w| fresh(w)).collect();
            let remembered = |words: &[String]| {
                let mut out = String::new();
                words
                    .iter()
                    .map(|w| {
                        stem_into(w, &mut out);
                        out.clone()
                    })
                    .collect::<Vec<_>>()
            };
            proptest::prop_assert_eq!(remembered(&words), expected.clone());
            // Again, from the memory this time.
            proptest::prop_assert_eq!(remembered(&words), expected.clone());
            let on_another_thread = std::thread::spawn(move || remembered(&words))
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
