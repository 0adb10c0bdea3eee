//! Commands known to only read, the options that would make them write or run something,
//! and the files they read (which must lie in the workspace for the command to run unasked).
//!
//! Long options are matched with every abbreviation GNU `getopt_long` accepts (`--out` is
//! `--output`, `--compress-prog` is `--compress-program`): see [`abbreviates`].

use super::options::{Scan, abbreviates, is_long};
use super::words::Word;

/// What a read-only command reads.
pub(super) struct Reads<'t> {
    /// The words that name files or directories it reads.
    pub(super) paths: Vec<Word<'t>>,
    /// It reads the working directory when no path is given (`ls`, `grep -r`, `rg`).
    pub(super) cwd: bool,
}

impl<'t> Reads<'t> {
    fn nothing() -> Option<Self> {
        Some(Reads {
            paths: Vec::new(),
            cwd: false,
        })
    }

    fn paths(paths: impl IntoIterator<Item = Word<'t>>, cwd: bool) -> Option<Self> {
        let paths: Vec<Word<'t>> = paths.into_iter().collect();
        let cwd = cwd && paths.is_empty();
        Some(Reads { paths, cwd })
    }
}

/// Commands that print text or facts about the system and read no file they are named.
pub(super) const TEXT_ONLY: [&str; 14] = [
    "echo", "printf", "pwd", "which", "whoami", "id", "uname", "true", "false", "test", "[",
    "basename", "dirname", "tr",
];

/// Read-only commands that read the files named by their operands: the letters and long
/// names of their options that take a value (so values are not taken for files), and whether
/// they read the working directory when given no operand.
const READERS: [(&str, &str, &[&str], bool); 22] = [
    ("cat", "", &[], false),
    ("head", "nc", &["lines", "bytes"], false),
    (
        "tail",
        "ncs",
        &[
            "lines",
            "bytes",
            "sleep-interval",
            "pid",
            "max-unchanged-stats",
        ],
        false,
    ),
    ("wc", "", &[], false),
    ("stat", "c", &["format", "printf"], false),
    (
        "file",
        "mfFeP",
        &[
            "magic-file",
            "files-from",
            "separator",
            "exclude",
            "parameter",
        ],
        false,
    ),
    (
        "du",
        "dBtX",
        &[
            "max-depth",
            "block-size",
            "threshold",
            "exclude-from",
            "exclude",
            "time-style",
            "time",
        ],
        true,
    ),
    ("df", "Btx", &["block-size", "type", "exclude-type"], false),
    (
        "cut",
        "bcdf",
        &[
            "bytes",
            "characters",
            "delimiter",
            "fields",
            "output-delimiter",
        ],
        false,
    ),
    (
        "diff",
        "CUxXIFSLWD",
        &[
            "exclude",
            "exclude-from",
            "ignore-matching-lines",
            "show-function-line",
            "starting-file",
            "label",
            "width",
            "ifdef",
            "horizon-lines",
            "tabsize",
            "palette",
            "from-file",
            "to-file",
        ],
        false,
    ),
    ("cmp", "in", &["ignore-initial", "bytes"], false),
    ("realpath", "", &["relative-to", "relative-base"], false),
    ("readlink", "", &[], false),
    ("more", "n", &["lines"], false),
    (
        "nl",
        "bdhilnsvwf",
        &[
            "body-numbering",
            "section-delimiter",
            "footer-numbering",
            "header-numbering",
            "line-increment",
            "join-blank-lines",
            "number-format",
            "number-separator",
            "starting-line-number",
            "number-width",
        ],
        false,
    ),
    (
        "od",
        "AjNtwS",
        &[
            "address-radix",
            "skip-bytes",
            "read-bytes",
            "format",
            "width",
            "strings",
            "endian",
        ],
        false,
    ),
    (
        "hexdump",
        "enfs",
        &["format", "format-file", "length", "skip"],
        false,
    ),
    ("md5sum", "", &[], false),
    ("sha256sum", "", &[], false),
    (
        "ls",
        "ITw",
        &[
            "ignore",
            "hide",
            "tabsize",
            "width",
            "format",
            "sort",
            "time",
            "time-style",
            "quoting-style",
            "indicator-style",
            "block-size",
        ],
        true,
    ),
    (
        "tree",
        "LPIHT",
        &["charset", "filelimit", "sort", "timefmt"],
        true,
    ),
    (
        "uniq",
        "fsw",
        &["skip-fields", "skip-chars", "check-chars"],
        false,
    ),
];

