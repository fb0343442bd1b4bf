//! Does the second hop answer the question? Three generators of linked memories, each
//! with its own entities, facts and question wordings (issue 45: fit on one, show on the
//! others, never tune to one's phrasing).
//!
//! ```text
//! cargo run --release -p ruchedb-research --bin memory [-- OWNERS SEED]
//! ```
//!
//! Each owner (a customer, an account holder, a patient) has one note per attribute
//! (how to reach them, their language, where things go, a past problem, one more fact)
//! and one to three link notes (an order, a ticket, a booking) that name it. A question
//! names only a link and asks one attribute of its owner: the answer is the owner's note
//! of that attribute, which shares no word with the question but the owner's id, and sits
//! beside the owner's other notes. Distractors: a crowded entity hundreds of link notes
//! share, and notes that tie two links of different owners together.
//!
//! Reported per generator, default selection: the answer among the first 3, how many
//! hits come back, the share of them that hold evidence (the link note or the answer);
//! and identifier lookups ("any update on X?"): the link note first, hits returned.

use ruchedb::{Chunk, Config, Engine, SearchRequest, Timestamp};

/// Draws from a seeded ChaCha generator.
struct Draw(rand_chacha::ChaCha8Rng);

impl Draw {
    fn new(seed: u64) -> Draw {
        Draw(rand::SeedableRng::seed_from_u64(seed))
    }
    fn below(&mut self, n: usize) -> usize {
        rand::Rng::random_range(&mut self.0, 0..n)
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// One attribute of an owner: how a note states it (`{o}` the owner, `{v}` a value), the
/// values, and the questions that ask it (`{l}` the link).
struct Attribute {
    facts: &'static [&'static str],
    values: &'static [&'static str],
    questions: &'static [&'static str],
}

struct Generator {
    name: &'static str,
    owner: &'static str,
    link: &'static str,
    /// A link note: `{l}` the link, `{o}` its owner, `{x}` a detail, `{c}` the crowded entity.
    link_notes: &'static [&'static str],
    details: &'static [&'static str],
    crowded: &'static str,
    /// A note tying two links of different owners: `{a}`, `{b}`, `{n}` its own number.
    ties: &'static str,
    attributes: &'static [Attribute],
}

const SHOP: Generator = Generator {
    name: "shop (customers, orders)",
    owner: "CUST",
    link: "NW",
    link_notes: &[
        "Order {l} ({x}) was placed by {o}, shipped from {c}.",
        "{o} ordered a {x} under {l}; it left {c}.",
    ],
    details: &[
        "canoe",
        "bike helmet",
        "rain poncho",
        "trail shoes",
        "camp chair",
        "cooler",
    ],
    crowded: "WH-100",
    ties: "Orders {a} and {b} were consolidated into shipment SHP-{n}.",
    attributes: &[
        Attribute {
            facts: &["{o} prefers to be contacted by {v}."],
            values: &["email", "phone", "text message", "post", "chat"],
            questions: &[
                "how should we contact the customer of order {l}?",
                "what's the best way to get in touch with whoever placed {l}?",
            ],
        },
        Attribute {
            facts: &["{o} writes to us in {v}."],
            values: &["German", "Italian", "Dutch", "Polish", "Spanish"],
            questions: &[
                "which language should the reply about order {l} be in?",
                "what language does the buyer of {l} use?",
            ],
        },
        Attribute {
            facts: &["{o} has parcels delivered to a locker in {v}."],
            values: &["Lyon", "Ghent", "Bremen", "Turin", "Leeds"],
            questions: &[
                "where does the customer of order {l} receive deliveries?",
                "to which city do we send replacements for {l}?",
            ],
        },
        Attribute {
            facts: &["{o} once complained about {v}."],
            values: &[
                "a damaged zip",
                "a late refund",
                "rude support",
                "missing screws",
            ],
            questions: &[
                "has the customer behind {l} had a bad experience with us before?",
                "any past grievance from whoever bought {l}?",
            ],
        },
    ],
};

