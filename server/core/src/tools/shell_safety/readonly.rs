//! Commands known to only read, and the options that would make them write or run something.

use super::options::Scan;
use super::words::Word;

/// Read-only commands that stay read-only whatever arguments `xargs` appends.
pub(super) const SAFE_WITH_XARGS: [&str; 22] = [
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "stat",
    "file",
    "du",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "md5sum",
    "sha256sum",
    "echo",
    "printf",
    "nl",
    "true",
];

/// Whether the command (after wrappers; `find`, `git`, `env` and `cd` have their own rules)
/// is known to only read.
pub(super) fn is_read_only(name: &str, args: &[Word<'_>]) -> bool {
    let literals = || args.iter().filter_map(Word::literal);
    match name {
        "ls" | "cat" | "head" | "tail" | "wc" | "grep" | "egrep" | "fgrep" | "pwd" | "echo"
        | "printf" | "which" | "whoami" | "id" | "uname" | "stat" | "file" | "du" | "df"
        | "cut" | "tr" | "diff" | "cmp" | "basename" | "dirname" | "realpath" | "readlink"
        | "true" | "false" | "test" | "[" | "jq" | "more" | "nl" | "od" | "hexdump" | "md5sum"
        | "sha256sum" => true,
        // `command -v NAME` and `command -V NAME` only look a name up.
        "command" => args
            .first()
            .and_then(Word::literal)
            .is_some_and(|arg| arg.starts_with('-') && (arg.contains('v') || arg.contains('V'))),
        // `--pre` runs a program on every file.
        "rg" => !literals().any(|arg| arg.starts_with("--pre")),
        "date" => !literals().any(|arg| arg.starts_with("-s") || arg.starts_with("--set")),
        "sort" => {
            !Scan::new(args, "kStTo", &["output", "key", "field-separator"]).has('o', "output")
        }
        "tree" => !Scan::new(args, "LPIo", &[]).has('o', "output"),
        "less" => !literals().any(|arg| {
            arg.starts_with("-o")
                || arg.starts_with("-O")
                || arg.starts_with("--log-file")
                || arg.starts_with("--LOG-FILE")
        }),
        // A second operand is an output file.
        "uniq" => {
            Scan::new(args, "fsw", &["skip-fields", "skip-chars", "check-chars"])
                .operands
                .len()
                <= 1
        }
        "xxd" => Scan::new(args, "cglosnC", &[]).operands.len() <= 1,
        "cargo" => {
            matches!(
                literals().collect::<Vec<_>>().as_slice(),
                ["--version" | "-V"]
            ) && args.len() == 1
        }
        "sed" => sed_read_only(args),
        _ => false,
    }
}

/// `sed` without `-i`, whose scripts neither write files (`w`) nor run commands (`e`).
fn sed_read_only(args: &[Word<'_>]) -> bool {
    let mut scripts: Vec<&str> = Vec::new();
    let mut script_given = false;
    let mut index = 0;
    let mut options_done = false;
    while let Some(word) = args.get(index) {
        index += 1;
        let Some(arg) = word.literal() else {
            if !script_given {
                return false;
            }
            continue;
        };
        if options_done || !arg.starts_with('-') || arg == "-" {
            if !script_given {
                scripts.push(arg);
                script_given = true;
            }
            continue;
        }
        if arg == "--" {
            options_done = true;
        } else if let Some(long) = arg.strip_prefix("--") {
            match long.split_once('=') {
                _ if long.starts_with("in-place") || long.starts_with("file") => return false,
                Some(("expression", script)) => {
                    scripts.push(script);
                    script_given = true;
                }
                None if long == "expression" => {
                    let Some(script) = args.get(index).and_then(Word::literal) else {
                        return false;
                    };
                    scripts.push(script);
                    script_given = true;
                    index += 1;
                }
                _ if long == "line-length" => index += 1,
                _ => {}
            }
        } else {
            let short = &arg[1..];
            for (at, letter) in short.char_indices() {
                match letter {
                    'i' | 'f' => return false,
                    'e' => {
                        let attached = &short[at + 1..];
                        let script = if attached.is_empty() {
                            index += 1;
                            args.get(index - 1).and_then(Word::literal)
                        } else {
                            Some(attached)
                        };
                        let Some(script) = script else {
                            return false;
                        };
                        scripts.push(script);
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
    scripts.iter().all(|script| !sed_script_acts(script))
}

/// Whether a sed script may write a file or run a command (`w`, `W`, `e`, or the `e`/`w`
/// flags of `s`). Anything not understood counts as acting.
fn sed_script_acts(script: &str) -> bool {
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
            return false;
        }
        if !address(&mut at) {
            return true;
        }
        if bytes.get(at) == Some(&b',') {
            at += 1;
            if !address(&mut at) {
                return true;
            }
        }
        while at < bytes.len() && (bytes[at] == b' ' || bytes[at] == b'!') {
            at += 1;
        }
        let Some(&command) = bytes.get(at) else {
            return true;
        };
        at += 1;
        match command {
            b'{' | b'}' | b'p' | b'P' | b'd' | b'D' | b'n' | b'N' | b'g' | b'G' | b'h' | b'H'
            | b'x' | b'=' | b'z' | b'F' => {}
            b'#' | b'a' | b'i' | b'c' | b'r' | b'R' => skip_to(&mut at, b"\n"),
            b'b' | b't' | b'T' | b':' | b'v' => skip_to(&mut at, b";\n"),
            b'q' | b'Q' | b'l' | b'L' => {
                while bytes.get(at).is_some_and(u8::is_ascii_digit) {
                    at += 1;
                }
            }
            b's' | b'y' => {
                let Some(&delimiter) = bytes.get(at) else {
                    return true;
                };
                if delimiter == b'\\' || delimiter == b'\n' {
                    return true;
                }
                at += 1;
                if !delimited(&mut at, delimiter) || !delimited(&mut at, delimiter) {
                    return true;
                }
                let flags_start = at;
                skip_to(&mut at, b";\n}");
                if command == b's'
                    && bytes[flags_start..at]
                        .iter()
                        .any(|flag| matches!(flag, b'e' | b'w' | b'W'))
                {
                    return true;
                }
            }
            _ => return true,
        }
    }
}
