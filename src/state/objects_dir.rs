//! `--objects-dir DIR`: the state read from Kubernetes objects in files, so
//! scion runs with no cluster at all.
//!
//! Every `*.yaml`, `*.yml` and `*.json` file under DIR (recursively) is read;
//! YAML files may hold several documents, and any file may hold a `kind: List`.
//! Hidden files and folders (name starting with `.`) are skipped, which also
//! skips the `..data` links of a mounted ConfigMap; symlinked files are
//! followed, symlinked folders are not. Each reload builds a whole new
//! [`Snapshot`] and swaps it in, so readers never see half a reload.
//!
//! A file that does not parse is reported (path, line, column) and the other
//! files load. If it parsed before, its previous content is kept until it is
//! fixed or removed: a half-saved file must not make a shoot disappear and every
//! webhook call for it fail.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::ArcSwap;
use futures::future::BoxFuture;
use serde_json::Value;

use super::files::{LoadProblem, Stamp, problem, read_files, scan};
use super::objects::DecodedObject;
use super::{Snapshot, StateError, StateSource};
use crate::gardener::{ObjectData, ObjectKind, ShootContext};

/// The largest object file read (JSON or YAML): 64 MiB, room for a
/// `kubectl get clusters -o json` List of ~400 realistic Clusters. A bigger
/// file is reported and skipped, its previous content kept, so one stray
/// file cannot take the process's memory (a file is read whole before it is
/// parsed).
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Errors that stop the objects directory from being used at all.
#[derive(Debug, thiserror::Error)]
pub enum ObjectsDirError {
    #[error("objects directory {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("objects directory {} is not a directory", path.display())]
    NotADirectory { path: PathBuf },
    #[error("cannot watch objects directory {}: {reason}", path.display())]
    Watch { path: PathBuf, reason: String },
}

/// The objects-directory state source. Cheap to clone (shared inside).
#[derive(Clone)]
pub struct ObjectsDir {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub(super) dir: PathBuf,
    /// Largest file read; bigger ones are reported and skipped (their
    /// previous content kept).
    pub(super) max_file_bytes: u64,
    /// DIR could be read at the last reload. While it cannot (renamed away,
    /// deleted, not a directory) the last state is kept and this is false,
    /// so `/readyz` fails.
    readable: AtomicBool,
    current: ArcSwap<Snapshot>,
    problems: ArcSwap<Vec<LoadProblem>>,
    /// What each file held at the last reload; also serialises reloads.
    files: Mutex<BTreeMap<PathBuf, FileEntry>>,
}

struct FileEntry {
    stamp: Stamp,
    objects: Vec<DecodedObject>,
    problems: Vec<LoadProblem>,
}

impl fmt::Debug for ObjectsDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectsDir")
            .field("dir", &self.inner.dir)
            .field("shoots", &self.inner.current.load().shoot_count())
            .finish()
    }
}

impl ObjectsDir {
    /// Read DIR once. Problems with single files are returned, not fatal; only a
    /// DIR that does not exist or is not a directory is an error. Files over
    /// [`MAX_FILE_BYTES`] are reported and skipped.
    pub fn load(dir: impl Into<PathBuf>) -> Result<(Self, Vec<LoadProblem>), ObjectsDirError> {
        Self::load_with_limit(dir, MAX_FILE_BYTES)
    }

    /// [`ObjectsDir::load`] with another file size budget.
    pub fn load_with_limit(
        dir: impl Into<PathBuf>,
        max_file_bytes: u64,
    ) -> Result<(Self, Vec<LoadProblem>), ObjectsDirError> {
        let dir = dir.into();
        let meta = std::fs::metadata(&dir).map_err(|source| ObjectsDirError::Io {
            path: dir.clone(),
            source,
        })?;
        if !meta.is_dir() {
            return Err(ObjectsDirError::NotADirectory { path: dir });
        }
        let this = ObjectsDir {
            inner: Arc::new(Inner {
                dir,
                max_file_bytes,
                readable: AtomicBool::new(true),
                current: ArcSwap::from_pointee(Snapshot::default()),
                problems: ArcSwap::from_pointee(Vec::new()),
                files: Mutex::new(BTreeMap::new()),
            }),
        };
        let problems = this.reload();
        Ok((this, problems))
    }

