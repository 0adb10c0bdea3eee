//! The choices for a built-in command's argument, for a door's completion menu (`/mode
//! <Tab>` at the terminal): the modes, the permission presets, the models the provider is
//! likely to serve (the one in use first), the saved sessions of the workspace (newest
//! first), and the fixed words `/mcp` and `/diff` take.

use coder_protocol::{Mode, Preset};

use super::Session;
use crate::commands::ArgumentChoice;

impl Session {
    /// The choices for `/command`'s argument that start with `typed` (ignoring case), in
    /// the order a menu shows them; none for a command without choices.
    pub fn complete_argument(&self, command: &str, typed: &str) -> Vec<ArgumentChoice> {
        let choices = match command {
            "mode" => Mode::ALL
                .iter()
                .map(|mode| ArgumentChoice::word(mode.as_str()))
                .collect(),
            "permissions" => Preset::ALL
                .iter()
                .map(|preset| ArgumentChoice::word(preset.as_str()))
                .collect(),
            "model" => self.model_choices(),
            "resume" => self.session_choices(),
            "mcp" => vec![ArgumentChoice::word("reload")],
            "diff" => vec![ArgumentChoice::word("full")],
            _ => Vec::new(),
        };
        let typed = typed.to_lowercase();
        choices
            .into_iter()
            .filter(|choice| choice.value.to_lowercase().starts_with(&typed))
            .collect()
    }

    /// The model in use, the configured one when another, then the known models of the
    /// provider's wire format.
    fn model_choices(&self) -> Vec<ArgumentChoice> {
        let configured = self.config().model.clone();
        let mut choices = Vec::new();
        let mut offer = |name: &str, note: Option<&str>| {
            if !choices
                .iter()
                .any(|choice: &ArgumentChoice| choice.value == name)
            {
                choices.push(ArgumentChoice {
                    value: name.to_owned(),
                    note: note.map(str::to_owned),
                });
            }
        };
        let settings = self.model_settings();
        if let Some(settings) = &settings {
            offer(&settings.model, Some("in use"));
        }
        offer(&configured, Some("configured"));
        if let Some(settings) = &settings {
            for name in crate::model::offered_models(settings.provider.kind) {
                offer(name, None);
            }
        }
        choices
    }

    /// The workspace's saved sessions but this one, newest first, each with when it was
    /// saved and what it began with.
    fn session_choices(&self) -> Vec<ArgumentChoice> {
        let current = self.session_id();
        self.saved_sessions()
            .into_iter()
            .filter(|session| session.session_id != current)
            .map(|session| {
                let saved = session.saved_at.get(..16).unwrap_or(&session.saved_at);
                let note = match &session.title {
                    Some(title) => format!("{} · {title}", saved.replacen('T', " ", 1)),
                    None => saved.replacen('T', " ", 1),
                };
                ArgumentChoice {
                    value: session.session_id.to_string(),
                    note: Some(note),
                }
            })
            .collect()
    }
}
