//! The gateway's catalog: the downstream servers' tools as ruche tools, and the search
//! that finds the few that fit a task.
//!
//! A tool is indexed with its qualified name (`SERVER__TOOL`) as its id, its name, its
//! title and description as its description, its input schema as its parameters and one
//! tag, `mcp:SERVER`, which marks it as the gateway's: only tools so marked are ever
//! replaced or deleted, so a gateway pointed at an index that holds other tools leaves
//! them alone. A listing re-embeds only the tools whose definition changed.

use anyhow::Result;
use ruchedb::{Document, Engine, Kind, SearchRequest, Tool, count_tokens};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

use super::config::{qualified, split};
use super::downstream::Listed;

/// The tenant the gateway's tools are kept in: their own, so that tools indexed by other
/// means in the same index neither collide with theirs nor take places in a short list.
pub const TENANT: &str = "mcp-gateway";
/// The tag prefix that marks a tool as the gateway's and names its server.
const TAG_PREFIX: &str = "mcp:";

pub fn server_tag(server: &str) -> String {
    format!("{TAG_PREFIX}{server}")
}

/// The server of a tool the gateway indexed.
fn owner(tool: &Tool) -> Option<&str> {
    let server = tool
        .tags
        .iter()
        .find_map(|tag| tag.strip_prefix(TAG_PREFIX))?;
    let (prefix, _) = split(&tool.id)?;
    (prefix == server).then_some(server)
}

/// What a listing changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Qualified names added or re-embedded.
    pub upserted: Vec<String>,
    /// Qualified names deleted.
    pub deleted: Vec<String>,
    /// Tools the index refused (a name or description it cannot hold), with why.
    pub refused: Vec<(String, String)>,
    /// The `o200k_base` tokens of the server's tool definitions as it listed them: what a
    /// host puts in a prompt for them without the gateway.
    pub definition_tokens: usize,
}

impl Changes {
    pub fn touches(&self, id: &str) -> bool {
        self.upserted
            .iter()
            .chain(&self.deleted)
            .any(|changed| changed == id)
    }
}

pub struct Catalog {
    engine: Engine,
}

impl Catalog {
    pub fn new(engine: Engine) -> Catalog {
        Catalog { engine }
    }

    /// The gateway's tools held now, by qualified name, of `server` or of every server.
    fn held(&self, server: Option<&str>) -> Result<BTreeMap<String, Tool>> {
        let mut held = BTreeMap::new();
        for doc in self.engine.export(Kind::Tool, Some(TENANT))? {
            let Document::Tool(tool) = doc else { continue };
            let Some(owner) = owner(&tool) else { continue };
            if server.is_none_or(|server| server == owner) {
                held.insert(tool.id.clone(), tool);
            }
        }
        Ok(held)
    }

    /// Brings the index in line with a server's listing in one commit: new and changed
    /// tools are (re-)embedded, unchanged ones left as they are, gone ones deleted.
    pub fn reconcile(&self, listed: &Listed) -> Result<Changes> {
        let mut changes = Changes {
            definition_tokens: listed
                .tools
                .iter()
                .map(|tool| serde_json::to_string(tool).map_or(0, |json| count_tokens(&json)))
                .sum(),
            ..Changes::default()
        };
        let mut wanted = BTreeMap::new();
        for tool in &listed.tools {
            let document = document(&listed.server, tool);
            match document.validate() {
                Ok(()) => {
                    wanted.insert(document.id.clone(), document);
                }
                Err(err) => changes.refused.push((document.id, err.to_string())),
            }
        }
        let held = self.held(Some(&listed.server))?;
        let upserts: Vec<Tool> = wanted
            .into_values()
            .filter(|tool| held.get(&tool.id).is_none_or(|old| !same(old, tool)))
            .collect();
        changes.upserted = upserts.iter().map(|tool| tool.id.clone()).collect();
        let listed_ids: std::collections::BTreeSet<String> = listed
            .tools
            .iter()
            .map(|tool| qualified(&listed.server, &tool.name))
            .collect();
        changes.deleted = held
            .into_keys()
            .filter(|id| !listed_ids.contains(id))
            .collect();
        if changes.upserted.is_empty() && changes.deleted.is_empty() {
            return Ok(changes);
        }
        self.engine.upsert_tools(upserts)?;
        for id in &changes.deleted {
            self.engine.delete(Kind::Tool, TENANT, id);
        }
        self.engine.commit()?;
        Ok(changes)
    }

