//! Rules for commands that delete or write files and devices, and the checks on the paths
//! they name.

use std::path::{Component, Path, PathBuf};

use globset::GlobBuilder;

use super::options::Scan;
use super::protected;
use super::readonly::Reads;
use super::words::{Device, Target, Word, device_kind};
use super::wrappers::{Name, unwrap};
use super::{Cwd, Walker};
use crate::tools::paths::{existing_canonical, normalize};

impl Walker {
    /// `rm`: recursive and forced deletes, and what they delete.
    pub(super) fn rm(&mut self, args: &[Word<'_>], cwd: &Cwd) {
        let scan = Scan::new(args, "", &[]);
        let recursive = scan.short('r') || scan.short('R') || scan.long("recursive");
        let force = scan.short('f') || scan.long("force");
        if recursive {
            self.dangerous(if force {
                "forced recursive delete (rm -rf)"
            } else {
                "recursive delete (rm -r)"
            });
            for operand in &scan.operands {
                self.delete_target(operand, cwd, false);
            }
            return;
        }
        if force {
            self.dangerous("forced delete (rm -f)");
        }
        for operand in &scan.operands {
            if let Target::Known { base, .. } =
                operand.resolve(cwd.as_deref(), self.home.as_deref())
                && !base.starts_with(&self.workspace)
            {
                self.dangerous(format!("deletes {} outside the workspace", operand.source));
            }
        }
    }

    /// `find`: `-delete` and `-exec rm` delete below the starting points; `-exec` runs a command.
    pub(super) fn find(&mut self, args: &[Word<'_>], src: &str, cwd: &mut Cwd) -> bool {
        let literal = |index: usize| args.get(index).and_then(Word::literal);
        let mut index = 0;
        // `-L` and `-follow` follow the links below the starting points, out of the workspace.
        let mut follows = false;
        while let Some(arg) = literal(index) {
            match arg {
                "-L" => {
                    follows = true;
                    index += 1;
                }
                "-H" | "-P" => index += 1,
                "-D" => index += 2,
                _ if arg.starts_with("-O") => index += 1,
                _ => break,
            }
        }
        let mut starts = Vec::new();
        while let Some(word) = args.get(index) {
            if word
                .literal()
                .is_some_and(|arg| arg.starts_with('-') || matches!(arg, "(" | "!" | ","))
            {
                break;
            }
            starts.push(word);
            index += 1;
        }
        let mut deletes = false;
        let mut read_only = !follows;
        while index < args.len() {
            match literal(index) {
                // `-files0-from` takes its starting points from a file this analysis cannot see.
                Some("-follow" | "-files0-from") => read_only = false,
                Some("-delete") => {
                    deletes = true;
                    read_only = false;
                }
                Some(action @ ("-exec" | "-execdir" | "-ok" | "-okdir")) => {
                    read_only = false;
                    let start = index + 1;
                    let end = (start..args.len())
                        .find(|&end| matches!(literal(end), Some(";" | "+")))
                        .unwrap_or(args.len());
                    let inner = unwrap(&args[start..end]);
                    if let Name::Literal(name) = &inner.name
                        && matches!(name.as_str(), "rm" | "unlink" | "rmdir" | "shred")
                    {
                        deletes = true;
                    }
                    let mut inner_cwd = if action.ends_with("dir") {
                        None
                    } else {
                        cwd.clone()
                    };
                    let written: Vec<&str> = args[start..end]
                        .iter()
                        .map(|word| word.source.as_str())
                        .collect();
                    self.invocation(&inner, &[], &written.join(" "), src, &mut inner_cwd);
                    index = end;
                }
                Some("-fprint" | "-fprint0" | "-fprintf" | "-fls") => {
                    read_only = false;
                    if let Some(file) = args.get(index + 1) {
                        self.write_target(file, cwd, "find writes to");
                    }
                }
                _ => {}
            }
            index += 1;
        }
        // What it searches must lie in the workspace (the working directory without a start).
        if read_only {
            read_only = if starts.is_empty() {
                cwd.as_deref().is_some_and(|cwd| self.inside(cwd))
            } else {
                starts.iter().all(|start| self.read_inside(start, cwd))
            };
        }
        if deletes {
            self.dangerous("find deletes files");
            if starts.is_empty() {
                if let Some(first) = args.first() {
                    self.delete_target(&Word::synthetic(".", first.node), cwd, true);
                }
            } else {
                for start in starts {
                    self.delete_target(start, cwd, true);
                }
            }
        }
        read_only
    }

    /// `dd`: always dangerous; catastrophic when it writes a disk.
    pub(super) fn dd(&mut self, args: &[Word<'_>], cwd: &Cwd) {
        self.dangerous("dd writes raw data");
        for arg in args {
            if let Some(output) = arg.strip_prefix("of=") {
                self.write_target(&output, cwd, "dd writes to");
            }
        }
    }

    /// Tools that destroy a device given as an operand.
    pub(super) fn device_operands(&mut self, name: &str, args: &[Word<'_>], cwd: &Cwd) {
        for operand in Scan::new(args, "", &[]).operands {
            if let Target::Known { full, .. } =
                operand.resolve(cwd.as_deref(), self.home.as_deref())
                && matches!(device_kind(&full), Some(Device::Block | Device::Other))
            {
                self.catastrophic(format!("{name} destroys the device {}", full.display()));
            }
        }
    }

    /// `cd DIR` changes the directory later relative paths resolve against.
    pub(super) fn change_directory(&mut self, args: &[Word<'_>], cwd: &mut Cwd) {
        let scan = Scan::new(args, "", &[]);
        *cwd = match scan.operands.first() {
            None => self.home.clone(),
            Some(operand) if operand.literal() == Some("-") => None,
            Some(operand) => match operand.resolve(cwd.as_deref(), self.home.as_deref()) {
                Target::Known {
                    full,
                    children_only: false,
                    ..
                } => Some(full),
                _ => None,
            },
        };
    }

    /// Checks what a recursive delete names: refused outside the workspace or on all of it.
    /// `children` means only what is below the path goes (`find PATH -delete`).
    pub(super) fn delete_target(&mut self, word: &Word<'_>, cwd: &Cwd, children: bool) {
        match word.resolve(cwd.as_deref(), self.home.as_deref()) {
            Target::Known {
                full,
                base,
                children_only,
            } => {
                let relative = !word.source.starts_with(['/', '~', '$', '"', '\'']);
                let shown = if relative {
                    format!("{} ({})", word.source, base.display())
                } else {
                    word.source.clone()
                };
                if base.parent().is_none() {
                    self.catastrophic(format!(
                        "recursive delete of {shown}: the whole file system"
                    ));
                } else if self.home.as_ref() == Some(&base) {
                    self.catastrophic(format!("recursive delete of {shown}: the home directory"));
                } else if self.workspace.starts_with(&base) && base != self.workspace {
                    self.catastrophic(format!(
                        "recursive delete of {shown}: it contains the workspace"
                    ));
                } else if !base.starts_with(&self.workspace) {
                    self.catastrophic(format!(
                        "recursive delete of {shown}: outside the workspace"
                    ));
                } else if base == self.workspace && !children_only && !children {
                    self.catastrophic(format!("recursive delete of {shown}: the whole workspace"));
                } else if !children && children_only && full == self.workspace.join("*") {
                    self.catastrophic(format!(
                        "recursive delete of {shown}: every file of the workspace"
                    ));
                } else if self.names_repository(&full, &base, children_only) {
                    self.catastrophic(format!(
                        "recursive delete of {shown}: the repository's history and \
                         configuration (.git)"
                    ));
                }
            }
            Target::OtherHome(home) => {
                self.catastrophic(format!("recursive delete of {home}: a home directory"));
            }
            Target::Unknown => {}
        }
    }

    /// Whether a deleted path is the workspace's own `.git` or all of it: `.git`, `.git/*`,
    /// or a pattern at the root that names `.git` (`.g*`, `.*`).
    fn names_repository(&self, full: &Path, base: &Path, children_only: bool) -> bool {
        let repository = self.workspace.join(".git");
        let names_git = |path: &Path| {
            path.parent() == Some(self.workspace.as_path())
                && path
                    .file_name()
                    .and_then(|name| name.to_str())
                    .is_some_and(|name| protected::may_name(name, ".git"))
        };
        if !children_only {
            return names_git(full);
        }
        full == repository.join("*") || (base == self.workspace && names_git(full))
    }

    /// Records a change to a protected file when `word` names one (`.git/hooks/x`,
    /// `.coder/`, `.mcp.json`, also through a glob or a symbolic link).
    pub(super) fn protected_target(&mut self, word: &Word<'_>, cwd: &Cwd) {
        if let Target::Known { full, .. } = word.resolve(cwd.as_deref(), self.home.as_deref())
            && let Some(why) = protected::reason(&self.workspace, &full)
        {
            let held = crate::sandbox::holds_unchanged(&self.workspace, &full);
            self.protected(format!("changes {}: {why}", word.source), held);
        }
    }

    /// Checks a file a command writes; returns whether the write is harmless (`/dev/null`).
    pub(super) fn write_target(&mut self, word: &Word<'_>, cwd: &Cwd, verb: &str) -> bool {
        self.protected_target(word, cwd);
        let Target::Known { full, base, .. } = word.resolve(cwd.as_deref(), self.home.as_deref())
        else {
            if let Target::OtherHome(home) = word.resolve(cwd.as_deref(), self.home.as_deref()) {
                self.dangerous(format!("{verb} {home}, outside the workspace"));
            }
            return false;
        };
        match device_kind(&full) {
            Some(Device::Harmless) => return true,
            Some(Device::Block) => {
                self.catastrophic(format!("{verb} the disk {}", full.display()));
                return false;
            }
            Some(Device::Other) => {
                self.dangerous(format!("{verb} the device {}", full.display()));
                return false;
            }
            None => {}
        }
        const TEMPORARY: [&str; 3] = ["/tmp", "/var/tmp", "/dev/shm"];
        if !base.starts_with(&self.workspace)
            && !TEMPORARY
                .iter()
                .any(|temporary| base.starts_with(temporary))
        {
            self.dangerous(format!("{verb} {}, outside the workspace", full.display()));
        }
        false
    }

    /// Whether a read-only command reads only inside the workspace (what it names, and the
    /// working directory when it reads that). `None` (not read-only) stays `false`.
    pub(super) fn reads_inside(&self, reads: Option<Reads<'_>>, cwd: &Cwd) -> bool {
        let Some(reads) = reads else {
            return false;
        };
        if reads.cwd && !cwd.as_deref().is_some_and(|cwd| self.inside(cwd)) {
            return false;
        }
        reads.paths.iter().all(|word| self.read_inside(word, cwd))
    }

    /// Whether a file a command reads lies in the workspace (or is a harmless device such as
    /// `/dev/null`, or `-` for standard input). Unknown paths (`$X`, `$(...)`) are outside.
    ///
    /// Arguments arrive brace-expanded (see [`Word::brace_expand`]); a word whose expansion
    /// was too large to compute counts as unknown. A glob is expanded
    /// against the file system (bounded, see [`glob_matches`]) and every match must lie in
    /// the workspace with its links resolved: `ssh*/id_rsa` through a shipped link
    /// `sshlink -> ~/.ssh` is outside.
    pub(super) fn read_inside(&self, word: &Word<'_>, cwd: &Cwd) -> bool {
        if word.literal() == Some("-") {
            return true;
        }
        if word.has_unknown() || word.brace_expansion() {
            return false;
        }
        match word.resolve(cwd.as_deref(), self.home.as_deref()) {
            Target::Known {
                full,
                children_only,
                ..
            } => {
                if matches!(device_kind(&full), Some(Device::Harmless)) {
                    return true;
                }
                if !children_only {
                    return self.inside(&full);
                }
                glob_matches(&full)
                    .is_some_and(|matches| matches.iter().all(|path| self.inside(path)))
            }
            Target::OtherHome(_) | Target::Unknown => false,
        }
    }

    /// Whether the option values of a read-only command name files inside the workspace:
    /// every `--name=value` is checked like an operand (`git blame
    /// --ignore-revs-file=~/.ssh/id_rsa` reads outside), except the values of options known
    /// to take a pattern or a format; an option that is not entirely literal (`-f$X`) counts
    /// as outside.
    pub(super) fn options_inside(&self, args: &[Word<'_>], cwd: &Cwd) -> bool {
        /// Options whose values are patterns, formats or dates, never files.
        const NOT_FILES: [&str; 24] = [
            "regexp",
            "grep",
            "author",
            "committer",
            "include",
            "exclude",
            "exclude-dir",
            "glob",
            "iglob",
            "format",
            "pretty",
            "replace",
            "field-separator",
            "delimiter",
            "output-delimiter",
            "path-separator",
            "separator",
            "context-separator",
            "time-style",
            "date",
            "since",
            "until",
            "after",
            "before",
        ];
        args.iter().all(|arg| match arg.long_option() {
            Some((name, value)) => {
                NOT_FILES.contains(&name.as_str()) || self.read_inside(&value, cwd)
            }
            None => !arg.computed_option(),
        })
    }

    /// Whether `path` lies in the workspace, lexically and with the symbolic links along its
    /// existing part followed (a link `docs -> ~/.ssh` shipped in a repository leads out).
    pub(super) fn inside(&self, path: &Path) -> bool {
        if !path.starts_with(&self.workspace) {
            return false;
        }
        let Ok(root) = self.workspace.canonicalize() else {
            return true;
        };
        existing_canonical(path).is_none_or(|resolved| resolved.starts_with(root))
    }
}

/// How many paths a glob may match, and how many directory entries may be looked at, before
/// the analysis gives up (and the read counts as outside).
const GLOB_LIMIT: usize = 256;
const GLOB_ENTRIES: usize = 4096;

/// The existing paths a glob pattern (an absolute path whose components may hold `*`, `?`
/// or `[...]`) matches, as bash would expand it, hidden names included to be safe. A pattern
/// that matches nothing is its own only match (bash passes it on unchanged). `None` when the
/// pattern matches too much to check.
pub(super) fn glob_matches(pattern: &Path) -> Option<Vec<PathBuf>> {
    let mut current = vec![PathBuf::new()];
    let mut looked_at = 0;
    for component in pattern.components() {
        let Component::Normal(name) = component else {
            for path in &mut current {
                path.push(component);
            }
            continue;
        };
        let text = name.to_string_lossy();
        if !text.contains(['*', '?', '[']) {
            for path in &mut current {
                path.push(name);
            }
            continue;
        }
        let matcher = GlobBuilder::new(&text)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .ok()?
            .compile_matcher();
        let mut next = Vec::new();
        // `.*` matches `.` and `..` in bash before 5.2 (and with `globskipdots` off).
        for special in [".", ".."] {
            if matcher.is_match(special) {
                next.extend(current.iter().map(|dir| normalize(&dir.join(special))));
            }
        }
        for dir in &current {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                looked_at += 1;
                if looked_at > GLOB_ENTRIES {
                    return None;
                }
                if matcher.is_match(entry.file_name()) {
                    next.push(dir.join(entry.file_name()));
                }
            }
        }
        if next.len() > GLOB_LIMIT {
            return None;
        }
        current = next;
    }
    if current.is_empty() {
        return Some(vec![pattern.to_path_buf()]);
    }
    Some(current)
}
