//! The environment of tool processes: coder's own, without its secrets.
//!
//! Removed from every command's and every MCP server's environment:
//! - the provider key coder uses, wherever it appears (any variable whose value holds it);
//! - variables whose names mark them as secrets: ending in `_API_KEY`, `_APIKEY`, `_TOKEN`,
//!   `_SECRET`, `_SECRET_KEY`, `_ACCESS_KEY`, `_PRIVATE_KEY`, `_PASSWORD` or `_PASSWD`, or
//!   one of these words alone (case is ignored).
//!
//! Names in the pass-through list (`tools.env.passThrough`) are kept all the same. An MCP
//! server still gets what its own `env` configuration names: that is set after the removal.

use std::ffi::OsStr;

/// Name endings (upper case) that mark a variable as a secret.
const SECRET_SUFFIXES: [&str; 9] = [
    "_API_KEY",
    "_APIKEY",
    "_TOKEN",
    "_SECRET",
    "_SECRET_KEY",
    "_ACCESS_KEY",
    "_PRIVATE_KEY",
    "_PASSWORD",
    "_PASSWD",
];

/// Names (upper case) that are secrets on their own.
const SECRET_NAMES: [&str; 6] = ["API_KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD"];

/// A secret value shorter than this is not searched for in other variables' values nor in
/// tool output: a short string would match innocent values by chance.
use crate::secrets::SHORTEST_KEY as MIN_SECRET_VALUE;

/// Which of coder's environment variables a tool's process does not inherit.
#[derive(Debug, Clone, Default)]
pub struct ToolEnv {
    /// Names kept although they look like secrets, compared ignoring case.
    pass_through: Vec<String>,
    /// Values never passed on, whatever the variable's name: the provider key in use.
    secret_values: Vec<String>,
}

impl ToolEnv {
    /// `pass_through`: names to keep (`tools.env.passThrough`); `secret_values`: values to
    /// remove wherever they appear (the provider key).
    pub fn new(pass_through: Vec<String>, secret_values: Vec<String>) -> Self {
        Self {
            pass_through,
            secret_values: secret_values
                .into_iter()
                .filter(|value| value.len() >= MIN_SECRET_VALUE)
                .collect(),
        }
    }

    /// The rule of a session: its pass-through list, and its provider's key and the values
    /// of its MCP servers' HTTP headers (tokens) withheld.
    pub fn for_config(config: &crate::Config) -> Self {
        let key = config.provider.as_ref().and_then(|p| p.api_key.as_ref());
        let headers = config
            .mcp_servers
            .values()
            .flat_map(|server| server.headers.values())
            .map(|value| value.strip_prefix("Bearer ").unwrap_or(value).to_owned());
        Self::new(
            config.env_pass_through.clone(),
            key.map(|key| key.expose().to_owned())
                .into_iter()
                .chain(headers)
                .collect(),
        )
    }

    /// This rule with one more key withheld (a task's model may use a key of its own).
    pub fn and_key(mut self, key: Option<&crate::ApiKey>) -> Self {
        if let Some(key) = key.filter(|key| key.expose().len() >= MIN_SECRET_VALUE) {
            self.secret_values.push(key.expose().to_owned());
        }
        self
    }

    /// Whether a variable is withheld from tool processes.
    pub fn withholds(&self, name: &OsStr, value: &OsStr) -> bool {
        let name = name.to_string_lossy();
        if self
            .pass_through
            .iter()
            .any(|kept| kept.eq_ignore_ascii_case(&name))
        {
            return false;
        }
        if looks_secret(&name) {
            return true;
        }
        let value = value.to_string_lossy();
        self.secret_values
            .iter()
            .any(|secret| value.contains(secret.as_str()))
    }

    /// `text` with every secret this rule withholds by value replaced by `[redacted]`:
    /// what a tool returns is recorded (events, the session file, every later request), and
    /// a file or a command's output may hold the key coder uses (`read
    /// .coder/config.json`, `env`).
    pub fn redact(&self, text: String) -> String {
        crate::secrets::redact_values(text, self.secret_values.iter().map(String::as_str))
    }

    /// The length of the longest value [`ToolEnv::redact`] replaces: text cut into pieces
    /// is redacted whole when no piece ends within this many bytes of a cut.
    pub fn longest_secret(&self) -> usize {
        self.secret_values
            .iter()
            .map(String::len)
            .max()
            .unwrap_or(0)
    }

    /// Removes from `command` every variable of coder's environment that
    /// [`ToolEnv::withholds`]; variables set on `command` afterwards are passed as set.
    pub fn apply(&self, command: &mut tokio::process::Command) {
        for (name, value) in std::env::vars_os() {
            if self.withholds(&name, &value) {
                command.env_remove(&name);
            }
        }
    }
}

/// Whether a variable's name marks it as a secret (`OPENAI_API_KEY`, `GITHUB_TOKEN`,
/// `db_password`).
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAMES.contains(&upper.as_str())
        || SECRET_SUFFIXES.iter().any(|suffix| upper.ends_with(suffix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_mark_secrets() {
        for name in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GITHUB_TOKEN",
            "aws_secret_access_key",
            "AWS_SESSION_TOKEN",
            "DB_PASSWORD",
            "CLIENT_SECRET",
            "TOKEN",
            "SSH_PRIVATE_KEY",
        ] {
            assert!(looks_secret(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "TOKENIZERS_PARALLELISM",
            "KEYBOARD",
            "SECRETARY",
        ] {
            assert!(!looks_secret(name), "{name}");
        }
    }

    #[test]
    fn the_key_is_withheld_by_value_and_the_pass_through_list_wins_by_name() {
        let env = ToolEnv::new(
            vec!["github_token".to_owned()],
            vec!["sk-0123456789".to_owned()],
        );
        let os = OsStr::new;
        assert!(env.withholds(os("MY_CONFIG"), os("key=sk-0123456789;")));
        assert!(env.withholds(os("NPM_TOKEN"), os("x")));
        assert!(!env.withholds(os("GITHUB_TOKEN"), os("x")));
        assert!(!env.withholds(os("EDITOR"), os("vi")));
        // A key too short to search for is not searched for.
        let short = ToolEnv::new(Vec::new(), vec!["abc".to_owned()]);
        assert!(!short.withholds(os("EDITOR"), os("abc")));
    }
}