    /// Deletes the tools of servers no longer in the config.
    pub fn forget_servers_but(&self, servers: &[&str]) -> Result<Vec<String>> {
        let gone: Vec<String> = self
            .held(None)?
            .into_iter()
            .filter(|(_, tool)| owner(tool).is_some_and(|server| !servers.contains(&server)))
            .map(|(id, _)| id)
            .collect();
        if !gone.is_empty() {
            for id in &gone {
                self.engine.delete(Kind::Tool, TENANT, id);
            }
            self.engine.commit()?;
        }
        Ok(gone)
    }

    /// One of the gateway's tools by qualified name.
    pub fn get(&self, id: &str) -> Result<Option<Tool>> {
        Ok(match self.engine.get(Kind::Tool, TENANT, id)? {
            Some(Document::Tool(tool)) if owner(&tool).is_some() => Some(tool),
            _ => None,
        })
    }

    /// The short list for a task: `ruche search --kind tools`'s, restricted to the
    /// gateway's tools (of one server if named).
    pub fn find(
        &self,
        task: &str,
        top_k: Option<usize>,
        server: Option<&str>,
    ) -> Result<Vec<Tool>> {
        self.search(SearchRequest::new(Kind::Tool, task), top_k, server)
    }

    /// The `k` tools nearest a task, whether or not they pass the relevance gate: what
    /// `find_tools` offers when none fits.
    pub fn nearest(&self, task: &str, k: usize, server: Option<&str>) -> Result<Vec<Tool>> {
        let request = SearchRequest::new(Kind::Tool, task).with_min_relevance(0.0);
        self.search(request, Some(k), server)
    }

    fn search(
        &self,
        request: SearchRequest,
        top_k: Option<usize>,
        server: Option<&str>,
    ) -> Result<Vec<Tool>> {
        let mut request = request.with_tenant(TENANT);
        if let Some(server) = server {
            request = request.with_tag(server_tag(server));
        }
        if let Some(top_k) = top_k {
            request = request.with_top_k(top_k);
        }
        let response = self.engine.search(&request)?;
        Ok(response
            .hits
            .into_iter()
            .filter_map(|hit| match hit.document.as_ref() {
                Document::Tool(tool) if owner(tool).is_some() => Some(tool.clone()),
                _ => None,
            })
            .collect())
    }
}

/// The ruche tool for a downstream tool.
pub fn document(server: &str, tool: &rmcp::model::Tool) -> Tool {
    let title = tool
        .title
        .as_deref()
        .or_else(|| tool.annotations.as_ref()?.title.as_deref())
        .map(str::trim)
        .filter(|title| !title.is_empty());
    let description = tool.description.as_deref().map(str::trim).unwrap_or("");
    let description = match title {
        Some(title) if !description.to_lowercase().contains(&title.to_lowercase()) => {
            if description.is_empty() {
                title.to_string()
            } else {
                format!("{title}. {description}")
            }
        }
        _ if description.is_empty() => tool.name.to_string(),
        _ => description.to_string(),
    };
    Tool::new(
        qualified(server, &tool.name),
        tool.name.to_string(),
        description,
    )
    .with_parameters(Value::Object(tool.input_schema.as_ref().clone()))
    .with_tags([server_tag(server)])
    .with_tenant(TENANT)
}

fn same(old: &Tool, new: &Tool) -> bool {
    old.name == new.name
        && old.description == new.description
        && old.parameters == new.parameters
        && old.tags == new.tags
        && old.enabled
}

