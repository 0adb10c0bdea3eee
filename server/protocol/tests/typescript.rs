//! Keeps `bindings-node/ts/protocol.ts` equal to what ts-rs renders from the protocol types.
//!
//! The Node SDK and the VS Code extension import that file, so it is checked in rather than
//! written during builds (ts-rs's `#[ts(export)]` would rewrite files on every `cargo test`).
//! `protocol_ts_is_up_to_date` fails when the file drifts from the Rust types; with
//! `UPDATE_PROTOCOL_TS=1` (or `UPDATE_PROTOCOL=1`, which also rewrites the JSON Schema) it
//! rewrites the file instead.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use coder_protocol::methods::{
    ArchiveResult, CoderCapabilities, CommandInfo, CommandListParams, CommandListResult,
    CommandParams, CommandResult, CommandSource, CompactResult, CreateParams, CreateResult,
    DestroyResult, EventParams, HistoryParams, HistoryResult, InitializationOptions,
    InterruptResult, ListParams, ListResult, PermissionParams, PermissionsListParams,
    PermissionsListResult, PermissionsRemoveParams, PermissionsRemoveResult, ProviderName,
    RuleInfo, RuleListParams, RuleListResult, SendParams, SendResult, SessionInfo,
    SessionInterruptParams, SessionListParams, SessionListResult, SessionResumeParams,
    SessionResumeResult, SetContextParams, SetContextResult, SetModeParams, SetModeResult,
    SkillInfo, SkillListParams, SkillListResult, TargetParams,
};
use coder_protocol::methods::{CompletePathsParams, CompletePathsResult, PathKind, PathMatch};
use coder_protocol::methods::{
    ForkParams, ForkResult, KeptFile, KeptReason, LineChange, PointsResult, RewindParams,
    RewindPoint, RewindResult,
};
use coder_protocol::methods::{SteerResult, WithdrawParams, WithdrawResult};
use coder_protocol::options::{EngineOptions, McpServerOptions, ModelOptions};
use coder_protocol::table::{Direction, MethodInfo, MethodVisitor, Notification, Request};
use coder_protocol::{
    AbortReason, ArchivedSegment, Attachment, ChatMessage, CompactTrigger, ConversationId,
    ConversationState, ConversationSummary, DropReason, EngineState, ErrorKind, Event, EventMsg,
    FileDiff, FileReference, FileReferenceKind, FunctionCall, HistoryAttachment, HistoryEntry,
    InputItem, LineRange, McpServerState, Mode, ModeChangeReason, OutputStream, PermissionDecision,
    PermissionOption, PermissionOptionKind, PermissionRule, PolicyDecision, Preset, Question,
    QuestionChoice, Receipt, ReloadedKind, Replacement, RequestedToolCall, Role, SessionId,
    SessionSnapshot, ShellMode, SubscribeParams, SubscribeResult, TaskId, TodoItem, TodoStatus,
    TokenUsage, ToolCall, ToolKind, ToolLocation, ToolsPrefs, VerificationStatus, methods, tools,
};
use pretty_assertions::assert_eq;
use serde_json::json;
use ts_rs::{Config, TS};

/// The generated file, relative to the workspace root.
const PROTOCOL_TS: &str = "bindings-node/ts/protocol.ts";

const REGENERATE: &str = "UPDATE_PROTOCOL_TS=1 cargo test -p coder-protocol --test typescript";

/// Lines longer than this are broken up (the rest of the workspace uses the same width).
const WIDTH: usize = 100;

/// One section of the generated file: the types of one Rust module, in the order listed.
struct Section {
    title: &'static str,
    decls: Vec<Decl>,
}

/// One exported TypeScript declaration.
struct Decl {
    name: String,
    /// The declaration as ts-rs renders it, docs included, before `tidy`.
    text: String,
    /// The named types it refers to.
    deps: Vec<String>,
}

