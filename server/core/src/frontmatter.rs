//! The YAML frontmatter of a markdown file (custom commands, `SKILL.md`): a first line
//! `---`, YAML up to the next `---` line, then the body.

use std::path::Path;

use coder_protocol::methods::CommandSource;
use serde::de::DeserializeOwned;

/// The largest command or `SKILL.md` file read, in bytes.
pub(crate) const MAX_FILE_BYTES: usize = 256 * 1024;

/// The text of a command or `SKILL.md` file `path` below `folder` (the `.coder` folder it
/// came from), at most [`MAX_FILE_BYTES`]. A workspace's file is shipped by the repository:
/// it is read through the handle on the workspace root (`WorkspaceDir::read_shipped`), so a
/// repository cannot point `.coder/commands/x.md` (or `.coder` itself) at the person's
/// credentials and have them sent as a prompt, nor at a FIFO or a device. The person's own
/// files are read as they are, as regular files.
pub(crate) fn read_file(
    source: CommandSource,
    folder: &Path,
    path: &Path,
) -> Result<String, String> {
    let max = MAX_FILE_BYTES as u64;
    let bytes = match source {
        CommandSource::Workspace => {
            let workspace = folder
                .parent()
                .ok_or_else(|| format!("{} has no workspace", folder.display()))?;
            if !path.starts_with(folder) {
                return Err(format!(
                    "{} is not inside {}",
                    path.display(),
                    folder.display()
                ));
            }
            crate::beneath::read_shipped(workspace, path, max)
                .map_err(|err| shown_error(&err))?
                .ok_or_else(|| "it does not exist".to_owned())?
        }
        _ => crate::bounded::read(path, max).map_err(|err| shown_error(&err))?,
    };
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_owned())
}

/// A read error as the warning says it.
fn shown_error(err: &std::io::Error) -> String {
    if err.kind() == std::io::ErrorKind::FileTooLarge {
        format!("larger than {MAX_FILE_BYTES} bytes")
    } else {
        err.to_string()
    }
}

/// The most bytes of YAML frontmatter read: a description and a few short fields need far
/// less.
pub(crate) const MAX_FRONTMATTER_BYTES: usize = 16 * 1024;

/// The deepest nesting of flow and block collections read in frontmatter. The YAML parser
/// takes time quadratic in the depth of nested collections; frontmatter is a flat map of
/// short fields.
pub(crate) const MAX_FRONTMATTER_DEPTH: usize = 16;

/// Refuses frontmatter too large or too deeply nested to parse (see
/// [`MAX_FRONTMATTER_BYTES`] and [`MAX_FRONTMATTER_DEPTH`]), before the parser sees it.
fn check_bounds(yaml: &str) -> Result<(), String> {
    if yaml.len() > MAX_FRONTMATTER_BYTES {
        return Err(format!(
            "frontmatter: {} bytes, more than the {} KiB read",
            yaml.len(),
            MAX_FRONTMATTER_BYTES / 1024
        ));
    }
    // Flow collections: brackets and braces, counted wherever they are (in quotes and
    // comments too: a false alarm costs a refused file, a miss the parser's time). Block
    // collections: indentation and `- ` entries, each level at least one column deeper.
    let mut depth = 0usize;
    let mut deepest = 0usize;
    for line in yaml.lines() {
        let indent = line.len() - line.trim_start_matches([' ', '-']).len();
        deepest = deepest.max(depth + indent / 2);
        for c in line.chars() {
            match c {
                '[' | '{' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        if deepest > MAX_FRONTMATTER_DEPTH {
            return Err(format!(
                "frontmatter: nested more than {MAX_FRONTMATTER_DEPTH} levels deep"
            ));
        }
    }
    Ok(())
}

/// A markdown file split into its frontmatter, read as `T`, and its body. A file without
/// frontmatter is all body, with `T::default()`.
#[derive(Debug)]
pub(crate) struct Document<T> {
    pub meta: T,
    pub body: String,
}

/// Splits and reads `text`; the error says what is wrong with the frontmatter.
pub(crate) fn parse<T: DeserializeOwned + Default>(text: &str) -> Result<Document<T>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = strip_fence(text) else {
        return Ok(Document {
            meta: T::default(),
            body: text.to_owned(),
        });
    };
    let mut yaml_len = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            let yaml = &rest[..yaml_len];
            let body = &rest[yaml_len + line.len()..];
            let meta = if yaml.trim().is_empty() {
                T::default()
            } else {
                check_bounds(yaml)?;
                serde_yaml_ng::from_str(yaml).map_err(|err| format!("frontmatter: {err}"))?
            };
            return Ok(Document {
                meta,
                body: body.to_owned(),
            });
        }
        yaml_len += line.len();
    }
    Err("frontmatter: no closing `---` line".to_owned())
}

/// The text after an opening `---` line, if it starts with one.
fn strip_fence(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("---")?;
    let rest = rest.trim_start_matches([' ', '\t']);
    rest.strip_prefix("\r\n")
        .or_else(|| rest.strip_prefix('\n'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, serde::Deserialize, PartialEq)]
    struct Meta {
        description: Option<String>,
    }

    #[test]
    fn reads_the_frontmatter_and_keeps_the_body() {
        let doc: Document<Meta> =
            parse("---\ndescription: >\n  two\n  lines\n---\nBody\n").unwrap();
        assert_eq!(doc.meta.description.as_deref(), Some("two lines\n"));
        assert_eq!(doc.body, "Body\n");
    }

    #[test]
    fn a_file_without_frontmatter_is_all_body() {
        let doc: Document<Meta> = parse("Just text\n---\n").unwrap();
        assert_eq!(doc.meta, Meta::default());
        assert_eq!(doc.body, "Just text\n---\n");
    }

    #[test]
    fn deep_or_large_frontmatter_is_refused_before_it_is_parsed() {
        let started = std::time::Instant::now();
        for depth in [17, 1000] {
            let flow = format!(
                "---\ndescription: {}{}\n---\nx",
                "[".repeat(depth),
                "]".repeat(depth)
            );
            let err = parse::<Meta>(&flow).unwrap_err();
            assert!(err.contains("nested more than 16 levels"), "{err}");
        }
        let block: String = (0..40).map(|i| format!("{}a:\n", "  ".repeat(i))).collect();
        let err = parse::<Meta>(&format!("---\n{block}---\nx")).unwrap_err();
        assert!(err.contains("nested more than 16 levels"), "{err}");
        for large in ["a".repeat(20_000), "[".repeat(120_000)] {
            let err = parse::<Meta>(&format!("---\ndescription: {large}\n---\nx")).unwrap_err();
            assert!(err.contains("more than the 16 KiB read"), "{err}");
        }
        // A few levels are fine.
        let fine = "---\ndescription: \"a [b] c\"\nx: [[a], {b: [c]}]\ny:\n  - z: 1\n---\nBody\n";
        let doc: Document<serde_yaml_ng::Value> = parse(fine).unwrap();
        assert_eq!(doc.body, "Body\n");
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }

    #[test]
    fn broken_frontmatter_is_an_error() {
        assert!(parse::<Meta>("---\ndescription: [unclosed\n---\nx").is_err());
        assert!(parse::<Meta>("---\ndescription: x\n").is_err());
    }
}
