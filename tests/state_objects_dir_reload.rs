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
