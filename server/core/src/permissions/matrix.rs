//! The policy: what a mode, a preset and the configured rules say about one call.

use std::collections::BTreeMap;

use std::path::{Path, PathBuf};

use coder_protocol::{Mode, PolicyDecision, Preset, ToolKind};
use globset::{GlobBuilder, GlobMatcher};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tools::Tool;
use crate::tools::protected_files::{is_protected, plants_repository};
use crate::tools::shell_safety::{Assessment, CommandLine, Risk, SafetyContext, assess_line};

use super::unattended::{Unattended, Unconfined};

/// What the policy knows of one call: what its tool says of it (its kind, whether it only
/// reads or stays inside the session, the command line it runs, the paths it reaches),
/// never what its name means. The name is kept for the rules a person configured, which
/// name tools.
pub(crate) struct Call<'a> {
    pub tool: &'a str,
    pub kind: ToolKind,
    pub read_only: ReadOnly,
    /// It changes nothing outside the session (the todo list, the conversation tools).
    pub inside_session: bool,
    /// The command line it runs, for a tool that runs one.
    pub command: Option<String>,
    /// The paths it reads or changes, absolute.
    pub paths: Vec<PathBuf>,
}

impl<'a> Call<'a> {
    /// The call of `tool` with `input`, as the tool describes it.
    pub fn of(tool: &'a dyn Tool, input: &Value, workspace: &Path) -> Self {
        Self {
            tool: tool.name(),
            kind: tool.kind(),
            read_only: match (tool.vouches_read_only(), tool.is_read_only()) {
                (true, _) => ReadOnly::Vouched,
                (false, true) => ReadOnly::Claimed,
                (false, false) => ReadOnly::No,
            },
            inside_session: tool.stays_inside_session(),
            command: tool.command_line(input),
            paths: tool
                .locations(input, workspace)
                .into_iter()
                .map(|location| PathBuf::from(location.path))
                .collect(),
        }
    }

    /// Whether it changes files: the file tools, whose changes a person reviews as a diff.
    fn edits_files(&self) -> bool {
        matches!(
            self.kind,
            ToolKind::Edit | ToolKind::Delete | ToolKind::Move
        )
    }
}

/// Rules from configuration (`permissions` in `.coder/config.json`), applied over the preset.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRules {
    /// The decision for a tool by name, replacing the preset's.
    #[serde(default)]
    pub tools: BTreeMap<String, PolicyDecision>,
    /// Decisions for `bash` commands matching a glob (`*` matches anything), e.g.
    /// `{"pattern": "cargo test*", "decision": "allow"}`. A matching deny wins, then ask,
    /// then allow.
    #[serde(default)]
    pub commands: Vec<CommandRule>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct CommandRule {
    pub pattern: String,
    pub decision: PolicyDecision,
}

/// One row of the readable matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MatrixRow {
    /// What the row is about: a tool name, a class of tools or a command pattern.
    pub subject: String,
    pub decision: PolicyDecision,
    /// Where the decision comes from: the preset, a rule, or the mode.
    pub source: String,
}

/// The outcome of the policy for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Check {
    pub decision: PolicyDecision,
    /// Only an explicit answer from a person may allow this call (a dangerous command).
    pub human_required: bool,
    /// Why, for people and for the model when denied.
    pub reason: String,
    /// For `bash`, the simple commands of the line ("allow always" matches each of them).
    pub line: Option<CommandLine>,
    /// What a session that approves without a person does when the decision is ask.
    pub unattended: Unattended,
}

impl Check {
    fn new(decision: PolicyDecision, reason: impl Into<String>) -> Self {
        Self {
            decision,
            human_required: false,
            reason: reason.into(),
            line: None,
            unattended: Unattended::Approve,
        }
    }

    /// An ask only a person may answer each time (no "allow always"); a session that
    /// approves without a person does as `unattended` says.
    fn person(reason: String, unattended: Unattended) -> Self {
        Self {
            decision: PolicyDecision::Ask,
            human_required: true,
            reason,
            line: None,
            unattended,
        }
    }
}

