//! The session's conversations: opening, listing, reading, destroying, modes, and the
//! snapshot that saves and resumes them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use coder_protocol::{
    AbortReason, ChatMessage, ConversationId, ConversationSummary, EventMsg, HistoryEntry, Mode,
    ModeChangeReason, SessionId, ShellMode,
};

use super::{Session, narrower};
use crate::conversation::{
    ContextChange, Conversation, ConversationSpec, UNFINISHED_CALL_RESULT, close_unanswered_calls,
    history_entries, read_base_instructions,
};
use crate::error::{EngineError, ErrorKind};
use crate::snapshot::lazy::{Held, SavedConversation, Slot};
use crate::snapshot::write::{Entry, LiveConversations, SnapshotFile};
use crate::snapshot::{self, ConversationSnapshot, Holds, Save};
use crate::sync::lock;
use crate::tool_selection::{ToolSelection, session_shell};

/// Who opens a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opener {
    /// The engine API.
    Engine,
    /// A front door's `conversation/create`: the first one takes the root.
    FrontDoor,
    /// A conversation tool called in this conversation.
    Conversation(ConversationId),
}

impl Session {
    pub fn session_id(&self) -> SessionId {
        self.state().session_id
    }

    pub fn root(&self) -> ConversationId {
        self.state().root
    }

    pub fn is_root(&self, id: ConversationId) -> bool {
        self.state().root == id
    }

    pub fn snapshot_path(&self) -> Option<std::path::PathBuf> {
        self.services.saver.path(self.session_id())
    }

    /// A conversation of the session; one a resume has not read yet is read now.
    pub fn conversation(
        &self,
        id: ConversationId,
    ) -> Result<Arc<Mutex<Conversation>>, EngineError> {
        let slot = {
            let state = self.state();
            if let Some(conversation) = state.conversations.get(&id) {
                return Ok(conversation.clone());
            }
            state
                .saved
                .get(&id)
                .cloned()
                .ok_or_else(|| EngineError::unknown_conversation(id))?
        };
        self.read_saved_conversation(id, &slot)
    }

    /// Reads a conversation a resume kept as it was written, on its first use, outside
    /// the session's lock: others asking for it meanwhile wait on its slot. A history that
    /// cannot be read is refused by name and kept as it was (it is written back as read).
    fn read_saved_conversation(
        &self,
        id: ConversationId,
        slot: &Mutex<Slot>,
    ) -> Result<Arc<Mutex<Conversation>>, EngineError> {
        let mut slot = lock(slot);
        let saved = match &*slot {
            Slot::Live(conversation) => return Ok(conversation.clone()),
            Slot::Saved(saved) => saved,
        };
        let read = saved.read().map_err(|err| {
            EngineError::invalid_params(format!(
                "conversation {id} of the resumed session cannot be read from its snapshot: {err}"
            ))
        })?;
        let (conversation, taken) = self.take_up(read);
        let conversation = Arc::new(Mutex::new(conversation));
        {
            let mut state = self.state();
            // Destroyed meanwhile: it is gone.
            if state.saved.remove(&id).is_none() {
                return Err(EngineError::unknown_conversation(id));
            }
            state.conversations.insert(id, conversation.clone());
        }
        *slot = Slot::Live(conversation.clone());
        drop(slot);
        self.warn_taken_up(id, taken);
        Ok(conversation)
    }

