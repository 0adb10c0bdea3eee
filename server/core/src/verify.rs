//! Automatic verification after edits (seed 004 section 6): whether it applies, which
//! command runs, and what the command's result means. The turn runs it
//! (`turn/verify.rs`).
//!
//! Only the nine commands of [`VERIFY_COMMANDS`] ever run, chosen in this order: one the
//! person named in their request, then the first of `workflow.verifyCommands` that is one of
//! them, then the one the project's files point to ([`inferred`]). A candidate outside the
//! list is never run, and nothing runs in its place.

use std::path::Path;

/// The commands automatic verification may run: the projects' own test commands, without
/// watch mode.
pub const VERIFY_COMMANDS: [&str; 9] = [
    "go test ./...",
    "pytest -q",
    "npm test -- --watch=false",
    "pnpm test -- --watch=false",
    "yarn test --watch=false",
    "cargo test",
    "mvn -q test",
    "gradle test",
    "./gradlew test",
];

/// How many times a failed verification sends the model back to fix it, at most; the
/// default, and the most `maxVerifyAttempts` may set.
pub const MAX_VERIFY_RETRIES: u32 = 2;

/// How long one verification run may take before it is killed (an environment failure).
pub(crate) const VERIFY_TIMEOUT_MS: u64 = 600_000;

/// The verification settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workflow {
    /// `workflow.autoVerifyAfterEdit` (default true): verify after the model's edits, where
    /// the mode allows it.
    pub auto_verify_after_edit: bool,
    /// `workflow.verifyCommands`: the person's preferred commands, in order; only those in
    /// [`VERIFY_COMMANDS`] are ever run.
    pub verify_commands: Vec<String>,
    /// `maxVerifyAttempts` (0 to [`MAX_VERIFY_RETRIES`]): how many times a failed
    /// verification sends the model back to fix it.
    pub max_verify_attempts: u32,
}

impl Default for Workflow {
    fn default() -> Self {
        Self {
            auto_verify_after_edit: true,
            verify_commands: Vec::new(),
            max_verify_attempts: MAX_VERIFY_RETRIES,
        }
    }
}

impl Workflow {
    /// The settings from the config file's keys, with a warning for each value that cannot
    /// apply as written.
    pub(crate) fn from_settings(
        auto_verify_after_edit: Option<bool>,
        verify_commands: Option<Vec<String>>,
        max_verify_attempts: Option<u32>,
        warnings: &mut Vec<String>,
    ) -> Self {
        let defaults = Self::default();
        let verify_commands = verify_commands.unwrap_or_default();
        for command in &verify_commands {
            if allowlisted(command).is_none() {
                warnings.push(format!(
                    "workflow.verifyCommands: `{command}` is not one of the commands automatic \
                     verification may run ({}); it is never run",
                    VERIFY_COMMANDS.join(", ")
                ));
            }
        }
        let max_verify_attempts = match max_verify_attempts {
            Some(wanted) if wanted > MAX_VERIFY_RETRIES => {
                warnings.push(format!(
                    "maxVerifyAttempts {wanted} is above {MAX_VERIFY_RETRIES}, the most \
                     automatic retries coder makes; {MAX_VERIFY_RETRIES} applies"
                ));
                MAX_VERIFY_RETRIES
            }
            Some(wanted) => wanted,
            None => defaults.max_verify_attempts,
        };
        Self {
            auto_verify_after_edit: auto_verify_after_edit
                .unwrap_or(defaults.auto_verify_after_edit),
            verify_commands,
            max_verify_attempts,
        }
    }
}

/// The allowlisted command `text` is, its spaces aside.
pub(crate) fn allowlisted(text: &str) -> Option<&'static str> {
    let words: Vec<&str> = text.split_whitespace().collect();
    VERIFY_COMMANDS
        .into_iter()
        .find(|command| command.split_whitespace().eq(words.iter().copied()))
}

/// What the person's request says about verification.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Request {
    /// They asked for it (in `default` mode, verification runs only then).
    pub asked: bool,
    /// The allowlisted command they named, if any: it comes first.
    pub command: Option<&'static str>,
}

/// Words that ask for verification, lowercase; found as whole words.
const ASKING: &[&str] = &[
    "verify",
    "verifying",
    "verification",
    "run the tests",
    "run tests",
    "run the test suite",
    "tests pass",
    "test it",
    "验证",
    "跑测试",
    "运行测试",
    "执行测试",
    "测试一下",
];

