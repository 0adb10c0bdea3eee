//! The session journal: `.coder/sessions/<session_id>.jsonl`, beside the snapshot, so
//! nothing a session finished is lost whenever its process dies.
//!
//! Every change to a conversation is appended as one JSON line, written before the session
//! goes on (so a process that dies, however it dies, leaves it in the file), and synced to
//! disk by a thread of the journal's own right after ([`Syncer`]): the turn does not wait
//! for the disk, and every line is synced within moments, several at once when they come
//! together. Only the machine itself failing (power, kernel) can lose the last lines, and
//! a line cut short is left out when read. The messages from the first one that changed (`from`: the history is
//! cut there, then these follow), the conversation's small state (mode, todos, usage, its
//! context) and the archived segments new since the last line. A line holds only what
//! changed, so what persisting a turn costs does not grow with the history. Applying a line
//! twice gives the same conversation, so replaying the journal over a snapshot that already
//! holds some of its lines is safe.
//!
//! When the session saves its snapshot (after a quiet moment at idle, every few seconds
//! while busy, at the end), the snapshot records the last line it holds (`journalThrough`)
//! and the journal, when nothing was appended meanwhile, is removed: it is folded in.
//! Resuming reads the snapshot, when there is one, and replays the lines after
//! `journalThrough`; a session that died before its first snapshot resumes from its journal
//! alone. A last line cut short by the crash is left out.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

use coder_protocol::{ArchivedSegment, ChatMessage, ConversationId, SessionId};
use serde::{Deserialize, Serialize};

use crate::beneath::OwnDir;
use crate::conversation::Conversation;
use crate::snapshot::lazy::Held;
use crate::snapshot::{ConversationSnapshot, SessionFolder};
use crate::sync::lock;

/// The journal format's version.
const VERSION: u32 = 1;

/// The first line of a journal.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Header {
    journal: u32,
    session_id: SessionId,
    root: ConversationId,
    model: String,
}

/// One change, as written.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Change<'a> {
    seq: u64,
    conversation: ConversationId,
    from: usize,
    messages: &'a [ChatMessage],
    state: ConversationSnapshot,
    archived_from: usize,
    archived: &'a [ArchivedSegment],
}

/// One line, as read back.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line {
    seq: u64,
    #[serde(default)]
    conversation: Option<ConversationId>,
    #[serde(default)]
    from: usize,
    #[serde(default)]
    messages: Vec<ChatMessage>,
    #[serde(default)]
    state: Option<ConversationSnapshot>,
    #[serde(default)]
    archived_from: usize,
    #[serde(default)]
    archived: Vec<ArchivedSegment>,
    /// Set on the line that says a conversation was destroyed.
    #[serde(default)]
    destroyed: Option<ConversationId>,
}

/// The journal of the session, when saving is on.
pub(crate) struct Journal {
    folder: Option<Arc<SessionFolder>>,
    inner: Mutex<Inner>,
}

struct Inner {
    session: SessionId,
    root: ConversationId,
    model: String,
    /// The open journal, shared with the [`Syncer`] (a handle, not a duplicated descriptor).
    file: Option<Arc<std::fs::File>>,
    /// The number of the last line written.
    seq: u64,
    /// The size of the journal on disk, as far as this session wrote it or read it.
    bytes: u64,
    /// Set once a write failed: the failure is reported once, not at every change.
    failed: bool,
    /// The failure not yet reported.
    warning: Option<String>,
    /// The thread that syncs written lines to disk, once a file is open.
    syncer: Option<Syncer>,
}

/// How long the syncer gathers lines before it syncs them.
const SYNC_GATHER: std::time::Duration = std::time::Duration::from_millis(3);

/// Syncs the journal's written lines to disk on the process's sync thread ([`SyncThread`]),
/// so no turn waits for the disk: each written line hands it the file (a shared handle: no
/// descriptor is duplicated, compared or closed per line), and lines handed over while a
/// sync runs are synced together by the next one.
struct Syncer {
    thread: Arc<SyncThread>,
    /// The first sync that failed, for [`Journal::take_warning`].
    failure: Arc<Mutex<Option<String>>>,
}

