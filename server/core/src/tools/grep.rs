//! `grep`: regex search over the workspace with ripgrep's crates, honouring `.gitignore`.
//! Files open in the editor are searched in the editor's text ([`overlay`]).

mod overlay;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;
use serde::Deserialize;
use serde_json::{Value, json};

use self::overlay::Overlay;
use super::paths::{display_path, resolve_readable};
use super::{Tool, ToolContext, ToolOutput};
use crate::documents::Documents;

/// Output beyond this many lines is cut, with a note saying how much was left out.
const MAX_LINES: usize = 500;
/// Matched or context lines longer than this are cut.
const MAX_LINE_CHARS: usize = 500;

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

struct Collect<'a> {
    hits: &'a mut FileHits,
    mode: Mode,
}

impl Collect<'_> {
    fn push(&mut self, number: Option<u64>, is_match: bool, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches(['\n', '\r']);
        let text: String = text.chars().take(MAX_LINE_CHARS).collect();
        self.hits
            .lines
            .push(Some((number.unwrap_or(0), is_match, text)));
    }
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.hits.count += 1;
        match self.mode {
            Mode::FilesWithMatches => Ok(false),
            Mode::Count => Ok(true),
            Mode::Content => {
                self.push(found.line_number(), true, found.bytes());
                Ok(true)
            }
        }
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, Self::Error> {
        self.push(context.line_number(), false, context.bytes());
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
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
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(args.case_insensitive)
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
    let found = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    ignore::WalkBuilder::new(&base)
        .require_git(false)
        .threads(threads)
        .build_parallel()
        .run(|| {
            let matcher: RegexMatcher = matcher.clone();
            let filter = filter.clone();
            let found = &found;
            let base = &base;
            let overlay = &overlay;
            let mut searcher = searcher(context);
            Box::new(move |entry| {
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return WalkState::Continue;
                }
                if !passes(filter.as_ref(), base, entry.path()) {
                    return WalkState::Continue;
                }
                let path = entry.path();
                let text = overlay.text(path);
                if let Some(hits) = search(&mut searcher, &matcher, path, text, args.output_mode) {
                    found.lock().unwrap_or_else(|p| p.into_inner()).push(hits);
                }
                WalkState::Continue
            })
        });
    let mut searcher = searcher(context);
    for (path, text) in overlay.unsaved(workspace, &base) {
        if !passes(filter.as_ref(), &base, path) {
            continue;
        }
        if let Some(hits) = search(&mut searcher, &matcher, path, Some(text), args.output_mode) {
            found.lock().unwrap_or_else(|p| p.into_inner()).push(hits);
        }
    }
    let mut found = found.into_inner().unwrap_or_else(|p| p.into_inner());
    if found.is_empty() {
        return Ok(format!("No matches for `{}`.", args.pattern));
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    let mut lines = Vec::new();
    for file in &found {
        let path = display_path(workspace, &file.path);
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
    let limit = args.head_limit.unwrap_or(MAX_LINES).min(MAX_LINES);
    let total = lines.len();
    let mut out = lines.into_iter().take(limit).collect::<Vec<_>>().join("\n");
    out.push('\n');
    if total > limit {
        out.push_str(&format!(
            "({total} lines in all; showing {limit}. Narrow the pattern, path or glob.)\n"
        ));
    }
    Ok(out)
}

/// A searcher for one thread: line numbers, `context` lines around matches, binary files
/// skipped.
fn searcher(context: usize) -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .before_context(context)
        .after_context(context)
        .build()
}

/// What one file holds: `text` when the editor has it open, else the file on disk. `None`
/// when nothing matches, or when the file cannot be read (skipped, as ripgrep does).
fn search(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    path: &Path,
    text: Option<&str>,
    mode: Mode,
) -> Option<FileHits> {
    let mut hits = FileHits {
        path: path.to_path_buf(),
        count: 0,
        lines: Vec::new(),
    };
    let sink = Collect {
        hits: &mut hits,
        mode,
    };
    let searched = match text {
        Some(text) => searcher.search_slice(matcher, text.as_bytes(), sink),
        None => searcher.search_path(matcher, path, sink),
    };
    (searched.is_ok() && hits.count > 0).then_some(hits)
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
        assert!(
            grep(dir.path(), None, &limited)
                .unwrap()
                .contains("showing 2")
        );
        assert!(
            grep(dir.path(), None, &args("zzz", Mode::Content))
                .unwrap()
                .starts_with("No matches")
        );
    }
}