/// Reads the person's request: an allowlisted command named in it (as whole words), or
/// words that ask for verification.
pub(crate) fn requested(input: &str) -> Request {
    let command = VERIFY_COMMANDS.into_iter().find(|command| {
        input.match_indices(command).any(|(at, found)| {
            let before = input[..at].chars().next_back();
            let after = input[at + found.len()..].chars().next();
            let apart = |c: Option<char>| {
                c.is_none_or(|c| c.is_whitespace() || matches!(c, '`' | '"' | '\'' | '(' | ')'))
            };
            apart(before) && (apart(after) || matches!(after, Some('.' | ',' | ';' | ':')))
        })
    });
    let lower = input.to_lowercase();
    Request {
        asked: command.is_some() || ASKING.iter().any(|words| asks(&lower, words)),
        command,
    }
}

/// Words before a phrase that turn it into "do not verify", lowercase.
const NEGATIONS: &[&str] = &[
    "don't",
    "dont",
    "do not",
    "no need to",
    "without",
    "skip",
    "never",
    "not",
    "no",
    "不要",
    "不用",
    "无需",
    "不需要",
    "不必",
    "别",
];

/// Whether `words` occurs in `lower` as whole words (a Chinese phrase anywhere), not
/// negated just before it: within three words ("don't verify", "no need to run the
/// tests") or, for a Chinese negation, four characters ("不要验证").
fn asks(lower: &str, words: &str) -> bool {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    lower.match_indices(words).any(|(at, found)| {
        let before = &lower[..at];
        if word(before.chars().next_back()) || word(lower[at + found.len()..].chars().next()) {
            return false;
        }
        let words_before = before
            .char_indices()
            .rev()
            .filter(|(_, c)| c.is_whitespace())
            .nth(3)
            .map_or(before, |(i, _)| &before[i..]);
        let chars_before = before
            .char_indices()
            .rev()
            .nth(3)
            .map_or(before, |(i, _)| &before[i..]);
        !NEGATIONS.iter().any(|negation| {
            if !negation.is_ascii() {
                return chars_before.contains(negation);
            }
            words_before.match_indices(negation).any(|(i, n)| {
                !word(words_before[..i].chars().next_back())
                    && !word(words_before[i + n.len()..].chars().next())
            })
        })
    })
}

/// Whether a changed file is documentation, which verification does not check: Markdown and
/// other prose, and anything under a `docs/` or `doc/` folder.
pub(crate) fn is_documentation(path: &str) -> bool {
    let path = Path::new(path);
    let in_docs = path
        .parent()
        .into_iter()
        .flat_map(Path::components)
        .any(|part| matches!(part.as_os_str().to_str(), Some("docs" | "doc")));
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    // Text files that build or install the project are not prose.
    let builds = name == "cmakelists.txt"
        || name.starts_with("requirements")
        || name.starts_with("constraints");
    in_docs
        || matches!(
            extension.as_deref(),
            Some("md" | "markdown" | "mdx" | "rst" | "adoc")
        )
        || (extension.as_deref() == Some("txt") && !builds)
}

/// The allowlisted command the project's files in `workspace` point to, checked in this
/// order: Cargo, Go, Node (pnpm, yarn or npm by lock file, when `package.json` has a `test`
/// script), Python, Maven, Gradle (the wrapper when the project has one).
///
/// The files are the repository's: each counts only as a regular file inside the workspace,
/// read through the workspace handle (a link out, a FIFO or a device is as if missing).
pub(crate) fn inferred(workspace: &Path) -> Option<&'static str> {
    let dir = crate::beneath::WorkspaceDir::open(workspace).ok()?;
    let has = |name: &str| dir.ships(Path::new(name));
    if has("Cargo.toml") {
        return Some("cargo test");
    }
    if has("go.mod") {
        return Some("go test ./...");
    }
    if has("package.json") && has_test_script(&dir) {
        return Some(if has("pnpm-lock.yaml") {
            "pnpm test -- --watch=false"
        } else if has("yarn.lock") {
            "yarn test --watch=false"
        } else {
            "npm test -- --watch=false"
        });
    }
    if [
        "pyproject.toml",
        "pytest.ini",
        "setup.py",
        "setup.cfg",
        "tox.ini",
    ]
    .into_iter()
    .any(has)
    {
        return Some("pytest -q");
    }
    if has("pom.xml") {
        return Some("mvn -q test");
    }
    if has("build.gradle") || has("build.gradle.kts") {
        return Some(if has("gradlew") {
            "./gradlew test"
        } else {
            "gradle test"
        });
    }
    None
}

