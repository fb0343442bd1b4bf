//! Feedback (seed 004): which leg found the top hit of useful answers.

use std::sync::atomic::Ordering;

use super::{Engine, Inner};
use crate::feedback::FeedbackWindow;
use crate::fusion::{LegFactors, Legs};
use crate::query::FoundBy;
use crate::{Error, ErrorKind, Kind, Result};

/// Query log entries kept for feedback (the most recent searches with hits).
const QUERY_LOG_KEEP: usize = 10_000;
/// The query log is pruned every this many searches.
const QUERY_LOG_PRUNE_EVERY: u64 = 1_000;
/// Query log entries buffered in memory before they are written.
const QUERY_LOG_BATCH: usize = 256;

const TEXT_BIT: u8 = 1;
const VECTOR_BIT: u8 = 2;
/// Feedback was recorded for the query (once per query).
const GIVEN_BIT: u8 = 4;
/// The recorded feedback said useful.
const USEFUL_BIT: u8 = 8;
/// The graph leg found the top hit.
const GRAPH_BIT: u8 = 16;
/// The search was of chunks (entries without it, older ones included, are of rules).
const CHUNK_BIT: u8 = 32;
/// The search was of scenarios.
const SCENARIO_BIT: u8 = 64;
/// The search was of tools.
const TOOL_BIT: u8 = 128;

/// The bits that record a search's kind (none: rules).
fn kind_bits(kind: Kind) -> u8 {
    match kind {
        Kind::Rule => 0,
        Kind::Chunk => CHUNK_BIT,
        Kind::Scenario => SCENARIO_BIT,
        Kind::Tool => TOOL_BIT,
    }
}

/// The kind a query log entry's bits record.
fn kind_of_bits(legs: u8) -> Kind {
    Kind::ALL
        .into_iter()
        .find(|&kind| kind != Kind::Rule && legs & kind_bits(kind) != 0)
        .unwrap_or(Kind::Rule)
}

/// The key of a feedback window: rules under the tenant's name (as before windows were
/// per kind), other kinds under the tenant's name and a suffix no tenant name can hold.
fn window_key(tenant: &str, kind: Kind) -> String {
    match kind {
        Kind::Rule => tenant.to_string(),
        other => format!("{tenant}\u{0}{other}"),
    }
}

impl Engine {
    /// Records whether the response of search `query_id` was useful, crediting the legs
    /// that found its top hit; returns the feedback window of the search's tenant and
    /// kind after the record.
    ///
    /// Each tenant has a window per kind (the last 100 records), persisted: one tenant's
    /// feedback never weighs another's searches, nor feedback on memory the rules'. With `fusion.feedback` on, a leg with at
    /// least 10 records gets its weight multiplied by `0.2 + useful_rate * 1.6` in that
    /// tenant's later searches.
    ///
    /// A query's feedback counts once: giving the same answer again changes nothing,
    /// and a contradicting answer is an error.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] when the query id is unknown (never issued, or older than
    /// the last 10,000 searches with hits); [`ErrorKind::InvalidInput`] when the query
    /// already has the other answer; storage errors.
    pub fn feedback(&self, query_id: &str, useful: bool) -> Result<FeedbackWindow> {
        let inner = &self.inner;
        let mut windows = inner.lock_feedback();
        let logged = inner.logged_query(query_id)?.ok_or_else(|| {
            Error::new(ErrorKind::NotFound {
                what: format!("query `{query_id}` (no search with hits has this id)"),
            })
        })?;
        let legs = logged.legs;
        let kind = kind_of_bits(legs);
        let key = window_key(&logged.tenant, kind);
        let window = windows.entry(key.clone()).or_default();
        if legs & GIVEN_BIT != 0 {
            let given = legs & USEFUL_BIT != 0;
            if given == useful {
                return Ok(window.clone());
            }
            return Err(Error::invalid_input(format!(
                "query `{query_id}` was already marked {}; feedback counts once per query",
                if given { "useful" } else { "not useful" }
            )));
        }
        let found_by = Legs {
            text: legs & TEXT_BIT != 0,
            vector: legs & VECTOR_BIT != 0,
            graph: legs & GRAPH_BIT != 0,
        };
        // Marked first: a crash between the two loses this feedback rather than
        // letting a retry count it twice.
        let marked = LoggedQuery {
            legs: legs | GIVEN_BIT | if useful { USEFUL_BIT } else { 0 },
            tenant: logged.tenant.clone(),
        };
        inner.flush_query_log()?;
        inner
            .store
            .log_queries(&[(query_id.to_string(), marked.encode())])?;
        window.record(found_by, useful);
        inner.store.save_feedback(&key, window.entries())?;
        Ok(window.clone())
    }

