//! The three workspaces the benchmarks time turns in, so that every figure says what it costs
//! where people work: a plain folder (the floor: no checkpoint is taken there), a git
//! repository with the same files committed, and that repository with a large untracked
//! file besides.
//!
//! Each workspace holds `files` small source files in 100 folders of 10 subfolders, and
//! `tracked.txt` (a file a turn may change). They are made once per benchmark run in
//! temporary directories and removed when [`Workspaces`] is dropped. [`median_ratio`] is
//! how the benchmarks compare them: the median of the run-by-run ratios, the workspaces
//! measured in turn so that a busy stretch of the machine weighs on all three alike
//! ([`Workspace::in_turn`]).

use std::io::{self, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use tempfile::TempDir;

/// The number of files in each workspace unless `BENCH_FILES` says otherwise.
pub const DEFAULT_FILES: usize = 20_000;

/// The size of the untracked file in the third workspace: 100 MB.
pub const UNTRACKED_BYTES: usize = 100 << 20;

/// The untracked file's name in the third workspace.
pub const UNTRACKED_FILE: &str = "data.bin";

/// The tracked file a turn may change, in every workspace.
pub const TRACKED_FILE: &str = "tracked.txt";

/// One of the three workspaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workspace {
    /// A plain folder, not a git repository: the floor.
    Plain,
    /// A git repository with every file committed.
    Repository,
    /// The repository with a large untracked file besides.
    Untracked,
}

impl Workspace {
    /// The three, in the order the benchmarks measure and print them.
    pub const ALL: [Self; 3] = [Self::Plain, Self::Repository, Self::Untracked];

    /// How a benchmark's table names it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Plain => "plain folder",
            Self::Repository => "git repository",
            Self::Untracked => "+ 100 MB untracked",
        }
    }

    /// The three in the order round `round` measures them: [`Self::ALL`] rotated by one
    /// place a round, so that no workspace always comes first, or always right after
    /// another (a process started after a pause, or after a particular other, can be
    /// slower or faster for it).
    pub fn in_turn(round: usize) -> [Self; 3] {
        let mut order = Self::ALL;
        order.rotate_left(round % Self::ALL.len());
        order
    }

    /// Its position in [`Self::ALL`] (and in arrays of per-workspace samples).
    pub fn index(self) -> usize {
        match self {
            Self::Plain => 0,
            Self::Repository => 1,
            Self::Untracked => 2,
        }
    }
}

/// The three workspaces, each in a temporary directory removed on drop.
pub struct Workspaces {
    dirs: [TempDir; 3],
    files: usize,
}

impl Workspaces {
    /// Makes the three workspaces of `files` files each; the third gets an untracked file of
    /// `untracked_bytes` bytes, written (not sparse), so reading it costs what a real file
    /// costs, and synced, so that writing it back does not fall in a measured run.
    pub fn create(files: usize, untracked_bytes: usize) -> io::Result<Self> {
        let plain = tempfile::tempdir()?;
        fill(plain.path(), files)?;
        let committed = repository(files)?;
        let untracked = repository(files)?;
        write_untracked(&untracked.path().join(UNTRACKED_FILE), untracked_bytes)?;
        Ok(Self {
            dirs: [plain, committed, untracked],
            files,
        })
    }

    /// The benchmarks' workspaces: [`DEFAULT_FILES`] files (or `BENCH_FILES`) and a 100 MB
    /// untracked file.
    pub fn for_bench() -> io::Result<Self> {
        let files = std::env::var("BENCH_FILES")
            .ok()
            .and_then(|value| value.parse().ok())
            .unwrap_or(DEFAULT_FILES);
        Self::create(files, UNTRACKED_BYTES)
    }

    /// The directory of `workspace`.
    pub fn path(&self, workspace: Workspace) -> &Path {
        self.dirs[workspace.index()].path()
    }

    /// The three directories, in [`Workspace::ALL`]'s order.
    pub fn paths(&self) -> [&Path; 3] {
        Workspace::ALL.map(|workspace| self.path(workspace))
    }

    /// The number of source files in each workspace.
    pub fn files(&self) -> usize {
        self.files
    }
}

/// The median of the ratios of `of` to `floor`, taken pair by pair (the samples of one run
/// side by side); `NaN` when there is no pair.
pub fn median_ratio(of: &[Duration], floor: &[Duration]) -> f64 {
    let mut ratios: Vec<f64> = of
        .iter()
        .zip(floor)
        .map(|(a, b)| a.as_secs_f64() / b.as_secs_f64())
        .collect();
    if ratios.is_empty() {
        return f64::NAN;
    }
    ratios.sort_by(f64::total_cmp);
    ratios[ratios.len() / 2]
}

