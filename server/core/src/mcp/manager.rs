//! The session's MCP connection manager: starts servers, keeps their status and tools (read
//! again when a server says its list changed), calls tools, shuts them down.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientRequest, PingRequest, Tool as RemoteTool};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::McpServerConfig;
use super::progress::{self, CallProgress, ProgressTap};
use super::{bounds, processes};
use crate::process::ToolEnv;
use crate::sync::lock;
use crate::tools::ToolOutput;

const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(120);
/// Lines of a server's stderr kept for error reports.
const STDERR_LINES: usize = 20;
/// The bytes of each stderr line kept.
const STDERR_LINE_BYTES: usize = 4096;
/// How often the connection of a ready streamable HTTP server is checked.
const HTTP_CHECK: Duration = Duration::from_millis(500);
/// How long a stdio server's connection may stay open after its stderr ended before coder
/// takes the server to be alive (it closed its stderr, not its life).
const EXIT_GRACE: Duration = Duration::from_secs(1);

/// Something of a stdio server ended: its name, its process id, and what ended.
type Exit = (String, u32, Ended);

/// A connection to a server, with what coder does with what the server sends unasked.
type Connection = RunningService<RoleClient, ServerEvents>;

/// What coder does with what a server sends unasked: a `notifications/tools/list_changed`
/// is passed on to the task that reads the server's tools again ([`follow_tool_changes`]);
/// everything else is left to `rmcp`'s defaults, as a client without a handler would
/// (progress reports are taken from the connection's transport before: [`ProgressTap`]).
struct ServerEvents {
    /// Counts the server's list changes; the follower reads it (several changes between two
    /// reads are one).
    tool_list_changed: watch::Sender<u64>,
}

impl ServerEvents {
    /// A handler, and what its list changes are read from.
    fn new() -> (Self, watch::Receiver<u64>) {
        let (tool_list_changed, changes) = watch::channel(0);
        (Self { tool_list_changed }, changes)
    }
}

impl rmcp::ClientHandler for ServerEvents {
    fn on_tool_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        self.tool_list_changed
            .send_modify(|changes| *changes = changes.wrapping_add(1));
        std::future::ready(())
    }
}

/// What of a stdio server ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// Its stderr: it may have exited, or only closed its stderr.
    Stderr,
    /// Its process: it exited, whatever still holds its pipes open (a process it started).
    Process,
}

/// Where a server is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(
    tag = "state",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ServerStatus {
    Starting,
    /// Running, with its tools counted and its process id.
    Ready {
        tools: usize,
        pid: Option<u32>,
    },
    Failed {
        error: String,
        stderr: String,
    },
    Disabled,
}

struct Server {
    /// Which start of the server this is: a reload that restarts it makes another, and
    /// what the old one's start, calls and exit checks find out no longer touches it.
    id: u64,
    /// What it was started from, to tell whether a reload changed it.
    config: McpServerConfig,
    status: ServerStatus,
    pid: Option<u32>,
    peer: Option<Peer<RoleClient>>,
    service: Option<Connection>,
    tools: Vec<RemoteTool>,
    /// How long its start may take: the handshake, and then listing its tools.
    startup_timeout: Duration,
    tool_timeout: Duration,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// Its tool calls under way ([`InFlight`]).
    calls: Arc<AtomicUsize>,
    /// The id of its process as soon as it is spawned (0 before): a shutdown or a second
    /// Ctrl-C during its handshake ends it, and its group, too.
    spawned: Arc<AtomicU32>,
}

impl Server {
    /// A server defined by `config`, starting unless it is disabled.
    fn new(config: &McpServerConfig) -> Self {
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            config: config.clone(),
            status: if config.enabled {
                ServerStatus::Starting
            } else {
                ServerStatus::Disabled
            },
            pid: None,
            peer: None,
            service: None,
            tools: Vec::new(),
            startup_timeout: config.startup_timeout(DEFAULT_STARTUP_TIMEOUT),
            tool_timeout: config.tool_timeout(DEFAULT_TOOL_TIMEOUT),
            stderr: Arc::new(Mutex::new(VecDeque::new())),
            calls: Arc::new(AtomicUsize::new(0)),
            spawned: Arc::new(AtomicU32::new(0)),
        }
    }

    /// What a start of it reports back to while it runs.
    fn reports(
        &self,
        exits: &mpsc::UnboundedSender<Exit>,
        closed: &Arc<Mutex<bool>>,
    ) -> StartReports {
        StartReports {
            stderr: self.stderr.clone(),
            exits: exits.clone(),
            spawned: self.spawned.clone(),
            closed: closed.clone(),
        }
    }

    /// The process group to end with it: its process's, while it is running or starting.
    /// A server that failed has no process of coder's left, and its old id may be another
    /// process's by now.
    fn group(&self) -> Option<u32> {
        let live = matches!(
            self.status,
            ServerStatus::Ready { .. } | ServerStatus::Starting
        );
        self.process().filter(|_| live)
    }

    /// The id of its process: from its start, or, during its handshake, from its spawn.
    fn process(&self) -> Option<u32> {
        self.pid
            .or(Some(self.spawned.load(Ordering::SeqCst)).filter(|pid| *pid != 0))
    }

    /// Whether it is reached over streamable HTTP, not as a process of coder's.
    fn is_http(&self) -> bool {
        self.config.command.is_none() && self.config.url.is_some()
    }
}

