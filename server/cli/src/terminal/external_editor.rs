//! The prompt edited in the person's editor (Ctrl+G, `/edit`): `$VISUAL`, else `$EDITOR`,
//! else `vi`, on a private file holding the line; what the file holds when the editor exits
//! becomes the line.

use std::io::Write;
use std::path::PathBuf;

/// The most an edited prompt may hold.
const LIMIT: u64 = 4 * 1024 * 1024;

/// `text` as the person left it in their editor. The editor command is run by `sh`, so a
/// command with arguments (`code --wait`) works as it does for git.
pub fn edit(text: &str) -> anyhow::Result<String> {
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|value| !value.trim().is_empty())
        .unwrap_or_else(|| "vi".to_owned());
    let file = PromptFile::create(text)?;
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&file.path)
        .status()
        .map_err(|err| anyhow::anyhow!("cannot start the editor `{editor}`: {err}"))?;
    if !status.success() {
        anyhow::bail!("the editor `{editor}` failed ({status}); the line is kept as it was");
    }
    file.read()
}

/// A file only its owner may read, removed when dropped.
struct PromptFile {
    path: PathBuf,
}

impl PromptFile {
    fn create(text: &str) -> anyhow::Result<Self> {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = std::env::temp_dir();
        for attempt in 0..100u32 {
            let path = dir.join(format!("coder-prompt-{}-{attempt}.md", std::process::id()));
            let created = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path);
            match created {
                Ok(mut file) => {
                    let prompt = Self { path };
                    file.write_all(text.as_bytes())?;
                    return Ok(prompt);
                }
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(err) => anyhow::bail!("cannot make a file for the editor: {err}"),
            }
        }
        anyhow::bail!("cannot make a file for the editor in {}", dir.display())
    }

    /// What the file holds, without the newline editors add at its end.
    fn read(&self) -> anyhow::Result<String> {
        use std::io::Read;
        let file = std::fs::File::open(&self.path)?;
        let mut text = String::new();
        file.take(LIMIT + 1).read_to_string(&mut text)?;
        if text.len() as u64 > LIMIT {
            anyhow::bail!(
                "the edited prompt is larger than {LIMIT} bytes; the line is kept as it was"
            );
        }
        if text.ends_with('\n') {
            text.pop();
        }
        Ok(text)
    }
}

impl Drop for PromptFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
