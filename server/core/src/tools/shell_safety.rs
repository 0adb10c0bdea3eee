//! Recognising dangerous shell commands by parsing them.
//!
//! [`assess`] parses a command line with tree-sitter-bash and examines every simple command
//! in it: inside pipelines, lists, subshells, groups, command and process substitutions,
//! control structures and function bodies, in the scripts given to `sh -c`, `eval`, `su -c`
//! and `watch` or fed to a shell on standard input (parsed again, to a limited depth), and
//! behind wrappers such as `sudo`, `env`, `timeout` or `xargs`. The worst finding wins; see
//! [`Risk`].
//!
//! The analysis is static. Paths resolve lexically against the workspace (and against the
//! directory of an earlier `cd` in the same line); variables other than `$HOME` and `$PWD`
//! are unknown. Nothing on disk is read, except that the paths a read-only command reads
//! have the symbolic links along their existing part resolved, so that a link shipped in
//! the workspace cannot make a read outside look like one inside.

mod arithmetic;
mod commands;
mod files;
mod git;
mod git_config;
mod options;
mod protected;
mod readonly;
#[cfg(test)]
mod tests;
mod words;
mod wrappers;

use std::path::{Path, PathBuf};

use tree_sitter::{Node, Parser};

use crate::tools::paths::normalize;
use words::{Word, text};
use wrappers::{Name, reads_script_from_stdin, unwrap};

/// Where a command runs, for resolving the paths it names.
pub(crate) struct SafetyContext<'a> {
    /// The workspace root; the command's working directory.
    pub workspace: &'a Path,
    /// The user's home directory (what `~` and `$HOME` mean), if known.
    pub home: Option<&'a Path>,
    /// Whether the workspace root holds its own `.git`. Without one, `git` looks for a
    /// repository in the parent directories, or takes the workspace itself for a bare
    /// repository, whose configuration may run programs: its commands are then never
    /// read-only. With one, its configuration and hooks are read when a read-only git
    /// command is met (see [`git_config::runs_programs`]).
    pub git_root: bool,
    /// Whether commands run in the sandbox's read-only view, which keeps the protected files
    /// it holds as they were ([`Assessment::protected_held`]). The analysis does not depend
    /// on it; the policy does, for approvals without a person.
    pub confined: bool,
}

impl<'a> SafetyContext<'a> {
    /// The context for commands run in `workspace`, looking on disk for its `.git`, and
    /// confined by `sandbox` when it enforces its read-only view on this machine.
    pub(crate) fn new(
        workspace: &'a Path,
        home: Option<&'a Path>,
        sandbox: Option<&crate::sandbox::SandboxPolicy>,
    ) -> Self {
        Self {
            workspace,
            home,
            git_root: workspace.join(".git").symlink_metadata().is_ok(),
            confined: sandbox.is_some_and(|policy| policy.enforcement().read_only_view),
        }
    }
}

/// How risky a command line is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Risk {
    /// Every command is a known read-only command (may skip asking).
    ReadOnly,
    /// Nothing dangerous recognised; ordinary policy applies.
    Normal,
    /// Needs an explicit answer from a person, never an automatic approval. Reasons are short, human-readable.
    Dangerous(Vec<String>),
    /// Refused outright (outside yolo mode).
    Catastrophic(String),
}

/// The simple commands of a line, for "allow always" and command rules: a line is covered by
/// what a person allowed only when each of its simple commands is (see
/// [`CommandLine::covered_by`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CommandLine {
    /// Every simple command, in pipelines, lists, subshells, substitutions, `sh -c` scripts
    /// and `find -exec`, in the order met.
    pub commands: Vec<SimpleCommand>,
    /// The line does something besides running simple commands that changes what they run:
    /// variable assignments (`PATH=... cargo test`, `export`), function definitions; or
    /// something besides its simple commands is not read-only, which no approval of them
    /// covers: a redirection of a group (`{ cat; } < ~/.ssh/id_rsa`), an arithmetic
    /// expression that may run a command (`echo $(( 'x[$(id)]' ))`).
    pub opaque: bool,
}

/// One simple command of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SimpleCommand {
    /// The command as written, wrappers included, redirections excluded.
    pub text: String,
    /// What "allow always" remembers: the command name as written and its subcommand
    /// (`cargo test`, `./gradlew build`). `None` when it may not be remembered: its name is
    /// computed, it runs as root, with changed variables or arguments from `xargs`, in a
    /// directory outside the workspace, or with a redirection that writes a file.
    pub key: Option<String>,
    /// It is a known read-only command reading inside the workspace, with harmless
    /// redirections: it needs no approval of its own.
    pub read_only: bool,
}

