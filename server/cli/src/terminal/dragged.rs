//! Images named by their path in a line typed at the prompt, as a terminal writes a file
//! dragged onto it (quoted, or with its spaces escaped) or a person pastes it: each is
//! attached to the message, and its path in the text becomes `[image: name]`.

use std::path::{Path, PathBuf};

use coder_core::person_images::{image_from_path, is_image_name};
use coder_protocol::InputItem;

/// The line's text and the images it names; `None` when it names none. `problems` gets a
/// sentence for each image named that could not be attached (its path stays in the text).
pub fn images_in(line: &str, cwd: &Path, problems: &mut Vec<String>) -> Option<Vec<InputItem>> {
    let mut text = String::with_capacity(line.len());
    let mut images = Vec::new();
    let mut copied = 0;
    for (range, word) in words(line) {
        let Some(path) = image_path(&word, cwd) else {
            continue;
        };
        match image_from_path(&path) {
            Ok(image) => {
                let name = path
                    .file_name()
                    .map_or_else(|| word.clone(), |name| name.to_string_lossy().into_owned());
                text.push_str(&line[copied..range.start]);
                text.push_str(&format!("[image: {name}]"));
                copied = range.end;
                images.push(image);
            }
            Err(problem) => problems.push(problem),
        }
    }
    if images.is_empty() {
        return None;
    }
    text.push_str(&line[copied..]);
    let mut items = vec![InputItem::Text { text }];
    items.extend(images);
    Some(items)
}

/// The file a word names, when it is named as an image and exists.
fn image_path(word: &str, cwd: &Path) -> Option<PathBuf> {
    let word = word.strip_prefix("file://").unwrap_or(word);
    if !is_image_name(word) {
        return None;
    }
    let path = match word.strip_prefix("~/") {
        Some(rest) => PathBuf::from(std::env::var_os("HOME")?).join(rest),
        None => cwd.join(word),
    };
    path.is_file().then_some(path)
}

/// The line's words as a shell reads them: split at spaces, except inside quotes or after
/// a backslash; each with its byte range in the line.
fn words(line: &str) -> Vec<(std::ops::Range<usize>, String)> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut start = None;
    let mut quote = None;
    let mut chars = line.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match (quote, c) {
            (None, c) if c.is_whitespace() => {
                if let Some(start) = start.take() {
                    words.push((start..at, std::mem::take(&mut word)));
                }
                continue;
            }
            (None, '\'' | '"') => quote = Some(c),
            (Some(open), c) if c == open => quote = None,
            (None, '\\') => {
                if let Some((_, next)) = chars.next() {
                    word.push(next);
                }
            }
            (_, c) => word.push(c),
        }
        start.get_or_insert(at);
    }
    if let Some(start) = start {
        words.push((start..line.len(), word));
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_read_as_a_shell_reads_them() {
        let found: Vec<String> = words(r#"see '/a b/c.png' and /d\ e.png "x""#)
            .into_iter()
            .map(|(_, word)| word)
            .collect();
        assert_eq!(found, ["see", "/a b/c.png", "and", "/d e.png", "x"]);
    }

    #[test]
    fn a_dragged_image_is_attached_and_named_in_the_text() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("my shots")).unwrap();
        let png = dir.path().join("my shots/one.png");
        std::fs::write(&png, b"\x89PNG\r\n\x1a\n....").unwrap();
        let line = format!("what is in '{}' ?", png.display());
        let mut problems = Vec::new();
        let items = images_in(&line, dir.path(), &mut problems).unwrap();
        assert_eq!(
            items[0],
            InputItem::Text {
                text: "what is in [image: one.png] ?".to_owned()
            }
        );
        assert!(
            matches!(&items[1], InputItem::Image { image_url } if image_url.starts_with("data:image/png;base64,"))
        );
        assert!(problems.is_empty());
        assert!(images_in("no images here.png", dir.path(), &mut problems).is_none());
    }
}
