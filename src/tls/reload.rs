//! Keeps a [`ReloadingResolver`] in step with the certificate directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify::{RecursiveMode, Watcher as _};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::{
    CERT_FILE, LoadedPair, PemPair, ReloadingResolver, TlsError, content_hash, parse_pair,
    read_pair,
};

/// Time to let a writer finish both files after the first event.
const DEBOUNCE: Duration = Duration::from_millis(100);

/// Told about every reload attempt that changed something.
pub trait ReloadObserver: Send + Sync + 'static {
    /// A new pair is being served.
    fn reloaded(&self, pair: &LoadedPair);
    /// The directory holds a pair that cannot be served; the old one stays.
    fn failed(&self, error: &TlsError);
}

/// The running reloader; dropping it stops the watch and the poll.
#[derive(Debug)]
pub struct ReloadTask {
    handle: JoinHandle<()>,
}

impl Drop for ReloadTask {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

enum Attempt {
    Unchanged,
    Reloaded(LoadedPair),
    Failed { key: [u8; 32], error: TlsError },
}

/// One look at the directory. `current` is the hash of the pair being
/// served, `last_failed` the key of the last failure (reported once).
fn attempt(dir: &Path, current: [u8; 32], last_failed: Option<[u8; 32]>) -> Attempt {
    let (key, error) = match read_pair(dir) {
        Ok(Some(PemPair { cert, key })) => {
            let hash = content_hash(&cert, &key);
            if hash == current || Some(hash) == last_failed {
                return Attempt::Unchanged;
            }
            match parse_pair(&cert, &key, dir) {
                Ok(pair) => return Attempt::Reloaded(pair),
                Err(error) => (hash, error),
            }
        }
        Ok(None) => (
            [0; 32],
            TlsError::Read {
                path: dir.join(CERT_FILE),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "tls.crt and tls.key are both gone",
                ),
            },
        ),
        Err(error) => (Sha256::digest(error.to_string()).into(), error),
    };
    if Some(key) == last_failed {
        Attempt::Unchanged
    } else {
        Attempt::Failed { key, error }
    }
}

/// Watch `dir` (the directory, so kubelet's `..data` symlink swap is seen)
/// and poll it every `poll_interval` comparing content hashes; swap a new,
/// valid pair into `resolver`. `current_hash` is the hash of the pair being
/// served. Must be called inside a tokio runtime.
pub fn spawn_reloader(
    dir: PathBuf,
    resolver: Arc<ReloadingResolver>,
    current_hash: [u8; 32],
    poll_interval: Duration,
    observer: Arc<dyn ReloadObserver>,
) -> ReloadTask {
    let (events_tx, mut events) = mpsc::channel::<()>(1);
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if event.is_ok() {
            // A full channel already holds a pending wake-up.
            let _ = events_tx.try_send(());
        }
    })
    .and_then(|mut watcher| {
        watcher.watch(&dir, RecursiveMode::NonRecursive)?;
        Ok(watcher)
    });
    let watcher = match watcher {
        Ok(watcher) => Some(watcher),
        Err(err) => {
            tracing::warn!(dir = %dir.display(), error = %err, "cannot watch the certificate directory; relying on the periodic check");
            None
        }
    };
    let handle = tokio::spawn(async move {
        let _watcher = watcher;
        let mut current = current_hash;
        let mut last_failed = None;
        let mut poll = tokio::time::interval(poll_interval);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        poll.tick().await;
        loop {
            tokio::select! {
                _ = poll.tick() => {}
                Some(()) = events.recv() => {
                    tokio::time::sleep(DEBOUNCE).await;
                    while events.try_recv().is_ok() {}
                }
            }
            let look_dir = dir.clone();
            let outcome =
                tokio::task::spawn_blocking(move || attempt(&look_dir, current, last_failed)).await;
            match outcome {
                Ok(Attempt::Unchanged) => {}
                Ok(Attempt::Reloaded(pair)) => {
                    resolver.swap(pair.key.clone());
                    current = pair.hash;
                    last_failed = None;
                    tracing::info!(dir = %dir.display(), not_after = pair.not_after, "serving the new certificate");
                    observer.reloaded(&pair);
                }
                Ok(Attempt::Failed { key, error }) => {
                    last_failed = Some(key);
                    tracing::warn!(dir = %dir.display(), error = %error, "new certificate rejected; keeping the current one");
                    observer.failed(&error);
                }
                Err(err) => {
                    tracing::error!(error = %err, "certificate check panicked; keeping the current certificate");
                }
            }
        }
    });
    ReloadTask { handle }
}
