//! `read`: a text file, or a range of its lines, with line numbers. A file open in the
//! editor is read from the editor's text, unsaved changes included.

use std::io::{BufRead, BufReader, Read, Seek};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::beneath::WorkspaceDir;
use super::paths::{resolve_existing, resolve_readable};
use super::seen::{HashingReader, content_hash};
use super::{Tool, ToolContext, ToolOutput};
use crate::documents::Documents;

/// Lines returned when the call gives no `limit`.
const DEFAULT_LIMIT: usize = 2000;
/// Longer lines are cut, so one minified line cannot flood the context.
const MAX_LINE_CHARS: usize = 2000;
/// Files above this size must be read by range.
const WHOLE_FILE_LIMIT: u64 = 256 * 1024;
/// Files above this size are read by range only, and only up to the range's last line:
/// their lines are not counted and the rest is not read.
const HARD_LIMIT: u64 = 64 * 1024 * 1024;
/// Bytes sniffed for NUL to recognise binary files.
const SNIFF_BYTES: usize = 8192;
/// Images above this size are refused (providers cap images at about 5 MB).
pub(crate) const IMAGE_LIMIT: u64 = 5 * 1024 * 1024;
/// Image types the model can see, by file extension.
const IMAGE_TYPES: [(&str, &str); 5] = [
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("webp", "image/webp"),
];

pub struct ReadTool;

#[derive(Deserialize)]
struct Args {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

#[async_trait]
impl Tool for ReadTool {
    fn name(&self) -> &str {
        "read"
    }

    fn description(&self) -> &str {
        "Read a text file from the workspace. Returns lines prefixed with their 1-based line \
         numbers. `path` is relative to the workspace root (or absolute inside it). For large \
         files pass `offset` (first line, 1-based) and `limit` (number of lines). Images \
         (png, jpg, gif, webp) are returned as images you can see; other binary files are \
         refused."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File to read, relative to the workspace root."},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to read (1-based)."},
                "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to read."},
            },
            "required": ["path"],
            "additionalProperties": false,
        })
    }

    fn kind(&self) -> coder_protocol::ToolKind {
        coder_protocol::ToolKind::Read
    }

    fn locations(
        &self,
        input: &Value,
        workspace: &std::path::Path,
    ) -> Vec<coder_protocol::ToolLocation> {
        super::paths::path_argument(workspace, input, None, input["offset"].as_u64())
    }

    fn is_read_only(&self) -> bool {
        true
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, String> {
        let args: Args = serde_json::from_value(input).map_err(|err| err.to_string())?;
        let workspace = ctx.workspace.clone();
        let documents = ctx.documents.clone();
        let seen = ctx.seen.clone();
        tokio::task::spawn_blocking(move || match image_type(&args.path) {
            Some(media_type) => read_image(&workspace, &args.path, media_type),
            None => {
                let numbered = read_numbered(&workspace, documents.as_deref(), &args)?;
                seen.saw(&numbered.path, Some(numbered.content_hash));
                Ok(ToolOutput::text(numbered.with_note()))
            }
        })
        .await
        .map_err(|err| format!("read failed: {err}"))?
    }
}

pub(crate) fn image_type(path: &str) -> Option<&'static str> {
    let extension = std::path::Path::new(path)
        .extension()?
        .to_str()?
        .to_ascii_lowercase();
    IMAGE_TYPES
        .iter()
        .find(|(ext, _)| *ext == extension)
        .map(|(_, media_type)| *media_type)
}

/// An image file as an attachment the model can see.
pub(crate) fn read_image(
    workspace: &std::path::Path,
    requested: &str,
    media_type: &str,
) -> Result<ToolOutput, String> {
    use base64::Engine as _;
    let path = resolve_existing(workspace, requested)?;
    let mut file = open_checked(workspace, &path, requested)?;
    let size = file
        .metadata()
        .map_err(|err| format!("cannot read {requested}: {err}"))?
        .len();
    if size > IMAGE_LIMIT {
        return Err(format!(
            "{requested} is too large to show ({size} bytes; images up to {IMAGE_LIMIT} bytes)"
        ));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|err| format!("cannot read {requested}: {err}"))?;
    let mut output = ToolOutput::text(format!("Image {requested} ({media_type}, {size} bytes)."));
    output.attachments.push(coder_protocol::Attachment::Inline {
        media_type: media_type.to_owned(),
        data: base64::engine::general_purpose::STANDARD.encode(bytes),
    });
    Ok(output)
}

