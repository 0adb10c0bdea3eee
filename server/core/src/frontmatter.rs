//! The YAML frontmatter of a markdown file (custom commands, `SKILL.md`): a first line
//! `---`, YAML up to the next `---` line, then the body.

use std::io::Read;
use std::path::Path;

use coder_protocol::methods::CommandSource;
use serde::de::DeserializeOwned;

use crate::beneath::WorkspaceDir;

/// The largest command or `SKILL.md` file read, in bytes.
pub(crate) const MAX_FILE_BYTES: usize = 256 * 1024;

/// The text of a command or `SKILL.md` file `path` below `folder` (the `.coder` folder it
/// came from), at most [`MAX_FILE_BYTES`]. A workspace's file is opened through a handle on
/// that folder with no link followed on the way, so a repository cannot point
/// `.coder/commands/x.md` at the person's credentials and have them sent as a prompt; the
/// person's own files are read as they are.
pub(crate) fn read_file(
    source: CommandSource,
    folder: &Path,
    path: &Path,
) -> Result<String, String> {
    let file = match source {
        CommandSource::Workspace => {
            let relative = path
                .strip_prefix(folder)
                .map_err(|_| format!("{} is not inside {}", path.display(), folder.display()))?;
            WorkspaceDir::open(folder)?
                .open_file(relative)
                .map_err(|err| {
                    format!("{err} (links are not followed in a workspace's .coder folder)")
                })?
        }
        _ => std::fs::File::open(path).map_err(|err| err.to_string())?,
    };
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| err.to_string())?;
    if bytes.len() > MAX_FILE_BYTES {
        return Err(format!("larger than {MAX_FILE_BYTES} bytes"));
    }
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_owned())
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
    fn broken_frontmatter_is_an_error() {
        assert!(parse::<Meta>("---\ndescription: [unclosed\n---\nx").is_err());
        assert!(parse::<Meta>("---\ndescription: x\n").is_err());
    }
}