    /// Opens a conversation from `spec`; opened by a conversation tool, what `spec` leaves
    /// out is inherited from the calling conversation, otherwise from the defaults.
    pub fn open_conversation(
        &self,
        spec: ConversationSpec,
        opener: Opener,
    ) -> Result<ConversationId, EngineError> {
        let config = self.config();
        let config = &*config;
        let ceiling = config.mode;
        let session_shell = self.shell_ceiling();
        let (spec, inherited_mode, inherited_tools, shell_ceiling) = match opener {
            Opener::Conversation(parent) => {
                let parent = self.conversation(parent)?;
                let parent = lock(&parent);
                let tools = parent.context.tools;
                (
                    spec.inherit(&parent.context),
                    parent.mode,
                    tools,
                    tools.shell(session_shell),
                )
            }
            Opener::Engine | Opener::FrontDoor => {
                (spec, ceiling, ToolSelection::default(), session_shell)
            }
        };
        let (spec, deprecation) = spec.resolve(&config.workspace)?;
        let asked = spec.tools_prefs.unwrap_or_default();
        let (tools, notes) = ToolSelection::resolve(inherited_tools, &asked, shell_ceiling)?;
        self.check_allowlist(spec.mcp_allowlist.as_deref())?;
        let wanted = spec.mode.unwrap_or(inherited_mode);
        let mode = narrower(wanted, ceiling);
        let refused_tools = refused_tools(&asked, &config.disabled_tools);
        let mut conversation = Conversation::new(spec, mode);
        conversation.context.tools = tools;
        // Its MCP view is built now, from the servers as they are (seed 003); a task
        // builds it again when their tools changed since.
        conversation.context.mcp_view.rebuild(&self.services.mcp);
        conversation.worker = matches!(opener, Opener::Conversation(_));
        let mut state = self.state();
        if opener == Opener::FrontDoor && state.untouched() {
            // The first conversation a front door creates is the root, shaped by its spec.
            conversation.id = state.root;
            state.root_taken = true;
        }
        let id = conversation.id;
        let limit = config.max_conversations;
        if !state.holds(id) && state.conversation_count() >= limit {
            return Err(EngineError::too_many_conversations(limit));
        }
        state
            .conversations
            .insert(id, Arc::new(Mutex::new(conversation)));
        drop(state);
        let hub = &self.services.hub;
        if let Some(message) = deprecation {
            tracing::warn!("{message}");
            hub.emit(id, None, EventMsg::Warning { message });
        }
        for message in notes {
            hub.emit(id, None, EventMsg::Warning { message });
        }
        self.warn_refused_tools(id, &refused_tools);
        self.warn_if_clamped(id, wanted, mode);
        Ok(id)
    }

    /// Says, as a `warning` of `id`, that each of `tools` stays hidden although asked for.
    pub(super) fn warn_refused_tools(&self, id: ConversationId, tools: &[&str]) {
        for tool in tools {
            self.services.hub.emit(
                id,
                None,
                EventMsg::Warning {
                    message: format!(
                        "the conversation asks for `{tool}`, which this session's configuration \
                         disables (tools.disabled); a conversation may only narrow the session's \
                         tools, so `{tool}` stays hidden"
                    ),
                },
            );
        }
    }

    /// Changes a conversation's context (see [`crate::Engine::set_context`]): everything is
    /// checked first, then applied at once.
    pub fn set_context(
        &self,
        id: ConversationId,
        change: ContextChange,
    ) -> Result<(), EngineError> {
        let conversation = self.conversation(id)?;
        let config = self.config();
        let mut base = change.base_instructions;
        if let Some(file) = &change.base_instructions_file {
            if base.is_some() {
                return Err(EngineError::invalid_params(
                    "base instructions text and file are mutually exclusive; give one",
                ));
            }
            base = Some(Some(read_base_instructions(&config.workspace, file)?));
        }
        let mut deprecation = None;
        let allowlist = match change.mcp_allowlist {
            Some(Some(given)) => {
                let normalised = crate::mcp::allowlist::normalise(given)
                    .map_err(|refusal| EngineError::invalid_params(refusal.to_string()))?;
                self.check_allowlist(Some(&normalised.names))?;
                deprecation = normalised.deprecation();
                Some(Some(normalised.names))
            }
            other => other,
        };
        // Tool preferences resolve as at creation by a front door: a key left out keeps the
        // conversation's current choice, and the shell narrows to what the session gives.
        let tools = match &change.tools_prefs {
            Some(asked) => {
                let current = lock(&conversation).context.tools;
                let (tools, notes) = ToolSelection::resolve(current, asked, self.shell_ceiling())?;
                Some((tools, notes, refused_tools(asked, &config.disabled_tools)))
            }
            None => None,
        };
        let mcp = &self.services.mcp;
        {
            // Under the session's lock, so no task of the conversation starts meanwhile:
            // whether its history may take the user instructions now is decided once.
            let state = self.state();
            let held = state.queue.holds_history_of(id);
            let mut conversation = lock(&conversation);
            let context = &mut conversation.context;
            if let Some(base) = base {
                context.base_instructions = base;
            }
            if let Some((tools, _, _)) = &tools {
                context.tools = *tools;
            }
            match allowlist {
                Some(allowlist) => context.mcp_view.set_allowlist(mcp, allowlist),
                None if change.refresh_mcp_view => context.mcp_view.rebuild(mcp),
                None => {}
            }
            if let Some(text) = change.user_instructions {
                context.user_instructions = Some(text.clone());
                if held {
                    conversation.pending_instructions = Some(text);
                } else {
                    conversation.record([ChatMessage::user(text)]);
                }
            }
        }
        // Written to the session journal.
        self.change(&conversation, |_| {});
        if let Some(message) = deprecation {
            tracing::warn!("{message}");
            self.services
                .hub
                .emit(id, None, EventMsg::Warning { message });
        }
        if let Some((_, notes, refused)) = tools {
            for message in notes {
                self.services
                    .hub
                    .emit(id, None, EventMsg::Warning { message });
            }
            self.warn_refused_tools(id, &refused);
        }
        Ok(())
    }

