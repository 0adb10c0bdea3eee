//! A saved session read lazily: a resume reads the root whole and, of every other
//! conversation, its small state (id, mode, context, usage, todos), keeping its messages
//! and archive as they were written, one raw JSON value each, until the conversation is
//! first used ([`SavedConversation::read`]). What the conversations share (`systemPrompts`,
//! `toolSets`) is skipped: a resumed conversation's next task builds its own prompt.
//!
//! The file is checked as JSON whole when it is read; a conversation's messages that are
//! JSON but not messages are refused when that conversation is first used, by name, and
//! are written back as they were meanwhile, so nothing of the file is lost.

use std::path::Path;
use std::sync::{Arc, Mutex};

use coder_protocol::{ConversationId, Role, SessionId};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::{ConversationSnapshot, check_version, openai_form, read_bytes};
use crate::beneath::OwnDir;
use crate::conversation::Conversation;
use crate::error::EngineError;

/// A conversation of a saved session whose messages are not read yet.
#[derive(Debug)]
pub(crate) struct SavedConversation {
    /// Everything but its messages, tools and archive.
    state: ConversationSnapshot,
    /// Its messages as written, without a leading system prompt.
    messages: Vec<Box<RawValue>>,
    /// Its archived segments as written.
    archived: Option<Box<RawValue>>,
}

/// A conversation as the file holds it, its messages and archive kept raw. Its tools are
/// skipped without being kept.
#[derive(Deserialize)]
struct OnDisk {
    #[serde(default)]
    messages: Vec<Box<RawValue>>,
    #[serde(default)]
    archived: Option<Box<RawValue>>,
    #[serde(default)]
    #[allow(dead_code)]
    tools: Option<IgnoredAny>,
    #[serde(flatten)]
    state: ConversationSnapshot,
}

/// What a message is, read without its content.
#[derive(Deserialize)]
struct RoleOf {
    role: Role,
}

impl<'de> Deserialize<'de> for SavedConversation {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let OnDisk {
            mut messages,
            archived,
            tools: _,
            state,
        } = OnDisk::deserialize(deserializer)?;
        // A version 1 file starts each conversation's messages with its system prompt,
        // which each task builds again: it is not kept.
        if messages.first().is_some_and(|first| {
            serde_json::from_str::<RoleOf>(first.get()).is_ok_and(|m| m.role == Role::System)
        }) {
            messages.remove(0);
        }
        Ok(Self {
            state,
            messages,
            archived,
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
        Ok(read)
    }
}

impl Serialize for SavedConversation {
    /// As it was read: its state, and its messages and archive as written.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeMap};
        let serde_json::Value::Object(state) =
            serde_json::to_value(&self.state).map_err(S::Error::custom)?
        else {
            return Err(S::Error::custom("a conversation's state is an object"));
        };
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in &state {
            if key != "messages" && key != "archived" {
                map.serialize_entry(key, value)?;
            }
        }
        map.serialize_entry("messages", &self.messages)?;
        if let Some(archived) = &self.archived {
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
}

/// The file as a resume reads it. The session's id and time are left to the listing.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LazyFile {
    version: u32,
    #[serde(default)]
    conversations: Vec<SavedConversation>,
    #[serde(default)]
    #[allow(dead_code)]
    system_prompts: Option<IgnoredAny>,
    #[serde(default)]
    #[allow(dead_code)]
    tool_sets: Option<IgnoredAny>,
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
    let mut conversations = Vec::with_capacity(1 + file.conversations.len());
    conversations.push(Held::Read(root));
    conversations.extend(file.conversations.into_iter().map(Held::Saved));
    Ok(SavedSession {
        root: conversations[0].id(),
        conversations,
        journal_through: file.journal_through,
        bytes: bytes.len() as u64,
    })
}

fn not_a_snapshot(shown: &Path, err: serde_json::Error) -> EngineError {
    EngineError::invalid_params(format!(
        "{} is not a session snapshot: {err}",
        shown.display()
    ))
}