impl Decl {
    fn of<T: TS + 'static>(cfg: &Config) -> Self {
        Decl {
            name: T::ident(cfg),
            text: format!("{}export {}", T::docs().unwrap_or_default(), T::decl(cfg)),
            deps: T::dependencies(cfg)
                .into_iter()
                .map(|dep| dep.ts_name)
                .collect(),
        }
    }
}

/// The one list of protocol types, grouped by module; the generated file follows this order.
/// `every_protocol_type_is_listed` fails when a public type of `src/` is missing here.
fn sections(cfg: &Config) -> Vec<Section> {
    macro_rules! section {
        ($title:literal, [$($ty:ty),+ $(,)?]) => {
            Section { title: $title, decls: vec![$(Decl::of::<$ty>(cfg)),+] }
        };
    }
    let mut sections = vec![
        section!("ids.rs", [ConversationId, TaskId, SessionId]),
        section!(
            "event.rs",
            [
                Event,
                EventMsg,
                RequestedToolCall,
                Replacement,
                AbortReason,
                CompactTrigger,
                VerificationStatus,
                DropReason,
                ReloadedKind,
                ModeChangeReason,
                McpServerState,
                EngineState,
                OutputStream,
                Receipt
            ]
        ),
        section!("error.rs", [ErrorKind]),
        section!("usage.rs", [TokenUsage]),
        section!("todo.rs", [TodoItem, TodoStatus]),
        section!(
            "tool_kind.rs",
            [ToolKind, ToolLocation, FileDiff, Question, QuestionChoice]
        ),
        section!(
            "reference.rs",
            [FileReference, FileReferenceKind, LineRange]
        ),
        section!(
            "message.rs",
            [Role, ChatMessage, Attachment, ToolCall, FunctionCall]
        ),
        section!(
            "conversation.rs",
            [
                InputItem,
                ToolsPrefs,
                ShellMode,
                ConversationSummary,
                HistoryEntry,
                HistoryAttachment,
                ArchivedSegment
            ]
        ),
        section!(
            "replay.rs",
            [
                SubscribeParams,
                SubscribeResult,
                SessionSnapshot,
                ConversationState
            ]
        ),
        section!(
            "permission.rs",
            [
                Mode,
                Preset,
                PolicyDecision,
                PermissionDecision,
                PermissionOptionKind,
                PermissionOption,
                PermissionRule
            ]
        ),
        section!(
            "methods.rs",
            [
                InitializationOptions,
                ProviderName,
                CoderCapabilities,
                CreateParams,
                CreateResult,
                SendParams,
                SendResult,
                CompactResult,
                TargetParams,
                ListParams,
                ListResult,
                HistoryParams,
                HistoryResult,
                ArchiveResult,
                CommandParams,
                CommandResult,
                SessionListParams,
                SessionListResult,
                SessionInfo,
                SessionResumeParams,
                SessionResumeResult,
                PointsResult,
                RewindPoint,
                RewindParams,
                RewindResult,
                KeptFile,
                LineChange,
                KeptReason,
                ForkParams,
                ForkResult,
                DestroyResult,
                InterruptResult,
                SessionInterruptParams,
                SetModeParams,
                SetModeResult,
                SetContextParams,
                SetContextResult,
                RuleListParams,
                RuleListResult,
                RuleInfo,
                PermissionsListParams,
                PermissionsListResult,
                PermissionsRemoveParams,
                PermissionsRemoveResult,
                SteerResult,
                WithdrawParams,
                WithdrawResult,
                EventParams,
                PermissionParams,
                CommandListParams,
                CommandListResult,
                CommandInfo,
                CommandSource,
                SkillListParams,
                SkillListResult,
                SkillInfo,
                CompletePathsParams,
                CompletePathsResult,
                PathMatch,
                PathKind
            ]
        ),
        section!(
            "options.rs",
            [EngineOptions, ModelOptions, McpServerOptions]
        ),
        section!("tools.rs", [ToolName]),
        section!(
            "serde_json::Value (any JSON), as ts-rs declares it",
            [serde_json::Value]
        ),
    ];
    // ts-rs renders a flattened enum by inlining its whole union into the outer type; naming
    // `EventMsg` instead means the same type (`&` distributes over `|`) and reads far better.
    let event_msg = EventMsg::inline_flattened(cfg);
    for decl in sections.iter_mut().flat_map(|s| s.decls.iter_mut()) {
        if decl.name == Event::ident(cfg) {
            assert_eq!(decl.text.matches(&event_msg).count(), 1, "{}", decl.text);
            decl.text = decl.text.replace(&event_msg, &EventMsg::name(cfg));
            decl.deps.push(EventMsg::ident(cfg));
        }
    }
    sections
}

