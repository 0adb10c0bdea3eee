//! MCP server configuration: `mcpServers` in `.coder/config.json`, and a workspace
//! `.mcp.json` in the format other agents use.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// One server. Stdio servers have a `command`; streamable HTTP servers a `url`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerConfig {
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
    pub url: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default = "enabled")]
    pub enabled: bool,
    /// Seconds, from 0 to a day; other numbers are refused by name.
    #[serde(
        default,
        alias = "startup_timeout_sec",
        with = "coder_protocol::options::startup_timeout_sec"
    )]
    pub startup_timeout_sec: Option<f64>,
    #[serde(
        default,
        alias = "tool_timeout_sec",
        with = "coder_protocol::options::tool_timeout_sec"
    )]
    pub tool_timeout_sec: Option<f64>,
}

impl McpServerConfig {
    /// The startup timeout, `default` when none is set. Never panics: a value that is no
    /// duration (one built in code, past the checks of the files) is taken as `default`,
    /// and none is longer than a day.
    pub(crate) fn startup_timeout(&self, default: Duration) -> Duration {
        duration(self.startup_timeout_sec, default)
    }

    /// The tool timeout, as [`McpServerConfig::startup_timeout`].
    pub(crate) fn tool_timeout(&self, default: Duration) -> Duration {
        duration(self.tool_timeout_sec, default)
    }

    /// What starting this server does, for a person deciding whether to allow it: the
    /// command line it runs (`runs node server.js`, with its working directory) or the URL
    /// it connects to, control characters shown and cut at [`DESCRIBED_CHARS`].
    pub fn describe(&self) -> String {
        let what = match (&self.command, &self.url) {
            (Some(command), _) => {
                let words = std::iter::once(command)
                    .chain(&self.args)
                    .map(String::as_str);
                // Quoted as a shell reads it back; a word with a NUL (which no shell
                // takes) leaves the words as they are, joined by spaces.
                let mut line = shlex::try_join(words.clone())
                    .unwrap_or_else(|_| words.collect::<Vec<_>>().join(" "));
                if let Some(cwd) = &self.cwd {
                    line.push_str(&format!(" (in {})", cwd.display()));
                }
                format!("runs {line}")
            }
            (None, Some(url)) => format!("connects to {url}"),
            (None, None) => "names neither a command nor a URL".to_owned(),
        };
        let what = crate::control_chars::neutralize(&what).into_owned();
        match what.char_indices().nth(DESCRIBED_CHARS) {
            Some((cut, _)) => format!("{}...", &what[..cut]),
            None => what,
        }
    }
}

/// How much of a server's command line [`McpServerConfig::describe`] shows.
pub const DESCRIBED_CHARS: usize = 300;

fn duration(seconds: Option<f64>, default: Duration) -> Duration {
    let longest = coder_protocol::options::longest_timeout();
    seconds
        .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
        .unwrap_or(default)
        .min(longest)
}

fn enabled() -> bool {
    true
}

/// The SDK's server options are the same settings.
impl From<coder_protocol::options::McpServerOptions> for McpServerConfig {
    fn from(options: coder_protocol::options::McpServerOptions) -> Self {
        let coder_protocol::options::McpServerOptions {
            command,
            args,
            env,
            cwd,
            url,
            headers,
            enabled,
            startup_timeout_sec,
            tool_timeout_sec,
        } = options;
        McpServerConfig {
            command,
            args,
            env,
            cwd,
            url,
            headers,
            enabled,
            startup_timeout_sec,
            tool_timeout_sec,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct McpJson {
    #[serde(default)]
    mcp_servers: BTreeMap<String, McpServerConfig>,
}

/// The servers of a workspace `.mcp.json`, if there is one.
pub fn load_mcp_json(workspace: &Path) -> Result<BTreeMap<String, McpServerConfig>, String> {
    let path = workspace.join(".mcp.json");
    // Shipped by the repository: read through the workspace handle (no link out, no FIFO
    // or device).
    let read =
        crate::beneath::read_shipped_text(workspace, &path, crate::bounded::MAX_CONFIG_BYTES);
    let text = match read {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(BTreeMap::new()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(err) => return Err(format!("cannot read {}: {err}", path.display())),
    };
    serde_json::from_str::<McpJson>(&text)
        .map(|file| file.mcp_servers)
        .map_err(|err| format!("{} is not valid: {err}", path.display()))
}