/// What the command (after wrappers; `find`, `git`, `env` and `cd` have their own rules)
/// reads, when it is known to only read; `None` when it may write or run something.
pub(super) fn read_only<'t>(name: &str, args: &[Word<'t>]) -> Option<Reads<'t>> {
    let literals = || args.iter().filter_map(Word::literal);
    // `printf -v NAME` assigns a variable, evaluating the subscript of NAME as arithmetic.
    if name == "printf"
        && args.first().is_some_and(|first| {
            first
                .literal()
                .map_or(first.computed_option(), |first| first.starts_with("-v"))
        })
    {
        return None;
    }
    if TEXT_ONLY.contains(&name) {
        return Reads::nothing();
    }
    if let Some((_, short, long, cwd)) = READERS.iter().find(|reader| reader.0 == name) {
        let scan = Scan::new(args, short, long);
        let operands = scan.operands.iter().map(|word| (*word).clone());
        // Files named inside option values: `--files-from=F`, `-X F`, `--from-file=F`.
        let valued: Vec<Word<'t>> = scan
            .values(&[
                "f",
                "files-from",
                "X",
                "exclude-from",
                "from-file",
                "to-file",
                "m",
                "magic-file",
                "relative-to",
                "relative-base",
                "format-file",
                "starting-file",
            ])
            .filter(|_| matches!(name, "file" | "du" | "diff" | "realpath" | "hexdump"))
            .cloned()
            .collect();
        let acts = match name {
            // A second operand is an output file.
            "uniq" => scan.operands.len() > 1,
            // `-o` writes the listing; `-R` writes `00Tree.html` in every directory; `-l`
            // follows links (out of the workspace).
            "tree" => scan.has('o', "output") || scan.short('R') || scan.short('l'),
            // `-C` compiles a magic file, writing `NAME.mgc`.
            "file" => scan.has('C', "compile") || scan.has('f', "files-from"),
            // `-r` compares directories, following the links inside them.
            "diff" => (scan.short('r') || scan.long("recursive")) && !scan.long("no-dereference"),
            // `-c` reads the files the check list names.
            "md5sum" | "sha256sum" => scan.has('c', "check"),
            // `-RL` lists directories through the links inside them.
            "ls" => scan.short('R') && (scan.short('L') || scan.long("dereference")),
            _ => false,
        };
        // `--files0-from=LIST` reads the files LIST names, which this analysis cannot see.
        if acts || scan.long("files0-from") {
            return None;
        }
        return Reads::paths(operands.chain(valued), *cwd);
    }
    match name {
        // `command -v NAME` and `command -V NAME` only look a name up.
        "command" => args
            .first()
            .and_then(Word::literal)
            .is_some_and(|arg| arg.starts_with('-') && (arg.contains('v') || arg.contains('V')))
            .then(|| Reads {
                paths: Vec::new(),
                cwd: false,
            }),
        // `-R` follows the links inside directories, out of the workspace.
        "grep" | "egrep" | "fgrep" if Scan::new(args, "efmABCDd", &[]).short('R') => None,
        "grep" | "egrep" | "fgrep" => pattern_search(
            args,
            "efmABCDd",
            &[
                "regexp",
                "file",
                "max-count",
                "after-context",
                "before-context",
                "context",
                "devices",
                "directories",
                "label",
                "include",
                "exclude",
                "exclude-from",
                "exclude-dir",
                "binary-files",
            ],
            &["dereference-recursive"],
        ),
        // `--pre` runs a program on every file, `--hostname-bin` runs one for hyperlinks,
        // `--search-zip` runs decompressors.
        "rg" => pattern_search(
            args,
            "efmABCgtTjMErd",
            &[
                "regexp",
                "file",
                "max-count",
                "after-context",
                "before-context",
                "context",
                "glob",
                "iglob",
                "type",
                "type-not",
                "type-add",
                "type-clear",
                "threads",
                "max-columns",
                "encoding",
                "replace",
                "max-depth",
                "max-filesize",
                "sort",
                "sortr",
                "path-separator",
                "colors",
                "context-separator",
                "field-context-separator",
                "field-match-separator",
                "ignore-file",
                "engine",
                "dfa-size-limit",
                "regex-size-limit",
                "hyperlink-format",
                "pre",
                "pre-glob",
                "hostname-bin",
            ],
            &["pre", "pre-glob", "hostname-bin", "search-zip", "follow"],
        )
        // `-z` runs decompressors; `-L` follows links out of the workspace.
        .filter(|_| !Scan::new(args, "efmABCgtTjMErd", &[]).any_short("zL")),
        // `--set` changes the clock; `--file` prints the lines of a file (in error messages).
        "date" => {
            let scan = Scan::new(
                args,
                "dfrsI",
                &["date", "file", "reference", "set", "resolution"],
            );
            if scan.has('s', "set") {
                return None;
            }
            Reads::paths(
                scan.values(&["f", "file", "r", "reference"]).cloned(),
                false,
            )
        }
        // `--output` writes the sorted lines, `--compress-program` runs a program on
        // temporary files, `--temporary-directory` writes them where it names.
        "sort" => {
            let scan = Scan::new(
                args,
                "kStTo",
                &[
                    "key",
                    "buffer-size",
                    "field-separator",
                    "temporary-directory",
                    "output",
                    "compress-program",
                    "files0-from",
                    "random-source",
                    "batch-size",
                    "parallel",
                    "sort",
                ],
            );
            if scan.has('o', "output")
                || scan.has('T', "temporary-directory")
                || scan.long("compress-program")
                || scan.long("files0-from")
            {
                return None;
            }
            let operands = scan.operands.iter().map(|word| (*word).clone());
            let files = scan.values(&["random-source"]).cloned();
            Reads::paths(operands.chain(files), false)
        }
        // `-o`/`--log-file` write a file; `-k`/`--lesskey-*` load key bindings (which may
        // run commands); `+CMD` runs a less command at start; `-t`/`-T` open the files a
        // tags file names.
        "less" => {
            let dangerous = literals().any(|arg| {
                arg.starts_with('+')
                    || (arg.starts_with('-')
                        && !arg.starts_with("--")
                        && arg.contains(['o', 'O', 'k', 't', 'T']))
                    || [
                        "log-file",
                        "LOG-FILE",
                        "lesskey-file",
                        "lesskey-src",
                        "lesskey-content",
                        "tag",
                        "tag-file",
                    ]
                    .iter()
                    .any(|full| is_long(arg, full))
            });
            if dangerous {
                return None;
            }
            Reads::paths(
                Scan::new(args, "bhjpPtTxyz#", &[])
                    .operands
                    .into_iter()
                    .cloned(),
                false,
            )
        }
        "xxd" => {
            let scan = Scan::new(args, "cglosnC", &[]);
            (scan.operands.len() <= 1)
                .then(|| Reads::paths(scan.operands.into_iter().cloned(), false))
                .flatten()
        }
        "jq" => jq(args),
        "cargo" => (matches!(
            literals().collect::<Vec<_>>().as_slice(),
            ["--version" | "-V"]
        ) && args.len() == 1)
            .then(|| Reads {
                paths: Vec::new(),
                cwd: false,
            }),
        "sed" => sed_read_only(args),
        _ => None,
    }
}