/// The preset's decision for a class of calls.
fn preset_decision(preset: Preset, class: Class) -> PolicyDecision {
    use PolicyDecision::{Allow, Ask};
    match (preset, class) {
        (_, Class::ReadOnly) | (Preset::Yolo, _) => Allow,
        (Preset::Strict, _) => Ask,
        (Preset::Balanced, Class::ReadOnlyCommand) => Allow,
        (Preset::Balanced, _) => Ask,
        (Preset::AutoEdit, Class::FileEdit | Class::ReadOnlyCommand) => Allow,
        (Preset::AutoEdit, Class::Command | Class::Other) => Ask,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    ReadOnly,
    FileEdit,
    ReadOnlyCommand,
    Command,
    Other,
}

impl Class {
    fn label(self) -> &'static str {
        match self {
            Class::ReadOnly => "read-only tools",
            Class::FileEdit => "file edits (write, edit, apply_patch)",
            Class::ReadOnlyCommand => "bash: known read-only commands",
            Class::Command => "bash: other commands",
            Class::Other => "other tools",
        }
    }
}

const CLASSES: [Class; 5] = [
    Class::ReadOnly,
    Class::FileEdit,
    Class::ReadOnlyCommand,
    Class::Command,
    Class::Other,
];

fn matches(pattern: &str, command: &str) -> bool {
    GlobBuilder::new(pattern)
        .literal_separator(false)
        .build()
        .map(|glob| glob.compile_matcher())
        .as_ref()
        .is_ok_and(|m: &GlobMatcher| m.is_match(command))
}

/// Whether a tool only reads, as far as the policy may rely on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadOnly {
    /// It only reads, and coder knows it (its own tools).
    Vouched,
    /// Someone coder cannot check says it only reads (an MCP server's `readOnlyHint`): it
    /// is treated as any other tool, and in plan mode a person decides.
    Claimed,
    No,
}

/// Decides one call.
pub(crate) fn check(
    mode: Mode,
    preset: Preset,
    rules: &PermissionRules,
    call: &Call<'_>,
    safety: &SafetyContext<'_>,
) -> Check {
    use PolicyDecision::Allow;
    if call.inside_session {
        // Every mode, plan included: the todo list is the plan, the conversation tools work
        // in the session's own conversations, and nothing outside changes.
        return Check::new(Allow, format!("`{}` stays inside the session", call.tool));
    }
    let command = call.command.as_deref().unwrap_or_default().trim();
    let assessment = call.command.is_some().then(|| assess_line(command, safety));
    let line = assessment
        .as_ref()
        .map(|assessment| assessment.line.clone());
    let mut result = match assessment
        .as_ref()
        .and_then(|assessment| before_policy(mode, assessment, safety.confined))
    {
        Some(early) => early,
        None => decide(mode, preset, rules, call, command, assessment),
    };
    result.line = line;
    if call.edits_files()
        && result.decision != PolicyDecision::Deny
        && let Some(why) = protected_target(&call.paths, safety.workspace)
    {
        // Every mode and whatever the rules say: only a person may approve it.
        result = Check {
            line: result.line,
            ..Check::person(
                format!("protected file: {why}"),
                Unattended::Refuse(Unconfined::ProtectedFileEdit),
            )
        };
    }
    result
}

/// What a `bash` line gets before the policy is asked, in every mode, whatever the rules
/// say: a catastrophic line is refused (in every mode, yolo included: it would destroy the
/// home directory, the workspace or its repository, which no confinement makes undoable),
/// and one that changes protected files needs a person (outside plan mode, which refuses it
/// anyway).
fn before_policy(mode: Mode, assessment: &Assessment, confined: bool) -> Option<Check> {
    if let Risk::Catastrophic(why) = &assessment.risk {
        // Before the protected files: `rm -rf .git` is refused, not asked about.
        return Some(Check::new(
            PolicyDecision::Deny,
            format!("refused: catastrophic: {why}"),
        ));
    }
    if assessment.protected.is_empty() || mode == Mode::Plan {
        return None;
    }
    // Every mode, yolo included: a command that changes coder's or git's own files could
    // loosen what later sessions allow or run commands on the next git operation. Without
    // a person it runs only where the sandbox keeps those files as they were.
    let unattended = if confined && assessment.protected_held {
        Unattended::Approve
    } else {
        Unattended::Refuse(Unconfined::ProtectedFilesNotHeld)
    };
    Some(Check::person(
        format!("protected files: {}", assessment.protected.join("; ")),
        unattended,
    ))
}