/// Whether a `package.json` defines a `test` script (npm's placeholder that only fails
/// does not count). A file that cannot be read or parsed has none.
fn has_test_script(dir: &crate::beneath::WorkspaceDir) -> bool {
    const MAX_BYTES: u64 = 1024 * 1024;
    let Ok(Some(bytes)) = dir.read_shipped(Path::new("package.json"), MAX_BYTES) else {
        return false;
    };
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return false;
    };
    value["scripts"]["test"]
        .as_str()
        .is_some_and(|script| !script.contains("no test specified"))
}

/// Where the chosen command came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Request,
    Settings,
    Project,
}

/// The command to run, by the seed's priority, or `None` when none applies.
pub(crate) fn choose(
    request: &Request,
    workflow: &Workflow,
    workspace: &Path,
) -> Option<(&'static str, Source)> {
    request
        .command
        .map(|command| (command, Source::Request))
        .or_else(|| {
            workflow
                .verify_commands
                .iter()
                .find_map(|command| allowlisted(command))
                .map(|command| (command, Source::Settings))
        })
        .or_else(|| inferred(workspace).map(|command| (command, Source::Project)))
}

/// What one run of the command says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    Passed,
    /// The checks failed with this exit code: the model may fix it.
    Failed(i32),
    /// The command could not do its job; no fix to the code would help.
    Environment {
        exit_code: Option<i32>,
        why: String,
    },
}

/// Reads the `bash` tool's report (`Exit code: N` first) or its error (a timeout, a
/// command that could not start). A failure whose output shows the environment failed
/// ([`environment_failure`]) is one no fix to the code would help, whatever its exit code.
pub(crate) fn verdict(result: &Result<String, String>, home: Option<&Path>) -> Verdict {
    let report = match result {
        Ok(report) => report,
        Err(error) => {
            return Verdict::Environment {
                exit_code: None,
                why: error
                    .lines()
                    .next()
                    .unwrap_or("it could not run")
                    .to_owned(),
            };
        }
    };
    let code = report
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("Exit code: "))
        .and_then(|code| code.trim().parse::<i32>().ok());
    match code {
        Some(0) => Verdict::Passed,
        Some(code @ 127) => Verdict::Environment {
            exit_code: Some(code),
            why: "the command is not installed here (exit code 127)".to_owned(),
        },
        Some(code @ 126) => Verdict::Environment {
            exit_code: Some(code),
            why: "the command cannot be executed here (exit code 126)".to_owned(),
        },
        Some(code) => match environment_failure(report, home) {
            Some(why) => Verdict::Environment {
                exit_code: Some(code),
                why,
            },
            None => Verdict::Failed(code),
        },
        None => Verdict::Environment {
            exit_code: None,
            why: "it was killed by a signal".to_owned(),
        },
    }
}

/// The most characters of an output line a verdict quotes.
const QUOTED_LINE_CHARS: usize = 160;

