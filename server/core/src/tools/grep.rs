//! `grep`: regex search over the workspace with ripgrep's crates, honouring `.gitignore`.
//! Files open in the editor are searched in the editor's text ([`overlay`]).
//!
//! Memory stays bounded by the output cap (`head_limit`, at most [`MAX_LINES`]), whatever the
//! size of the tree or of a file: a file stops being searched once it has given as many
//! lines as can be shown, files whose path sorts after what already fills the output are
//! dropped or not searched at all ([`Found`]), and a line longer than [`MAX_LINE_BYTES`] is
//! never read whole: its file is skipped, and the output says so.

mod overlay;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use serde::Deserialize;
use serde_json::{Value, json};

use self::overlay::Overlay;
use super::beneath::WorkspaceDir;
use super::paths::resolve_readable;
use super::{Tool, ToolContext, ToolOutput};
use crate::beneath_walk::{WalkedFile, walk_files};
use crate::documents::Documents;
use crate::ignore_files::IgnoreRules;

/// Output beyond this many lines is cut, with a note saying how much was left out.
const MAX_LINES: usize = 500;
/// Matched or context lines longer than this are cut.
const MAX_LINE_CHARS: usize = 500;
/// The searcher's line buffer never grows past this: a file with a longer line is skipped
/// (reported in the output) rather than read into memory whole.
const MAX_LINE_BYTES: usize = 4 << 20;

pub struct GrepTool;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
enum Mode {
    #[default]
    FilesWithMatches,
    Content,
    Count,
}

#[derive(Deserialize)]
struct Args {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(default)]
    output_mode: Mode,
    context: Option<usize>,
    #[serde(default)]
    case_insensitive: bool,
    head_limit: Option<usize>,
}

#[async_trait]
impl Tool for GrepTool {
    fn name(&self) -> &str {
        "grep"
    }

    fn description(&self) -> &str {
        "Search file contents with a regular expression (Rust regex syntax, as ripgrep). \
         Skips files ignored by .gitignore, hidden files and binary files. `output_mode`: \
         `files_with_matches` (default: matching paths), `content` (matching lines as \
         `path:line:text`, with `context` lines around them), or `count` (matches per file). \
         `glob` filters files (e.g. `*.rs`), `path` limits the search to a file or directory, \
         `head_limit` caps the number of output lines."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression to search for."},
                "path": {"type": "string", "description": "File or directory to search (default: the workspace root)."},
                "glob": {"type": "string", "description": "Only search files whose name or path matches this glob."},
                "output_mode": {"type": "string", "enum": ["files_with_matches", "content", "count"]},
                "context": {"type": "integer", "minimum": 0, "maximum": 20, "description": "Lines of context around matches (content mode)."},
                "case_insensitive": {"type": "boolean"},
                "head_limit": {"type": "integer", "minimum": 1, "description": "Return at most this many output lines."},
            },
            "required": ["pattern"],
            "additionalProperties": false,
        })
    }

    fn kind(&self) -> coder_protocol::ToolKind {
        coder_protocol::ToolKind::Search
    }

    fn locations(
        &self,
        input: &Value,
        workspace: &std::path::Path,
    ) -> Vec<coder_protocol::ToolLocation> {
        super::paths::path_argument(workspace, input, Some("."), None)
    }

    fn is_read_only(&self) -> bool {
        true
    }

    fn validate_input(&self, input: &Value, _ctx: &ToolContext) -> Result<(), String> {
        let pattern = input["pattern"].as_str().unwrap_or_default();
        RegexMatcherBuilder::new()
            .build(pattern)
            .map(|_| ())
            .map_err(|err| format!("invalid regular expression: {err}"))?;
        if let Some(glob) = input["glob"].as_str() {
            GlobBuilder::new(glob)
                .build()
                .map_err(|err| format!("invalid glob: {err}"))?;
        }
        Ok(())
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, String> {
        let args: Args = serde_json::from_value(input).map_err(|err| err.to_string())?;
        let workspace = ctx.workspace.clone();
        let documents = ctx.documents.clone();
        tokio::task::spawn_blocking(move || grep(&workspace, documents.as_deref(), &args))
            .await
            .map_err(|err| format!("grep failed: {err}"))?
            .map(ToolOutput::text)
    }
}

/// One file's findings.
struct FileHits {
    path: PathBuf,
    count: u64,
    /// `(line number, is a match, text)`; `None` marks a break between context groups.
    lines: Vec<Option<(u64, bool, String)>>,
}

impl FileHits {
    /// How many output lines the file takes (in content mode, with the `--` before it).
    fn weight(&self, mode: Mode) -> usize {
        match mode {
            Mode::Content => self.lines.len() + 1,
            Mode::FilesWithMatches | Mode::Count => 1,
        }
    }
}

