//! The YAML frontmatter of a markdown file (custom commands, `SKILL.md`): a first line
//! `---`, YAML up to the next `---` line, then the body.

use serde::de::DeserializeOwned;

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
