//! Query analysis and query-adaptive weights (seed 004).
//!
//! [`analyze`] reads a query's text for the signals that tell which leg should lead:
//! keywords, entity mentions (names that keyword search matches exactly), question form
//! and file-path form. [`adapt`] turns those signals into leg weights, as seed 004's
//! `adaptWeights`:
//!
//! | signal                              | text (keyword) weight | vector (semantic) weight |
//! |-------------------------------------|-----------------------|--------------------------|
//! | an entity mention                   | × 1.5                 |                          |
//! | at most 2 keywords and an entity    | × 2                   | × 0.5                    |
//! | a question (`how`, `what`, ...)     | × 0.7                 | × 1.5                    |
//! | a file path                         | = 3.0                 | = 0.2                    |
//!
//! The rules apply in that order, then the two weights are renormalised to the sum of
//! the base weights, so a query without any signal keeps the base weights exactly. The
//! analysis is pure and deterministic; it has its own small tokeniser and does not depend
//! on the text index's analyzer.

pub(crate) mod text;

use serde::Serialize;

use crate::fusion::FusionWeights;

/// What [`analyze`] found in a query.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[non_exhaustive]
pub struct QueryAnalysis {
    /// The query's words, lowercased, without stop words and without repeats, in order.
    ///
    /// Words are split on whitespace only, after stripping surrounding punctuation, so
    /// an identifier such as `src/main.rs` or `order_1234` is one keyword.
    pub keywords: Vec<String>,
    /// The entity mentions, without repeats, in order (quoted strings first).
    pub entities: Vec<Entity>,
    /// The query's first word is `how`, `what`, `why`, `where`, `when` or `which`.
    pub is_question: bool,
    /// The query names a file (see [`analyze`]).
    pub is_file_path: bool,
}

impl QueryAnalysis {
    /// Whether any signal that [`adapt`] reacts to was found.
    pub fn has_signals(&self) -> bool {
        !self.entities.is_empty() || self.is_question || self.is_file_path
    }
}

/// An entity mention: a name that keyword search matches exactly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entity {
    /// The mention as written (a quoted string without its quotes).
    pub text: String,
    /// What made it an entity.
    pub kind: EntityKind,
}

/// What made a word an entity mention. When several apply, the first listed wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntityKind {
    /// Text between double quotes (`"..."`, `“...”`) or backticks.
    Quoted,
    /// A path or qualified name: `src/main.rs`, `std::io`, `config.toml`, `foo.bar`.
    Path,
    /// An identifier with letters and digits: `order_1234`, `sha256`, `ORD-77`.
    WithDigits,
    /// `snake_case` or `SCREAMING_CASE`.
    SnakeCase,
    /// `CamelCase`, `camelCase` or `HTTPServer`.
    CamelCase,
}

/// The file extensions of seed 004's file-path rule.
const SOURCE_EXTENSIONS: &[&str] = &["ts", "js", "py", "go", "rs", "java"];

/// The words that make a question when they start the query (seed 004).
const QUESTION_WORDS: &[&str] = &["how", "what", "when", "where", "which", "why"];

/// Whether a lowercase word is an English function word (an article, pronoun, auxiliary,
/// preposition, conjunction, question word or contraction stem).
pub(crate) fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// English stop words, sorted (binary search): articles, pronouns, auxiliaries,
/// prepositions, conjunctions, question words and contraction stems.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "aren",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "couldn",
    "d",
    "did",
    "didn",
    "do",
    "does",
    "doesn",
    "doing",
    "don",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "hadn",
    "has",
    "hasn",
    "have",
    "haven",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "isn",
    "it",
    "its",
    "itself",
    "just",
    "ll",
    "m",
    "me",
    "might",
    "more",
    "most",
    "must",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "re",
    "s",
    "same",
    "shall",
    "she",
    "should",
    "shouldn",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "ve",
    "very",
    "was",
    "wasn",
    "we",
    "were",
    "weren",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "won",
    "would",
    "wouldn",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Analyses a query's text.