const BANK: Generator = Generator {
    name: "bank (account holders, tickets)",
    owner: "AC",
    link: "TK",
    link_notes: &[
        "Ticket {l} was opened for {o} about {x} (queue {c}).",
        "{l}: {x}, raised by {o}, routed to {c}.",
    ],
    details: &[
        "a blocked card",
        "a failed transfer",
        "a disputed fee",
        "a new PIN",
    ],
    crowded: "Q-",
    ties: "{a} and {b} were merged as duplicates under case CS-{n}.",
    attributes: &[
        Attribute {
            facts: &[
                "{o} only answers {v}.",
                "Reach {o} by {v}, nothing else works.",
            ],
            values: &[
                "text messages",
                "phone calls after six",
                "letters",
                "the app inbox",
            ],
            questions: &[
                "who do I notify for {l} and how?",
                "how do I let the holder of {l} know it is sorted?",
            ],
        },
        Attribute {
            facts: &["{o} is more comfortable in {v}."],
            values: &["Portuguese", "French", "Romanian", "Greek"],
            questions: &[
                "what language does the person behind {l} speak?",
                "should the call about {l} be in English?",
            ],
        },
        Attribute {
            facts: &["Statements for {o} go to {v}."],
            values: &[
                "a PO box in Faro",
                "an office in Namur",
                "a flat in Cluj",
                "a farm near Patras",
            ],
            questions: &[
                "where should the paperwork for {l} be mailed?",
                "what address do we post the card for {l} to?",
            ],
        },
        Attribute {
            facts: &["{o} holds {v}."],
            values: &[
                "a joint savings account",
                "a student current account",
                "a business credit line",
                "a fixed-rate mortgage",
            ],
            questions: &[
                "what kind of account is {l} about?",
                "which product does the client on {l} have with us?",
            ],
        },
    ],
};

const CLINIC: Generator = Generator {
    name: "clinic (patients, bookings)",
    owner: "MB",
    link: "BK",
    link_notes: &[
        "Booking {l}: {x} for patient {o} at site {c}.",
        "{o} is booked for {x} ({l}), site {c}.",
    ],
    details: &["a check-up", "an MRI scan", "physiotherapy", "a blood test"],
    crowded: "S",
    ties: "Bookings {a} and {b} share the room reserved as RM-{n}.",
    attributes: &[
        Attribute {
            facts: &["{o} wants reminders by {v}.", "Remind {o} with {v}."],
            values: &[
                "SMS the day before",
                "a call to their daughter",
                "email only",
                "a letter",
            ],
            questions: &[
                "how do we remind the patient of {l}?",
                "what is the right way to confirm {l} with the patient?",
            ],
        },
        Attribute {
            facts: &["{o} needs an interpreter for {v}."],
            values: &["Arabic", "Tigrinya", "Farsi", "Mandarin"],
            questions: &[
                "does the person booked under {l} need language support?",
                "which interpreter should be there for {l}?",
            ],
        },
        Attribute {
            facts: &["{o} is allergic to {v}."],
            values: &["latex", "penicillin", "iodine contrast", "adhesive tape"],
            questions: &[
                "is there anything the patient of {l} must not be given?",
                "any allergies to watch for at {l}?",
            ],
        },
        Attribute {
            facts: &["{o} is covered by {v}."],
            values: &[
                "the public insurer",
                "a private plan",
                "their employer",
                "a travel policy",
            ],
            questions: &["who pays for {l}?", "which insurance do we bill for {l}?"],
        },
    ],
};

struct Case {
    question: String,
    answer: String,
    link_note: String,
    link: String,
}

fn fill(template: &str, pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .fold(template.to_string(), |text, (key, value)| {
            text.replace(key, value)
        })
}

