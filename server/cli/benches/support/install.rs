//! Installs a program another agent ships (Codex, Claude Code) with one of the scripts in
//! `scripts/`, which cache it outside the repository and print its path as their last line.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Runs the install script `script` (a path) and returns the executable it printed, or
/// `None`, with the reason on stderr, when it cannot be installed (for example without
/// access to the npm registry). `name` names the program in messages.
pub fn installed(script: &str, name: &str) -> Option<PathBuf> {
    let output = match Command::new("bash")
        .arg(script)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
    {
        Ok(output) => output,
        Err(error) => {
            eprintln!("{name}: could not run {script}: {error}");
            return None;
        }
    };
    if !output.status.success() {
        eprintln!(
            "{name}: {script} failed ({}), skipping {name}",
            output.status
        );
        return None;
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let path = PathBuf::from(stdout.lines().last().unwrap_or_default().trim());
    if path.is_file() {
        Some(path)
    } else {
        eprintln!(
            "{name}: {script} printed {:?}, which is not a file, skipping {name}",
            path.display()
        );
        None
    }
}
