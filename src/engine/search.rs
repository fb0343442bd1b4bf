//! The engine's search entry points (search, turn): the local index is the retriever
//! ([`crate::local`]), the pipeline [`crate::rank`]; the engine adds its embedders,
//! feedback and query ids.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{Engine, Inner, Reader};
use crate::query::{SearchRequest, SearchResponse};
use crate::rank::{Searcher, search_with_id};
use crate::retrieve::{RetrievalQuery, Retrieved, RetrievedDoc, Retriever};
use crate::turn::{Run, TurnRequest, TurnResponse};
use crate::{Document, Kind, Result};

/// A reader (and an engine, through it) as a [`Retriever`]: its local index
/// ([`crate::rank::search_with`] over it is [`Reader::search`] without feedback).
impl Retriever for Reader {
    fn dimensions(&self, kind: Kind) -> Option<usize> {
        self.inner.local.dimensions(kind)
    }

    fn retrieve(&self, query: &RetrievalQuery<'_>) -> Result<Retrieved> {
        self.inner.local.retrieve(query)
    }

    fn fill(&self, query: &RetrievalQuery<'_>, candidates: &mut [RetrievedDoc]) -> Result<()> {
        self.inner.local.fill(query, candidates)
    }

    fn candidates(&self, query: &RetrievalQuery<'_>) -> Result<Retrieved> {
        self.inner.local.candidates(query)
    }

    fn applied_rules(&self, query: &RetrievalQuery<'_>) -> Result<Vec<Arc<Document>>> {
        self.inner.local.applied_rules(query)
    }
}

impl Retriever for Engine {
    fn dimensions(&self, kind: Kind) -> Option<usize> {
        self.reader.dimensions(kind)
    }

    fn retrieve(&self, query: &RetrievalQuery<'_>) -> Result<Retrieved> {
        self.reader.retrieve(query)
    }

    fn fill(&self, query: &RetrievalQuery<'_>, candidates: &mut [RetrievedDoc]) -> Result<()> {
        self.reader.fill(query, candidates)
    }

    fn candidates(&self, query: &RetrievalQuery<'_>) -> Result<Retrieved> {
        self.reader.candidates(query)
    }

    fn applied_rules(&self, query: &RetrievalQuery<'_>) -> Result<Vec<Arc<Document>>> {
        self.reader.applied_rules(query)
    }
}

impl Inner {
    fn search(&self, request: &SearchRequest) -> Result<SearchResponse> {
        self.local.searchable()?;
        let embedders = self.embedders();
        let embedder = embedders.get(request.kind).cloned();
        if request.embedding.is_none() && embedder.is_some() && !request.text.trim().is_empty() {
            self.counters.embedded_texts.fetch_add(1, Ordering::Relaxed);
        }
        let factors = self
            .config
            .fusion
            .feedback
            .then(|| self.feedback_factors(&request.tenant_id, request.kind));
        // The query id carries what feedback needs: a search writes nothing.
        let query_id = |base: String, top: Option<&crate::query::Hit>| {
            super::feedback::query_id(&self.id_key, base, &request.tenant_id, request.kind, top)
        };
        let answers = crate::rank::answers_embedder(&embedders);
        let searcher = Searcher {
            query_id: &query_id,
            log_selection: true,
            answers: answers.as_deref(),
        };
        search_with_id(
            &self.local,
            &self.config,
            request,
            embedder.as_deref(),
            factors,
            &searcher,
            None,
        )
    }

    fn turn(&self, request: &TurnRequest) -> Result<TurnResponse> {
        self.local.searchable()?;
        let embedders = self.embedders();
        let factors = |kind: Kind| {
            self.config
                .fusion
                .feedback
                .then(|| self.feedback_factors(&request.tenant_id, kind))
        };
        let query_id = |kind: Kind, base: String, top: Option<&crate::query::Hit>| {
            super::feedback::query_id(&self.id_key, base, &request.tenant_id, kind, top)
        };
        let run = Run {
            config: &self.config,
            embedders: &embedders,
            factors: &factors,
            query_id: &query_id,
            embedded: &|| {
                self.counters.embedded_texts.fetch_add(1, Ordering::Relaxed);
            },
            turn_id: &|base, tops| {
                super::feedback::turn_id(&self.id_key, base, &request.tenant_id, tops)
            },
            beside: true,
        };
        run.turn(&self.local, request)
    }
}

impl Reader {
    /// Runs a search.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) for an invalid request
    /// (a step without its scenario, a context or metadata filter on rules, a scenario on
    /// chunks); [`ErrorKind::DimensionMismatch`](crate::ErrorKind::DimensionMismatch) for
    /// a query vector of another dimension than the index's;
    /// [`ErrorKind::NonFiniteScore`](crate::ErrorKind::NonFiniteScore) for a NaN in it;
    /// embedder and storage errors.
    pub fn search(&self, request: &SearchRequest) -> Result<SearchResponse> {
        self.inner.search(request)
    }

    /// Runs one turn of a conversation: the scenario, the rules, the memory and the
    /// tools for one message, within its token budget (see [`crate::turn`]).
    ///
    /// The message is embedded and analysed once; the memory search runs beside the
    /// scenario, rules and tools searches. Each part keeps its own gate and
    /// selection: a message about nothing the index holds gets an empty turn.
    ///
    /// # Example
    ///
    /// ```
    /// use ruchedb::{Engine, Rule, Scenario, TurnRequest};
    ///
    /// let engine = Engine::builder().temporary()?;
    /// engine.upsert_scenarios([Scenario::new("returns", "Returns and refunds", "The customer sends an item back")
    ///     .with_examples(["I want to return my shoes", "how do I send this back?"])])?;
    /// engine.upsert_rules([Rule::new("label", "the customer wants to return an item", "email a return label")
    ///     .with_patterns(["I want to return my shoes", "how do I send it back"])
    ///     .with_scope(ruchedb::Scope::scenario("returns"))])?;
    /// engine.commit()?;
    ///
    /// let turn = engine.turn(&TurnRequest::new("I want to return my shoes").with_budget_tokens(200))?;
    /// assert_eq!(turn.scenario.active.as_deref(), Some("returns"));
    /// assert_eq!(turn.rules.hits[0].id, "label");
    /// assert!(ruchedb::count_tokens(&turn.render()) <= 200);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Engine::search`](crate::Reader::search), and [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput)
    /// for a step without its scenario.
    pub fn turn(&self, request: &TurnRequest) -> Result<TurnResponse> {
        self.inner.turn(request)
    }
}
