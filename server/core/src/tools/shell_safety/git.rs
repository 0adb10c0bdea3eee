//! Rules for `git`: force pushes and commands that discard work; which subcommands only read.

use super::options::{Scan, abbreviates};
use super::words::Word;
use super::{Cwd, Walker};

impl Walker {
    /// `git`: force pushes and commands that discard work; returns whether it only reads.
    ///
    /// A read-only subcommand (`status`, `log`, `diff`, ...) counts as read-only only when it
    /// runs in the workspace root of a workspace that has its own `.git`, with no global
    /// option other than a few harmless ones: `-C`, `--git-dir`, `--work-tree` and `-c` pick
    /// another repository or configuration, whose `core.fsmonitor`, diff drivers, pager or
    /// hooks run programs; `-p` runs the pager; `--exec-path=DIR` runs subcommands from DIR.
    pub(super) fn git(&mut self, args: &[Word<'_>], cwd: &Cwd) -> bool {
        const HARMLESS: [&str; 9] = [
            "--no-pager",
            "-P",
            "--no-replace-objects",
            "--literal-pathspecs",
            "--glob-pathspecs",
            "--noglob-pathspecs",
            "--icase-pathspecs",
            "--no-optional-locks",
            "--no-advice",
        ];
        let mut index = 0;
        let mut elsewhere = false;
        let mut version = false;
        while let Some(arg) = args.get(index).and_then(Word::literal) {
            match arg {
                "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix"
                | "--config-env" | "--list-cmds" => {
                    elsewhere = true;
                    index += 2;
                }
                "--version" | "-v" => {
                    version = true;
                    index += 1;
                }
                _ if HARMLESS.contains(&arg) => index += 1,
                _ if arg.starts_with('-') => {
                    elsewhere = true;
                    index += 1;
                }
                _ => break,
            }
        }
        let Some(subcommand) = args.get(index).and_then(Word::literal) else {
            return version && index == args.len() && !elsewhere;
        };
        let rest = args.get(index + 1..).unwrap_or_default();
        let at_root = self.git_root && cwd.as_deref() == Some(self.workspace.as_path());
        let read_only = match subcommand {
            "push" => {
                let scan = Scan::new(rest, "o", &["push-option", "repo", "receive-pack", "exec"]);
                if scan.short('f')
                    || scan.long("force")
                    || scan.long("force-with-lease")
                    || scan.value(&["force-with-lease"]).is_some()
                {
                    self.dangerous("force push (git push --force)");
                }
                if scan
                    .operands
                    .iter()
                    .any(|operand| operand.literal().is_some_and(|arg| arg.starts_with('+')))
                {
                    self.dangerous("force push of a +refspec");
                }
                if scan.short('d')
                    || scan.long("delete")
                    || scan.long("mirror")
                    || scan.long("prune")
                    || scan
                        .operands
                        .iter()
                        .any(|operand| operand.literal().is_some_and(|arg| arg.starts_with(':')))
                {
                    self.dangerous("git push deletes remote branches");
                }
                false
            }
            "reset" => {
                if Scan::new(rest, "", &[]).long("hard") {
                    self.dangerous("git reset --hard discards uncommitted changes");
                }
                false
            }
            "clean" => {
                let scan = Scan::new(rest, "eX", &["exclude"]);
                if (scan.short('f') || scan.long("force"))
                    && !(scan.short('n') || scan.long("dry-run"))
                {
                    self.dangerous("git clean -f deletes untracked files");
                }
                false
            }
            "checkout" => {
                let discards = rest
                    .iter()
                    .any(|arg| matches!(arg.literal(), Some("--" | ".")))
                    || Scan::new(rest, "bB", &[]).has('f', "force");
                if discards {
                    self.dangerous("git checkout discards uncommitted changes");
                }
                false
            }
            "restore" => {
                let scan = Scan::new(rest, "s", &["source"]);
                let staged = scan.short('S') || scan.long("staged");
                let worktree = scan.short('W') || scan.long("worktree");
                if (worktree || !staged) && !scan.operands.is_empty() {
                    self.dangerous("git restore discards uncommitted changes");
                }
                false
            }
            "branch" => self.git_branch(rest),
            "config" => {
                self.git_config(rest);
                false
            }
            // `--template` copies hooks in; a new repository's configuration is its own.
            "init" => {
                // A confined `git init` cannot keep what it made: its configuration and hooks
                // are read-only in an existing repository, and a new one is removed.
                self.protected(
                    "git init writes .git/ (configuration and hooks)".to_owned(),
                    true,
                );
                false
            }
            "stash" => {
                if rest
                    .first()
                    .is_some_and(|arg| matches!(arg.literal(), Some("drop" | "clear")))
                {
                    self.dangerous("git stash drop/clear deletes stashed changes");
                }
                false
            }
            "status" | "log" | "diff" | "show" | "rev-parse" | "ls-files" | "blame" => {
                self.git_reads(rest, cwd)
            }
            "remote" => rest
                .iter()
                .all(|arg| matches!(arg.literal(), Some("-v" | "--verbose"))),
            _ => false,
        };
        read_only && !elsewhere && at_root && !self.repository_runs_programs()
    }

    /// Whether the workspace's shipped repository would run a program on a read-only
    /// command (its configuration, hooks or submodules); read once per line.
    fn repository_runs_programs(&mut self) -> bool {
        let workspace = &self.workspace;
        *self
            .git_runs_programs
            .get_or_insert_with(|| super::git_config::runs_programs(workspace).is_some())
    }

    /// The options and operands of a read-only `git` subcommand: options that write a file
    /// (`--output`), run a program (`--ext-diff`, `--textconv`, `--show-signature`, `-O`,
    /// `--open-files-in-pager`) or read one (`--contents`) make it not read-only, abbreviated
    /// or not; operands and option values naming paths outside the workspace do too
    /// (`--ignore-revs-file=~/.ssh/id_rsa`).
    fn git_reads(&self, args: &[Word<'_>], cwd: &Cwd) -> bool {
        const ACTING: [&str; 7] = [
            "output",
            "ext-diff",
            "textconv",
            "show-signature",
            "open-files-in-pager",
            "contents",
            "no-index",
        ];
        args.iter().all(|word| {
            let Some(arg) = word.literal() else {
                return false;
            };
            if let Some(long) = arg.strip_prefix("--") {
                return !ACTING.iter().any(|full| abbreviates(long, full));
            }
            if arg.starts_with("-O") {
                return false;
            }
            // `blame -S FILE` reads revisions from a file (for `log` it is a pickaxe string,
            // checked the same way to keep the rule simple).
            if let Some(file) = arg.strip_prefix("-S")
                && !file.is_empty()
            {
                return self.read_inside(&Word::synthetic(file, word.node), cwd);
            }
            arg.starts_with('-') || self.read_inside(word, cwd)
        }) && self.options_inside(args, cwd)
    }

    /// `git config`: setting a value writes `.git/config` (whose `core.fsmonitor`,
    /// `core.hooksPath`, pager, aliases and filters run commands), or with `--global` or
    /// `--system` the configuration of every repository.
    fn git_config(&mut self, args: &[Word<'_>]) {
        const READING: [&str; 7] = [
            "get",
            "get-all",
            "get-regexp",
            "get-urlmatch",
            "get-color",
            "get-colorbool",
            "list",
        ];
        let scan = Scan::new(args, "f", &["file", "blob", "type", "default"]);
        let subcommand = scan.operands.first().and_then(|word| word.literal());
        let reads = scan.short('l')
            || READING.iter().any(|option| scan.long(option))
            || matches!(subcommand, Some("get" | "list"))
            || (scan.operands.len() == 1 && subcommand.is_some_and(|name| name.contains('.')));
        if reads {
            return;
        }
        if scan.long("global") || scan.long("system") {
            self.dangerous("git config changes the configuration of every repository");
        } else {
            // `.git/config` is read-only to a confined command; a file named by `--file` is
            // checked as an argument.
            self.protected(
                "git config writes .git/config, whose settings run commands".to_owned(),
                true,
            );
        }
    }

    /// `git branch`: `-D` force-deletes; listing only reads.
    fn git_branch(&mut self, args: &[Word<'_>]) -> bool {
        let scan = Scan::new(
            args,
            "",
            &[
                "contains",
                "no-contains",
                "merged",
                "no-merged",
                "points-at",
                "sort",
                "format",
            ],
        );
        let force = scan.short('f') || scan.long("force");
        let delete = scan.short('d') || scan.long("delete");
        if scan.short('D') || (delete && force) {
            self.dangerous("git branch -D deletes a branch with unmerged work");
        }
        if scan.short('M') || scan.short('C') || ((scan.short('m') || scan.short('c')) && force) {
            self.dangerous("git branch overwrites a branch");
        }
        let changes = scan.any_short("dDmMcCuft")
            || scan.any_long(&[
                "delete",
                "move",
                "copy",
                "force",
                "set-upstream-to",
                "unset-upstream",
                "edit-description",
                "track",
                "no-track",
                "create-reflog",
            ]);
        let listing = scan.short('l') || scan.long("list");
        !changes && (scan.operands.is_empty() || listing)
    }
}
