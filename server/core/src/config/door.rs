//! How every front door opens its workspace and loads its configuration: [`Config::for_door`].
//!
//! `coder exec`, `coder lsp` and the Node addon each describe themselves once as a
//! [`Door`] (how their messages name their settings, whether they need a model at start)
//! and call [`Config::for_door`] with the folder they were asked for and their settings as
//! [`Overrides`]; the workspace rule ([`Workspace::open`]), the trust of the workspace's
//! own files and the provider check are the core's.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::{
    Config, ConfigError, DoorNames, EnvLookup, Overrides, Workspace, WorkspaceTrust,
    user_config_path,
};

/// A front door, as loading its configuration needs to know it.
#[derive(Debug, Clone, Copy)]
pub struct Door {
    /// How the door's messages name its settings.
    pub names: DoorNames,
    /// When the door needs a model provider.
    pub provider: ProviderNeed,
    /// Whether the door offers `@` path completion ([`crate::Engine::complete_paths`]): its
    /// sessions walk the workspace in the background from their start, so the first call
    /// answers at once. A door that never completes (`coder exec`) spares that walk.
    pub completes_paths: bool,
    /// Whether the door's sessions watch the rules, skills, commands and configuration for
    /// changes, reloading them as they change (`workspace_reloaded` events). A door whose
    /// session runs one task (`coder exec`) reads them at that task's start instead: a
    /// watcher would change nothing it does, and releasing its inotify instance holds the
    /// process's exit for 4 to 20 ms (the kernel waits for a grace period, in ticks).
    pub watches_files: bool,
    /// Whether the door's sessions record checkpoints for `/undo`. A door whose session runs
    /// one task (`coder exec`) has no later turn to undo it from (the records are private
    /// to the process and go with it), so its first command does not wait for the recorder
    /// to list the repository and watch its folders.
    pub keeps_checkpoints: bool,
}

/// When a door needs a model provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderNeed {
    /// Loading fails without one (`coder exec`, which runs a task at once; the SDK, whose
    /// engines always have a model).
    AtStart,
    /// The engine starts without one, and a task asked for fails with
    /// [`crate::ErrorKind::NoProvider`] (`coder lsp`: an editor starts the server before
    /// anything is configured).
    ForTasks,
}

impl Config {
    /// Whether sessions of this configuration walk the workspace for `@` path completion
    /// from their start: yes unless the door that loaded it never completes paths.
    pub(crate) fn walks_paths_at_start(&self) -> bool {
        self.loaded_by
            .as_ref()
            .is_none_or(|loaded_by| loaded_by.door.completes_paths)
    }

    /// Whether sessions of this configuration watch the files they keep: yes unless the
    /// door that loaded it runs one task ([`Door::watches_files`]).
    pub(crate) fn watches_files(&self) -> bool {
        self.loaded_by
            .as_ref()
            .is_none_or(|loaded_by| loaded_by.door.watches_files)
    }

    /// Whether sessions of this configuration record checkpoints for `/undo`: yes unless the
    /// door that loaded it runs one task ([`Door::keeps_checkpoints`]).
    pub(crate) fn keeps_checkpoints(&self) -> bool {
        self.loaded_by
            .as_ref()
            .is_none_or(|loaded_by| loaded_by.door.keeps_checkpoints)
    }

