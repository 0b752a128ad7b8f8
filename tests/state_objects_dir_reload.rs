//! Live re-read of an objects directory after changes.

mod support;

use std::time::Duration;

use scion::state::{ObjectsDir, StateSource};
use support::state::{cluster_yaml, eventually, write};

#[tokio::test]
async fn changes_are_picked_up_live() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().to_path_buf();
    write(&d, "one.yaml", &cluster_yaml("shoot--live--one", "1.32.0"));
    let (dir, _) = ObjectsDir::load(&d).unwrap();
    let watch = dir.watch(Duration::from_millis(50)).unwrap();

    // A new file in a new folder.
    write(
        &d,
        "new/two.yaml",
        &cluster_yaml("shoot--live--two", "1.33.1"),
    );
    eventually("new Cluster appears", || {
        dir.shoot("shoot--live--two").is_ok()
    })
    .await;

    // An edited file.
    write(&d, "one.yaml", &cluster_yaml("shoot--live--one", "1.33.0"));
    eventually("edited Cluster changes", || {
        dir.shoot("shoot--live--one")
            .is_ok_and(|c| c.kubernetes_version().to_string() == "1.33.0")
    })
    .await;

    // A file that breaks keeps its previous content, and the break is reported.
    write(&d, "one.yaml", "kind: Cluster\nmetadata: [unclosed\n");
    eventually("broken file reported", || {
        dir.problems().iter().any(|p| p.path.ends_with("one.yaml"))
    })
    .await;
    let problem = dir
        .problems()
        .into_iter()
        .find(|p| p.path.ends_with("one.yaml"))
        .unwrap();
    assert!(
        problem.message.contains("keeping the previous content"),
        "{problem}"
    );
    assert_eq!(
        dir.shoot("shoot--live--one")
            .unwrap()
            .kubernetes_version()
            .to_string(),
        "1.33.0"
    );

    // A removed file takes its objects with it.
    std::fs::remove_file(d.join("one.yaml")).unwrap();
    eventually("removed Cluster disappears", || {
        dir.shoot("shoot--live--one").is_err() && dir.problems().is_empty()
    })
    .await;
    assert!(dir.shoot("shoot--live--two").is_ok());

    // An atomic replace (write a hidden temporary file, rename it over the old
    // one), as editors and ConfigMap mounts do.
    write(
        &d,
        "new/.two.yaml.tmp",
        &cluster_yaml("shoot--live--two", "1.34.0"),
    );
    std::fs::rename(d.join("new/.two.yaml.tmp"), d.join("new/two.yaml")).unwrap();
    eventually("renamed file is read", || {
        dir.shoot("shoot--live--two")
            .is_ok_and(|c| c.kubernetes_version().to_string() == "1.34.0")
    })
    .await;
    watch.abort();
}

/// The directory itself replaced (renamed away, created again) or removed:
/// an inotify watch follows the old inode, so the root is checked too. While
/// it is missing the last state stays and the source is not synced (/readyz
/// fails); once it is back, its content is read and watched again.
#[tokio::test]
async fn a_replaced_or_missing_root_is_noticed() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("objects");
    write(&d, "one.yaml", &cluster_yaml("shoot--root--one", "1.32.0"));
    let (dir, _) = ObjectsDir::load(&d).unwrap();
    let watch = dir
        .watch_checking_every(Duration::from_millis(50), Duration::from_millis(100))
        .unwrap();
    assert!(dir.is_synced());

    // Renamed away: not ready, the last state is kept.
    std::fs::rename(&d, tmp.path().join("old")).unwrap();
    eventually("missing root is not synced", || !dir.is_synced()).await;
    assert!(
        dir.shoot("shoot--root--one").is_ok(),
        "the last state stays"
    );
    assert!(
        dir.problems().iter().any(|p| p.message.contains("missing")),
        "{:?}",
        dir.problems()
    );

    // Created again with other content: read, ready, and watched.
    write(&d, "two.yaml", &cluster_yaml("shoot--root--two", "1.33.0"));
    eventually("new root is read", || {
        dir.is_synced()
            && dir.shoot("shoot--root--two").is_ok()
            && dir.shoot("shoot--root--one").is_err()
    })
    .await;
    write(
        &d,
        "three.yaml",
        &cluster_yaml("shoot--root--three", "1.33.0"),
    );
    eventually("changes in the new root are picked up", || {
        dir.shoot("shoot--root--three").is_ok()
    })
    .await;
    watch.abort();
}

/// A file over the size budget is reported and not read; its previous
/// content stays (as for a file that does not parse).
#[tokio::test]
async fn files_over_the_budget_are_not_read() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().to_path_buf();
    let cluster = cluster_yaml("shoot--big--one", "1.32.0");
    write(&d, "one.yaml", &cluster);
    let budget = cluster.len() as u64 + 100;
    let (dir, problems) = ObjectsDir::load_with_limit(&d, budget).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    write(&d, "one.yaml", &format!("{cluster}# {}\n", "x".repeat(200)));
    write(
        &d,
        "big.json",
        &format!("{{\"padding\":\"{}\"}}", "x".repeat(budget as usize)),
    );
    dir.reload();
    let problems = dir.problems();
    for name in ["one.yaml", "big.json"] {
        let p = problems
            .iter()
            .find(|p| p.path.ends_with(name))
            .unwrap_or_else(|| panic!("{name} not reported: {problems:?}"));
        assert!(
            p.message.contains(&format!("files over {budget} bytes")),
            "{p}"
        );
    }
    assert!(
        dir.shoot("shoot--big--one").is_ok(),
        "previous content kept"
    );
}
