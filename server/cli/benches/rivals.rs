//! Side by side with Codex and Claude Code: the same one-shot task, in each of the three
//! workspaces of `coder_testkit::workspaces` (a plain folder of 20,000 files, a git
//! repository of them, and that repository with a 100 MB untracked file), run by
//! `coder exec`, `codex exec` and `claude -p`, each against the testkit's scripted model
//! server on 127.0.0.1 in the wire format it speaks: OpenAI Chat Completions for coder,
//! OpenAI Responses for Codex (the only API it speaks), Anthropic Messages for Claude Code.
//!
//! Two tasks: **talk**, a reply of one text delta; and **command**, a reply whose one tool
//! call runs `printf` into a tracked file with the agent's own shell tool, then a text
//! reply (a turn that changes a file). Each agent runs with what it needs to run that
//! command without asking: coder with `--auto-approve` (its sandbox on, as always), Codex
//! with `--sandbox workspace-write` (its sandbox, approvals never asked in `exec`), Claude
//! Code with `--allowedTools Bash` (it has no sandbox unless configured).
//!
//! Each run is timed from spawn to exit, with its peak resident set (`ru_maxrss` of
//! `wait4`: the largest of the process and of the processes it waited for), by a small
//! helper process that starts it (see `support/timed.rs`: the peak of a program started by
//! the bench itself would include the bench's own size). The agents and
//! workspaces take turns within each round (after a warm-up round, set aside), so a busy
//! stretch of the machine weighs on them alike. Prints, per task and workspace, the
//! medians and coder's ratios to each rival (time: the median of the run-by-run ratios;
//! memory: the ratio of the medians), and each agent's ratio of each repository to the
//! plain folder.
//!
//! The rivals are installed from the npm registry by `scripts/setup-codex.sh` and
//! `scripts/setup-claude-code.sh` (pinned versions, cached under `~/.cache/coder/`). A rival
//! that cannot be installed or fails a run is reported with the reason and left out from
//! then on; the bench carries on with the others.
//!
//! Run: `cargo bench -p coder --bench rivals` (`-- codex` or `-- claude` for one rival;
//! `BENCH_RUNS=N` rounds, default 9; `BENCH_FILES=N` files in each workspace; `CODER_BIN`
//! names the `coder` binary to measure).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use coder_testkit::workspaces::{TRACKED_FILE, Workspace, Workspaces, median_ratio};
use coder_testkit::{Chunk, MockModelServer, MockResponse};
use serde_json::json;

#[path = "support/install.rs"]
mod install;
#[path = "support/timed.rs"]
mod timed;

/// How long one run may take before it is killed and its agent left out.
const DEADLINE: Duration = Duration::from_secs(120);

/// The reply every task ends with; each agent prints it as its answer.
const ANSWER: &str = "Done.";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Agent {
    Coder,
    Codex,
    ClaudeCode,
}

impl Agent {
    fn name(self) -> &'static str {
        match self {
            Self::Coder => "coder",
            Self::Codex => "Codex",
            Self::ClaudeCode => "Claude Code",
        }
    }

    /// The name that picks it on the command line.
    fn key(self) -> &'static str {
        match self {
            Self::Coder => "coder",
            Self::Codex => "codex",
            Self::ClaudeCode => "claude",
        }
    }

    /// Its executable: this build's `coder` (or `CODER_BIN`), or the rival's install
    /// script's; `None` when a rival cannot be installed (the script said why).
    fn binary(self) -> Option<PathBuf> {
        let scripts = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts");
        match self {
            Self::Coder => Some(
                std::env::var_os("CODER_BIN")
                    .unwrap_or_else(|| env!("CARGO_BIN_EXE_coder").into())
                    .into(),
            ),
            Self::Codex => install::installed(&format!("{scripts}/setup-codex.sh"), "codex"),
            Self::ClaudeCode => {
                install::installed(&format!("{scripts}/setup-claude-code.sh"), "claude-code")
            }
        }
    }

    /// The tool call that runs `command` with the agent's own shell tool, as its model would
    /// write it.
    fn shell_call(self, command: &str) -> Chunk {
        let (name, arguments) = match self {
            Self::Coder => ("bash", json!({"command": command})),
            Self::Codex => ("exec_command", json!({"cmd": command})),
            Self::ClaudeCode => (
                "Bash",
                json!({"command": command, "description": "Change the tracked file"}),
            ),
        };
        Chunk::tool_call("call_1", name, arguments)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Task {
    Talk,
    Command,
}

impl Task {
    const ALL: [Self; 2] = [Self::Talk, Self::Command];

    fn title(self) -> &'static str {
        match self {
            Self::Talk => "talk (a reply of one delta)",
            Self::Command => "a command (one shell call that changes a tracked file, then a reply)",
        }
    }

    fn prompt(self) -> &'static str {
        match self {
            Self::Talk => "Say done.",
            Self::Command => "Change tracked.txt.",
        }
    }

    /// What the model answers to `agent`'s requests for run `n` of this task.
    fn script(self, agent: Agent, n: usize) -> Vec<MockResponse> {
        let answer = MockResponse::stream(vec![Chunk::text(ANSWER), Chunk::usage(1_000, 2)]);
        match self {
            Self::Talk => vec![answer],
            Self::Command => vec![
                MockResponse::stream(vec![agent.shell_call(&change(n)), Chunk::usage(1_000, 20)]),
                answer,
            ],
        }
    }
}