///
/// - **Keywords**: the words (split on whitespace, surrounding punctuation stripped,
///   lowercased, the part after an apostrophe dropped) that are not stop words.
/// - **Entities**: quoted strings; and words that are paths or qualified names (with
///   `/`, `\` or `::`, or dotted like `config.toml`, but not `e.g` or `3.14`), contain
///   letters and digits (not ordinals like `2nd` or decades like `1990s`; a bare number
///   is not an entity), contain `_` (`snake_case`), or mix cases (`CamelCase`, not a
///   plural acronym like `APIs`). A `/` word counts as a path when it has at least three
///   parts, starts with `/`, `./`, `../` or `~/`, or a part contains `.`, `_` or a digit,
///   so `and/or` is not one.
/// - **Question**: the first word (its apostrophe part dropped, so `what's` counts) is
///   one of `how what why where when which`, case-insensitively. It must be the whole
///   word: `however` does not start a question (seed 004's regex had no word boundary).
/// - **File path**: the query (trailing punctuation stripped) ends with `.ts`, `.js`,
///   `.py`, `.go`, `.rs` or `.java` after a file name (seed 004), case-insensitively;
///   or the whole query is a single path with a `/` whose last part has an extension
///   (`docs/guide.md`). A path inside a longer query is an entity, not a file-path
///   query: "why does src/index.md fail" stays a question.
///
/// # Example
///
/// ```
/// use ruchedb::analysis::{EntityKind, analyze};
///
/// let analysis = analyze("where is `EntityStore` defined?");
/// assert_eq!(analysis.keywords, ["entitystore", "defined"]);
/// assert_eq!(analysis.entities[0].text, "EntityStore");
/// assert_eq!(analysis.entities[0].kind, EntityKind::Quoted);
/// assert!(analysis.is_question);
/// assert!(!analysis.is_file_path);
/// ```
pub fn analyze(text: &str) -> QueryAnalysis {
    let mut analysis = QueryAnalysis::default();
    for quoted in quoted_strings(text) {
        push_entity(&mut analysis.entities, quoted, EntityKind::Quoted);
    }
    let words: Vec<&str> = text.split_whitespace().map(strip_punctuation).collect();
    for word in words
        .iter()
        .copied()
        .filter(|w| w.chars().any(char::is_alphanumeric))
    {
        let keyword = keyword_stem(word).to_lowercase();
        if !keyword.is_empty()
            && STOP_WORDS.binary_search(&keyword.as_str()).is_err()
            && !analysis.keywords.contains(&keyword)
        {
            analysis.keywords.push(keyword);
        }
        if let Some(kind) = entity_kind(word) {
            push_entity(&mut analysis.entities, word, kind);
        }
    }
    analysis.is_question = words
        .iter()
        .find(|w| w.chars().any(char::is_alphanumeric))
        .is_some_and(|first| {
            let first = keyword_stem(first).to_lowercase();
            QUESTION_WORDS.contains(&first.as_str())
        });
    analysis.is_file_path = is_file_path(text);
    analysis
}

