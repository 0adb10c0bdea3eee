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