/// Lines of a text file, numbered as `read` numbers them.
#[derive(Debug)]
pub(crate) struct Numbered {
    /// `{number:>6}\t{line}\n` per line; a note when the file is empty.
    pub text: String,
    /// The first and last line shown (1-based); `last < first` when the file is empty.
    pub first: usize,
    pub last: usize,
    /// The number of lines in the file (when `counted`; else the last line read).
    pub total: usize,
    /// Whether every line was read, so `total` is the file's count: false for a range of a
    /// file past [`HARD_LIMIT`], read no further than the range.
    pub counted: bool,
    /// The file, resolved inside the workspace.
    pub path: std::path::PathBuf,
    /// The hash of the whole text read (the editor's when the file is open there), for
    /// stale-write protection ([`super::seen`]), whatever range was shown.
    pub content_hash: u64,
}

impl Numbered {
    fn seen(self, path: std::path::PathBuf, content_hash: u64) -> Self {
        Self {
            path,
            content_hash,
            ..self
        }
    }

    /// The text, with a note saying which lines were shown when not all were.
    fn with_note(mut self) -> String {
        if !self.counted {
            let Self { first, last, .. } = self;
            self.text.push_str(&format!(
                "(showing lines {first}-{last}; the file is larger than {} MiB, so its lines \
                 were not counted and the rest was not read; use offset and limit to read \
                 more)\n",
                HARD_LIMIT >> 20
            ));
            return self.text;
        }
        if self.total > 0 && (self.first > 1 || self.last < self.total) {
            let Self {
                first, last, total, ..
            } = self;
            self.text.push_str(&format!(
                "(showing lines {first}-{last} of {total}; use offset and limit to read more)\n"
            ));
        }
        self.text
    }
}

/// Reads `path` (relative to the workspace, confined, the editor's text when open there)
/// from line `offset` (1-based), at most `limit` lines, as `read` does.
pub(crate) fn read_lines(
    workspace: &std::path::Path,
    documents: Option<&dyn Documents>,
    path: &str,
    offset: Option<usize>,
    limit: Option<usize>,
) -> Result<Numbered, String> {
    let args = Args {
        path: path.to_owned(),
        offset,
        limit,
    };
    read_numbered(workspace, documents, &args)
}

fn read_numbered(
    workspace: &std::path::Path,
    documents: Option<&dyn Documents>,
    args: &Args,
) -> Result<Numbered, String> {
    let (path, open) = resolve_readable(workspace, &args.path, documents)?;
    if let Some(text) = open {
        check_size(args, u64::try_from(text.len()).unwrap_or(u64::MAX))?;
        check_text(args, &text.as_bytes()[..text.len().min(SNIFF_BYTES)])?;
        let numbered = number_lines(args, text.as_bytes())?;
        return Ok(numbered.seen(path, content_hash(text.as_bytes())));
    }
    let cannot = |err: std::io::Error| format!("cannot read {}: {err}", args.path);
    let mut file = open_checked(workspace, &path, &args.path)?;
    let size = file.metadata().map_err(cannot)?.len();
    check_size(args, size)?;
    let mut head = vec![0; SNIFF_BYTES];
    let sniffed = file.read(&mut head).map_err(cannot)?;
    check_text(args, &head[..sniffed])?;
    file.rewind().map_err(cannot)?;
    let mut reader = BufReader::new(HashingReader::new(file));
    // A file past the hard limit is read up to the range's last line only.
    let numbered = read_range(args, &mut reader, size <= HARD_LIMIT)?;
    Ok(numbered.seen(path, reader.get_ref().hash()))
}

/// Opens the file at `path` (resolved and checked by path) through a handle on the
/// workspace, refusing any link, so a link swapped in after the check cannot lead the read
/// out of the workspace.
fn open_checked(
    workspace: &std::path::Path,
    path: &std::path::Path,
    requested: &str,
) -> Result<std::fs::File, String> {
    WorkspaceDir::open(workspace)?
        .open_file(path)
        .map_err(|err| match err.kind() {
            std::io::ErrorKind::IsADirectory => format!("{requested} is a directory, not a file"),
            _ => format!("cannot read {requested}: {err}"),
        })
}