/// The files found so far, sorted by path, holding no more than fills the output: when the
/// files with the smallest paths already give `limit` lines, the others are dropped, and
/// files that would sort after them are not searched.
struct Found {
    files: BTreeMap<PathBuf, FileHits>,
    /// Output lines the kept files take.
    lines: usize,
    limit: usize,
    mode: Mode,
    /// Something was left out: a dropped or unsearched file, or a file cut at the cap.
    truncated: bool,
    /// Files skipped for a line longer than [`MAX_LINE_BYTES`].
    giant_lines: usize,
}

impl Found {
    fn new(limit: usize, mode: Mode) -> Self {
        Self {
            files: BTreeMap::new(),
            lines: 0,
            limit,
            mode,
            truncated: false,
            giant_lines: 0,
        }
    }

    /// Whether searching `path` can still change the output.
    fn wants(&mut self, path: &Path) -> bool {
        let full = self.lines >= self.limit
            && self
                .files
                .last_key_value()
                .is_some_and(|(last, _)| path > last.as_path());
        self.truncated |= full;
        !full
    }

    fn add(&mut self, hits: FileHits) {
        self.lines += hits.weight(self.mode);
        self.files.insert(hits.path.clone(), hits);
        while let Some((_, last)) = self.files.last_key_value() {
            let weight = last.weight(self.mode);
            if self.lines - weight < self.limit {
                break;
            }
            self.lines -= weight;
            self.files.pop_last();
            self.truncated = true;
        }
    }
}

/// Collects one file's findings, up to `cap` lines: then the search of the file stops.
struct Collect<'a> {
    hits: &'a mut FileHits,
    mode: Mode,
    cap: usize,
    /// Set when the file was cut at the cap.
    cut: &'a mut bool,
}

impl Collect<'_> {
    /// Records a line; false once the file has given `cap` lines.
    fn push(&mut self, number: Option<u64>, is_match: bool, bytes: &[u8]) -> bool {
        if self.hits.lines.len() >= self.cap {
            *self.cut = true;
            return false;
        }
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches(['\n', '\r']);
        let text: String = text.chars().take(MAX_LINE_CHARS).collect();
        self.hits
            .lines
            .push(Some((number.unwrap_or(0), is_match, text)));
        true
    }
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        match self.mode {
            Mode::FilesWithMatches => {
                self.hits.count += 1;
                Ok(false)
            }
            Mode::Count => {
                self.hits.count += 1;
                Ok(true)
            }
            Mode::Content => {
                let kept = self.push(found.line_number(), true, found.bytes());
                self.hits.count += u64::from(kept);
                Ok(kept)
            }
        }
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, Self::Error> {
        Ok(self.push(context.line_number(), false, context.bytes()))
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        if self.hits.lines.len() >= self.cap {
            *self.cut = true;
            return Ok(false);
        }
        self.hits.lines.push(None);
        Ok(true)
    }
}

