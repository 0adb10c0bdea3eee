//! The session's one mutable state, behind one lock ([`super::Session`] documents the order).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use coder_protocol::{ConversationId, SessionId};

use super::driver::Queue;
use crate::conversation::Conversation;
use crate::documents::Documents;
use crate::model::ActiveModel;
use crate::snapshot::lazy::Slot;
use crate::sync::lock;

/// What changes while a session runs. Never held across an `.await` nor while emitting.
pub(crate) struct State {
    /// Names the snapshot; a resume takes over the resumed session's id.
    pub session_id: SessionId,
    pub root: ConversationId,
    /// Set once the root is spoken for: a front door's `conversation/create` took it, its
    /// mode was set, or a saved session was resumed into it. A create never replaces it then.
    pub root_taken: bool,
    /// Each conversation has a lock of its own, taken after this one (never before).
    pub conversations: HashMap<ConversationId, Arc<Mutex<Conversation>>>,
    /// The conversations of a resumed session not used yet, as its snapshot holds them
    /// (read when first used, [`crate::snapshot::lazy`]). A slot's lock is taken before
    /// this one, never after.
    pub saved: HashMap<ConversationId, Arc<Mutex<Slot>>>,
    /// The task plans waiting, and the running task's control.
    pub queue: Queue,
    /// The session's model; conversations may name another of the same provider. `None`
    /// until a provider is configured: tasks cannot start then.
    pub model: Option<Arc<ActiveModel>>,
    /// The editor's open files, when the session runs behind one; tasks take it when they
    /// start.
    pub documents: Option<Arc<dyn Documents>>,
    /// What the sandbox does not enforce on this machine (or that there is none), until
    /// the session's first task has said it, once.
    pub sandbox_warning: Option<String>,
    /// Configuration mistakes not reported yet: the first task reports them, when every
    /// front door is listening (events before a subscription are not kept).
    pub config_warnings: Vec<String>,
    /// Models whose context window was guessed (not configured, not in the table of known
    /// models) and said so: each is warned about once.
    pub guessed_windows: HashSet<String>,
}

impl State {
    /// A fresh session's state around its root conversation.
    pub fn new(root: Conversation) -> Self {
        let root_id = root.id;
        Self {
            session_id: SessionId::new(),
            root: root_id,
            root_taken: false,
            conversations: HashMap::from([(root_id, Arc::new(Mutex::new(root)))]),
            saved: HashMap::new(),
            queue: Queue::default(),
            model: None,
            documents: None,
            sandbox_warning: None,
            config_warnings: Vec::new(),
            guessed_windows: HashSet::new(),
        }
    }

    /// How many conversations the session holds, read or not.
    pub fn conversation_count(&self) -> usize {
        self.conversations.len() + self.saved.len()
    }

    /// Whether the session holds `id`, read or not.
    pub fn holds(&self, id: ConversationId) -> bool {
        self.conversations.contains_key(&id) || self.saved.contains_key(&id)
    }

    /// Whether the session is as it started: the root conversation alone, not taken,
    /// nothing sent.
    pub fn untouched(&self) -> bool {
        !self.root_taken && self.unused()
    }

    /// Whether nothing was sent in the session: the root conversation alone, with an empty
    /// history, nothing queued (its mode or model may have been set).
    pub fn unused(&self) -> bool {
        self.conversations.len() == 1
            && self.saved.is_empty()
            && self.queue.is_empty()
            && self
                .conversations
                .values()
                .all(|conversation| lock(conversation).history.is_empty())
    }
}