    /// The feedback window of `tenant`'s searches of `kind`.
    pub fn feedback_window(&self, tenant: &str, kind: Kind) -> FeedbackWindow {
        self.inner
            .lock_feedback()
            .get(&window_key(tenant, kind))
            .cloned()
            .unwrap_or_default()
    }

    /// Forgets every feedback record of every tenant.
    ///
    /// # Errors
    ///
    /// Storage errors.
    pub fn reset_feedback(&self) -> Result<()> {
        let mut windows = self.inner.lock_feedback();
        windows.clear();
        self.inner.store.clear_feedback()
    }
}

/// What the query log keeps of a search: the legs that found its top hit (and whether
/// feedback was given), and its tenant.
struct LoggedQuery {
    legs: u8,
    tenant: String,
}

impl LoggedQuery {
    /// `[legs]` then the tenant's bytes (none for the default tenant, as before tenants
    /// were logged).
    fn encode(&self) -> Vec<u8> {
        let mut bytes = vec![self.legs];
        if self.tenant != crate::DEFAULT_TENANT {
            bytes.extend_from_slice(self.tenant.as_bytes());
        }
        bytes
    }

    fn decode(bytes: &[u8]) -> Result<LoggedQuery> {
        let (&legs, tenant) = bytes
            .split_first()
            .ok_or_else(|| Error::corrupt("query log entry"))?;
        let tenant = if tenant.is_empty() {
            crate::DEFAULT_TENANT.to_string()
        } else {
            String::from_utf8(tenant.to_vec()).map_err(|_| Error::corrupt("query log entry"))?
        };
        Ok(LoggedQuery { legs, tenant })
    }
}

impl Inner {
    pub(crate) fn lock_feedback(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, FeedbackWindow>> {
        self.feedback.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn feedback_factors(&self, tenant: &str, kind: Kind) -> LegFactors {
        self.lock_feedback()
            .get(&window_key(tenant, kind))
            .map(FeedbackWindow::factors)
            .unwrap_or_default()
    }

    /// Logs the legs that found a response's top hit and its tenant, for later
    /// feedback. Buffered in memory and written to the store in batches, at commits and
    /// at close.
    pub(crate) fn log_query(
        &self,
        query_id: &str,
        tenant: &str,
        kind: Kind,
        found_by: FoundBy,
    ) -> Result<()> {
        let legs = (u8::from(found_by.text) * TEXT_BIT)
            | (u8::from(found_by.vector) * VECTOR_BIT)
            | (u8::from(found_by.graph) * GRAPH_BIT)
            | kind_bits(kind);
        let entry = LoggedQuery {
            legs,
            tenant: tenant.to_string(),
        };
        let mut pending = self.lock_query_log();
        pending.push((query_id.to_string(), entry.encode()));
        if pending.len() >= QUERY_LOG_BATCH {
            self.flush_query_log_locked(&mut pending)?;
        }
        Ok(())
    }

    /// Writes the buffered query log entries to the store.
    pub(crate) fn flush_query_log(&self) -> Result<()> {
        let mut pending = self.lock_query_log();
        self.flush_query_log_locked(&mut pending)
    }

    fn flush_query_log_locked(&self, pending: &mut Vec<(String, Vec<u8>)>) -> Result<()> {
        if pending.is_empty() {
            return Ok(());
        }
        self.store.log_queries(pending)?;
        let added = pending.len() as u64;
        let before = self.queries_logged.fetch_add(added, Ordering::Relaxed);
        pending.clear();
        // Prune whenever the count crosses a multiple of QUERY_LOG_PRUNE_EVERY.
        if before / QUERY_LOG_PRUNE_EVERY != (before + added) / QUERY_LOG_PRUNE_EVERY {
            self.store.prune_query_log(QUERY_LOG_KEEP)?;
        }
        Ok(())
    }

    /// What was logged for a query id, buffered or stored.
    fn logged_query(&self, query_id: &str) -> Result<Option<LoggedQuery>> {
        let buffered = self
            .lock_query_log()
            .iter()
            .rev()
            .find(|(id, _)| id == query_id)
            .map(|(_, entry)| entry.clone());
        let bytes = match buffered {
            Some(bytes) => Some(bytes),
            None => self.store.logged_query(query_id)?,
        };
        bytes.map(|b| LoggedQuery::decode(&b)).transpose()
    }

    fn lock_query_log(&self) -> std::sync::MutexGuard<'_, Vec<(String, Vec<u8>)>> {
        self.query_log.lock().unwrap_or_else(|p| p.into_inner())
    }
}