    /// The shell the session gives its conversations (seed 003's `shell_mode`): derived
    /// from `tools.disabled` and the sandbox.
    pub(super) fn shell_ceiling(&self) -> ShellMode {
        let bash_disabled = self
            .config()
            .disabled_tools
            .iter()
            .any(|tool| tool == crate::tools::BASH);
        session_shell(bash_disabled, self.services.sandbox.is_some())
    }

    /// Says, as a `warning` of `id`, that the `wanted` mode was narrowed to `mode` (the
    /// session's ceiling), when it was.
    fn warn_if_clamped(&self, id: ConversationId, wanted: Mode, mode: Mode) {
        if mode == wanted {
            return;
        }
        let ceiling = self.config().mode;
        self.services.hub.emit(
            id,
            None,
            EventMsg::Warning {
                message: format!(
                    "mode {} is looser than the session's {}; the conversation uses {}",
                    wanted.as_str(),
                    ceiling.as_str(),
                    mode.as_str()
                ),
            },
        );
    }

    /// An allowlist (normalised) may name only tools of the session's servers, as far as
    /// they are known now: before any has started, an entry must name a configured server
    /// that is not disabled or failed; once its server is ready, a tool it offers.
    pub(super) fn check_allowlist(&self, allowlist: Option<&[String]>) -> Result<(), EngineError> {
        let Some(allowlist) = allowlist else {
            return Ok(());
        };
        crate::mcp::check_allowlist(&self.services.mcp, allowlist)
            .map_err(|refusal| EngineError::invalid_params(refusal.to_string()))
    }

    /// The session's conversations, oldest first.
    pub fn list_conversations(&self) -> Vec<ConversationSummary> {
        let (mut list, saved) = {
            let state = self.state();
            let list: Vec<ConversationSummary> = state
                .conversations
                .values()
                .map(|conv| {
                    let conv = lock(conv);
                    summary(&conv, conv.id == state.root)
                })
                .collect();
            let saved: Vec<_> = state.saved.values().cloned().collect();
            (list, saved)
        };
        // A slot is locked outside the session's lock (it is taken first).
        list.extend(saved.iter().map(|slot| match &*lock(slot) {
            Slot::Saved(saved) => ConversationSummary {
                id: saved.id(),
                message_count: saved.message_count(),
                last_active_at: saved.state().last_active_at.clone().unwrap_or_default(),
                is_root: false,
            },
            Slot::Live(conv) => summary(&lock(conv), false),
        }));
        list.sort_by_key(|summary| summary.id);
        list
    }

    pub fn history(&self, id: ConversationId) -> Result<Vec<ChatMessage>, EngineError> {
        let conv = self.conversation(id)?;
        let history = lock(&conv).history.to_vec();
        Ok(history)
    }

    pub fn history_entries(
        &self,
        id: ConversationId,
        limit: Option<usize>,
    ) -> Result<Vec<HistoryEntry>, EngineError> {
        let conv = self.conversation(id)?;
        let entries = history_entries(&lock(&conv).history, limit);
        Ok(entries)
    }

    /// Destroys a conversation: its queued plans are dropped and a task running on it is
    /// interrupted. The root cannot be destroyed.
    pub fn destroy_conversation(&self, id: ConversationId) -> Result<(), EngineError> {
        if self.is_root(id) {
            return Err(EngineError::root_conversation());
        }
        {
            let mut state = self.state();
            if state.conversations.remove(&id).is_none() && state.saved.remove(&id).is_none() {
                return Err(EngineError::unknown_conversation(id));
            }
        }
        self.services.journal.destroyed(id);
        self.driver.forget(id);
        self.driver.stop(id, AbortReason::Interrupted);
        Ok(())
    }

