//! A generated memory of support notes that name identifiers, and queries that ask about
//! one identifier: the identifier benchmark of `crates/research/src/bin/relevance.rs` and the identifier
//! tests (`tests/it/relevance.rs`), from one seed so both see the same corpus.
//!
//! Each note mentions one or two identifiers (order and ticket numbers, SKUs, lot codes,
//! error codes), sometimes beside a look-alike one character off ("Not to be confused
//! with NW-15609."), with an importance from 1 to 10 and a date within the year before
//! [`NOW`]. A query names one identifier that some note mentions, in plain words or
//! alone; a hit is right when its text contains that identifier verbatim.

#![allow(dead_code)]

use rand::prelude::*;
use rand_chacha::ChaCha8Rng;

/// The `now` of every query: notes are dated within the year before it.
pub const NOW: &str = "2026-11-21T12:00:00Z";
const NOW_UNIX: i64 = 1_795_262_400;

/// One generated note.
pub struct Note {
    pub id: String,
    pub content: String,
    pub importance: u8,
    /// Unix seconds.
    pub created_at: i64,
    pub context_id: String,
    /// The identifiers the note is about (not its look-alikes).
    pub identifiers: Vec<String>,
}

/// One generated query.
pub struct IdQuery {
    pub id: String,
    pub text: String,
    /// The identifier asked about.
    pub identifier: String,
}

const PRODUCTS: &[&str] = &[
    "tent",
    "sleeping bag",
    "headlamp",
    "rain jacket",
    "hiking boots",
    "backpack",
    "stove",
    "trekking poles",
    "water filter",
    "camp chair",
    "down vest",
    "gas canister",
];
const ERROR_WORDS: &[&str] = &[
    "PAY", "DECLINED", "TIMEOUT", "AUTH", "CARD", "SHIP", "LABEL", "ADDRESS", "STOCK", "SYNC",
];
const SKU_WORDS: &[&str] = &[
    "LUMEN", "TERRA", "NIMBUS", "RIDGE", "CASCADE", "ALPINE", "EMBER", "DRIFT", "SUMMIT",
];

fn order(rng: &mut ChaCha8Rng) -> String {
    format!("NW-{}", rng.random_range(10_000..100_000))
}

fn ticket(rng: &mut ChaCha8Rng) -> String {
    format!("TKT-{}", rng.random_range(100_000..1_000_000))
}

fn sku(rng: &mut ChaCha8Rng) -> String {
    let prefix = ["HL", "TN", "SB", "BP", "RJ"][rng.random_range(0..5)];
    let word = SKU_WORDS[rng.random_range(0..SKU_WORDS.len())];
    format!("{prefix}-{word}-{}", rng.random_range(100..1000))
}

fn lot(rng: &mut ChaCha8Rng) -> String {
    format!("L{}", rng.random_range(1000..10_000))
}

fn error_code(rng: &mut ChaCha8Rng) -> String {
    let a = ERROR_WORDS[rng.random_range(0..ERROR_WORDS.len())];
    let mut b = ERROR_WORDS[rng.random_range(0..ERROR_WORDS.len())];
    if a == b {
        b = "FAILED";
    }
    format!("{a}_{b}_{}", rng.random_range(10..100))
}

/// The same identifier with one digit changed.
fn look_alike(rng: &mut ChaCha8Rng, id: &str) -> String {
    let digits: Vec<usize> = id
        .char_indices()
        .filter(|(_, c)| c.is_ascii_digit())
        .map(|(i, _)| i)
        .collect();
    let at = digits[rng.random_range(0..digits.len())];
    let old = id.as_bytes()[at] - b'0';
    let new = (old + rng.random_range(1..10)) % 10;
    format!("{}{}{}", &id[..at], new, &id[at + 1..])
}

fn product(rng: &mut ChaCha8Rng) -> &'static str {
    PRODUCTS[rng.random_range(0..PRODUCTS.len())]
}

/// A sentence about one identifier.
fn sentence(rng: &mut ChaCha8Rng, kind: usize, id: &str) -> String {
    let p = product(rng);
    let options: Vec<String> = match kind {
        0 => vec![
            format!(
                "Order {id} ({p}) shipped late; the customer asked for a refund of the shipping fee."
            ),
            format!(
                "Customer reports order {id} arrived with a damaged {p}; replacement promised."
            ),
            format!("Order {id} was split in two parcels, the {p} follows next week."),
            format!("Address on order {id} corrected before dispatch; {p} on its way."),
        ],
        1 => vec![
            format!(
                "Ticket {id} escalated to tier 2: the {p} warranty claim is waiting for photos."
            ),
            format!("Closed ticket {id} after the customer confirmed the {p} works again."),
            format!(
                "Ticket {id}: customer unhappy with the wait, offered a discount on the next {p}."
            ),
        ],
        2 => vec![
            format!(
                "SKU {id} is back in stock; the customer on the waiting list wants the {p} reserved."
            ),
            format!("Product {id} has a known zipper issue, suggest the newer model."),
            format!("Customer asked whether {id} fits the {p} they bought last year."),
        ],
        3 => vec![
            format!("Lot {id} is part of the recall notice; check the label inside the {p}."),
            format!("The {p} from lot {id} passed inspection, nothing to do."),
            format!("Customer's {p} comes from lot {id}, offered a free exchange."),
        ],
        _ => vec![
            format!("Checkout failed with {id} while paying for a {p}; advised another card."),
            format!("Error {id} again at payment, the bank blocked the transaction."),
            format!("Logs show {id} for the {p} order; the payment gateway retried."),
        ],
    };
    options[rng.random_range(0..options.len())].clone()
}

fn identifier(rng: &mut ChaCha8Rng, kind: usize) -> String {
    match kind {
        0 => order(rng),
        1 => ticket(rng),
        2 => sku(rng),
        3 => lot(rng),
        _ => error_code(rng),
    }
}

/// `n` notes and `queries` queries, from `seed`.
pub fn generate(n: usize, queries: usize, seed: u64) -> (Vec<Note>, Vec<IdQuery>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut notes = Vec::with_capacity(n);
    for i in 0..n {
        let count = if rng.random_bool(0.3) { 2 } else { 1 };
        let mut identifiers = Vec::new();
        let mut parts = Vec::new();
        for _ in 0..count {
            let kind = rng.random_range(0..5);
            let id = identifier(&mut rng, kind);
            parts.push(sentence(&mut rng, kind, &id));
            if rng.random_bool(0.25) {
                let other = look_alike(&mut rng, &id);
                parts.push(format!("Not to be confused with {other}."));
            }
            identifiers.push(id);
        }
        let age_secs = rng.random_range(0..365 * 24 * 3600);
        notes.push(Note {
            id: format!("note-{i:06}"),
            content: parts.join(" "),
            importance: rng.random_range(1..=10),
            created_at: NOW_UNIX - age_secs,
            context_id: format!("customer-{}", rng.random_range(1000..1000 + n / 10 + 1)),
            identifiers,
        });
    }
    let templates = [
        "any update on {}",
        "look up {} for me",
        "{}",
        "what do we know about {}?",
        "customer is asking about {}",
        "status of {} please",
        "did anything happen with {}",
    ];
    let mut out = Vec::with_capacity(queries);
    for q in 0..queries {
        let note = &notes[rng.random_range(0..notes.len())];
        let identifier = note.identifiers[rng.random_range(0..note.identifiers.len())].clone();
        let template = templates[rng.random_range(0..templates.len())];
        out.push(IdQuery {
            id: format!("idq-{q:04}"),
            text: template.replace("{}", &identifier),
            identifier,
        });
    }
    (notes, out)
}
