//! The configuration read again while the session runs: when `.coder/config.json` or the
//! user-level file changes, [`Config::reload`] loads it exactly as the front door loaded it
//! at start (same trust, same narrowing of an untrusted workspace's file, the door's own
//! settings still over the files), and the keys that apply live take the new values: the
//! model and its settings (`provider`, `model`, `baseUrl`, `apiKey`, `contextWindow`,
//! `maxOutputTokens`, `toolCalling`, `maxReplyBytes`, `streamIdleTimeoutMs`, `retry`), `permissions`,
//! `tools.disabled`, `maxSteps`, `compactThreshold`, `requireTodoForComplex`, `workflow`, `maxVerifyAttempts`, `maxPromptBytes`, `maxConversations`,
//! `maxInterruptChainDepth`, `maxHandoffsPerInput` and `promptCacheKey` (the README's
//! "Changing the configuration while coder runs" and [`with_live_keys`] must agree). The
//! others only apply after a restart, with a warning naming them. Tasks take the
//! configuration once, when they start: a running task keeps what it started with. A file
//! that cannot be used keeps the last good configuration.

use std::sync::Arc;

use crate::config::Config;
use crate::model::{ActiveModel, ModelSettings};
use crate::sync::lock;

use super::Session;

/// What reading the configuration again did.
pub(super) struct ConfigReload {
    /// For people: a file that could not be used, keys that apply after a restart, what an
    /// untrusted workspace's file asked for and did not get.
    pub warnings: Vec<String>,
    /// Whether anything that applies live changed.
    pub changed: bool,
}

impl Session {
    /// Reads the configuration again and applies what may change live. `paths` are the
    /// changed files, for the messages.
    pub(super) fn reload_config(&self, paths: &[String]) -> ConfigReload {
        let current = self.config();
        let next = match current.reload() {
            Some(Ok(next)) => next,
            Some(Err(err)) => {
                return ConfigReload {
                    warnings: vec![format!(
                        "{} changed but cannot be used ({err}); the last good configuration \
                         is kept until it is fixed",
                        paths.join(", ")
                    )],
                    changed: false,
                };
            }
            None => {
                return ConfigReload {
                    warnings: vec![format!(
                        "{} changed: this session's configuration was not loaded from files, \
                         so the change applies after a restart",
                        paths.join(", ")
                    )],
                    changed: false,
                };
            }
        };
        let mut warnings = Vec::new();
        let restart = restart_keys(&current, &next);
        if !restart.is_empty() {
            warnings.push(format!(
                "{} changed {}: {} only apply after a restart",
                paths.join(", "),
                restart.join(", "),
                if restart.len() == 1 { "it" } else { "they" },
            ));
        }
        // What an untrusted workspace's file asked for anew and did not get.
        if next.ignored_settings != current.ignored_settings {
            warnings.extend(
                next.warnings
                    .iter()
                    .filter(|warning| !current.warnings.contains(warning))
                    .cloned(),
            );
        }
        let applied = with_live_keys(&current, &next);
        // The model the session runs now is no change: `/model` switched to it and wrote
        // it in the file, a change coder made itself and does not report as a reload.
        let running = self.model_settings();
        let baseline = match &running {
            Some(running) if Some(running) == ModelSettings::from_config(&applied).as_ref() => {
                Config {
                    model: running.model.clone(),
                    ..(*current).clone()
                }
            }
            _ => (*current).clone(),
        };
        let changed = live_changed(&baseline, &applied);
        if changed && let Err(err) = self.apply_config(&current, &applied) {
            warnings.push(format!(
                "{} changed but the model cannot be set up ({}); the last good \
                     configuration is kept",
                paths.join(", "),
                err.message()
            ));
            return ConfigReload {
                warnings,
                changed: false,
            };
        }
        ConfigReload { warnings, changed }
    }

