//! Scenarios: conversation flows an agent activates when a message fits one.
//!
//! Seed 000 selects "rules, scenarios, or memory" after similarity search, with the
//! `entropy` strategy for scenarios ("usually one scenario is active"). A scenario is
//! matched like a rule: its name and description feed both legs, and each of its example
//! entry messages gets its own vector, the scenario's vector score being the best of
//! them. Rules scoped to a scenario (or one of its steps) apply once the agent has
//! activated it.

use serde::{Deserialize, Serialize};

use crate::model::fields::{Common, DEFAULT_TENANT, check_common, check_name, check_text};
use crate::{Error, Result};

/// One step of a scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// The step's id, unique within its scenario (the `step_id` of step-scoped rules).
    pub id: String,
    /// What happens in the step.
    pub description: String,
}

impl Step {
    /// A step.
    pub fn new(id: impl Into<String>, description: impl Into<String>) -> Step {
        Step {
            id: id.into(),
            description: description.into(),
        }
    }
}

/// A conversation flow an agent can activate, such as "returns and refunds".
///
/// The text indexed for a scenario (and embedded, when it carries no embedding of its
/// own) is `name + " " + description`; its `examples` are entry messages that should
/// activate it, embedded one by one like a rule's patterns.
///
/// # Example
///
/// ```
/// use ruchedb::{Scenario, Step};
///
/// let returns = Scenario::new("returns", "Returns and refunds", "The customer wants to send an item back")
///     .with_examples(["I want to return my shoes", "how do I get a refund?"])
///     .with_steps([Step::new("check-order", "Find the order and check it can be returned")]);
/// assert_eq!(returns.text(), "Returns and refunds The customer wants to send an item back");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ScenarioRecord", into = "ScenarioRecord")]
#[non_exhaustive]
pub struct Scenario {
    /// The user's id, unique per tenant among scenarios (the `scenario_id` of
    /// scenario-scoped rules).
    pub id: String,
    /// The tenant (default [`DEFAULT_TENANT`]).
    pub tenant_id: String,
    /// The agent the scenario is restricted to; `None` applies to every agent.
    pub agent_id: Option<String>,
    /// A short name.
    pub name: String,
    /// What the scenario is about, in words.
    pub description: String,
    /// Entry messages that should activate the scenario.
    pub examples: Vec<String>,
    /// The scenario's steps, in order.
    pub steps: Vec<Step>,
    /// Disabled scenarios never match (default `true`).
    pub enabled: bool,
    /// Free tags, usable as search filters.
    pub tags: Vec<String>,
    /// The embedding of [`Scenario::text`], when the caller brings its own vectors.
    pub embedding: Option<Vec<f32>>,
    /// One embedding per example, in the order of `examples`.
    pub example_embeddings: Option<Vec<Vec<f32>>>,
}