/// [`check`] for a call that is not a conversation tool or the todo list.
fn decide(
    mode: Mode,
    preset: Preset,
    rules: &PermissionRules,
    call: &Call<'_>,
    command: &str,
    assessment: Option<Assessment>,
) -> Check {
    use PolicyDecision::{Allow, Ask, Deny};
    let (tool, read_only) = (call.tool, call.read_only);
    let runs_commands = assessment.is_some();
    if runs_commands && mode == Mode::Yolo {
        // The person's own deny rules hold in yolo too; nothing else is checked.
        if rules.tools.get(tool) == Some(&Deny) {
            return Check::new(Deny, format!("rule for tool `{tool}`"));
        }
        if let Some(assessment) = &assessment
            && let Some(ruled) = command_rule(rules, command, &assessment.line)
            && ruled.decision == Deny
        {
            return ruled;
        }
        return Check::new(Allow, "yolo mode runs commands without checks");
    }
    let (risk, line) = match assessment {
        Some(assessment) => (Some(assessment.risk), Some(assessment.line)),
        None => (None, None),
    };
    let class = match &risk {
        _ if read_only == ReadOnly::Vouched => Class::ReadOnly,
        Some(Risk::ReadOnly) => Class::ReadOnlyCommand,
        Some(_) => Class::Command,
        None if call.edits_files() => Class::FileEdit,
        None => Class::Other,
    };
    if mode == Mode::Plan && read_only == ReadOnly::Claimed {
        return Check::person(
            "plan mode: the tool's server says it only reads, which coder cannot check".to_owned(),
            Unattended::Approve,
        );
    }
    if mode == Mode::Plan && !matches!(class, Class::ReadOnly | Class::ReadOnlyCommand) {
        return Check::new(
            Deny,
            "plan mode does not write or run commands that change anything; present the plan instead",
        );
    }

    let mut result = Check::new(
        preset_decision(preset, class),
        format!("{} preset: {}", preset.as_str(), class.label()),
    );
    if mode == Mode::AutoEdit && class == Class::FileEdit && result.decision == Ask {
        result = Check::new(Allow, "auto-edit mode edits files without asking");
    }
    if mode == Mode::Yolo {
        result = Check::new(Allow, "yolo mode");
    }
    if let Some(decision) = rules.tools.get(tool) {
        result = Check::new(*decision, format!("rule for tool `{tool}`"));
    }
    // A command rule refines the tool's decision, except that a tool the person denied stays
    // denied: an `ask` or `allow` rule for some commands does not switch `bash` back on.
    let tool_denied = rules.tools.get(tool) == Some(&Deny);
    if let Some(line) = &line
        && let Some(ruled) = command_rule(rules, command, line)
        && !(tool_denied && ruled.decision != Deny)
    {
        result = ruled;
    }
    if let Some(Risk::Dangerous(reasons)) = &risk
        && result.decision != Deny
    {
        // Without a person it runs: the sandbox confines it as any command.
        return Check::person(
            format!("dangerous command: {}", reasons.join("; ")),
            Unattended::Approve,
        );
    }
    result
}

/// Why a file edit touches a protected file (see [`is_protected`]), if it does: in every
/// mode and whatever the rules say, only a person may approve it. `paths` are the call's,
/// absolute; they are named relative to the workspace.
fn protected_target(paths: &[PathBuf], workspace: &Path) -> Option<String> {
    let planted: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    paths
        .iter()
        .find_map(|path| {
            let shown = path.strip_prefix(workspace).unwrap_or(path);
            is_protected(workspace, path).map(|why| format!("{}: {why}", shown.display()))
        })
        .or_else(|| plants_repository(workspace, &planted).map(str::to_owned))
}

/// The decision of the command rules for a line. A deny or ask rule applies when it matches
/// the whole line or any simple command in it (`ls; git push` meets `git push*`). An allow
/// rule applies only when every simple command that is not read-only matches an allow rule:
/// `cargo test*` does not let `cargo test && python3 -c ...` run.
fn command_rule(rules: &PermissionRules, command: &str, line: &CommandLine) -> Option<Check> {
    use PolicyDecision::{Allow, Ask, Deny};
    for wanted in [Deny, Ask] {
        if let Some(rule) = rules.commands.iter().find(|rule| {
            rule.decision == wanted
                && (matches(&rule.pattern, command)
                    || line
                        .commands
                        .iter()
                        .any(|simple| matches(&rule.pattern, &simple.text)))
        }) {
            return Some(Check::new(wanted, format!("rule `{}`", rule.pattern)));
        }
    }
    let allow = |text: &str| {
        rules
            .commands
            .iter()
            .find(|rule| rule.decision == Allow && matches(&rule.pattern, text))
    };
    if line.opaque {
        // Variable assignments and functions change what the commands run: no allow rule.
        return None;
    }
    let needing: Vec<&str> = line
        .commands
        .iter()
        .filter(|simple| !simple.read_only)
        .map(|simple| simple.text.as_str())
        .collect();
    let first = allow(needing.first()?)?;
    needing
        .iter()
        .all(|text| allow(text).is_some())
        .then(|| Check::new(Allow, format!("rule `{}`", first.pattern)))
}