    /// Sets a conversation's mode, clamped to the session's like [`Session::open_conversation`]
    /// (with the same `warning`): policies only narrow (seed 003), so no door loosens what
    /// configuration set. Every switch comes here: `setMode`, and `/mode` (or `/plan`,
    /// `/default`, `/auto-edit`, `/yolo`) from the terminal, an editor or the SDK alike.
    /// The mode a key that cycles the modes switches a conversation to: the next of
    /// default, auto-edit, yolo and plan, skipping those looser than the session's
    /// configured mode.
    pub fn next_mode(&self, id: ConversationId) -> Result<Mode, EngineError> {
        const CYCLE: [Mode; 4] = [Mode::Default, Mode::AutoEdit, Mode::Yolo, Mode::Plan];
        let current = self.mode(id)?;
        let ceiling = self.config().mode;
        let at = CYCLE.iter().position(|mode| *mode == current).unwrap_or(0);
        Ok((1..=CYCLE.len())
            .map(|step| CYCLE[(at + step) % CYCLE.len()])
            .find(|mode| narrower(*mode, ceiling) == *mode)
            .unwrap_or(current))
    }

    pub fn set_mode(&self, id: ConversationId, wanted: Mode) -> Result<(), EngineError> {
        let conv = self.conversation(id)?;
        let mode = narrower(wanted, self.config().mode);
        // Only a change is written to the journal: setting the mode a conversation has
        // leaves the session as it is (its snapshot is not written again for it).
        let previous = self
            .change_if(&conv, |conversation| {
                (conversation.mode != mode).then(|| conversation.switch_mode(mode))
            })
            .unwrap_or(mode);
        {
            let mut state = self.state();
            if state.root == id {
                state.root_taken = true;
            }
        }
        self.warn_if_clamped(id, wanted, mode);
        if previous != mode {
            // A call waiting for a person is decided again under the new mode.
            self.permissions().redecide(Some(id));
            self.services.hub.emit(
                id,
                None,
                EventMsg::ModeChanged {
                    mode,
                    previous,
                    reason: ModeChangeReason::SetMode,
                },
            );
        }
        Ok(())
    }

    /// Narrows `id` to `ceiling` when its mode is looser (a `conv_send` from a stricter
    /// conversation), with a `mode_changed` event saying why.
    pub(super) fn narrow_to_caller(&self, id: ConversationId, ceiling: Mode) {
        let Ok(conv) = self.conversation(id) else {
            return;
        };
        let mut previous = None;
        self.change(&conv, |conversation| {
            let mode = narrower(conversation.mode, ceiling);
            if mode != conversation.mode {
                previous = Some(conversation.switch_mode(mode));
            }
        });
        if let Some(previous) = previous {
            self.services.hub.emit(
                id,
                None,
                EventMsg::ModeChanged {
                    mode: ceiling,
                    previous,
                    reason: ModeChangeReason::CallerMode,
                },
            );
        }
    }

    pub fn context_tokens(&self, id: ConversationId) -> Result<u64, EngineError> {
        let conv = self.conversation(id)?;
        let tokens = lock(&conv).size.tokens;
        Ok(tokens)
    }

    pub fn mode(&self, id: ConversationId) -> Result<Mode, EngineError> {
        let conv = self.conversation(id)?;
        let mode = lock(&conv).mode;
        Ok(mode)
    }

    /// Builds a conversation's MCP tool view again, from the servers' tools as they are
    /// now; its next task offers them.
    pub fn refresh_mcp_view(&self, id: ConversationId) -> Result<(), EngineError> {
        let conv = self.conversation(id)?;
        lock(&conv).context.mcp_view.rebuild(&self.services.mcp);
        Ok(())
    }

    /// Deletes a saved session of the workspace: its snapshot and its journal (a link of
    /// that name is removed, never followed). `false` when neither was there; the session
    /// running now is `busy`.
    pub fn delete_saved_session(&self, session: SessionId) -> Result<bool, EngineError> {
        if session == self.session_id() {
            return Err(EngineError::new(
                ErrorKind::Busy,
                "this session is the one running; delete it from another session",
            ));
        }
        let Some(folder) = self.services.saver.folder() else {
            return Ok(false);
        };
        let Some(dir) = folder
            .readable()
            .map_err(|err| EngineError::io(format!("the saved sessions cannot be read: {err}")))?
        else {
            return Ok(false);
        };
        let mut removed = false;
        for name in [
            crate::snapshot::file_name(session),
            format!("{session}.jsonl"),
        ] {
            match dir.remove(&name) {
                Ok(()) => removed = true,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => {
                    return Err(EngineError::io(format!("{name} cannot be deleted: {err}")));
                }
            }
        }
        Ok(removed)
    }

