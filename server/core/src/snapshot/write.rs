//! The snapshot as it is written: the root as a replayable request, then the other
//! conversations, each copied under its own lock only while it is written (a conversation
//! a resume has not read yet is written as it was read, [`super::lazy`]), then what they
//! share: every distinct system prompt and tool set once, in `systemPrompts` and
//! `toolSets`, which each conversation names by place (`systemPrompt`, `toolSet`).
//!
//! Every conversation is written with a system prompt and tools, so each one is a request
//! that can be replayed: those of its last task, those its saved session's file held (kept
//! whether the conversation was used since or not), or, for one that has sent nothing yet,
//! those its next task would send ([`LiveConversations::unsent`]).

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use coder_protocol::{ConversationId, SessionId};
use serde::Serialize;
use serde_json::value::RawValue;

use super::lazy::Slot;
use super::{ConversationSnapshot, VERSION, is_zero};
use crate::conversation::Conversation;
use crate::model::ToolSpec;
use crate::prompt::PromptShape;
use crate::sync::lock;

/// A snapshot of a session, ready to be written.
pub(crate) struct SnapshotFile {
    session_id: SessionId,
    /// RFC 3339.
    saved_at: String,
    /// The root, with its system prompt and tools of its own (seed 004: a replayable
    /// request at the top level).
    root: ConversationSnapshot,
    conversations: LiveConversations,
    /// The last line of the journal the snapshot holds.
    pub journal_through: u64,
}

impl SnapshotFile {
    pub fn new(
        session_id: SessionId,
        root: ConversationSnapshot,
        conversations: LiveConversations,
    ) -> Self {
        Self {
            session_id,
            saved_at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            root,
            conversations,
            journal_through: 0,
        }
    }

    pub fn session_id(&self) -> SessionId {
        self.session_id
    }

    /// Makes this the snapshot of a fork: session `fork`, with `conversation` cut before
    /// its history's message `at`.
    pub fn fork_as(&mut self, fork: SessionId, conversation: ConversationId, at: usize) {
        self.session_id = fork;
        if self.root.conversation_id == conversation {
            self.root.cut_before(at);
            return;
        }
        for entry in &mut self.conversations.conversations {
            let live = match entry {
                Entry::Live(live) => Some(live.clone()),
                Entry::Saved(slot) => match &*lock(slot) {
                    Slot::Live(live) => Some(live.clone()),
                    Slot::Saved(_) => None,
                },
                Entry::Cut(..) => None,
            };
            if let Some(live) = live
                && lock(&live).id == conversation
            {
                *entry = Entry::Cut(live, at);
            }
        }
    }
}

/// The session's other conversations as they are written, oldest first.
pub(crate) struct LiveConversations {
    /// The session's model, for conversations without one of their own.
    pub model: String,
    pub conversations: Vec<Entry>,
    /// What the next task of each conversation without a prompt of its own would send
    /// besides its history, taken when the snapshot was: it is written for it.
    pub unsent: HashMap<ConversationId, Arc<PromptShape>>,
}

/// One of the other conversations.
pub(crate) enum Entry {
    Live(Arc<Mutex<Conversation>>),
    /// One a resume has not read yet (or read since: then its slot says where it is).
    Saved(Arc<Mutex<Slot>>),
    /// A live one cut before its history's message at this place (a fork's).
    Cut(Arc<Mutex<Conversation>>, usize),
}

impl Serialize for SnapshotFile {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        /// The fields in the order they are written: the tables after the conversations,
        /// which fill them.
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Out<'a> {
            version: u32,
            session_id: SessionId,
            saved_at: &'a str,
            #[serde(flatten)]
            root: &'a ConversationSnapshot,
            conversations: Conversations<'a>,
            system_prompts: SystemPrompts<'a>,
            tool_sets: ToolSets<'a>,
            #[serde(skip_serializing_if = "is_zero")]
            journal_through: u64,
        }
        let shared = RefCell::new(Shared::default());
        Out {
            version: VERSION,
            session_id: self.session_id,
            saved_at: &self.saved_at,
            root: &self.root,
            conversations: Conversations {
                live: &self.conversations,
                shared: &shared,
            },
            system_prompts: SystemPrompts(&shared),
            tool_sets: ToolSets(&shared),
            journal_through: self.journal_through,
        }
        .serialize(serializer)
    }
}