/// The command of run `n`: it writes `n` into the tracked file, which shows it ran.
fn change(n: usize) -> String {
    format!("printf '{n}\\n' > {TRACKED_FILE}")
}

/// One agent as the bench runs it: its executable, a model server of its own (so what one
/// agent leaves in a script cannot reach another), a home directory of its own, and where
/// its output goes.
struct Contender {
    agent: Agent,
    binary: PathBuf,
    server: MockModelServer,
    home: tempfile::TempDir,
    output: tempfile::TempDir,
    /// Why it is no longer measured.
    dropped: Option<String>,
}

impl Contender {
    async fn new(agent: Agent, binary: PathBuf) -> Self {
        let server = MockModelServer::start(Vec::new()).await.unwrap();
        server.forget_bodies();
        let home = tempfile::tempdir().unwrap();
        if agent == Agent::Codex {
            std::fs::write(
                home.path().join("config.toml"),
                codex_config(&server.openai_base_url()),
            )
            .unwrap();
        }
        Self {
            agent,
            binary,
            server,
            home,
            output: tempfile::tempdir().unwrap(),
            dropped: None,
        }
    }

    fn stdout_path(&self) -> PathBuf {
        self.output.path().join("stdout")
    }

    fn stderr_path(&self) -> PathBuf {
        self.output.path().join("stderr")
    }

    fn report_path(&self) -> PathBuf {
        self.output.path().join("timed")
    }

    /// The command that runs `task` in `workspace`, with nothing of this process's
    /// environment but `PATH`.
    fn command(&self, task: Task, workspace: &Path) -> Command {
        let mut command = timed::command(&self.binary, &self.report_path()).unwrap();
        command
            .current_dir(workspace)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .stdin(Stdio::null())
            .stdout(File::create(self.stdout_path()).unwrap())
            .stderr(File::create(self.stderr_path()).unwrap());
        match self.agent {
            Agent::Coder => {
                command
                    .args(["exec", "--auto-approve", task.prompt()])
                    .env("CODER_MODEL", "mock-model")
                    .env("OPENAI_BASE_URL", self.server.openai_base_url())
                    .env("OPENAI_API_KEY", "bench");
            }
            Agent::Codex => {
                command
                    .args(["exec", "--strict-config", "--skip-git-repo-check"])
                    .args(["--sandbox", "workspace-write", task.prompt()])
                    .env("CODEX_HOME", self.home.path())
                    .env("MOCK_API_KEY", "bench");
            }
            Agent::ClaudeCode => {
                command
                    .args(["-p", task.prompt(), "--allowedTools", "Bash"])
                    .env("ANTHROPIC_BASE_URL", self.server.anthropic_base_url())
                    .env("ANTHROPIC_API_KEY", "bench")
                    // Its documented switches for traffic other than the model's: the
                    // first covers the others, which are set as well in case it changes.
                    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                    .env("DISABLE_TELEMETRY", "1")
                    .env("DISABLE_ERROR_REPORTING", "1")
                    .env("DISABLE_AUTOUPDATER", "1");
            }
        }
        command
    }

