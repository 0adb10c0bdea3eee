//! Putting the system prompt together from its sections.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use coder_protocol::Mode;

use super::BUILT_IN_PROMPT;
use super::rules::RuleFile;

/// Plan mode's guidance, its own section while the conversation is in plan mode.
const PLAN_GUIDANCE: &str = include_str!("plan.md");

/// Facts about where the agent runs, told to the model in the `# Environment` section.
/// Nothing here changes during a day, so the prompt stays the same between turns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Environment {
    /// The workspace root: tools resolve relative paths against it.
    pub workspace: PathBuf,
    /// Where coder was started, when below the workspace root.
    pub started_in: Option<PathBuf>,
    /// `linux`, `macos`, ...
    pub platform: String,
    /// Today's date (UTC), `YYYY-MM-DD`.
    pub date: String,
    /// The person's shell (`$SHELL`), when set.
    pub shell: Option<String>,
    /// Whether the workspace root is a git repository (has a `.git`).
    pub git: bool,
}

impl Environment {
    /// The environment of a session in `workspace`, as it is now.
    pub fn current(workspace: &Path, started_in: Option<&Path>) -> Self {
        let now = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
        Self {
            workspace: workspace.to_path_buf(),
            started_in: started_in.map(Path::to_path_buf),
            platform: std::env::consts::OS.to_owned(),
            date: now.get(..10).unwrap_or(&now).to_owned(),
            shell: std::env::var("SHELL")
                .ok()
                .filter(|shell| !shell.is_empty()),
            git: workspace.join(".git").exists(),
        }
    }
}

/// The apply_patch instructions: the patch format, after the built-in prompt (seed 003).
const APPLY_PATCH_FORMAT: &str = include_str!("apply_patch.md");

/// What the instructions say about `apply_patch` after the built-in prompt, when the tool
/// list alone does not tell the model how to change files with it (seed 003's
/// `APPLY_PATCH_TOOL_INSTRUCTIONS`; the session decides when, in `session/task.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchInstructions {
    /// The format, and to call the `apply_patch` tool: the model reads its tools in the
    /// prompt, one line each, which leaves the format out.
    ThroughTool,
    /// The format, and to run the patch through `bash` as `apply_patch`: the conversation
    /// is not offered the tool, and coder applies such a command as an `apply_patch` call.
    ThroughShell,
    /// No way to apply a patch (the session disabled the tool, or the conversation has no
    /// shell): a note saying so, since the built-in prompt speaks of `apply_patch`.
    NotAvailable,
}

impl PatchInstructions {
    fn text(self) -> String {
        match self {
            Self::ThroughTool => format!(
                "{APPLY_PATCH_FORMAT}\nApply a patch by calling the `apply_patch` tool with \
                 the whole patch as its `patch` argument.\n"
            ),
            Self::ThroughShell => format!(
                "{APPLY_PATCH_FORMAT}\nThis conversation has no `apply_patch` tool. Apply a \
                 patch by running it with `bash` as the `apply_patch` command, the patch in a \
                 quoted here-document and nothing else in the command:\n\n```\n\
                 apply_patch <<'EOF'\n*** Begin Patch\n...\n*** End Patch\nEOF\n```\n\n\
                 coder applies it itself, with the checks, approval and diff of the tool. \
                 `apply_patch` is no program on the machine: it works only as the whole \
                 command.\n"
            ),
            Self::NotAvailable => "The apply_patch tool is not available in this \
                                   conversation: change files with `edit` (exact \
                                   replacements) or `write` (whole files).\n"
                .to_owned(),
        }
    }
}

/// Everything a task's system prompt is made of.
pub(crate) struct PromptInputs<'a> {
    /// A per-turn override or the conversation's base instructions; `None` for the
    /// built-in prompt.
    pub base: Option<&'a str>,
    /// Follows the built-in prompt; never set with `base`.
    pub patch: Option<PatchInstructions>,
    pub environment: &'a Environment,
    pub mode: Mode,
    /// The rules files, in the order they are told (the nearest last).
    pub rules: &'a [RuleFile],
    /// The skills section, already written; `None` when there are no skills.
    pub skills: Option<&'a str>,
}

