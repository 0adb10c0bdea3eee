//! A conversation's MCP tool allowlist (seed 003), checked when it is given: every entry is
//! a fully-qualified tool name (`server__tool`), the deprecated `server/tool` form is read
//! as one (and said so, once for the whole list), anything else is refused; and every
//! entry must name a tool of the session's servers, as far as they are known at that
//! moment: a server that is not configured (or is disabled, or failed) is refused before
//! any server has started, a tool its ready server does not offer as soon as it is ready.

use std::collections::BTreeMap;

use super::ServerStatus;
use super::names::{MAX_LEN, is_name_part, prefix};

/// An allowlist as given, normalised.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Normalised {
    /// Fully-qualified names, in the order given, each once.
    pub names: Vec<String>,
    /// Entries given in the deprecated `server/tool` form, and what they were read as.
    pub deprecated: Vec<(String, String)>,
}

impl Normalised {
    /// The one warning that says which entries used the deprecated form, if any did.
    pub fn deprecation(&self) -> Option<String> {
        if self.deprecated.is_empty() {
            return None;
        }
        let read: Vec<String> = self
            .deprecated
            .iter()
            .map(|(given, name)| format!("`{given}` is read as `{name}`"))
            .collect();
        Some(format!(
            "mcp_allowlist uses the deprecated `server/tool` form: {}; write fully-qualified \
             names (`server__tool`)",
            read.join(", ")
        ))
    }
}

/// Why an allowlist entry is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Not a fully-qualified name, nor the deprecated form of one.
    Illegal(String),
    /// No configured server has the entry's server part.
    UnknownServer { entry: String, servers: Vec<String> },
    /// The entry's server is ready and offers no such tool.
    UnknownTool { entry: String, server: String },
    /// The entry's server is disabled, or failed to start or exited.
    NotRunning {
        entry: String,
        server: String,
        why: String,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Illegal(entry) => write!(
                f,
                "mcp_allowlist entry `{entry}` is not a fully-qualified MCP tool name: write \
                 `server__tool` (letters, digits, `_` and `-`, at most {MAX_LEN} characters)"
            ),
            Self::UnknownServer { entry, servers } if servers.is_empty() => write!(
                f,
                "mcp_allowlist entry `{entry}` names an unknown MCP server: this session has none"
            ),
            Self::UnknownServer { entry, servers } => write!(
                f,
                "mcp_allowlist entry `{entry}` names an unknown MCP server: this session has {}",
                servers
                    .iter()
                    .map(|server| format!("`{server}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Self::UnknownTool { entry, server } => write!(
                f,
                "mcp_allowlist entry `{entry}` names an unknown tool: the MCP server `{server}` \
                 offers no such tool"
            ),
            Self::NotRunning { entry, server, why } => write!(
                f,
                "mcp_allowlist entry `{entry}` names a tool of the MCP server `{server}`, which \
                 is not running ({why})"
            ),
        }
    }
}

/// Normalises `given`: `server/tool` becomes `server__tool`; an entry that is neither form
/// is refused.
pub(crate) fn normalise(given: Vec<String>) -> Result<Normalised, Refusal> {
    let mut normalised = Normalised::default();
    for entry in given {
        let name = match entry.split_once('/') {
            Some((server, tool)) if is_name_part(server) && is_name_part(tool) => {
                let name = format!("{server}__{tool}");
                let pair = (entry.clone(), name.clone());
                if !normalised.deprecated.contains(&pair) {
                    normalised.deprecated.push(pair);
                }
                name
            }
            _ => entry,
        };
        if !is_qualified(&name) {
            return Err(Refusal::Illegal(name));
        }
        if !normalised.names.contains(&name) {
            normalised.names.push(name);
        }
    }
    Ok(normalised)
}

/// Whether `name` has the form of a fully-qualified tool name: `server__tool`, both parts
/// non-empty, within OpenAI's `^[a-zA-Z0-9_-]{1,64}$`.
fn is_qualified(name: &str) -> bool {
    name.len() <= MAX_LEN
        && is_name_part(name)
        && name
            .find("__")
            .is_some_and(|at| at > 0 && at + 2 < name.len())
}

