//! Reading object files: finding them under a directory, parsing one file
//! (JSON, or YAML with several documents) and decoding its objects.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use super::objects::{DecodedObject, Document, decode_object};

/// A problem with one file (or one object in it). The others still load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadProblem {
    pub path: PathBuf,
    /// 1-based line and column, when the parser knows them.
    pub line: Option<u64>,
    pub column: Option<u64>,
    pub message: String,
}

impl fmt::Display for LoadProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        write!(f, ": {}", self.message)
    }
}

/// A file's identity at the time it was read: it is re-read only when this changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    #[cfg(unix)]
    inode: u64,
    #[cfg(unix)]
    ctime_ns: i128,
}

/// The object files under `dir`, sorted, with their stamps.
pub(super) fn scan(dir: &Path, problems: &mut Vec<LoadProblem>) -> Vec<(PathBuf, Stamp)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        let entries = match std::fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) => {
                problems.push(problem(&folder, format!("cannot read folder: {e}")));
                continue;
            }
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            if file_type.is_dir() {
                pending.push(path);
                continue;
            }
            if !is_object_file(&path) {
                continue;
            }
            // Follows a symlinked file; a dangling link is reported.
            match std::fs::metadata(&path) {
                Ok(meta) if meta.is_file() => out.push((path, stamp(&meta))),
                Ok(_) => {}
                Err(e) => problems.push(problem(&path, format!("cannot read file: {e}"))),
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn is_object_file(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json")
    )
}

fn stamp(meta: &std::fs::Metadata) -> Stamp {
    #[cfg(unix)]
    use std::os::unix::fs::MetadataExt as _;
    Stamp {
        len: meta.len(),
        modified: meta.modified().ok(),
        #[cfg(unix)]
        inode: meta.ino(),
        #[cfg(unix)]
        ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
    }
}

pub(super) fn problem(path: &Path, message: String) -> LoadProblem {
    LoadProblem {
        path: path.to_path_buf(),
        line: None,
        column: None,
        message,
    }
}

/// What reading one file gives: its objects and per-object problems, or the
/// problem that kept the whole file from parsing.
pub(super) type FileResult = Result<(Vec<DecodedObject>, Vec<LoadProblem>), LoadProblem>;

/// [`read_file`] for many files, on up to one thread per core (YAML parsing is
/// the cost of a load: about 5 MB/s per core with serde-saphyr). Results are
/// in the order of `paths`.
pub(super) fn read_files(paths: &[&Path], max_bytes: u64) -> Vec<FileResult> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8)
        .min(paths.len());
    if threads <= 1 {
        return paths.iter().map(|p| read_file(p, max_bytes)).collect();
    }
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<FileResult>>> = paths.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = paths.get(i) else { break };
                    let result = read_file(path, max_bytes);
                    *slots[i].lock().unwrap_or_else(PoisonError::into_inner) = Some(result);
                }
            });
        }
    });
    slots
        .into_iter()
        .zip(paths)
        .map(|(slot, path)| {
            slot.into_inner()
                .unwrap_or_else(PoisonError::into_inner)
                .unwrap_or_else(|| Err(problem(path, "file was not read".into())))
        })
        .collect()
}

/// Parse one file. `Err` is a file that does not parse at all; problems with
/// single objects in a file that parses come back next to the good objects.
fn read_file(path: &Path, max_bytes: u64) -> FileResult {
    let too_big = |len: u64| {
        problem(
            path,
            format!("the file is {len} bytes; files over {max_bytes} bytes are not read"),
        )
    };
    let file =
        std::fs::File::open(path).map_err(|e| problem(path, format!("cannot read file: {e}")))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > max_bytes {
        return Err(too_big(len));
    }
    // Read at most one byte over the budget: the file may grow meanwhile.
    let mut bytes = Vec::with_capacity(len as usize);
    std::io::Read::read_to_end(&mut std::io::Read::take(file, max_bytes + 1), &mut bytes)
        .map_err(|e| problem(path, format!("cannot read file: {e}")))?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_big(bytes.len() as u64));
    }
    let documents = parse_documents(path, &bytes)?;
    let mut objects = Vec::new();
    let mut problems = Vec::new();
    let several = documents.len() > 1;
    for (index, document) in documents.into_iter().enumerate() {
        let at = |message: String| {
            if several {
                problem(path, format!("document {}: {message}", index + 1))
            } else {
                problem(path, message)
            }
        };
        let items = match document.into_objects() {
            Ok(items) => items,
            Err(e) => {
                problems.push(at(e));
                continue;
            }
        };
        for item in items {
            match decode_object(item) {
                Ok(DecodedObject::Ignored { api_version, kind }) => {
                    problems.push(at(format!(
                        "{kind} ({api_version}) is not a kind scion reads ({}); ignored",
                        super::objects::KINDS_READ
                    )));
                }
                Ok(DecodedObject::MalformedCluster(e)) => {
                    problems.push(at(e.to_string()));
                    objects.push(DecodedObject::MalformedCluster(e));
                }
                Ok(object) => objects.push(object),
                Err(e) => problems.push(at(e)),
            }
        }
    }
    Ok((objects, problems))
}

fn parse_documents(path: &Path, bytes: &[u8]) -> Result<Vec<Document>, LoadProblem> {
    let is_json = path.extension().and_then(|e| e.to_str()) == Some("json");
    if is_json {
        return serde_json::from_slice::<Document>(bytes)
            .map(|d| vec![d])
            .map_err(|e| LoadProblem {
                path: path.to_path_buf(),
                line: Some(e.line() as u64),
                column: Some(e.column() as u64),
                message: format!("invalid JSON: {}", without_location(&e.to_string())),
            });
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        problem(
            path,
            format!("not UTF-8 text (at byte {})", e.valid_up_to()),
        )
    })?;
    let documents: Vec<Document> = serde_saphyr::from_multiple(text).map_err(|e| {
        let location = e.location();
        LoadProblem {
            path: path.to_path_buf(),
            line: location.map(|l| l.line()),
            column: location.map(|l| l.column()),
            message: format!("invalid YAML: {}", without_location(&e.to_string())),
        }
    })?;
    Ok(documents
        .into_iter()
        .filter(|d| !d.value.is_null())
        .collect())
}

/// The parser's message without its own rendering of the location (reported
/// separately): serde-saphyr writes `error: line L column C: message` and a
/// source snippet below, serde_json `message at line L column C`.
fn without_location(text: &str) -> String {
    let first = text.lines().next().unwrap_or(text).trim();
    let mut message = first.strip_prefix("error: ").unwrap_or(first);
    if let Some(rest) = message.strip_prefix("line ")
        && let Some((_, after)) = rest.split_once(": ")
    {
        message = after;
    }
    match message.rfind(" at line ") {
        Some(at) if message[at..].contains(" column ") => message[..at].to_string(),
        _ => message.to_string(),
    }
}