impl CommandLine {
    /// Whether every simple command is read-only or remembered in `keys`.
    pub(crate) fn covered_by(&self, keys: &[String]) -> bool {
        !self.opaque
            && !self.commands.is_empty()
            && self.commands.iter().all(|command| {
                command.read_only || command.key.as_ref().is_some_and(|key| keys.contains(key))
            })
    }

    /// The keys of the commands that need approval, for remembering an "allow always".
    pub(crate) fn keys(&self) -> impl Iterator<Item = &String> {
        self.commands
            .iter()
            .filter(|command| !command.read_only)
            .filter_map(|command| command.key.as_ref())
    }
}

/// A line's risk and its simple commands.
pub(crate) struct Assessment {
    pub risk: Risk,
    pub line: CommandLine,
    /// Why the line changes a protected file (`.git/`, `.coder/`, `.mcp.json`): only a
    /// person may allow it, in every mode. These reasons are also in [`Risk::Dangerous`].
    pub protected: Vec<String>,
    /// Whether every protected file the line changes is one the sandbox's read-only view
    /// keeps as it was ([`crate::sandbox::holds_unchanged`]): run confined, the line cannot
    /// change them. `true` when it changes none.
    pub protected_held: bool,
}

/// Assesses a command line before it runs.
#[cfg(test)]
pub(crate) fn assess(command: &str, ctx: &SafetyContext<'_>) -> Risk {
    assess_line(command, ctx).risk
}

/// Assesses a command line before it runs, keeping its simple commands.
pub(crate) fn assess_line(command: &str, ctx: &SafetyContext<'_>) -> Assessment {
    let mut walker = Walker {
        workspace: normalize(ctx.workspace),
        home: ctx.home.map(normalize),
        git_root: ctx.git_root,
        findings: Findings {
            catastrophic: None,
            dangerous: Vec::new(),
            protected: Vec::new(),
            protected_held: true,
            read_only: true,
            commands: 0,
        },
        scripts: 0,
        nesting: 0,
        line: CommandLine::default(),
        git_runs_programs: None,
        loop_variables: Vec::new(),
    };
    let mut cwd = Some(walker.workspace.clone());
    walker.script(command, &mut cwd);
    let protected = walker.findings.protected.clone();
    let protected_held = walker.findings.protected_held;
    Assessment {
        risk: walker.findings.into_risk(),
        line: walker.line,
        protected,
        protected_held,
    }
}

/// How deeply scripts may nest (`sh -c "sh -c '...'"`) before analysis gives up.
const MAX_SCRIPTS: usize = 4;

/// How deeply syntax may nest before analysis gives up (this bounds the recursion).
const MAX_NESTING: usize = 200;

/// Commands that download something to standard output.
const DOWNLOADERS: [&str; 7] = ["curl", "wget", "fetch", "http", "https", "xh", "curlie"];

/// The working directory of the command being examined, `None` when it is not known.
type Cwd = Option<PathBuf>;

/// What has been found so far.
struct Findings {
    catastrophic: Option<String>,
    dangerous: Vec<String>,
    /// Changes to protected files (also in `dangerous`).
    protected: Vec<String>,
    /// Stays set while every change to a protected file is one the sandbox holds back.
    protected_held: bool,
    /// Stays set while every command seen is read-only and nothing writes a file.
    read_only: bool,
    /// How many commands were examined.
    commands: usize,
}

impl Findings {
    fn into_risk(self) -> Risk {
        if let Some(reason) = self.catastrophic {
            Risk::Catastrophic(reason)
        } else if !self.dangerous.is_empty() {
            Risk::Dangerous(self.dangerous)
        } else if self.read_only && self.commands > 0 {
            Risk::ReadOnly
        } else {
            Risk::Normal
        }
    }
}

