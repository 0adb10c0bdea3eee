//! An image a person names by its path (pasted or dragged into a terminal's prompt) as an
//! input item: read only when it is a regular file with an image's extension whose first
//! bytes say it is that image, up to the size providers take. The person chose the file, so
//! it may lie outside the workspace; what else could be named that way (a key, a
//! configuration file) is never an image and is never read past its first bytes.

use std::io::Read;
use std::path::Path;

use base64::Engine as _;
use coder_protocol::InputItem;

use crate::tools::read::{IMAGE_LIMIT, image_type};

/// Whether `name` is named as an image the model can see (by its extension).
pub fn is_image_name(name: &str) -> bool {
    image_type(name).is_some()
}

/// The image at `path` as an `image` input item (a `data:` URL).
pub fn image_from_path(path: &Path) -> Result<InputItem, String> {
    let shown = path.display();
    let media_type = image_type(&path.to_string_lossy())
        .ok_or_else(|| format!("{shown} is not a png, jpeg, gif or webp image"))?;
    let metadata = std::fs::metadata(path).map_err(|err| format!("cannot read {shown}: {err}"))?;
    if !metadata.is_file() {
        return Err(format!("{shown} is not a file"));
    }
    if metadata.len() > IMAGE_LIMIT {
        return Err(format!(
            "{shown} is too large ({} bytes; images up to {IMAGE_LIMIT} bytes)",
            metadata.len()
        ));
    }
    let cannot = |err: std::io::Error| format!("cannot read {shown}: {err}");
    let mut file = std::fs::File::open(path)
        .map_err(cannot)?
        .take(IMAGE_LIMIT + 1);
    // The first bytes say what the file is; nothing more is read of one that is not.
    let mut bytes = Vec::new();
    (&mut file)
        .take(12)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if !looks_like(media_type, &bytes) {
        return Err(format!(
            "{shown} does not hold an image of type {media_type}"
        ));
    }
    file.read_to_end(&mut bytes).map_err(cannot)?;
    if bytes.len() as u64 > IMAGE_LIMIT {
        return Err(format!("{shown} grew past {IMAGE_LIMIT} bytes while read"));
    }
    Ok(InputItem::Image {
        image_url: format!(
            "data:{media_type};base64,{}",
            base64::engine::general_purpose::STANDARD.encode(&bytes)
        ),
    })
}

/// Whether `bytes` start as an image of `media_type` does.
fn looks_like(media_type: &str, bytes: &[u8]) -> bool {
    match media_type {
        "image/png" => bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "image/jpeg" => bytes.starts_with(&[0xff, 0xd8, 0xff]),
        "image/gif" => bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a"),
        "image/webp" => bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(b"WEBP".as_slice()),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_file_that_is_the_image_its_name_says_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let png = dir.path().join("shot.png");
        std::fs::write(&png, b"\x89PNG\r\n\x1a\nrest").unwrap();
        let InputItem::Image { image_url } = image_from_path(&png).unwrap() else {
            panic!("an image item");
        };
        assert!(image_url.starts_with("data:image/png;base64,iVBORw0KGg"));
        let fake = dir.path().join("id_rsa.png");
        std::fs::write(&fake, b"-----BEGIN OPENSSH PRIVATE KEY-----").unwrap();
        assert!(
            image_from_path(&fake)
                .unwrap_err()
                .contains("does not hold")
        );
        let text = dir.path().join("notes.txt");
        std::fs::write(&text, b"hello").unwrap();
        assert!(image_from_path(&text).is_err());
        assert!(image_from_path(dir.path()).is_err());
    }
}