    /// Deletes every saved session of the workspace but the one running; returns how many.
    pub fn delete_saved_sessions(&self) -> Result<usize, EngineError> {
        let mut deleted = 0;
        for saved in self.saved_sessions() {
            if saved.session_id != self.session_id()
                && self.delete_saved_session(saved.session_id)?
            {
                deleted += 1;
            }
        }
        Ok(deleted)
    }

    /// The sessions saved in the workspace, newest first.
    pub fn saved_sessions(&self) -> Vec<coder_protocol::methods::SessionInfo> {
        let mut sessions = self.services.saver.list();
        if let Some(Ok(Some(dir))) = self.services.saver.folder().map(|f| f.readable()) {
            sessions.extend(crate::journal::unsaved_sessions(&dir));
            sessions.sort_by(|a, b| b.saved_at.cmp(&a.saved_at));
        }
        sessions
    }

    /// Takes up a saved session (see [`crate::Engine::resume`]). The root, and the
    /// conversations the journal changed since the snapshot, are read now; the others when
    /// first used (their small state now, so the warnings a resume gives are given now).
    pub fn resume(&self, session: SessionId) -> Result<usize, EngineError> {
        let fail = |kind, reason: &str| EngineError::resume(session, kind, reason);
        let in_use = || {
            fail(
                ErrorKind::Busy,
                "a task is running or queued; resume once the session is idle",
            )
        };
        if session == self.session_id() {
            return Err(fail(ErrorKind::InvalidParams, "this is the session itself"));
        }
        // A session that was used is left as it is on disk (its snapshot, and its journal
        // holding every change since) and can be resumed later.
        if !self.state().queue.at_rest() {
            return Err(in_use());
        }
        let folder = self
            .services
            .saver
            .folder()
            .ok_or_else(|| fail(ErrorKind::InvalidParams, "saving sessions is switched off"))?;
        let saved = Self::read_saved(session, folder)?;
        let limit = self.config().max_conversations;
        if saved.conversations.len() > limit {
            return Err(fail(
                ErrorKind::LimitExceeded,
                &format!(
                    "it holds {} conversations, more than this session's limit of {limit} (maxConversations)",
                    saved.conversations.len()
                ),
            ));
        }
        let root_id = saved.root;
        let ceiling = self.config().mode;
        let resumed_at = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
        // Read now: what is read already, the root, and a conversation a resume warns
        // about (a mode looser than the session's, calls a snapshot wrote while they ran).
        let mut read = Vec::new();
        let mut lazy: Vec<SavedConversation> = Vec::new();
        for mut held in saved.conversations {
            let now = match &held {
                Held::Read(_) => true,
                Held::Saved(saved) => {
                    let state = saved.state();
                    held.id() == root_id
                        || !state.running_calls.is_empty()
                        || narrower(state.mode, ceiling) != state.mode
                        || state
                            .mode_before_plan
                            .is_some_and(|mode| narrower(mode, ceiling) != mode)
                }
            };
            if now {
                if let Err(err) = held.read() {
                    return Err(fail(
                        ErrorKind::InvalidParams,
                        &format!("conversation {} cannot be read: {err}", held.id()),
                    ));
                }
                if let Held::Read(conversation) = held {
                    read.push(conversation);
                }
            } else if let Held::Saved(mut saved) = held {
                // A resumed conversation without a time counts as active at the resume.
                saved.mark_active_if_unknown(&resumed_at);
                lazy.push(saved);
            }
        }
        let at = read
            .iter()
            .position(|conversation| conversation.conversation_id == root_id)
            .ok_or_else(|| {
                fail(
                    ErrorKind::InvalidParams,
                    "its root conversation is missing from the saved files",
                )
            })?;
        // Nothing of the file is taken before it was read whole; checked again under the
        // lock that takes it, in case something was sent meanwhile.
        let root = read.remove(at);
        let mut taken_up = Vec::new();
        let (root, taken) = self.take_up(root);
        taken_up.push((root.id, taken));
        let mut loaded = root.history.len();
        let mut conversations = HashMap::from([(root.id, Arc::new(Mutex::new(root)))]);
        for other in read {
            let (other, taken) = self.take_up(other);
            taken_up.push((other.id, taken));
            loaded += other.history.len();
            conversations.insert(other.id, Arc::new(Mutex::new(other)));
        }
        let count = conversations.len() + lazy.len();
        let mut saved_slots = HashMap::with_capacity(lazy.len());
        for saved in lazy {
            loaded += saved.message_count();
            saved_slots.insert(
                saved.id(),
                Arc::new(Mutex::new(Slot::Saved(Box::new(saved)))),
            );
        }
        {
            let mut state = self.state();
            if !state.queue.at_rest() {
                return Err(in_use());
            }
            state.session_id = session;
            state.root = root_id;
            state.root_taken = true;
            state.conversations = conversations;
            state.saved = saved_slots;
        }
        // The kept events tell of the session before: a client picking the stream up from
        // before now gets a snapshot of this one (`seq` goes on).
        self.services.hub.forget_kept();
        self.services
            .journal
            .resume(session, root_id, saved.seq, saved.journal_bytes);
        let holds = saved.snapshot_whole.then(|| Holds {
            through: self.services.journal.through(),
            model: self.model_name(),
            conversations: count,
        });
        self.services.saver.resumed(saved.snapshot_bytes, holds);
        // `/undo` reverts turns of this session only.
        self.services.checkpoints.forget();
        for (conversation, taken) in taken_up {
            self.warn_taken_up(conversation, taken);
        }
        Ok(loaded)
    }