/// Walks syntax trees, collecting findings.
struct Walker {
    workspace: PathBuf,
    home: Option<PathBuf>,
    /// See [`SafetyContext::git_root`].
    git_root: bool,
    findings: Findings,
    /// How many scripts are being parsed, one inside the other.
    scripts: usize,
    /// How deeply the current syntax node is nested.
    nesting: usize,
    /// The simple commands met so far.
    line: CommandLine,
    /// Whether the workspace's own repository would run a program on a read-only command,
    /// once a git command needed to know (read from disk at most once per line).
    git_runs_programs: Option<bool>,
    /// The variables of the line's `for` and `select` loops (and of the scripts examined
    /// with it), whose values are the line's own words.
    loop_variables: Vec<String>,
}

impl Walker {
    /// Records a finding that must be refused; the first one is kept.
    fn catastrophic(&mut self, reason: impl Into<String>) {
        self.findings.read_only = false;
        self.findings
            .catastrophic
            .get_or_insert_with(|| reason.into());
    }

    /// Records a finding that needs a person's approval.
    fn dangerous(&mut self, reason: impl Into<String>) {
        self.findings.read_only = false;
        let reason = reason.into();
        if !self.findings.dangerous.contains(&reason) {
            self.findings.dangerous.push(reason);
        }
    }

    /// Records a change to a protected file: it needs a person in every mode. `held`: the
    /// sandbox's read-only view keeps the file as it was (see [`Assessment::protected_held`]).
    fn protected(&mut self, reason: String, held: bool) {
        self.findings.protected_held &= held;
        if !self.findings.protected.contains(&reason) {
            self.findings.protected.push(reason.clone());
        }
        self.dangerous(reason);
    }

    /// Records that the line does more than read.
    fn not_read_only(&mut self) {
        self.findings.read_only = false;
    }

    /// Records that something in the line other than its simple commands does more than
    /// read: no approval of the simple commands covers the line.
    fn line_not_read_only(&mut self) {
        self.not_read_only();
        self.line.opaque = true;
    }

    /// Parses and examines a script: the whole line, or the text given to `sh -c` or `eval`.
    fn script(&mut self, source: &str, cwd: &mut Cwd) {
        if self.scripts >= MAX_SCRIPTS {
            self.dangerous("scripts nested too deeply to analyse");
            return;
        }
        let mut parser = Parser::new();
        if parser
            .set_language(&tree_sitter_bash::LANGUAGE.into())
            .is_err()
        {
            self.dangerous("could not be parsed");
            return;
        }
        let Some(tree) = parser.parse(source, None) else {
            self.dangerous("could not be parsed");
            return;
        };
        let root = tree.root_node();
        if root.has_error() {
            self.dangerous("could not be parsed");
        }
        self.scripts += 1;
        self.find_loop_variables(root, source);
        self.visit(root, source, cwd);
        self.scripts -= 1;
    }

    fn visit(&mut self, node: Node<'_>, src: &str, cwd: &mut Cwd) {
        if self.nesting >= MAX_NESTING {
            self.dangerous("nested too deeply to analyse");
            return;
        }
        self.nesting += 1;
        self.arithmetic_syntax(node, src);
        match node.kind() {
            "command" => {
                self.command(node, src, cwd);
                self.children(node, src, cwd);
            }
            "subshell" | "command_substitution" | "process_substitution" => {
                self.children(node, src, &mut cwd.clone());
            }
            "pipeline" => {
                let mut inner = cwd.clone();
                self.pipeline(node, src, &inner);
                self.children(node, src, &mut inner);
            }
            "function_definition" => {
                self.not_read_only();
                self.line.opaque = true;
                self.function(node, src);
                self.children(node, src, &mut cwd.clone());
            }
            "file_redirect" => {
                self.file_redirect(node, src, cwd);
                self.children(node, src, cwd);
            }
            "heredoc_redirect" => {
                self.heredoc(node, src, cwd);
                self.children(node, src, cwd);
            }
            "test_command" => {
                self.findings.commands += 1;
                self.children(node, src, cwd);
            }
            "variable_assignment" | "declaration_command" | "unset_command" => {
                self.not_read_only();
                self.line.opaque = true;
                self.children(node, src, cwd);
            }
            _ => self.children(node, src, cwd),
        }
        self.nesting -= 1;
    }

