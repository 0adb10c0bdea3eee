//! Which folders the person trusts: `trustedFolders` in the user-level configuration file.
//!
//! A workspace's own files (`.coder/config.json`, `.mcp.json`) come with the repository, so
//! whoever wrote the repository wrote them. Until the person trusts the folder they may only
//! narrow what the person's own configuration allows (see `config/narrow.rs`). Trust is
//! recorded per folder in the user-level file, never in the workspace: a folder is trusted
//! when it or one of its ancestors is listed, as Codex's trusted projects are.
//!
//! ```json
//! { "trustedFolders": ["/home/me/src/project", "/home/me/work"] }
//! ```

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The key of the user-level file that lists trusted folders.
pub const TRUSTED_FOLDERS: &str = "trustedFolders";

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("no user configuration file: set HOME or CODER_HOME to record trusted folders")]
    NoUserFile,
    #[error("cannot open folder {path}: {source}")]
    Folder {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not valid configuration: {reason}")]
    Parse { path: PathBuf, reason: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Whether the user-level configuration `user` (the parsed file) lists `folder` or one of
/// its ancestors. `folder` should be canonical; listed entries are compared as written and,
/// when they exist, canonicalized, so a listed symlink trusts the folder it points to.
pub fn lists(user: Option<&Value>, folder: &Path) -> bool {
    let Some(listed) = user
        .and_then(|user| user.get(TRUSTED_FOLDERS))
        .and_then(Value::as_array)
    else {
        return false;
    };
    let folder = folder
        .canonicalize()
        .unwrap_or_else(|_| folder.to_path_buf());
    listed.iter().filter_map(Value::as_str).any(|entry| {
        let entry = Path::new(entry);
        // A relative entry means nothing stable: it is never a match.
        if !entry.is_absolute() {
            return false;
        }
        let canonical = entry.canonicalize().unwrap_or_else(|_| entry.to_path_buf());
        folder.starts_with(&canonical)
    })
}

/// Records `folder` (canonicalized) as trusted in the user-level file `user_file`, keeping
/// the rest of the file (its keys may come back in another order). The file is written
/// whole to a temporary file next to it and renamed over it, so a reader never sees half
/// of it and a failure leaves the old file. Trusting a folder already trusted changes
/// nothing.
pub fn trust_folder(user_file: &Path, folder: &Path) -> Result<PathBuf, TrustError> {
    let folder = folder.canonicalize().map_err(|source| TrustError::Folder {
        path: folder.to_path_buf(),
        source,
    })?;
    let mut user = match std::fs::read_to_string(user_file) {
        Ok(text) => serde_json::from_str::<Value>(&text).map_err(|err| TrustError::Parse {
            path: user_file.to_path_buf(),
            reason: err.to_string(),
        })?,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Value::Object(Default::default()),
        Err(source) => {
            return Err(TrustError::Read {
                path: user_file.to_path_buf(),
                source,
            });
        }
    };
    if lists(Some(&user), &folder) {
        return Ok(folder);
    }
    let Some(object) = user.as_object_mut() else {
        return Err(TrustError::Parse {
            path: user_file.to_path_buf(),
            reason: "the file is not a JSON object".to_owned(),
        });
    };
    let entry = Value::String(folder.display().to_string());
    match object.get_mut(TRUSTED_FOLDERS) {
        Some(Value::Array(listed)) => listed.push(entry),
        _ => {
            object.insert(TRUSTED_FOLDERS.to_owned(), Value::Array(vec![entry]));
        }
    }
    write_atomically(user_file, &user)?;
    Ok(folder)
}

/// Writes `value` to `path` as pretty JSON, atomically (a temporary file synced, then
/// renamed over it).
pub(crate) fn write_atomically(path: &Path, value: &Value) -> Result<(), TrustError> {
    let fail = |source| TrustError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(fail)?;
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|err| fail(std::io::Error::other(err.to_string())))?;
    text.push('\n');
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
    std::io::Write::write_all(&mut file, text.as_bytes()).map_err(fail)?;
    file.as_file().sync_all().map_err(fail)?;
    file.persist(path).map_err(|err| fail(err.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_folder_is_trusted_when_it_or_an_ancestor_is_listed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let project = root.join("work/project");
        std::fs::create_dir_all(&project).unwrap();
        let listed = |entries: Value| json!({ TRUSTED_FOLDERS: entries });
        assert!(lists(Some(&listed(json!([project]))), &project));
        assert!(lists(Some(&listed(json!([root.join("work")]))), &project));
        assert!(!lists(Some(&listed(json!([project]))), &root.join("work")));
        // A sibling whose name starts the same is not inside.
        let sibling = root.join("work/project-2");
        std::fs::create_dir_all(&sibling).unwrap();
        assert!(!lists(Some(&listed(json!([project]))), &sibling));
        assert!(!lists(Some(&listed(json!(["work/project"]))), &project));
        assert!(!lists(Some(&json!({})), &project));
        assert!(!lists(None, &project));
    }

    #[test]
    fn trusting_writes_the_user_file_keeping_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        std::fs::create_dir(&project).unwrap();
        let user_file = dir.path().join("home/config.json");
        // No file yet: it is made.
        let recorded = trust_folder(&user_file, &project).unwrap();
        assert_eq!(recorded, project.canonicalize().unwrap());
        let user: Value =
            serde_json::from_str(&std::fs::read_to_string(&user_file).unwrap()).unwrap();
        assert_eq!(user, json!({ TRUSTED_FOLDERS: [recorded] }));

        std::fs::write(
            &user_file,
            r#"{"model": "m", "trustedFolders": ["/elsewhere"], "retry": {"maxRetries": 1}}"#,
        )
        .unwrap();
        trust_folder(&user_file, &project).unwrap();
        trust_folder(&user_file, &project).unwrap();
        let user: Value =
            serde_json::from_str(&std::fs::read_to_string(&user_file).unwrap()).unwrap();
        assert_eq!(
            user,
            json!({"model": "m", "retry": {"maxRetries": 1},
                   TRUSTED_FOLDERS: ["/elsewhere", recorded]})
        );
        let leftovers = std::fs::read_dir(user_file.parent().unwrap())
            .unwrap()
            .count();
        assert_eq!(leftovers, 1, "no temporary file left behind");

        std::fs::write(&user_file, "[1]").unwrap();
        assert!(matches!(
            trust_folder(&user_file, &project),
            Err(TrustError::Parse { .. })
        ));
    }
}