/// Adapts the base leg weights to a query's signals (seed 004).
///
/// The rules of the module docs apply in order (entity, short entity query, question,
/// file path; the file-path rule sets absolute values and so overrides the others), then
/// the two weights are scaled to sum to the base sum: only their ratio changes, and a
/// query without signals keeps `base` exactly. A leg whose base weight is 0 stays at 0
/// (it was turned off; seed 004's `weights.keyword || 0.6` fallback is a JavaScript
/// falsy-value artefact). With both base weights 0, `base` is returned.
///
/// The result goes through [`FusionWeights::in_use`] (feedback factors, legs that did
/// not run, sum 1) before [`fuse`](crate::fusion::fuse).
///
/// # Example
///
/// ```
/// use ruchedb::analysis::{adapt, analyze};
/// use ruchedb::fusion::FusionWeights;
///
/// let base = FusionWeights { vector_weight: 0.7, text_weight: 0.3 };
/// let name = adapt(&analyze("EntityStore"), base);
/// assert!(name.text_weight > base.text_weight);
/// let question = adapt(&analyze("how does the search pipeline work"), base);
/// assert!(question.vector_weight > base.vector_weight);
/// let file = adapt(&analyze("src/main.rs"), base);
/// assert!((file.vector_weight / file.text_weight - 0.2 / 3.0).abs() < 1e-12);
/// assert_eq!(adapt(&analyze("refund policy for damaged items"), base), base);
/// ```
pub fn adapt(analysis: &QueryAnalysis, base: FusionWeights) -> FusionWeights {
    if !analysis.has_signals() {
        return base;
    }
    let FusionWeights {
        vector_weight: base_vector,
        text_weight: base_text,
    } = base;
    let (mut vector, mut text) = (base_vector, base_text);
    if !analysis.entities.is_empty() {
        text *= 1.5;
        if analysis.keywords.len() <= 2 {
            text *= 2.0;
            vector *= 0.5;
        }
    }
    if analysis.is_question {
        vector *= 1.5;
        text *= 0.7;
    }
    if analysis.is_file_path {
        text = 3.0;
        vector = 0.2;
    }
    // A leg turned off in the configuration stays off.
    if base_vector == 0.0 {
        vector = 0.0;
    }
    if base_text == 0.0 {
        text = 0.0;
    }
    let (base_sum, sum) = (base_vector + base_text, vector + text);
    if !(sum > 0.0 && base_sum.is_finite() && sum.is_finite()) {
        return base;
    }
    FusionWeights {
        vector_weight: vector * base_sum / sum,
        text_weight: text * base_sum / sum,
    }
}

/// Adds an entity unless one with the same text is already there.
fn push_entity(entities: &mut Vec<Entity>, text: &str, kind: EntityKind) {
    if !entities.iter().any(|entity| entity.text == text) {
        entities.push(Entity {
            text: text.to_string(),
            kind,
        });
    }
}

/// The non-empty contents of balanced `"..."`, `“...”` and `` `...` `` pairs.
fn quoted_strings(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some((start, open)) = rest
        .char_indices()
        .find(|(_, c)| matches!(c, '"' | '“' | '`'))
    {
        let close = if open == '“' { '”' } else { open };
        let after = &rest[start + open.len_utf8()..];
        let Some(end) = after.find(close) else {
            break;
        };
        let inner = after[..end].trim();
        if inner.chars().any(char::is_alphanumeric) {
            found.push(inner);
        }
        rest = &after[end + close.len_utf8()..];
    }
    found
}

/// A word without the punctuation around it.
///
/// Trailing characters that are not alphanumeric or `_` go (`main.rs?` → `main.rs`);
/// leading ones too, except `_` and the starts of paths (`.`, `/`, `~`, `\`).
fn strip_punctuation(word: &str) -> &str {
    let word = word.trim_end_matches(|c: char| !(c.is_alphanumeric() || c == '_'));
    word.trim_start_matches(|c: char| {
        !(c.is_alphanumeric() || matches!(c, '_' | '.' | '/' | '~' | '\\'))
    })
}

/// A word without its apostrophe part (`what's` → `what`, `don't` → `don`) and without
/// leading path punctuation.
fn keyword_stem(word: &str) -> &str {
    let word = word.trim_start_matches(|c: char| !c.is_alphanumeric());
    match word.find(['\'', '’']) {
        Some(idx) => &word[..idx],
        None => word,
    }
}

/// The kind of entity a (stripped) word is, if any.
fn entity_kind(word: &str) -> Option<EntityKind> {
    if is_path(word) {
        Some(EntityKind::Path)
    } else if has_letters_and_digits(word) {
        Some(EntityKind::WithDigits)
    } else if word.contains('_') {
        Some(EntityKind::SnakeCase)
    } else if is_camel_case(word) {
        Some(EntityKind::CamelCase)
    } else {
        None
    }
}