    fn children(&mut self, node: Node<'_>, src: &str, cwd: &mut Cwd) {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            self.visit(child, src, cwd);
        }
    }

    /// A simple command: its words after wrappers, and the redirections that apply to it.
    fn command(&mut self, node: Node<'_>, src: &str, cwd: &mut Cwd) {
        let words = command_words(node, src);
        let redirects = command_redirects(node);
        let invocation = unwrap(&words);
        self.invocation(&invocation, &redirects, text(node, src), src, cwd);
    }

    /// `curl ... | sh`, and `echo 'script' | sh` (whose script is examined).
    fn pipeline(&mut self, node: Node<'_>, src: &str, cwd: &Cwd) {
        let mut cursor = node.walk();
        let stages: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        let mut searched = 0;
        let mut downloaded = false;
        for (index, stage) in stages.iter().enumerate().skip(1) {
            let Some(command) = stage_command(*stage) else {
                continue;
            };
            let words = command_words(command, src);
            let invocation = unwrap(&words);
            if !reads_script_from_stdin(&invocation) {
                continue;
            }
            let Name::Literal(shell) = &invocation.name else {
                continue;
            };
            // Earlier stages are searched once each, however many shells follow them.
            while !downloaded && searched < index {
                downloaded = has_downloader(stages[searched], src);
                searched += 1;
            }
            if downloaded {
                self.dangerous(format!("pipes a download into {shell}"));
            } else if let Some(script) = stages
                .get(index - 1)
                .and_then(|previous| echoed_text(*previous, src))
            {
                self.script(&script, &mut cwd.clone());
            }
        }
    }

    /// Fork bombs: a function whose body runs itself in a pipeline or in the background.
    fn function(&mut self, node: Node<'_>, src: &str) {
        let (Some(name), Some(body)) = (
            node.child_by_field_name("name"),
            node.child_by_field_name("body"),
        ) else {
            return;
        };
        let name = text(name, src);
        let mut stack = vec![body];
        while let Some(current) = stack.pop() {
            if current.kind() == "command"
                && current
                    .child_by_field_name("name")
                    .is_some_and(|called| text(called, src) == name)
                && spawns_copies(current, body)
            {
                self.catastrophic(format!("fork bomb: {name} starts copies of itself"));
                return;
            }
            let mut cursor = current.walk();
            stack.extend(current.children(&mut cursor));
        }
    }

    /// `>`, `>>`, `&>` and friends: writing a file or a device.
    fn file_redirect(&mut self, node: Node<'_>, src: &str, cwd: &Cwd) {
        let mut cursor = node.walk();
        let Some(operator) = node
            .children(&mut cursor)
            .find(|child| !child.is_named())
            .map(|child| child.kind())
        else {
            return;
        };
        let Some(destination) = node.child_by_field_name("destination") else {
            return;
        };
        let word = Word::from_node(destination, src);
        // A simple command's own redirections make it not read-only; those of a group, a
        // subshell or a loop belong to no simple command.
        let own = node.parent().is_some_and(|parent| {
            parent.kind() == "command"
                || (parent.kind() == "redirected_statement"
                    && parent
                        .child_by_field_name("body")
                        .is_some_and(|body| body.kind() == "command"))
        });
        let not_read_only = |walker: &mut Self| {
            if own {
                walker.not_read_only();
            } else {
                walker.line_not_read_only();
            }
        };
        if operator == "<" && !self.read_inside(&word, cwd) {
            // Reading a file outside the workspace is for a person to allow.
            not_read_only(self);
        }
        let writes = match operator {
            ">" | ">>" | ">|" | "&>" | "&>>" | "<>" => true,
            // `>&2` duplicates a descriptor; `>& file` writes like `&>`.
            ">&" => {
                destination.kind() != "number"
                    && word
                        .literal()
                        .is_none_or(|target| target != "-" && target.parse::<u32>().is_err())
            }
            _ => false,
        };
        // Bash refuses a redirection whose braces expand to several words ("ambiguous
        // redirect"); each is checked anyway.
        let targets = word.brace_expand().unwrap_or_else(|| vec![word.clone()]);
        for target in &targets {
            if writes && !self.write_target(target, cwd, "writes to") {
                not_read_only(self);
            }
        }
    }

    /// `cat <<EOF | sh`: the here-document becomes a script.
    fn heredoc(&mut self, node: Node<'_>, src: &str, cwd: &Cwd) {
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        let Some(pipeline) = children.iter().find(|child| child.kind() == "pipeline") else {
            return;
        };
        let mut cursor = pipeline.walk();
        let Some(first) = pipeline.named_children(&mut cursor).next() else {
            return;
        };
        let Some(command) = stage_command(first) else {
            return;
        };
        let words = command_words(command, src);
        let invocation = unwrap(&words);
        if !reads_script_from_stdin(&invocation) {
            return;
        }
        let owner = node
            .parent()
            .and_then(|parent| parent.child_by_field_name("body"));
        if owner.is_some_and(|owner| has_downloader(owner, src)) {
            self.dangerous("pipes a download into a shell");
        } else if let Some(body) = children.iter().find(|child| child.kind() == "heredoc_body") {
            self.script(text(*body, src), &mut cwd.clone());
        }
    }
}

