//! Feedback (seed 004): which leg found the top hit of useful answers.

use super::{Engine, Inner, Reader};
use crate::feedback::FeedbackWindow;
use crate::model::leg::PerLeg;
use crate::query::Hit;
use crate::{Error, ErrorKind, Kind, Result};

/// Feedback marks kept (query ids that were given feedback); an id older than the
/// oldest mark dropped is refused, so that its feedback never counts twice.
const MARKS_KEEP: usize = 10_000;

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
    /// The query id carries what feedback needs (the legs that found the top hit, the
    /// search's kind and tenant, and a checksum), so a search writes nothing and its
    /// feedback can be given by another process, or after a restart. Each tenant has a
    /// window per kind (the last 100 records), persisted: one tenant's feedback never
    /// weighs another's searches, nor feedback on memory the rules'. With
    /// `fusion.feedback` on, a leg with at least 10 records gets its weight multiplied
    /// by `0.2 + useful_rate * 1.6` in that tenant's later searches.
    ///
    /// A query's feedback counts once: giving the same answer again changes nothing,
    /// and a contradicting answer is an error.
    ///
    /// A turn's id ([`TurnResponse::turn_id`](crate::TurnResponse::turn_id)) credits each
    /// of its searches that had hits (scenarios, rules, memory, tools), each in its own
    /// window; the window returned is the first of them.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] when the query id is not one this index can credit (never
    /// issued, altered, of a search without hits, of a tenant the index no longer holds,
    /// or older than the last 10,000 queries given feedback);
    /// [`ErrorKind::InvalidInput`] when the query already has the other answer; storage
    /// errors.
    pub fn feedback(&self, query_id: &str, useful: bool) -> Result<FeedbackWindow> {
        let parts: Option<Vec<String>> = match TurnId::parse(&self.inner.id_key, query_id) {
            Some(turn) => Some(turn.part_ids(&self.inner.id_key)),
            None => crate::turn::listed_part_ids(query_id)
                .map(|parts| parts.into_iter().map(str::to_string).collect()),
        };
        if let Some(parts) = parts {
            // A turn: each of its searches that had hits.
            let mut first = None;
            for part in &parts {
                let window = self.feedback(part, useful)?;
                first.get_or_insert(window);
            }
            return first.ok_or_else(|| {
                Error::new(ErrorKind::NotFound {
                    what: format!("turn `{query_id}` (none of its parts had hits)"),
                })
            });
        }
        let inner = &self.inner;
        let mut windows = inner.lock_feedback();
        let not_found = |why: &str| {
            Error::new(ErrorKind::NotFound {
                what: format!("query `{query_id}` ({why})"),
            })
        };
        let logged = match SignedId::parse(&inner.id_key, query_id) {
            Some(signed) => {
                if inner
                    .local
                    .store
                    .marks_horizon()?
                    .is_some_and(|h| query_id <= h.as_str())
                {
                    return Err(not_found(
                        "older than the last 10,000 queries given feedback",
                    ));
                }
                let tenant = inner
                    .tenant_of_hash(signed.tenant_hash, &windows)
                    .ok_or_else(|| not_found("its tenant has no documents here"))?;
                // A mark (the legs byte), if feedback was given before.
                let legs = match inner.local.store.logged_query(query_id)? {
                    Some(bytes) => LoggedQuery::decode(&bytes)?.legs,
                    None => signed.legs,
                };
                LoggedQuery {
                    legs,
                    tenant,
                    signed: true,
                }
            }
            // Ids of searches logged by earlier versions.
            None => match inner.local.store.logged_query(query_id)? {
                Some(bytes) => LoggedQuery::decode(&bytes)?,
                None => return Err(not_found("no search with hits has this id")),
            },
        };
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
        let found_by = PerLeg {
            text: legs & TEXT_BIT != 0,
            vector: legs & VECTOR_BIT != 0,
            graph: legs & GRAPH_BIT != 0,
        };
        // Marked first: a crash between the two loses this feedback rather than
        // letting a retry count it twice.
        let marked = LoggedQuery {
            legs: legs | GIVEN_BIT | if useful { USEFUL_BIT } else { 0 },
            tenant: logged.tenant.clone(),
            signed: logged.signed,
        };
        inner
            .local
            .store
            .add_mark(query_id, &marked.encode(), MARKS_KEEP)?;
        window.record(found_by, useful);
        inner.local.store.save_feedback(&key, window.entries())?;
        let window = window.clone();
        drop(windows);
        // Under the commit lock: the part carries the meta values of a whole commit.
        let _serial = inner.commit_lock.lock().unwrap_or_else(|p| p.into_inner());
        inner.publish(super::publish::Publish::Changes(&[]))?;
        Ok(window)
    }

    /// Forgets every feedback record of every tenant.
    ///
    /// # Errors
    ///
    /// Storage errors.
    pub fn reset_feedback(&self) -> Result<()> {
        {
            let mut windows = self.inner.lock_feedback();
            windows.clear();
            self.inner.local.store.clear_feedback()?;
        }
        let _serial = self
            .inner
            .commit_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        self.inner.publish(super::publish::Publish::Changes(&[]))
    }
}

