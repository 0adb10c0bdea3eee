//! Skills: folders with a `SKILL.md` (YAML frontmatter `name` and `description`, then the
//! instructions), optionally with files beside it, in `.coder/skills/<dir>/` of the
//! workspace and of the user-level folder: the format Claude Code and Codex read. The
//! system prompt lists each skill's name and description ([`skills_section`]); the model
//! loads a skill's body with the `skill` tool when it judges the skill relevant.

use std::path::{Path, PathBuf};

use coder_protocol::methods::{CommandSource, SkillInfo};
use serde::Deserialize;

/// The longest name and description the system prompt lists; longer ones are refused,
/// since every turn pays for them.
const MAX_NAME: usize = 64;
const MAX_DESCRIPTION: usize = 1024;
/// How many files beside a `SKILL.md` the `skill` tool names.
pub(crate) const MAX_LISTED_FILES: usize = 100;

/// One skill, as its frontmatter describes it; the body is read when the skill is loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub source: CommandSource,
    /// The `SKILL.md` file.
    pub path: PathBuf,
    /// The instructions: the file's body after the frontmatter, as read with it (a file
    /// that breaks later keeps this, its last good version).
    pub body: String,
}

impl Skill {
    /// The skill's folder: its `SKILL.md` and the files beside it.
    pub fn folder(&self) -> &Path {
        self.path.parent().unwrap_or(&self.path)
    }

    pub fn info(&self) -> SkillInfo {
        SkillInfo {
            name: self.name.clone(),
            description: self.description.clone(),
            path: self.path.display().to_string(),
            source: self.source,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
struct Frontmatter {
    name: Option<String>,
    description: Option<String>,
}

/// The skills of `<folder>/skills/*/SKILL.md` of each folder, in order (a name found in an
/// earlier folder hides the same name in later ones), sorted by name, and a warning for
/// each `SKILL.md` that cannot be used, naming the file.
pub(crate) fn load(folders: &[(CommandSource, PathBuf)]) -> (Vec<Skill>, Vec<String>) {
    load_keeping(folders, &[])
}

/// [`load`], where a `SKILL.md` that cannot be used keeps the skill `previous` read from
/// the same file (its last good version), with a warning saying so.
pub(crate) fn load_keeping(
    folders: &[(CommandSource, PathBuf)],
    previous: &[Skill],
) -> (Vec<Skill>, Vec<String>) {
    let mut skills: Vec<Skill> = Vec::new();
    let mut warnings = Vec::new();
    for (source, folder) in folders {
        for path in skill_files(&folder.join("skills")) {
            let skill = match read_skill(*source, folder, &path) {
                Ok(skill) => skill,
                Err(problem) => match previous.iter().find(|skill| skill.path == path) {
                    Some(kept) => {
                        warnings.push(format!(
                            "skill {}: {problem}; its last good version is kept",
                            path.display()
                        ));
                        kept.clone()
                    }
                    None => {
                        warnings.push(format!(
                            "skill {} is not offered: {problem}",
                            path.display()
                        ));
                        continue;
                    }
                },
            };
            if !skills.iter().any(|known| known.name == skill.name) {
                skills.push(skill);
            }
        }
    }
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    (skills, warnings)
}

/// What the system prompt says about the skills: how to use them and each one's name and
/// description. `None` when there are none.
pub fn skills_section(skills: &[Skill]) -> Option<String> {
    if skills.is_empty() {
        return None;
    }
    let mut section = String::from(
        "Skills are instructions for particular kinds of work, written by the \
         people you work with. When a task matches a skill's description, load the skill \
         with the `skill` tool before you start and follow it; do not load skills that do \
         not apply. The available skills:\n\n",
    );
    for skill in skills {
        section.push_str(&format!("- {}: {}\n", skill.name, skill.description));
    }
    Some(section)
}

/// The files beside a skill's `SKILL.md`, relative to its folder, sorted, at most
/// [`MAX_LISTED_FILES`] (and whether there were more).
pub(crate) fn files_beside(skill: &Skill) -> (Vec<String>, bool) {
    let folder = skill.folder();
    let mut files = Vec::new();
    let mut more = false;
    let walk = crate::ignore_files::walker(folder, folder)
        .sort_by_file_name(std::cmp::Ord::cmp)
        .build();
    for entry in walk.flatten() {
        if !entry.file_type().is_some_and(|kind| kind.is_file()) || entry.path() == skill.path {
            continue;
        }
        if files.len() == MAX_LISTED_FILES {
            more = true;
            break;
        }
        if let Ok(relative) = entry.path().strip_prefix(folder) {
            files.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
    (files, more)
}

fn read_skill(source: CommandSource, folder: &Path, path: &Path) -> Result<Skill, String> {
    let text = crate::frontmatter::read_file(source, folder, path)?;
    let doc = crate::frontmatter::parse::<Frontmatter>(&text)?;
    let name = doc
        .meta
        .name
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .ok_or("the frontmatter has no `name`")?;
    let description = doc
        .meta
        .description
        .map(|text| text.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|text| !text.is_empty())
        .ok_or("the frontmatter has no `description`")?;
    if name.chars().count() > MAX_NAME || name.contains(char::is_whitespace) {
        return Err(format!(
            "the name must be one word of at most {MAX_NAME} characters"
        ));
    }
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(format!(
            "the description is longer than {MAX_DESCRIPTION} characters"
        ));
    }
    Ok(Skill {
        name,
        description,
        source,
        path: path.to_path_buf(),
        body: doc.body,
    })
}

/// `<skills>/*/SKILL.md`, sorted by folder.
fn skill_files(skills: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(skills) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path().join("SKILL.md"))
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_lists_names_and_descriptions() {
        assert_eq!(skills_section(&[]), None);
        let skill = Skill {
            name: "pdf".to_owned(),
            description: "Fill PDF forms".to_owned(),
            source: CommandSource::User,
            path: PathBuf::from("/x/SKILL.md"),
            body: String::new(),
        };
        let section = skills_section(&[skill]).unwrap();
        assert!(section.ends_with("- pdf: Fill PDF forms\n"), "{section}");
    }
}