/// Refuses text too large for the call: a whole file above [`WHOLE_FILE_LIMIT`] (a range
/// is read from a file of any size).
fn check_size(args: &Args, size: u64) -> Result<(), String> {
    let ranged = args.offset.is_some() || args.limit.is_some();
    if !ranged && size > WHOLE_FILE_LIMIT {
        return Err(format!(
            "{} is too large to read at once ({size} bytes); read a range with `offset` and \
             `limit`",
            args.path
        ));
    }
    Ok(())
}

/// Refuses binary content, recognised by a NUL in its first bytes (`head`).
fn check_text(args: &Args, head: &[u8]) -> Result<(), String> {
    if head.contains(&0) {
        return Err(format!(
            "{} is a binary file; only text files can be read",
            args.path
        ));
    }
    Ok(())
}

/// The lines `args` asks for, numbered, from text in memory.
fn number_lines(args: &Args, reader: impl BufRead) -> Result<Numbered, String> {
    read_range(args, reader, true)
}

/// The lines `args` asks for, numbered. Each line costs at most the bytes of its shown
/// part, whatever its length. With `count`, the whole text is read (the lines counted);
/// without, reading stops after the range's last line.
fn read_range(args: &Args, mut reader: impl BufRead, count: bool) -> Result<Numbered, String> {
    let first = args.offset.unwrap_or(1).max(1);
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1);
    // Past the last line asked for; a model may ask for any number.
    let end = first.saturating_add(limit);
    let mut out = String::new();
    let cannot = |err: std::io::Error| format!("cannot read {}: {err}", args.path);
    let (total, stopped) = each_line(&mut reader, MAX_LINE_CHARS * 4, |number, line| {
        if number >= first && number < end {
            let text = String::from_utf8_lossy(line);
            let text = text.strip_suffix('\r').unwrap_or(&text);
            let shown: String = text.chars().take(MAX_LINE_CHARS).collect();
            out.push_str(&format!("{number:>6}\t{shown}\n"));
        }
        count || number + 1 < end
    })
    .map_err(cannot)?;
    // Stopped at the range's end: counted only when nothing follows.
    let counted = !stopped || reader.fill_buf().map_err(cannot)?.is_empty();
    if total == 0 {
        return Ok(Numbered {
            text: format!("({} is empty)", args.path),
            first: 1,
            last: 0,
            total,
            counted: true,
            path: std::path::PathBuf::new(),
            content_hash: 0,
        });
    }
    if first > total {
        return Err(format!(
            "{} has {total} lines; offset {first} is past the end",
            args.path
        ));
    }
    Ok(Numbered {
        text: out,
        first,
        last: (end - 1).min(total),
        total,
        counted,
        path: std::path::PathBuf::new(),
        content_hash: 0,
    })
}