/// `src/main.rs`, `std::io`, `C:\temp`, `config.toml`, `foo.bar.baz`.
fn is_path(word: &str) -> bool {
    if word.contains("::") {
        return true;
    }
    if word.contains(['/', '\\']) {
        let parts: Vec<&str> = word.split(['/', '\\']).filter(|p| !p.is_empty()).collect();
        let rooted = ["/", "./", "../", "~/", "\\"]
            .iter()
            .any(|root| word.starts_with(root));
        let marked = parts
            .iter()
            .any(|p| p.contains(['.', '_']) || p.chars().any(|c| c.is_ascii_digit()));
        return !parts.is_empty() && (rooted || marked || parts.len() >= 3);
    }
    is_dotted(word)
}

/// `config.toml`, `.gitignore`, `foo.bar`; not `e.g`, `U.S`, `3.14` or `...and`.
fn is_dotted(word: &str) -> bool {
    // One leading dot is a hidden file's; `...and` is an ellipsis.
    let (dotfile, word) = match word.strip_prefix('.') {
        Some(rest) if !rest.starts_with('.') => (true, rest),
        Some(_) => return false,
        None => (false, word),
    };
    if !dotfile && !word.contains('.') {
        return false;
    }
    let parts: Vec<&str> = word.split('.').collect();
    let identifier = |part: &&str| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-'))
    };
    parts.iter().all(identifier)
        && parts
            .iter()
            .any(|part| part.chars().count() >= 2 && part.chars().any(char::is_alphabetic))
}

/// Letters and digits: `order_1234`, `sha256`, `ORD-77`; not `2nd` or `1990s`.
fn has_letters_and_digits(word: &str) -> bool {
    let has_letter = word.chars().any(char::is_alphabetic);
    let has_digit = word.chars().any(|c| c.is_ascii_digit());
    if !(has_letter && has_digit) {
        return false;
    }
    let digits_end = word
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(word.len());
    let suffix = word[digits_end..].to_lowercase();
    let ordinal_or_decade =
        digits_end > 0 && matches!(suffix.as_str(), "st" | "nd" | "rd" | "th" | "s");
    !ordinal_or_decade
}

/// `EntityStore`, `camelCase`, `HTTPServer`; not `How`, `API` or `APIs`.
fn is_camel_case(word: &str) -> bool {
    let chars: Vec<char> = word.chars().collect();
    let lower_then_upper = chars
        .windows(2)
        .any(|pair| pair[0].is_lowercase() && pair[1].is_uppercase());
    let acronym_then_word = chars
        .windows(3)
        .any(|w| w[0].is_uppercase() && w[1].is_uppercase() && w[2].is_lowercase());
    let plural_acronym = chars.len() >= 3
        && chars.last() == Some(&'s')
        && chars[..chars.len() - 1].iter().all(|c| c.is_uppercase());
    (lower_then_upper || acronym_then_word) && !plural_acronym
}

/// Seed 004's file-path rule, plus single-word paths with any extension.
fn is_file_path(text: &str) -> bool {
    let trimmed = text
        .trim()
        .trim_end_matches(|c: char| !(c.is_alphanumeric() || c == '_'));
    let trimmed = strip_punctuation(trimmed);
    let Some((stem, extension)) = trimmed.rsplit_once('.') else {
        return false;
    };
    let named = stem
        .chars()
        .next_back()
        .is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | '-'));
    if !named {
        return false;
    }
    let extension = extension.to_lowercase();
    if SOURCE_EXTENSIONS.contains(&extension.as_str()) {
        return true;
    }
    // A single word with a directory and a file name with an extension.
    !trimmed.contains(char::is_whitespace)
        && stem.contains(['/', '\\'])
        && !extension.contains(['/', '\\'])
        && (1..=8).contains(&extension.len())
        && extension.chars().all(|c| c.is_ascii_alphanumeric())
        && extension.chars().any(|c| c.is_ascii_alphabetic())
}

/// The parts of a message that asks for several things, each searched on its own (a tool
/// search: "find flights to Rome, and also book a hotel near the Colosseum"): its
/// sentences, each cut at `, and `, ` and also `, `, as well as `, `, plus `, `, then `
/// and `; `. Parts of fewer than 3 words are dropped; a message of one part has none.
pub(crate) fn parts(text: &str) -> Vec<String> {
    parts_at(text, false)
}

