//! The fields every kind of document shares, and their checks: the default tenant,
//! names, texts, example messages and vectors.

use crate::{Error, Result};

/// The tenant of documents and queries that name none.
pub const DEFAULT_TENANT: &str = "default";

/// Longest accepted id, tenant, agent, scenario, step or context name, in bytes.
pub(crate) const MAX_NAME_LEN: usize = 1024;

/// The most patterns (or examples) a document may have: one vector key per example,
/// the main embedding and the centroid must fit the graph's keys.
pub(crate) const MAX_PATTERNS: usize = crate::model::id::VectorKey::MAX_VECTORS_PER_DOC - 2;

/// Checks a document's example messages and their optional embeddings (`(field name,
/// value)` pairs, for the messages).
pub(crate) fn check_examples(
    what: &str,
    id: &str,
    (field, examples): (&str, &[String]),
    (embeddings_field, embeddings): (&str, Option<&[Vec<f32>]>),
) -> Result<()> {
    if let Some(embeddings) = embeddings {
        if embeddings.len() != examples.len() {
            return Err(Error::invalid_input(format!(
                "{what} `{id}`: `{embeddings_field}` has {} vectors but `{field}` has {} texts",
                embeddings.len(),
                examples.len()
            )));
        }
        for embedding in embeddings {
            check_vector(embeddings_field, embedding)?;
        }
    }
    if examples.len() > MAX_PATTERNS {
        return Err(Error::invalid_input(format!(
            "{what} `{id}` has {} {field} (at most {MAX_PATTERNS})",
            examples.len(),
        )));
    }
    for example in examples {
        if example.trim().is_empty() {
            return Err(Error::invalid_input(format!(
                "{what} `{id}`: an entry of `{field}` is empty or blank"
            )));
        }
    }
    Ok(())
}

/// Checks that a required text field is not blank.
pub(crate) fn check_text(what: &str, id: &str, field: &str, value: &str) -> Result<()> {
    if value.trim().is_empty() {
        return Err(Error::invalid_input(format!(
            "{what} `{id}`: `{field}` must not be empty or blank"
        )));
    }
    Ok(())
}

/// Checks an importance: absent, or an integer in 1..=10.
pub(crate) fn check_importance(importance: Option<u8>) -> std::result::Result<(), String> {
    match importance {
        Some(i) if !(1..=10).contains(&i) => Err(format!(
            "`importance` must be an integer from 1 to 10, got {i}"
        )),
        _ => Ok(()),
    }
}

pub(crate) fn check_name(field: &str, value: &str) -> Result<()> {
    if value.trim().is_empty() {
        return Err(Error::invalid_input(format!(
            "`{field}` must not be empty or blank"
        )));
    }
    if value.len() > MAX_NAME_LEN {
        return Err(Error::invalid_input(format!(
            "`{field}` is {} bytes long (at most {MAX_NAME_LEN})",
            value.len()
        )));
    }
    if value.chars().any(char::is_control) {
        return Err(Error::invalid_input(format!(
            "`{field}` must not contain control characters: {value:?}"
        )));
    }
    Ok(())
}

pub(crate) fn check_vector(field: &str, vector: &[f32]) -> Result<()> {
    if vector.is_empty() {
        return Err(Error::invalid_input(format!("`{field}` must not be empty")));
    }
    if vector.iter().any(|x| !x.is_finite()) {
        return Err(Error::new(crate::ErrorKind::NonFiniteScore {
            context: format!("`{field}`"),
        }));
    }
    Ok(())
}

/// The fields scenarios and tools share, for their checks.
pub(crate) struct Common<'a> {
    pub(crate) id: &'a str,
    pub(crate) tenant_id: &'a str,
    pub(crate) agent_id: Option<&'a str>,
    pub(crate) name: &'a str,
    pub(crate) description: &'a str,
    pub(crate) examples: &'a [String],
    pub(crate) tags: &'a [String],
    pub(crate) embedding: Option<&'a [f32]>,
    pub(crate) example_embeddings: Option<&'a [Vec<f32>]>,
}

/// Checks the fields scenarios and tools share.
pub(crate) fn check_common(what: &str, doc: Common<'_>) -> Result<()> {
    check_name("id", doc.id)?;
    check_name("tenant_id", doc.tenant_id)?;
    if let Some(agent) = doc.agent_id {
        check_name("agent_id", agent)?;
    }
    check_text(what, doc.id, "name", doc.name)?;
    check_text(what, doc.id, "description", doc.description)?;
    for tag in doc.tags {
        check_name("tags", tag)?;
    }
    if let Some(embedding) = doc.embedding {
        check_vector("embedding", embedding)?;
    }
    check_examples(
        what,
        doc.id,
        ("examples", doc.examples),
        ("example_embeddings", doc.example_embeddings),
    )
}
