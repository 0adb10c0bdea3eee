//! A saved session read lazily: a resume reads the root whole and, of every other
//! conversation, its small state (id, mode, context, usage, todos), keeping its messages
//! and archive as they were written, one raw JSON value each, until the conversation is
//! first used ([`SavedConversation::read`]). The system prompt and tools of each (its own in
//! a version 1 file, named in the tables `systemPrompts` and `toolSets` since version 2) are
//! kept as its prompt, one shared copy for the conversations that share them, so the file
//! written again still holds them, whether the conversation was used or not.
//!
//! The file is checked as JSON whole when it is read; a conversation's messages that are
//! JSON but not messages are refused when that conversation is first used, by name, and
//! are written back as they were meanwhile, so nothing of the file is lost.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use coder_protocol::{ConversationId, Role, SessionId};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::{
    ConversationSnapshot, ToolDefinition, check_version, openai_form, read_bytes, shape_of,
};
use crate::beneath::OwnDir;
use crate::conversation::Conversation;
use crate::error::EngineError;
use crate::prompt::PromptShape;

/// A conversation of a saved session whose messages are not read yet.
#[derive(Debug)]
pub(crate) struct SavedConversation {
    /// Everything but its messages, tools and archive.
    state: ConversationSnapshot,
    /// Its messages as written, without a leading system prompt.
    messages: Vec<Box<RawValue>>,
    /// Its archived segments as written.
    archived: Option<Box<RawValue>>,
    /// The system prompt and tools the file holds for it; `None` when it holds none.
    prompt: Option<Arc<PromptShape>>,
}

/// A conversation as the file holds it, its messages and archive kept raw.
#[derive(Deserialize)]
struct OnDisk {
    #[serde(default)]
    messages: Vec<Box<RawValue>>,
    #[serde(default)]
    archived: Option<Box<RawValue>>,
    /// Its own tools: a version 1 file's (empty since version 2, which names them).
    #[serde(default)]
    tools: Vec<ToolDefinition>,
    #[serde(flatten)]
    state: ConversationSnapshot,
}

/// A version 1 conversation's first message, when it is the system prompt.
#[derive(Deserialize)]
struct SystemOf {
    role: Role,
    #[serde(default)]
    content: Option<String>,
}

impl<'de> Deserialize<'de> for SavedConversation {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let OnDisk {
            mut messages,
            archived,
            tools,
            state,
        } = OnDisk::deserialize(deserializer)?;
        // A version 1 file starts each conversation's messages with its system prompt,
        // which is kept with its tools as its prompt, apart from its history.
        let system = messages
            .first()
            .and_then(|first| serde_json::from_str::<SystemOf>(first.get()).ok())
            .filter(|first| first.role == Role::System);
        let mut prompt = None;
        if let Some(system) = system {
            messages.remove(0);
            prompt = Some(shape_of(system.content.unwrap_or_default(), &tools));
        }
        Ok(Self {
            state,
            messages,
            archived,
            prompt,
        })
    }
}

impl SavedConversation {
    pub fn id(&self) -> ConversationId {
        self.state.conversation_id
    }

    /// Its state, without messages.
    pub fn state(&self) -> &ConversationSnapshot {
        &self.state
    }

    /// Records `now` (RFC 3339) as when it was last active, when the file does not say.
    pub fn mark_active_if_unknown(&mut self, now: &str) {
        self.state
            .last_active_at
            .get_or_insert_with(|| now.to_owned());
    }

    /// How many messages its history holds.
    pub fn message_count(&self) -> usize {
        self.messages.len()
    }

    /// The system prompt and tools the file holds for it.
    pub fn prompt(&self) -> Option<&Arc<PromptShape>> {
        self.prompt.as_ref()
    }

    /// Takes its system prompt and tools from the file's tables, where a version 2 file
    /// names them (`shapes` holds the shape of each pair of places met so far). A place
    /// past a table's end names nothing: the conversation is then written with what its
    /// next task would send.
    fn take_prompt_from(
        &mut self,
        systems: &[String],
        tool_sets: &[Vec<ToolDefinition>],
        shapes: &mut HashMap<(usize, usize), Arc<PromptShape>>,
    ) {
        let (Some(system), Some(tools)) =
            (self.state.system_prompt.take(), self.state.tool_set.take())
        else {
            return;
        };
        let (Some(text), Some(definitions)) = (systems.get(system), tool_sets.get(tools)) else {
            return;
        };
        let shape = shapes
            .entry((system, tools))
            .or_insert_with(|| shape_of(text.clone(), definitions));
        self.prompt = Some(shape.clone());
    }