/// `grep` and `rg`: the first operand is the pattern unless `-e` or `-f` gave one; the rest
/// are files. `-f FILE` reads a file too. `dangerous` long options make it not read-only.
fn pattern_search<'t>(
    args: &[Word<'t>],
    short: &str,
    long: &[&str],
    dangerous: &[&str],
) -> Option<Reads<'t>> {
    let scan = Scan::new(args, short, long);
    if scan.any_long(dangerous) {
        return None;
    }
    let pattern_given =
        scan.value(&["e", "regexp"]).is_some() || scan.value(&["f", "file"]).is_some();
    let skip = usize::from(!pattern_given);
    let files = scan.operands.iter().skip(skip).map(|word| (*word).clone());
    let pattern_files = scan
        .values(&["f", "file", "exclude-from", "ignore-file"])
        .cloned();
    Reads::paths(files.chain(pattern_files), true)
}

/// `jq FILTER [FILES]`: options that read other files (`--rawfile`, `--slurpfile`,
/// `--from-file`, a module path) make it not read-only, to keep the rule simple.
fn jq<'t>(args: &[Word<'t>]) -> Option<Reads<'t>> {
    let mut files = Vec::new();
    let mut filter_seen = false;
    let mut index = 0;
    while let Some(word) = args.get(index) {
        index += 1;
        let Some(arg) = word.literal() else {
            if filter_seen {
                files.push(word.clone());
            } else if jq_loads_modules(&word.source) {
                return None;
            } else {
                filter_seen = true;
            }
            continue;
        };
        match arg {
            _ if !filter_seen && !arg.starts_with('-') && jq_loads_modules(arg) => return None,
            "--arg" | "--argjson" => index += 2,
            "--indent" => index += 1,
            "--rawfile" | "--slurpfile" | "--from-file" | "-f" | "--args" | "--jsonargs"
            | "--library-path" => return None,
            _ if arg.starts_with("-L") => return None,
            _ if arg.starts_with('-') && arg != "-" => {}
            _ if filter_seen => files.push(word.clone()),
            _ => filter_seen = true,
        }
    }
    Reads::paths(files, false)
}

