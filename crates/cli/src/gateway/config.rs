//! The gateway's `--config`: the `mcpServers` object MCP hosts already use (Claude
//! Desktop's format), so a user moves their servers behind the gateway by moving that
//! block.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

/// The separator of a qualified tool name, `SERVER__TOOL`: names a host can list (MCP and
/// the model APIs accept letters, digits, `_` and `-`), unambiguous because a server's
/// name may not hold it.
pub const SEPARATOR: &str = "__";

/// The longest server name.
const MAX_SERVER_NAME: usize = 32;

/// One downstream server: a command the gateway starts and speaks MCP to over stdio.
#[derive(Clone)]
pub struct ServerSpec {
    pub command: String,
    pub args: Vec<String>,
    /// Given to this server's process only, on top of the gateway's environment, as
    /// written (no `${VAR}` expansion); never logged, nor repeated in an error.
    pub env: BTreeMap<String, String>,
    /// The server's working directory (default: the gateway's).
    pub cwd: Option<PathBuf>,
}

/// A server's entry as hosts write it. `env` is read as raw JSON, so that an error about
/// it names the key and never repeats the value.
#[derive(Deserialize)]
struct Entry {
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: Option<serde_json::Value>,
    #[serde(default)]
    cwd: Option<PathBuf>,
    /// Hosts mark a server they keep but do not start; the gateway skips it.
    #[serde(default)]
    disabled: bool,
    /// `stdio` (the default) is the only transport the gateway starts.
    #[serde(default, rename = "type")]
    transport: Option<String>,
    /// Set for remote (HTTP) servers, which the gateway does not front.
    #[serde(default)]
    url: Option<String>,
}

/// Without the environment's values: a log or an error never shows a secret.
impl fmt::Debug for ServerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerSpec")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct File {
    #[serde(rename = "mcpServers")]
    servers: BTreeMap<String, Entry>,
}

/// The servers to start, by name (sorted: the order of start and of listings).
#[derive(Debug)]
pub struct Servers(pub BTreeMap<String, ServerSpec>);

impl Servers {
    /// Reads and checks `path`.
    ///
    /// # Errors
    ///
    /// The file cannot be read, is not JSON (its line and column), a field has the wrong
    /// type (its path, `mcpServers.NAME.args`), a name cannot qualify a tool, a server
    /// has no command or is a remote one, or no server is left to start.
    pub fn read(path: &Path) -> Result<Servers> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("{}: cannot read the gateway's config", path.display()))?;
        Servers::parse(&text).with_context(|| format!("{}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Servers> {
        let mut de = serde_json::Deserializer::from_str(text);
        let file: File = serde_path_to_error::deserialize(&mut de).map_err(|err| {
            let path = err.path().to_string();
            let inner = err.into_inner();
            if path == "." || path.is_empty() {
                anyhow::anyhow!(
                    "{inner} (expected {{\"mcpServers\": {{\"NAME\": {{\"command\": …}}}}}})"
                )
            } else {
                anyhow::anyhow!("{path}: {inner}")
            }
        })?;
        let mut servers = BTreeMap::new();
        for (name, entry) in file.servers {
            check_name(&name)?;
            if entry.disabled {
                tracing::info!(server = %name, "disabled in the config: not started");
                continue;
            }
            if entry.url.is_some()
                || entry
                    .transport
                    .as_deref()
                    .is_some_and(|transport| transport != "stdio")
            {
                bail!(
                    "mcpServers.{name}: only stdio servers (`command`) can be fronted; keep remote ones in the host's config"
                );
            }
            let command = match entry.command {
                Some(command) if !command.trim().is_empty() => command,
                Some(_) => bail!("mcpServers.{name}.command: empty"),
                None => bail!("mcpServers.{name}.command: missing"),
            };
            let env = match entry.env {
                None | Some(serde_json::Value::Null) => BTreeMap::new(),
                Some(serde_json::Value::Object(env)) => env
                    .into_iter()
                    .map(|(key, value)| match value {
                        serde_json::Value::String(value) => Ok((key, value)),
                        _ => Err(anyhow::anyhow!(
                            "mcpServers.{name}.env.{key}: expected a string (its value is not shown)"
                        )),
                    })
                    .collect::<Result<_>>()?,
                Some(_) => bail!(
                    "mcpServers.{name}.env: expected an object of strings (its value is not shown)"
                ),
            };
            servers.insert(
                name,
                ServerSpec {
                    command,
                    args: entry.args,
                    env,
                    cwd: entry.cwd,
                },
            );
        }
        if servers.is_empty() {
            bail!("mcpServers: no server to start");
        }
        Ok(Servers(servers))
    }
}