/// One thread syncs the journals of every session of the process (a process holding a
/// thousand sessions would otherwise hold a thousand threads). It starts with the first
/// journal that writes and ends once no journal holds it.
struct SyncThread {
    files: std::sync::mpsc::Sender<Handed>,
}

/// A file to sync, and where its journal keeps a failure.
type Handed = (Arc<std::fs::File>, Arc<Mutex<Option<String>>>);

/// The running sync thread, while a journal holds it.
static SYNC_THREAD: Mutex<std::sync::Weak<SyncThread>> = Mutex::new(std::sync::Weak::new());

impl Syncer {
    fn start() -> std::io::Result<Self> {
        let mut running = lock(&SYNC_THREAD);
        let thread = match running.upgrade() {
            Some(thread) => thread,
            None => {
                let thread = Arc::new(SyncThread::start()?);
                *running = Arc::downgrade(&thread);
                thread
            }
        };
        Ok(Self {
            thread,
            failure: Arc::new(Mutex::new(None)),
        })
    }

    /// Hands `file` to the sync thread; `false` when it is gone.
    fn hand(&self, file: &Arc<std::fs::File>) -> bool {
        self.thread
            .files
            .send((Arc::clone(file), Arc::clone(&self.failure)))
            .is_ok()
    }
}

impl SyncThread {
    fn start() -> std::io::Result<Self> {
        let (files, waiting) = std::sync::mpsc::channel::<Handed>();
        std::thread::Builder::new()
            .name("coder-journal-sync".to_owned())
            .spawn(move || {
                while let Ok(first) = waiting.recv() {
                    // A turn writes its lines in bursts (the input, then the reply and its
                    // state): a moment's wait syncs a burst with one call, which leaves the
                    // disk and the CPU to the turn.
                    std::thread::sleep(SYNC_GATHER);
                    // What was written meanwhile is synced by one call per file.
                    let mut handed = vec![first];
                    while let Ok(next) = waiting.try_recv() {
                        if !handed.iter().any(|(file, _)| Arc::ptr_eq(file, &next.0)) {
                            handed.push(next);
                        }
                    }
                    for (file, failure) in handed {
                        if let Err(err) = file.sync_data() {
                            lock(&failure).get_or_insert_with(|| err.to_string());
                        }
                    }
                }
            })?;
        Ok(Self { files })
    }
}

impl Journal {
    pub fn new(
        folder: Option<Arc<SessionFolder>>,
        session: SessionId,
        root: ConversationId,
    ) -> Self {
        Self {
            folder,
            inner: Mutex::new(Inner {
                session,
                root,
                model: String::new(),
                file: None,
                seq: 0,
                bytes: 0,
                failed: false,
                warning: None,
                syncer: None,
            }),
        }
    }

    /// The journal file's name of `session`.
    fn name_of(session: SessionId) -> String {
        format!("{session}.jsonl")
    }

    /// Names the model the header records (for a session that dies before its snapshot).
    pub fn set_model(&self, model: &str) {
        let mut inner = lock(&self.inner);
        if inner.model != model {
            inner.model = model.to_owned();
        }
    }

