//! Seeing through wrappers (`sudo`, `env`, `timeout`, `xargs`, ...) to the command that runs,
//! and telling what a shell or interpreter is asked to run.

use super::words::{Word, basename};

/// Shells whose `-c` argument, script operand or standard input is a script.
pub(super) const SHELLS: [&str; 7] = ["sh", "bash", "zsh", "dash", "ksh", "ash", "mksh"];

/// Interpreters that run a program read from standard input when given no script.
const INTERPRETERS: [&str; 5] = ["perl", "ruby", "node", "php", "lua"];

/// What a command's name is known to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Name {
    /// A literal name, reduced to its basename.
    Literal(String),
    /// Computed from a variable (`"$EDITOR" file`).
    Variable,
    /// Computed by a command substitution (`$(echo rm) -rf /`).
    Substitution,
    /// No command (never produced for a parsed command).
    Missing,
}

/// A command after wrappers such as `sudo -u x env FOO=1 nice` are removed.
pub(super) struct Invocation<'w, 't> {
    pub(super) name: Name,
    pub(super) args: &'w [Word<'t>],
    /// The wrapper that runs the command as root, if any.
    pub(super) root: Option<&'static str>,
    /// Whether a wrapper set environment variables (`env FOO=1 ls`, `sudo FOO=1 ls`).
    pub(super) env_vars: bool,
    /// Whether `xargs` appends arguments nobody can see yet.
    pub(super) xargs: bool,
    /// The command name as written (`./gradlew`, `/usr/bin/git`), when literal.
    pub(super) written: Option<String>,
}

/// Removes wrappers from the front of a command, down to the command that really runs.
/// A wrapper with no command after it is itself the command (`sudo -v`, `env`).
pub(super) fn unwrap<'w, 't>(words: &'w [Word<'t>]) -> Invocation<'w, 't> {
    let mut invocation = Invocation {
        name: Name::Missing,
        args: &[],
        root: None,
        env_vars: false,
        xargs: false,
        written: None,
    };
    let mut rest = words;
    loop {
        let Some((first, args)) = rest.split_first() else {
            return invocation;
        };
        invocation.args = args;
        let Some(literal) = first.literal() else {
            invocation.name = if first.has_substitution() {
                Name::Substitution
            } else {
                Name::Variable
            };
            return invocation;
        };
        let name = basename(literal);
        let skip = match name {
            "sudo" => {
                invocation.root = Some("sudo");
                let (skip, assigned) = leading_options(
                    args,
                    "ugpCDrtURT",
                    &[
                        "user",
                        "group",
                        "prompt",
                        "close-from",
                        "chdir",
                        "role",
                        "type",
                        "other-user",
                        "command-timeout",
                        "chroot",
                        "host",
                    ],
                    true,
                );
                invocation.env_vars |= assigned;
                Some(skip)
            }
            "doas" => {
                invocation.root = Some("doas");
                Some(leading_options(args, "uC", &[], false).0)
            }
            "pkexec" => {
                invocation.root = Some("pkexec");
                Some(leading_options(args, "", &["user"], false).0)
            }
            "env" => {
                let split = args.iter().any(|word| {
                    word.literal()
                        .is_some_and(|arg| arg.starts_with("-S") || arg.starts_with("--split"))
                });
                if split {
                    None
                } else {
                    let (skip, _) = leading_options(args, "uC", &["unset", "chdir"], true);
                    // `env CMD` may change the environment or directory CMD runs in: never
                    // read-only (`env` alone only prints).
                    invocation.env_vars |= skip < args.len();
                    Some(skip)
                }
            }
            "nice" => Some(leading_options(args, "n", &["adjustment"], false).0),
            "nohup" | "setsid" | "builtin" | "noglob" | "nocorrect" => {
                Some(leading_options(args, "", &[], false).0)
            }
            "time" => Some(leading_options(args, "of", &["output", "format"], false).0),
            "timeout" => {
                let skip = leading_options(args, "sk", &["signal", "kill-after"], false).0;
                Some(skip + 1)
            }
            "xargs" => {
                invocation.xargs = true;
                let skip = leading_options(
                    args,
                    "adEILnPs",
                    &[
                        "arg-file",
                        "delimiter",
                        "max-args",
                        "max-procs",
                        "max-chars",
                        "process-slot-var",
                    ],
                    false,
                )
                .0;
                if skip >= args.len() {
                    // With no command, xargs runs `echo`.
                    invocation.name = Name::Literal("echo".to_owned());
                    invocation.args = &[];
                    return invocation;
                }
                Some(skip)
            }
            "command" => {
                let lookup = args.first().and_then(Word::literal).is_some_and(|arg| {
                    arg.starts_with('-') && (arg.contains('v') || arg.contains('V'))
                });
                (!lookup).then(|| leading_options(args, "", &[], false).0)
            }
            "exec" => Some(leading_options(args, "a", &[], false).0),
            "busybox" => args
                .first()
                .and_then(Word::literal)
                .is_some_and(|arg| !arg.starts_with('-'))
                .then_some(0),
            "stdbuf" => Some(leading_options(args, "ioe", &["input", "output", "error"], false).0),
            "ionice" => Some(leading_options(args, "cnpPu", &["class", "classdata"], false).0),
            _ => None,
        };
        match skip {
            Some(skip) if skip < args.len() => rest = &args[skip..],
            _ => {
                invocation.name = Name::Literal(name.to_owned());
                invocation.written = Some(literal.to_owned());
                return invocation;
            }
        }
    }
}

