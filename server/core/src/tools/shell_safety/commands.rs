//! Rules for single commands: what each known command may do.

use tree_sitter::Node;

use super::options::{Scan, is_long};
use super::readonly::{TEXT_ONLY, read_only};
use super::words::{Device, Target, Word, basename, device_kind, text};
use super::wrappers::{Invocation, Name, SHELLS, is_interpreter, leading_options, shell_args};
use super::{Cwd, SimpleCommand, Walker, has_downloader};

/// The reason a command removes installed packages, if it does.
fn package_removal(name: &str, args: &[Word<'_>]) -> Option<String> {
    let literals: Vec<&str> = args.iter().filter_map(Word::literal).collect();
    let has = |words: &[&str]| literals.iter().any(|arg| words.contains(arg));
    let removes = match name {
        "apt" | "apt-get" | "aptitude" => has(&["remove", "purge", "autoremove", "autopurge"]),
        "dpkg" => {
            has(&["-r", "-P", "--remove", "--purge"])
                || literals.iter().any(|arg| arg.starts_with("--purge"))
        }
        "yum" | "dnf" | "microdnf" => has(&["remove", "erase", "autoremove"]),
        "pacman" => literals
            .iter()
            .any(|arg| arg.starts_with("-R") || *arg == "--remove"),
        "zypper" => has(&["remove", "rm"]),
        "apk" => has(&["del"]),
        "brew" => has(&["uninstall", "remove", "rm"]),
        "snap" | "flatpak" | "conda" | "mamba" => has(&["remove", "uninstall"]),
        "pip" | "pip3" | "pipx" | "gem" | "cargo" | "port" => has(&["uninstall"]),
        "npm" | "pnpm" => {
            has(&["uninstall", "remove", "rm", "un", "r", "unlink"]) && has(&["-g", "--global"])
        }
        "yarn" => has(&["global"]) && has(&["remove"]),
        _ if name.starts_with("python") => has(&["-m"]) && has(&["pip"]) && has(&["uninstall"]),
        _ => false,
    };
    removes.then(|| format!("removes installed packages ({name})"))
}

/// Programs whose first argument is a subcommand that says what they do (`cargo test`,
/// `git commit`, `make build`): "allow always" remembers the program and that subcommand.
const SUBCOMMAND_PROGRAMS: [&str; 24] = [
    "cargo", "git", "make", "just", "npm", "pnpm", "yarn", "go", "gradle", "gradlew", "mvn",
    "mvnw", "dotnet", "rustup", "bundle", "rake", "poetry", "uv", "pipenv", "mix", "stack",
    "cabal", "swift", "zig",
];

/// Subcommands that name a script of the project as their next argument: the script is
/// part of what is remembered (`npm run build`, not `npm run`).
const RUNNERS: [&str; 2] = ["run", "run-script"];

/// Subcommands that run or install whatever their arguments name (`npm exec`, `yarn dlx`,
/// `cargo install`, `uv tool run`, `git submodule foreach`, `git bisect run`): remembered
/// exactly, like any other command.
const OPEN_ENDED: [&str; 20] = [
    "exec",
    "x",
    "dlx",
    "create",
    "init",
    "install",
    "i",
    "add",
    "node",
    "tool",
    "get",
    "global",
    "submodule",
    "bisect",
    "filter-branch",
    "difftool",
    "mergetool",
    "send-email",
    "instaweb",
    "daemon",
];

/// Options that make a subcommand run a program of their choosing (`git rebase -x CMD`,
/// `git grep -O CMD`, `git fetch --upload-pack=CMD`, `cargo test --config
/// 'target.x.runner=CMD'`): a command with one is remembered exactly.
const RUNNING_OPTIONS: [&str; 7] = [
    "exec",
    "upload-pack",
    "receive-pack",
    "extcmd",
    "open-files-in-pager",
    "config",
    "tool",
];

/// What "allow always" remembers of a command: what the person saw, no more.
///
/// For the programs of [`SUBCOMMAND_PROGRAMS`] whose first argument is a plain subcommand,
/// the program and the subcommand (`cargo test` covers `cargo test -p x`), with the script
/// name after `run` (`npm run build`), unless the subcommand or an option runs whatever it
/// is given ([`OPEN_ENDED`], [`RUNNING_OPTIONS`], `uv run python`). Anything else is
/// remembered as the exact command, every word as written (`rm a.txt` does not cover `rm -v
/// README.md`, `python3 -c 'print(1)'` does not cover another script).
fn remembered_key(name: &str, args: &[Word<'_>]) -> String {
    fn plain<'w>(word: Option<&'w Word<'_>>) -> Option<&'w str> {
        word.and_then(Word::literal).filter(|arg| {
            !arg.is_empty()
                && !arg.starts_with('-')
                && arg
                    .chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
        })
    }
    let runs_code = |program: &str| SHELLS.contains(&program) || is_interpreter(program);
    let runs_given_program = args.iter().filter_map(Word::literal).any(|arg| {
        arg == "-x"
            || arg.starts_with("-O")
            || RUNNING_OPTIONS.iter().any(|full| is_long(arg, full))
    });
    if SUBCOMMAND_PROGRAMS.contains(&basename(name))
        && !runs_given_program
        && let Some(subcommand) = plain(args.first())
        && !OPEN_ENDED.contains(&subcommand)
        && !runs_code(subcommand)
    {
        if !RUNNERS.contains(&subcommand) {
            return format!("{name} {subcommand}");
        }
        if let Some(script) = plain(args.get(1))
            && !runs_code(script)
        {
            return format!("{name} {subcommand} {script}");
        }
    }
    let mut key = name.to_owned();
    for arg in args {
        key.push(' ');
        key.push_str(&arg.source);
    }
    key
}

/// Whether a `chmod` mode gives everyone write access (`777`, `o+w`, `a=rwx`).
fn world_writable(mode: &str) -> bool {
    if mode.chars().all(|c| c.is_ascii_digit()) {
        return mode
            .chars()
            .last()
            .and_then(|c| c.to_digit(8))
            .is_some_and(|others| others & 2 != 0);
    }
    mode.split(',').any(|clause| {
        let Some(op) = clause.find(['+', '=']) else {
            return false;
        };
        let (who, perms) = clause.split_at(op);
        (who.contains('a') || who.contains('o')) && perms.contains('w')
    })
}

impl Walker {
    /// Examines one command after its wrappers were removed.
    pub(super) fn invocation<'t>(
        &mut self,
        invocation: &Invocation<'_, 't>,
        redirects: &[Node<'t>],
        written: &str,
        src: &str,
        cwd: &mut Cwd,
    ) {
        let started_in = cwd.clone();
        self.findings.commands += 1;
        if let Some(root) = invocation.root {
            self.dangerous(format!("runs as root ({root})"));
        }
        if invocation.env_vars {
            self.not_read_only();
        }
        if invocation
            .args
            .iter()
            .any(|arg| arg.literal() == Some("--no-preserve-root"))
        {
            self.catastrophic("--no-preserve-root allows deleting /");
        }
        let read_only = match &invocation.name {
            Name::Literal(name) => {
                let read_only = self.named(name, invocation, redirects, src, cwd);
                // Arguments appended by `xargs` are not seen: they could name files outside
                // the workspace or turn `git branch` into a branch creation.
                read_only && !invocation.xargs
            }
            Name::Substitution | Name::Variable => {
                if matches!(invocation.name, Name::Substitution) {
                    self.dangerous("the command name is computed when it runs");
                }
                // Probably a shell (`$SHELL -c '...'`): examine the script to be safe.
                if let Some(script) = invocation
                    .args
                    .iter()
                    .position(|arg| arg.literal() == Some("-c"))
                    .and_then(|at| invocation.args.get(at + 1))
                {
                    self.script(&script.shell, &mut cwd.clone());
                }
                false
            }
            Name::Missing => false,
        };
        if !read_only {
            self.not_read_only();
            // A command that may write is taken to change every protected file it names
            // (`sed -i ... .git/config`, `cp x .git/hooks/`, `chmod +x .git/hooks/x`, `ln -s`).
            for arg in invocation.args {
                let value = arg
                    .literal()
                    .filter(|literal| literal.starts_with('-'))
                    .and_then(|literal| literal.split_once('='))
                    .map(|(option, _)| arg.strip_prefix(&format!("{option}=")));
                match value {
                    Some(Some(value)) => self.protected_target(&value, cwd),
                    Some(None) => {}
                    None => self.protected_target(arg, cwd),
                }
            }
        }
        let harmless_redirects = self.redirects_harmless(redirects, src, &started_in);
        let plain = !invocation.env_vars && !invocation.xargs && invocation.root.is_none();
        let key = invocation
            .written
            .as_ref()
            .filter(|_| plain && harmless_redirects)
            .filter(|_| started_in.as_deref().is_some_and(|dir| self.inside(dir)))
            .map(|name| remembered_key(name, invocation.args));
        self.line.commands.push(SimpleCommand {
            text: written.trim().to_owned(),
            key,
            read_only: read_only && plain && harmless_redirects,
        });
    }

    /// Whether a command's redirections write nothing but harmless devices and read only
    /// inside the workspace (`2>/dev/null`, `2>&1`, `< input.txt`).
    fn redirects_harmless(&self, redirects: &[Node<'_>], src: &str, cwd: &Cwd) -> bool {
        redirects.iter().all(|redirect| {
            if redirect.kind() != "file_redirect" {
                return true;
            }
            let mut cursor = redirect.walk();
            let operator = redirect
                .children(&mut cursor)
                .find(|child| !child.is_named())
                .map(|child| child.kind());
            let Some(destination) = redirect.child_by_field_name("destination") else {
                return true;
            };
            let word = Word::from_node(destination, src);
            match operator {
                Some("<") => self.read_inside(&word, cwd),
                Some(">&" | "<&") => {
                    destination.kind() == "number"
                        || word
                            .literal()
                            .is_some_and(|target| target == "-" || target.parse::<u32>().is_ok())
                }
                Some(">&-" | "<&-") => true,
                _ => matches!(
                    word.resolve(cwd.as_deref(), self.home.as_deref()),
                    Target::Known { full, .. } if matches!(device_kind(&full), Some(Device::Harmless))
                ),
            }
        })
    }

    /// The rules for a command by name; returns whether it only reads.
    fn named<'t>(
        &mut self,
        name: &str,
        invocation: &Invocation<'_, 't>,
        redirects: &[Node<'t>],
        src: &str,
        cwd: &mut Cwd,
    ) -> bool {
        let args = invocation.args;
        if let Some(reason) = package_removal(name, args) {
            self.dangerous(reason);
            return false;
        }
        match name {
            "rm" => self.rm(args, cwd),
            "find" => return self.find(args, src, cwd),
            "dd" => self.dd(args, cwd),
            "shred" | "wipefs" | "blkdiscard" => {
                self.dangerous(format!("{name} destroys data"));
                self.device_operands(name, args, cwd);
            }
            _ if name.starts_with("mkfs") || name == "mke2fs" || name == "mkswap" => {
                self.dangerous(format!("{name} formats a file system"));
                self.device_operands(name, args, cwd);
            }
            "fdisk" | "sfdisk" | "cfdisk" | "gdisk" | "sgdisk" | "parted" => {
                self.dangerous(format!("{name} edits partition tables"));
            }
            "chmod" | "chown" | "chgrp" => self.ownership(name, args, cwd),
            "git" => return self.git(args, cwd),
            "kill" => self.kill(args),
            "killall" | "pkill" => self.dangerous(format!("{name} kills processes by name")),
            "shutdown" | "reboot" | "halt" | "poweroff" => {
                self.dangerous(format!("{name} stops the machine"));
            }
            "init" | "telinit" => {
                if args
                    .iter()
                    .any(|arg| matches!(arg.literal(), Some("0" | "6")))
                {
                    self.dangerous(format!("{name} stops the machine"));
                }
            }
            "systemctl" | "service" => self.services(name, args),
            "truncate" => self.dangerous("truncate can empty files"),
            "mv" | "cp" | "install" => self.copy(name, args, cwd),
            "tee" => {
                for operand in Scan::new(args, "", &["output-error"]).operands {
                    self.write_target(operand, cwd, "tee writes to");
                }
            }
            "crontab" => {
                if Scan::new(args, "u", &[]).short('r') {
                    self.dangerous("crontab -r deletes the crontab");
                }
            }
            "iptables" | "ip6tables" | "iptables-legacy" | "ip6tables-legacy" | "iptables-nft"
            | "ip6tables-nft" => {
                if args.iter().any(|arg| {
                    arg.literal().is_some_and(|arg| {
                        matches!(arg, "--flush" | "--delete-chain")
                            || (arg.starts_with('-')
                                && !arg.starts_with("--")
                                && (arg.contains('F') || arg.contains('X')))
                    })
                }) {
                    self.dangerous(format!("{name} flushes firewall rules"));
                }
            }
            "nft" | "ufw" => {
                if args
                    .iter()
                    .any(|arg| matches!(arg.literal(), Some("flush" | "disable" | "reset")))
                {
                    self.dangerous(format!("{name} removes firewall rules"));
                }
            }
            "eval" => {
                let script: Vec<&str> = args.iter().map(|arg| arg.shell.as_str()).collect();
                self.script(&script.join(" "), cwd);
            }
            "watch" => {
                let skip = leading_options(args, "n", &["interval"], false).0;
                let script: Vec<&str> = args[skip..].iter().map(|arg| arg.shell.as_str()).collect();
                self.script(&script.join(" "), &mut cwd.clone());
            }
            "su" => {
                self.dangerous("switches user (su)");
                if let Some(command) =
                    Scan::new(args, "cs", &["command", "shell"]).value(&["c", "command"])
                {
                    self.script(&command.shell, &mut cwd.clone());
                }
            }
            "env" => {
                let scan = Scan::new(args, "uCS", &["unset", "chdir", "split-string"]);
                if let Some(split) = scan.value(&["S", "split-string"]) {
                    let mut script = split.shell.clone();
                    for operand in &scan.operands {
                        script.push(' ');
                        script.push_str(&operand.shell);
                    }
                    self.script(&script, &mut cwd.clone());
                }
                return args.is_empty() && !invocation.xargs;
            }
            "source" | "." => self.downloaded_script(args, redirects, src),
            _ if SHELLS.contains(&name) => self.shell(args, redirects, src, cwd),
            _ if is_interpreter(name) => self.downloaded_script(args, redirects, src),
            "cd" => {
                self.change_directory(args, cwd);
                return true;
            }
            // `pushd -n DIR` only adds DIR to the stack; a bare `pushd`, `pushd +N` and
            // `pushd -N` go to a directory of the stack, which is not followed.
            "pushd" => {
                if args.iter().all(|arg| arg.literal() != Some("-n")) {
                    match args {
                        [dir] if dir.literal().is_none_or(|dir| !dir.starts_with(['+', '-'])) => {
                            self.change_directory(args, cwd);
                        }
                        _ => *cwd = None,
                    }
                }
                return true;
            }
            "popd" => {
                *cwd = None;
                return true;
            }
            // Option values are checked like files, except for commands that read none
            // (`echo --prefix=/usr`).
            _ => {
                if matches!(name, "test" | "[") {
                    self.test_command_arguments(args, src);
                }
                return self.reads_inside(read_only(name, args), cwd)
                    && (TEXT_ONLY.contains(&name) || self.options_inside(args, cwd));
            }
        }
        false
    }

    /// `chmod`, `chown`, `chgrp`: recursive changes.
    fn ownership(&mut self, name: &str, args: &[Word<'_>], cwd: &Cwd) {
        let scan = Scan::new(args, "", &["reference", "from"]);
        if !(scan.short('R') || scan.long("recursive")) {
            return;
        }
        let mut operands = scan.operands.iter();
        let first = if scan.value(&["reference"]).is_some() {
            None
        } else {
            operands.next()
        };
        let mut outside = false;
        for operand in operands {
            if let Target::Known { base, .. } =
                operand.resolve(cwd.as_deref(), self.home.as_deref())
            {
                if base.parent().is_none() {
                    self.catastrophic(format!("recursive {name} of /"));
                }
                outside |= !base.starts_with(&self.workspace);
            }
        }
        let mode = first.and_then(|word| word.literal()).unwrap_or_default();
        if name == "chmod" && world_writable(mode) {
            self.dangerous(format!(
                "recursive chmod {mode} makes files writable by everyone"
            ));
        }
        if outside {
            self.dangerous(format!("recursive {name} outside the workspace"));
        } else if name != "chmod" {
            self.dangerous(format!("recursive {name}"));
        }
    }

    /// `kill -9 -1` signals every process the user may signal.
    fn kill(&mut self, args: &[Word<'_>]) {
        let mut index = 0;
        match args.first().and_then(Word::literal) {
            Some("-s" | "-n") => index = 2,
            Some("-l" | "-L") => return,
            Some("--") => index = 1,
            Some(arg) if arg.starts_with('-') => {
                index = 1;
                if args.get(1).and_then(Word::literal) == Some("--") {
                    index = 2;
                }
            }
            _ => {}
        }
        let targets = args.get(index..).unwrap_or_default();
        if targets.iter().any(|arg| arg.literal() == Some("-1")) {
            self.dangerous("kill -1 signals every process");
        } else if targets.iter().any(|arg| arg.literal() == Some("1")) {
            self.dangerous("kill 1 signals init");
        }
    }

    /// `systemctl stop|disable|mask ...` and `service NAME stop`.
    fn services(&mut self, name: &str, args: &[Word<'_>]) {
        const VERBS: [&str; 14] = [
            "stop",
            "disable",
            "mask",
            "kill",
            "halt",
            "poweroff",
            "reboot",
            "isolate",
            "rescue",
            "emergency",
            "kexec",
            "suspend",
            "hibernate",
            "hybrid-sleep",
        ];
        if let Some(verb) = args
            .iter()
            .filter_map(Word::literal)
            .find(|arg| VERBS.contains(arg))
        {
            self.dangerous(format!("{name} {verb}"));
        }
    }

    /// `mv`, `cp`, `install`: where they write.
    fn copy(&mut self, name: &str, args: &[Word<'_>], cwd: &Cwd) {
        let scan = Scan::new(
            args,
            "tSgmo",
            &["target-directory", "suffix", "group", "mode", "owner"],
        );
        let target = scan.value(&["t", "target-directory"]).or_else(|| {
            (scan.operands.len() >= 2)
                .then(|| scan.operands.last().copied())
                .flatten()
        });
        let Some(target) = target else {
            return;
        };
        if name == "mv"
            && let Target::Known { full, .. } = target.resolve(cwd.as_deref(), self.home.as_deref())
            && full.as_os_str() == "/dev/null"
        {
            self.dangerous("mv onto /dev/null destroys the file");
            return;
        }
        self.write_target(target, cwd, &format!("{name} writes to"));
    }

    /// Shells: the `-c` script, a downloaded script, and here-documents they read.
    fn shell<'t>(&mut self, args: &[Word<'t>], redirects: &[Node<'t>], src: &str, cwd: &Cwd) {
        let parsed = shell_args(args);
        if let Some(command) = parsed.command {
            self.script(&command.shell, &mut cwd.clone());
        }
        self.downloaded_script(args, redirects, src);
        if !parsed.reads_stdin {
            return;
        }
        for redirect in redirects {
            let mut cursor = redirect.walk();
            let script = match redirect.kind() {
                "heredoc_redirect" => redirect
                    .named_children(&mut cursor)
                    .find(|child| child.kind() == "heredoc_body")
                    .map(|body| text(body, src).to_owned()),
                "herestring_redirect" => redirect
                    .named_children(&mut cursor)
                    .last()
                    .map(|word| Word::from_node(word, src).shell),
                _ => None,
            };
            if let Some(script) = script {
                self.script(&script, &mut cwd.clone());
            }
        }
    }

    /// A shell or interpreter whose script comes from a download (`sh <(curl ...)`).
    fn downloaded_script(&mut self, args: &[Word<'_>], redirects: &[Node<'_>], src: &str) {
        if args.iter().any(|arg| has_downloader(arg.node, src))
            || redirects
                .iter()
                .any(|redirect| has_downloader(*redirect, src))
        {
            self.dangerous("runs a downloaded script");
        }
    }
}
