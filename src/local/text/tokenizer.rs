//! The tokenizers the text index's fields are registered with: a document and a query
//! are analysed before they reach tantivy ([`crate::analysis::text`]); these split back
//! what the analysis wrote.

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

use crate::analysis::text as analyzer;

/// The name the `words` field's tokenizer is registered under.
pub(crate) const WORDS: &str = "ruche_words";
/// The name the `ident` field's tokenizer is registered under.
pub(crate) const IDENT: &str = "ruche_ident";

/// The tokenizer of the index's fields: reads what [`encode_analyzed`](crate::analysis::text::encode_analyzed) wrote, each token
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

impl Tokenizer for PreAnalyzed {
    type TokenStream<'a> = PreAnalyzedStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> PreAnalyzedStream<'a> {
        let (prefix, rest) = analyzer::next_entry(text).unwrap_or(("", ""));
        PreAnalyzedStream {
            rest,
            prefix,
            token: Token::default(),
        }
    }
}

impl TokenStream for PreAnalyzedStream<'_> {
    fn advance(&mut self) -> bool {
        let Some((token, rest)) = analyzer::next_entry(self.rest) else {
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
