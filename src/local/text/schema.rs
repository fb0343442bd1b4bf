//! The text index's schema: its fields, and the prefix that scopes a term to a kind and
//! a tenant.

use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, Schema, TextFieldIndexing, TextOptions,
};

use super::tokenizer::{IDENT, WORDS};

#[derive(Clone, Copy)]
pub(crate) struct Fields {
    pub(crate) doc_id: Field,
    pub(crate) words: Field,
    pub(crate) ident: Field,
    /// The document's token counts, `words << 32 | ident`: the per-tenant BM25
    /// statistics are summed from them.
    pub(crate) tokens: Field,
}

pub(crate) fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let doc_id = builder.add_u64_field("doc_id", INDEXED | FAST);
    let text_options = |tokenizer: &str| {
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(tokenizer)
                .set_index_option(IndexRecordOption::WithFreqs),
        )
    };
    let words = builder.add_text_field("words", text_options(WORDS));
    let ident = builder.add_text_field("ident", text_options(IDENT));
    let tokens = builder.add_u64_field("tokens", FAST);
    (
        builder.build(),
        Fields {
            doc_id,
            words,
            ident,
            tokens,
        },
    )
}

/// The prefix of every term of one scope: the kind's letter (`r`, `c`, `s`, `t`), the tenant, a NUL (tenant ids hold
/// no control character).
pub(crate) fn scope_prefix(kind: crate::Kind, tenant: &str) -> String {
    let k = match kind {
        crate::Kind::Rule => 'r',
        crate::Kind::Chunk => 'c',
        crate::Kind::Scenario => 's',
        crate::Kind::Tool => 't',
    };
    format!("{k}{tenant}\u{0}")
}