/// The `&str` constants of `methods.rs`, by name, so neither names nor values can drift:
/// the protocol version, then one per method of the table.
fn constants() -> Vec<(&'static str, &'static str)> {
    let mut constants = vec![("PROTOCOL_VERSION", methods::PROTOCOL_VERSION)];
    constants.extend(methods::TABLE.iter().map(|info| (info.constant, info.name)));
    constants
}

/// The name lists of a source file, by name: they become `as const` arrays of the same name.
fn name_lists(file: &str) -> Vec<(&'static str, &'static [&'static str])> {
    match file {
        "tools.rs" => vec![
            ("BUILTIN_TOOLS", tools::BUILTIN_TOOLS),
            ("CONVERSATION_TOOLS", tools::CONVERSATION_TOOLS),
        ],
        "event.rs" => vec![("TASK_END_EVENTS", coder_protocol::TASK_END_EVENTS)],
        _ => Vec::new(),
    }
}

/// `ToolName` in TypeScript: any name of the lists. It has no Rust type of its own (tools
/// are named by strings), so it is declared here from the lists.
struct ToolName;

impl TS for ToolName {
    type WithoutGenerics = Self;
    type OptionInnerType = Self;

    fn docs() -> Option<String> {
        Some(jsdoc(&["The name of one of coder's own tools.".to_owned()]))
    }

    fn name(_: &Config) -> String {
        "ToolName".to_owned()
    }

    fn inline(_: &Config) -> String {
        let names: Vec<String> = name_lists("tools.rs")
            .iter()
            .flat_map(|(_, names)| names.iter().map(|name| json!(name).to_string()))
            .collect();
        names.join(" | ")
    }

    fn decl(cfg: &Config) -> String {
        format!("type {} = {};", Self::name(cfg), Self::inline(cfg))
    }

    fn decl_concrete(cfg: &Config) -> String {
        Self::decl(cfg)
    }
}

/// The docs of a method's row of the table, by constant name.
fn table_docs(name: &str) -> Option<Vec<String>> {
    let info = methods::TABLE.iter().find(|info| info.constant == name)?;
    Some(
        info.docs
            .iter()
            .map(|line| line.trim().to_owned())
            .collect(),
    )
}

/// Renders the TypeScript method maps (`ClientRequests`, `ServerRequests`,
/// `ServerNotifications`) from the table, checking that each type is declared.
struct MethodMaps<'a> {
    cfg: &'a Config,
    client_requests: String,
    server_requests: String,
    server_notifications: String,
    /// The TypeScript names the table refers to, for `every_protocol_type_is_listed`.
    refers_to: Vec<String>,
}

impl MethodVisitor for MethodMaps<'_> {
    fn request<M: Request>(&mut self, info: &MethodInfo) {
        let result = info
            .result
            .unwrap_or_else(|| panic!("{} has no result", info.name));
        let entry = format!(
            "{}  {}: {{ params: {}, result: {} }},\n",
            indent(&jsdoc(&table_docs(info.constant).unwrap_or_default())),
            json!(info.name),
            info.params,
            result,
        );
        self.refers_to.push(<M::Params as TS>::ident(self.cfg));
        self.refers_to.push(<M::Result as TS>::ident(self.cfg));
        match info.direction {
            Direction::ClientToServer => self.client_requests.push_str(&entry),
            Direction::ServerToClient => self.server_requests.push_str(&entry),
        }
    }

    fn notification<M: Notification>(&mut self, info: &MethodInfo) {
        assert_eq!(info.direction, Direction::ServerToClient, "{}", info.name);
        self.server_notifications.push_str(&format!(
            "{}  {}: {{ params: {} }},\n",
            indent(&jsdoc(&table_docs(info.constant).unwrap_or_default())),
            json!(info.name),
            info.params,
        ));
        self.refers_to.push(<M::Params as TS>::ident(self.cfg));
    }
}