fn generate(g: &Generator, owners: usize, seed: u64) -> (Vec<Chunk>, Vec<Case>) {
    let mut rng = Draw::new(seed);
    let now = Timestamp::from_unix_millis(1_790_000_000_000);
    let day = 86_400_000i64;
    let mut chunks = Vec::new();
    let mut links: Vec<(String, String, usize)> = Vec::new(); // (link, link note id, owner)
    for o in 0..owners {
        let owner = format!("{}-{}", g.owner, 10_000 + o * 7 % 89_999);
        let when = |rng: &mut Draw| {
            Timestamp::from_unix_millis(now.unix_millis() - rng.below(365) as i64 * day)
        };
        for (a, attribute) in g.attributes.iter().enumerate() {
            let text = fill(
                rng.pick(attribute.facts),
                &[("{o}", &owner), ("{v}", rng.pick(attribute.values))],
            );
            let created = when(&mut rng);
            chunks.push(
                Chunk::new(format!("fact-{o}-{a}"), text)
                    .with_importance(rng.below(10) as u8 + 1)
                    .with_created_at(created),
            );
        }
        for k in 0..1 + rng.below(3) {
            let link = format!("{}-{}", g.link, 20_000 + o * 3 + k);
            let crowded = format!("{}{}", g.crowded, 1 + rng.below(5));
            let text = fill(
                rng.pick(g.link_notes),
                &[
                    ("{l}", &link),
                    ("{o}", &owner),
                    ("{x}", rng.pick(g.details)),
                    ("{c}", &crowded),
                ],
            );
            let id = format!("link-{o}-{k}");
            let created = when(&mut rng);
            chunks.push(
                Chunk::new(id.clone(), text)
                    .with_importance(rng.below(10) as u8 + 1)
                    .with_created_at(created),
            );
            links.push((link, id, o));
        }
    }
    for i in (0..links.len().saturating_sub(1)).step_by(3) {
        let j = (i + 1 + rng.below(50)) % links.len();
        let n = (70_000 + i).to_string();
        chunks.push(Chunk::new(
            format!("tie-{i}"),
            fill(
                g.ties,
                &[("{a}", &links[i].0), ("{b}", &links[j].0), ("{n}", &n)],
            ),
        ));
    }
    let cases = (0..300)
        .map(|_| {
            let (link, link_note, owner) = links[rng.below(links.len())].clone();
            let a = rng.below(g.attributes.len());
            let question = fill(rng.pick(g.attributes[a].questions), &[("{l}", &link)]);
            Case {
                question,
                answer: format!("fact-{owner}-{a}"),
                link_note,
                link,
            }
        })
        .collect();
    (chunks, cases)
}