    /// Appends what changed in `conversation` since its last line (written now, synced to
    /// disk by the [`Syncer`] right after), and marks it written. The first failure is kept for [`Journal::take_warning`] (the
    /// snapshot still saves what it can).
    pub fn persist(&self, conversation: &mut Conversation) {
        let Some(folder) = &self.folder else {
            return;
        };

        let len = conversation.history.len();
        let from = conversation.unjournaled_from.min(len);
        let archived_from = conversation
            .archive_journaled
            .min(conversation.archive.len());
        let mut inner = lock(&self.inner);
        inner.seq += 1;
        let change = Change {
            seq: inner.seq,
            conversation: conversation.id,
            from,
            messages: &conversation.history[from..],
            state: ConversationSnapshot::state_of(conversation),
            archived_from,
            archived: &conversation.archive[archived_from..],
        };
        // The line and its end in one buffer, written with one call.
        let mut line = Vec::new();
        let written = serde_json::to_writer(&mut line, &change)
            .map_err(|err| Some(err.to_string()))
            .and_then(|()| {
                line.push(b'\n');
                inner.write_line(folder, &line)
            });
        match written {
            Ok(()) => {
                conversation.unjournaled_from = len;
                conversation.archive_journaled = conversation.archive.len();
            }
            Err(Some(warning)) if !std::mem::replace(&mut inner.failed, true) => {
                inner.warning = Some(warning);
            }
            Err(_) => {}
        }
    }

    /// A write or sync failure not yet reported.
    pub fn take_warning(&self) -> Option<String> {
        let mut inner = lock(&self.inner);
        if let Some(warning) = inner.warning.take() {
            return Some(warning);
        }
        let failure = lock(&inner.syncer.as_ref()?.failure).take()?;
        if std::mem::replace(&mut inner.failed, true) {
            return None;
        }
        Some(format!(
            "cannot sync the session journal to disk: {failure}; a machine crash now could lose the session's latest changes"
        ))
    }

    /// Records that a conversation was destroyed, so a replay does not bring it back.
    pub fn destroyed(&self, conversation: ConversationId) {
        let Some(folder) = &self.folder else {
            return;
        };
        let mut inner = lock(&self.inner);
        inner.seq += 1;
        let mut line = serde_json::json!({"seq": inner.seq, "destroyed": conversation}).to_string();
        line.push('\n');
        let _ = inner.write_line(folder, line.as_bytes());
    }

    /// The number of the last line written: a snapshot taken from now holds every line up
    /// to it.
    pub fn through(&self) -> u64 {
        lock(&self.inner).seq
    }

    /// The size of the journal on disk: what a snapshot written now would fold in.
    pub fn bytes(&self) -> u64 {
        lock(&self.inner).bytes
    }

    /// Folds the journal into the snapshot that holds its lines up to `through`: removes it
    /// when nothing was written since.
    pub fn fold(&self, through: u64) {
        let Some(folder) = &self.folder else {
            return;
        };
        let mut inner = lock(&self.inner);
        // A resumed session's journal is folded too, whether this session wrote to it or not.
        if inner.seq != through || (inner.file.is_none() && inner.bytes == 0) {
            return;
        }
        inner.file = None;
        inner.bytes = 0;
        if let Ok(Some(dir)) = folder.readable() {
            let _ = dir.remove(&Self::name_of(inner.session));
        }
    }

    /// Goes on with a resumed session's journal: its id, root, last line and size.
    pub fn resume(&self, session: SessionId, root: ConversationId, seq: u64, bytes: u64) {
        let mut inner = lock(&self.inner);
        inner.session = session;
        inner.root = root;
        inner.seq = inner.seq.max(seq);
        inner.bytes = bytes;
        inner.file = None;
    }
}

