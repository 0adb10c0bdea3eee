//! Which built-in tools a conversation offers (seed 003's `ToolsPrefs`), resolved when it
//! opens: each flag its opener gave, the others inherited (from the calling conversation, or
//! the session's defaults), and the shell narrowed to what the opener may give. coder has
//! no web search tool and no streamable shell: asking for either is an error, since a
//! conversation told it has them would not.

use coder_protocol::{ShellMode, ToolsPrefs};
use serde::{Deserialize, Serialize};

use crate::error::EngineError;

/// A conversation's built-in tools, as resolved; kept in the session snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ToolSelection {
    /// Offer `todo_write`.
    pub include_plan_tool: bool,
    /// Offer `apply_patch`.
    pub include_apply_patch_tool: bool,
    /// The shell the conversation narrowed itself to; `None` takes what the session gives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shell_mode: Option<ShellMode>,
}

impl Default for ToolSelection {
    /// The session's defaults: every tool, the session's shell.
    fn default() -> Self {
        Self {
            include_plan_tool: true,
            include_apply_patch_tool: true,
            shell_mode: None,
        }
    }
}

impl ToolSelection {
    /// What `asked` gives over `inherited`. `ceiling` is the loosest shell the opener may
    /// give (the calling conversation's, or the session's): a looser `shell_mode` is
    /// narrowed to it, and the returned notes say so. A sandbox the session does not have
    /// cannot be asked for, and neither can web search or a streamable shell.
    pub fn resolve(
        inherited: Self,
        asked: &ToolsPrefs,
        ceiling: ShellMode,
    ) -> Result<(Self, Vec<String>), EngineError> {
        if asked.web_search_request == Some(true) {
            return Err(EngineError::invalid_params(
                "web_search_request: coder has no web search tool, so a conversation cannot \
                 have one; leave it out or set it to false",
            ));
        }
        if asked.use_streamable_shell_tool == Some(true) {
            return Err(EngineError::invalid_params(
                "use_streamable_shell_tool: coder has no streamable shell (its one shell, \
                 `bash`, runs each command to its end without input); leave it out or set it \
                 to false",
            ));
        }
        let mut notes = Vec::new();
        let shell_mode = match asked.shell_mode {
            None => inherited.shell_mode,
            Some(ShellMode::Sandboxed) if ceiling == ShellMode::Unconfined => {
                return Err(EngineError::invalid_params(
                    "shell_mode `sandboxed` needs the session's sandbox, and this session \
                     runs commands without one (`sandbox.enabled` is false, or the system \
                     offers none); ask for `off` to have no shell",
                ));
            }
            Some(wanted) => {
                let mode = narrower(wanted, ceiling);
                if mode != wanted {
                    notes.push(format!(
                        "shell_mode `{}` is looser than this conversation may have; it uses `{}`",
                        name(wanted),
                        name(mode)
                    ));
                }
                Some(mode)
            }
        };
        let selection = Self {
            include_plan_tool: asked
                .include_plan_tool
                .unwrap_or(inherited.include_plan_tool),
            include_apply_patch_tool: asked
                .include_apply_patch_tool
                .unwrap_or(inherited.include_apply_patch_tool),
            shell_mode,
        };
        Ok((selection, notes))
    }

    /// The shell a task of the conversation gets when the session gives `ceiling`: the
    /// narrower of the two. A conversation that asked for a sandbox the session no longer
    /// has (a session resumed without one) gets no shell rather than an unconfined one.
    pub fn shell(&self, ceiling: ShellMode) -> ShellMode {
        match self
            .shell_mode
            .map_or(ceiling, |mode| narrower(mode, ceiling))
        {
            ShellMode::Sandboxed if ceiling == ShellMode::Unconfined => ShellMode::Off,
            mode => mode,
        }
    }
}

/// The shell a session gives its conversations: none when it disabled `bash`, else
/// `bash` in its sandbox when it has one (leaving the sandbox takes a person's approval,
/// whatever the mode and preset), else `bash` unconfined (the mode, preset and rules alone
/// decide each command).
pub(crate) fn session_shell(bash_disabled: bool, sandboxed: bool) -> ShellMode {
    match (bash_disabled, sandboxed) {
        (true, _) => ShellMode::Off,
        (false, true) => ShellMode::Sandboxed,
        (false, false) => ShellMode::Unconfined,
    }
}

