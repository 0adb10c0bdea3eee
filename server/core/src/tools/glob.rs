//! `glob`: files whose path matches a pattern, newest first, honouring `.gitignore`.

use std::path::Path;
use std::time::SystemTime;

use async_trait::async_trait;
use globset::GlobBuilder;
use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::{display_path, resolve_existing};
use super::{Tool, ToolContext, ToolOutput};

/// At most this many paths are returned.
const MAX_RESULTS: usize = 200;

pub struct GlobTool;

#[derive(Deserialize)]
struct Args {
    pattern: String,
    path: Option<String>,
}

#[async_trait]
impl Tool for GlobTool {
    fn name(&self) -> &str {
        "glob"
    }

    fn description(&self) -> &str {
        "Find files by path pattern, e.g. `**/*.rs` or `src/**/mod.rs`. `*` does not cross \
         `/`; `**` does. Files ignored by .gitignore and hidden files are skipped. Returns \
         paths relative to the workspace, most recently modified first, at most 200. `path` \
         limits the search to a directory."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob pattern, relative to `path`."},
                "path": {"type": "string", "description": "Directory to search (default: the workspace root)."},
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
        GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map(|_| ())
            .map_err(|err| format!("invalid glob pattern: {err}"))
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, String> {
        let args: Args = serde_json::from_value(input).map_err(|err| err.to_string())?;
        let workspace = ctx.workspace.clone();
        tokio::task::spawn_blocking(move || glob(&workspace, &args))
            .await
            .map_err(|err| format!("glob failed: {err}"))?
            .map(ToolOutput::text)
    }
}

fn glob(workspace: &Path, args: &Args) -> Result<String, String> {
    let base = resolve_existing(workspace, args.path.as_deref().unwrap_or("."))?;
    if !base.is_dir() {
        return Err(format!(
            "{} is not a directory",
            display_path(workspace, &base)
        ));
    }
    let matcher = GlobBuilder::new(&args.pattern)
        .literal_separator(true)
        .build()
        .map_err(|err| format!("invalid glob pattern: {err}"))?
        .compile_matcher();
    let mut found: Vec<(SystemTime, String)> = Vec::new();
    for entry in crate::ignore_files::walker(workspace, &base).build() {
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(&base) else {
            continue;
        };
        if matcher.is_match(relative) {
            let modified = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            found.push((modified, display_path(workspace, entry.path())));
        }
    }
    if found.is_empty() {
        return Ok(format!("No files match `{}`.", args.pattern));
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = found.len();
    let mut out: String = found
        .iter()
        .take(MAX_RESULTS)
        .map(|(_, path)| format!("{path}\n"))
        .collect();
    if total > MAX_RESULTS {
        out.push_str(&format!(
            "({total} files match; showing the {MAX_RESULTS} newest. Narrow the pattern or path.)\n"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(pattern: &str, path: Option<&str>) -> Args {
        Args {
            pattern: pattern.to_owned(),
            path: path.map(str::to_owned),
        }
    }

    #[test]
    fn matches_newest_first_and_skips_ignored_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::write(root.join("src/old.rs"), "").unwrap();
        std::fs::write(root.join("target/gen.rs"), "").unwrap();
        let old = SystemTime::now() - std::time::Duration::from_secs(100);
        std::fs::File::options()
            .write(true)
            .open(root.join("src/old.rs"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        std::fs::write(root.join("src/deep/new.rs"), "").unwrap();
        assert_eq!(
            glob(root, &args("**/*.rs", None)).unwrap(),
            "src/deep/new.rs\nsrc/old.rs\n"
        );
        assert_eq!(
            glob(root, &args("*.rs", Some("src"))).unwrap(),
            "src/old.rs\n"
        );
        assert!(
            glob(root, &args("*.py", None))
                .unwrap()
                .starts_with("No files")
        );
        assert!(
            glob(root, &args("*", Some("..")))
                .unwrap_err()
                .contains("outside")
        );
    }
}