/// What a failed run's output shows of an environment that cannot run the checks (the
/// command started, then stopped before checking anything): a program it needs is not
/// installed (`sh: 1: java: not found`, `bash: mvn: command not found`), a program or its
/// interpreter cannot be started (`bad interpreter`, a shell's `Permission denied` or
/// `No such file or directory` for the program it runs), the home directory `home` is
/// missing or cannot be written (its path with `No such file or directory`, `ENOENT`,
/// `Permission denied`, `EACCES` or a read-only file system), or Java is not set up
/// (`JAVA_HOME`). `None` for anything else: a failure the model may fix.
fn environment_failure(report: &str, home: Option<&Path>) -> Option<String> {
    const SHELLS: [&str; 5] = [
        "sh: ",
        "bash: ",
        "/bin/sh: ",
        "/bin/bash: ",
        "/usr/bin/env: ",
    ];
    const CANNOT_START: [&str; 2] = ["Permission denied", "No such file or directory"];
    const HOME_FAILURES: [&str; 6] = [
        "No such file or directory",
        "ENOENT",
        "Permission denied",
        "EACCES",
        "Read-only file system",
        "EROFS",
    ];
    let home = home.and_then(Path::to_str).filter(|home| home.len() > 1);
    report.lines().map(str::trim).find_map(|line| {
        let quoted: String = line.chars().take(QUOTED_LINE_CHARS).collect();
        let from_shell = SHELLS.iter().any(|shell| line.starts_with(shell));
        if line.ends_with(": command not found") || (from_shell && line.ends_with(": not found")) {
            Some(format!(
                "a program it needs is not installed here: {quoted}"
            ))
        } else if line.contains("bad interpreter")
            || (from_shell && CANNOT_START.iter().any(|why| line.ends_with(why)))
        {
            Some(format!(
                "a program it runs cannot be started here: {quoted}"
            ))
        } else if let Some(home) = home
            && line.contains(home)
            && HOME_FAILURES.iter().any(|why| line.contains(why))
        {
            Some(format!(
                "the home directory {home} is missing or cannot be written: {quoted}"
            ))
        } else if line.contains("JAVA_HOME is not set")
            || line.contains("JAVA_HOME is set to an invalid directory")
        {
            Some(format!("Java is not set up here: {quoted}"))
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_of_the_environment_are_not_failures_of_the_code() {
        let home = Path::new("/home/ada");
        let environment = [
            "Exit code: 1\nOutput:\nsh: 1: java: not found\n",
            "Exit code: 1\nOutput:\n./gradlew: line 3: mvn: command not found\n",
            "Exit code: 1\nOutput:\n/usr/bin/env: 'python3': No such file or directory\n",
            "Exit code: 1\nOutput:\nbash: ./run-tests: /usr/bin/python9: bad interpreter: No such file or directory\n",
            "Exit code: 1\nOutput:\nsh: 1: ./gradlew: Permission denied\n",
            "Exit code: 1\nOutput:\nmkdir: cannot create directory '/home/ada/.gradle': No such file or directory\n",
            "Exit code: 243\nOutput:\nnpm ERR! Error: EACCES: permission denied, mkdir '/home/ada/.npm'\n",
            "Exit code: 1\nOutput:\nERROR: JAVA_HOME is not set and no 'java' command could be found\n",
        ];
        for report in environment {
            let verdict = verdict(&Ok(report.to_owned()), Some(home));
            assert!(
                matches!(
                    verdict,
                    Verdict::Environment {
                        exit_code: Some(_),
                        ..
                    }
                ),
                "{report}: {verdict:?}"
            );
        }
        let code = [
            "Exit code: 1\nOutput:\ntest parser::guards ... FAILED\n",
            "Exit code: 1\nOutput:\nassertion failed: file not found: No such file or directory\n",
            "Exit code: 101\nOutput:\nerror[E0425]: cannot find value `x` in this scope\n",
        ];
        for report in code {
            let verdict = verdict(&Ok(report.to_owned()), Some(home));
            assert!(
                matches!(verdict, Verdict::Failed(_)),
                "{report}: {verdict:?}"
            );
        }
    }

    #[test]
    fn a_named_command_is_found_as_whole_words_only() {
        let cases: &[(&str, Option<&str>, bool)] = &[
            (
                "fix the parser and run `cargo test`",
                Some("cargo test"),
                true,
            ),
            ("then cargo test.", Some("cargo test"), true),
            (
                "use pnpm test -- --watch=false",
                Some("pnpm test -- --watch=false"),
                true,
            ),
            // "npm test" is inside "pnpm test" but not a word of its own there.
            (
                "pnpm test -- --watch=false",
                Some("pnpm test -- --watch=false"),
                true,
            ),
            ("run ./gradlew test", Some("./gradlew test"), true),
            ("cargo testing", None, false),
            ("修复解析器并验证", None, true),
            ("fix it and make sure the tests pass", None, true),
            ("rename the variable", None, false),
            ("run make test", None, false),
            // Whole words only, and not when the request says not to.
            ("add the latest item", None, false),
            ("unverifyable claims", None, false),
            ("verify the change", None, true),
            ("don't verify, I will", None, false),
            ("no need to run the tests", None, false),
            ("do not run tests yet", None, false),
            ("不要验证", None, false),
            ("不要改动接口，改完后验证", None, true),
            ("notice the bug and verify it", None, true),
        ];
        for (input, command, asked) in cases {
            let request = requested(input);
            assert_eq!(request.command, *command, "{input}");
            assert_eq!(request.asked, *asked, "{input}");
        }
    }

    #[test]
    fn documentation_is_told_apart_from_code() {
        for path in [
            "README.md",
            "docs/guide.html",
            "a/doc/x.rs",
            "notes.TXT",
            "x.rst",
        ] {
            assert!(is_documentation(path), "{path}");
        }
        for path in [
            "src/lib.rs",
            "docs.rs",
            "Makefile",
            "src/docs_test.py",
            "CMakeLists.txt",
            "requirements-dev.txt",
        ] {
            assert!(!is_documentation(path), "{path}");
        }
    }

    #[test]
    fn the_command_follows_the_seeds_priority() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Cargo.toml"), "").unwrap();
        std::fs::write(dir.path().join("go.mod"), "").unwrap();
        let workflow = Workflow {
            verify_commands: vec!["make check".into(), "go  test ./...".into()],
            ..Workflow::default()
        };
        let named = requested("and run pytest -q");
        assert_eq!(
            choose(&named, &workflow, dir.path()),
            Some(("pytest -q", Source::Request))
        );
        let none = Request::default();
        assert_eq!(
            choose(&none, &workflow, dir.path()),
            Some(("go test ./...", Source::Settings))
        );
        assert_eq!(
            choose(&none, &Workflow::default(), dir.path()),
            Some(("cargo test", Source::Project))
        );
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(choose(&none, &Workflow::default(), empty.path()), None);
    }

    #[test]
    fn project_files_point_to_their_test_command() {
        type Files = &'static [(&'static str, &'static str)];
        let cases: &[(Files, Option<&str>)] = &[
            (&[("go.mod", "")], Some("go test ./...")),
            (
                &[("package.json", r#"{"scripts":{"test":"jest"}}"#)],
                Some("npm test -- --watch=false"),
            ),
            (
                &[
                    ("package.json", r#"{"scripts":{"test":"vitest"}}"#),
                    ("pnpm-lock.yaml", ""),
                ],
                Some("pnpm test -- --watch=false"),
            ),
            (
                &[
                    ("package.json", r#"{"scripts":{"test":"jest"}}"#),
                    ("yarn.lock", ""),
                ],
                Some("yarn test --watch=false"),
            ),
            (
                &[(
                    "package.json",
                    r#"{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}"#,
                )],
                None,
            ),
            (&[("package.json", "not json")], None),
            (&[("pyproject.toml", "")], Some("pytest -q")),
            (&[("pom.xml", "")], Some("mvn -q test")),
            (&[("build.gradle.kts", "")], Some("gradle test")),
            (
                &[("build.gradle", ""), ("gradlew", "")],
                Some("./gradlew test"),
            ),
            (&[("Makefile", "")], None),
        ];
        for (files, expected) in cases {
            let dir = tempfile::tempdir().unwrap();
            for (name, text) in *files {
                std::fs::write(dir.path().join(name), text).unwrap();
            }
            assert_eq!(inferred(dir.path()), *expected, "{files:?}");
        }
    }

    #[test]
    fn settings_outside_the_list_and_above_the_cap_are_reported() {
        let mut warnings = Vec::new();
        let workflow = Workflow::from_settings(
            Some(false),
            Some(vec![
                "cargo test".into(),
                "rm -rf target && cargo test".into(),
            ]),
            Some(5),
            &mut warnings,
        );
        assert!(!workflow.auto_verify_after_edit);
        assert_eq!(workflow.max_verify_attempts, 2);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("rm -rf target && cargo test"));
        assert!(warnings[1].contains("maxVerifyAttempts 5"));
    }

    fn verdict_of(result: &Result<String, String>) -> Verdict {
        verdict(result, None)
    }

    #[test]
    fn reports_read_as_verdicts() {
        let ok = |text: &str| Ok::<String, String>(text.to_owned());
        assert_eq!(
            verdict_of(&ok("Exit code: 0\nWall time: 1.0s\n")),
            Verdict::Passed
        );
        assert_eq!(verdict_of(&ok("Exit code: 101\n")), Verdict::Failed(101));
        assert!(matches!(
            verdict_of(&ok("Exit code: 127\n")),
            Verdict::Environment {
                exit_code: Some(127),
                ..
            }
        ));
        assert!(matches!(
            verdict_of(&ok("Exit code: none (killed by a signal)\n")),
            Verdict::Environment {
                exit_code: None,
                ..
            }
        ));
        assert!(matches!(
            verdict_of(&Err("Timed out after 600.0s; ...".into())),
            Verdict::Environment { .. }
        ));
    }
}
