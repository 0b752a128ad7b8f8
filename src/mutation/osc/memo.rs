//! A bounded memo of the kubelet configuration phase: the same file content,
//! library and `kubeletConfig` values always give the same bytes, and
//! gardenlet sends every pool's unchanged kubelet configuration again on each
//! reconcile (and the OS extension's writes pass the webhook again), so the
//! second time the decode–normalise–encode round trip is a lookup.
//!
//! Measured need (docs/performance.md, "Seed webhooks"): that round trip is
//! about 60 µs of a 140 µs OSC review; a hit costs a SHA-256 of the file's
//! data (about 2 µs for gardenlet's 4 KB).
//!
//! Bounded in bytes, not entries (issue 27: 256 entries of 5 MB
//! configurations held 3.4 GiB): an entry is keyed by the SHA-256 and
//! length of the file's data, so the memo never keeps an input; it keeps
//! only results of data up to [`MAX_DATA_BYTES`] (gardenlet's configuration
//! is about 4 KB) and at most [`DEFAULT_BYTES`] of them, and empties itself
//! when the next one would not fit (no eviction bookkeeping: a seed has a
//! few hundred pools at most, and the bound only caps memory). The digest
//! is a cryptographic hash because an entry answers for every input with
//! that digest: a collision crafted by one client would otherwise give
//! another pool its configuration. Errors are not memoised.

use std::collections::HashMap;
use std::sync::Mutex;

use sha2::{Digest as _, Sha256};

/// What the memo may hold, in bytes of keys and results.
pub const DEFAULT_BYTES: usize = 2 * 1024 * 1024;
/// Data longer than this is not memoised.
pub const MAX_DATA_BYTES: usize = 64 * 1024;
/// What an entry costs besides its strings: the map's slot, the digest,
/// the strings' headers.
const ENTRY_OVERHEAD: usize = 128;

/// What the kubelet configuration phase depends on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    pub library: u32,
    pub encoding: String,
    /// The SHA-256 of the file's data.
    pub digest: [u8; 32],
    /// The data's length.
    pub len: usize,
    /// The phase's `kubeletConfig` actions, in order (`field=value` lines).
    pub sets: String,
}

impl Key {
    /// The key of `data` (`None`: too long to be memoised).
    pub fn of(library: u32, encoding: &str, data: &str, sets: String) -> Option<Key> {
        (data.len() <= MAX_DATA_BYTES).then(|| Key {
            library,
            encoding: encoding.to_string(),
            digest: Sha256::digest(data.as_bytes()).into(),
            len: data.len(),
            sets,
        })
    }

    fn bytes(&self) -> usize {
        self.encoding.len() + self.sets.len() + ENTRY_OVERHEAD
    }
}

/// The memo; a budget of 0 bytes turns it off.
#[derive(Debug)]
pub struct KubeletMemo {
    budget: usize,
    entries: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    map: HashMap<Key, String>,
    bytes: usize,
}

impl KubeletMemo {
    /// A memo of at most `budget` bytes.
    pub fn new(budget: usize) -> Self {
        KubeletMemo {
            budget,
            entries: Mutex::new(Entries::default()),
        }
    }

    /// The encoded file data computed earlier for `key`.
    pub fn get(&self, key: &Key) -> Option<String> {
        if self.budget == 0 {
            return None;
        }
        self.lock().map.get(key).cloned()
    }

    /// Remember `data` for `key`, if it fits.
    pub fn put(&self, key: Key, data: String) {
        let size = key.bytes() + data.len();
        if self.budget == 0 || size > self.budget / 4 {
            return;
        }
        let mut entries = self.lock();
        if let Some(old) = entries.map.remove(&key) {
            entries.bytes -= key.bytes() + old.len();
        }
        if entries.bytes + size > self.budget {
            entries.map.clear();
            entries.bytes = 0;
        }
        entries.bytes += size;
        entries.map.insert(key, data);
    }

    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes the memo holds now.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Default for KubeletMemo {
    fn default() -> Self {
        KubeletMemo::new(DEFAULT_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(data: &str) -> Key {
        Key::of(36, "b64", data, String::new()).expect("short")
    }

    #[test]
    fn remembers_within_its_bytes_and_can_be_off() {
        let entry = key("a").bytes() + 1;
        let memo = KubeletMemo::new(4 * 2 * entry);
        memo.put(key("a"), "A".into());
        memo.put(key("b"), "B".into());
        assert_eq!(memo.get(&key("a")).as_deref(), Some("A"));
        assert_eq!(memo.bytes(), 2 * entry);
        assert_eq!(
            memo.get(&Key {
                library: 35,
                ..key("a")
            }),
            None
        );
        memo.put(key("b"), "B".into());
        assert_eq!(memo.bytes(), 2 * entry, "replacing counts once");
        for data in ["c", "d", "e", "f", "g", "h", "i"] {
            memo.put(key(data), data.to_uppercase());
            assert!(memo.bytes() <= 8 * entry);
        }
        assert_eq!(memo.get(&key("i")).as_deref(), Some("I"));
        let off = KubeletMemo::new(0);
        off.put(key("a"), "A".into());
        assert_eq!(off.get(&key("a")), None);
        assert!(off.is_empty());
    }

    /// Issue 27, item 2: large inputs are neither kept nor remembered.
    #[test]
    fn keeps_no_input_and_skips_large_ones() {
        let big = "x".repeat(MAX_DATA_BYTES + 1);
        assert_eq!(Key::of(36, "b64", &big, String::new()), None);
        let memo = KubeletMemo::default();
        let data = "y".repeat(MAX_DATA_BYTES);
        let k = key(&data);
        assert_eq!(
            k.bytes(),
            3 + ENTRY_OVERHEAD,
            "the key holds a digest, not the data"
        );
        memo.put(k.clone(), "z".repeat(DEFAULT_BYTES));
        assert!(
            memo.is_empty(),
            "a result over a quarter of the budget is not kept"
        );
        for i in 0..10_000 {
            memo.put(key(&format!("{i}")), "r".repeat(4096));
        }
        assert!(memo.bytes() <= DEFAULT_BYTES, "{}", memo.bytes());
    }
}