/// [`parts`], also cut at a plain ` and ` between two parts of at least 3 words each
/// ("my parcel is late again and I just want to end my life"): what a rules search reads.
pub(crate) fn rule_parts(text: &str) -> Vec<String> {
    parts_at(text, true)
}

/// The clause joiners [`parts`] cuts at.
const JOINERS: [&str; 6] = [
    ", and also ",
    " and also ",
    ", as well as ",
    ", plus ",
    ", then ",
    ", and ",
];

fn parts_at(text: &str, plain_and: bool) -> Vec<String> {
    let joiners: Vec<&str> = JOINERS
        .iter()
        .copied()
        .chain(plain_and.then_some(" and "))
        .collect();
    let words = |part: &str| {
        part.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .count()
    };
    let mut parts = Vec::new();
    for sentence in sentences(text) {
        let mut rest = sentence.as_str();
        loop {
            let next = joiners
                .iter()
                .filter_map(|joiner| {
                    let at = rest.find(joiner)?;
                    // `, and ` joins clauses when a lowercase word follows ("…, and book").
                    let after = &rest[at + joiner.len()..];
                    (*joiner != ", and " || after.starts_with(|c: char| c.is_lowercase()))
                        .then_some((at, joiner.len()))
                })
                // The first joiner; of two at one place, the longer (`, and also `).
                .min_by_key(|&(at, len)| (at, std::cmp::Reverse(len)));
            match next {
                Some((at, len)) => {
                    parts.push(rest[..at].trim().to_string());
                    rest = &rest[at + len..];
                }
                None => {
                    parts.push(rest.trim().to_string());
                    break;
                }
            }
        }
    }
    parts.retain(|part| words(part) >= 3);
    if parts.len() < 2 {
        parts.clear();
    }
    parts
}

/// The sentences of `text`: cut after `.`, `?`, `!` or `;` followed by whitespace.
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (i, &(at, c)) in chars.iter().enumerate() {
        let ends = matches!(c, '.' | '?' | '!' | ';')
            && chars
                .get(i + 1)
                .is_some_and(|(_, next)| next.is_whitespace());
        if ends {
            out.push(text[start..at + c.len_utf8()].trim().to_string());
            start = at + c.len_utf8();
        }
    }
    let last = text[start..].trim();
    if !last.is_empty() {
        out.push(last.to_string());
    }
    out
}

/// The query text the embedder reads: `text` without the words that are codes
/// (`NW-15699`, `PAY_DECLINED_51`), when anything else is left; else `text` as it is.
///
/// A code names an instance, and the text leg matches it verbatim; embedded, its
/// sub-word pieces only pull the query's vector away from what the query is about
/// ("where is my order NW-15699?" is a question about an order, and rules, tools and
/// notes about orders should be as close to it as to "where is my order?").
/// Every search embeds this (see [`search_with`](crate::rank::search_with)):
/// `where is my order NW-15699?` is embedded as `where is my order`.
pub(crate) fn text_to_embed(text: &str) -> std::borrow::Cow<'_, str> {
    let mut dropped = false;
    let kept: Vec<&str> = text
        .split_whitespace()
        .filter(|word| {
            let tokens = text::tokens(text::Analysis::Ident, word);
            let code = !tokens.is_empty() && tokens.iter().all(|t| text::is_code(t));
            dropped |= code;
            !code
        })
        .collect();
    let kept = kept.join(" ");
    if dropped && kept.chars().any(char::is_alphanumeric) {
        std::borrow::Cow::Owned(kept)
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// The codes of a query text (identifiers such as `NW-15699`), lowercased, in order of
/// appearance, without repeats.
pub(crate) fn query_codes(text: &str) -> Vec<String> {
    let mut codes: Vec<String> = Vec::new();
    for token in text::tokens(text::Analysis::Ident, text) {
        if text::is_code(&token) && !codes.contains(&token) {
            codes.push(token);
        }
    }
    codes
}

#[cfg(test)]
mod tests;