/// Whether a jq program has an `import` or `include` directive, which reads a module or a
/// JSON data file from a path of its own (`import "../../x" as $data;`).
fn jq_loads_modules(filter: &str) -> bool {
    ["import", "include"].iter().any(|keyword| {
        filter.match_indices(keyword).any(|(at, _)| {
            filter[at + keyword.len()..]
                .chars()
                .next()
                .is_some_and(|next| next.is_whitespace() || next == '"')
        })
    })
}

/// `sed` without `-i`, whose scripts neither write files (`w`) nor run commands (`e`); the
/// files it reads.
fn sed_read_only<'t>(args: &[Word<'t>]) -> Option<Reads<'t>> {
    let mut scripts: Vec<&str> = Vec::new();
    let mut files = Vec::new();
    let mut script_given = false;
    let mut index = 0;
    let mut options_done = false;
    while let Some(word) = args.get(index) {
        index += 1;
        let Some(arg) = word.literal() else {
            if !script_given {
                return None;
            }
            files.push(word.clone());
            continue;
        };
        if options_done || !arg.starts_with('-') || arg == "-" {
            if script_given {
                files.push(word.clone());
            } else {
                scripts.push(arg);
                script_given = true;
            }
            continue;
        }
        if arg == "--" {
            options_done = true;
        } else if let Some(long) = arg.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            // `--in-place` edits files; `--file` reads a script this analysis cannot see.
            if abbreviates(name, "in-place") || abbreviates(name, "file") {
                return None;
            }
            if abbreviates(name, "expression") {
                let script = match value {
                    Some(script) => Some(script),
                    None => {
                        index += 1;
                        args.get(index - 1).and_then(Word::literal)
                    }
                };
                scripts.push(script?);
                script_given = true;
            } else if abbreviates(name, "line-length") && value.is_none() {
                index += 1;
            }
        } else {
            let short = &arg[1..];
            for (at, letter) in short.char_indices() {
                match letter {
                    'i' | 'f' => return None,
                    'e' => {
                        let attached = &short[at + 1..];
                        let script = if attached.is_empty() {
                            index += 1;
                            args.get(index - 1).and_then(Word::literal)
                        } else {
                            Some(attached)
                        };
                        scripts.push(script?);
                        script_given = true;
                        break;
                    }
                    'l' => {
                        if at + 1 == short.len() {
                            index += 1;
                        }
                        break;
                    }
                    _ => {}
                }
            }
        }
    }
    // Files named by `r`/`R` commands are read like operands.
    let node = args.first().map(|word| word.node);
    for script in scripts {
        for read in sed_script_reads(script)? {
            files.extend(node.map(|node| Word::synthetic(&read, node)));
        }
    }
    Reads::paths(files, false)
}

