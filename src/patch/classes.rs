//! Hashes and equality classes of array elements, so that the LCS table of a
//! diff compares integers instead of JSON values.

use std::hash::Hasher;

use serde_json::Value;

/// A number per element such that two elements (of either slice) have the
/// same number exactly when they are equal.
///
/// Elements are hashed, sorted by hash, and within a run of equal hashes
/// compared with each other: usually one comparison per element and three
/// allocations in all, whatever the number of distinct values.
pub(super) fn equality_classes(a: &[Value], b: &[Value]) -> (Vec<u32>, Vec<u32>) {
    let all: Vec<&Value> = a.iter().chain(b).collect();
    let mut keyed: Vec<(u64, u32)> = all.iter().map(|v| hash(v)).zip(0u32..).collect();
    keyed.sort_unstable();
    let mut class = vec![0u32; all.len()];
    let mut next = 0u32;
    for run in keyed.chunk_by(|x, y| x.0 == y.0) {
        for (k, &(_, i)) in run.iter().enumerate() {
            let same = run[..k]
                .iter()
                .find(|&&(_, j)| all[j as usize] == all[i as usize]);
            class[i as usize] = match same {
                Some(&(_, j)) => class[j as usize],
                None => {
                    next += 1;
                    next
                }
            };
        }
    }
    let bi = class.split_off(a.len());
    (class, bi)
}

/// A 64-bit hash of each element: equal elements have equal hashes.
pub(super) fn hashes(items: &[Value]) -> Vec<u64> {
    items.iter().map(hash).collect()
}

fn hash(v: &Value) -> u64 {
    let mut hasher = Fx::default();
    hash_value(v, &mut hasher);
    hasher.finish()
}

/// Feeds a value to a hasher; equal values feed equal input.
fn hash_value(v: &Value, h: &mut Fx) {
    match v {
        Value::Null => h.write_u8(0),
        Value::Bool(b) => h.write_u8(1 + u8::from(*b)),
        Value::Number(n) => {
            h.write_u8(3);
            h.write_u64(n.as_f64().unwrap_or_default().to_bits());
        }
        Value::String(s) => {
            h.write_u8(4);
            h.write(s.as_bytes());
        }
        Value::Array(items) => {
            h.write_u8(5);
            h.write_usize(items.len());
            items.iter().for_each(|i| hash_value(i, h));
        }
        Value::Object(map) => {
            h.write_u8(6);
            h.write_usize(map.len());
            for (k, v) in map {
                h.write(k.as_bytes());
                hash_value(v, h);
            }
        }
    }
}

/// A small multiply-rotate hasher over 8-byte words: the elements hashed are
/// short strings and a collision only costs one equality check.
#[derive(Default)]
struct Fx(u64);

impl Fx {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().unwrap_or_default()));
        }
        let mut last = [0u8; 8];
        let rest = chunks.remainder();
        last[..rest.len()].copy_from_slice(rest);
        self.add(u64::from_le_bytes(last) ^ ((bytes.len() as u64) << 56));
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_elements_and_only_those_share_a_class() {
        let a = [
            json!("--x"),
            json!(1),
            json!(1.0),
            json!({"a": [1]}),
            json!("--x"),
            json!(null),
        ];
        let b = [json!({"a": [1]}), json!("--y"), json!(1), json!(false)];
        let (ai, bi) = equality_classes(&a, &b);
        let values: Vec<&Value> = a.iter().chain(&b).collect();
        let ids: Vec<u32> = ai.into_iter().chain(bi).collect();
        for (i, x) in values.iter().enumerate() {
            for (j, y) in values.iter().enumerate() {
                assert_eq!(x == y, ids[i] == ids[j], "{x} vs {y}");
            }
        }
    }
}
