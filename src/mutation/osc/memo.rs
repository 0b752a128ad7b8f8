//! A bounded memo of the kubelet configuration phase: the same file content,
//! library and `kubeletConfig` values always give the same bytes, and
//! gardenlet sends every pool's unchanged kubelet configuration again on each
//! reconcile (and the OS extension's writes pass the webhook again), so the
//! second time the decode–normalise–encode round trip is a lookup.
//!
//! Measured need (docs/performance.md, "Seed webhooks"): that round trip is
//! about 60 µs of a 140 µs OSC review; a hit costs a hash of the file's data
//! with the map's random-keyed hasher and one comparison of it.
//!
//! Bounded in bytes, not entries (issue 27: 256 entries of 5 MB
//! configurations held 3.4 GiB): it keeps only data up to [`MAX_DATA_BYTES`]
//! (gardenlet's configuration is about 4 KB) and its result, counts both,
//! holds at most [`DEFAULT_BYTES`] and empties itself when the next entry
//! would not fit (no eviction bookkeeping: a seed has a few hundred pools at
//! most, and the bound only caps memory; 2 MiB is about 250 pools of
//! gardenlet's 4 KB configuration). An entry answers only for the very data
//! it was computed from, so no crafted input can be given another's result.
//!
//! Why the key holds the data and not a digest of it: issue 27 keyed it by
//! a SHA-256, to keep no input. Where the CPU has no SHA extensions (many
//! server CPUs; valgrind hides them too) that is RustCrypto's portable
//! SHA-256: 170 k of the OSC mutation's 990 k instructions for gardenlet's
//! 4 KB configuration, on every review, hit or not (+20 % over the mutation
//! before issue 24). The data it kept out is at most 64 KiB per entry and is
//! counted in the same 2 MiB. Hashing the data with the map's SipHash and
//! comparing it on a hit costs about 10 k instructions.

use std::collections::HashMap;
use std::sync::Mutex;

/// What the memo may hold, in bytes of keys and results.
pub const DEFAULT_BYTES: usize = 2 * 1024 * 1024;
/// Data longer than this is neither kept nor memoised.
pub const MAX_DATA_BYTES: usize = 64 * 1024;
/// What an entry costs besides its strings: the map's slot and the
/// strings' headers.
const ENTRY_OVERHEAD: usize = 128;

/// What the kubelet configuration phase depends on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    pub library: u32,
    pub encoding: String,
    /// The file's data, as sent (at most [`MAX_DATA_BYTES`]).
    pub data: String,
    /// The phase's `kubeletConfig` actions, in order (`field=value` lines).
    pub sets: String,
}

impl Key {
    /// The key of `data` (`None`: too long to be memoised).
    pub fn of(library: u32, encoding: &str, data: &str, sets: String) -> Option<Key> {
        (data.len() <= MAX_DATA_BYTES).then(|| Key {
            library,
            encoding: encoding.to_string(),
            data: data.to_string(),
            sets,
        })
    }

    fn bytes(&self) -> usize {
        self.encoding.len() + self.data.len() + self.sets.len() + ENTRY_OVERHEAD
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

    /// Issue 27, item 2: large inputs are neither kept nor remembered; the
    /// small ones it keeps count against its bytes.
    #[test]
    fn keeps_no_large_input_and_counts_what_it_keeps() {
        let big = "x".repeat(MAX_DATA_BYTES + 1);
        assert_eq!(Key::of(36, "b64", &big, String::new()), None);
        let memo = KubeletMemo::default();
        let data = "y".repeat(MAX_DATA_BYTES);
        let k = key(&data);
        assert_eq!(
            k.bytes(),
            3 + MAX_DATA_BYTES + ENTRY_OVERHEAD,
            "the data kept is counted"
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