/// Searches the workspace; files open in the editor are searched in the editor's text, and
/// open files not saved to disk yet are searched too.
fn grep(
    workspace: &Path,
    documents: Option<&dyn Documents>,
    args: &Args,
) -> Result<String, String> {
    let (base, _) = resolve_readable(workspace, args.path.as_deref().unwrap_or("."), documents)?;
    // With the line terminator known, the matcher looks for a literal of the pattern across
    // whole buffers and runs the regex only on the lines that hold one (as `rg` does).
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(args.case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|err| format!("invalid regular expression: {err}"))?;
    let filter = match &args.glob {
        Some(glob) => Some(
            GlobBuilder::new(glob)
                .build()
                .map_err(|err| format!("invalid glob: {err}"))?
                .compile_matcher(),
        ),
        None => None,
    };
    let context = if args.output_mode == Mode::Content {
        args.context.unwrap_or(0)
    } else {
        0
    };
    let overlay = Overlay::collect(documents, &base);
    let dir = WorkspaceDir::open(workspace)?;
    let rules = IgnoreRules::new(workspace);
    let limit = args.head_limit.unwrap_or(MAX_LINES).min(MAX_LINES);
    let found = Mutex::new(Found::new(limit, args.output_mode));
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let search_into =
        |searcher: &mut Searcher, matcher: &RegexMatcher, path: &Path, source: Source<'_>| {
            if !lock(&found).wants(path) {
                return;
            }
            match search(searcher, matcher, path, source, args.output_mode, limit) {
                Searched::Hits { hits, cut } => {
                    let mut found = lock(&found);
                    found.truncated |= cut;
                    found.add(hits);
                }
                Searched::Nothing => {}
                Searched::GiantLine => lock(&found).giant_lines += 1,
            }
        };
    // A base that cannot be opened (gone since it was resolved) has no matches.
    let _ = walk_files(&dir, &rules, &base, threads, || {
        let matcher: RegexMatcher = matcher.clone();
        let filter = filter.clone();
        let (base, overlay, search_into) = (&base, &overlay, &search_into);
        let mut searcher = searcher(context, args.output_mode);
        move |file: &WalkedFile<'_>| {
            let path = file.path();
            if !passes(filter.as_ref(), base, path) {
                return;
            }
            let source = match overlay.text(path) {
                Some(text) => Source::Editor(text),
                None => Source::Disk(file),
            };
            search_into(&mut searcher, &matcher, path, source);
        }
    });
    let mut searcher = searcher(context, args.output_mode);
    for (path, text) in overlay.unsaved(workspace, &base) {
        if !passes(filter.as_ref(), &base, path) {
            continue;
        }
        search_into(&mut searcher, &matcher, path, Source::Editor(text));
    }
    let found = found.into_inner().unwrap_or_else(|p| p.into_inner());
    let giant_note = (found.giant_lines > 0).then(|| {
        format!(
            "({} files skipped: a line longer than {} MiB; search them with bash and a tool that cuts lines.)\n",
            found.giant_lines,
            MAX_LINE_BYTES >> 20
        )
    });
    if found.files.is_empty() {
        let mut out = format!("No matches for `{}`.", args.pattern);
        if let Some(note) = giant_note {
            out.push('\n');
            out.push_str(&note);
        }
        return Ok(out);
    }
    let mut lines = Vec::new();
    for file in found.files.values() {
        // As `paths::display_path` shows it, with the root resolved once.
        let path = file.path.strip_prefix(dir.root()).unwrap_or(&file.path);
        let path = path.display().to_string();
        match args.output_mode {
            Mode::FilesWithMatches => lines.push(path),
            Mode::Count => lines.push(format!("{path}:{}", file.count)),
            Mode::Content => {
                if !lines.is_empty() {
                    lines.push("--".to_owned());
                }
                for line in &file.lines {
                    lines.push(match line {
                        Some((number, true, text)) => format!("{path}:{number}:{text}"),
                        Some((number, false, text)) => format!("{path}-{number}-{text}"),
                        None => "--".to_owned(),
                    });
                }
            }
        }
    }
    let truncated = found.truncated || lines.len() > limit;
    let mut out = lines.into_iter().take(limit).collect::<Vec<_>>().join("\n");
    out.push('\n');
    if truncated {
        out.push_str(&format!(
            "(more than {limit} lines; showing the first {limit}. Narrow the pattern, path or glob.)\n"
        ));
    }
    if let Some(note) = giant_note {
        out.push_str(&note);
    }
    Ok(out)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// A searcher for one thread: line numbers (only for `content`: counting lines costs a
/// pass over every byte, which `rg -l` and `rg -c` skip too), `context` lines around
/// matches, binary files skipped, and a line buffer that never grows past
/// [`MAX_LINE_BYTES`].
fn searcher(context: usize, mode: Mode) -> Searcher {
    SearcherBuilder::new()
        .line_number(mode == Mode::Content)
        .binary_detection(BinaryDetection::quit(0))
        .before_context(context)
        .after_context(context)
        .heap_limit(Some(MAX_LINE_BYTES))
        .build()
}

/// What searching one file gave.
enum Searched {
    /// Matches; `cut` when the file stopped at the cap with more to give.
    Hits { hits: FileHits, cut: bool },
    /// No match, or the file cannot be read (skipped, as ripgrep does).
    Nothing,
    /// The file has a line longer than [`MAX_LINE_BYTES`].
    GiantLine,
}

/// Where a file's text is read from.
enum Source<'a> {
    /// The editor's text of an open file.
    Editor(&'a str),
    /// The file on disk, opened from the folder the walk holds (links refused, so a swap
    /// after the walk listed it cannot lead out).
    Disk(&'a WalkedFile<'a>),
}

/// Searches one file, keeping at most `cap` lines.
fn search(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    path: &Path,
    source: Source<'_>,
    mode: Mode,
    cap: usize,
) -> Searched {
    let mut hits = FileHits {
        path: PathBuf::new(),
        count: 0,
        lines: Vec::new(),
    };
    let mut cut = false;
    let sink = Collect {
        hits: &mut hits,
        mode,
        cap,
        cut: &mut cut,
    };
    let searched = match source {
        Source::Editor(text) => searcher.search_slice(matcher, text.as_bytes(), sink),
        Source::Disk(file) => match file.open() {
            Ok(file) => searcher.search_file(matcher, &file, sink),
            Err(_) => return Searched::Nothing,
        },
    };
    match searched {
        // grep-searcher reports its heap limit only in this message.
        Err(err) if err.to_string().contains("allocation limit") => Searched::GiantLine,
        Ok(()) if hits.count > 0 => {
            hits.path = path.to_path_buf();
            Searched::Hits { hits, cut }
        }
        Ok(()) | Err(_) => Searched::Nothing,
    }
}

