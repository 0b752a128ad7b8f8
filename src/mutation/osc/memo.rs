//! A bounded memo of the kubelet configuration phase: the same file content,
//! library and `kubeletConfig` values always give the same bytes, and
//! gardenlet sends every pool's unchanged kubelet configuration again on each
//! reconcile (and the OS extension's writes pass the webhook again), so the
//! second time the decode–normalise–encode round trip is a lookup.
//!
//! Measured need (docs/performance.md, "Seed webhooks"): that round trip is
//! about 90 µs of a 210 µs OSC review; a hit costs the hash of the file's
//! text. Errors are not memoised. When the memo is full it is emptied (no
//! eviction bookkeeping: a seed has a few hundred pools at most, and the
//! capacity only bounds memory).

use std::collections::HashMap;
use std::sync::Mutex;

/// Entries kept before the memo is emptied: 256 × ~8 KB at most.
pub const DEFAULT_CAPACITY: usize = 256;

/// What the kubelet configuration phase depends on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    pub library: u32,
    pub encoding: String,
    pub data: String,
    /// The phase's `kubeletConfig` actions, in order (`field=value` lines).
    pub sets: String,
}

/// The memo; `capacity` 0 turns it off.
#[derive(Debug)]
pub struct KubeletMemo {
    capacity: usize,
    entries: Mutex<HashMap<Key, String>>,
}

impl KubeletMemo {
    pub fn new(capacity: usize) -> Self {
        KubeletMemo {
            capacity,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The encoded file data computed earlier for `key`.
    pub fn get(&self, key: &Key) -> Option<String> {
        if self.capacity == 0 {
            return None;
        }
        self.lock().get(key).cloned()
    }

    /// Remember `data` for `key`.
    pub fn put(&self, key: Key, data: String) {
        if self.capacity == 0 {
            return;
        }
        let mut entries = self.lock();
        if entries.len() >= self.capacity {
            entries.clear();
        }
        entries.insert(key, data);
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, String>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Default for KubeletMemo {
    fn default() -> Self {
        KubeletMemo::new(DEFAULT_CAPACITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(data: &str) -> Key {
        Key {
            library: 36,
            encoding: "b64".into(),
            data: data.into(),
            sets: String::new(),
        }
    }

    #[test]
    fn remembers_within_its_capacity_and_can_be_off() {
        let memo = KubeletMemo::new(2);
        memo.put(key("a"), "A".into());
        memo.put(key("b"), "B".into());
        assert_eq!(memo.get(&key("a")).as_deref(), Some("A"));
        assert_eq!(
            memo.get(&Key {
                library: 35,
                ..key("a")
            }),
            None
        );
        memo.put(key("c"), "C".into());
        assert_eq!(memo.len(), 1, "emptied when full");
        assert_eq!(memo.get(&key("c")).as_deref(), Some("C"));
        let off = KubeletMemo::new(0);
        off.put(key("a"), "A".into());
        assert_eq!(off.get(&key("a")), None);
        assert!(off.is_empty());
    }
}
