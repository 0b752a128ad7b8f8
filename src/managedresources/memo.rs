//! A bounded memo of the Secret names of ManagedResources: the same objects
//! under the same data key always give the same Secret bytes, hence the same
//! content-addressed name, and every reconcile of an unchanged ControlPlane
//! (the reconcile storm after a gardenlet restart; the reconcile of each
//! ControlPlane after a controller restart) renders the same objects again.
//! With the name known, the controller decides "unchanged" from the live
//! ManagedResource's spec and references alone and encodes the Secret only
//! when it writes it.
//!
//! Measured need (docs/performance.md, "ControlPlane controller at seed
//! scale"): encoding the YAML of the Secrets (182 KB for aws with CSI) was
//! about half of the controller's CPU in a reconcile storm once nothing was
//! decoded any more; with the memo the storm's controller CPU went from
//! 3.3–3.4 to 1.7–1.8 ms per ControlPlane (1,000 ControlPlanes: 1.6 s less).
//! A hit costs the JSON of the objects fed to a SHA-256 (about a tenth of
//! what is left, ~0.15 ms) and one lookup.
//!
//! Keyed by namespace and ManagedResource name, with the SHA-256 of the data
//! key and the objects' JSON ([`digest`]): an entry answers only for the very
//! objects it was computed from (a changed object is a miss and encodes
//! again). The digest, not the objects, is kept: the objects are 182 KB per
//! ControlPlane. Bounded in bytes ([`DEFAULT_BYTES`]: about 15,000
//! ManagedResources, 3,000 ControlPlanes of five); it empties itself when the
//! next entry would not fit (no eviction bookkeeping: the bound only caps
//! memory, and an emptied memo costs one encode per ManagedResource).

use std::collections::HashMap;
use std::io::Write as _;
use std::sync::Mutex;

use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// What the memo may hold, in bytes of keys and names.
pub const DEFAULT_BYTES: usize = 4 * 1024 * 1024;
/// What an entry costs besides its strings: the map's slot, the digest and
/// the strings' headers.
const ENTRY_OVERHEAD: usize = 160;

/// The SHA-256 of the data key and the objects' JSON (one line each: JSON
/// text holds no raw line break, so the lines cannot run into each other).
pub fn digest<'a>(key: &str, objects: impl IntoIterator<Item = &'a Value>) -> [u8; 32] {
    /// Feeds what serde_json writes to the hash, through a buffer (serde_json
    /// writes token by token).
    struct Hashing(Sha256);
    impl std::io::Write for Hashing {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.update(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = std::io::BufWriter::with_capacity(16 << 10, Hashing(Sha256::new()));
    // The hash never refuses bytes, and serde_json serialises every Value,
    // so these writes cannot fail.
    let _ = out.write_all(key.as_bytes());
    for object in objects {
        let _ = out.write_all(b"\n");
        let _ = serde_json::to_writer(&mut out, object);
    }
    let _ = out.flush();
    out.into_parts().0.0.finalize().into()
}

/// The memo; a budget of 0 bytes turns it off.
#[derive(Debug)]
pub struct NameMemo {
    budget: usize,
    entries: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    /// (namespace, ManagedResource) → (digest, Secret name).
    map: HashMap<(String, String), ([u8; 32], String)>,
    bytes: usize,
}

impl Default for NameMemo {
    fn default() -> Self {
        NameMemo::new(DEFAULT_BYTES)
    }
}

impl NameMemo {
    /// A memo holding at most `budget` bytes.
    pub fn new(budget: usize) -> Self {
        NameMemo {
            budget,
            entries: Mutex::default(),
        }
    }

    /// The Secret name of the ManagedResource `name` in `namespace` whose
    /// objects have `digest`, when it was recorded.
    pub fn get(&self, namespace: &str, name: &str, digest: &[u8; 32]) -> Option<String> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .map
            .get(&(namespace.to_owned(), name.to_owned()))
            .filter(|(d, _)| d == digest)
            .map(|(_, secret)| secret.clone())
    }

    /// Record the Secret name of objects with `digest`, replacing what the
    /// ManagedResource had.
    pub fn insert(&self, namespace: &str, name: &str, digest: [u8; 32], secret_name: &str) {
        let cost = namespace.len() + name.len() + secret_name.len() + ENTRY_OVERHEAD;
        if cost > self.budget {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let key = (namespace.to_owned(), name.to_owned());
        if let Some((_, old)) = entries.map.remove(&key) {
            entries.bytes -= namespace.len() + name.len() + old.len() + ENTRY_OVERHEAD;
        }
        if entries.bytes + cost > self.budget {
            entries.map.clear();
            entries.bytes = 0;
        }
        entries.map.insert(key, (digest, secret_name.to_owned()));
        entries.bytes += cost;
    }

    /// The bytes held (keys, names, overhead).
    pub fn bytes(&self) -> usize {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_same_objects_hit_and_any_change_misses() {
        let a = [json!({"kind": "ConfigMap", "data": {"k": "v"}})];
        let b = [json!({"kind": "ConfigMap", "data": {"k": "w"}})];
        let memo = NameMemo::default();
        let d = digest("k", &a);
        assert_eq!(d, digest("k", &a.clone()));
        assert_ne!(d, digest("k", &b));
        assert_ne!(d, digest("other", &a));
        // one object's JSON is not two objects' JSON run together
        let split = [json!("a"), json!("b")];
        assert_ne!(digest("k", &split), digest("k", &[json!("ab")]));
        assert_eq!(memo.get("ns", "mr", &d), None);
        memo.insert("ns", "mr", d, "mr-1234abcd");
        assert_eq!(memo.get("ns", "mr", &d).as_deref(), Some("mr-1234abcd"));
        assert_eq!(memo.get("ns", "mr", &digest("k", &b)), None);
        assert_eq!(memo.get("other", "mr", &d), None);
        memo.insert("ns", "mr", digest("k", &b), "mr-99999999");
        assert_eq!(memo.get("ns", "mr", &d), None);
        assert_eq!(memo.bytes(), 2 + 2 + 11 + ENTRY_OVERHEAD);
    }

    #[test]
    fn the_budget_bounds_the_memo() {
        let per = 4 + 2 + 11 + ENTRY_OVERHEAD;
        let memo = NameMemo::new(3 * per);
        for i in 0..10 {
            memo.insert(&format!("ns{i:02}"), "mr", [i; 32], "mr-1234abcd");
            assert!(memo.bytes() <= 3 * per, "{}", memo.bytes());
        }
        // the last one is there; the memo emptied itself on the way
        assert!(memo.get("ns09", "mr", &[9; 32]).is_some());
        assert!(memo.get("ns00", "mr", &[0; 32]).is_none());
        let off = NameMemo::new(0);
        off.insert("ns", "mr", [0; 32], "mr-1234abcd");
        assert_eq!(off.get("ns", "mr", &[0; 32]), None);
        assert_eq!(off.bytes(), 0);
    }
}