/// One tool call under way on a server, counted while it lives.
struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn new(calls: &Arc<AtomicUsize>) -> Self {
        calls.fetch_add(1, Ordering::SeqCst);
        Self(calls.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What holds the session's MCP servers at a moment, for checks that nothing is left
/// behind: the MCP tools of conversations' views and of running tasks (each holds the
/// manager) and the tool calls under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McpUsage {
    /// Holders of the manager besides the session itself: one per MCP tool alive (a
    /// start or a tool list being read holds it for that while).
    pub holders: usize,
    /// Tool calls under way, on every server.
    pub calls: usize,
}

/// Reports a server problem to the session (a `warning` event).
pub type Reporter = Arc<dyn Fn(String) + Send + Sync>;

/// All MCP servers of one session.
pub struct McpManager {
    servers: Mutex<BTreeMap<String, Server>>,
    settled: watch::Sender<bool>,
    report: Reporter,
    /// Held by [`McpManager::apply`]: one reload of the servers at a time, in order.
    applying: tokio::sync::Mutex<()>,
    /// Where a stdio server's stderr reader and process watch say that it ended
    /// ([`watch_for_exits`]).
    exits: mpsc::UnboundedSender<Exit>,
    /// Counts the changes of the tools the servers offer ([`McpManager::generation`]).
    generation: AtomicU64,
    /// Set by [`McpManager::shutdown`]: no server process is spawned afterwards. A start
    /// holds it while it spawns its process and records its id, so a shutdown either finds
    /// that id or comes first and no process is spawned.
    closed: Arc<Mutex<bool>>,
    /// The manager itself, for the tasks it starts (they hold it only weakly).
    me: Weak<McpManager>,
    /// Cancelled when the session ends ([`McpManager::shutdown`], [`McpManager::kill_now`]):
    /// [`watch_for_exits`] ends then, not only once the manager is dropped (an engine
    /// disposed in Node may be collected much later).
    ended: CancellationToken,
}

impl McpManager {
    /// Starts every enabled server concurrently; returns at once.
    pub(crate) fn start(
        configs: BTreeMap<String, McpServerConfig>,
        workspace: &Path,
        env: ToolEnv,
        report: Reporter,
    ) -> Arc<Self> {
        let env = Arc::new(env);
        let (settled, _) = watch::channel(configs.is_empty());
        let (exits, exited) = mpsc::unbounded_channel();
        let manager = Arc::new_cyclic(|me| Self {
            servers: Mutex::new(BTreeMap::new()),
            settled,
            report,
            applying: tokio::sync::Mutex::new(()),
            exits,
            generation: AtomicU64::new(0),
            closed: Arc::default(),
            me: me.clone(),
            ended: CancellationToken::new(),
        });
        let mut starts = Vec::new();
        let mut started = Vec::new();
        for (name, config) in configs {
            let server = Server::new(&config);
            let reports = server.reports(&manager.exits, &manager.closed);
            started.push((name.clone(), server.id));
            let id = server.id;
            lock(&manager.servers).insert(name.clone(), server);
            if config.enabled {
                starts.push(start_one(
                    (name, id),
                    config,
                    workspace.to_path_buf(),
                    env.clone(),
                    reports,
                ));
            }
        }
        let settling = Settling {
            manager: manager.clone(),
            started,
        };
        tokio::spawn(async move {
            let results = futures::future::join_all(starts).await;
            for (name, id, result, changes) in results {
                settling.manager.settle(&name, id, result, changes).await;
            }
            settling.manager.list_tools().await;
            // The watcher holds the manager only weakly: it ends with it.
            let watched = Arc::downgrade(&settling.manager);
            let ended = settling.manager.ended.clone();
            drop(settling);
            tokio::select! {
                () = watch_for_exits(watched, exited) => {}
                () = ended.cancelled() => {}
            }
        });
        manager
    }

    /// Ends the session's first start: of the servers it started (`started`, by name and
    /// id), one still starting failed (only a bug leaves one: the start task panicked),
    /// and whoever waits for the servers goes on. A server a reload started meanwhile is
    /// the reload's.
    fn settled_now(&self, started: &[(String, u64)]) {
        let mut servers = lock(&self.servers);
        for (name, id) in started {
            if let Some(server) = servers.get_mut(name)
                && server.id == *id
                && server.status == ServerStatus::Starting
            {
                server.status = failed(
                    "coder could not start it (an internal error)",
                    &server.stderr,
                );
            }
        }
        drop(servers);
        self.settled.send_replace(true);
    }

    /// Takes the result of starting server `name` (start `id`). A server a reload replaced
    /// meanwhile is not this start's: its process, if it started, is stopped.
    async fn settle(
        &self,
        name: &str,
        id: u64,
        result: Result<(Connection, Option<u32>), String>,
        changes: watch::Receiver<u64>,
    ) {
        if let Some(stale) = self.take_start(name, id, result, changes) {
            // Off the settling path: the others' starts are not held up behind it.
            tokio::spawn(stop(vec![stale]));
        }
    }

    /// [`McpManager::settle`] but for stopping a stale start, which it hands back.
    fn take_start(
        &self,
        name: &str,
        id: u64,
        result: Result<(Connection, Option<u32>), String>,
        changes: watch::Receiver<u64>,
    ) -> Option<Stopping> {
        let mut servers = lock(&self.servers);
        let Some(server) = servers.get_mut(name).filter(|server| server.id == id) else {
            return result.ok();
        };
        match result {
            Ok((service, pid)) => {
                server.pid = pid;
                let peer = service.peer().clone();
                server.peer = Some(peer);
                server.service = Some(service);
                tokio::spawn(follow_tool_changes(
                    self.me.clone(),
                    name.to_owned(),
                    id,
                    changes,
                ));
            }
            Err(error) => {
                let stderr = tail(&server.stderr);
                server.status = ServerStatus::Failed {
                    error: error.clone(),
                    stderr: stderr.clone(),
                };
                drop(servers);
                (self.report)(failure_report(name, &error, &stderr));
            }
        }
        None
    }

    /// Waits until every server has started or failed.
    pub async fn settled(&self) {
        let mut rx = self.settled.subscribe();
        // An error means the manager is gone, and nothing will start any more.
        let _ = rx.wait_for(|settled| *settled).await;
    }

    /// Lists the tools of every server that completed its handshake; what a list finds is
    /// kept only while the server is still that start (a reload may replace it meanwhile).
    async fn list_tools(&self) {
        let peers: Vec<(String, u64, Peer<RoleClient>, Duration)> = lock(&self.servers)
            .iter()
            .filter(|(_, s)| s.status == ServerStatus::Starting)
            .filter_map(|(name, s)| Some((name.clone(), s.id, s.peer.clone()?, s.startup_timeout)))
            .collect();
        for (name, id, peer, timeout) in peers {
            let listed = tokio::time::timeout(timeout, bounds::list_tools(&peer)).await;
            let notes = {
                let mut servers = lock(&self.servers);
                let Some(server) = servers.get_mut(&name).filter(|server| server.id == id) else {
                    continue;
                };
                match listed {
                    Ok(Ok((tools, notes))) => {
                        server.status = ServerStatus::Ready {
                            tools: tools.len(),
                            pid: server.pid,
                        };
                        server.tools = tools;
                        notes
                    }
                    Ok(Err(err)) => {
                        server.status = failed(&err.to_string(), &server.stderr);
                        Vec::new()
                    }
                    Err(_) => {
                        server.status = failed("listing its tools timed out", &server.stderr);
                        Vec::new()
                    }
                }
            };
            for note in notes {
                (self.report)(format!("MCP server `{name}`: {note}"));
            }
        }
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Counts the changes of the tools the ready servers offer: a listing (when servers
    /// start, at a reload) and a server's changed list read again each add one. A view
    /// built at another count is stale.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Reads the tools of server `name` again (its start `id`, ready), after it said its
    /// list changed, within its startup timeout. Returns whether the server is still that
    /// start; a list that cannot be read keeps the tools it had, with a `warning`.
    async fn relist(&self, name: &str, id: u64) -> bool {
        let (peer, timeout) = {
            let servers = lock(&self.servers);
            let Some(server) = servers.get(name).filter(|server| server.id == id) else {
                return false;
            };
            match (&server.status, &server.peer) {
                (ServerStatus::Ready { .. }, Some(peer)) => (peer.clone(), server.startup_timeout),
                // Not ready (any more): nothing to read, and nothing offered to change.
                _ => return !matches!(server.status, ServerStatus::Failed { .. }),
            }
        };
        let listed = tokio::time::timeout(timeout, bounds::list_tools(&peer)).await;
        let notes = {
            let mut servers = lock(&self.servers);
            let Some(server) = servers.get_mut(name).filter(|server| {
                server.id == id && matches!(server.status, ServerStatus::Ready { .. })
            }) else {
                return false;
            };
            match listed {
                Ok(Ok((tools, notes))) => {
                    server.status = ServerStatus::Ready {
                        tools: tools.len(),
                        pid: server.pid,
                    };
                    server.tools = tools;
                    self.generation.fetch_add(1, Ordering::SeqCst);
                    notes
                }
                Ok(Err(err)) => vec![format!(
                    "its tool list changed but could not be read ({err}); the tools it had are kept"
                )],
                Err(_) => vec![
                    "its tool list changed but reading it timed out; the tools it had are kept"
                        .to_owned(),
                ],
            }
        };
        for note in notes {
            (self.report)(format!("MCP server `{name}`: {note}"));
        }
        true
    }

    /// What holds the servers now; `this` is the session's own handle on the manager.
    pub fn usage(this: &Arc<Self>) -> McpUsage {
        let calls = lock(&this.servers)
            .values()
            .map(|server| server.calls.load(Ordering::SeqCst))
            .sum();
        McpUsage {
            holders: Arc::strong_count(this).saturating_sub(1),
            calls,
        }
    }

    /// Each server's status, by name.
    pub fn statuses(&self) -> BTreeMap<String, ServerStatus> {
        lock(&self.servers)
            .iter()
            .map(|(name, server)| (name.clone(), server.status.clone()))
            .collect()
    }

    /// `(server, tool)` of every ready server, in name order.
    pub(crate) fn tools(&self) -> Vec<(String, RemoteTool)> {
        lock(&self.servers)
            .iter()
            .filter(|(_, s)| matches!(s.status, ServerStatus::Ready { .. }))
            .flat_map(|(name, s)| s.tools.iter().map(|t| (name.clone(), t.clone())))
            .collect()
    }

    /// Calls `tool` on `server`, within the server's tool timeout, stopping when `cancel`
    /// fires; what the server reports of its progress meanwhile goes to `progress`.
    pub(super) async fn call(
        &self,
        server_name: &str,
        tool: &str,
        arguments: Value,
        cancel: &CancellationToken,
        progress: Option<&CallProgress>,
    ) -> Result<ToolOutput, String> {
        let (peer, timeout, id, _in_flight) = {
            let servers = lock(&self.servers);
            let server = servers
                .get(server_name)
                .ok_or_else(|| format!("no MCP server named `{server_name}`"))?;
            match (&server.status, &server.peer) {
                (ServerStatus::Ready { .. }, Some(peer)) => (
                    peer.clone(),
                    server.tool_timeout,
                    server.id,
                    InFlight::new(&server.calls),
                ),
                (ServerStatus::Failed { error, .. }, _) => {
                    return Err(format!(
                        "the MCP server `{server_name}` is not running: {error}"
                    ));
                }
                _ => return Err(format!("the MCP server `{server_name}` is not ready")),
            }
        };
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(object) = arguments {
            params = params.with_arguments(object);
        }
        let result = tokio::select! {
            result = tokio::time::timeout(timeout, progress::call_tool(&peer, params, progress)) => result,
            () = cancel.cancelled() => return Err("cancelled".to_owned()),
        };
        match result {
            Err(_) => Err(format!(
                "the MCP tool `{tool}` of `{server_name}` did not answer within {:.0}s",
                timeout.as_secs_f64()
            )),
            Ok(Err(err)) => {
                if peer.is_transport_closed() {
                    self.mark_exited(server_name, id, &err.to_string());
                }
                Err(format!("the MCP server `{server_name}` failed: {err}"))
            }
            Ok(Ok(result)) => {
                let content = serde_json::to_value(&result.content).unwrap_or(Value::Null);
                let output = bounds::result(&content);
                if result.is_error == Some(true) {
                    Err(output.content)
                } else {
                    Ok(output)
                }
            }
        }
    }

    /// Marks server `name` exited, if it is still start `id` (not one a reload made since).
    fn mark_exited(&self, name: &str, id: u64, error: &str) {
        let mut servers = lock(&self.servers);
        let Some(server) = servers.get_mut(name).filter(|server| server.id == id) else {
            return;
        };
        if matches!(server.status, ServerStatus::Failed { .. }) {
            return;
        }
        server.status = failed(&format!("the server exited ({error})"), &server.stderr);
        server.peer = None;
        let stderr = tail(&server.stderr);
        drop(servers);
        (self.report)(failure_report(name, "it exited", &stderr));
    }

    /// Brings the servers to `configs` (a changed `.mcp.json`): servers whose definition
    /// changed are restarted, removed ones stopped (their processes end before this
    /// returns), new ones started; the others go on untouched. Returns each server it
    /// touched with its status now (`None`: stopped), empty when nothing changed. Until the
    /// new servers have started or failed, [`McpManager::settled`] waits.
    pub(crate) async fn apply(
        &self,
        configs: BTreeMap<String, McpServerConfig>,
        workspace: &Path,
        env: ToolEnv,
    ) -> Vec<(String, Option<ServerStatus>)> {
        let _one_at_a_time = self.applying.lock().await;
        let mut touched: Vec<String>;
        let (stopping, starting) = {
            let mut servers = lock(&self.servers);
            let gone: Vec<String> = servers
                .iter()
                .filter(|(name, server)| configs.get(*name) != Some(&server.config))
                .map(|(name, _)| name.clone())
                .collect();
            let stopping: Vec<Stopping> = gone
                .iter()
                .filter_map(|name| {
                    let server = servers.remove(name)?;
                    let group = server.group();
                    Some((server.service?, group))
                })
                .collect();
            let starting: Vec<(String, McpServerConfig)> = configs
                .into_iter()
                .filter(|(name, _)| !servers.contains_key(name))
                .collect();
            if gone.is_empty() && starting.is_empty() {
                return Vec::new();
            }
            for (name, config) in &starting {
                servers.insert(name.clone(), Server::new(config));
            }
            self.settled.send_replace(false);
            touched = gone;
            touched.extend(starting.iter().map(|(name, _)| name.clone()));
            touched.sort();
            touched.dedup();
            (stopping, starting)
        };
        stop(stopping).await;
        let env = Arc::new(env);
        let starts = starting
            .into_iter()
            .filter(|(_, config)| config.enabled)
            .filter_map(|(name, config)| {
                let (reports, id) = {
                    let servers = lock(&self.servers);
                    let server = servers.get(&name)?;
                    (server.reports(&self.exits, &self.closed), server.id)
                };
                Some(start_one(
                    (name, id),
                    config,
                    workspace.to_path_buf(),
                    env.clone(),
                    reports,
                ))
            });
        let results = futures::future::join_all(starts).await;
        for (name, id, result, changes) in results {
            self.settle(&name, id, result, changes).await;
        }
        self.list_tools().await;
        self.settled.send_replace(true);
        let servers = lock(&self.servers);
        touched
            .into_iter()
            .map(|name| {
                let status = servers.get(&name).map(|server| server.status.clone());
                (name, status)
            })
            .collect()
    }

    /// Shuts every server down gracefully (close stdin, wait, SIGTERM, kill) and reaps it.
    pub async fn shutdown(&self) {
        // From here no start spawns a process; one spawned before has its id recorded.
        *lock(&self.closed) = true;
        self.ended.cancel();
        let (services, starting): (Vec<Stopping>, Vec<u32>) = {
            let mut servers = lock(&self.servers);
            let mut services = Vec::new();
            let mut starting = Vec::new();
            for server in servers.values_mut() {
                server.peer = None;
                match server.service.take() {
                    Some(service) => services.push((service, server.group())),
                    // Still in its handshake: its process and group end here too. (Not a
                    // server that failed: its process is gone, and its id may be another's.)
                    None if server.status == ServerStatus::Starting => {
                        starting.extend(server.group());
                    }
                    None => {}
                }
            }
            (services, starting)
        };
        let handshakes = futures::future::join_all(starting.into_iter().map(processes::end_group));
        futures::future::join(stop(services), handshakes).await;
    }
}

impl McpManager {
    /// Kills every stdio server process at once (SIGKILL), for a process about to exit
    /// that cannot wait for [`McpManager::shutdown`] (a second Ctrl-C while it runs). A pid
    /// is only signalled while it is still this process's unreaped child in its session,
    /// so a pid the kernel gave to another process since is never hit; its process group
    /// (what it started) goes with it. Each server's connection is
    /// dropped first, as [`McpManager::shutdown`] drops it: coder ended them, so their
    /// exits are not reported as failures.
    pub(crate) fn kill_now(&self) {
        *lock(&self.closed) = true;
        self.ended.cancel();
        let pids: Vec<u32> = lock(&self.servers)
            .values_mut()
            .filter_map(|server| {
                server.peer = None;
                server.group()
            })
            .collect();
        for pid in pids {
            processes::kill_now(pid);
        }
    }
}

/// The manager while the servers of its first start (`started`: names and ids) start:
/// when dropped, at the end of the start or when the start panics, the start is over
/// ([`McpManager::settled_now`]), so no task waits for it forever.
struct Settling {
    manager: Arc<McpManager>,
    started: Vec<(String, u64)>,
}

impl Drop for Settling {
    fn drop(&mut self) {
        self.manager.settled_now(&self.started);
    }
}

/// A server's connection to stop, and its process (the leader of its process group).
type Stopping = (Connection, Option<u32>);

/// Stops `servers` together: each connection closes (stdin closed, then SIGTERM, then
/// kill, by `rmcp`), then what is left of the server's process group is ended.
async fn stop(servers: Vec<Stopping>) {
    futures::future::join_all(servers.into_iter().map(|(service, pid)| async move {
        let _ = service.cancel().await;
        if let Some(pid) = pid {
            processes::end_group(pid).await;
        }
    }))
    .await;
}

/// Notices servers that exit while idle, so their status and a `warning` say so before the
/// next call finds out. A stdio server's stderr reader says when its stderr ends (the
/// process exited, or closed it): the server is marked exited once its connection is
/// closed too, within [`EXIT_GRACE`]. A streamable HTTP server has no process to end, so
/// while one is ready its connection is checked every [`HTTP_CHECK`]. Otherwise the watcher
/// waits without a timer (a reload that settles may have started an HTTP server): an idle
/// session does not wake up. Ends with the manager.
async fn watch_for_exits(
    manager: std::sync::Weak<McpManager>,
    mut exits: mpsc::UnboundedReceiver<Exit>,
) {
    let Some(mut settled) = manager.upgrade().map(|manager| manager.settled.subscribe()) else {
        return;
    };
    loop {
        let checking = manager
            .upgrade()
            .is_some_and(|manager| manager.http_ready());
        tokio::select! {
            exit = exits.recv() => {
                let Some((name, pid, ended)) = exit else {
                    return;
                };
                // A check may wait for a busy server up to its tool timeout: the others
                // are not held up behind it.
                tokio::spawn(check_ended(manager.clone(), name, pid, ended));
            }
            // An error: the manager is gone.
            changed = settled.changed(), if !checking => if changed.is_err() {
                return;
            },
            () = tokio::time::sleep(HTTP_CHECK), if checking => {
                let Some(manager) = manager.upgrade() else {
                    return;
                };
                let closed: Vec<(String, u64)> = lock(&manager.servers)
                    .iter()
                    .filter(|(_, s)| s.is_http() && matches!(s.status, ServerStatus::Ready { .. }))
                    .filter(|(_, s)| s.peer.as_ref().is_some_and(Peer::is_transport_closed))
                    .map(|(name, s)| (name.clone(), s.id))
                    .collect();
                for (name, id) in closed {
                    manager.mark_exited(&name, id, "its connection closed");
                }
            }
        }
    }
}

impl McpManager {
    /// Whether any streamable HTTP server is ready.
    fn http_ready(&self) -> bool {
        lock(&self.servers)
            .values()
            .any(|server| server.is_http() && matches!(server.status, ServerStatus::Ready { .. }))
    }

    /// What [`check_ended`] watches of server `name`, while it is the one of process `pid`
    /// and ready: its connection, its calls under way and its tool timeout.
    fn watched(&self, name: &str, pid: u32) -> Option<Watched> {
        let servers = lock(&self.servers);
        let server = servers.get(name)?;
        if server.pid != Some(pid) || !matches!(server.status, ServerStatus::Ready { .. }) {
            return None;
        }
        Some(Watched {
            id: server.id,
            peer: server.peer.clone()?,
            calls: server.calls.clone(),
            tool_timeout: server.tool_timeout,
        })
    }
}

/// What [`check_ended`] watches of a server.
struct Watched {
    id: u64,
    peer: Peer<RoleClient>,
    calls: Arc<AtomicUsize>,
    tool_timeout: Duration,
}

/// Reads the tools of server `name` (its start `id`) again each time it says its list
/// changed (`changes`, from its [`ServerEvents`]), once the servers have settled (a change
/// during the first listing is read after it). Several changes while one read runs make one
/// more read. Ends with the server's connection, with the start a reload replaced, or with
/// the manager, which it holds only while reading.
async fn follow_tool_changes(
    manager: Weak<McpManager>,
    name: String,
    id: u64,
    mut changes: watch::Receiver<u64>,
) {
    while changes.changed().await.is_ok() {
        let Some(mut settled) = manager.upgrade().map(|manager| manager.settled.subscribe()) else {
            return;
        };
        if settled.wait_for(|settled| *settled).await.is_err() {
            return;
        }
        let Some(manager) = manager.upgrade() else {
            return;
        };
        if !manager.relist(&name, id).await {
            return;
        }
    }
}

/// Something of server `name`'s process `pid` ended. When it is the process, the server is
/// marked exited unless it still answers a `ping` within [`EXIT_GRACE`]: a process it
/// started may hold its pipes open and be the server (a launcher that exits after starting
/// it), or only hold them (a helper) with nobody answering. While a tool call is under way
/// the answer may wait behind it (a server that serves one request at a time), so it is
/// awaited as long as calls are, up to the tool timeout. When it is its stderr, the server
/// is marked exited once its connection is closed (within [`EXIT_GRACE`]); still
/// connected, it only closed its stderr. A server restarted since (another pid), not
/// ready, or stopped by coder (shutdown drops its connection first) is left alone either
/// way. Holds the manager only between waits.
async fn check_ended(manager: std::sync::Weak<McpManager>, name: String, pid: u32, ended: Ended) {
    let started = tokio::time::Instant::now();
    let mark = |id: u64, error: &str| {
        if let Some(manager) = manager.upgrade() {
            manager.mark_exited(&name, id, error);
        }
    };
    loop {
        let Some(Watched {
            id,
            peer,
            calls,
            tool_timeout,
        }) = manager
            .upgrade()
            .and_then(|manager| manager.watched(&name, pid))
        else {
            return;
        };
        if ended == Ended::Process {
            if peer.is_transport_closed() || !answers(&peer, &calls, tool_timeout).await {
                mark(id, "its process ended");
            } else {
                // A launcher that left the server it started on its pipes: the server's
                // own end is seen when its stderr ends.
                tracing::info!(
                    server = name,
                    pid,
                    "an MCP server's process ended; the server it started still answers"
                );
            }
            return;
        }
        if peer.is_transport_closed() {
            mark(id, "its connection closed");
            return;
        }
        if started.elapsed() >= EXIT_GRACE {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether the server at `peer` answers a `ping`: within [`EXIT_GRACE`] of the last moment
/// any of its `calls` was under way (a server that serves one request at a time answers
/// after the call before it), and never later than `longest`. An error answer counts:
/// whoever sent it is there.
async fn answers(peer: &Peer<RoleClient>, calls: &AtomicUsize, longest: Duration) -> bool {
    /// How often the calls under way are looked at while the answer is awaited.
    const LOOK: Duration = Duration::from_millis(50);
    let started = tokio::time::Instant::now();
    let mut last_busy = started;
    let ping = peer.send_request(ClientRequest::PingRequest(PingRequest {
        method: Default::default(),
        extensions: Default::default(),
    }));
    tokio::pin!(ping);
    loop {
        match tokio::time::timeout(LOOK, &mut ping).await {
            Ok(answer) => {
                return matches!(answer, Ok(_) | Err(rmcp::ServiceError::McpError(_)));
            }
            Err(_) => {
                if calls.load(Ordering::SeqCst) > 0 {
                    last_busy = tokio::time::Instant::now();
                }
                if last_busy.elapsed() >= EXIT_GRACE
                    || started.elapsed() >= longest.max(EXIT_GRACE)
                    || peer.is_transport_closed()
                {
                    return false;
                }
            }
        }
    }
}

fn failed(error: &str, stderr: &Arc<Mutex<VecDeque<String>>>) -> ServerStatus {
    ServerStatus::Failed {
        error: error.to_owned(),
        stderr: tail(stderr),
    }
}

fn failure_report(name: &str, error: &str, stderr: &str) -> String {
    if stderr.is_empty() {
        format!("MCP server `{name}` failed: {error}")
    } else {
        format!("MCP server `{name}` failed: {error}; its stderr ends with:\n{stderr}")
    }
}

fn tail(stderr: &Arc<Mutex<VecDeque<String>>>) -> String {
    lock(stderr).iter().cloned().collect::<Vec<_>>().join("\n")
}

/// Where a start of a stdio server reports while it runs: its stderr's last lines, the ends
/// of its stderr and its process ([`watch_for_exits`]), and its process id once spawned.
struct StartReports {
    stderr: Arc<Mutex<VecDeque<String>>>,
    exits: mpsc::UnboundedSender<Exit>,
    spawned: Arc<AtomicU32>,
    /// The manager's [`McpManager::closed`]: held while the process is spawned.
    closed: Arc<Mutex<bool>>,
}

/// Starts one stdio server and initialises the MCP session, within its startup timeout.
async fn start_one(
    (name, id): (String, u64),
    config: McpServerConfig,
    workspace: std::path::PathBuf,
    env: Arc<ToolEnv>,
    reports: StartReports,
) -> (
    String,
    u64,
    Result<(Connection, Option<u32>), String>,
    watch::Receiver<u64>,
) {
    let timeout = config.startup_timeout(DEFAULT_STARTUP_TIMEOUT);
    let (events, changes) = ServerEvents::new();
    let result = match (&config.command, &config.url) {
        (Some(program), _) => {
            start_stdio(&name, program, &config, &workspace, &env, reports, events).await
        }
        (None, Some(url)) => start_http(url, &config, events, timeout).await,
        (None, None) => Err("neither `command` nor `url` is configured".to_owned()),
    };
    (name, id, result, changes)
}

/// Starts a stdio server and initialises the MCP session. Its stderr's last lines are kept
/// in `stderr_tail`, and `exits` is told when its stderr ends and when its process does.
async fn start_stdio(
    name: &str,
    program: &str,
    config: &McpServerConfig,
    workspace: &Path,
    env: &ToolEnv,
    StartReports {
        stderr: stderr_tail,
        exits,
        spawned,
        closed,
    }: StartReports,
    events: ServerEvents,
) -> Result<(Connection, Option<u32>), String> {
    let timeout = config.startup_timeout(DEFAULT_STARTUP_TIMEOUT);
    let mut command = tokio::process::Command::new(program);
    // Inherited secrets are withheld; what the server's own `env` names is passed.
    env.apply(&mut command);
    processes::own_group(&mut command);
    command
        .args(&config.args)
        .envs(&config.env)
        .current_dir(match &config.cwd {
            Some(dir) => workspace.join(dir),
            None => workspace.to_path_buf(),
        });
    let (transport, stderr) = {
        let closed = lock(&closed);
        if *closed {
            return Err("the session ended before it started".to_owned());
        }
        let (transport, stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|err| format!("cannot start `{program}`: {err}"))?;
        if let Some(pid) = transport.id() {
            spawned.store(pid, Ordering::SeqCst);
        }
        drop(closed);
        (transport, stderr)
    };
    let pid = transport.id();
    if let Some(pid) = pid {
        watch_process(name, pid, exits.clone());
    }
    if let Some(stderr) = stderr {
        let name = name.to_owned();
        tokio::spawn(async move {
            keep_tail(stderr, &stderr_tail).await;
            if let Some(pid) = pid {
                let _ = exits.send((name, pid, Ended::Stderr));
            }
        });
    }
    let started = handshake(events.serve(ProgressTap::new(transport)), timeout).await;
    if started.is_err()
        && let Some(pid) = pid
    {
        // What the server started goes with it.
        processes::end_group(pid).await;
    }
    started.map(|service| (service, pid))
}

/// Tells `exits` when process `pid` (a server just started, not yet waited for, so the id
/// is still its own) ends, through a pidfd, which becomes readable then: a server whose
/// stderr a process it started keeps open is noticed at once, not at its next call. Where
/// the kernel has no pidfds (Linux before 5.3, other systems) only its stderr's end is
/// watched.
fn watch_process(name: &str, pid: u32, exits: mpsc::UnboundedSender<Exit>) {
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{Pid, PidfdFlags, pidfd_open};
        let Some(raw) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
            return;
        };
        let Ok(pidfd) = pidfd_open(raw, PidfdFlags::empty()) else {
            return;
        };
        // SAFETY: `pidfd` is an `OwnedFd` just opened and moved into the `AsyncFd`, which
        // owns it until it is dropped: its descriptor stays open and the same all along.
        #[allow(unsafe_code)]
        let registered = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE)
        };
        let Ok(pidfd) = registered else {
            return;
        };
        let name = name.to_owned();
        tokio::spawn(async move {
            if pidfd.readable().await.is_ok() {
                let _ = exits.send((name, pid, Ended::Process));
            }
        });
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (name, pid, exits);
}

/// Reads `stderr` to its end, keeping its last [`STDERR_LINES`] lines in `tail`, each cut
/// to [`STDERR_LINE_BYTES`]. Whatever the server writes (bytes that are not UTF-8, a line
/// that never ends) is read on, so the server never waits on a full pipe, in bounded
/// memory.
async fn keep_tail(stderr: impl tokio::io::AsyncRead + Unpin, tail: &Mutex<VecDeque<String>>) {
    let mut stderr = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        let (consumed, ended) = match stderr.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(chunk) => {
                let end = chunk.iter().position(|&byte| byte == b'\n');
                let part = &chunk[..end.unwrap_or(chunk.len())];
                let room = STDERR_LINE_BYTES.saturating_sub(line.len());
                line.extend_from_slice(&part[..part.len().min(room)]);
                (end.map_or(chunk.len(), |end| end + 1), end.is_some())
            }
        };
        stderr.consume(consumed);
        if ended {
            push_line(tail, &mut line);
        }
    }
    if !line.is_empty() {
        push_line(tail, &mut line);
    }
}

/// Moves `line` to the end of `tail`, dropping the oldest past [`STDERR_LINES`].
fn push_line(tail: &Mutex<VecDeque<String>>, line: &mut Vec<u8>) {
    let text = String::from_utf8_lossy(line)
        .trim_end_matches('\r')
        .to_owned();
    line.clear();
    let mut tail = lock(tail);
    if tail.len() == STDERR_LINES {
        tail.pop_front();
    }
    tail.push_back(text);
}

/// Connects to a streamable HTTP server and initialises the MCP session.
async fn start_http(
    url: &str,
    config: &McpServerConfig,
    events: ServerEvents,
    timeout: Duration,
) -> Result<(Connection, Option<u32>), String> {
    let mut headers = HashMap::new();
    for (name, value) in &config.headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|err| format!("invalid header name `{name}`: {err}"))?;
        let value = HeaderValue::from_str(value)
            .map_err(|err| format!("invalid value for header `{name}`: {err}"))?;
        headers.insert(name, value);
    }
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers),
    );
    handshake(events.serve(ProgressTap::new(transport)), timeout)
        .await
        .map(|service| (service, None))
}