impl Inner {
    /// Writes `line` (which ends with its line end) and hands the file to the syncer,
    /// opening the file (and writing its header) first if needed. The error is the warning
    /// to give, `None` when there is nothing more to say (see [`SessionFolder::writable`]).
    fn write_line(&mut self, folder: &SessionFolder, line: &[u8]) -> Result<(), Option<String>> {
        let cannot = |err: String| {
            Some(format!(
                "cannot write the session journal in {}: {err}; a crash now would lose the session's latest changes",
                folder.path().display()
            ))
        };
        if self.file.is_none() {
            let dir = folder.writable()?;
            let name = Journal::name_of(self.session);
            // Only a regular file of the folder's own, never through a link.
            let (mut file, fresh) = dir.append(&name).map_err(|err| {
                if crate::beneath::is_link_refusal(&err) {
                    Some(format!("this session's journal is not written: {err}"))
                } else {
                    cannot(crate::beneath::own_file_error(&dir.shown(&name), &err))
                }
            })?;
            if fresh {
                let header = Header {
                    journal: VERSION,
                    session_id: self.session,
                    root: self.root,
                    model: self.model.clone(),
                };
                let mut bytes =
                    serde_json::to_vec(&header).map_err(|err| cannot(err.to_string()))?;
                bytes.push(b'\n');
                file.write_all(&bytes)
                    .map_err(|err| cannot(err.to_string()))?;
                self.bytes = bytes.len() as u64;
            }
            self.file = Some(Arc::new(file));
        }
        let Some(file) = self.file.as_ref() else {
            return Ok(());
        };
        let result = (&**file)
            .write_all(line)
            .map_err(|err| cannot(err.to_string()));
        if result.is_err() {
            // Opened again at the next line, which then starts on a line of its own.
            self.file = None;
            return result;
        }
        self.bytes += line.len() as u64;
        // Synced by the syncer; without one (it could not start), here.
        if self.syncer.is_none() {
            self.syncer = Syncer::start().ok();
        }
        let handed = self.syncer.as_ref().is_some_and(|syncer| syncer.hand(file));
        if !handed {
            return file.sync_data().map_err(|err| cannot(err.to_string()));
        }
        Ok(())
    }
}

/// A session as a journal leaves it: the conversations it changed, in the order they first
/// changed, and the lines it holds.
#[derive(Debug, Default)]
pub(crate) struct Replayed {
    pub session: Option<SessionId>,
    pub root: Option<ConversationId>,
    pub model: String,
    /// The number of the last line read.
    pub seq: u64,
    /// The journal's size.
    pub bytes: u64,
}

/// Replays the journal of `session` in `dir` over `conversations` (the snapshot's, each
/// with its history as written, `ConversationSnapshot::take_written_history`), from the
/// line after `through`; a conversation not read yet is read when a line changes it. A
/// conversation the journal opened is added at the end; one it destroyed is removed. A line
/// that cannot be read ends the replay there (a crash cuts at most the last one short).
/// Only a regular file is read, never through a link; the error names the file.
pub(crate) fn replay(
    dir: &OwnDir,
    session: SessionId,
    through: u64,
    conversations: &mut Vec<Held>,
) -> std::io::Result<Option<Replayed>> {
    let name = Journal::name_of(session);
    // Past the bound the journal is refused whole, not read up to it: a journal is folded
    // into the snapshot at each save, so coder's own stay small.
    let file = match dir.open_read(&name, crate::snapshot::MAX_FILE_BYTES) {
        Ok(Some(file)) => file,
        Ok(None) => return Ok(None),
        Err(err) => {
            let message = crate::beneath::own_file_error(&dir.shown(&name), &err);
            return Err(std::io::Error::new(err.kind(), message));
        }
    };
    let mut replayed = Replayed {
        bytes: file.get_ref().metadata()?.len(),
        ..Replayed::default()
    };
    let mut lines = std::io::BufReader::new(file).lines();
    if let Some(Ok(first)) = lines.next()
        && let Ok(header) = serde_json::from_str::<Header>(&first)
    {
        replayed.session = Some(header.session_id);
        replayed.root = Some(header.root);
        replayed.model = header.model;
    } else {
        return Ok(Some(replayed));
    }
    let mut index: HashMap<ConversationId, usize> = conversations
        .iter()
        .enumerate()
        .map(|(at, conversation)| (conversation.id(), at))
        .collect();
    for line in lines {
        let Ok(line) = line else { break };
        let Ok(line) = serde_json::from_str::<Line>(&line) else {
            break;
        };
        replayed.seq = line.seq;
        if line.seq <= through {
            continue;
        }
        if let Some(gone) = line.destroyed {
            if let Some(at) = index.remove(&gone) {
                conversations.remove(at);
                index = conversations
                    .iter()
                    .enumerate()
                    .map(|(at, conversation)| (conversation.id(), at))
                    .collect();
            }
            continue;
        }
        let (Some(id), Some(state)) = (line.conversation, line.state) else {
            continue;
        };
        let at = *index.entry(id).or_insert_with(|| {
            conversations.push(Held::Read(ConversationSnapshot {
                messages: Vec::new(),
                ..state.clone()
            }));
            conversations.len() - 1
        });
        let conversation = conversations[at].read().map_err(|err| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("conversation {id} of its snapshot cannot be read: {err}"),
            )
        })?;
        let mut messages = std::mem::take(&mut conversation.messages);
        let mut archived = std::mem::take(&mut conversation.archived);
        messages.truncate(line.from);
        messages.extend(line.messages);
        archived.truncate(line.archived_from);
        archived.extend(line.archived);
        *conversation = ConversationSnapshot {
            conversation_id: id,
            messages,
            archived,
            tools: std::mem::take(&mut conversation.tools),
            prompt: conversation.prompt.take(),
            ..state
        };
    }
    Ok(Some(replayed))
}