/// The files a sed script reads (`r FILE`, `R FILE`), or `None` when it may write a file or
/// run a command (`w`, `W`, `e`, or the `e`/`w` flags of `s`). Anything not understood
/// counts as acting.
fn sed_script_reads(script: &str) -> Option<Vec<String>> {
    let mut reads = Vec::new();
    let bytes = script.as_bytes();
    let mut at = 0;
    let skip_to = |at: &mut usize, stops: &[u8]| {
        while *at < bytes.len() && !stops.contains(&bytes[*at]) {
            *at += 1;
        }
    };
    // Skips a delimited part (`/regex/`) starting after its opening delimiter.
    let delimited = |at: &mut usize, delimiter: u8| -> bool {
        while *at < bytes.len() {
            match bytes[*at] {
                b'\\' => *at += 2,
                byte if byte == delimiter => {
                    *at += 1;
                    return true;
                }
                _ => *at += 1,
            }
        }
        false
    };
    let address = |at: &mut usize| -> bool {
        match bytes.get(*at) {
            Some(b'0'..=b'9' | b'+' | b'~') => {
                *at += 1;
                while bytes
                    .get(*at)
                    .is_some_and(|byte| byte.is_ascii_digit() || *byte == b'~')
                {
                    *at += 1;
                }
                true
            }
            Some(b'$') => {
                *at += 1;
                true
            }
            Some(b'/') => {
                *at += 1;
                let closed = delimited(at, b'/');
                while matches!(bytes.get(*at), Some(b'I' | b'M')) {
                    *at += 1;
                }
                closed
            }
            Some(b'\\') => match bytes.get(*at + 1).copied() {
                Some(delimiter) => {
                    *at += 2;
                    delimited(at, delimiter)
                }
                None => false,
            },
            _ => true,
        }
    };
    loop {
        while at < bytes.len() && (bytes[at].is_ascii_whitespace() || bytes[at] == b';') {
            at += 1;
        }
        if at >= bytes.len() {
            return Some(reads);
        }
        if !address(&mut at) {
            return None;
        }
        if bytes.get(at) == Some(&b',') {
            at += 1;
            if !address(&mut at) {
                return None;
            }
        }
        while at < bytes.len() && (bytes[at] == b' ' || bytes[at] == b'!') {
            at += 1;
        }
        let &command = bytes.get(at)?;
        at += 1;
        match command {
            b'{' | b'}' | b'p' | b'P' | b'd' | b'D' | b'n' | b'N' | b'g' | b'G' | b'h' | b'H'
            | b'x' | b'=' | b'z' | b'F' => {}
            b'#' | b'a' | b'i' | b'c' => skip_to(&mut at, b"\n"),
            b'r' | b'R' => {
                let start = at;
                skip_to(&mut at, b"\n");
                let file = script.get(start..at).unwrap_or_default().trim_start();
                reads.push(file.to_owned());
            }
            b'b' | b't' | b'T' | b':' | b'v' => skip_to(&mut at, b";\n"),
            b'q' | b'Q' | b'l' | b'L' => {
                while bytes.get(at).is_some_and(u8::is_ascii_digit) {
                    at += 1;
                }
            }
            b's' | b'y' => {
                let &delimiter = bytes.get(at)?;
                if delimiter == b'\\' || delimiter == b'\n' {
                    return None;
                }
                at += 1;
                if !delimited(&mut at, delimiter) || !delimited(&mut at, delimiter) {
                    return None;
                }
                let flags_start = at;
                skip_to(&mut at, b";\n}");
                if command == b's'
                    && bytes[flags_start..at]
                        .iter()
                        .any(|flag| matches!(flag, b'e' | b'w' | b'W'))
                {
                    return None;
                }
            }
            _ => return None,
        }
    }
}