    /// Puts `next` in force: the configuration, the model (unless a front door switched it
    /// since: that choice stands) and the permission preset and rules.
    fn apply_config(&self, current: &Config, next: &Config) -> Result<(), crate::EngineError> {
        let model_before = ModelSettings::from_config(current);
        let model_next = ModelSettings::from_config(next);
        if model_before != model_next || !same_transport(current, next) {
            let active = match model_next {
                Some(settings) => Some(Arc::new(ActiveModel::new(settings, next)?)),
                None => None,
            };
            let mut state = self.state();
            let switched =
                state.model.as_ref().map(|model| &model.settings) != model_before.as_ref();
            if !switched {
                state.model = active;
            }
        }
        let permissions = &self.services.permissions;
        {
            let mut preset = lock(&permissions.preset);
            // A preset a front door set since start stands.
            if *preset == current.preset {
                *preset = next.preset;
            }
        }
        permissions.set_rules(next.permission_rules.clone());
        *lock(&self.services.config) = Arc::new(next.clone());
        Ok(())
    }
}

/// `current` with the live keys of `next`, every other key as it was.
fn with_live_keys(current: &Config, next: &Config) -> Config {
    Config {
        provider: next.provider.clone(),
        model: next.model.clone(),
        context_window: next.context_window,
        max_output_tokens: next.max_output_tokens,
        compact_threshold: next.compact_threshold,
        tool_calling: next.tool_calling,
        require_todo_for_complex: next.require_todo_for_complex,
        workflow: next.workflow.clone(),
        max_reply_bytes: next.max_reply_bytes,
        stream_idle_timeout: next.stream_idle_timeout,
        retry: next.retry,
        preset: next.preset,
        permission_rules: next.permission_rules.clone(),
        disabled_tools: next.disabled_tools.clone(),
        max_steps: next.max_steps,
        max_prompt_bytes: next.max_prompt_bytes,
        max_conversations: next.max_conversations,
        max_interrupt_chain_depth: next.max_interrupt_chain_depth,
        max_handoffs_per_input: next.max_handoffs_per_input,
        prompt_cache_key: next.prompt_cache_key,
        ignored_settings: next.ignored_settings.clone(),
        warnings: next.warnings.clone(),
        ..current.clone()
    }
}

/// Whether a live key differs.
fn live_changed(current: &Config, next: &Config) -> bool {
    ModelSettings::from_config(current) != ModelSettings::from_config(next)
        || !same_transport(current, next)
        || current.preset != next.preset
        || current.permission_rules != next.permission_rules
        || current.disabled_tools != next.disabled_tools
        || current.max_steps != next.max_steps
        || current.compact_threshold != next.compact_threshold
        || current.require_todo_for_complex != next.require_todo_for_complex
        || current.workflow != next.workflow
        || current.max_prompt_bytes != next.max_prompt_bytes
        || current.max_conversations != next.max_conversations
        || current.max_interrupt_chain_depth != next.max_interrupt_chain_depth
        || current.max_handoffs_per_input != next.max_handoffs_per_input
        || current.prompt_cache_key != next.prompt_cache_key
}

/// Whether the settings of the model client other than the model itself are the same.
fn same_transport(current: &Config, next: &Config) -> bool {
    current.retry == next.retry
        && current.stream_idle_timeout == next.stream_idle_timeout
        && current.max_reply_bytes == next.max_reply_bytes
}

/// The keys that changed but only apply after a restart, by their names in the file.
fn restart_keys(current: &Config, next: &Config) -> Vec<&'static str> {
    // `mcpServers` apply live too, through `session/mcp_reload.rs`.
    let checks: [(&'static str, bool); 7] = [
        ("mode", current.mode != next.mode),
        (
            "autoApproveAsk/approval",
            current.auto_approve != next.auto_approve,
        ),
        (
            "tools.env.passThrough",
            current.env_pass_through != next.env_pass_through,
        ),
        ("sandbox.enabled", current.sandbox != next.sandbox),
        (
            "sandbox.network",
            current.sandbox_network != next.sandbox_network,
        ),
        (
            "sandbox.writableRoots",
            current.writable_roots != next.writable_roots,
        ),
        ("saveSessions", current.save_sessions != next.save_sessions),
    ];
    checks
        .into_iter()
        .filter_map(|(key, changed)| changed.then_some(key))
        .collect()
}