/// The system prompt for a task: the base instructions or the built-in prompt, then the
/// environment, the mode, the rules and the skills, each under its own heading.
pub(crate) fn system_prompt(inputs: &PromptInputs<'_>) -> String {
    let mut prompt = inputs.base.unwrap_or(BUILT_IN_PROMPT).trim_end().to_owned();
    prompt.push_str("\n\n");
    if let Some(patch) = inputs.patch {
        prompt.push_str(&patch.text());
        prompt.push('\n');
    }
    push_environment(&mut prompt, inputs.environment);
    push_mode(&mut prompt, inputs.mode);
    push_rules(&mut prompt, inputs.rules);
    if let Some(skills) = inputs.skills.filter(|skills| !skills.trim().is_empty()) {
        prompt.push_str("\n# Skills\n");
        prompt.push_str(skills.trim_end());
        prompt.push('\n');
    }
    prompt
}

fn push_environment(prompt: &mut String, env: &Environment) {
    let yes_no = |flag: bool| if flag { "yes" } else { "no" };
    prompt.push_str("# Environment\n");
    prompt.push_str(&format!("Working directory: {}\n", env.workspace.display()));
    // When coder was started below the workspace root, the prompt says where, so the model
    // can resolve what the person means by a relative path (tools resolve from the root).
    if let Some(dir) = env
        .started_in
        .as_deref()
        .and_then(|dir| dir.strip_prefix(&env.workspace).ok())
        .filter(|dir| !dir.as_os_str().is_empty())
    {
        prompt.push_str(&format!(
            "The user started coder in {} (relative to the working directory); \
             paths you pass to tools are relative to the working directory.\n",
            dir.display()
        ));
    }
    prompt.push_str(&format!("Platform: {}\n", env.platform));
    if let Some(shell) = &env.shell {
        prompt.push_str(&format!("Shell: {shell}\n"));
    }
    prompt.push_str(&format!("Git repository: {}\n", yes_no(env.git)));
    prompt.push_str(&format!("Today's date: {}\n", env.date));
}

fn push_mode(prompt: &mut String, mode: Mode) {
    prompt.push_str("\n# Mode\n");
    let text = match mode {
        Mode::Plan => PLAN_GUIDANCE,
        Mode::Default => {
            "Default mode: reads run freely; file changes and commands may need the person's \
             approval, which is asked for you when a call needs it.\n"
        }
        Mode::AutoEdit => {
            "Auto-edit mode: file changes in the workspace run without asking; commands may \
             need the person's approval.\n"
        }
        Mode::Yolo => {
            "Unrestricted mode: commands run without asking. Take extra care with anything \
             destructive or irreversible.\n"
        }
    };
    prompt.push_str(text);
}

