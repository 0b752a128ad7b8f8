//! Live re-read of an objects directory: a `notify` watch on the tree, debounced.

use std::sync::Arc;
use std::time::Duration;

use notify::{EventKind, RecursiveMode, Watcher as _};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::{ObjectsDir, ObjectsDirError};

/// Default quiet time after the last change before DIR is re-read.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(200);

impl ObjectsDir {
    /// Watch DIR and re-read it after changes: once no change has been seen for
    /// `debounce` (at most 10 × `debounce` after the first change, so a file
    /// written continuously still gets picked up). Must be called inside a Tokio
    /// runtime; the returned task owns the watch (abort it to stop watching).
    ///
    /// Only files whose size, times or inode changed are parsed again.
    pub fn watch(&self, debounce: Duration) -> Result<JoinHandle<()>, ObjectsDirError> {
        let changed = Arc::new(Notify::new());
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

        let this = self.clone();
        Ok(tokio::spawn(async move {
            // The watcher lives as long as this task.
            let _watcher = watcher;
            loop {
                changed.notified().await;
                let deadline = tokio::time::Instant::now() + debounce * 10;
                while tokio::time::Instant::now() < deadline {
                    if tokio::time::timeout(debounce, changed.notified())
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
                let reloader = this.clone();
                let problems = match tokio::task::spawn_blocking(move || reloader.reload()).await {
                    Ok(problems) => problems,
                    Err(e) => {
                        tracing::error!(error = %e, "objects directory reload failed");
                        continue;
                    }
                };
                let snapshot = this.snapshot();
                tracing::info!(
                    dir = %this.dir().display(),
                    clusters = snapshot.shoot_count(),
                    problems = problems.len(),
                    "objects directory re-read"
                );
                for problem in &problems {
                    tracing::warn!("{problem}");
                }
            }
        }))
    }

    fn watch_error(&self, e: notify::Error) -> ObjectsDirError {
        ObjectsDirError::Watch {
            path: self.dir().to_path_buf(),
            reason: e.to_string(),
        }
    }
}