impl<'a> MethodMaps<'a> {
    fn of(cfg: &'a Config) -> Self {
        let mut maps = MethodMaps {
            cfg,
            client_requests: String::new(),
            server_requests: String::new(),
            server_notifications: String::new(),
            refers_to: Vec::new(),
        };
        methods::visit(&mut maps);
        maps
    }

    fn render(&self) -> String {
        let map = |doc: &str, name: &str, body: &str| {
            format!(
                "\n{}export type {name} = {{\n{body}}};\n",
                jsdoc(&[doc.to_owned()])
            )
        };
        [
            map(
                "Client-to-server requests: each method's params and result.",
                "ClientRequests",
                &self.client_requests,
            ),
            map(
                "Server-to-client requests: each method's params and the client's answer.",
                "ServerRequests",
                &self.server_requests,
            ),
            map(
                "Server-to-client notifications: each method's params.",
                "ServerNotifications",
                &self.server_notifications,
            ),
        ]
        .concat()
    }
}

/// `text` indented by two spaces, line by line.
fn indent(text: &str) -> String {
    text.lines().map(|line| format!("  {line}\n")).collect()
}

/// The type aliases of `methods.rs`; ts-rs cannot see an alias, but `name` of the alias is
/// the name of the aliased type.
fn aliases(cfg: &Config) -> Vec<(&'static str, String)> {
    macro_rules! aliases {
        ($($name:ident),+ $(,)?) => {
            vec![$((stringify!($name), <methods::$name as TS>::name(cfg))),+]
        };
    }
    aliases![PermissionResult]
}

/// The rendering configuration, fixed (not `Config::from_env`) so the output never depends
/// on the environment. `u64` is a JSON number, and JSON.parse makes it a `number`, not the
/// `bigint` ts-rs assumes by default.
fn config() -> Config {
    Config::new().with_large_int("number")
}

fn protocol_ts_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(PROTOCOL_TS)
}