/// Hands each line of `reader` (split at `\n`, as [`BufRead::split`] splits) to `line` with
/// its 1-based number and its first `keep` bytes, never holding more of a line; stops when
/// `line` returns false. Returns the number of the last line handed over and whether it
/// stopped early.
fn each_line(
    reader: &mut impl BufRead,
    keep: usize,
    mut line: impl FnMut(usize, &[u8]) -> bool,
) -> std::io::Result<(usize, bool)> {
    let mut current = Vec::new();
    let mut number = 0usize;
    let mut open = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            if open {
                number += 1;
                line(number, &current);
            }
            return Ok((number, false));
        }
        let (part, used, ends) = match buf.iter().position(|byte| *byte == b'\n') {
            Some(at) => (&buf[..at], at + 1, true),
            None => (buf, buf.len(), false),
        };
        let room = keep.saturating_sub(current.len());
        current.extend_from_slice(&part[..part.len().min(room)]);
        open = true;
        reader.consume(used);
        if ends {
            number += 1;
            let go_on = line(number, &current);
            current.clear();
            open = false;
            if !go_on {
                return Ok((number, true));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_file(
        workspace: &std::path::Path,
        documents: Option<&dyn Documents>,
        args: &Args,
    ) -> Result<String, String> {
        read_numbered(workspace, documents, args).map(Numbered::with_note)
    }

    fn args(path: &str, offset: Option<usize>, limit: Option<usize>) -> Args {
        Args {
            path: path.to_owned(),
            offset,
            limit,
        }
    }

    #[test]
    fn a_range_of_a_file_past_64_mib_is_read_up_to_its_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=10_000).map(|n| format!("line {n}\n")).collect();
        let path = dir.path().join("huge.log");
        std::fs::write(&path, &text).unwrap();
        // A sparse tail of NUL bytes: 5 GiB on no disk, a single line without an end.
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(5 << 30)
            .unwrap();
        let started = std::time::Instant::now();
        let shown = read_file(dir.path(), None, &args("huge.log", Some(9_998), Some(2))).unwrap();
        assert_eq!(
            shown,
            "  9998\tline 9998\n  9999\tline 9999\n(showing lines 9998-9999; the file is \
             larger than 64 MiB, so its lines were not counted and the rest was not read; use \
             offset and limit to read more)\n"
        );
        let limit_only = read_file(dir.path(), None, &args("huge.log", None, Some(1))).unwrap();
        assert!(
            limit_only.starts_with("     1\tline 1\n(showing lines 1-1;"),
            "{limit_only}"
        );
        // Read as fast as the disk gives the range, not the gigabytes after it.
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        let whole = read_file(dir.path(), None, &args("huge.log", None, None)).unwrap_err();
        assert!(
            whole.contains("read a range with `offset` and `limit`"),
            "{whole}"
        );
    }

    #[test]
    fn a_giant_line_costs_no_more_than_its_shown_part() {
        let mut reader = std::io::BufReader::with_capacity(
            16,
            std::io::Read::chain(std::io::repeat(b'x').take(1 << 20), &b"\nend"[..]),
        );
        let mut lens = Vec::new();
        let (lines, stopped) = each_line(&mut reader, 100, |_, line| {
            lens.push(line.len());
            true
        })
        .unwrap();
        assert_eq!((lines, stopped, lens), (2, false, vec![100, 3]));
    }

    #[test]
    fn numbers_lines_and_reports_ranges() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        assert_eq!(
            read_file(dir.path(), None, &args("a.txt", None, None)).unwrap(),
            "     1\tone\n     2\ttwo\n     3\tthree\n"
        );
        assert_eq!(
            read_file(dir.path(), None, &args("a.txt", Some(2), Some(1))).unwrap(),
            "     2\ttwo\n(showing lines 2-2 of 3; use offset and limit to read more)\n"
        );
    }

    #[test]
    fn the_largest_offset_and_limit_a_model_can_send_are_answered() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        assert_eq!(
            read_file(dir.path(), None, &args("a.txt", Some(2), Some(usize::MAX))).unwrap(),
            "     2\ttwo\n     3\tthree\n(showing lines 2-3 of 3; use offset and limit to read more)\n"
        );
        let past = read_file(
            dir.path(),
            None,
            &args("a.txt", Some(usize::MAX), Some(usize::MAX)),
        );
        assert_eq!(
            past.unwrap_err(),
            format!("a.txt has 3 lines; offset {} is past the end", usize::MAX)
        );
    }

    #[test]
    fn images_become_attachments() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("dot.PNG"), [0x89, b'P', b'N', b'G']).unwrap();
        let output = read_image(dir.path(), "dot.PNG", image_type("dot.PNG").unwrap()).unwrap();
        assert_eq!(output.content, "Image dot.PNG (image/png, 4 bytes).");
        assert_eq!(
            output.attachments[0].url(),
            "data:image/png;base64,iVBORw=="
        );
        assert!(image_type("notes.txt").is_none());
    }

    #[test]
    fn refuses_binary_directories_escapes_and_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.bin"), [0u8, 1, 2]).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let err = |path: &str| read_file(dir.path(), None, &args(path, None, None)).unwrap_err();
        assert!(err("b.bin").contains("binary"));
        assert!(err("sub").contains("directory"));
        assert!(err("../outside.txt").contains("outside the workspace"));
        assert!(err("/etc/hostname").contains("outside the workspace"));
        assert!(err("missing.txt").contains("does not exist"));
    }
}
