//! `skill`: loads a skill's instructions (the body of its `SKILL.md`) by name, and names the
//! files beside it; with `file`, returns one of those files. Read-only, never asks. The
//! skills are read from disk at each call, from the workspace's `.coder/skills/` and the
//! user-level folder's `skills/`, so the answer is what the files hold now.

use std::path::{Component, Path, PathBuf};

use async_trait::async_trait;
use coder_protocol::methods::CommandSource;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolOutput};
use crate::skills::{self, Skill};

/// The largest file beside a skill the tool returns whole.
const MAX_FILE_BYTES: usize = 256 * 1024;

/// The `skill` tool; `user_folder` is the user-level folder (beside the user configuration
/// file) whose `skills/` it reads after the workspace's.
#[derive(Debug, Default)]
pub struct SkillTool {
    user_folder: Option<PathBuf>,
}

impl SkillTool {
    pub fn new(user_folder: Option<PathBuf>) -> Self {
        Self { user_folder }
    }
}

#[derive(Deserialize)]
struct Args {
    name: String,
    file: Option<String>,
}

#[async_trait]
impl Tool for SkillTool {
    fn name(&self) -> &str {
        "skill"
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

    fn is_read_only(&self) -> bool {
        true
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, String> {
        let args: Args = serde_json::from_value(input).map_err(|err| err.to_string())?;
        let mut folders = vec![(CommandSource::Workspace, ctx.workspace.join(".coder"))];
        folders.extend(
            self.user_folder
                .iter()
                .map(|folder| (CommandSource::User, folder.clone())),
        );
        let (found, warnings) = skills::load(&folders);
        let Some(skill) = found.iter().find(|skill| skill.name == args.name) else {
            return Err(unknown(&args.name, &found, &warnings));
        };
        match args.file {
            Some(file) => read_beside(skill, &file).map(ToolOutput::text),
            None => loaded(skill).map(ToolOutput::text),
        }
    }
}

/// The skill's body, then the files beside it.
fn loaded(skill: &Skill) -> Result<String, String> {
    let body = skills::body(skill).map_err(|problem| {
        format!(
            "skill {} cannot be loaded ({}: {problem}); go on without it",
            skill.name,
            skill.path.display()
        )
    })?;
    let mut text = format!(
        "Skill {} ({})\n\n{}\n",
        skill.name,
        skill.path.display(),
        body.trim()
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
    Ok(text)
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
    if !inside || !path.is_file() {
        return Err(format!("skill {} has no file {file}", skill.name));
    }
    let bytes = std::fs::read(&path).map_err(|err| format!("{}: {err}", path.display()))?;
    if bytes.len() > MAX_FILE_BYTES {
        return Err(format!(
            "{} is larger than {MAX_FILE_BYTES} bytes; read it with `read` if it is in the \
             workspace",
            path.display()
        ));
    }
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
