//! Live re-read of an objects directory: a `notify` watch on the tree,
//! debounced, and a check of the directory itself that re-establishes the
//! watch when the directory is replaced.
//!
//! An inotify watch follows an inode: when DIR is renamed away and created
//! again (an editor's atomic save of a whole tree, a re-mounted volume), the
//! old watch sees nothing more. So besides the events, DIR's identity
//! (device and inode) is checked every [`ROOT_CHECK`]; when it changes the
//! watch is made again on the new directory and DIR is re-read, and while DIR
//! is missing the last state is kept and the source reports not synced
//! (`/readyz` fails).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher as _};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::{ObjectsDir, ObjectsDirError};

/// Default quiet time after the last change before DIR is re-read.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(200);

/// How often DIR itself is checked for having been replaced or removed.
pub const ROOT_CHECK: Duration = Duration::from_secs(2);

/// DIR's identity: replaced when it changes; `None` while DIR is missing.
fn identity(dir: &Path) -> Option<(u64, u64)> {
    let meta = std::fs::metadata(dir).ok().filter(|m| m.is_dir())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        Some((meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Some((0, 0))
    }
}

impl ObjectsDir {
    /// Watch DIR and re-read it after changes: once no change has been seen for
    /// `debounce` (at most 10 × `debounce` after the first change, so a file
    /// written continuously still gets picked up). Must be called inside a Tokio
    /// runtime; the returned task owns the watch (abort it to stop watching).
    ///
    /// Only files whose size, times or inode changed are parsed again.
    pub fn watch(&self, debounce: Duration) -> Result<JoinHandle<()>, ObjectsDirError> {
        self.watch_checking_every(debounce, ROOT_CHECK)
    }

    /// [`ObjectsDir::watch`], checking DIR's identity every `root_check`.
    pub fn watch_checking_every(
        &self,
        debounce: Duration,
        root_check: Duration,
    ) -> Result<JoinHandle<()>, ObjectsDirError> {
        let changed = Arc::new(Notify::new());
        let mut watcher = Some(self.watcher(&changed)?);
        let mut root = identity(self.dir());

        let this = self.clone();
        Ok(tokio::spawn(async move {
            let mut check = tokio::time::interval(root_check);
            check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = changed.notified() => {}
                    _ = check.tick() => {
                        let now = identity(this.dir());
                        if now == root {
                            continue;
                        }
                        // Replaced, removed or back: watch what is there now.
                        root = now;
                        watcher = None;
                        if root.is_some() {
                            match this.watcher(&changed) {
                                Ok(w) => watcher = Some(w),
                                Err(e) => tracing::warn!(error = %e, "objects directory watch lost"),
                            }
                        }
                        tracing::info!(dir = %this.dir().display(), present = root.is_some(), "objects directory replaced; watching it again");
                    }
                }
                let deadline = tokio::time::Instant::now() + debounce * 10;
                while tokio::time::Instant::now() < deadline {
                    if tokio::time::timeout(debounce, changed.notified())
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
                this.reload_in_background().await;
                // The watcher lives as long as this task.
                let _ = &watcher;
            }
        }))
    }

    /// A recursive watch on DIR that wakes `changed`.
    fn watcher(&self, changed: &Arc<Notify>) -> Result<RecommendedWatcher, ObjectsDirError> {
        let signal = changed.clone();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                match event {
                    // Reads (our own included) change nothing.
                    Ok(event) if matches!(event.kind, EventKind::Access(_)) => {}
                    Ok(_) => signal.notify_one(),
                    Err(e) => {
                        tracing::warn!(error = %e, "objects directory watch error; re-reading");
                        signal.notify_one();
                    }
                }
            })
            .map_err(|e| self.watch_error(e))?;
        watcher
            .watch(self.dir(), RecursiveMode::Recursive)
            .map_err(|e| self.watch_error(e))?;
        Ok(watcher)
    }

    /// Re-read DIR on a blocking thread and log the outcome.
    async fn reload_in_background(&self) {
        let reloader = self.clone();
        let problems = match tokio::task::spawn_blocking(move || reloader.reload()).await {
            Ok(problems) => problems,
            Err(e) => {
                tracing::error!(error = %e, "objects directory reload failed");
                return;
            }
        };
        let snapshot = self.snapshot();
        tracing::info!(
            dir = %self.dir().display(),
            clusters = snapshot.shoot_count(),
            problems = problems.len(),
            "objects directory re-read"
        );
        for problem in &problems {
            tracing::warn!("{problem}");
        }
    }

    fn watch_error(&self, e: notify::Error) -> ObjectsDirError {
        ObjectsDirError::Watch {
            path: self.dir().to_path_buf(),
            reason: e.to_string(),
        }
    }
}
