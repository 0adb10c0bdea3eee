//! `skill`: loads a skill's instructions (the body of its `SKILL.md`) by name, and names the
//! files beside it; with `file`, returns one of those files. Read-only, never asks. In a
//! session the skills are the session's own ([`SkillTool::cached`]: read at start and again
//! when they change on disk, a broken `SKILL.md` keeping its last good version, as
//! `skill/list` shows them); on its own the tool reads them from disk at each call, from the
//! workspace's `.coder/skills/` and the user-level folder's `skills/`.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use coder_protocol::methods::CommandSource;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolOutput};
use crate::skills::{self, Skill};

/// The largest file beside a skill the tool returns whole.
const MAX_FILE_BYTES: usize = 256 * 1024;

/// The skills a session holds now, and why each `SKILL.md` that is not offered (or kept at
/// its last good version) is so, for the `skill` tool.
pub type CachedSkills = Arc<dyn Fn() -> (Vec<Skill>, Vec<String>) + Send + Sync>;

/// The `skill` tool; `user_folder` is the user-level folder (beside the user configuration
/// file) whose `skills/` it reads after the workspace's.
#[derive(Default)]
pub struct SkillTool {
    user_folder: Option<PathBuf>,
    /// The session's skills; `None` reads them from disk at each call.
    cached: Option<CachedSkills>,
}

impl std::fmt::Debug for SkillTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillTool")
            .field("user_folder", &self.user_folder)
            .field("cached", &self.cached.is_some())
            .finish()
    }
}

impl SkillTool {
    pub fn new(user_folder: Option<PathBuf>) -> Self {
        Self {
            user_folder,
            cached: None,
        }
    }

    /// The tool over a session's skills, as `skills` returns them at each call.
    pub fn cached(skills: CachedSkills) -> Self {
        Self {
            user_folder: None,
            cached: Some(skills),
        }
    }
}

#[derive(Deserialize)]
struct Args {
    name: String,
    file: Option<String>,
}

/// The tool's name.
pub const SKILL: &str = "skill";

#[async_trait]
impl Tool for SkillTool {
    fn name(&self) -> &str {
        SKILL
    }

    fn description(&self) -> &str {
        "Load a skill by name: its instructions, and the files that come with it. Use it when \
         the task matches one of the skills the system prompt lists, before starting the \
         work, then follow the instructions. To read one of the skill's files, call it \
         again with `file` set to the file's path as listed."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "description": "The skill's name, as listed."},
                "file": {"type": "string", "minLength": 1, "description": "A file of the skill, relative to its folder, as the skill's listing names it."},
            },
            "required": ["name"],
            "additionalProperties": false,
        })
    }

    fn kind(&self) -> coder_protocol::ToolKind {
        coder_protocol::ToolKind::Read
    }

    fn is_read_only(&self) -> bool {
        true
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, String> {
        let args: Args = serde_json::from_value(input).map_err(|err| err.to_string())?;
        let (found, warnings) = match &self.cached {
            Some(skills) => skills(),
            None => {
                let mut folders = vec![(CommandSource::Workspace, ctx.workspace.join(".coder"))];
                folders.extend(
                    self.user_folder
                        .iter()
                        .map(|folder| (CommandSource::User, folder.clone())),
                );
                skills::load(&folders)
            }
        };
        let Some(skill) = found.iter().find(|skill| skill.name == args.name) else {
            return Err(unknown(&args.name, &found, &warnings));
        };
        match args.file {
            Some(file) => read_beside(skill, &file).map(ToolOutput::text),
            None => Ok(ToolOutput::text(loaded(skill))),
        }
    }
}

/// The skill's body, then the files beside it.
fn loaded(skill: &Skill) -> String {
    let mut text = format!(
        "Skill {} ({})\n\n{}\n",
        skill.name,
        skill.path.display(),
        skill.body.trim()
    );
    let (files, more) = skills::files_beside(skill);
    if !files.is_empty() {
        text.push_str(&format!(
            "\nFiles of this skill, in {} (load one with `skill` and `file`):\n",
            skill.folder().display()
        ));
        for file in files {
            text.push_str(&format!("- {file}\n"));
        }
        if more {
            text.push_str(&format!(
                "- ... more than {} files, not listed\n",
                skills::MAX_LISTED_FILES
            ));
        }
    }
    text
}

/// One file of a skill's folder; the path may not leave the folder.
fn read_beside(skill: &Skill, file: &str) -> Result<String, String> {
    let relative = Path::new(file);
    if !relative
        .components()
        .all(|part| matches!(part, Component::Normal(_) | Component::CurDir))
    {
        return Err(format!(
            "{file} is not a path inside the folder of skill {}",
            skill.name
        ));
    }
    let path = skill.folder().join(relative);
    let inside = match (path.canonicalize(), skill.folder().canonicalize()) {
        (Ok(path), Ok(folder)) => path.starts_with(folder),
        _ => false,
    };
    if !inside {
        return Err(format!("skill {} has no file {file}", skill.name));
    }
    let max = MAX_FILE_BYTES as u64;
    // A workspace's skill is the repository's: its files are read through the workspace
    // handle (no link out, no FIFO or device); the person's own as regular files.
    let read = match skill.source {
        CommandSource::Workspace => skill
            .folder()
            .ancestors()
            .find(|dir| dir.file_name().is_some_and(|name| name == ".coder"))
            .and_then(Path::parent)
            .map_or_else(
                || Err(std::io::Error::other("the skill is not in a workspace")),
                |workspace| crate::beneath::read_shipped(workspace, &path, max),
            ),
        _ => crate::bounded::read(&path, max).map(Some),
    };
    let bytes = read
        .map_err(|err| {
            if err.kind() == std::io::ErrorKind::FileTooLarge {
                format!(
                    "{} is larger than {MAX_FILE_BYTES} bytes; read it with `read` if it is in \
                     the workspace",
                    path.display()
                )
            } else {
                format!("{}: {err}", path.display())
            }
        })?
        .ok_or_else(|| format!("skill {} has no file {file}", skill.name))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The answer to a name no usable skill has: the names there are, and the problem of a
/// `SKILL.md` that could not be read.
fn unknown(name: &str, found: &[Skill], warnings: &[String]) -> String {
    let names: Vec<&str> = found.iter().map(|skill| skill.name.as_str()).collect();
    let mut text = if names.is_empty() {
        format!("no skill named {name}: no skills are available; go on without one")
    } else {
        format!(
            "no skill named {name}; the skills are: {}. Go on without one if none fits",
            names.join(", ")
        )
    };
    for warning in warnings {
        text.push_str(&format!("\n{warning}"));
    }
    text
}