impl Scenario {
    /// An enabled scenario of the default tenant, without examples or steps.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Scenario {
        Scenario {
            id: id.into(),
            tenant_id: DEFAULT_TENANT.to_string(),
            agent_id: None,
            name: name.into(),
            description: description.into(),
            examples: Vec::new(),
            steps: Vec::new(),
            enabled: true,
            tags: Vec::new(),
            embedding: None,
            example_embeddings: None,
        }
    }

    document_setters!(owner Scenario, "scenario");
    document_setters!(listed Scenario, "scenario");

    /// Sets the entry messages.
    #[must_use]
    pub fn with_examples<S: Into<String>>(
        mut self,
        examples: impl IntoIterator<Item = S>,
    ) -> Scenario {
        self.examples = examples.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the steps.
    #[must_use]
    pub fn with_steps(mut self, steps: impl IntoIterator<Item = Step>) -> Scenario {
        self.steps = steps.into_iter().collect();
        self
    }

    /// Sets one embedding per example.
    #[must_use]
    pub fn with_example_embeddings(mut self, embeddings: Vec<Vec<f32>>) -> Scenario {
        self.example_embeddings = Some(embeddings);
        self
    }

    /// The step with this id.
    pub fn step(&self, id: &str) -> Option<&Step> {
        self.steps.iter().find(|step| step.id == id)
    }

    /// The text indexed and embedded for the scenario: `name + " " + description`.
    pub fn text(&self) -> String {
        format!("{} {}", self.name, self.description)
    }

    /// Checks every field.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) naming the field, or
    /// [`ErrorKind::NonFiniteScore`](crate::ErrorKind::NonFiniteScore) for a NaN or
    /// infinite vector component.
    pub fn validate(&self) -> Result<()> {
        check_common(
            "scenario",
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
        for (i, step) in self.steps.iter().enumerate() {
            check_name("steps.id", &step.id)?;
            check_text("scenario", &self.id, "steps.description", &step.description)?;
            if self.steps[..i].iter().any(|other| other.id == step.id) {
                return Err(Error::invalid_input(format!(
                    "scenario `{}`: step id `{}` appears twice in `steps`",
                    self.id, step.id
                )));
            }
        }
        Ok(())
    }
}

/// The JSONL form of a scenario.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioRecord {
    id: String,
    name: String,
    description: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    examples: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    steps: Vec<Step>,
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
}

impl TryFrom<ScenarioRecord> for Scenario {
    type Error = String;

    fn try_from(record: ScenarioRecord) -> std::result::Result<Scenario, String> {
        let scenario = Scenario {
            id: record.id,
            tenant_id: record
                .tenant_id
                .unwrap_or_else(|| DEFAULT_TENANT.to_string()),
            agent_id: record.agent_id,
            name: record.name,
            description: record.description,
            examples: record.examples,
            steps: record.steps,
            enabled: record.enabled.unwrap_or(true),
            tags: record.tags,
            embedding: record.embedding,
            example_embeddings: record.example_embeddings,
        };
        scenario.validate().map_err(|err| err.to_string())?;
        Ok(scenario)
    }
}

impl From<Scenario> for ScenarioRecord {
    fn from(scenario: Scenario) -> ScenarioRecord {
        ScenarioRecord {
            id: scenario.id,
            name: scenario.name,
            description: scenario.description,
            examples: scenario.examples,
            steps: scenario.steps,
            tenant_id: (scenario.tenant_id != DEFAULT_TENANT).then_some(scenario.tenant_id),
            agent_id: scenario.agent_id,
            enabled: (!scenario.enabled).then_some(false),
            tags: scenario.tags,
            embedding: scenario.embedding,
            example_embeddings: scenario.example_embeddings,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_only_the_required_fields() {
        let json = r#"{"id":"returns","name":"Returns","description":"Send an item back"}"#;
        let scenario: Scenario = serde_json::from_str(json).unwrap();
        assert_eq!(
            scenario,
            Scenario::new("returns", "Returns", "Send an item back")
        );
        assert_eq!(serde_json::to_string(&scenario).unwrap(), json);
    }

    #[test]
    fn rejects_bad_fields_naming_them() {
        for (json, expected) in [
            (
                r#"{"id":"s","name":"n","description":"d","colour":1}"#,
                "unknown field `colour`",
            ),
            (r#"{"id":"s","name":" ","description":"d"}"#, "`name`"),
            (r#"{"id":"s","name":"n"}"#, "missing field `description`"),
            (
                r#"{"id":"s","name":"n","description":"d","steps":[{"id":"a","description":"x"},{"id":"a","description":"y"}]}"#,
                "step id `a` appears twice",
            ),
            (
                r#"{"id":"s","name":"n","description":"d","examples":["x"],"example_embeddings":[]}"#,
                "has 0 vectors but `examples` has 1",
            ),
            (
                r#"{"id":"s","name":"n","description":"d","examples":[""]}"#,
                "an entry of `examples` is empty",
            ),
        ] {
            let err = serde_json::from_str::<Scenario>(json)
                .unwrap_err()
                .to_string();
            assert!(err.contains(expected), "{json}: {err}");
        }
    }
}