    /// A saved conversation taken up: its MCP view built from the servers as they are, its
    /// mode narrowed to the session's (a snapshot is data, not configuration: a mode saved
    /// in it, or edited into it, never raises a conversation above the session's), the
    /// calls left without a result closed. Returns what a resume says of it.
    fn take_up(&self, saved: ConversationSnapshot) -> (Conversation, TakenUp) {
        let ceiling = self.config().mode;
        let mut taken = TakenUp::default();
        let mut conversation = saved.restore();
        conversation.context.mcp_view.rebuild(&self.services.mcp);
        // A session killed during a handoff (or a tool call) left calls unanswered; no
        // provider accepts such a history.
        taken.closed = close_unanswered_calls(
            Arc::make_mut(&mut conversation.history),
            UNFINISHED_CALL_RESULT,
        )
        .len();
        if taken.closed > 0 {
            // The results went in among the messages: the journal writes them all again.
            conversation.unjournaled_from = 0;
        }
        // The mode plan mode returns to as well: approving a plan never raises it.
        if let Some(saved) = conversation.mode_before_plan {
            let after = narrower(saved, ceiling);
            if after != saved {
                taken.clamped_after_plan = Some(saved);
                conversation.mode_before_plan = Some(after);
            }
        }
        let mode = narrower(conversation.mode, ceiling);
        if mode != conversation.mode {
            taken.clamped = Some(conversation.mode);
            conversation.switch_mode(mode);
        }
        (conversation, taken)
    }

    /// Says what taking up `conversation` changed, as warnings of it.
    fn warn_taken_up(&self, conversation: ConversationId, taken: TakenUp) {
        let ceiling = self.config().mode;
        let warn = |message: String| {
            self.services
                .hub
                .emit(conversation, None, EventMsg::Warning { message });
        };
        if taken.closed > 0 {
            warn(format!(
                "the saved session ended during {} tool call(s) of this conversation; each now has a result saying so",
                taken.closed
            ));
        }
        if let Some(saved_mode) = taken.clamped {
            warn(format!(
                "the saved session has mode {} for this conversation, looser than the session's {}; it uses {}",
                saved_mode.as_str(),
                ceiling.as_str(),
                ceiling.as_str()
            ));
        }
        if let Some(saved_mode) = taken.clamped_after_plan {
            warn(format!(
                "the saved session has this conversation leave plan mode for {}, looser than the session's {}; it leaves for {}",
                saved_mode.as_str(),
                ceiling.as_str(),
                ceiling.as_str()
            ));
        }
    }

