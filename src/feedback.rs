//! Feedback on search results, and the leg-weight factors it gives (seed 004).
//!
//! When a user marks a response useful or not, the engine records which legs found the
//! response's top hit. [`FeedbackWindow`] keeps the last 100 records and gives each leg a
//! factor `0.2 + rate * 1.6` (`rate` = useful / total, so from 0.2 to 1.8) once the leg
//! has at least 10 records in the window, and 1.0 before that. The factors multiply the
//! configured weights before they are renormalised ([`FusionWeights::in_use`]).
//!
//! This module is pure: the engine persists [`FeedbackWindow::entries`] and restores them
//! with [`FeedbackWindow::from_entries`].
//!
//! [`FusionWeights::in_use`]: crate::fusion::FusionWeights::in_use

use serde::{Deserialize, Serialize};

use crate::model::leg::PerLeg;

pub use crate::model::leg::Leg;

/// One feedback record: a leg that found a response's top hit, and whether the response
/// was useful.
///
/// As in seed 004 (one record per strategy of a query log), a top hit found by both legs
/// gives two records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeedbackEntry {
    /// The leg that found the top hit.
    pub leg: Leg,
    /// Whether the user marked the response useful.
    pub useful: bool,
}

/// The feedback counts of one leg in the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct LegFeedback {
    /// Records marked useful.
    pub useful: usize,
    /// All records.
    pub total: usize,
}

impl LegFeedback {
    /// The leg's weight factor: `0.2 + (useful / total) * 1.6` with at least
    /// [`FeedbackWindow::MIN_ENTRIES`] records, 1.0 with fewer.
    pub fn factor(&self) -> f64 {
        if self.total < FeedbackWindow::MIN_ENTRIES {
            return 1.0;
        }
        let rate = self.useful as f64 / self.total as f64;
        0.2 + rate * 1.6
    }
}

/// The last 100 feedback records and the leg factors they give (seed 004's
/// `AdaptiveWeightManager`).
///
/// Serialises as the list of its entries, oldest first.
///
/// # Example
///
/// ```
/// use ruchedb::PerLeg;
/// use ruchedb::feedback::FeedbackWindow;
///
/// let mut feedback = FeedbackWindow::new();
/// for _ in 0..20 {
///     feedback.record(PerLeg::TEXT, true); // only BM25 found the top hit, and it helped
/// }
/// let factors = feedback.factors();
/// assert!((factors.text - 1.8).abs() < 1e-12);
/// assert_eq!(factors.vector, 1.0); // no vector records yet
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(from = "Vec<FeedbackEntry>", into = "Vec<FeedbackEntry>")]
pub struct FeedbackWindow {
    /// Oldest first; never more than [`FeedbackWindow::CAPACITY`].
    entries: Vec<FeedbackEntry>,
}

impl FeedbackWindow {
    /// How many records the window keeps (the newest).
    pub const CAPACITY: usize = 100;

    /// How many records a leg needs in the window before its factor moves from 1.0.
    pub const MIN_ENTRIES: usize = 10;

    /// An empty window: both factors 1.0.
    pub fn new() -> FeedbackWindow {
        FeedbackWindow::default()
    }

    /// A window holding the last [`CAPACITY`](Self::CAPACITY) of `entries` (oldest
    /// first), as [`entries`](Self::entries) returned them.
    pub fn from_entries(entries: impl IntoIterator<Item = FeedbackEntry>) -> FeedbackWindow {
        let mut window = FeedbackWindow {
            entries: entries.into_iter().collect(),
        };
        window.trim();
        window
    }

    /// Records feedback on one response: one record per leg that found its top hit
    /// (text first, then vector), dropping the oldest records beyond the capacity.
    ///
    /// Returns how many records were added (0 when `found_by` is empty: a hit found by
    /// neither leg tells nothing about them).
    pub fn record(&mut self, found_by: PerLeg<bool>, useful: bool) -> usize {
        let before = self.entries.len();
        for leg in Leg::ALL {
            if found_by[leg] {
                self.entries.push(FeedbackEntry { leg, useful });
            }
        }
        let added = self.entries.len() - before;
        self.trim();
        added
    }

    /// The records in the window, oldest first: what the engine persists.
    pub fn entries(&self) -> &[FeedbackEntry] {
        &self.entries
    }

    /// The number of records in the window.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the window has no records.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Forgets every record: both factors return to 1.0.
    pub fn reset(&mut self) {
        self.entries.clear();
    }

    /// The counts of one leg in the window.
    pub fn stats(&self, leg: Leg) -> LegFeedback {
        self.entries.iter().filter(|entry| entry.leg == leg).fold(
            LegFeedback::default(),
            |stats, entry| LegFeedback {
                useful: stats.useful + usize::from(entry.useful),
                total: stats.total + 1,
            },
        )
    }