/// What the conversations written so far share, each distinct one once.
#[derive(Default)]
struct Shared {
    /// The places of the shapes met, by their address (the shapes are held in `held`, so
    /// an address is never reused meanwhile).
    by_shape: HashMap<usize, (usize, usize)>,
    held: Vec<Arc<PromptShape>>,
    /// The shapes whose system prompts make `systemPrompts`, in order.
    systems: Vec<Arc<PromptShape>>,
    /// The places in `systems` of the prompts of each hash.
    systems_by_hash: HashMap<u64, Vec<usize>>,
    /// The shapes whose tools make `toolSets`, in order.
    tool_sets: Vec<Arc<PromptShape>>,
}

impl Shared {
    /// The places of `shape`'s system prompt and tools in the tables, added when new.
    fn place(&mut self, shape: &Arc<PromptShape>) -> (usize, usize) {
        let address = Arc::as_ptr(shape) as usize;
        if let Some(places) = self.by_shape.get(&address) {
            return *places;
        }
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        shape.system.hash(&mut hasher);
        let hash = hasher.finish();
        let same_hash = self.systems_by_hash.entry(hash).or_default();
        let system = match same_hash
            .iter()
            .find(|at| self.systems[**at].system == shape.system)
        {
            Some(at) => *at,
            None => {
                self.systems.push(shape.clone());
                same_hash.push(self.systems.len() - 1);
                self.systems.len() - 1
            }
        };
        let tools = match self
            .tool_sets
            .iter()
            .position(|known| same_tools(&known.tools, &shape.tools))
        {
            Some(at) => at,
            None => {
                self.tool_sets.push(shape.clone());
                self.tool_sets.len() - 1
            }
        };
        self.held.push(shape.clone());
        self.by_shape.insert(address, (system, tools));
        (system, tools)
    }
}

fn same_tools(a: &[ToolSpec], b: &[ToolSpec]) -> bool {
    std::ptr::eq(a, b) || a == b
}

struct Conversations<'a> {
    live: &'a LiveConversations,
    shared: &'a RefCell<Shared>,
}

impl Serialize for Conversations<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.live.conversations.iter().map(|entry| Written {
            entry,
            model: &self.live.model,
            unsent: &self.live.unsent,
            shared: self.shared,
        }))
    }
}

/// One conversation as it is written.
struct Written<'a> {
    entry: &'a Entry,
    model: &'a str,
    unsent: &'a HashMap<ConversationId, Arc<PromptShape>>,
    shared: &'a RefCell<Shared>,
}

impl Serialize for Written<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut cut = None;
        let live = match self.entry {
            Entry::Live(conversation) => conversation.clone(),
            Entry::Cut(conversation, at) => {
                cut = Some(*at);
                conversation.clone()
            }
            Entry::Saved(slot) => {
                let slot = lock(slot);
                match &*slot {
                    // Written as it was read, under the slot's lock: a first use waits.
                    Slot::Saved(saved) => {
                        let places = saved
                            .prompt()
                            .or_else(|| self.unsent.get(&saved.id()))
                            .map(|shape| self.shared.borrow_mut().place(shape));
                        return saved.written(places).serialize(serializer);
                    }
                    Slot::Live(conversation) => conversation.clone(),
                }
            }
        };
        let snapshot = {
            let conversation = lock(&live);
            let mut snapshot = ConversationSnapshot::without_prompt(&conversation, self.model);
            let shape = conversation
                .prompt
                .as_ref()
                .or_else(|| self.unsent.get(&conversation.id));
            if let Some(shape) = shape {
                let (system, tools) = self.shared.borrow_mut().place(shape);
                snapshot.system_prompt = Some(system);
                snapshot.tool_set = Some(tools);
            }
            if let Some(at) = cut {
                snapshot.cut_before(at);
            }
            snapshot
        };
        snapshot.serialize(serializer)
    }
}

struct SystemPrompts<'a>(&'a RefCell<Shared>);

impl Serialize for SystemPrompts<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let shared = self.0.borrow();
        serializer.collect_seq(shared.systems.iter().map(|shape| shape.system.as_str()))
    }
}

struct ToolSets<'a>(&'a RefCell<Shared>);

impl Serialize for ToolSets<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let shared = self.0.borrow();
        serializer.collect_seq(shared.tool_sets.iter().map(|shape| {
            shape
                .tools
                .iter()
                .map(|spec| ToolOut {
                    kind: "function",
                    function: FunctionOut {
                        name: &spec.name,
                        description: &spec.description,
                        parameters: spec.parameters.json(),
                    },
                })
                .collect::<Vec<_>>()
        }))
    }
}

/// A [`super::ToolDefinition`] written from the tool's own spec, its schema's JSON as it is.
#[derive(Serialize)]
struct ToolOut<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionOut<'a>,
}

#[derive(Serialize)]
struct FunctionOut<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a RawValue,
}
