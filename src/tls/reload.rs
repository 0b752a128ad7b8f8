//! Keeps a [`ReloadingResolver`] in step with the certificate directory, and
//! a [`LiveServerConfig`] with the client CA bundle.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use notify::{RecursiveMode, Watcher as _};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::{
    CERT_FILE, ClientAuthConfig, LiveServerConfig, LoadedPair, PemPair, ReloadingResolver,
    TlsError, client_verifier, content_hash, parse_pair, read_pair,
};

/// Time to let a writer finish both files after the first event.
const DEBOUNCE: Duration = Duration::from_millis(100);

/// Told about every reload attempt that changed something.
pub trait ReloadObserver: Send + Sync + 'static {
    /// A new pair is being served.
    fn reloaded(&self, pair: &LoadedPair);
    /// The directory holds a pair that cannot be served; the old one stays.
    fn failed(&self, error: &TlsError);
    /// Client certificates are checked against a new CA bundle.
    fn client_ca_reloaded(&self) {}
    /// The client CA bundle changed but cannot be used; the old one stays.
    fn client_ca_failed(&self, _error: &TlsError) {}
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
/// and run `check` on a blocking thread after every burst of events
/// (debounced) and every `poll_interval`. Must be called inside a tokio
/// runtime.
fn spawn_watching(
    dir: PathBuf,
    poll_interval: Duration,
    what: &'static str,
    check: Arc<dyn Fn() + Send + Sync>,
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
            tracing::warn!(dir = %dir.display(), error = %err, "cannot watch the {what} directory; relying on the periodic check");
            None
        }
    };
    let handle = tokio::spawn(async move {
        let _watcher = watcher;
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
            let check = check.clone();
            if let Err(err) = tokio::task::spawn_blocking(move || check()).await {
                tracing::error!(error = %err, "{what} check panicked; keeping the current one");
            }
        }
    });
    ReloadTask { handle }
}

/// Watch `dir` and poll it every `poll_interval` comparing content hashes;
/// swap a new, valid pair into `resolver`. `current_hash` is the hash of
/// the pair being served. Must be called inside a tokio runtime.
pub fn spawn_reloader(
    dir: PathBuf,
    resolver: Arc<ReloadingResolver>,
    current_hash: [u8; 32],
    poll_interval: Duration,
    observer: Arc<dyn ReloadObserver>,
) -> ReloadTask {
    let state = Mutex::new((current_hash, None));
    let look_dir = dir.clone();
    let check = move || {
        let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
        let (current, last_failed) = &mut *state;
        match attempt(&look_dir, *current, *last_failed) {
            Attempt::Unchanged => {}
            Attempt::Reloaded(pair) => {
                resolver.swap(pair.key.clone());
                *current = pair.hash;
                *last_failed = None;
                tracing::info!(dir = %look_dir.display(), not_after = pair.not_after, "serving the new certificate");
                observer.reloaded(&pair);
            }
            Attempt::Failed { key, error } => {
                *last_failed = Some(key);
                tracing::warn!(dir = %look_dir.display(), error = %error, "new certificate rejected; keeping the current one");
                observer.failed(&error);
            }
        }
    };
    spawn_watching(dir, poll_interval, "certificate", Arc::new(check))
}

/// Watch the directory of `config.ca_file` and poll the file every
/// `poll_interval`; build a verifier from a changed, valid bundle and make
/// `live` require it from the next handshake on. A bad bundle keeps the
/// current one. `current_hash` is the hash [`super::load_client_verifier`]
/// returned. Must be called inside a tokio runtime.
pub fn spawn_client_ca_reloader(
    config: ClientAuthConfig,
    live: Arc<LiveServerConfig>,
    current_hash: [u8; 32],
    poll_interval: Duration,
    observer: Arc<dyn ReloadObserver>,
) -> ReloadTask {
    let dir = match config.ca_file.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let state = Mutex::new((current_hash, None::<[u8; 32]>));
    let check = move || {
        let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
        let (current, last_failed) = &mut *state;
        let file = config.ca_file.display();
        let (key, error) = match std::fs::read(&config.ca_file) {
            Ok(pem) => {
                let hash = content_hash(&pem, b"");
                if hash == *current || Some(hash) == *last_failed {
                    return;
                }
                let built = client_verifier(&pem, &config.ca_file, &config.allowed_names)
                    .and_then(|verifier| live.set_client_verifier(verifier));
                match built {
                    Ok(()) => {
                        *current = hash;
                        *last_failed = None;
                        tracing::info!(file = %file, "requiring client certificates from the new CA bundle");
                        observer.client_ca_reloaded();
                        return;
                    }
                    Err(error) => (hash, error),
                }
            }
            Err(source) => {
                let error = TlsError::Read {
                    path: config.ca_file.clone(),
                    source,
                };
                (Sha256::digest(error.to_string()).into(), error)
            }
        };
        if Some(key) != *last_failed {
            *last_failed = Some(key);
            tracing::warn!(file = %file, error = %error, "new client CA bundle rejected; keeping the current one");
            observer.client_ca_failed(&error);
        }
    };
    spawn_watching(dir, poll_interval, "client CA", Arc::new(check))
}
