//! The graph leg on generated memories: facts reachable only through a shared entity,
//! and identifier lookups, with the graph leg on and off.
//!
//! `cargo run --release --example graph [CUSTOMERS] [SEED]` (default 2,000 customers).
//! Each customer (`CUST-48213`) has a contact-preference note, one or two order notes
//! naming it (`Order NW-15699 (tent) was placed by CUST-48213.`) and a few other notes.
//! A two-hop query names only an order ("how should we contact the customer of order
//! NW-15699?"): the preference note shares no word with it. An identifier query asks
//! about one order: the order note should come first. Every order note names one of five
//! warehouses (a crowded entity), and a third of the orders share a shipment note with
//! another customer's order (a bridge that leads astray).
//!
//! The last configuration switches seed 004's feedback factors on and first answers 100
//! other two-hop queries, marking each useful when the preference note is in its top 3
//! (what an agent that acted on the answer would report), then measures the same 300.

use ruchedb::{Chunk, Config, Engine, SearchRequest, Timestamp};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

const CHANNELS: [&str; 5] = ["email", "phone", "text message", "post", "chat"];
const ITEMS: [&str; 8] = [
    "tent",
    "stove",
    "backpack",
    "sleeping bag",
    "headlamp",
    "jacket",
    "boots",
    "water filter",
];
const TOPICS: [&str; 6] = [
    "the return policy",
    "a discount code",
    "delivery times",
    "a warranty claim",
    "sizing advice",
    "gift wrapping",
];

