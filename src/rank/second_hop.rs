//! The second hop answers the question.
//!
//! "Who do I notify for NW-21881 and how?" names an order; the graph leg reaches the
//! order's note (hop 1) and, through the customer it names, the customer's notes (hop 2):
//! how to reach them, their language, where they live, their other orders. The question
//! shares no word with the note that answers it ("only answers text messages"), and the
//! customer's notes all share the customer with the order note, so neither the legs' scores
//! nor the graph can tell them apart. What tells them apart is what the question asks once
//! its identifiers are gone ("who do I notify for and how?") against what each note says
//! once its own are gone ("only answers text messages"): [`measure`] gives each second hop
//! that cosine, under the kind's embedder, and [`order`] puts them in that order, a note
//! about the linked entity before another record like the one the question named (the
//! customer's other orders: they are about those orders).

use crate::Result;
use crate::analysis::text::{self as analyzer, Analysis};
use crate::embed::Embedder;
use crate::model::metric;
use crate::retrieve::RetrievedDoc;

/// The most second hops measured per search: a bridge to a busy entity reaches many
/// documents, and the ones past this many in graph score would not be returned anyway.
const MEASURED: usize = 8;

/// `text` without the words that hold an identifier (a code: `NW-21881`, `CUST-48213`).
pub(crate) fn without_codes(text: &str) -> String {
    text.split_whitespace()
        .filter(|word| {
            !analyzer::tokens(Analysis::Ident, word)
                .iter()
                .any(|token| analyzer::is_code(token))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// An identifier's family: its letters before the first digit or separator (`nw` of
/// `nw-21881`); `None` when it starts with neither letters.
fn family(code: &str) -> Option<&str> {
    let end = code
        .find(|c: char| !c.is_alphabetic())
        .unwrap_or(code.len());
    (end > 0).then(|| &code[..end])
}

/// Whether `text` names another identifier of the family of `entity` (the query entity
/// a path starts from): another order, when the question named an order.
pub(crate) fn names_a_sibling(entity: &str, text: &str) -> bool {
    let Some(family_of_entity) = family(entity) else {
        return false;
    };
    analyzer::tokens(Analysis::Ident, text).iter().any(|token| {
        token != entity && analyzer::is_code(token) && family(token) == Some(family_of_entity)
    })
}

/// Gives each candidate the graph leg reached in two hops how well it answers what
/// `query` asks ([`crate::query::GraphPath::answers`]). Nothing is measured without an
/// embedder, or when the query asks nothing beside its identifiers ("any update on
/// NW-21881?").
///
/// # Errors
///
/// The embedder's.
pub(crate) fn measure(
    candidates: &mut [RetrievedDoc],
    query: &str,
    embedder: Option<&dyn Embedder>,
) -> Result<()> {
    let Some(embedder) = embedder else {
        return Ok(());
    };
    let mut reached: Vec<usize> = candidates
        .iter()
        .enumerate()
        .filter(|(_, c)| c.graph_path.as_ref().is_some_and(|p| p.via.is_some()))
        .map(|(i, _)| i)
        .collect();
    if reached.is_empty() {
        return Ok(());
    }
    let asked = without_codes(query);
    if analyzer::tokens(Analysis::Words, &asked).is_empty() {
        return Ok(());
    }
    if reached.len() > MEASURED {
        reached.sort_by(|&a, &b| {
            let score = |i: usize| candidates[i].graph.unwrap_or(0.0);
            score(b)
                .total_cmp(&score(a))
                .then_with(|| candidates[a].id().cmp(candidates[b].id()))
        });
        reached.truncate(MEASURED);
    }
    let said: Vec<String> = reached
        .iter()
        .map(|&i| without_codes(&candidates[i].document.text()))
        .collect();
    let mut texts: Vec<&str> = Vec::with_capacity(said.len() + 1);
    texts.push(&asked);
    texts.extend(said.iter().map(String::as_str));
    let mut vectors = embedder.embed_batch(&texts)?;
    // Normalised in place, a cosine is a dot product; a vector with no direction
    // answers nothing (0).
    let directed: Vec<bool> = vectors.iter_mut().map(|v| metric::normalize(v)).collect();
    let Some(((asked, notes), (asked_directed, notes_directed))) =
        vectors.split_first().zip(directed.split_first())
    else {
        return Ok(());
    };
    for ((&i, note), &note_directed) in reached.iter().zip(notes).zip(notes_directed) {
        if let Some(path) = candidates[i].graph_path.as_mut() {
            let directed = *asked_directed && note_directed && asked.len() == note.len();
            path.answers = Some(if directed {
                metric::dot(asked, note)
            } else {
                0.0
            });
        }
    }
    Ok(())
}

/// Where a second hop comes among the others: a note about the linked entity before one
/// that names a sibling of the query entity, then by what it answers (unmeasured last),
/// then by its rank.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HopOrder {
    sibling: bool,
    answers: Option<f32>,
    rank: usize,
}

impl HopOrder {
    /// The order of a second hop reached from query entity `entity`, of text `text`, at
    /// `rank` in the ranking.
    pub(crate) fn new(entity: &str, text: &str, answers: Option<f32>, rank: usize) -> HopOrder {
        HopOrder {
            sibling: names_a_sibling(entity, text),
            answers,
            rank,
        }
    }

    /// By rank alone.
    pub(crate) fn ranked(rank: usize) -> HopOrder {
        HopOrder {
            sibling: false,
            answers: None,
            rank,
        }
    }

    pub(crate) fn cmp(&self, other: &HopOrder) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        let answers = match (self.answers, other.answers) {
            (Some(a), Some(b)) => b.total_cmp(&a),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        self.sibling
            .cmp(&other.sibling)
            .then(answers)
            .then(self.rank.cmp(&other.rank))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_left_out_and_families_compared() {
        assert_eq!(
            without_codes("who do I notify for NW-21881 and how?"),
            "who do I notify for and how?"
        );
        assert_eq!(
            without_codes("CUST-48213 only answers text messages."),
            "only answers text messages."
        );
        assert!(names_a_sibling(
            "nw-21881",
            "Order NW-21882 was placed by CUST-1."
        ));
        assert!(!names_a_sibling(
            "nw-21881",
            "CUST-48213 speaks Portuguese."
        ));
        assert!(!names_a_sibling("nw-21881", "Order NW-21881 shipped."));
        assert_eq!(family("nw-21881"), Some("nw"));
        assert_eq!(family("2024-05"), None);
    }

    #[test]
    fn measured_answers_come_first_and_siblings_last() {
        let mut keys = [
            HopOrder::new("nw-11", "Order NW-12 left.", Some(0.9), 0),
            HopOrder::new("nw-11", "CUST-10 prefers email.", None, 1),
            HopOrder::new("nw-11", "CUST-10 speaks Greek.", Some(0.2), 2),
            HopOrder::new("nw-11", "CUST-10 lives in Faro.", Some(0.5), 3),
        ];
        keys.sort_by(HopOrder::cmp);
        let ranks: Vec<usize> = keys.iter().map(|k| k.rank).collect();
        assert_eq!(ranks, [3, 2, 1, 0]);
    }
}