    /// Loads the configuration a door runs with: the workspace by the one rule of
    /// [`Workspace::open`] (`requested` is the folder the door names explicitly, `cwd` the
    /// directory it runs in), the files and the environment trusted as
    /// `overrides.trust_workspace` says, `overrides` over them with `door.names` in their
    /// messages, and, for a door that needs one at start, the provider checked.
    pub fn for_door(
        door: &Door,
        requested: Option<&Path>,
        cwd: &Path,
        overrides: Overrides,
    ) -> Result<Self, ConfigError> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let user_file = user_config_path(&env);
        Self::for_door_with(door, requested, cwd, overrides, user_file.as_deref(), &env)
    }

    /// [`Config::for_door`] with an explicit user-level file and environment.
    pub(crate) fn for_door_with(
        door: &Door,
        requested: Option<&Path>,
        cwd: &Path,
        mut overrides: Overrides,
        user_file: Option<&Path>,
        env: EnvLookup<'_>,
    ) -> Result<Self, ConfigError> {
        let workspace = Workspace::open(requested, cwd)?;
        overrides.door = door.names;
        let loaded_by = Arc::new(LoadedBy {
            door: *door,
            overrides,
            user_file: user_file.map(Path::to_path_buf),
        });
        Self::load_for_door(&workspace, loaded_by, env)
    }

    /// This configuration loaded again from the files and the environment as its front
    /// door loaded it at start ([`Config::for_door`]: the same function, so the same trust,
    /// the same narrowing of an untrusted workspace's file, the door's settings over the
    /// files). `None` for a configuration no door loaded (an embedder's [`Config::new`]).
    pub fn reload(&self) -> Option<Result<Self, ConfigError>> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        self.reload_with(&env)
    }

    /// [`Config::reload`] with an explicit environment.
    pub(crate) fn reload_with(&self, env: EnvLookup<'_>) -> Option<Result<Self, ConfigError>> {
        let loaded_by = self.loaded_by.clone()?;
        let workspace = Workspace {
            root: self.workspace.clone(),
            started_in: self.started_in.clone(),
        };
        Some(Self::load_for_door(&workspace, loaded_by, env))
    }

    /// The files and the environment of `workspace` trusted as the door's settings say,
    /// those settings over them, and, for a door that needs one at start, the provider
    /// checked.
    fn load_for_door(
        workspace: &Workspace,
        loaded_by: Arc<LoadedBy>,
        env: EnvLookup<'_>,
    ) -> Result<Self, ConfigError> {
        let LoadedBy {
            door,
            overrides,
            user_file,
        } = loaded_by.as_ref();
        let trust = WorkspaceTrust::from_flag(overrides.trust_workspace);
        let mut config =
            Self::load_full(&workspace.root, user_file.as_deref(), env, overrides, trust)?;
        if let Some(notice) = config.untrusted_notice(door.names.how_to_trust) {
            config.warnings.push(notice);
        }
        config.started_in = workspace.started_in.clone();
        if door.provider == ProviderNeed::AtStart {
            config.require_provider()?;
        }
        config.loaded_by = Some(loaded_by);
        Ok(config)
    }
}

/// What a front door loaded its configuration with, kept to load it again.
#[derive(Debug)]
pub(crate) struct LoadedBy {
    door: Door,
    /// The door's settings, its names in [`Overrides::door`].
    overrides: Overrides,
    user_file: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOOR: Door = Door {
        names: DoorNames {
            settings: "the test's settings",
            base_url: "the test's base URL",
            how_to_trust: "trust it in the test",
        },
        provider: ProviderNeed::ForTasks,
        completes_paths: true,
        watches_files: true,
        keeps_checkpoints: true,
    };

    #[test]
    fn the_door_names_its_settings_and_says_whether_it_needs_a_provider() {
        let dir = tempfile::tempdir().unwrap();
        let load = |door: &Door, overrides: Overrides, env: &[(&str, &str)]| {
            let env = |name: &str| {
                env.iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| (*value).to_owned())
            };
            Config::for_door_with(door, None, dir.path(), overrides, None, &env)
        };
        let overrides = Overrides {
            base_url: Some("ftp://x".into()),
            ..Overrides::default()
        };
        let err = load(&DOOR, overrides, &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the base URL `ftp://x` (from the test's base URL) must start with http:// or https://"
        );
        assert!(
            load(&DOOR, Overrides::default(), &[])
                .unwrap()
                .provider
                .is_none()
        );
        let at_start = Door {
            provider: ProviderNeed::AtStart,
            ..DOOR
        };
        let err = load(&at_start, Overrides::default(), &[]);
        assert!(
            matches!(err, Err(ConfigError::NoProvider { .. })),
            "{err:?}"
        );
        let config = load(&at_start, Overrides::default(), &[("OPENAI_API_KEY", "k")]);
        assert!(config.unwrap().provider.is_some());
    }

    #[test]
    fn an_untrusted_workspace_is_named_with_the_doors_way_to_trust_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".coder")).unwrap();
        std::fs::write(dir.path().join(".coder/config.json"), r#"{"mode": "yolo"}"#).unwrap();
        let env = |_: &str| None;
        let config = Config::for_door_with(
            &DOOR,
            Some(dir.path()),
            dir.path(),
            Overrides::default(),
            None,
            &env,
        )
        .unwrap();
        let notice = config.warnings.last().unwrap();
        assert!(notice.ends_with("; trust it in the test"), "{notice}");
    }
}
