//! Tools: what an agent can call, ranked for a message and handed to the policies.
//!
//! Seed 000 recommends `elbow` for tool selection ("usually clear relevance
//! separation"); seed 002's action policies then choose one action among scored
//! candidates, and a tool hit converts directly into such a candidate
//! ([`Candidate::from_hit`](crate::policy::Candidate::from_hit)).

use serde::{Deserialize, Serialize};

use crate::Result;
use crate::model::fields::{Common, DEFAULT_TENANT, check_common};
use crate::model::source::Source;

/// A tool an agent can call, such as "track an order".
///
/// The text indexed for a tool (and embedded, when it carries no embedding of its own)
/// is `name + " " + description`; its `examples` are messages it answers, embedded one by
/// one like a rule's patterns. `parameters` (a JSON schema) is stored and returned, never
/// interpreted.
///
/// # Example
///
/// ```
/// use ruchedb::Tool;
///
/// let track = Tool::new("track_order", "track_order", "Where an order is and when it arrives")
///     .with_parameters(serde_json::json!({
///         "type": "object",
///         "properties": {"order_id": {"type": "string"}},
///         "required": ["order_id"]
///     }))
///     .with_examples(["where is my package?"]);
/// assert!(track.validate().is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ToolRecord", into = "ToolRecord")]
#[non_exhaustive]
pub struct Tool {
    /// The user's id, unique per tenant among tools.
    pub id: String,
    /// The tenant (default [`DEFAULT_TENANT`]).
    pub tenant_id: String,
    /// The agent the tool is restricted to; `None` is available to every agent.
    pub agent_id: Option<String>,
    /// The tool's name, as the agent calls it.
    pub name: String,
    /// What the tool does, in words.
    pub description: String,
    /// The JSON schema of the tool's arguments (an object; `null` when none is given).
    pub parameters: serde_json::Value,
    /// Messages the tool answers.
    pub examples: Vec<String>,
    /// Disabled tools never match (default `true`).
    pub enabled: bool,
    /// Free tags, usable as search filters.
    pub tags: Vec<String>,
    /// The embedding of [`Tool::text`], when the caller brings its own vectors.
    pub embedding: Option<Vec<f32>>,
    /// One embedding per example, in the order of `examples`.
    pub example_embeddings: Option<Vec<Vec<f32>>>,
    /// The file the tool was read from (an Agent Skill's `SKILL.md`, set by
    /// [`Engine::sync`](crate::Engine::sync)): what an agent loads when it uses it.
    pub source: Option<Source>,
}

impl Tool {
    /// An enabled tool of the default tenant, without parameters or examples.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Tool {
        Tool {
            id: id.into(),
            tenant_id: DEFAULT_TENANT.to_string(),
            agent_id: None,
            name: name.into(),
            description: description.into(),
            parameters: serde_json::Value::Null,
            examples: Vec::new(),
            enabled: true,
            tags: Vec::new(),
            embedding: None,
            example_embeddings: None,
            source: None,
        }
    }

    document_setters!(owner Tool, "tool");

    /// Names the file the tool was read from.
    #[must_use]
    pub fn with_source(mut self, source: Source) -> Tool {
        self.source = Some(source);
        self
    }
    document_setters!(listed Tool, "tool");

    /// Sets the JSON schema of the arguments.
    #[must_use]
    pub fn with_parameters(mut self, parameters: serde_json::Value) -> Tool {
        self.parameters = parameters;
        self
    }

    /// Sets the example messages.
    #[must_use]
    pub fn with_examples<S: Into<String>>(mut self, examples: impl IntoIterator<Item = S>) -> Tool {
        self.examples = examples.into_iter().map(Into::into).collect();
        self
    }

    /// Sets one embedding per example.
    #[must_use]
    pub fn with_example_embeddings(mut self, embeddings: Vec<Vec<f32>>) -> Tool {
        self.example_embeddings = Some(embeddings);
        self
    }

    /// The text indexed and embedded for the tool: `name + " " + description`.
    pub fn text(&self) -> String {
        format!("{} {}", self.name, self.description)
    }

    /// Checks every field.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) naming the field (a
    /// `parameters` that is neither an object nor null is an error), or
    /// [`ErrorKind::NonFiniteScore`](crate::ErrorKind::NonFiniteScore) for a NaN or
    /// infinite vector component.
    pub fn validate(&self) -> Result<()> {
        check_common(
            "tool",
            Common {
                id: &self.id,
                tenant_id: &self.tenant_id,
                agent_id: self.agent_id.as_deref(),
                name: &self.name,
                description: &self.description,
                examples: &self.examples,
                tags: &self.tags,
                embedding: self.embedding.as_deref(),
                example_embeddings: self.example_embeddings.as_deref(),
            },
        )?;
        if !(self.parameters.is_object() || self.parameters.is_null()) {
            return Err(crate::Error::invalid_input(format!(
                "tool `{}`: `parameters` must be a JSON schema object, got {}",
                self.id, self.parameters
            )));
        }
        if let Some(source) = &self.source {
            source
                .validate()
                .map_err(|err| crate::Error::invalid_input(format!("tool `{}`: {err}", self.id)))?;
        }
        Ok(())
    }
}

/// The JSONL form of a tool.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolRecord {
    id: String,
    name: String,
    description: String,
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    parameters: serde_json::Value,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    examples: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tenant_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    embedding: Option<Vec<f32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    example_embeddings: Option<Vec<Vec<f32>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source: Option<Source>,
}

impl TryFrom<ToolRecord> for Tool {
    type Error = String;

    fn try_from(record: ToolRecord) -> std::result::Result<Tool, String> {
        let tool = Tool {
            id: record.id,
            tenant_id: record
                .tenant_id
                .unwrap_or_else(|| DEFAULT_TENANT.to_string()),
            agent_id: record.agent_id,
            name: record.name,
            description: record.description,
            parameters: record.parameters,
            examples: record.examples,
            enabled: record.enabled.unwrap_or(true),
            tags: record.tags,
            embedding: record.embedding,
            example_embeddings: record.example_embeddings,
            source: record.source,
        };
        tool.validate().map_err(|err| err.to_string())?;
        Ok(tool)
    }
}

impl From<Tool> for ToolRecord {
    fn from(tool: Tool) -> ToolRecord {
        ToolRecord {
            id: tool.id,
            name: tool.name,
            description: tool.description,
            parameters: tool.parameters,
            examples: tool.examples,
            tenant_id: (tool.tenant_id != DEFAULT_TENANT).then_some(tool.tenant_id),
            agent_id: tool.agent_id,
            enabled: (!tool.enabled).then_some(false),
            tags: tool.tags,
            embedding: tool.embedding,
            example_embeddings: tool.example_embeddings,
            source: tool.source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_its_parameters_as_given() {
        let json = r#"{"id":"t","name":"track_order","description":"Track an order","parameters":{"properties":{"order_id":{"type":"string"}},"type":"object"}}"#;
        let tool: Tool = serde_json::from_str(json).unwrap();
        assert_eq!(tool.parameters["properties"]["order_id"]["type"], "string");
        assert_eq!(serde_json::to_string(&tool).unwrap(), json);
    }

    #[test]
    fn rejects_parameters_that_are_not_a_schema_object() {
        let err = serde_json::from_str::<Tool>(
            r#"{"id":"t","name":"n","description":"d","parameters":[1]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("`parameters` must be a JSON schema object"),
            "{err}"
        );
    }
}