/// Without its identifiers (`NW-20001`, `AC-10000`): what a text says about them.
fn residual(text: &str) -> String {
    text.split_whitespace()
        .filter(|word| {
            let word = word.trim_matches(|c: char| !c.is_alphanumeric());
            !(word.contains('-') && word.chars().any(|c| c.is_ascii_digit()))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    f64::from(dot / (na * nb).max(1e-9))
}

/// Offline: among an owner's notes (its facts and its other links), where does each
/// signal put the answer? Rank 1, within 2, within 3.
fn signals(owners: usize, seed: u64) -> ruchedb::Result<()> {
    use ruchedb::Embedder;
    let embedders: Vec<(&str, std::sync::Arc<dyn Embedder>)> = vec![
        (
            "static",
            std::sync::Arc::new(ruchedb::StaticEmbedder::bundled()?),
        ),
        (
            "minilm",
            std::sync::Arc::new(ruchedb::MiniLmEmbedder::bundled()?),
        ),
    ];
    for g in [SHOP, BANK, CLINIC] {
        let (chunks, cases) = generate(&g, owners, seed);
        for (name, embedder) in &embedders {
            for (use_residual, facts_only) in [(false, false), (true, false), (true, true)] {
                let mut at = [0usize; 3];
                for case in cases.iter().take(200) {
                    let owner = case.answer.split('-').nth(1).unwrap();
                    let candidates: Vec<&Chunk> = chunks
                        .iter()
                        .filter(|c| {
                            (c.id.starts_with(&format!("fact-{owner}-"))
                                || (!facts_only && c.id.starts_with(&format!("link-{owner}-"))))
                                && c.id != case.link_note
                        })
                        .collect();
                    let prep = |t: &str| {
                        if use_residual {
                            residual(t)
                        } else {
                            t.to_string()
                        }
                    };
                    let asked = prep(&case.question);
                    let q = embedder.embed_batch(&[&asked])?.remove(0);
                    let texts: Vec<String> = candidates.iter().map(|c| prep(&c.content)).collect();
                    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                    let vs = embedder.embed_batch(&refs)?;
                    let mut scored: Vec<(f64, &str)> = vs
                        .iter()
                        .zip(&candidates)
                        .map(|(v, c)| (cosine(&q, v), c.id.as_str()))
                        .collect();
                    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
                    if let Some(rank) = scored.iter().position(|s| s.1 == case.answer) {
                        for (k, slot) in at.iter_mut().enumerate() {
                            *slot += usize::from(rank <= k);
                        }
                    }
                }
                println!(
                    "{:<34} {name:<7} residual {use_residual:<5} facts only {facts_only:<5}: @1 {:.3} @2 {:.3} @3 {:.3}",
                    g.name,
                    at[0] as f64 / 200.0,
                    at[1] as f64 / 200.0,
                    at[2] as f64 / 200.0
                );
            }
        }
    }
    Ok(())
}

fn main() -> ruchedb::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("signals") {
        return signals(300, 11);
    }
    let owners: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2_000);
    let seed: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(11);
    let now = Timestamp::from_unix_millis(1_790_000_000_000);
    println!(
        "| generator | answer in first 3 | hits | evidence share | answer in top 3 of 10 | lookups first | lookup hits | p50 question |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for g in [SHOP, BANK, CLINIC] {
        let (chunks, cases) = generate(&g, owners, seed);
        let mut builder = Engine::builder().with_config(Config::default());
        if let Ok(specs) = std::env::var("MEMORY_EMBEDDERS") {
            builder = builder.with_embedder_specs(specs.parse()?);
        }
        let engine = builder.temporary()?;
        engine.upsert_chunks(chunks)?;
        engine.commit()?;
        let (mut first3, mut hits, mut evidence, mut top3) = (0, 0, 0, 0);
        let (mut lookup_first, mut lookup_hits) = (0, 0);
        let mut shows = 0;
        let mut micros: Vec<u64> = Vec::new();
        for case in &cases {
            let request = SearchRequest::chunks(case.question.clone()).with_now(now);
            let started = std::time::Instant::now();
            let found = engine.search(&request)?.hits;
            micros.push(started.elapsed().as_micros() as u64);
            first3 += usize::from(found.iter().take(3).any(|h| h.id == case.answer));
            hits += found.len();
            evidence += found
                .iter()
                .filter(|h| h.id == case.answer || h.id == case.link_note)
                .count();
            let shown = std::env::var_os("MEMORY_SHOW").is_some()
                && !found.iter().take(3).any(|h| h.id == case.answer);
            if shown && shows < 12 {
                shows += 1;
                println!(
                    "Q {} (answer {}, link {})",
                    case.question, case.answer, case.link_note
                );
                for h in &found {
                    println!(
                        "   {:>14} {:.3} {:?} {}",
                        h.id,
                        h.score,
                        h.breakdown.graph_path,
                        h.document.text()
                    );
                }
            }
            let ranked = engine.search(&request.clone().with_top_k(10))?.hits;
            top3 += usize::from(ranked.iter().take(3).any(|h| h.id == case.answer));
            let lookup =
                SearchRequest::chunks(format!("any update on {}?", case.link)).with_now(now);
            let found = engine.search(&lookup)?.hits;
            lookup_first += usize::from(
                found
                    .first()
                    .is_some_and(|h| h.document.text().contains(case.link.as_str())),
            );
            lookup_hits += found.len();
        }
        let n = cases.len() as f64;
        micros.sort_unstable();
        println!(
            "| {} | {:.3} | {:.2} | {:.3} | {:.3} | {:.3} | {:.2} | {:.2} ms |",
            g.name,
            first3 as f64 / n,
            hits as f64 / n,
            evidence as f64 / hits.max(1) as f64,
            top3 as f64 / n,
            lookup_first as f64 / n,
            lookup_hits as f64 / n,
            micros[micros.len() / 2] as f64 / 1000.0,
        );
    }
    Ok(())
}
