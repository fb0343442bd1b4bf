//! The model: what an index holds and what a search is about, with no storage and no
//! ranking: documents (rules, chunks, scenarios, tools), their ids and kinds, time, the
//! vector math, and the limits every layer checks against.

/// The setters the document kinds share, each a plain assignment: `owner` (tenant and
/// agent) for every kind, `listed` (enabled, tags, the kind's own embedding) for the kinds
/// a catalog lists (rules, scenarios, tools).
macro_rules! document_setters {
    (owner $ty:ident, $noun:literal) => {
        /// Sets the tenant.
        #[must_use]
        pub fn with_tenant(mut self, tenant_id: impl Into<String>) -> $ty {
            self.tenant_id = tenant_id.into();
            self
        }

        #[doc = concat!("Restricts the ", $noun, " to one agent.")]
        #[must_use]
        pub fn with_agent(mut self, agent_id: impl Into<String>) -> $ty {
            self.agent_id = Some(agent_id.into());
            self
        }
    };
    (listed $ty:ident, $noun:literal) => {
        #[doc = concat!("Enables or disables the ", $noun, ".")]
        #[must_use]
        pub fn with_enabled(mut self, enabled: bool) -> $ty {
            self.enabled = enabled;
            self
        }

        /// Sets the tags.
        #[must_use]
        pub fn with_tags<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> $ty {
            self.tags = tags.into_iter().map(Into::into).collect();
            self
        }

        #[doc = concat!("Sets the ", $noun, "'s own embedding (of [`", stringify!($ty), "::text`]).")]
        #[must_use]
        pub fn with_embedding(mut self, embedding: Vec<f32>) -> $ty {
            self.embedding = Some(embedding);
            self
        }
    };
}

pub(crate) mod apply;
pub(crate) mod doc;
pub(crate) mod fields;
pub(crate) mod id;
pub(crate) mod leg;
pub(crate) mod metric;
pub(crate) mod scenario;
pub(crate) mod source;
pub(crate) mod time;
pub(crate) mod tool;

/// The largest `top_k`, `max_k`, `min_k` or `max_candidates` a search accepts (and the
/// configuration): enough for any agent, small enough to allocate.
pub(crate) const MAX_COUNT: usize = 1_000_000;