/// The sessions in `dir` that have a journal and no snapshot (they died before their
/// first save), as a listing shows them. Only regular files count, never links.
pub(crate) fn unsaved_sessions(dir: &OwnDir) -> Vec<coder_protocol::methods::SessionInfo> {
    let Ok(names) = dir.names() else {
        return Vec::new();
    };
    names
        .iter()
        .filter_map(|name| {
            let stem = name.strip_suffix(".jsonl")?;
            if dir.exists(&format!("{stem}.json")) {
                return None;
            }
            let session: SessionId = stem.parse().ok()?;
            let mut held = Vec::new();
            let replayed = replay(dir, session, 0, &mut held).ok()??;
            let root = replayed.root?;
            let saved_at = dir.modified(name)?;
            // A replay over nothing reads every conversation it opens.
            let conversations: Vec<ConversationSnapshot> = held
                .into_iter()
                .filter_map(|held| match held {
                    Held::Read(read) => Some(read),
                    Held::Saved(_) => None,
                })
                .collect();
            let title = conversations
                .iter()
                .find(|c| c.conversation_id == root)
                .and_then(|c| crate::snapshot::title(&c.messages));
            Some(coder_protocol::methods::SessionInfo {
                session_id: session,
                saved_at: humantime::format_rfc3339_millis(saved_at).to_string(),
                model: replayed.model,
                conversations: conversations.len().max(1),
                messages: conversations.iter().map(|c| c.messages.len()).sum(),
                title,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use coder_protocol::{CompactTrigger, Mode};
    use pretty_assertions::assert_eq;

    fn conversation() -> Conversation {
        Conversation::new(Default::default(), Mode::Default)
    }

    fn texts(snapshot: &ConversationSnapshot) -> Vec<String> {
        snapshot
            .messages
            .iter()
            .map(|m| m.content.clone().unwrap_or_default())
            .collect()
    }

    /// The journal of a session saved in the workspace `dir`.
    fn journal_in(dir: &std::path::Path, session: SessionId, root: ConversationId) -> Journal {
        Journal::new(Some(Arc::new(SessionFolder::new(dir))), session, root)
    }

    /// The sessions folder of the workspace `dir`.
    fn sessions(dir: &std::path::Path) -> OwnDir {
        SessionFolder::new(dir).readable().unwrap().unwrap()
    }

    fn replayed(
        dir: &std::path::Path,
        session: SessionId,
        through: u64,
    ) -> Vec<ConversationSnapshot> {
        replayed_over(dir, session, through, Vec::new())
    }

    /// `conversations` with the journal's lines after `through` replayed over them.
    fn replayed_over(
        dir: &std::path::Path,
        session: SessionId,
        through: u64,
        conversations: Vec<ConversationSnapshot>,
    ) -> Vec<ConversationSnapshot> {
        let mut held: Vec<Held> = conversations.into_iter().map(Held::Read).collect();
        replay(&sessions(dir), session, through, &mut held).unwrap();
        held.into_iter()
            .map(|mut held| held.read().unwrap().clone())
            .collect()
    }

    #[test]
    fn every_change_comes_back_in_order_and_a_destroyed_conversation_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let session = SessionId::new();
        let mut root = conversation();
        let mut other = conversation();
        let journal = journal_in(dir.path(), session, root.id);
        root.record([ChatMessage::user("one")]);
        journal.persist(&mut root);
        other.record([ChatMessage::user("elsewhere")]);
        journal.persist(&mut other);
        root.record([ChatMessage::assistant(
            "two".into(),
            String::new(),
            Vec::new(),
        )]);
        journal.persist(&mut root);
        root.append_to_last(" and more");
        root.switch_mode(Mode::Plan);
        journal.persist(&mut root);
        journal.destroyed(other.id);
        let back = replayed(dir.path(), session, 0);
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].conversation_id, root.id);
        assert_eq!(texts(&back[0]), ["one", "two and more"]);
        assert_eq!(back[0].mode, Mode::Plan);

        // A compaction replaces the history and archives what it replaced.
        root.archive.push(ArchivedSegment {
            index: 0,
            archived_at: "2026-11-25T00:00:00.000Z".into(),
            trigger: CompactTrigger::Manual,
            summary: "s".into(),
            messages: root.history.to_vec(),
        });
        root.start_batch(vec![ChatMessage::user("summary")]);
        journal.persist(&mut root);
        let back = replayed(dir.path(), session, 0);
        assert_eq!(texts(&back[0]), ["summary"]);
        assert_eq!(back[0].archived.len(), 1);
        assert_eq!(back[0].archived[0].messages.len(), 2);
    }

    #[test]
    fn a_line_cut_short_by_a_crash_is_left_out_and_replaying_twice_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let session = SessionId::new();
        let mut root = conversation();
        let journal = journal_in(dir.path(), session, root.id);
        for text in ["a", "b", "c"] {
            root.record([ChatMessage::user(text)]);
            journal.persist(&mut root);
        }
        let path = dir
            .path()
            .join(crate::snapshot::SESSIONS_DIR)
            .join(Journal::name_of(session));
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(b"{\"seq\":4,\"conversation\":\"");
        std::fs::write(&path, bytes).unwrap();
        let back = replayed(dir.path(), session, 0);
        assert_eq!(texts(&back[0]), ["a", "b", "c"]);

        // Over a snapshot that already holds the lines after `through` (taken later than
        // it said), the replay gives the same history.
        let over = replayed_over(dir.path(), session, 1, back.clone());
        assert_eq!(texts(&over[0]), ["a", "b", "c"]);
        // Folding removes the journal only when nothing was written since the snapshot.
        journal.fold(2);
        assert!(path.exists());
        journal.fold(journal.through());
        assert!(!path.exists());
        // The next change starts a new journal, with its header.
        root.record([ChatMessage::user("d")]);
        journal.persist(&mut root);
        let mut after: Vec<Held> = back.into_iter().map(Held::Read).collect();
        let replayed = replay(&sessions(dir.path()), session, 3, &mut after)
            .unwrap()
            .unwrap();
        assert_eq!(replayed.root, Some(root.id));
        assert_eq!(texts(after[0].read().unwrap()), ["a", "b", "c", "d"]);
    }

    #[test]
    fn the_tools_of_a_conversation_called_through_the_prompt_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let session = SessionId::new();
        let mut root = conversation();
        let journal = journal_in(dir.path(), session, root.id);
        let tool = |name: &str| crate::model::ToolSpec {
            name: name.into(),
            description: format!("Does {name}."),
            parameters: Arc::new(crate::tools::Schema::new(
                serde_json::json!({"type": "object"}),
            )),
        };
        crate::tool_prompt::PromptedTools::update(&mut root.prompted_tools, &[tool("read")]);
        let new = crate::tool_prompt::PromptedTools::update(
            &mut root.prompted_tools,
            &[tool("read"), tool("grep")],
        );
        root.record(crate::tool_prompt::announcement(&new, &[]));
        journal.persist(&mut root);
        let back = replayed(dir.path(), session, 0);
        assert!(root.prompted_tools.is_some());
        assert_eq!(back[0].prompted_tools, root.prompted_tools);
        let restored = back[0].clone().restore();
        assert_eq!(restored.prompted_tools, root.prompted_tools);
        // Nothing new is announced again, and only `read` is described.
        let mut known = restored.prompted_tools;
        let offered = [tool("read"), tool("grep")];
        assert_eq!(
            crate::tool_prompt::PromptedTools::update(&mut known, &offered),
            []
        );
        let described = known.unwrap().initial(&offered);
        assert_eq!(described.len(), 1);
        assert_eq!(described[0].name, "read");
    }

    #[test]
    fn a_call_a_snapshot_closed_while_it_ran_gets_its_real_result_from_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let session = SessionId::new();
        let mut root = conversation();
        let journal = journal_in(dir.path(), session, root.id);
        let call = coder_protocol::ToolCall::function("c1".into(), "bash".into(), "{}".into());
        root.record([
            ChatMessage::user("run it"),
            ChatMessage::assistant(String::new(), String::new(), vec![call]),
        ]);
        journal.persist(&mut root);
        // A snapshot taken while the call runs holds it closed, and says which it closed.
        let mut saved = ConversationSnapshot::of(&root, "m", None);
        let through = journal.through();
        assert_eq!(
            saved.messages.last().unwrap().content.as_deref(),
            Some(crate::conversation::RUNNING_CALL_RESULT)
        );
        assert_eq!(saved.running_calls, ["c1"]);
        journal.fold(through);
        // Read back, the history is the conversation's as it was written.
        saved.take_written_history();
        assert_eq!(texts(&saved), ["run it", ""]);
        // The call ends after it: its result is a line of the journal.
        root.record([ChatMessage::tool_result("c1", "bash", "done")]);
        journal.persist(&mut root);
        let conversations = replayed_over(dir.path(), session, through, vec![saved.clone()]);
        assert_eq!(texts(&conversations[0]), ["run it", "", "done"]);
        // Without the line (the process died first), the call is left for the resume to
        // repair, as any call the session ended during.
        let mut history = saved.restore().history.to_vec();
        assert_eq!(
            crate::conversation::close_unanswered_calls(
                &mut history,
                crate::conversation::UNFINISHED_CALL_RESULT
            ),
            ["c1"]
        );
    }

    #[test]
    fn the_journals_of_many_sessions_share_one_sync_thread() {
        let journals: Vec<(tempfile::TempDir, Journal)> = (0..3)
            .map(|_| {
                let dir = tempfile::tempdir().unwrap();
                let mut root = conversation();
                let journal = journal_in(dir.path(), SessionId::new(), root.id);
                root.record([ChatMessage::user("one")]);
                journal.persist(&mut root);
                (dir, journal)
            })
            .collect();
        let thread_of = |journal: &Journal| {
            let inner = lock(&journal.inner);
            Arc::clone(&inner.syncer.as_ref().unwrap().thread)
        };
        let first = thread_of(&journals[0].1);
        for (_, journal) in &journals[1..] {
            assert!(Arc::ptr_eq(&first, &thread_of(journal)));
        }
        for (_, journal) in &journals {
            assert_eq!(journal.take_warning(), None);
        }
    }

    #[test]
    fn nothing_is_written_when_saving_is_off() {
        let journal = Journal::new(None, SessionId::new(), ConversationId::new());
        let mut root = conversation();
        root.record([ChatMessage::user("a")]);
        journal.persist(&mut root);
        assert_eq!(journal.through(), 0);
    }
}