/// How many leading words are options (and their values) or, with `assignments`, `VAR=value`
/// words; and whether there were assignments.
pub(super) fn leading_options(
    args: &[Word<'_>],
    short_values: &str,
    long_values: &[&str],
    assignments: bool,
) -> (usize, bool) {
    let mut index = 0;
    let mut assigned = false;
    while let Some(arg) = args.get(index).and_then(Word::literal) {
        if arg == "--" {
            index += 1;
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            index += if long_values.contains(&long) { 2 } else { 1 };
        } else if let Some(short) = arg.strip_prefix('-')
            && !short.is_empty()
        {
            index += 1;
            if let Some(at) = short.find(|c| short_values.contains(c))
                && at + 1 == short.len()
            {
                index += 1;
            }
        } else if assignments && is_assignment(arg) {
            assigned = true;
            index += 1;
        } else {
            break;
        }
    }
    (index.min(args.len()), assigned)
}

/// Whether a word is `NAME=value`.
fn is_assignment(arg: &str) -> bool {
    arg.split_once('=').is_some_and(|(name, _)| {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// What a shell was asked to run.
pub(super) struct ShellArgs<'w, 't> {
    /// The `-c` script.
    pub(super) command: Option<&'w Word<'t>>,
    /// Whether it reads its script from standard input.
    pub(super) reads_stdin: bool,
}

/// Reads a shell's options (`-c`, `-s`, `-o OPTION`, `--rcfile FILE`) and what follows them.
pub(super) fn shell_args<'w, 't>(args: &'w [Word<'t>]) -> ShellArgs<'w, 't> {
    let mut index = 0;
    let mut has_c = false;
    let mut stdin = false;
    while let Some(arg) = args.get(index).and_then(Word::literal) {
        if arg == "--" || arg == "-" {
            index += 1;
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            index += if matches!(long, "rcfile" | "init-file") {
                2
            } else {
                1
            };
            continue;
        }
        let Some(flags) = arg.strip_prefix('-').or_else(|| arg.strip_prefix('+')) else {
            break;
        };
        if flags.is_empty() {
            break;
        }
        has_c |= arg.starts_with('-') && flags.contains('c');
        stdin |= flags.contains('s');
        index += if flags.ends_with(['o', 'O']) { 2 } else { 1 };
    }
    let operand = args.get(index);
    ShellArgs {
        command: if has_c { operand } else { None },
        reads_stdin: !has_c && (stdin || operand.is_none()),
    }
}

/// Whether the command runs a script read from standard input (`sh`, `bash -s`, `perl`).
pub(super) fn reads_script_from_stdin(invocation: &Invocation<'_, '_>) -> bool {
    let Name::Literal(name) = &invocation.name else {
        return false;
    };
    if SHELLS.contains(&name.as_str()) {
        return shell_args(invocation.args).reads_stdin;
    }
    if !is_interpreter(name) {
        return false;
    }
    for arg in invocation.args {
        match arg.literal() {
            Some("-") => return true,
            Some("-c" | "-e" | "-E" | "-m" | "-r" | "-p") => return false,
            Some(flag) if flag.starts_with('-') => {}
            _ => return false,
        }
    }
    true
}

/// Whether `name` is a scripting language interpreter (`python3`, `perl`, `node`, ...).
pub(super) fn is_interpreter(name: &str) -> bool {
    INTERPRETERS.contains(&name) || name.starts_with("python")
}