    /// What `session` left on disk: its snapshot, when it saved one (the root read, the
    /// others lazily), with the lines of its journal after it replayed (the conversations
    /// they change read); histories as the conversations held them: without the system
    /// prompt, and without the results the snapshot gave calls still running.
    fn read_saved(
        session: SessionId,
        folder: &snapshot::SessionFolder,
    ) -> Result<ResumedFiles, EngineError> {
        let fail = |err: EngineError| EngineError::resume(session, err.kind(), err);
        // The folder itself is reached without following a link (a linked `.coder` or
        // `.coder/sessions` is refused), and so is every file in it.
        let dir = folder.readable().map_err(|err| {
            let message = format!("cannot read {}: {err}", snapshot::SESSIONS_DIR);
            fail(if crate::beneath::is_link_refusal(&err) {
                EngineError::invalid_params(err.to_string())
            } else {
                EngineError::io(message)
            })
        })?;
        let (saved, missing) = match snapshot::lazy::read(dir.as_ref(), session) {
            Ok(saved) => (Some(saved), None),
            Err(err) if err.kind() == ErrorKind::NotFound => (None, Some(err)),
            Err(err) => return Err(fail(err)),
        };
        let (mut root, mut conversations, through, snapshot_bytes, current_form) = match saved {
            Some(saved) => (
                Some(saved.root),
                saved.conversations,
                saved.journal_through,
                Some(saved.bytes),
                saved.current_form,
            ),
            None => (None, Vec::new(), 0, None, false),
        };
        let replayed = match &dir {
            Some(dir) => crate::journal::replay(dir, session, through, &mut conversations)
                .map_err(|err| {
                    let message = format!("cannot read the journal of session {session}: {err}");
                    fail(match err.kind() {
                        std::io::ErrorKind::FileTooLarge
                        | std::io::ErrorKind::InvalidInput
                        | std::io::ErrorKind::InvalidData
                        | std::io::ErrorKind::Other => EngineError::invalid_params(message),
                        _ => EngineError::io(message),
                    })
                })?,
            None => None,
        };
        let seq = replayed
            .as_ref()
            .map_or(0, |replayed| replayed.seq)
            .max(through);
        let journal_bytes = replayed.as_ref().map_or(0, |replayed| replayed.bytes);
        if root.is_none() {
            root = replayed.and_then(|replayed| replayed.root);
        }
        let root = match (root, missing) {
            (Some(root), _) => root,
            (None, Some(missing)) => return Err(fail(missing)),
            (None, None) => {
                return Err(fail(EngineError::invalid_params(
                    "its journal has no header and there is no snapshot",
                )));
            }
        };
        Ok(ResumedFiles {
            root,
            conversations,
            snapshot_whole: current_form && seq == through,
            seq,
            journal_bytes,
            snapshot_bytes,
        })
    }

    /// The session as a snapshot: the root conversation and the others, oldest first. The
    /// others are copied from the live conversations when the snapshot is written; a
    /// conversation that has sent nothing (and took up no prompt from a saved session) is
    /// written with what its next task would send besides its history.
    pub(super) fn snapshot(&self) -> (u64, SnapshotFile) {
        let model = self.model_name();
        let active = self.state().model.clone();
        // Under the session's lock only what names the conversations: each is copied under
        // its own lock, the root here, the others while the file is written.
        let (ticket, session_id, root, mut others) = {
            let state = self.state();
            let mut others: Vec<_> = state
                .conversations
                .iter()
                .filter(|(id, _)| **id != state.root)
                .map(|(id, conversation)| (*id, Entry::Live(conversation.clone())))
                .collect();
            others.extend(
                state
                    .saved
                    .iter()
                    .map(|(id, slot)| (*id, Entry::Saved(slot.clone()))),
            );
            (
                self.services.saver.ticket(),
                state.session_id,
                state.conversations.get(&state.root).cloned(),
                others,
            )
        };
        others.sort_by_key(|(id, _)| *id);
        let root_of = |conversation: &Conversation| {
            let unsent = conversation
                .prompt
                .is_none()
                .then(|| self.next_prompt(conversation, active.as_deref()));
            ConversationSnapshot::of(conversation, &model, unsent.as_deref())
        };
        let root = match root {
            Some(root) => root_of(&lock(&root)),
            None => root_of(&Conversation::new(
                ConversationSpec::default(),
                self.config().mode,
            )),
        };
        let unsent = others
            .iter()
            .filter_map(|(id, entry)| Some((*id, self.unsent_prompt(entry, active.as_deref())?)))
            .collect();
        let others = LiveConversations {
            model,
            conversations: others.into_iter().map(|(_, entry)| entry).collect(),
            unsent,
        };
        (ticket, SnapshotFile::new(session_id, root, others))
    }