/// The narrower of two shells: `off` < `sandboxed` < `unconfined`.
fn narrower(one: ShellMode, other: ShellMode) -> ShellMode {
    let rank = |mode: ShellMode| match mode {
        ShellMode::Off => 0,
        ShellMode::Sandboxed => 1,
        ShellMode::Unconfined => 2,
    };
    if rank(one) <= rank(other) { one } else { other }
}

fn name(mode: ShellMode) -> &'static str {
    match mode {
        ShellMode::Off => "off",
        ShellMode::Sandboxed => "sandboxed",
        ShellMode::Unconfined => "unconfined",
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    const NO_PLAN: ToolSelection = ToolSelection {
        include_plan_tool: false,
        include_apply_patch_tool: true,
        shell_mode: Some(ShellMode::Off),
    };

    #[test]
    fn flags_left_out_are_inherited_and_given_ones_replace_them() {
        let asked = ToolsPrefs {
            include_apply_patch_tool: Some(false),
            ..ToolsPrefs::default()
        };
        let (selection, notes) = ToolSelection::resolve(NO_PLAN, &asked, ShellMode::Off).unwrap();
        assert_eq!(
            selection,
            ToolSelection {
                include_plan_tool: false,
                include_apply_patch_tool: false,
                shell_mode: Some(ShellMode::Off),
            }
        );
        assert!(notes.is_empty());
    }

    #[test]
    fn the_shell_only_narrows() {
        let asked = |mode| ToolsPrefs {
            shell_mode: Some(mode),
            ..ToolsPrefs::default()
        };
        let resolve = |mode, ceiling| {
            ToolSelection::resolve(ToolSelection::default(), &asked(mode), ceiling).unwrap()
        };
        let (selection, notes) = resolve(ShellMode::Unconfined, ShellMode::Sandboxed);
        assert_eq!(selection.shell_mode, Some(ShellMode::Sandboxed));
        assert_eq!(
            notes,
            [
                "shell_mode `unconfined` is looser than this conversation may have; it uses `sandboxed`"
            ]
        );
        let (selection, notes) = resolve(ShellMode::Off, ShellMode::Unconfined);
        assert_eq!(selection.shell_mode, Some(ShellMode::Off));
        assert!(notes.is_empty());
        let refused = ToolSelection::resolve(
            ToolSelection::default(),
            &asked(ShellMode::Sandboxed),
            ShellMode::Unconfined,
        );
        assert!(refused.is_err_and(|err| err.to_string().contains("needs the session's sandbox")));
    }

    #[test]
    fn a_task_gets_the_narrower_of_the_conversations_shell_and_the_sessions() {
        let of = |mode| ToolSelection {
            shell_mode: mode,
            ..ToolSelection::default()
        };
        assert_eq!(of(None).shell(ShellMode::Sandboxed), ShellMode::Sandboxed);
        assert_eq!(of(None).shell(ShellMode::Off), ShellMode::Off);
        let loose = of(Some(ShellMode::Unconfined));
        assert_eq!(loose.shell(ShellMode::Sandboxed), ShellMode::Sandboxed);
        // Asked for a sandbox the session no longer has: no shell, never an unconfined one.
        let confined = of(Some(ShellMode::Sandboxed));
        assert_eq!(confined.shell(ShellMode::Unconfined), ShellMode::Off);
    }

    #[test]
    fn web_search_and_a_streamable_shell_are_refused_and_false_is_accepted() {
        for asked in [
            ToolsPrefs {
                web_search_request: Some(true),
                ..ToolsPrefs::default()
            },
            ToolsPrefs {
                use_streamable_shell_tool: Some(true),
                ..ToolsPrefs::default()
            },
        ] {
            let refused =
                ToolSelection::resolve(ToolSelection::default(), &asked, ShellMode::Sandboxed);
            assert!(refused.is_err(), "{asked:?}");
        }
        let declined = ToolsPrefs {
            web_search_request: Some(false),
            use_streamable_shell_tool: Some(false),
            ..ToolsPrefs::default()
        };
        assert!(
            ToolSelection::resolve(ToolSelection::default(), &declined, ShellMode::Sandboxed)
                .is_ok()
        );
    }
}