    /// The directory read.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Re-read DIR: files whose size, mtime, ctime or inode changed are parsed
    /// again, removed files are dropped, and a new snapshot is swapped in.
    /// Returns all current problems.
    pub fn reload(&self) -> Vec<LoadProblem> {
        let mut files = self
            .inner
            .files
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut problems = Vec::new();
        if !std::fs::metadata(&self.inner.dir).is_ok_and(|m| m.is_dir()) {
            // Renamed away or deleted (a ConfigMap volume swaps its whole
            // tree): keep serving the last state, but not as ready.
            self.inner.readable.store(false, Ordering::SeqCst);
            problems.push(problem(
                &self.inner.dir,
                "the objects directory is missing or not a directory; keeping the last state"
                    .into(),
            ));
            self.inner.problems.store(Arc::new(problems.clone()));
            return problems;
        }
        let found = scan(&self.inner.dir, &mut problems);
        let present: HashSet<&PathBuf> = found.iter().map(|(p, _)| p).collect();
        files.retain(|path, _| present.contains(path));
        let changed: Vec<(PathBuf, Stamp)> = found
            .into_iter()
            .filter(|(path, stamp)| !files.get(path).is_some_and(|e| &e.stamp == stamp))
            .collect();
        let paths: Vec<&Path> = changed.iter().map(|(p, _)| p.as_path()).collect();
        let parsed = read_files(&paths, self.inner.max_file_bytes);
        for ((path, stamp), result) in changed.into_iter().zip(parsed) {
            let entry = match result {
                Ok((objects, problems)) => FileEntry {
                    stamp,
                    objects,
                    problems,
                },
                Err(mut problem) => match files.remove(&path) {
                    Some(previous) if !previous.objects.is_empty() => {
                        problem
                            .message
                            .push_str(" (keeping the previous content of this file)");
                        FileEntry {
                            stamp,
                            objects: previous.objects,
                            problems: vec![problem],
                        }
                    }
                    _ => FileEntry {
                        stamp,
                        objects: Vec::new(),
                        problems: vec![problem],
                    },
                },
            };
            files.insert(path, entry);
        }
        let snapshot = build_snapshot(&files, &mut problems);
        for entry in files.values() {
            problems.extend(entry.problems.iter().cloned());
        }
        problems.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
        self.inner.current.store(Arc::new(snapshot));
        self.inner.problems.store(Arc::new(problems.clone()));
        self.inner.readable.store(true, Ordering::SeqCst);
        problems
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.inner.current.load_full()
    }

    /// The problems of the last reload.
    pub fn problems(&self) -> Vec<LoadProblem> {
        self.inner.problems.load().as_ref().clone()
    }

    /// The ControlPlane `namespace/name`, raw (`managedFields` stripped).
    pub fn controlplane(&self, namespace: &str, name: &str) -> Option<Value> {
        self.inner
            .current
            .load()
            .controlplane(namespace, name)
            .cloned()
    }

    /// All ControlPlanes, ordered by namespace and name.
    pub fn controlplanes(&self) -> Vec<Value> {
        self.inner.current.load().controlplanes().cloned().collect()
    }
}

impl StateSource for ObjectsDir {
    fn shoot(&self, namespace: &str) -> Result<Arc<ShootContext>, StateError> {
        self.inner.current.load().get_shoot(namespace)
    }

    fn object<'a>(
        &'a self,
        kind: ObjectKind,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<ObjectData>, StateError>> {
        let found = self
            .inner
            .current
            .load()
            .get_object(kind, namespace, name)
            .cloned();
        Box::pin(async move { Ok(found) })
    }

    fn list_labelled<'a>(
        &'a self,
        kind: ObjectKind,
        label: (&'a str, &'a str),
    ) -> BoxFuture<'a, Result<Vec<ObjectData>, StateError>> {
        let found = self.inner.current.load().labelled(kind, label);
        Box::pin(async move { Ok(found) })
    }

    fn backup_bucket<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<serde_json::Value>, StateError>> {
        let found = self.inner.current.load().get_backup_bucket(name).cloned();
        Box::pin(async move { Ok(found) })
    }

    /// The first load happens in [`ObjectsDir::load`]; false while the
    /// directory itself cannot be read.
    fn is_synced(&self) -> bool {
        self.inner.readable.load(Ordering::SeqCst)
    }
}

/// Merge all files, in path order, into one snapshot. An object defined in two
/// files is reported; the later file wins.
fn build_snapshot<'a>(
    files: &'a BTreeMap<PathBuf, FileEntry>,
    problems: &mut Vec<LoadProblem>,
) -> Snapshot {
    let mut snapshot = Snapshot::default();
    let mut seen: HashMap<String, &Path> = HashMap::new();
    let mut duplicate = |key: String, path: &'a Path| {
        if let Some(first) = seen
            .insert(key.clone(), path)
            .filter(|first| *first != path)
        {
            problems.push(problem(
                path,
                format!(
                    "{key} is also defined in {}; using this file",
                    first.display()
                ),
            ));
        }
    };
    for (path, entry) in files {
        for object in &entry.objects {
            match object {
                DecodedObject::Shoot(ctx) => {
                    duplicate(format!("Cluster {}", ctx.cluster_name), path);
                    snapshot.insert_shared_shoot(ctx.clone());
                }
                DecodedObject::MalformedCluster(e) => {
                    if let StateError::ClusterMalformed(e) = e {
                        duplicate(format!("Cluster {}", e.name), path);
                    }
                    snapshot.insert_malformed(e.clone());
                }
                DecodedObject::Object {
                    namespace,
                    name,
                    data,
                } => {
                    let kind = match data {
                        ObjectData::Secret { .. } => "Secret",
                        ObjectData::ConfigMap { .. } => "ConfigMap",
                    };
                    duplicate(format!("{kind} {namespace}/{name}"), path);
                    snapshot.insert_object(namespace, name, data.clone());
                }
                DecodedObject::ControlPlane {
                    namespace,
                    name,
                    object,
                } => {
                    duplicate(format!("ControlPlane {namespace}/{name}"), path);
                    snapshot.insert_controlplane(namespace, name, object.clone());
                }
                DecodedObject::BackupBucket {
                    name,
                    provider_config,
                } => {
                    duplicate(format!("BackupBucket {name}"), path);
                    snapshot.insert_backup_bucket(name, provider_config.clone());
                }
                DecodedObject::Ignored { .. } => {}
            }
        }
    }
    snapshot
}