/// Writes `files` small source files in 100 folders of 10 subfolders, and the tracked file.
fn fill(dir: &Path, files: usize) -> io::Result<()> {
    for index in 0..files {
        let folder = dir.join(format!("src/m{}/s{}", index % 100, (index / 100) % 10));
        std::fs::create_dir_all(&folder)?;
        std::fs::write(
            folder.join(format!("f{index}.rs")),
            format!("pub fn f{index}() -> usize {{ {index} }}\n"),
        )?;
    }
    std::fs::write(dir.join(TRACKED_FILE), "original\n")
}

/// Writes `bytes` bytes to `path`, a MiB at a time: a process that makes the workspaces
/// should not grow by the file's size (a child's peak memory counts its parent's at the
/// spawn).
fn write_untracked(path: &Path, bytes: usize) -> io::Result<()> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let piece = vec![7u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        let now = left.min(piece.len());
        file.write_all(&piece[..now])?;
        left -= now;
    }
    file.into_inner()
        .map_err(io::IntoInnerError::into_error)?
        .sync_all()
}

/// A temporary git repository with `files` files committed.
fn repository(files: usize) -> io::Result<TempDir> {
    let dir = tempfile::tempdir()?;
    fill(dir.path(), files)?;
    git(dir.path(), &["init", "-q"])?;
    git(dir.path(), &["add", "."])?;
    git(dir.path(), &["commit", "-q", "-m", "files"])?;
    Ok(dir)
}

fn git(dir: &Path, args: &[&str]) -> io::Result<()> {
    let status = Command::new("git")
        .args(["-c", "user.name=bench", "-c", "user.email=bench@localhost"])
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!("git {args:?} failed: {status}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git_output(dir: &Path, args: &[&str]) -> String {
        let output = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(output.status.success(), "git {args:?}");
        String::from_utf8(output.stdout).unwrap()
    }

    #[test]
    fn three_workspaces_of_the_same_files_one_plain_two_committed_one_with_an_untracked_file() {
        let workspaces = Workspaces::create(150, 4096).unwrap();
        let [plain, repository, untracked] = workspaces.paths();
        assert_eq!(workspaces.files(), 150);
        for dir in [plain, repository, untracked] {
            assert!(dir.join("src/m49/s1/f149.rs").is_file(), "{dir:?}");
            assert_eq!(
                std::fs::read_to_string(dir.join(TRACKED_FILE)).unwrap(),
                "original\n"
            );
        }
        assert!(!plain.join(".git").exists());
        for dir in [repository, untracked] {
            assert_eq!(git_output(dir, &["ls-files"]).lines().count(), 151);
        }
        assert_eq!(git_output(repository, &["status", "--porcelain"]), "");
        assert_eq!(
            git_output(untracked, &["status", "--porcelain"]),
            format!("?? {UNTRACKED_FILE}\n")
        );
        assert_eq!(
            std::fs::metadata(untracked.join(UNTRACKED_FILE))
                .unwrap()
                .len(),
            4096
        );
        let kept = workspaces.paths().map(Path::to_path_buf);
        drop(workspaces);
        assert!(kept.iter().all(|dir| !dir.exists()), "{kept:?}");
    }

    #[test]
    fn each_round_starts_with_the_next_workspace() {
        use Workspace::{Plain, Repository, Untracked};
        assert_eq!(Workspace::in_turn(0), [Plain, Repository, Untracked]);
        assert_eq!(Workspace::in_turn(1), [Repository, Untracked, Plain]);
        assert_eq!(Workspace::in_turn(2), [Untracked, Plain, Repository]);
        assert_eq!(Workspace::in_turn(3), Workspace::in_turn(0));
    }

    #[test]
    fn the_ratio_is_the_median_of_the_ratios_run_by_run() {
        let ms = Duration::from_millis;
        // Run by run 2.0, 1.0 and 4.0.
        assert_eq!(
            median_ratio(&[ms(20), ms(10), ms(40)], &[ms(10), ms(10), ms(10)]),
            2.0
        );
        // Run by run 3.0, 1.0 and 1.0: the median is 1.0, where the ratio of the medians
        // (30 ms to 10 ms) would be 3.0.
        assert_eq!(
            median_ratio(&[ms(30), ms(10), ms(40)], &[ms(10), ms(10), ms(40)]),
            1.0
        );
        assert!(median_ratio(&[], &[]).is_nan());
    }
}
