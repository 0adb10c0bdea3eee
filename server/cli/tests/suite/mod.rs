mod command_safety;
mod commands_and_skills;
mod exec;
mod file_safety;
mod grep;
mod hostile_output;
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