/// Checks each of `names` against the servers: `offered` is every fully-qualified name the
/// ready servers offer, `statuses` every configured server's status. An entry of a server
/// still starting passes: its tools are not known yet (the conversation's view says so,
/// once the server is ready, if it does not offer it).
pub(crate) fn check(
    names: &[String],
    offered: &[String],
    statuses: &BTreeMap<String, ServerStatus>,
) -> Result<(), Refusal> {
    for entry in names {
        if offered.contains(entry) {
            continue;
        }
        // A server's tools all start with its sanitised name and `__`; the longest such
        // prefix is the entry's server (`a` and `a__b` may both be configured).
        let server = statuses
            .keys()
            .filter(|server| entry.starts_with(&prefix(server)))
            .max_by_key(|server| prefix(server).len());
        let Some(server) = server else {
            return Err(Refusal::UnknownServer {
                entry: entry.clone(),
                servers: statuses.keys().cloned().collect(),
            });
        };
        let not_running = |why: String| Refusal::NotRunning {
            entry: entry.clone(),
            server: server.clone(),
            why,
        };
        match &statuses[server] {
            ServerStatus::Starting => {}
            ServerStatus::Ready { .. } => {
                return Err(Refusal::UnknownTool {
                    entry: entry.clone(),
                    server: server.clone(),
                });
            }
            ServerStatus::Disabled => return Err(not_running("it is disabled".to_owned())),
            ServerStatus::Failed { error, .. } => return Err(not_running(error.clone())),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn given(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn the_deprecated_form_is_read_as_a_qualified_name_and_said_once() {
        let normalised = normalise(given(&["fs/read", "fs__write", "fs/read", "web/get"])).unwrap();
        assert_eq!(normalised.names, ["fs__read", "fs__write", "web__get"]);
        assert_eq!(
            normalised.deprecation().unwrap(),
            "mcp_allowlist uses the deprecated `server/tool` form: `fs/read` is read as \
             `fs__read`, `web/get` is read as `web__get`; write fully-qualified names (`server__tool`)"
        );
        assert_eq!(normalise(given(&["fs__read"])).unwrap().deprecation(), None);
        assert_eq!(normalise(Vec::new()).unwrap().names, Vec::<String>::new());
    }

    #[test]
    fn illegal_names_are_refused_by_name() {
        let long = format!("s__{}", "x".repeat(62));
        for bad in [
            "echo",
            "a/b/c",
            "__tool",
            "server__",
            "a b__c",
            "srv__tool!",
            "",
            "/x",
            &long,
        ] {
            assert_eq!(
                normalise(given(&["ok__tool", bad])),
                Err(Refusal::Illegal(bad.to_owned())),
                "{bad}"
            );
        }
        assert!(normalise(given(&["a__b__c", "my-server__get_sum"])).is_ok());
    }

    #[test]
    fn entries_are_checked_as_far_as_the_servers_are_known() {
        let statuses = BTreeMap::from([
            (
                "fs".to_owned(),
                ServerStatus::Ready {
                    tools: 1,
                    pid: None,
                },
            ),
            ("slow".to_owned(), ServerStatus::Starting),
            ("off".to_owned(), ServerStatus::Disabled),
            (
                "broken".to_owned(),
                ServerStatus::Failed {
                    error: "it exited".to_owned(),
                    stderr: String::new(),
                },
            ),
        ]);
        let offered = given(&["fs__read"]);
        let check = |names: &[&str]| check(&given(names), &offered, &statuses);
        assert_eq!(check(&["fs__read", "slow__anything"]), Ok(()));
        assert_eq!(
            check(&["fs__write"]).unwrap_err().to_string(),
            "mcp_allowlist entry `fs__write` names an unknown tool: the MCP server `fs` \
             offers no such tool"
        );
        assert_eq!(
            check(&["web__get"]).unwrap_err().to_string(),
            "mcp_allowlist entry `web__get` names an unknown MCP server: this session has \
             `broken`, `fs`, `off`, `slow`"
        );
        assert_eq!(
            check(&["off__x"]).unwrap_err().to_string(),
            "mcp_allowlist entry `off__x` names a tool of the MCP server `off`, which is not \
             running (it is disabled)"
        );
        assert!(
            check(&["broken__x"])
                .unwrap_err()
                .to_string()
                .ends_with("(it exited)")
        );
        assert_eq!(
            super::check(&given(&["a__b"]), &[], &BTreeMap::new())
                .unwrap_err()
                .to_string(),
            "mcp_allowlist entry `a__b` names an unknown MCP server: this session has none"
        );
    }
}