    /// Each leg's weight factor (see [`LegFeedback::factor`]), for
    /// [`FusionWeights::in_use`](crate::fusion::FusionWeights::in_use).
    pub fn factors(&self) -> PerLeg<f64> {
        PerLeg::from_fn(|leg| self.stats(leg).factor())
    }

    /// Drops the oldest records beyond the capacity.
    fn trim(&mut self) {
        let excess = self.entries.len().saturating_sub(Self::CAPACITY);
        self.entries.drain(..excess);
    }
}

impl From<Vec<FeedbackEntry>> for FeedbackWindow {
    fn from(entries: Vec<FeedbackEntry>) -> FeedbackWindow {
        FeedbackWindow::from_entries(entries)
    }
}

impl From<FeedbackWindow> for Vec<FeedbackEntry> {
    fn from(window: FeedbackWindow) -> Vec<FeedbackEntry> {
        window.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fusion::FusionWeights;
    use proptest::prelude::*;

    /// Records `(legs, useful, times)` in order and checks the factors `(vector, text)`.
    #[track_caller]
    fn check(records: &[(PerLeg<bool>, bool, usize)], expected: (f64, f64)) {
        let mut window = FeedbackWindow::new();
        for &(legs, useful, times) in records {
            for _ in 0..times {
                window.record(legs, useful);
            }
        }
        let factors = window.factors();
        assert!(
            (factors.vector - expected.0).abs() < 1e-12
                && (factors.text - expected.1).abs() < 1e-12,
            "got {factors:?}, expected {expected:?}"
        );
        assert!(window.len() <= FeedbackWindow::CAPACITY);
    }

    #[test]
    fn useful_keyword_hits_raise_the_keyword_factor() {
        // Seed 004's test: 20 useful records for the keyword leg alone.
        check(&[(PerLeg::TEXT, true, 20)], (1.0, 1.8));
        check(&[(PerLeg::VECTOR, false, 20)], (0.2, 1.0));
    }

    #[test]
    fn fewer_than_ten_records_change_nothing() {
        check(&[], (1.0, 1.0));
        check(&[(PerLeg::TEXT, false, 9)], (1.0, 1.0));
        check(
            &[(PerLeg::TEXT, true, 9), (PerLeg::VECTOR, false, 9)],
            (1.0, 1.0),
        );
        // The tenth record counts.
        check(&[(PerLeg::TEXT, false, 10)], (1.0, 0.2));
        // One leg can have enough while the other has not.
        check(
            &[(PerLeg::TEXT, true, 10), (PerLeg::VECTOR, true, 9)],
            (1.0, 1.8),
        );
    }

    #[test]
    fn mixed_rates() {
        check(
            &[
                (PerLeg::TEXT, true, 15),
                (PerLeg::TEXT, false, 5),
                (PerLeg::VECTOR, true, 5),
                (PerLeg::VECTOR, false, 15),
            ],
            (0.2 + 0.25 * 1.6, 0.2 + 0.75 * 1.6),
        );
        // A top hit both legs found counts for both.
        check(
            &[(PerLeg::BOTH, true, 6), (PerLeg::BOTH, false, 4)],
            (1.16, 1.16),
        );
        check(
            &[(PerLeg::BOTH, true, 10), (PerLeg::TEXT, false, 10)],
            (1.8, 1.0),
        );
        // A hit neither leg found records nothing.
        check(&[(PerLeg::NONE, false, 50)], (1.0, 1.0));
    }

    #[test]
    fn the_window_keeps_the_last_hundred_records() {
        // 100 useless, then 100 useful: only the useful ones remain.
        check(
            &[(PerLeg::TEXT, false, 100), (PerLeg::TEXT, true, 100)],
            (1.0, 1.8),
        );
        // 60 useless, then 50 useful: 50 and 50 remain.
        check(
            &[(PerLeg::TEXT, false, 60), (PerLeg::TEXT, true, 50)],
            (1.0, 1.0),
        );
        // Records of both legs share the window: 95 old vector records push out.
        check(
            &[(PerLeg::VECTOR, true, 95), (PerLeg::TEXT, false, 100)],
            (1.0, 0.2),
        );
        check(
            &[(PerLeg::VECTOR, true, 10), (PerLeg::TEXT, false, 90)],
            (1.8, 0.2),
        );
        // One more text record pushes a vector record out, below the minimum of 10.
        check(
            &[(PerLeg::VECTOR, true, 10), (PerLeg::TEXT, false, 91)],
            (1.0, 0.2),
        );
        let mut window = FeedbackWindow::new();
        for _ in 0..70 {
            window.record(PerLeg::BOTH, true);
        }
        assert_eq!(window.len(), 100);
        assert_eq!(
            window.stats(Leg::Text),
            LegFeedback {
                useful: 50,
                total: 50
            }
        );
    }

    #[test]
    fn record_reports_what_it_added() {
        let mut window = FeedbackWindow::new();
        assert_eq!(window.record(PerLeg::BOTH, true), 2);
        assert_eq!(window.record(PerLeg::VECTOR, false), 1);
        assert_eq!(window.record(PerLeg::NONE, true), 0);
        assert_eq!(
            window.entries(),
            [
                FeedbackEntry {
                    leg: Leg::Text,
                    useful: true
                },
                FeedbackEntry {
                    leg: Leg::Vector,
                    useful: true
                },
                FeedbackEntry {
                    leg: Leg::Vector,
                    useful: false
                },
            ]
        );
        assert_eq!(
            window.stats(Leg::Vector),
            LegFeedback {
                useful: 1,
                total: 2
            }
        );
    }

    #[test]
    fn reset_forgets_everything() {
        let mut window = FeedbackWindow::new();
        for _ in 0..30 {
            window.record(PerLeg::TEXT, true);
        }
        assert_ne!(window.factors(), PerLeg::ONES);
        window.reset();
        assert!(window.is_empty());
        assert_eq!(window.factors(), PerLeg::ONES);
    }

    #[test]
    fn entries_restore_the_window() {
        let mut window = FeedbackWindow::new();
        for i in 0..130 {
            window.record(
                if i % 3 == 0 {
                    PerLeg::BOTH
                } else {
                    PerLeg::TEXT
                },
                i % 2 == 0,
            );
        }
        let restored = FeedbackWindow::from_entries(window.entries().to_vec());
        assert_eq!(restored, window);
        assert_eq!(restored.factors(), window.factors());

        let json = serde_json::to_string(&window).unwrap();
        assert!(json.starts_with(r#"[{"leg":"#), "{json}");
        let back: FeedbackWindow = serde_json::from_str(&json).unwrap();
        assert_eq!(back, window);

        // More than the capacity keeps the newest.
        let many = vec![
            FeedbackEntry {
                leg: Leg::Text,
                useful: false
            };
            150
        ]
        .into_iter()
        .chain(vec![
            FeedbackEntry {
                leg: Leg::Vector,
                useful: true
            };
            20
        ]);
        let window = FeedbackWindow::from_entries(many);
        assert_eq!(window.len(), 100);
        assert_eq!(window.stats(Leg::Vector).total, 20);
        assert_eq!(window.entries()[99].leg, Leg::Vector);
        assert!(
            serde_json::from_str::<FeedbackWindow>(r#"[{"leg":"sparse","useful":true}]"#).is_err()
        );
        let graph: FeedbackWindow =
            serde_json::from_str(r#"[{"leg":"graph","useful":true}]"#).unwrap();
        assert_eq!(graph.stats(Leg::Graph).total, 1);
    }

    #[test]
    fn factors_feed_the_weights_in_use() {
        let mut window = FeedbackWindow::new();
        for _ in 0..20 {
            window.record(PerLeg::TEXT, true);
        }
        let weights = FusionWeights::default()
            .in_use(PerLeg::BOTH, window.factors())
            .unwrap();
        // 0.7 * 1.0 and 0.3 * 1.8, renormalised.
        assert!((weights.text_weight - 0.54 / 1.24).abs() < 1e-12);
        assert!(weights.text_weight > FusionWeights::default().text_weight);
    }

    fn arb_legs() -> impl Strategy<Value = PerLeg<bool>> {
        prop_oneof![
            Just(PerLeg::TEXT),
            Just(PerLeg::VECTOR),
            Just(PerLeg::BOTH),
            Just(PerLeg::NONE)
        ]
    }

    proptest! {
        #[test]
        fn factors_match_the_naive_oracle(
            records in prop::collection::vec((arb_legs(), any::<bool>()), 0..300),
        ) {
            let mut window = FeedbackWindow::new();
            for &(legs, useful) in &records {
                window.record(legs, useful);
            }
            // Seed 004: push one record per leg, keep the last 100, count per leg.
            let mut all: Vec<(Leg, bool)> = Vec::new();
            for &(legs, useful) in &records {
                if legs.text { all.push((Leg::Text, useful)); }
                if legs.vector { all.push((Leg::Vector, useful)); }
            }
            let last = &all[all.len().saturating_sub(100)..];
            let naive = |leg: Leg| {
                let total = last.iter().filter(|(l, _)| *l == leg).count();
                let useful = last.iter().filter(|(l, u)| *l == leg && *u).count();
                if total >= 10 { 0.2 + useful as f64 / total as f64 * 1.6 } else { 1.0 }
            };
            let factors = window.factors();
            prop_assert!((factors.text - naive(Leg::Text)).abs() < 1e-12);
            prop_assert!((factors.vector - naive(Leg::Vector)).abs() < 1e-12);
            prop_assert!((0.2..=1.8).contains(&factors.text));
            prop_assert!((0.2..=1.8).contains(&factors.vector));
            prop_assert_eq!(window.len(), last.len());
            prop_assert_eq!(FeedbackWindow::from_entries(window.entries().to_vec()), window);
        }
    }
}
