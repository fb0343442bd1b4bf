//! The playground's request model: the form a page submits, read into a search or a
//! turn request, and what is shown for it.

use ruchedb::{DEFAULT_TENANT, Kind, SearchRequest, Timestamp, TurnRequest};

use super::explain::{Explained, ExplainedTurn};

/// What the playground's form holds.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct Form {
    #[serde(default)]
    pub q: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub tenant: Option<String>,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub scenario: Option<String>,
    #[serde(default)]
    pub step: Option<String>,
    #[serde(default)]
    pub context: Option<String>,
    /// A whole turn's token budget.
    #[serde(default)]
    pub budget: Option<String>,
}

/// What the playground shows for a message.
#[derive(Debug)]
pub enum Shown {
    Search(Box<Explained>),
    Turn(Box<ExplainedTurn>),
}

/// A form value, `None` when empty.
pub fn given(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

/// `$request` (a search or a turn) with the form's agent, scenario, step and context.
macro_rules! with_filters {
    ($form:expr, $request:expr) => {{
        let mut request = $request;
        if let Some(agent) = given(&$form.agent) {
            request = request.with_agent(agent);
        }
        if let Some(scenario) = given(&$form.scenario) {
            request = request.with_scenario(scenario);
        }
        if let Some(step) = given(&$form.step) {
            request = request.with_step(step);
        }
        if let Some(context) = given(&$form.context) {
            request = request.with_context(context);
        }
        request
    }};
}

impl Form {
    /// Whether the form asks for a whole turn (`kind=turn`).
    pub fn is_turn(&self) -> bool {
        given(&self.kind) == Some("turn")
    }

    /// The turn of the form, `None` without a message.
    pub fn turn_request(&self) -> anyhow::Result<Option<TurnRequest>> {
        let Some(q) = self.q.as_deref() else {
            return Ok(None);
        };
        let mut request = TurnRequest::new(q)
            .with_tenant(given(&self.tenant).unwrap_or(DEFAULT_TENANT))
            // One `now` for the turn and the searches that explain it.
            .with_now(Timestamp::now());
        request = with_filters!(self, request);
        if let Some(budget) = given(&self.budget) {
            let tokens = budget
                .parse::<usize>()
                .map_err(|_| anyhow::anyhow!("budget: a number of tokens, got `{budget}`"))?;
            request = request.with_budget_tokens(tokens);
        }
        Ok(Some(request))
    }

    pub fn kind(&self) -> anyhow::Result<Kind> {
        Ok(match given(&self.kind) {
            Some(kind) => kind.parse::<Kind>()?,
            None => Kind::Rule,
        })
    }

    /// The request of the form, `None` without a message.
    pub fn request(&self) -> anyhow::Result<Option<SearchRequest>> {
        let Some(q) = self.q.as_deref() else {
            return Ok(None);
        };
        let mut request = SearchRequest::new(self.kind()?, q);
        request = request.with_tenant(given(&self.tenant).unwrap_or(DEFAULT_TENANT));
        request = with_filters!(self, request);
        Ok(Some(request))
    }
}