    /// Run `n` of `task` in `workspace`: its time and peak memory, or why it failed.
    fn run(&self, task: Task, workspace: &Path, n: usize) -> Result<(Duration, u64), String> {
        let script = task.script(self.agent, n);
        let takes = script.len();
        let before = self.server.requests().len();
        self.server.push(script);
        let run = timed::run(self.command(task, workspace), &self.report_path(), DEADLINE)
            .map_err(|error| format!("could not run {}: {error}", self.binary.display()))?;
        let stdout = std::fs::read_to_string(self.stdout_path()).unwrap_or_default();
        let stderr = std::fs::read_to_string(self.stderr_path()).unwrap_or_default();
        let tail = |text: &str| {
            let start = text.len().saturating_sub(1_500);
            let start = (start..text.len())
                .find(|&i| text.is_char_boundary(i))
                .unwrap_or(text.len());
            text[start..].to_owned()
        };
        let failed = |what: String| {
            format!(
                "{what}; stdout ends: {:?}; stderr ends: {:?}",
                tail(&stdout),
                tail(&stderr)
            )
        };
        if run.timed_out {
            return Err(failed(format!("killed after {DEADLINE:?}")));
        }
        if !run.status.success() {
            return Err(failed(format!("exited with {}", run.status)));
        }
        if !stdout.contains(ANSWER) {
            return Err(failed(format!("did not print the answer {ANSWER:?}")));
        }
        let asked = self.server.requests().len() - before;
        if asked != takes {
            return Err(failed(format!(
                "made {asked} model requests where the task takes {takes}"
            )));
        }
        if task == Task::Command {
            let tracked = std::fs::read_to_string(workspace.join(TRACKED_FILE)).unwrap_or_default();
            if tracked != format!("{n}\n") {
                return Err(failed(format!(
                    "did not run the command: {TRACKED_FILE} holds {tracked:?}"
                )));
            }
        }
        Ok((run.wall, run.peak_rss_kib))
    }