/// Whether the file at `path` passes the `glob` filter: by its path under `base`, or by its
/// name.
fn passes(filter: Option<&GlobMatcher>, base: &Path, path: &Path) -> bool {
    let Some(filter) = filter else {
        return true;
    };
    let relative = path.strip_prefix(base).unwrap_or(path);
    filter.is_match(relative) || path.file_name().is_some_and(|name| filter.is_match(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn args(pattern: &str, mode: Mode) -> Args {
        Args {
            pattern: pattern.to_owned(),
            path: None,
            glob: None,
            output_mode: mode,
            context: None,
            case_insensitive: false,
            head_limit: None,
        }
    }

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join(".gitignore"), "ignored.txt\n").unwrap();
        std::fs::write(root.join("ignored.txt"), "needle\n").unwrap();
        std::fs::write(
            root.join("src/a.rs"),
            "one\nneedle here\nthree\nfour\nNeedle again\n",
        )
        .unwrap();
        std::fs::write(root.join("src/b.py"), "needle\n").unwrap();
        std::fs::write(root.join("blob.bin"), b"needle\0\x01").unwrap();
        dir
    }

    #[test]
    fn a_pattern_across_lines_is_refused_with_the_reason() {
        let dir = tree();
        let refused = grep(dir.path(), None, &args("needle\\nthree", Mode::Content)).unwrap_err();
        assert!(
            refused.starts_with("invalid regular expression"),
            "{refused}"
        );
        assert!(refused.contains("\\n"), "{refused}");
        // Counted and listed alike, line by line, with what a line holds.
        assert_eq!(
            grep(dir.path(), None, &args("ee", Mode::Count)).unwrap(),
            "src/a.rs:3\nsrc/b.py:1\n"
        );
    }

    #[test]
    fn the_cap_keeps_the_first_files_by_path_whatever_the_walk_order() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["d", "b", "a", "c", "e"] {
            std::fs::write(dir.path().join(name), "x\nx\n").unwrap();
        }
        let mut content = args("x", Mode::Content);
        content.head_limit = Some(4);
        assert_eq!(
            grep(dir.path(), None, &content).unwrap(),
            "a:1:x\na:2:x\n--\nb:1:x\n\
             (more than 4 lines; showing the first 4. Narrow the pattern, path or glob.)\n"
        );
        let mut files = args("x", Mode::FilesWithMatches);
        files.head_limit = Some(5);
        assert_eq!(grep(dir.path(), None, &files).unwrap(), "a\nb\nc\nd\ne\n");
    }

    #[test]
    fn a_file_with_a_line_longer_than_the_buffer_is_skipped_and_said() {
        let dir = tempfile::tempdir().unwrap();
        let mut giant = vec![b'x'; MAX_LINE_BYTES + 1];
        giant.extend_from_slice(b" needle\n");
        std::fs::write(dir.path().join("giant.txt"), giant).unwrap();
        std::fs::write(dir.path().join("small.txt"), "needle\n").unwrap();
        assert_eq!(
            grep(dir.path(), None, &args("needle", Mode::Content)).unwrap(),
            "small.txt:1:needle\n\
             (1 files skipped: a line longer than 4 MiB; search them with bash and a tool that cuts lines.)\n"
        );
    }

    #[test]
    fn lists_matching_files_and_honours_gitignore_and_binary() {
        let dir = tree();
        assert_eq!(
            grep(dir.path(), None, &args("needle", Mode::FilesWithMatches)).unwrap(),
            "src/a.rs\nsrc/b.py\n"
        );
    }

    #[test]
    fn shows_lines_with_context_counts_and_filters() {
        let dir = tree();
        let mut content = args("needle", Mode::Content);
        content.context = Some(1);
        content.glob = Some("*.rs".into());
        assert_eq!(
            grep(dir.path(), None, &content).unwrap(),
            "src/a.rs-1-one\nsrc/a.rs:2:needle here\nsrc/a.rs-3-three\n"
        );
        let mut count = args("needle", Mode::Count);
        count.case_insensitive = true;
        assert_eq!(
            grep(dir.path(), None, &count).unwrap(),
            "src/a.rs:2\nsrc/b.py:1\n"
        );
        let mut limited = args("e", Mode::Content);
        limited.head_limit = Some(2);
        assert_eq!(
            grep(dir.path(), None, &limited).unwrap(),
            "src/a.rs:1:one\nsrc/a.rs:2:needle here\n\
             (more than 2 lines; showing the first 2. Narrow the pattern, path or glob.)\n"
        );
        assert!(
            grep(dir.path(), None, &args("zzz", Mode::Content))
                .unwrap()
                .starts_with("No matches")
        );
    }
}