fn check_name(name: &str) -> Result<()> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if name.is_empty()
        || name.len() > MAX_SERVER_NAME
        || !name.chars().all(allowed)
        || name.contains(SEPARATOR)
        || name.ends_with('_')
    {
        bail!(
            "mcpServers.{name:?}: a server's name is 1-{MAX_SERVER_NAME} letters, digits, `_` or `-`, without `{SEPARATOR}` or a trailing `_` (it prefixes its tools' names: NAME{SEPARATOR}TOOL)"
        );
    }
    Ok(())
}

/// `SERVER__TOOL`.
pub fn qualified(server: &str, tool: &str) -> String {
    format!("{server}{SEPARATOR}{tool}")
}

/// The server and tool a qualified name names.
pub fn split(qualified: &str) -> Option<(&str, &str)> {
    qualified
        .split_once(SEPARATOR)
        .filter(|(server, tool)| !server.is_empty() && !tool.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_desktop_block_reads_as_is() {
        let servers = Servers::parse(
            r#"{"mcpServers": {
                "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
                "github": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "secret"}, "alwaysAllow": []},
                "old": {"command": "x", "disabled": true},
                "off": {"url": "https://example.com/mcp", "disabled": true}
            }}"#,
        )
        .unwrap();
        assert_eq!(
            servers.0.keys().collect::<Vec<_>>(),
            ["filesystem", "github"]
        );
        assert_eq!(servers.0["filesystem"].args.len(), 3);
        let shown = format!("{servers:?}");
        assert!(
            shown.contains("GITHUB_TOKEN") && !shown.contains("secret"),
            "{shown}"
        );
    }

    #[test]
    fn bad_configs_name_the_field() {
        let cases = [
            (
                r#"{"mcpServers": {"a": {"command": 3}}}"#,
                "mcpServers.a.command",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "args": "y"}}}"#,
                "mcpServers.a.args",
            ),
            (r#"{"mcpServers": {"a__b": {"command": "x"}}}"#, "a__b"),
            (r#"{"mcpServers": {"a b": {"command": "x"}}}"#, "a b"),
            (
                r#"{"mcpServers": {"r": {"url": "https://x"}}}"#,
                "mcpServers.r",
            ),
            (
                r#"{"mcpServers": {"e": {"command": " "}}}"#,
                "mcpServers.e.command",
            ),
            (
                r#"{"mcpServers": {"e": {"args": []}}}"#,
                "mcpServers.e.command: missing",
            ),
            (
                r#"{"mcpServers": {"e": {"command": "x", "env": {"T": 12345}}}}"#,
                "mcpServers.e.env.T",
            ),
            (
                r#"{"mcpServers": {"e": {"command": "x", "env": "T=s3cr3t"}}}"#,
                "mcpServers.e.env",
            ),
            (
                r#"{"mcpServers": {"e": {"command": "x", "env": {"T": ["s3cr3t"]}}}}"#,
                "mcpServers.e.env.T",
            ),
            (r#"{"mcpServers": {}}"#, "no server"),
            (r#"{"servers": {}}"#, "mcpServers"),
            ("{", "EOF"),
        ];
        for (text, named) in cases {
            let err = format!("{:#}", Servers::parse(text).unwrap_err());
            assert!(err.contains(named), "{text}: {err}");
            assert!(
                !err.contains("12345") && !err.contains("s3cr3t"),
                "a value shown: {err}"
            );
        }
    }

    #[test]
    fn qualified_names_split_at_the_first_separator() {
        assert_eq!(
            split(&qualified("fs", "read__file")),
            Some(("fs", "read__file"))
        );
        assert_eq!(split("fs"), None);
        assert_eq!(split("__x"), None);
    }
}