fn push_rules(prompt: &mut String, rules: &[RuleFile]) {
    if rules.is_empty() {
        return;
    }
    prompt.push_str(
        "\n# Rules\nInstructions from rules files, each under its path. Follow them; where \
         they disagree, a later (more specific) file wins over an earlier one, and the \
         person's own requests win over all of them.\n",
    );
    for rule in rules {
        prompt.push_str(&format!("\n## {}\n", rule.path.display()));
        prompt.push_str(rule.text.trim_end());
        prompt.push('\n');
        if rule.truncated {
            prompt.push_str("[cut here: the file is longer than the rules size limit]\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn environment() -> Environment {
        Environment {
            workspace: PathBuf::from("/home/me/project"),
            started_in: Some(PathBuf::from("/home/me/project/crates/app")),
            platform: "linux".into(),
            date: "2025-06-01".into(),
            shell: Some("/bin/zsh".into()),
            git: true,
        }
    }

    fn assembled(mode: Mode, rules: &[RuleFile], skills: Option<&str>) -> String {
        system_prompt(&PromptInputs {
            base: Some("You are a test agent."),
            patch: None,
            environment: &environment(),
            mode,
            rules,
            skills,
        })
    }

    const ENVIRONMENT: &str = "\
# Environment
Working directory: /home/me/project
The user started coder in crates/app (relative to the working directory); paths you pass to tools are relative to the working directory.
Platform: linux
Shell: /bin/zsh
Git repository: yes
Today's date: 2025-06-01
";

    #[test]
    fn default_mode_prompt() {
        let expected = format!(
            "You are a test agent.\n\n{ENVIRONMENT}\n# Mode\nDefault mode: reads run freely; \
             file changes and commands may need the person's approval, which is asked for \
             you when a call needs it.\n"
        );
        assert_eq!(assembled(Mode::Default, &[], None), expected);
    }

    #[test]
    fn plan_mode_prompt_carries_the_plan_guidance() {
        let expected = format!("You are a test agent.\n\n{ENVIRONMENT}\n# Mode\n{PLAN_GUIDANCE}");
        assert_eq!(assembled(Mode::Plan, &[], None), expected);
        assert!(!assembled(Mode::AutoEdit, &[], None).contains("plan mode"));
    }

    #[test]
    fn auto_edit_and_yolo_prompts_name_their_mode() {
        assert!(assembled(Mode::AutoEdit, &[], None).contains("\n# Mode\nAuto-edit mode:"));
        assert!(assembled(Mode::Yolo, &[], None).contains("\n# Mode\nUnrestricted mode:"));
    }

    #[test]
    fn rules_and_skills_follow_the_mode_each_under_its_heading() {
        let rules = [
            RuleFile {
                path: PathBuf::from("/home/me/project/AGENTS.md"),
                text: "Use tabs.\n".into(),
                size: 10,
                truncated: false,
            },
            RuleFile {
                path: PathBuf::from("/home/me/project/crates/app/CLAUDE.md"),
                text: "Use spaces.".into(),
                size: 4000,
                truncated: true,
            },
        ];
        let prompt = assembled(Mode::Default, &rules, Some("- review: reviews code\n"));
        let tail = prompt
            .split_once("\n# Rules\n")
            .map(|(_, tail)| tail)
            .unwrap_or_default();
        assert_eq!(
            tail,
            "Instructions from rules files, each under its path. Follow them; where they \
             disagree, a later (more specific) file wins over an earlier one, and the \
             person's own requests win over all of them.\n\
             \n## /home/me/project/AGENTS.md\nUse tabs.\n\
             \n## /home/me/project/crates/app/CLAUDE.md\nUse spaces.\n\
             [cut here: the file is longer than the rules size limit]\n\
             \n# Skills\n- review: reviews code\n"
        );
    }

    #[test]
    fn the_built_in_prompt_is_the_fallback_and_the_prompt_is_stable() {
        let inputs = PromptInputs {
            base: None,
            patch: None,
            environment: &environment(),
            mode: Mode::Default,
            rules: &[],
            skills: None,
        };
        let first = system_prompt(&inputs);
        assert!(first.starts_with(BUILT_IN_PROMPT.trim_end()));
        assert_eq!(first, system_prompt(&inputs));
    }

    #[test]
    fn the_apply_patch_instructions_follow_the_built_in_prompt_before_the_environment() {
        let prompt = system_prompt(&PromptInputs {
            base: None,
            patch: Some(PatchInstructions::ThroughShell),
            environment: &environment(),
            mode: Mode::Default,
            rules: &[],
            skills: None,
        });
        let expected = format!(
            "{}\n\n{}\n{ENVIRONMENT}",
            BUILT_IN_PROMPT.trim_end(),
            PatchInstructions::ThroughShell.text()
        );
        assert!(prompt.starts_with(&expected), "{prompt}");
        assert!(prompt.contains("*** Begin Patch") && prompt.contains("apply_patch <<'EOF'"));
    }

    #[test]
    fn no_start_directory_line_at_the_root_and_no_shell_line_without_one() {
        let env = Environment {
            started_in: Some(PathBuf::from("/home/me/project")),
            shell: None,
            git: false,
            ..environment()
        };
        let prompt = system_prompt(&PromptInputs {
            base: Some("x"),
            patch: None,
            environment: &env,
            mode: Mode::Default,
            rules: &[],
            skills: None,
        });
        assert!(!prompt.contains("started coder in"));
        assert!(!prompt.contains("Shell:"));
        assert!(prompt.contains("Git repository: no\n"));
    }
}
