//! Feedback (seed 004): which leg found the top hit of useful answers.

use std::sync::atomic::Ordering;

use super::{Engine, Inner};
use crate::feedback::FeedbackWindow;
use crate::fusion::{LegFactors, Legs};
use crate::query::FoundBy;
use crate::{Error, ErrorKind, Result};

/// Query log entries kept for feedback (the most recent searches with hits).
const QUERY_LOG_KEEP: usize = 10_000;
/// The query log is pruned every this many searches.
const QUERY_LOG_PRUNE_EVERY: u64 = 1_000;

const TEXT_BIT: u8 = 1;
const VECTOR_BIT: u8 = 2;

impl Engine {
    /// Records whether the response of search `query_id` was useful, crediting the legs
    /// that found its top hit; returns the feedback window after the record.
    ///
    /// The window (the last 100 records) is persisted. With `fusion.feedback` on, a leg
    /// with at least 10 records gets its weight multiplied by `0.2 + useful_rate * 1.6`
    /// in later searches.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] when the query id is unknown (never issued, or older than
    /// the last 10,000 searches with hits); storage errors.
    pub fn feedback(&self, query_id: &str, useful: bool) -> Result<FeedbackWindow> {
        let inner = &self.inner;
        let legs = inner.store.logged_query(query_id)?.ok_or_else(|| {
            Error::new(ErrorKind::NotFound {
                what: format!("query `{query_id}` (no search with hits has this id)"),
            })
        })?;
        let found_by = Legs {
            text: legs & TEXT_BIT != 0,
            vector: legs & VECTOR_BIT != 0,
        };
        let mut window = inner.lock_feedback();
        window.record(found_by, useful);
        inner.store.save_feedback(window.entries())?;
        Ok(window.clone())
    }

    /// The feedback window.
    pub fn feedback_window(&self) -> FeedbackWindow {
        self.inner.lock_feedback().clone()
    }

    /// Forgets every feedback record.
    ///
    /// # Errors
    ///
    /// Storage errors.
    pub fn reset_feedback(&self) -> Result<()> {
        let mut window = self.inner.lock_feedback();
        window.reset();
        self.inner.store.save_feedback(window.entries())
    }
}

impl Inner {
    pub(crate) fn lock_feedback(&self) -> std::sync::MutexGuard<'_, FeedbackWindow> {
        self.feedback.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn feedback_factors(&self) -> LegFactors {
        self.lock_feedback().factors()
    }

    /// Logs the legs that found a response's top hit, for later feedback.
    pub(crate) fn log_query(&self, query_id: &str, found_by: FoundBy) -> Result<()> {
        let legs = (u8::from(found_by.text) * TEXT_BIT) | (u8::from(found_by.vector) * VECTOR_BIT);
        self.store.log_query(query_id, legs)?;
        let n = self.queries_logged.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_multiple_of(QUERY_LOG_PRUNE_EVERY) {
            self.store.prune_query_log(QUERY_LOG_KEEP)?;
        }
        Ok(())
    }
}
