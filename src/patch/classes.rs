//! Equality classes of array elements, so that the LCS table of a diff
//! compares integers instead of JSON values.

use std::collections::HashMap;
use std::hash::Hasher;

use serde_json::Value;

/// A number per element such that two elements (of either slice) have the
/// same number exactly when they are equal.
pub(super) fn equality_classes<'v>(a: &'v [Value], b: &'v [Value]) -> (Vec<u32>, Vec<u32>) {
    let mut classes: HashMap<u64, Vec<(u32, &'v Value)>> = HashMap::new();
    let mut next = 0u32;
    let mut class_of = |v: &'v Value| -> u32 {
        let mut hasher = Fx::default();
        hash_value(v, &mut hasher);
        let bucket = classes.entry(hasher.finish()).or_default();
        if let Some((id, _)) = bucket.iter().find(|(_, rep)| *rep == v) {
            return *id;
        }
        next += 1;
        bucket.push((next, v));
        next
    };
    let ai = a.iter().map(&mut class_of).collect();
    let bi = b.iter().map(&mut class_of).collect();
    (ai, bi)
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
