mod auto_approval;
mod coder_dir_links;
mod command_safety;
mod commands_and_skills;
mod door_bounds;
mod exec;
mod file_safety;
mod grep;
mod hostile_output;
mod interactive;
mod lsp;
mod processes;
mod provider_errors;
mod references;
mod reply_limits;
mod rules;
mod sandbox;
mod sandbox_git;
mod secrets_of_coder;
mod terminal;
mod trust;

/// What a test's `coder` keeps of the test's environment after `env_clear`: `TMPDIR`, so a
/// run under a private `TMPDIR` shows whatever the binary leaves behind.
pub fn kept_env() -> impl Iterator<Item = (&'static str, std::ffi::OsString)> {
    ["TMPDIR"]
        .into_iter()
        .filter_map(|name| Some((name, std::env::var_os(name)?)))
}

/// The reference MCP server from npm (installed by `scripts/setup-mcp-servers.sh`), run as
/// `node <this> stdio`.
pub fn everything_script() -> std::path::PathBuf {
    let setup = std::process::Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scripts/setup-mcp-servers.sh"
        ))
        .output()
        .unwrap();
    assert!(
        setup.status.success(),
        "{}",
        String::from_utf8_lossy(&setup.stderr)
    );
    std::path::PathBuf::from(String::from_utf8(setup.stdout).unwrap().trim())
        .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

/// Reads the terminal whose other side is `master` until every holder of that side has
/// closed it; when `answer` is given, types its second part once its first shows. Returns
/// what the terminal showed.
pub fn read_terminal(
    master: std::fs::File,
    answer: Option<(&'static str, String)>,
) -> std::thread::JoinHandle<String> {
    use std::io::{Read, Write};
    let mut typing = master.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut master = master;
        let (mut seen, mut buf, mut answer) = (Vec::new(), [0; 4096], answer);
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
            if let Some((prompt, typed)) = &answer
                && String::from_utf8_lossy(&seen).contains(prompt)
            {
                typing.write_all(typed.as_bytes()).unwrap();
                answer = None;
            }
        }
        String::from_utf8_lossy(&seen).into_owned()
    })
}

/// The ids of a permission request's `options`, in order.
pub fn option_ids(options: &serde_json::Value) -> Vec<String> {
    options
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|option| option["optionId"].as_str().map(str::to_owned))
        .collect()
}
