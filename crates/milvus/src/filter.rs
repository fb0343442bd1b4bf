//! Milvus boolean expressions for a request's filters.
//!
//! Every string value is written as a JSON string literal (Milvus expressions accept
//! `"..."` with JSON escapes), never interpolated raw: a tenant or tag holding a quote
//! cannot change the expression. Filter templates would be cleaner but milvus-lite
//! rejects them.

use ruchedb::Kind;
use ruchedb::retrieve::RetrievalQuery;

/// A string literal of a Milvus expression.
pub(crate) fn literal(value: &str) -> String {
    serde_json::Value::String(value.to_string()).to_string()
}

/// A list literal: `["a", "b"]`.
pub(crate) fn list(values: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    let items: Vec<String> = values.into_iter().map(|v| literal(v.as_ref())).collect();
    format!("[{}]", items.join(", "))
}

/// The expression of everything a request admits that Milvus evaluates: tenant, agent,
/// scope and `enabled` (rules), context and expiry (chunks), and tags. Metadata filters
/// (`key=value` on chunks, where the value may be a string, a number or an array) are
/// checked on the client with [`RetrievalQuery::admits`], which the retriever applies to
/// every candidate; the legs then fetch more candidates to make up for it.
pub(crate) fn expression(query: &RetrievalQuery<'_>) -> String {
    let request = query.request;
    let mut clauses = vec![format!("tenant_id == {}", literal(request.tenant_id()))];
    if let Some(agent) = request.agent_id() {
        clauses.push(format!(
            "(agent_id == \"\" or agent_id == {})",
            literal(agent)
        ));
    }
    for tag in request.tags() {
        clauses.push(format!("array_contains(tags, {})", literal(tag)));
    }
    match request.kind() {
        Kind::Rule => {
            clauses.push("enabled == true".to_string());
            let scope = match (request.scenario_id(), request.step_id()) {
                (None, _) => "scenario_id == \"\"".to_string(),
                (Some(scenario), None) => format!(
                    "(scenario_id == \"\" or (scenario_id == {} and step_id == \"\"))",
                    literal(scenario)
                ),
                (Some(scenario), Some(step)) => format!(
                    "(scenario_id == \"\" or (scenario_id == {} and (step_id == \"\" or step_id == {})))",
                    literal(scenario),
                    literal(step)
                ),
            };
            clauses.push(scope);
        }
        Kind::Chunk => {
            if let Some(context) = request.context_id() {
                clauses.push(format!("context_id == {}", literal(context)));
            }
            clauses.push(format!(
                "(expires_at == 0 or expires_at > {})",
                query.now.unix_millis()
            ));
        }
        Kind::Scenario | Kind::Tool => clauses.push("enabled == true".to_string()),
    }
    clauses.join(" and ")
}

#[cfg(test)]
mod tests {
    use ruchedb::{SearchRequest, Timestamp};

    use super::*;

    fn expr(request: &SearchRequest) -> String {
        let query = RetrievalQuery::new(request, None, 10, Timestamp::from_unix_millis(5_000));
        expression(&query)
    }

    #[test]
    fn values_are_escaped_literals() {
        let request = SearchRequest::rules("x")
            .with_tenant("a\" or 1 == 1 or \"")
            .with_tag("q\\\"");
        let e = expr(&request);
        assert!(
            e.starts_with(r#"tenant_id == "a\" or 1 == 1 or \"""#),
            "{e}"
        );
        assert!(e.contains(r#"array_contains(tags, "q\\\"")"#), "{e}");
    }

    #[test]
    fn rule_scopes_follow_the_request() {
        assert!(expr(&SearchRequest::rules("x")).contains("scenario_id == \"\""));
        let e = expr(&SearchRequest::rules("x").with_scenario("s").with_step("t"));
        assert!(
            e.contains(r#"(scenario_id == "" or (scenario_id == "s" and (step_id == "" or step_id == "t")))"#),
            "{e}"
        );
        assert!(e.contains("enabled == true"));
    }

    #[test]
    fn chunks_filter_expiry_and_context() {
        let e = expr(
            &SearchRequest::chunks("x")
                .with_context("u1")
                .with_agent("ag"),
        );
        assert!(e.contains(r#"context_id == "u1""#), "{e}");
        assert!(e.contains("(expires_at == 0 or expires_at > 5000)"), "{e}");
        assert!(e.contains(r#"(agent_id == "" or agent_id == "ag")"#), "{e}");
    }
}