    /// What the next task of a conversation `entry` holds would send besides its history,
    /// when it has sent nothing yet (nor took up a prompt from a saved session).
    fn unsent_prompt(
        &self,
        entry: &Entry,
        active: Option<&crate::model::ActiveModel>,
    ) -> Option<Arc<crate::prompt::PromptShape>> {
        let unsent = |conversation: &Conversation| {
            conversation
                .prompt
                .is_none()
                .then(|| self.next_prompt(conversation, active))
        };
        match entry {
            Entry::Live(conversation) | Entry::Cut(conversation, _) => unsent(&lock(conversation)),
            Entry::Saved(slot) => match &*lock(slot) {
                Slot::Live(conversation) => unsent(&lock(conversation)),
                Slot::Saved(saved) if saved.prompt().is_none() => {
                    // Its context is what its state holds; its history does not count.
                    let mut conversation = saved.state().clone().restore();
                    conversation.context.mcp_view.rebuild(&self.services.mcp);
                    unsent(&conversation)
                }
                Slot::Saved(_) => None,
            },
        }
    }

    /// Writes the session snapshot, when saving is on and the one on disk does not hold the
    /// session as it is ([`Holds`]).
    pub async fn save(&self, save: Save) -> Result<(), EngineError> {
        if self.services.saver.folder().is_none() {
            return Ok(());
        }
        let (unused, conversations) = {
            let state = self.state();
            (state.unused(), state.conversation_count())
        };
        // A session nobody used (nothing sent; a mode set is not a use) has nothing to
        // resume: it is not written (it would only crowd the list `/resume` shows), unless a
        // snapshot of it exists already.
        if unused && !self.services.saver.exists(self.session_id()) {
            return Ok(());
        }
        let through = self.services.journal.through();
        let holds = Holds {
            through,
            model: self.model_name(),
            conversations,
        };
        if self.services.saver.holds(&holds) {
            if save == Save::Last {
                self.services.saver.close();
            }
            return Ok(());
        }
        let (ticket, mut snapshot) = self.snapshot();
        snapshot.journal_through = through;
        if self
            .services
            .saver
            .write(ticket, snapshot, save, holds)
            .await?
        {
            self.services.journal.fold(through);
        }
        Ok(())
    }

    /// Saves after a task or once the session stayed idle (`idle`), when that is due
    /// ([`snapshot::Saver::due`]: the journal holds every change meanwhile), and reports a
    /// failure as a warning of that conversation.
    pub async fn save_if_due(&self, conversation: ConversationId, idle: bool) {
        if !self.services.saver.due(self.services.journal.bytes(), idle) {
            return;
        }
        if let Err(err) = self.save(Save::Again).await {
            self.services.hub.emit(
                conversation,
                None,
                EventMsg::Warning {
                    message: err.to_string(),
                },
            );
        }
    }
}

/// What taking up a saved conversation changed, for the warnings it gives.
#[derive(Default)]
struct TakenUp {
    /// Calls closed with a result saying the session ended.
    closed: usize,
    /// The saved mode, when it was narrowed.
    clamped: Option<Mode>,
    /// The saved mode plan mode returned to, when it was narrowed.
    clamped_after_plan: Option<Mode>,
}

/// What a resumed session left on disk.
struct ResumedFiles {
    root: ConversationId,
    /// Every conversation, the root among them.
    conversations: Vec<Held>,
    /// The journal's last line.
    seq: u64,
    journal_bytes: u64,
    /// The snapshot's size, when there is one.
    snapshot_bytes: Option<u64>,
    /// There is a snapshot, in the current form, and it holds every line of the journal:
    /// the session is as it is on disk.
    snapshot_whole: bool,
}

/// What `conv.list` says of a conversation.
fn summary(conv: &Conversation, is_root: bool) -> ConversationSummary {
    ConversationSummary {
        id: conv.id,
        message_count: conv.history.len(),
        last_active_at: humantime::format_rfc3339_millis(conv.last_active_at).to_string(),
        is_root,
    }
}

/// The tools `prefs` asks for (`true`) that the session disabled (`tools.disabled`):
/// policies only narrow (seed 003), so a conversation asking for one does not get it, and
/// is told so. A key left out asks for nothing.
pub(super) fn refused_tools(
    prefs: &coder_protocol::ToolsPrefs,
    disabled: &[String],
) -> Vec<&'static str> {
    [
        (crate::tools::APPLY_PATCH, prefs.include_apply_patch_tool),
        (crate::tools::TODO_WRITE, prefs.include_plan_tool),
    ]
    .into_iter()
    .filter(|(tool, asked)| *asked == Some(true) && disabled.iter().any(|d| d == tool))
    .map(|(tool, _)| tool)
    .collect()
}

#[cfg(test)]
mod tests;
