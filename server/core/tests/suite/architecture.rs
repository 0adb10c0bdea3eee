//! Architecture invariants of `coder-core`, checked on its source: the leaves never reach
//! into the centre, and no two top-level modules import each other, directly or through
//! others. A module's imports are the `crate::<module>` paths its files name (tests aside).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The modules of the centre, which only the centre and the facade may import.
const CENTRE: [&str; 3] = ["engine", "session", "turn"];

/// The leaves: they do their job with what they are handed.
const LEAVES: [&str; 10] = [
    "tools",
    "model",
    "permissions",
    "sandbox",
    "mcp",
    "config",
    "process",
    "events",
    "conversation",
    "snapshot",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules each top-level module names.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<String> = files
        .iter()
        .filter_map(|file| {
            let relative = file.strip_prefix(&src).unwrap();
            let first = relative.components().next()?.as_os_str().to_str()?;
            let name = first.trim_end_matches(".rs");
            (name != "lib").then(|| name.to_owned())
        })
        .collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let relative = file.strip_prefix(&src).unwrap();
        let first = relative.components().next().unwrap().as_os_str();
        let from = first.to_str().unwrap().trim_end_matches(".rs").to_owned();
        if from == "lib" || relative.file_name().is_some_and(|name| name == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        // Unit tests may reach anywhere.
        let text = text.split("#[cfg(test)]\nmod tests").next().unwrap();
        let mut named = BTreeSet::new();
        for (at, _) in text.match_indices("crate::") {
            let rest = &text[at + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                for item in group.split(',') {
                    named.insert(item.trim().split("::").next().unwrap().to_owned());
                }
            } else {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                named.insert(name);
            }
        }
        let entry = graph.entry(from.clone()).or_default();
        for name in named {
            if modules.contains(&name) && name != from {
                entry.insert(name);
            }
        }
    }
    graph
}

#[test]
fn the_leaves_never_import_the_centre() {
    let graph = imports();
    let mut reaching = Vec::new();
    for leaf in LEAVES {
        for centre in CENTRE {
            if graph.get(leaf).is_some_and(|names| names.contains(centre)) {
                reaching.push(format!("{leaf} -> {centre}"));
            }
        }
    }
    assert_eq!(reaching, Vec::<String>::new());
}

#[test]
fn no_module_imports_itself_through_others() {
    let graph = imports();
    // A module is on a cycle when it can reach itself.
    let mut cycles = Vec::new();
    for start in graph.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&String> = graph[start].iter().collect();
        while let Some(next) = stack.pop() {
            if next == start {
                cycles.push(start.clone());
                break;
            }
            if seen.insert(next.clone())
                && let Some(names) = graph.get(next)
            {
                stack.extend(names);
            }
        }
    }
    assert_eq!(cycles, Vec::<String>::new(), "imports: {graph:#?}");
}

/// Every source file under `dir` whose name ends with one of `extensions`.
fn sources(dir: &Path, extensions: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "node_modules" && name != "dist" && name != "out" {
                sources(&path, extensions, out);
            }
        } else if extensions.iter().any(|ext| name.ends_with(ext)) {
            out.push(path);
        }
    }
}

/// The doors translate, nothing more (docs/architecture.md): no front door decides anything
/// by a tool's name or reads a tool's arguments. They show a call by what the core says of
/// it (`kind`, `title`, `locations`, `command`, `diff`, `plan`, `options`). Left out: the
/// generated protocol copy, and the SemaCore facade's table of SemaCore's own tool names
/// (`bindings-node/ts/tools.ts`), which translates names and decides nothing.
#[test]
fn no_door_decides_by_a_tool_s_name_or_reads_its_arguments() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for dir in ["server/cli/src", "server/lsp/src", "bindings-node/src"] {
        sources(&root.join(dir), &[".rs"], &mut files);
    }
    for dir in ["bindings-node/ts", "editors/vscode/src"] {
        sources(&root.join(dir), &[".ts", ".mts"], &mut files);
    }
    // The plugins' own code; their tests script the mock model with tool calls by name.
    for dir in ["editors/neovim/lua", "editors/neovim/plugin"] {
        sources(&root.join(dir), &[".lua"], &mut files);
    }
    files.retain(|file| !file.ends_with("ts/protocol.ts") && !file.ends_with("ts/tools.ts"));
    assert!(files.len() > 10, "the doors' sources were not found");
    let names: Vec<&str> = coder_protocol::tools::BUILTIN_TOOLS
        .iter()
        .chain(coder_protocol::tools::CONVERSATION_TOOLS)
        .copied()
        .collect();
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (number, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") || code.starts_with('*') || code.starts_with("--") {
                continue;
            }
            let named = names.iter().any(|name| {
                line.contains(&format!("\"{name}\"")) || line.contains(&format!("'{name}'"))
            });
            let constant = line.contains("coder_core::tools::") && line.contains("_MODE")
                || ["tools::BASH", "tools::APPLY_PATCH", "tools::TODO_WRITE"]
                    .iter()
                    .any(|constant| line.contains(constant));
            // Passing the arguments on whole is translation; reading one is not.
            let arguments = line.contains("arguments[")
                || line.replace("arguments.clone()", "").contains("arguments.");
            if named || constant || arguments {
                found.push(format!(
                    "{}:{}: {}",
                    file.strip_prefix(&root).unwrap_or(file).display(),
                    number + 1,
                    code
                ));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}