    /// The first line `--version` prints, or why it could not run.
    fn version(&self) -> Result<String, String> {
        let output = Command::new(&self.binary)
            .arg("--version")
            .env("HOME", self.home.path())
            .env("CODEX_HOME", self.home.path())
            .stdin(Stdio::null())
            .output()
            .map_err(|error| format!("could not run {}: {error}", self.binary.display()))?;
        if !output.status.success() {
            return Err(format!(
                "`{} --version` exited with {}: {}",
                self.binary.display(),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&output.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned())
    }
}

/// Codex's configuration: the testkit's server as its model provider (Responses, the only
/// wire API it accepts), no retries, and nothing sent anywhere else: no update check, no
/// analytics, and no plugins (whose sync runs `git ls-remote` against GitHub at each start).
fn codex_config(base_url: &str) -> String {
    format!(
        r#"model = "mock-model"
model_provider = "mock"
check_for_update_on_startup = false

[analytics]
enabled = false

[features]
plugins = false

[model_providers.mock]
name = "mock"
base_url = "{base_url}"
wire_api = "responses"
env_key = "MOCK_API_KEY"
request_max_retries = 0
stream_max_retries = 0
"#
    )
}

/// Every run's time and peak memory (KiB), for each task, workspace and agent.
type Samples = Vec<Vec<Vec<Vec<(Duration, u64)>>>>;

fn main() {
    let mut args = std::env::args_os().skip(1).peekable();
    if args.peek().is_some_and(|arg| arg == timed::HELPER_ARG) {
        args.next();
        timed::helper_main(args);
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(bench());
}

async fn bench() {
    let chosen: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with('-'))
        .collect();
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(9);
    let mut contenders = Vec::new();
    for agent in [Agent::Coder, Agent::Codex, Agent::ClaudeCode] {
        let wanted = agent == Agent::Coder
            || chosen.is_empty()
            || chosen.iter().any(|arg| arg == agent.key());
        if !wanted {
            continue;
        }
        let Some(binary) = agent.binary() else {
            println!(
                "{}: not measured: it could not be installed (see above)",
                agent.name()
            );
            continue;
        };
        let contender = Contender::new(agent, binary).await;
        match contender.version() {
            Ok(version) => println!("{}: {version}", agent.name()),
            Err(why) if agent == Agent::Coder => panic!("coder cannot run: {why}"),
            Err(why) => {
                println!("{}: not measured: {why}", agent.name());
                continue;
            }
        }
        contenders.push(contender);
    }
    let reports = tempfile::tempdir().unwrap();
    let floor = timed::floor_kib(&reports.path().join("floor")).unwrap();
    println!(
        "peak memory of `true` started by the timing helper: {:.1} MiB (no peak below it can be seen)",
        floor as f64 / 1024.0
    );
    let workspaces = Workspaces::for_bench().unwrap();
    let samples = measure(&mut contenders, &workspaces, runs);
    for contender in &contenders {
        if let Some(why) = &contender.dropped {
            println!("{}: left out: {why}", contender.agent.name());
        }
    }
    report(&contenders, &samples, &workspaces, runs);
}

/// The rounds: in each, every task in every workspace by every agent still measured, in
/// turn, each round starting with the next workspace and the next agent; the first round is
/// a warm-up (each agent's first start in its home, the page cache) and is not kept.
fn measure(contenders: &mut [Contender], workspaces: &Workspaces, runs: usize) -> Samples {
    let mut samples: Samples =
        vec![vec![vec![Vec::new(); contenders.len()]; Workspace::ALL.len()]; Task::ALL.len()];
    let mut n = 0;
    for round in 0..=runs {
        for (t, task) in Task::ALL.into_iter().enumerate() {
            for place in Workspace::in_turn(round) {
                let agents = contenders.len();
                for a in (0..agents).map(|a| (a + round) % agents) {
                    let contender = &mut contenders[a];
                    if contender.dropped.is_some() {
                        continue;
                    }
                    n += 1;
                    match contender.run(task, workspaces.path(place), n) {
                        Ok(sample) if round > 0 => samples[t][place.index()][a].push(sample),
                        Ok(_) => {}
                        Err(why) if contender.agent == Agent::Coder => {
                            panic!("coder failed {task:?} in the {}: {why}", place.name())
                        }
                        Err(why) => {
                            let why = format!("{task:?} in the {}: {why}", place.name());
                            eprintln!("{}: left out: {why}", contender.agent.name());
                            contender.dropped = Some(why);
                        }
                    }
                }
            }
        }
        eprintln!("round {round} of {runs} done");
    }
    samples
}

fn report(contenders: &[Contender], samples: &Samples, workspaces: &Workspaces, runs: usize) {
    let times = |t: usize, place: Workspace, a: usize| -> Vec<Duration> {
        samples[t][place.index()][a].iter().map(|s| s.0).collect()
    };
    let median_ms = |values: Vec<Duration>| -> Option<f64> {
        let mut values = values;
        values.sort();
        values
            .get(values.len() / 2)
            .map(|d| d.as_secs_f64() * 1000.0)
    };
    let median_mib = |t: usize, place: Workspace, a: usize| -> Option<f64> {
        let mut values: Vec<u64> = samples[t][place.index()][a].iter().map(|s| s.1).collect();
        values.sort_unstable();
        values.get(values.len() / 2).map(|&kib| kib as f64 / 1024.0)
    };
    let cell = |ms: Option<f64>, mib: Option<f64>| match (ms, mib) {
        (Some(ms), Some(mib)) => format!("{ms:.1} ms, {mib:.1} MiB"),
        _ => "not measured".to_owned(),
    };
    println!(
        "\none-shot runs in three workspaces of {} files, {runs} rounds (after a warm-up): medians; coder / rival: time as the median of the run-by-run ratios, memory as the ratio of the medians",
        workspaces.files()
    );
    for (t, task) in Task::ALL.into_iter().enumerate() {
        println!("\n{}:", task.title());
        let mut head = "| workspace | coder |".to_owned();
        let mut rule = "| --- | --- |".to_owned();
        for contender in &contenders[1..] {
            let name = contender.agent.name();
            head.push_str(&format!(" {name} | coder / {name} |"));
            rule.push_str(" --- | --- |");
        }
        println!("{head}\n{rule}");
        for place in Workspace::ALL {
            let mut line = format!(
                "| {} | {} |",
                place.name(),
                cell(median_ms(times(t, place, 0)), median_mib(t, place, 0))
            );
            for a in 1..contenders.len() {
                let rival = times(t, place, a);
                let ratios = match (median_mib(t, place, 0), median_mib(t, place, a)) {
                    (Some(ours), Some(theirs)) if !rival.is_empty() => format!(
                        "{:.3}x, {:.2}x",
                        median_ratio(&times(t, place, 0), &rival),
                        ours / theirs
                    ),
                    _ => String::new(),
                };
                line.push_str(&format!(
                    " {} | {ratios} |",
                    cell(median_ms(rival.clone()), median_mib(t, place, a))
                ));
            }
            println!("{line}");
        }
        println!(
            "each agent's time in a repository against the plain folder (median of the run-by-run ratios; coder's target <= 1.2x):"
        );
        for (a, contender) in contenders.iter().enumerate() {
            let plain = times(t, Workspace::Plain, a);
            if plain.is_empty() {
                continue;
            }
            println!(
                "  {}: {} {:.2}x, {} {:.2}x",
                contender.agent.name(),
                Workspace::Repository.name(),
                median_ratio(&times(t, Workspace::Repository, a), &plain),
                Workspace::Untracked.name(),
                median_ratio(&times(t, Workspace::Untracked, a), &plain),
            );
        }
    }
}