/// The whole matrix for a mode and preset, with rules applied, for people to read.
pub(crate) fn describe(mode: Mode, preset: Preset, rules: &PermissionRules) -> Vec<MatrixRow> {
    let mut rows: Vec<MatrixRow> = CLASSES
        .iter()
        .map(|&class| {
            let mut decision = preset_decision(preset, class);
            let mut source = format!("preset {}", preset.as_str());
            let mode_says = match (mode, class) {
                (Mode::Plan, Class::ReadOnly | Class::ReadOnlyCommand) => None,
                (Mode::Plan, _) => Some(PolicyDecision::Deny),
                (Mode::Yolo, _) => Some(PolicyDecision::Allow),
                (Mode::AutoEdit, Class::FileEdit) if decision == PolicyDecision::Ask => {
                    Some(PolicyDecision::Allow)
                }
                _ => None,
            };
            if let Some(forced) = mode_says {
                decision = forced;
                source = format!("mode {}", mode.as_str());
            }
            MatrixRow {
                subject: class.label().to_owned(),
                decision,
                source,
            }
        })
        .collect();
    rows.extend(rules.tools.iter().map(|(tool, decision)| MatrixRow {
        subject: format!("tool `{tool}`"),
        decision: *decision,
        source: "rule".to_owned(),
    }));
    rows.extend(rules.commands.iter().map(|rule| MatrixRow {
        subject: format!("bash `{}`", rule.pattern),
        decision: rule.decision,
        source: "rule".to_owned(),
    }));
    if mode != Mode::Plan {
        rows.push(MatrixRow {
            subject: "protected files (.coder/, .mcp.json, .git/): file edits, and bash commands that change them"
                .to_owned(),
            decision: PolicyDecision::Ask,
            source: "always asks a person, in every mode".to_owned(),
        });
    }
    if mode != Mode::Yolo {
        rows.push(MatrixRow {
            subject: "bash: dangerous commands".to_owned(),
            decision: PolicyDecision::Ask,
            source: "always asks a person; catastrophic ones are refused".to_owned(),
        });
    } else {
        rows.push(MatrixRow {
            subject: "bash: catastrophic commands".to_owned(),
            decision: PolicyDecision::Deny,
            source: "refused in every mode".to_owned(),
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn decide_bash(mode: Mode, rules: &PermissionRules, command: &str) -> Check {
        decide_bash_in(mode, rules, command, false)
    }

    /// [`decide_bash`], with commands run in the sandbox's read-only view when `confined`.
    fn decide_bash_in(mode: Mode, rules: &PermissionRules, command: &str, confined: bool) -> Check {
        let safety = SafetyContext {
            workspace: Path::new("/work/ws/project"),
            home: Some(Path::new("/home/u")),
            git_root: true,
            confined,
        };
        let call = Call {
            tool: "bash",
            kind: ToolKind::Execute,
            read_only: ReadOnly::No,
            inside_session: false,
            command: Some(command.to_owned()),
            paths: Vec::new(),
        };
        check(mode, Preset::Balanced, rules, &call, &safety)
    }

    fn rules(rules: &[(&str, PolicyDecision)]) -> PermissionRules {
        PermissionRules {
            tools: BTreeMap::new(),
            commands: rules
                .iter()
                .map(|(pattern, decision)| CommandRule {
                    pattern: (*pattern).to_owned(),
                    decision: *decision,
                })
                .collect(),
        }
    }

    #[test]
    fn an_allow_rule_covers_only_lines_whose_every_command_it_matches() {
        use PolicyDecision::{Allow, Ask};
        let allow = rules(&[("cargo test*", Allow)]);
        let decided = |command| decide_bash(Mode::Default, &allow, command).decision;
        assert_eq!(decided("cargo test -p core"), Allow);
        assert_eq!(decided("cargo test 2>&1 | tail -n 20"), Allow);
        assert_eq!(decided("cargo test && python3 -c 'print(1)'"), Ask);
        assert_eq!(decided("cargo test; f() { cargo test; }; f"), Ask);
        assert_eq!(decided("RUSTC_WRAPPER=./x cargo test"), Ask);
    }

    #[test]
    fn deny_and_ask_rules_match_any_simple_command() {
        use PolicyDecision::{Allow, Deny};
        let deny = rules(&[("git push*", Deny), ("ls*", Allow)]);
        assert_eq!(
            decide_bash(Mode::Default, &deny, "ls; git push origin main").decision,
            Deny
        );
        assert_eq!(
            decide_bash(Mode::Default, &deny, "echo $(git push)").decision,
            Deny
        );
    }

    #[test]
    fn a_denied_tool_stays_denied_whatever_the_command_rules_say() {
        use PolicyDecision::{Ask, Deny};
        // The person switched `bash` off; a rule that asks (from an untrusted workspace,
        // which may add `ask` rules) must not switch it back on.
        let mut ruled = rules(&[("*", Ask)]);
        ruled.tools.insert("bash".to_owned(), Deny);
        assert_eq!(decide_bash(Mode::Default, &ruled, "id").decision, Deny);
        assert_eq!(
            decide_bash(Mode::Default, &ruled, "cargo test").decision,
            Deny
        );
    }

    #[test]
    fn the_person_s_deny_rules_hold_in_yolo_and_nothing_else_is_asked() {
        use PolicyDecision::{Allow, Ask, Deny};
        let ruled = rules(&[("git push*", Deny), ("cargo*", Ask)]);
        let decided = |command| decide_bash(Mode::Yolo, &ruled, command).decision;
        assert_eq!(decided("ls; git push origin main"), Deny);
        assert_eq!(decided("cargo publish"), Allow);
        let mut off = PermissionRules::default();
        off.tools.insert("bash".to_owned(), Deny);
        assert_eq!(decide_bash(Mode::Yolo, &off, "id").decision, Deny);
    }

    #[test]
    fn protected_files_need_a_person_even_in_yolo() {
        let none = PermissionRules::default();
        let verdict = decide_bash(Mode::Yolo, &none, "echo x > .git/hooks/pre-commit");
        assert_eq!(verdict.decision, PolicyDecision::Ask);
        assert!(verdict.human_required);
        assert!(
            verdict.reason.contains(".git/hooks/pre-commit"),
            "{}",
            verdict.reason
        );
        let plain = decide_bash(Mode::Yolo, &none, "rm -rf build && echo x > out.txt");
        assert_eq!(plain.decision, PolicyDecision::Allow);
        assert!(!plain.human_required);
        let allowed = rules(&[("*", PolicyDecision::Allow)]);
        let ruled = decide_bash(Mode::Default, &allowed, "git config core.hooksPath h");
        assert_eq!(ruled.decision, PolicyDecision::Ask);
        assert!(ruled.human_required);
    }

    #[test]
    fn without_a_person_asks_are_approved_unless_something_would_run_unconfined() {
        let none = PermissionRules::default();
        let unattended = |mode, command, confined| {
            let verdict = decide_bash_in(mode, &none, command, confined);
            (verdict.decision, verdict.unattended)
        };
        use PolicyDecision::{Ask, Deny};
        use Unattended::{Approve, Refuse};
        let unconfined = Refuse(Unconfined::ProtectedFilesNotHeld);
        // A dangerous command runs: the sandbox confines it as any command.
        assert_eq!(
            unattended(Mode::Default, "rm -rf build", false),
            (Ask, Approve)
        );
        // Protected files: approved only where the sandbox keeps them as they were.
        let hook = "echo x > .git/hooks/pre-commit";
        assert_eq!(unattended(Mode::Default, hook, true), (Ask, Approve));
        assert_eq!(unattended(Mode::Yolo, hook, true), (Ask, Approve));
        assert_eq!(unattended(Mode::Default, hook, false), (Ask, unconfined));
        for not_held in [
            "echo x > sub/.mcp.json",
            "echo x > .git/HEAD",
            "chmod -R 777 .git",
        ] {
            assert_eq!(
                unattended(Mode::Default, not_held, true),
                (Ask, unconfined),
                "{not_held}"
            );
        }
        // Catastrophic lines are refused outright, never asked about.
        for command in [
            "rm -rf ~",
            "rm -rf $HOME",
            "rm -rf /",
            "rm -rf .",
            "rm -rf *",
            "rm -rf .git",
        ] {
            for mode in [Mode::Default, Mode::AutoEdit, Mode::Yolo] {
                assert_eq!(
                    unattended(mode, command, true).0,
                    Deny,
                    "{mode:?}: {command}"
                );
            }
        }
        // A file tool never writes a protected file without a person.
        let safety = SafetyContext::new(Path::new("/work/ws/project"), None, None);
        let write = Call {
            tool: "write",
            kind: ToolKind::Edit,
            read_only: ReadOnly::No,
            inside_session: false,
            command: None,
            paths: vec![PathBuf::from("/work/ws/project/.mcp.json")],
        };
        let verdict = check(Mode::Yolo, Preset::Yolo, &none, &write, &safety);
        assert_eq!(verdict.decision, Ask);
        assert_eq!(verdict.unattended, Refuse(Unconfined::ProtectedFileEdit));
    }
}