fn src_file(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(name);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The whole generated file.
fn render() -> String {
    let cfg = config();
    let methods_docs = item_docs(&src_file("methods.rs"));
    let mut out = format!(
        "// Generated from the Rust types in `server/protocol` (crate `coder-protocol`) with ts-rs,\n\
         // by `server/protocol/tests/typescript.rs`. Do not edit by hand: change the Rust types,\n\
         // then regenerate with\n\
         //\n\
         //     {REGENERATE}\n\
         //\n\
         // Without `UPDATE_PROTOCOL_TS` that test fails while this file is out of date.\n"
    );
    for section in sections(&cfg) {
        out.push_str(&format!("\n// {}\n", section.title));
        let lists = name_lists(section.title);
        if !lists.is_empty() {
            let docs = item_docs(&src_file(section.title));
            for (name, names) in lists {
                let items: String = names.iter().map(|n| format!("  {},\n", json!(n))).collect();
                out.push('\n');
                out.push_str(&jsdoc(&docs[name]));
                out.push_str(&format!("export const {name} = [\n{items}] as const;\n"));
            }
        }
        if section.title == "methods.rs" {
            for (name, value) in constants() {
                let docs = table_docs(name).unwrap_or_else(|| methods_docs[name].clone());
                // Each method constant under its own doc.
                if !docs.is_empty() {
                    out.push('\n');
                }
                out.push_str(&jsdoc(&docs));
                out.push_str(&format!("export const {name} = {};\n", json!(value)));
            }
            let methods = methods::METHODS.iter().map(|method| {
                let (name, _) = constants()
                    .into_iter()
                    .find(|(_, value)| value == method)
                    .unwrap_or_else(|| panic!("{method} in METHODS is not a listed constant"));
                format!("  {name},\n")
            });
            let methods: Vec<String> = methods.collect();
            out.push('\n');
            out.push_str(&jsdoc(&[
                "Every client-to-server method, as advertised in `initialize`.".to_owned(),
            ]));
            out.push_str(&format!(
                "export const METHODS = [\n{}] as const;\n",
                methods.concat()
            ));
        }
        for decl in &section.decls {
            out.push('\n');
            out.push_str(&tidy(&decl.text));
        }
        if section.title == "methods.rs" {
            for (name, target) in aliases(&cfg) {
                out.push('\n');
                out.push_str(&jsdoc(&methods_docs[name]));
                out.push_str(&format!("export type {name} = {target};\n"));
            }
            out.push_str(&MethodMaps::of(&cfg).render());
        }
    }
    out
}

#[test]
fn protocol_ts_is_up_to_date() {
    let path = protocol_ts_path();
    let expected = render();
    // `UPDATE_PROTOCOL` also rewrites `docs/protocol.schema.json` (tests/schema.rs).
    let update = ["UPDATE_PROTOCOL_TS", "UPDATE_PROTOCOL"]
        .iter()
        .any(|name| std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0"));
    let actual = fs::read_to_string(&path).unwrap_or_default();
    if update {
        if actual != expected {
            let dir = path.parent().unwrap();
            fs::create_dir_all(dir).unwrap();
            fs::write(&path, &expected).unwrap();
            eprintln!("wrote {PROTOCOL_TS}");
        }
        return;
    }
    assert!(
        actual == expected,
        "{PROTOCOL_TS} is out of date with the Rust protocol types; regenerate it with\n\n    {REGENERATE}\n\n{}",
        pretty_assertions::StrComparison::new(&actual, &expected),
    );
}

/// Every `pub struct`/`enum`/`type`/`const` in `src/` is rendered, and every type a rendered
/// declaration refers to is declared, so a new protocol type cannot be left out silently.
#[test]
fn every_protocol_type_is_listed() {
    let cfg = config();
    let sections = sections(&cfg);
    let mut declared = BTreeSet::new();
    for decl in sections.iter().flat_map(|s| &s.decls) {
        assert!(declared.insert(decl.name.clone()), "{} twice", decl.name);
    }
    for (name, _) in aliases(&cfg) {
        assert!(declared.insert(name.to_owned()), "{name} twice");
    }
    for name in MethodMaps::of(&cfg).refers_to {
        assert!(
            declared.contains(&name),
            "the method table refers to {name}, which is not listed"
        );
    }
    for decl in sections.iter().flat_map(|s| &s.decls) {
        for dep in &decl.deps {
            assert!(
                declared.contains(dep),
                "{} refers to {dep}, which is not listed",
                decl.name
            );
        }
    }

    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut in_source = BTreeSet::new();
    let mut consts_in_source = BTreeSet::new();
    for entry in fs::read_dir(&dir).unwrap() {
        let file = entry.unwrap().file_name().into_string().unwrap();
        // The table's own machinery (directions, visitor) is Rust, not wire vocabulary.
        if file == "table.rs" {
            continue;
        }
        for line in src_file(&file).lines() {
            for keyword in ["pub struct ", "pub enum ", "pub type ", "pub const "] {
                if let Some(rest) = line.trim_start().strip_prefix(keyword) {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    // `pub struct $name` in a macro: its uses are checked through `deps`.
                    if name.is_empty() {
                    } else if keyword == "pub const " {
                        consts_in_source.insert(name);
                    } else {
                        in_source.insert(name);
                    }
                }
            }
        }
    }
    // `TaskEnd` is read from the wire (`EventMsg::task_end`), never written to it.
    let missing: Vec<_> = in_source
        .difference(&declared)
        .filter(|name| *name != "TaskEnd")
        .collect();
    assert!(missing.is_empty(), "not in `sections`: {missing:?}");
    // `Mode::ALL`, `Preset::ALL` and `ErrorKind::ALL` are Rust conveniences, not wire vocabulary.
    let listed: BTreeSet<String> = constants()
        .into_iter()
        .map(|(name, _)| name.to_owned())
        .filter(|name| *name == "PROTOCOL_VERSION")
        .chain(
            ["tools.rs", "event.rs", "permission.rs"]
                .into_iter()
                .flat_map(name_lists)
                .map(|(name, _)| name.to_owned()),
        )
        .chain(["ALL".to_owned()])
        .collect();
    assert_eq!(consts_in_source, listed);
}

/// The serde behaviour each `#[ts(...)]` attribute of the crate stands for; if one of these
/// changes, the attribute (and so the TypeScript) must change with it.
#[test]
fn wire_shapes_behind_the_ts_attributes() {
    // `#[ts(optional)]` on `Option` + `skip_serializing_if`: absent, never null.
    let completed = EventMsg::ToolCallCompleted {
        call_id: "c1".into(),
        tool_name: "read".into(),
        output: "ok".into(),
        summary: "ok".into(),
        duration_ms: 3,
        diff: None,
    };
    assert_eq!(
        serde_json::to_value(&completed).unwrap(),
        json!({"type": "tool_call_completed", "callId": "c1", "toolName": "read",
               "output": "ok", "summary": "ok", "durationMs": 3})
    );
    assert_eq!(
        serde_json::to_value(PermissionDecision::Deny { message: None }).unwrap(),
        json!({"decision": "deny"})
    );
    assert_eq!(
        serde_json::to_value(PermissionDecision::AllowOnce).unwrap(),
        json!({"decision": "allow_once"})
    );
    assert_eq!(
        serde_json::to_value(ChatMessage::user("hi")).unwrap(),
        json!({"role": "user", "content": "hi"})
    );
    // `#[ts(optional_fields)]` on `CreateParams`: every field may be absent.
    assert_eq!(
        serde_json::to_value(CreateParams::default()).unwrap(),
        json!({})
    );
    // `ToolsPrefs` reads with any field left out (it is then inherited), and writes only
    // the fields it has.
    let prefs: ToolsPrefs =
        serde_json::from_value(json!({"include_plan_tool": false, "shell_mode": "off"})).unwrap();
    assert_eq!(
        prefs,
        ToolsPrefs {
            include_plan_tool: Some(false),
            shell_mode: Some(ShellMode::Off),
            ..ToolsPrefs::default()
        }
    );
    assert_eq!(
        serde_json::to_value(prefs).unwrap(),
        json!({"include_plan_tool": false, "shell_mode": "off"})
    );
    // Plain `Option`s are written as `null` (`T | null`, not optional).
    let event = Event {
        seq: 1,
        conversation_id: ConversationId(uuid::Uuid::nil()),
        task_id: None,
        msg: EventMsg::TaskComplete {
            last_agent_message: None,
            step_limit: None,
            error: None,
        },
    };
    assert_eq!(
        serde_json::to_value(&event).unwrap(),
        json!({"seq": 1, "conversationId": "00000000-0000-0000-0000-000000000000",
               "taskId": null, "type": "task_complete", "lastAgentMessage": null})
    );
    assert_eq!(serde_json::to_value(InterruptResult {}).unwrap(), json!({}));
}

/// The `///` docs of each `pub const` and `pub type` of a source file, by item name.
fn item_docs(source: &str) -> BTreeMap<String, Vec<String>> {
    let mut docs = BTreeMap::new();
    let mut pending = Vec::new();
    for line in source.lines().map(str::trim) {
        if let Some(doc) = line.strip_prefix("///") {
            pending.push(doc.strip_prefix(' ').unwrap_or(doc).to_owned());
            continue;
        }
        let item = ["pub const ", "pub type "]
            .iter()
            .find_map(|keyword| line.strip_prefix(keyword));
        if let Some(rest) = item {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            docs.insert(name, std::mem::take(&mut pending));
        }
        pending.clear();
    }
    docs
}

/// A JSDoc comment in the layout ts-rs uses, or nothing for no docs.
fn jsdoc(lines: &[String]) -> String {
    if lines.is_empty() {
        return String::new();
    }
    let body: String = lines
        .iter()
        .map(|line| format!(" *{}{line}\n", if line.is_empty() { "" } else { " " }))
        .collect();
    format!("/**\n{body} */\n")
}

/// Lays out one ts-rs declaration (`[docs]export type Name = ...;`, all on one line except
/// for the docs) the way a person would: long unions one variant per line, objects with
/// documented fields one field per line. Only whitespace, the comma before a closing brace
/// and a leading `|` change, which the assertion at the end checks.
fn tidy(text: &str) -> String {
    let (docs, head, expr) = text
        .find("export type ")
        .map(|start| text.split_at(start))
        .and_then(|(docs, decl)| {
            let (head, expr) = decl.split_once(" = ")?;
            Some((docs, head, expr.trim_end().strip_suffix(';')?))
        })
        .unwrap_or_else(|| panic!("not a ts-rs type declaration: {text}"));
    let body = format_expr(expr, 0, head.len() + 3);
    let sep = if body.starts_with('\n') { "" } else { " " };
    let tidied = format!("{docs}{head} ={sep}{body};\n");
    let squash = |s: &str| {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        // A broken-up union starts with `|`, after `=` or a member's `:`.
        s.replace(",}", "}").replace("=|", "=").replace(":|", ":")
    };
    assert_eq!(
        squash(&tidied),
        squash(text),
        "tidy changed more than layout"
    );
    tidied
}

/// `expr` laid out starting at column `col` on a line indented by `indent`.
fn format_expr(expr: &str, indent: usize, col: usize) -> String {
    let expr = expr.trim();
    if let Some(flat) = flat(expr)
        && col + flat.len() <= WIDTH
    {
        return flat;
    }
    let union = split_top(expr, b'|');
    if union.len() > 1 {
        let pad = " ".repeat(indent + 2);
        return union
            .iter()
            .map(|part| format!("\n{pad}| {}", format_expr(part, indent + 4, indent + 4)))
            .collect();
    }
    let intersection = split_top(expr, b'&');
    if intersection.len() > 1 {
        return intersection
            .iter()
            .map(|part| format_expr(part, indent, col))
            .collect::<Vec<_>>()
            .join(" & ");
    }
    if let Some(inner) = enclosed(expr, b'{', b'}') {
        let pad = " ".repeat(indent + 2);
        let mut out = String::from("{\n");
        for member in split_top(inner, b',') {
            let (comment, field) = split_comment(member);
            if let Some(comment) = comment {
                for line in comment.lines().map(str::trim) {
                    let lead = if line.starts_with('*') { " " } else { "" };
                    out.push_str(&format!("{pad}{lead}{line}\n"));
                }
            }
            let (name, ty) = split_member(field);
            let ty = format_expr(ty, indent + 2, indent + 2 + name.len() + 2);
            let sep = if ty.starts_with('\n') { "" } else { " " };
            out.push_str(&format!("{pad}{name}:{sep}{ty},\n"));
        }
        out.push_str(&" ".repeat(indent));
        out.push('}');
        return out;
    }
    if let Some(inner) = enclosed(expr, b'(', b')') {
        return format!("({})", format_expr(inner, indent, col + 1));
    }
    expr.to_owned()
}

/// `expr` on one line, or `None` when it holds a comment (which needs lines of its own).
fn flat(expr: &str) -> Option<String> {
    let expr = expr.trim();
    let union = split_top(expr, b'|');
    if union.len() > 1 {
        let parts: Option<Vec<_>> = union.iter().map(|part| flat(part)).collect();
        return parts.map(|parts| parts.join(" | "));
    }
    let intersection = split_top(expr, b'&');
    if intersection.len() > 1 {
        let parts: Option<Vec<_>> = intersection.iter().map(|part| flat(part)).collect();
        return parts.map(|parts| parts.join(" & "));
    }
    if let Some(inner) = enclosed(expr, b'{', b'}') {
        let mut members = Vec::new();
        for member in split_top(inner, b',') {
            if member.contains("/*") {
                return None;
            }
            let (name, ty) = split_member(member);
            members.push(format!("{name}: {}", flat(ty)?));
        }
        return Some(format!("{{ {} }}", members.join(", ")));
    }
    if let Some(inner) = enclosed(expr, b'(', b')') {
        return Some(format!("({})", flat(inner)?));
    }
    Some(expr.to_owned())
}

/// The inside of `expr` when it is one bracketed group from `open` to `close`.
fn enclosed(expr: &str, open: u8, close: u8) -> Option<&str> {
    let inner = expr
        .strip_prefix(open as char)?
        .strip_suffix(close as char)?;
    // `{ a } & { b }` also starts and ends with braces: the group must be one piece.
    let bytes = inner.as_bytes();
    let mut depth = 0i32;
    let mut i = 0;
    while i < bytes.len() {
        i = skip_literal(bytes, i);
        match bytes.get(i) {
            Some(b'{' | b'[' | b'(' | b'<') => depth += 1,
            Some(b'}' | b']' | b')' | b'>') => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            return None;
        }
        i += 1;
    }
    Some(inner)
}

/// Splits `s` at `sep` where it stands outside brackets, string literals and comments;
/// empty pieces (ts-rs ends every field with a comma) are dropped.
fn split_top(s: &str, sep: u8) -> Vec<&str> {
    let bytes = s.as_bytes();
    let mut parts = Vec::new();
    let (mut depth, mut start, mut i) = (0i32, 0, 0);
    while i < bytes.len() {
        i = skip_literal(bytes, i);
        match bytes.get(i) {
            Some(b'{' | b'[' | b'(' | b'<') => depth += 1,
            Some(b'}' | b']' | b')' | b'>') => depth -= 1,
            Some(&c) if c == sep && depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(&s[start..]);
    parts.retain(|part| !part.trim().is_empty());
    parts
}

/// If a string literal or a `/* */` comment starts at `i`, the index of its last byte.
fn skip_literal(bytes: &[u8], i: usize) -> usize {
    match (bytes.get(i), bytes.get(i + 1)) {
        (Some(b'"'), _) => {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            j
        }
        (Some(b'/'), Some(b'*')) => {
            let end = bytes[i + 2..].windows(2).position(|w| w == b"*/");
            end.map_or(bytes.len(), |end| i + 2 + end + 1)
        }
        _ => i,
    }
}

/// A member's leading doc comment, if any, and the rest.
fn split_comment(member: &str) -> (Option<&str>, &str) {
    let member = member.trim();
    match member.strip_prefix("/*").and_then(|_| member.find("*/")) {
        Some(end) => (Some(&member[..end + 2]), member[end + 2..].trim()),
        None => (None, member),
    }
}

/// `name` (with its `?`) and type of an object member.
fn split_member(member: &str) -> (&str, &str) {
    let member = member.trim();
    let bytes = member.as_bytes();
    let (mut depth, mut i) = (0i32, 0);
    while i < bytes.len() {
        i = skip_literal(bytes, i);
        match bytes.get(i) {
            Some(b'{' | b'[' | b'(' | b'<') => depth += 1,
            Some(b'}' | b']' | b')' | b'>') => depth -= 1,
            Some(b':') if depth == 0 => return (member[..i].trim(), member[i + 1..].trim()),
            _ => {}
        }
        i += 1;
    }
    panic!("no `:` in object member {member:?}")
}