/// What the query log keeps of a search: the legs that found its top hit (and whether
/// feedback was given), and its tenant.
struct LoggedQuery {
    legs: u8,
    tenant: String,
    /// The id carries the tenant: the mark keeps the legs byte alone.
    signed: bool,
}

impl LoggedQuery {
    /// `[legs]` then the tenant's bytes (none for the default tenant, as before tenants
    /// were logged).
    fn encode(&self) -> Vec<u8> {
        let mut bytes = vec![self.legs];
        if !self.signed && self.tenant != crate::DEFAULT_TENANT {
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
        Ok(LoggedQuery {
            legs,
            tenant,
            signed: false,
        })
    }
}

impl Inner {
    pub(crate) fn lock_feedback(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, FeedbackWindow>> {
        self.feedback.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn feedback_factors(&self, tenant: &str, kind: Kind) -> PerLeg<f64> {
        self.lock_feedback()
            .get(&window_key(tenant, kind))
            .map(FeedbackWindow::factors)
            .unwrap_or(PerLeg::ONES)
    }

    /// The tenant whose name hashes to `hash`: one with documents, or with a window.
    fn tenant_of_hash(
        &self,
        hash: u64,
        windows: &std::collections::HashMap<String, FeedbackWindow>,
    ) -> Option<String> {
        let catalog = self.local.snapshot();
        let from_windows = windows
            .keys()
            .map(|key| key.split('\u{0}').next().unwrap_or(key));
        catalog
            .tenant_names()
            .chain(from_windows)
            .chain([crate::DEFAULT_TENANT])
            .find(|tenant| tenant_hash(tenant) == hash)
            .map(str::to_string)
    }
}

/// The hash of a tenant's name a query id carries.
fn tenant_hash(tenant: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(tenant.as_bytes())
}

/// The tag of a query id: HMAC-SHA-256 of its body under the index's key, truncated to
/// 8 bytes. Without the key, an id of a search that did not happen (or of another
/// index) cannot be made.
fn tag(key: &[u8; 32], body: &str) -> u64 {
    use hmac::Mac;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(body.as_bytes());
    let bytes = mac.finalize().into_bytes();
    u64::from_be_bytes(bytes[..8].try_into().expect("32 bytes"))
}

/// The number written by at most 16 lowercase hex digits (no sign, no prefix).
fn hex(text: &str) -> Option<u64> {
    (text.len() <= 16 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
        .then(|| u64::from_str_radix(text, 16).ok())
        .flatten()
}

/// What a query id of a search with hits carries: `BASE-LLTTTTTTTTTTTTTTTTSSSSSSSSSSSSSSSS`,
/// the unique time-ordered base id, then in lowercase hex the legs and kind bits of the
/// query (one byte), the hash of the tenant (8 bytes) and the tag of all that (8 bytes).
struct SignedId {
    legs: u8,
    tenant_hash: u64,
}

/// The length of the signed part, in hex digits.
const SIGNED_LEN: usize = 2 + 16 + 16;

impl SignedId {
    /// The id of a search whose top hit `found_by` found.
    fn sign(
        key: &[u8; 32],
        base: &str,
        tenant: &str,
        kind: Kind,
        found_by: PerLeg<bool>,
    ) -> String {
        SignedId::sign_byte(key, base, legs_byte(kind, found_by), tenant_hash(tenant))
    }

    /// The id of a search of base id `base` with the legs and kind byte `legs`.
    fn sign_byte(key: &[u8; 32], base: &str, legs: u8, tenant_hash: u64) -> String {
        with_tag(key, format!("{base}-{legs:02x}{tenant_hash:016x}"))
    }

    /// The signed part of `id`, if it has one and its tag is the index's.
    fn parse(key: &[u8; 32], id: &str) -> Option<SignedId> {
        let (_, signed) = untag(key, id, "q", SIGNED_LEN)?;
        let legs = u8::try_from(hex(&signed[..2])?).ok()?;
        let tenant_hash = hex(&signed[2..18])?;
        (legs & (GIVEN_BIT | USEFUL_BIT) == 0).then_some(SignedId { legs, tenant_hash })
    }
}

/// The legs and kind byte of a search of `kind` whose top hit `found_by` found.
fn legs_byte(kind: Kind, found_by: PerLeg<bool>) -> u8 {
    (u8::from(found_by.text) * TEXT_BIT)
        | (u8::from(found_by.vector) * VECTOR_BIT)
        | (u8::from(found_by.graph) * GRAPH_BIT)
        | kind_bits(kind)
}

/// What a turn id carries: `turn-BASE-PPPPPPPPHHHHHHHHHHHHHHHHTTTTTTTTTTTTTTTT`, the
/// turn's base id, then in lowercase hex the legs and kind byte of each of its four
/// searches with `GIVEN_BIT` set (`00`: it had no hit; [`crate::turn::TURN_PARTS`]
/// order), the hash of the
/// tenant and the tag of all that. Each search's own id is its signed id with the base
/// [`crate::turn::part_base`]: the turn id names them without listing them (about 75
/// characters).
struct TurnId {
    /// The base id of the turn (`q…`), from which its parts' base ids are made.
    base: String,
    parts: [u8; 4],
    tenant_hash: u64,
}

/// The length of a turn id's signed part, in hex digits.
const TURN_SIGNED_LEN: usize = 8 + 16 + 16;

/// The id of the turn of base `base` (`turn-…`) in `tenant`, from its searches' top hits.
pub(crate) fn turn_id(key: &[u8; 32], base: &str, tenant: &str, tops: [Option<&Hit>; 4]) -> String {
    let mut parts = String::with_capacity(8);
    for (kind, top) in crate::turn::TURN_PARTS.into_iter().zip(tops) {
        // `GIVEN_BIT`, never in a search's byte, marks a search that had a hit.
        let legs = top.map_or(0, |hit| legs_byte(kind, hit.breakdown.found_by) | GIVEN_BIT);
        parts.push_str(&format!("{legs:02x}"));
    }
    with_tag(key, format!("{base}-{parts}{:016x}", tenant_hash(tenant)))
}

/// `body` followed by its tag under `key` (16 hex digits).
fn with_tag(key: &[u8; 32], body: String) -> String {
    let tag = tag(key, &body);
    format!("{body}{tag:016x}")
}

/// The base of `id` and its signed digits before the tag, when the base starts with
/// `prefix`, the signed part (after the last `-`) has `len` digits, and the tag is the
/// index's.
fn untag<'i>(key: &[u8; 32], id: &'i str, prefix: &str, len: usize) -> Option<(&'i str, &'i str)> {
    let (base, signed) = id.rsplit_once('-')?;
    // ASCII first: the digits are sliced by byte.
    if !base.starts_with(prefix) || signed.len() != len || !signed.is_ascii() {
        return None;
    }
    let given = hex(&signed[len - 16..])?;
    (given == tag(key, &id[..id.len() - 16])).then_some((base, &signed[..len - 16]))
}

impl TurnId {
    /// The turn id `id`, if it is one and its tag is the index's.
    fn parse(key: &[u8; 32], id: &str) -> Option<TurnId> {
        let (base, signed) = untag(key, id, "turn-", TURN_SIGNED_LEN)?;
        let mut parts = [0u8; 4];
        for (i, part) in parts.iter_mut().enumerate() {
            *part = u8::try_from(hex(&signed[2 * i..2 * i + 2])?).ok()?;
        }
        Some(TurnId {
            base: base.replacen("turn-", "q", 1),
            parts,
            tenant_hash: hex(&signed[8..24])?,
        })
    }

    /// The signed ids of the turn's searches that had hits.
    fn part_ids(&self, key: &[u8; 32]) -> Vec<String> {
        crate::turn::TURN_PARTS
            .into_iter()
            .zip(self.parts)
            .filter(|(_, legs)| legs & GIVEN_BIT != 0)
            .map(|(kind, legs)| {
                let base = crate::turn::part_base(&self.base, kind);
                SignedId::sign_byte(key, &base, legs & !GIVEN_BIT, self.tenant_hash)
            })
            .collect()
    }
}

/// The query id of a search of `kind` in `tenant`: signed when it has a top hit.
pub(crate) fn query_id(
    key: &[u8; 32],
    base: String,
    tenant: &str,
    kind: Kind,
    top: Option<&Hit>,
) -> String {
    match top {
        Some(hit) => SignedId::sign(key, &base, tenant, kind, hit.breakdown.found_by),
        None => base,
    }
}

impl Reader {
    /// The feedback window of `tenant`'s searches of `kind`.
    pub fn feedback_window(&self, tenant: &str, kind: Kind) -> FeedbackWindow {
        self.inner
            .lock_feedback()
            .get(&window_key(tenant, kind))
            .cloned()
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An id of the right length whose signed part is not ASCII is no id, not a panic.
    #[test]
    fn a_signed_part_that_is_not_ascii_is_refused() {
        let key = [7u8; 32];
        // The `é` straddles where the tag's digits start.
        let wide = format!("{}é{}", "0".repeat(17), "0".repeat(SIGNED_LEN - 19));
        assert_eq!(wide.len(), SIGNED_LEN);
        assert!(SignedId::parse(&key, &format!("q1-{wide}")).is_none());
        let wide = format!("{}é{}", "0".repeat(23), "0".repeat(TURN_SIGNED_LEN - 25));
        assert_eq!(wide.len(), TURN_SIGNED_LEN);
        assert!(TurnId::parse(&key, &format!("turn-1-{wide}")).is_none());
    }

    #[test]
    fn ids_carry_legs_kind_and_tenant_and_refuse_alteration() {
        let found_by = PerLeg {
            text: true,
            vector: false,
            graph: true,
        };
        let key = [7u8; 32];
        let id = SignedId::sign(
            &key,
            "q0190000000-00000001-000002",
            "acme",
            Kind::Chunk,
            found_by,
        );
        let parsed = SignedId::parse(&key, &id).unwrap();
        assert_eq!(parsed.legs, TEXT_BIT | GRAPH_BIT | CHUNK_BIT);
        assert_eq!(kind_of_bits(parsed.legs), Kind::Chunk);
        assert_eq!(parsed.tenant_hash, tenant_hash("acme"));
        // Any changed character, or a cut, fails the checksum or the shape.
        for at in 0..id.len() {
            let mut altered = id.clone().into_bytes();
            altered[at] = if altered[at] == b'0' { b'1' } else { b'0' };
            let altered = String::from_utf8(altered).unwrap();
            assert!(SignedId::parse(&key, &altered).is_none(), "{altered}");
        }
        assert!(SignedId::parse(&key, &id[..id.len() - 1]).is_none());
        assert!(SignedId::parse(&key, "q-never-issued").is_none());
        // Another index's key refuses it; a sign in place of a digit is no hex.
        assert!(SignedId::parse(&[8u8; 32], &id).is_none());
        let (body, signed) = id.rsplit_once('-').unwrap();
        let plus = format!("{body}-+{}", &signed[1..]);
        assert!(SignedId::parse(&key, &plus).is_none());
    }
}