fn main() -> ruchedb::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let customers: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2_000);
    let seed: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(7);
    let mut rng = Rng(seed);
    let now = Timestamp::from_unix_millis(1_790_000_000_000);
    let day = 86_400_000i64;
    let mut chunks = Vec::new();
    let mut orders: Vec<(String, String)> = Vec::new(); // (order, customer)
    for c in 0..customers {
        let customer = format!("CUST-{}", 10_000 + c * 7 % 89_999);
        let when = |rng: &mut Rng| {
            Timestamp::from_unix_millis(now.unix_millis() - (rng.next() % 365) as i64 * day)
        };
        let importance = |rng: &mut Rng| (rng.next() % 10) as u8 + 1;
        chunks.push(
            Chunk::new(
                format!("pref-{c}"),
                format!(
                    "{customer} prefers to be contacted by {}",
                    rng.pick(&CHANNELS)
                ),
            )
            .with_importance(importance(&mut rng))
            .with_created_at(when(&mut rng)),
        );
        for k in 0..1 + rng.next() % 2 {
            let order = format!("NW-{}", 15_000 + c * 2 + k as usize);
            // Every order ships from one of five warehouses: an entity hundreds of
            // notes share, which must not bridge to them all.
            let warehouse = format!("WH-{}", 1_001 + rng.next() % 5);
            chunks.push(
                Chunk::new(
                    format!("order-{c}-{k}"),
                    format!(
                        "Order {order} ({}) was placed by {customer}, shipped from {warehouse}.",
                        rng.pick(&ITEMS)
                    ),
                )
                .with_importance(importance(&mut rng))
                .with_created_at(when(&mut rng)),
            );
            orders.push((order, customer.clone()));
        }
        for k in 0..rng.next() % 3 {
            chunks.push(
                Chunk::new(
                    format!("note-{c}-{k}"),
                    format!("{customer} asked about {}.", rng.pick(&TOPICS)),
                )
                .with_importance(importance(&mut rng))
                .with_created_at(when(&mut rng)),
            );
        }
    }
    // A third of the orders travel with another customer's order in one shipment: a
    // note that names both is a bridge to a stranger's order.
    for i in (0..orders.len().saturating_sub(1)).step_by(3) {
        let j = (i + 1 + (rng.next() % 50) as usize) % orders.len();
        chunks.push(Chunk::new(
            format!("shipment-{i}"),
            format!(
                "Orders {} and {} were consolidated into shipment SHP-{}.",
                orders[i].0,
                orders[j].0,
                70_000 + i
            ),
        ));
    }
    let queries: Vec<usize> = (0..300)
        .map(|_| (rng.next() % orders.len() as u64) as usize)
        .collect();
    let training: Vec<usize> = (0..100)
        .map(|_| (rng.next() % orders.len() as u64) as usize)
        .collect();
    let preference_of = |customer: &str| {
        chunks
            .iter()
            .find(|c| c.id.starts_with("pref-") && c.content.starts_with(customer))
            .map(|c| c.id.clone())
            .unwrap_or_default()
    };
    let two_hop_selected = |order: &str| {
        SearchRequest::chunks(format!(
            "how should we contact the customer of order {order}?"
        ))
        .with_now(now)
    };
    let two_hop = |order: &str| two_hop_selected(order).with_top_k(10);
    println!(
        "{} chunks, {customers} customers, {} orders, 300 queries",
        chunks.len(),
        orders.len()
    );
    let modes = [
        (false, false, false),
        (true, false, false),
        (true, true, false),
        (true, false, true),
    ];
    for (graph_on, adaptive, feedback) in modes {
        let mut config = Config::default();
        config.graph.enabled = graph_on;
        config.fusion.adaptive = adaptive;
        config.fusion.feedback = feedback;
        let engine = Engine::builder().with_config(config).temporary()?;
        engine.upsert_chunks(chunks.clone())?;
        engine.commit()?;
        if feedback {
            for &q in &training {
                let (order, customer) = &orders[q];
                let response = engine.search(&two_hop(order))?;
                let pref = preference_of(customer);
                let useful = response.hits.iter().take(3).any(|h| h.id == pref);
                if !response.hits.is_empty() {
                    engine.feedback(&response.query_id, useful)?;
                }
            }
        }
        let (mut top3, mut top10, mut first) = (0, 0, 0);
        // The default selection (no `top_k`): the answer among the first 3 it returns,
        // and how many hits it returns, for two-hop questions and identifier lookups.
        let (mut default3, mut default_hits, mut lookup_first, mut lookup_hits) = (0, 0, 0, 0);
        for &q in &queries {
            let (order, customer) = &orders[q];
            let pref = preference_of(customer);
            let hits = engine.search(&two_hop_selected(order))?.hits;
            default3 += usize::from(hits.iter().take(3).any(|h| h.id == pref));
            default_hits += hits.len();
            let lookup = SearchRequest::chunks(format!("any update on {order}?")).with_now(now);
            let hits = engine.search(&lookup)?.hits;
            lookup_first += usize::from(
                hits.first()
                    .and_then(|h| h.document.as_chunk())
                    .is_some_and(|c| c.content.contains(order.as_str())),
            );
            lookup_hits += hits.len();
        }
        for &q in &queries {
            let (order, customer) = &orders[q];
            let pref = preference_of(customer);
            let hits: Vec<String> = engine
                .search(&two_hop(order))?
                .hits
                .into_iter()
                .map(|h| h.id)
                .collect();
            top3 += usize::from(hits.iter().take(3).any(|h| *h == pref));
            top10 += usize::from(hits.contains(&pref));
            let lookup = SearchRequest::chunks(format!("any update on {order}?"))
                .with_now(now)
                .with_top_k(10);
            let response = engine.search(&lookup)?;
            let holds = response
                .hits
                .first()
                .and_then(|h| h.document.as_chunk())
                .is_some_and(|c| c.content.contains(order.as_str()));
            first += usize::from(holds);
        }
        let n = queries.len() as f64;
        println!(
            "graph {}{}{}: default selection: two-hop answer in the first 3 {:.3} ({:.2} hits), identifier lookups first {:.3} ({:.2} hits)",
            if graph_on { "on " } else { "off" },
            if adaptive { ", adaptive weights" } else { "" },
            if feedback {
                ", feedback factors after 100 answers"
            } else {
                ""
            },
            default3 as f64 / n,
            default_hits as f64 / n,
            lookup_first as f64 / n,
            lookup_hits as f64 / n
        );
        println!(
            "graph {}{}{}: two-hop preference note in the top 3 {:.3}, top 10 {:.3}; identifier lookups first {:.3}",
            if graph_on { "on " } else { "off" },
            if adaptive { ", adaptive weights" } else { "" },
            if feedback {
                ", feedback factors after 100 answers"
            } else {
                ""
            },
            top3 as f64 / n,
            top10 as f64 / n,
            first as f64 / n
        );
    }
    Ok(())
}