async fn handshake<E: std::fmt::Display>(
    serve: impl std::future::Future<Output = Result<Connection, E>>,
    timeout: Duration,
) -> Result<Connection, String> {
    match tokio::time::timeout(timeout, serve).await {
        Ok(Ok(service)) => Ok(service),
        Ok(Err(err)) => Err(format!("it did not complete the MCP handshake: {err}")),
        Err(_) => Err(format!(
            "it did not start within {:.0}s",
            timeout.as_secs_f64()
        )),
    }
}

/// MCP content blocks as a tool result: text joined, images attached, others as JSON.
#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_manager_dropped_by_its_session_is_gone_and_its_watcher_with_it() {
        let report: Reporter = Arc::new(|_| {});
        let manager =
            McpManager::start(BTreeMap::new(), Path::new("."), ToolEnv::default(), report);
        manager.settled().await;
        let weak = Arc::downgrade(&manager);
        drop(manager);
        for _ in 0..100 {
            if weak.upgrade().is_none() {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("the manager outlived its session: its start task still holds it");
    }

    /// What [`keep_tail`] keeps of `written`, read in pieces of `piece` bytes.
    async fn tail_of(written: Vec<u8>, piece: usize) -> Vec<String> {
        let (mut ours, theirs) = tokio::io::duplex(piece);
        let writer = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            ours.write_all(&written).await.unwrap();
        });
        let tail = Mutex::new(VecDeque::new());
        keep_tail(theirs, &tail).await;
        writer.await.unwrap();
        tail.into_inner().unwrap().into_iter().collect()
    }

    #[tokio::test]
    async fn a_servers_stderr_is_read_to_its_end_whatever_it_writes() {
        // Bytes that are not UTF-8 do not stop the reading.
        let mut written = b"first\r\n\xff\xfe broken\n".to_vec();
        // A line that never ends is cut, and read on.
        written.extend(std::iter::repeat_n(b'x', 10 << 20));
        written.extend_from_slice(b"\nlast without an end");
        let tail = tail_of(written, 4096).await;
        assert_eq!(tail.len(), 4);
        assert_eq!(tail[0], "first");
        assert_eq!(tail[1], "\u{fffd}\u{fffd} broken");
        assert_eq!(tail[2], "x".repeat(STDERR_LINE_BYTES));
        assert_eq!(tail[3], "last without an end");
    }

    #[tokio::test]
    async fn only_the_last_lines_are_kept() {
        let written: String = (0..100).map(|n| format!("line {n}\n")).collect();
        let tail = tail_of(written.into_bytes(), 7).await;
        let expected: Vec<String> = (80..100).map(|n| format!("line {n}")).collect();
        assert_eq!(tail, expected);
    }
}
