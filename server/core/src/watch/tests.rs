//! The hub through its subscriptions, on real folders: each test runs its own hub, so tests
//! running at once do not share one.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::hub::Hub;
use super::{WatchedFolder, Watcher, ignored};

/// How long a test waits for a change it expects (a timeout catches a hang; it measures
/// nothing).
const EXPECTED_WITHIN: Duration = Duration::from_secs(10);

fn flat(path: &Path) -> WatchedFolder {
    WatchedFolder {
        path: path.to_path_buf(),
        recursive: false,
    }
}

fn subscribe(
    hub: &'static Hub,
    workspace: &Path,
    wanted: Vec<WatchedFolder>,
) -> (Watcher, UnboundedReceiver<Vec<PathBuf>>) {
    let (sender, batches) = unbounded_channel();
    let watcher = Watcher::start_on(hub, workspace.to_path_buf(), wanted, sender).unwrap();
    (watcher, batches)
}

/// The paths of the batches received until one holds `path` (panics after
/// [`EXPECTED_WITHIN`]).
fn until_seen(batches: &mut UnboundedReceiver<Vec<PathBuf>>, path: &Path) -> Vec<PathBuf> {
    let deadline = Instant::now() + EXPECTED_WITHIN;
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        match batches.try_recv() {
            Ok(batch) => {
                seen.extend(batch);
                if seen.iter().any(|seen| seen == path) {
                    return seen;
                }
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    panic!("{} not seen; seen: {seen:?}", path.display());
}

/// Everything delivered so far, once `watcher` is flushed.
fn delivered(watcher: &Watcher, batches: &mut UnboundedReceiver<Vec<PathBuf>>) -> Vec<PathBuf> {
    watcher.flush();
    let mut seen = Vec::new();
    while let Ok(batch) = batches.try_recv() {
        seen.extend(batch);
    }
    seen
}

#[test]
fn the_engines_own_files_and_build_trees_are_ignored() {
    let ws = Path::new("/w");
    assert!(ignored(ws, Path::new("/w/.coder/sessions/a.json")));
    assert!(ignored(ws, Path::new("/w/target")));
    assert!(ignored(ws, Path::new("/w/app/node_modules/x/AGENTS.md")));
    assert!(ignored(ws, Path::new("/w/.git/HEAD")));
    assert!(!ignored(ws, Path::new("/w/AGENTS.md")));
    assert!(!ignored(ws, Path::new("/w/.coder/rules/a.md")));
    // Only below the workspace: a user folder elsewhere is judged by its own path.
    assert!(!ignored(ws, Path::new("/home/me/.config/coder/AGENTS.md")));
}

#[test]
fn two_subscribers_on_overlapping_folders_each_get_their_own_changes() {
    static HUB: Hub = Hub::new();
    let root = tempfile::tempdir().unwrap();
    let (a, b, shared) = (
        root.path().join("a"),
        root.path().join("b"),
        root.path().join("shared"),
    );
    for folder in [&a, &b, &shared] {
        std::fs::create_dir(folder).unwrap();
    }
    let (first, mut first_batches) = subscribe(&HUB, &a, vec![flat(&a), flat(&shared)]);
    let (second, mut second_batches) = subscribe(&HUB, &b, vec![flat(&b), flat(&shared)]);
    // Two subscribers of one folder cost one watch.
    assert_eq!(HUB.watched_folders(), 3);
    assert_eq!((first.watched_count(), second.watched_count()), (2, 2));

    std::fs::write(a.join("AGENTS.md"), "a").unwrap();
    std::fs::write(b.join("AGENTS.md"), "b").unwrap();
    std::fs::write(shared.join("s.md"), "s").unwrap();
    // Each subscriber's own ignored rules: `target` below the first's workspace only.
    std::fs::create_dir(a.join("target")).unwrap();

    let mut firsts = delivered(&first, &mut first_batches);
    firsts.sort();
    let mut seconds = delivered(&second, &mut second_batches);
    seconds.sort();
    assert_eq!(firsts, [a.join("AGENTS.md"), shared.join("s.md")]);
    assert_eq!(seconds, [b.join("AGENTS.md"), shared.join("s.md")]);
}

#[test]
fn one_subscriber_stopping_keeps_the_others_watch() {
    static HUB: Hub = Hub::new();
    let root = tempfile::tempdir().unwrap();
    let shared = root.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    let (first, _first_batches) = subscribe(&HUB, root.path(), vec![flat(&shared)]);
    let (second, mut second_batches) = subscribe(&HUB, root.path(), vec![flat(&shared)]);

    first.stop();
    first.stop();
    assert_eq!(HUB.watched_folders(), 1);
    std::fs::write(shared.join("s.md"), "s").unwrap();
    until_seen(&mut second_batches, &shared.join("s.md"));
    assert_eq!(second.watched_count(), 1);
}

#[test]
fn flush_delivers_a_change_written_just_before_without_the_debounce() {
    static HUB: Hub = Hub::new();
    let root = tempfile::tempdir().unwrap();
    let (watcher, mut batches) = subscribe(&HUB, root.path(), vec![flat(root.path())]);
    for round in 0..5 {
        let path = root.path().join(format!("f{round}.md"));
        std::fs::write(&path, "x").unwrap();
        watcher.flush();
        // Right after the flush, not a debounce later.
        let batch = batches.try_recv().unwrap_or_default();
        assert!(batch.contains(&path), "{batch:?} lacks {}", path.display());
    }
    // The hub's markers are nobody's change, and nothing is left for later.
    std::thread::sleep(Duration::from_millis(300));
    assert!(batches.try_recv().is_err());
}

#[test]
fn folders_are_watched_and_unwatched_at_run_time() {
    static HUB: Hub = Hub::new();
    let root = tempfile::tempdir().unwrap();
    let (a, later) = (root.path().join("a"), root.path().join("later"));
    std::fs::create_dir(&a).unwrap();
    let (watcher, mut batches) = subscribe(&HUB, root.path(), vec![flat(root.path())]);
    assert_eq!(watcher.watched_count(), 1);

    // One that exists is watched at once; one that does not, once a rewatch finds it.
    watcher.watch_folders(vec![flat(&a), flat(&later)]).unwrap();
    assert_eq!(watcher.watched_count(), 2);
    std::fs::write(a.join("x.md"), "x").unwrap();
    std::fs::create_dir(&later).unwrap();
    let seen = delivered(&watcher, &mut batches);
    assert!(seen.contains(&a.join("x.md")), "{seen:?}");
    watcher.rewatch();
    assert_eq!(watcher.watched_count(), 3);
    std::fs::write(later.join("y.md"), "y").unwrap();
    assert!(delivered(&watcher, &mut batches).contains(&later.join("y.md")));

    watcher.unwatch_folders(&[a.clone(), later.clone()]);
    assert_eq!((watcher.watched_count(), HUB.watched_folders()), (1, 1));
    std::fs::write(a.join("z.md"), "z").unwrap();
    std::fs::write(later.join("z.md"), "z").unwrap();
    assert_eq!(delivered(&watcher, &mut batches), Vec::<PathBuf>::new());
}

#[test]
fn a_folder_made_again_is_watched_again_for_every_subscriber() {
    static HUB: Hub = Hub::new();
    let root = tempfile::tempdir().unwrap();
    let rules = root.path().join("rules");
    std::fs::create_dir(&rules).unwrap();
    let wanted = vec![flat(root.path()), flat(&rules)];
    let (first, mut first_batches) = subscribe(&HUB, root.path(), wanted.clone());
    let (second, mut second_batches) = subscribe(&HUB, root.path(), wanted);

    std::fs::remove_dir(&rules).unwrap();
    std::fs::create_dir(&rules).unwrap();
    // Only the first looks again, once told (the second's reload loop may be later). The
    // folder is made again at once, so its inode number may well be the old one's.
    until_seen(&mut first_batches, &rules);
    first.rewatch();
    std::fs::write(rules.join("a.md"), "a").unwrap();
    assert!(delivered(&first, &mut first_batches).contains(&rules.join("a.md")));
    assert!(delivered(&second, &mut second_batches).contains(&rules.join("a.md")));
}

#[test]
fn the_last_stop_ends_the_hubs_threads_and_the_next_start_runs_it_again() {
    static HUB: Hub = Hub::new();
    let root = tempfile::tempdir().unwrap();
    let (first, _first_batches) = subscribe(&HUB, root.path(), vec![flat(root.path())]);
    let (second, _second_batches) = subscribe(&HUB, root.path(), vec![flat(root.path())]);
    let handler = HUB.handler_alive().unwrap();

    first.stop();
    assert!(HUB.is_running());
    drop(second);
    assert!(!HUB.is_running());
    // notify's thread drops its event handler when it ends.
    let deadline = Instant::now() + EXPECTED_WITHIN;
    while handler.upgrade().is_some() {
        assert!(Instant::now() < deadline, "notify's thread still runs");
        std::thread::sleep(Duration::from_millis(10));
    }

    let (third, mut batches) = subscribe(&HUB, root.path(), vec![flat(root.path())]);
    std::fs::write(root.path().join("AGENTS.md"), "a").unwrap();
    until_seen(&mut batches, &root.path().join("AGENTS.md"));
    drop(third);
}
