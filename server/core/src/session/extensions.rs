//! What the workspace and the person add to a session as files: custom slash commands
//! (expanded here, before input is queued) and skills (listed in the system prompt, loaded
//! by the `skill` tool). Both are read from `.coder/` in the workspace, then from the folder
//! of the user configuration file; the workspace's definition of a name wins.

use std::path::PathBuf;

use coder_protocol::InputItem;
use coder_protocol::methods::{CommandInfo, CommandSource, SkillInfo};

use super::Session;
use crate::commands::slash_command;
use crate::config::Config;
use crate::error::EngineError;

/// The folders custom commands and skills are read from, first wins: the workspace's
/// `.coder/`, then the folder holding the user configuration file.
pub(super) fn folders(config: &Config) -> Vec<(CommandSource, PathBuf)> {
    let mut folders = vec![(CommandSource::Workspace, config.workspace.join(".coder"))];
    folders.extend(
        user_folder(config)
            .into_iter()
            .map(|folder| (CommandSource::User, folder)),
    );
    folders
}

/// The folder holding the user configuration file.
pub(super) fn user_folder(config: &Config) -> Option<PathBuf> {
    config
        .user_file
        .as_deref()
        .and_then(std::path::Path::parent)
        .map(std::path::Path::to_path_buf)
}

impl Session {
    /// The input with a slash command expanded, and the model the command asks for, from
    /// the commands the session holds (read again when their files change). An input
    /// whose first item is a slash command no one defined is refused (`invalid_params`,
    /// with the known names): it never reaches the model.
    pub(super) fn expand_command(
        &self,
        mut items: Vec<InputItem>,
    ) -> Result<(Vec<InputItem>, Option<String>), EngineError> {
        let Some(InputItem::Text { text }) = items.first_mut() else {
            return Ok((items, None));
        };
        let Some((name, args)) = slash_command(text) else {
            return Ok((items, None));
        };
        if crate::commands::is_built_in(name) {
            // `Session::input` runs a built-in typed alone; here it came with other items, or
            // through the API that only queues input.
            return Err(EngineError::invalid_params(format!(
                "/{name} is a built-in command: send it alone, as text, or run it with the command API"
            )));
        }
        let files = self.workspace_files();
        let commands = &files.commands;
        let Some(command) = commands.get(name) else {
            return Err(EngineError::invalid_params(commands.refusal(name)));
        };
        let model = command.model.clone();
        let limit = self.config().max_prompt_bytes;
        *text = crate::commands::expand_within(&command.body, args, limit).ok_or_else(|| {
            EngineError::new(
                crate::error::ErrorKind::LimitExceeded,
                format!(
                    "/{name} expands to a prompt over the limit of {limit} bytes (maxPromptBytes)"
                ),
            )
        })?;
        Ok((items, model))
    }

    /// The built-in commands, then the custom ones, as the session holds them.
    pub fn commands(&self) -> Vec<CommandInfo> {
        self.workspace_files().commands.infos()
    }

    /// The rules files the system prompt holds, as the session holds them.
    pub fn rules(&self) -> Vec<coder_protocol::methods::RuleInfo> {
        self.workspace_files()
            .rules
            .files
            .iter()
            .map(|file| coder_protocol::methods::RuleInfo {
                path: file.path.display().to_string(),
                size: file.size,
                truncated: file.truncated,
            })
            .collect()
    }

    /// The skills the system prompt lists, as the session holds them.
    pub fn skills(&self) -> Vec<SkillInfo> {
        self.workspace_files()
            .skills
            .iter()
            .map(|skill| skill.info())
            .collect()
    }
}
