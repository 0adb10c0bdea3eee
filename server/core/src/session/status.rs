//! `/status`: where the session stands, one line a subject, for every door: the model and
//! the API it is reached at, the conversation's mode, the permission preset, the context
//! used against the model's window, the session's id, the workspace and whether it is
//! trusted, the sandbox in force, the MCP servers' states, and where the session is saved.

use coder_protocol::ConversationId;

use super::Session;
use super::mcp_reload::server_state;
use crate::config::ProviderKind;
use crate::error::EngineError;
use crate::sync::lock;

impl Session {
    /// The text `/status` answers with, about `conversation` and its session.
    pub(super) fn status_text(&self, conversation: ConversationId) -> Result<String, EngineError> {
        let held = self.conversation(conversation)?;
        let context_tokens = lock(&held).size.tokens;
        let config = self.config();
        let mut lines = Vec::new();
        let settings = self.model_settings();
        lines.push(match &settings {
            Some(settings) => format!(
                "model: {} ({})",
                settings.model,
                api(settings.provider.kind, &settings.provider.base_url)
            ),
            None => format!("model: {} (no provider is configured)", config.model),
        });
        lines.push(format!("mode: {}", self.mode(conversation)?.as_str()));
        lines.push(format!(
            "permissions: {}",
            self.permissions().preset().as_str()
        ));
        lines.push(match &settings {
            Some(settings) => {
                let (limits, _) = settings.limits_of(&settings.model);
                context_line(context_tokens, limits.context_window)
            }
            None => format!("context: {context_tokens} tokens"),
        });
        lines.push(format!("session: {}", self.session_id()));
        lines.push(format!(
            "workspace: {} ({})",
            config.workspace.display(),
            if config.workspace_trusted {
                "trusted"
            } else {
                "not trusted: its own files may only narrow your settings"
            }
        ));
        lines.push(format!("sandbox: {}", self.sandbox_line(config.sandbox)));
        lines.push(self.mcp_line(&config.mcp_servers));
        lines.push(match self.snapshot_path() {
            Some(path) => format!("saved in: {}", path.display()),
            None => "saved in: nowhere (saveSessions is false)".to_owned(),
        });
        Ok(lines.join("\n"))
    }

    fn sandbox_line(&self, wanted: bool) -> String {
        if !wanted {
            return "off (sandbox.enabled is false): commands run unconfined".to_owned();
        }
        match self.sandbox_enforcement() {
            Some(enforcement) if enforcement.is_enforced() => enforcement.summary(),
            _ => "none: this system offers nothing to confine commands with".to_owned(),
        }
    }

    fn mcp_line(
        &self,
        servers: &std::collections::BTreeMap<String, crate::mcp::McpServerConfig>,
    ) -> String {
        if servers.is_empty() {
            return "MCP servers: none".to_owned();
        }
        let statuses = self.services.mcp.statuses();
        let states: Vec<String> = servers
            .keys()
            .map(|name| format!("{name} {}", server_state(statuses.get(name))))
            .collect();
        format!("MCP servers: {}", states.join("; "))
    }
}

/// The API a model is reached at: its wire format and the base URL's host (and port).
fn api(kind: ProviderKind, base_url: &str) -> String {
    let wire = match kind {
        ProviderKind::OpenAi => "OpenAI API",
        ProviderKind::Anthropic => "Anthropic API",
    };
    let host = reqwest::Url::parse(base_url)
        .ok()
        .and_then(|url| {
            let host = url.host_str()?.to_owned();
            Some(match url.port() {
                Some(port) => format!("{host}:{port}"),
                None => host,
            })
        })
        .unwrap_or_else(|| base_url.to_owned());
    format!("{wire} at {host}")
}

/// `context: 1,234 of 128,000 tokens (1%)`.
fn context_line(used: u64, window: u64) -> String {
    let share = used
        .saturating_mul(100)
        .checked_div(window)
        .unwrap_or_default();
    format!(
        "context: {} of {} tokens ({share}%)",
        crate::numbers::grouped(used),
        crate::numbers::grouped(window)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_is_named_by_its_wire_format_and_host() {
        assert_eq!(
            api(ProviderKind::OpenAi, "https://api.openai.com/v1"),
            "OpenAI API at api.openai.com"
        );
        assert_eq!(
            api(ProviderKind::Anthropic, "http://127.0.0.1:8080"),
            "Anthropic API at 127.0.0.1:8080"
        );
        assert_eq!(
            api(ProviderKind::OpenAi, "not a url"),
            "OpenAI API at not a url"
        );
    }

    #[test]
    fn the_context_is_told_against_the_window() {
        assert_eq!(context_line(0, 8_192), "context: 0 of 8,192 tokens (0%)");
        assert_eq!(
            context_line(1_234_567, 1_000_000),
            "context: 1,234,567 of 1,000,000 tokens (123%)"
        );
        assert_eq!(
            context_line(64_000, 128_000),
            "context: 64,000 of 128,000 tokens (50%)"
        );
    }
}