/// A found tool as `find_tools` answers it: ready to call through `call_tool`.
pub fn answer(tool: &Tool, available: bool) -> Value {
    let (server, _) = split(&tool.id).unwrap_or_default();
    let mut entry = Map::new();
    entry.insert("name".into(), json!(tool.id));
    entry.insert("server".into(), json!(server));
    entry.insert("description".into(), json!(tool.description));
    entry.insert(
        "inputSchema".into(),
        match &tool.parameters {
            Value::Object(_) => tool.parameters.clone(),
            _ => json!({ "type": "object" }),
        },
    );
    if !available {
        entry.insert("available".into(), json!(false));
    }
    Value::Object(entry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::Tool as McpTool;
    use std::sync::Arc;

    fn mcp_tool(name: &str, description: &str) -> McpTool {
        let schema: Map<String, Value> = serde_json::from_value(
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        )
        .unwrap();
        McpTool::new(name.to_string(), description.to_string(), Arc::new(schema))
    }

    fn catalog() -> Catalog {
        Catalog::new(
            Engine::builder()
                .with_embedder_spec(ruchedb::EmbedderSpec::None)
                .temporary()
                .unwrap(),
        )
    }

    fn listed(server: &str, tools: &[(&str, &str)]) -> Listed {
        Listed {
            server: server.into(),
            tools: tools.iter().map(|(n, d)| mcp_tool(n, d)).collect(),
        }
    }

    /// The tool indexed by hand beside the gateway's is still there.
    fn by_hand_kept(catalog: &Catalog) -> bool {
        let held = catalog.engine.get(Kind::Tool, TENANT, "mine").unwrap();
        held.is_some()
    }

    #[test]
    fn a_listing_changes_only_what_changed_and_leaves_other_tools() {
        let catalog = catalog();
        catalog
            .engine
            .upsert_tools([Tool::new("mine", "mine", "a tool indexed by hand").with_tenant(TENANT)])
            .unwrap();
        catalog.engine.commit().unwrap();
        let first = catalog
            .reconcile(&listed(
                "fs",
                &[("read_file", "Read a file"), ("list", "List a folder")],
            ))
            .unwrap();
        assert_eq!(first.upserted, ["fs__list", "fs__read_file"]);
        let again = catalog
            .reconcile(&listed(
                "fs",
                &[("read_file", "Read a file"), ("list", "List a folder")],
            ))
            .unwrap();
        assert!(
            again.upserted.is_empty() && again.deleted.is_empty(),
            "{again:?}"
        );
        assert!(again.definition_tokens > 10, "{again:?}");
        catalog
            .reconcile(&listed("other", &[("read_file", "Read a web page")]))
            .unwrap();
        let edit = catalog
            .reconcile(&listed("fs", &[("read_file", "Read a text file")]))
            .unwrap();
        assert_eq!(edit.upserted, ["fs__read_file"]);
        assert_eq!(edit.deleted, ["fs__list"]);
        assert!(catalog.get("other__read_file").unwrap().is_some());
        assert!(catalog.get("mine").unwrap().is_none(), "not the gateway's");
        assert!(by_hand_kept(&catalog));
        assert_eq!(
            catalog.forget_servers_but(&["fs"]).unwrap(),
            ["other__read_file"]
        );
        assert!(by_hand_kept(&catalog));
    }

    #[test]
    fn titles_and_missing_descriptions() {
        let mut tool = mcp_tool("get_time", "");
        assert_eq!(document("t", &tool).description, "get_time");
        tool.title = Some("Current time".into());
        assert_eq!(document("t", &tool).description, "Current time");
        tool.description = Some("Returns the time in an IANA zone".into());
        assert_eq!(
            document("t", &tool).description,
            "Current time. Returns the time in an IANA zone"
        );
        // A title the description already says is not repeated.
        tool.description = Some("Get the current time in a time zone".into());
        assert_eq!(
            document("t", &tool).description,
            "Get the current time in a time zone"
        );
    }
}