/// The command name and arguments of a `command` node.
fn command_words<'t>(node: Node<'t>, src: &str) -> Vec<Word<'t>> {
    let mut words = Vec::new();
    let mut cursor = node.walk();
    for (index, child) in node.children(&mut cursor).enumerate() {
        let field = u32::try_from(index)
            .ok()
            .and_then(|index| node.field_name_for_child(index));
        match field {
            Some("name") => words.push(Word::from_node(child, src)),
            // Bash expands braces first, into separate arguments: `cp x {a,.git}/config`
            // names `.git/config`. A word that would make too many stays whole (and counts
            // as unknown where a path is checked).
            Some("argument") => {
                let word = Word::from_node(child, src);
                match word.brace_expand() {
                    Some(expanded) => words.extend(expanded),
                    None => words.push(word),
                }
            }
            _ => {}
        }
    }
    words
}

/// The redirections of a command: its own and those of a `redirected_statement` around it.
fn command_redirects(node: Node<'_>) -> Vec<Node<'_>> {
    let is_redirect = |child: &Node<'_>| {
        matches!(
            child.kind(),
            "file_redirect" | "heredoc_redirect" | "herestring_redirect"
        )
    };
    let mut cursor = node.walk();
    let mut redirects: Vec<Node<'_>> = node.children(&mut cursor).filter(is_redirect).collect();
    if let Some(parent) = node.parent()
        && parent.kind() == "redirected_statement"
        && parent.child_by_field_name("body") == Some(node)
    {
        let mut cursor = parent.walk();
        redirects.extend(parent.children(&mut cursor).filter(is_redirect));
    }
    redirects
}

/// The simple command a pipeline stage consists of, if it is one.
fn stage_command(stage: Node<'_>) -> Option<Node<'_>> {
    match stage.kind() {
        "command" => Some(stage),
        "redirected_statement" => stage
            .child_by_field_name("body")
            .filter(|body| body.kind() == "command"),
        _ => None,
    }
}

/// Whether a command under `node` downloads something (`curl`, `wget`, ...).
fn has_downloader(node: Node<'_>, src: &str) -> bool {
    let mut stack = vec![node];
    while let Some(current) = stack.pop() {
        if current.kind() == "command" {
            let words = command_words(current, src);
            if let Name::Literal(name) = unwrap(&words).name
                && DOWNLOADERS.contains(&name.as_str())
            {
                return true;
            }
        }
        let mut cursor = current.walk();
        stack.extend(current.children(&mut cursor));
    }
    false
}

/// The text printed by `echo` or `printf` with literal arguments, as a script for a shell.
fn echoed_text(stage: Node<'_>, src: &str) -> Option<String> {
    let words = command_words(stage_command(stage)?, src);
    let invocation = unwrap(&words);
    let Name::Literal(name) = &invocation.name else {
        return None;
    };
    let args = invocation
        .args
        .iter()
        .map(|word| word.literal())
        .collect::<Option<Vec<&str>>>()?;
    match name.as_str() {
        "echo" => {
            let start = args
                .iter()
                .position(|arg| !matches!(*arg, "-n" | "-e" | "-E" | "-ne" | "-en"))
                .unwrap_or(args.len());
            Some(args[start..].join(" "))
        }
        "printf" => {
            let (format, rest) = args.split_first()?;
            Some(if format.contains('%') {
                rest.join("\n")
            } else {
                format.replace("\\n", "\n")
            })
        }
        _ => None,
    }
}

/// Whether a call inside a function body runs in a pipeline or in the background.
fn spawns_copies(call: Node<'_>, body: Node<'_>) -> bool {
    let mut current = call;
    loop {
        if current.kind() == "pipeline"
            || current
                .next_sibling()
                .is_some_and(|next| next.kind() == "&")
        {
            return true;
        }
        if current == body {
            return false;
        }
        match current.parent() {
            Some(parent) => current = parent,
            None => return false,
        }
    }
}