    /// The conversation read whole, its history as it held it
    /// ([`ConversationSnapshot::take_written_history`]).
    pub fn read(&self) -> Result<ConversationSnapshot, serde_json::Error> {
        let messages = openai_form::from_raw(&self.messages)?;
        let archived = match &self.archived {
            Some(raw) => serde_json::from_str(raw.get())?,
            None => Vec::new(),
        };
        let mut read = ConversationSnapshot {
            messages,
            archived,
            ..self.state.clone()
        };
        read.take_written_history();
        read.prompt = self.prompt.clone();
        Ok(read)
    }

    /// It as it is written again: its state, its messages and archive as written, and its
    /// system prompt and tools named by their `places` in the file's tables.
    pub fn written(&self, places: Option<(usize, usize)>) -> WrittenAgain<'_> {
        WrittenAgain {
            saved: self,
            places,
        }
    }
}

/// A conversation not read yet, as it is written again.
pub(crate) struct WrittenAgain<'a> {
    saved: &'a SavedConversation,
    places: Option<(usize, usize)>,
}

impl Serialize for WrittenAgain<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeMap};
        let saved = self.saved;
        let serde_json::Value::Object(state) =
            serde_json::to_value(&saved.state).map_err(S::Error::custom)?
        else {
            return Err(S::Error::custom("a conversation's state is an object"));
        };
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in &state {
            if !matches!(
                key.as_str(),
                "messages" | "archived" | "systemPrompt" | "toolSet"
            ) {
                map.serialize_entry(key, value)?;
            }
        }
        if let Some((system, tools)) = self.places {
            map.serialize_entry("systemPrompt", &system)?;
            map.serialize_entry("toolSet", &tools)?;
        }
        map.serialize_entry("messages", &saved.messages)?;
        if let Some(archived) = &saved.archived {
            map.serialize_entry("archived", archived)?;
        }
        map.end()
    }
}

/// Where a conversation a resume did not read is: still as read, or read since (its slot
/// then hands out the live conversation).
#[derive(Debug)]
pub(crate) enum Slot {
    Saved(Box<SavedConversation>),
    Live(Arc<Mutex<Conversation>>),
}

/// A conversation of a saved session while it is resumed: read, or not yet.
#[derive(Debug)]
pub(crate) enum Held {
    Read(ConversationSnapshot),
    Saved(SavedConversation),
}

impl Held {
    pub fn id(&self) -> ConversationId {
        match self {
            Self::Read(read) => read.conversation_id,
            Self::Saved(saved) => saved.id(),
        }
    }

    /// The conversation, read now if it was not.
    pub fn read(&mut self) -> Result<&mut ConversationSnapshot, serde_json::Error> {
        if let Self::Saved(saved) = self {
            *self = Self::Read(saved.read()?);
        }
        match self {
            Self::Read(read) => Ok(read),
            Self::Saved(_) => Err(serde::de::Error::custom("the conversation was not read")),
        }
    }
}

/// A session's snapshot as a resume reads it.
#[derive(Debug)]
pub(crate) struct SavedSession {
    pub root: ConversationId,
    /// The root (read, its history as it held it) first, then the others, oldest first.
    pub conversations: Vec<Held>,
    pub journal_through: u64,
    /// The file's size.
    pub bytes: u64,
    /// The file is in the current form ([`super::VERSION`]); an older one is written again.
    pub current_form: bool,
}

/// The file as a resume reads it. The session's id and time are left to the listing.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LazyFile {
    version: u32,
    #[serde(default)]
    conversations: Vec<SavedConversation>,
    #[serde(default)]
    system_prompts: Vec<String>,
    #[serde(default)]
    tool_sets: Vec<Vec<ToolDefinition>>,
    #[serde(default)]
    journal_through: u64,
    #[serde(flatten)]
    root: ConversationSnapshot,
}

/// Reads the snapshot of `session` from `dir` (`None`: the folder is missing), lazily.
pub(crate) fn read(dir: Option<&OwnDir>, session: SessionId) -> Result<SavedSession, EngineError> {
    let (bytes, shown) = read_bytes(dir, session)?;
    let file: LazyFile =
        serde_json::from_slice(&bytes).map_err(|err| not_a_snapshot(&shown, err))?;
    check_version(file.version, &shown)?;
    let mut root = file.root;
    root.take_written_history();
    let mut shapes = HashMap::new();
    let mut conversations = Vec::with_capacity(1 + file.conversations.len());
    conversations.push(Held::Read(root));
    conversations.extend(file.conversations.into_iter().map(|mut saved| {
        saved.take_prompt_from(&file.system_prompts, &file.tool_sets, &mut shapes);
        Held::Saved(saved)
    }));
    Ok(SavedSession {
        root: conversations[0].id(),
        conversations,
        journal_through: file.journal_through,
        bytes: bytes.len() as u64,
        current_form: file.version == super::VERSION,
    })
}

fn not_a_snapshot(shown: &Path, err: serde_json::Error) -> EngineError {
    EngineError::invalid_params(format!(
        "{} is not a session snapshot: {err}",
        shown.display()
    ))
}
