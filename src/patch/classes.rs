//! Hashes and equality classes of array elements, so that the alignment of a
//! diff compares integers instead of JSON values.

use std::cmp::Ordering;
use std::hash::{BuildHasher, Hasher};

use foldhash::fast::FixedState;

use serde_json::{Number, Value};

/// A number per element such that two elements (of either slice) have the
/// same number exactly when they are equal.
///
/// Elements are hashed and sorted by hash, and by value among equal hashes,
/// so that equal elements end up next to each other: O(N log N) comparisons
/// even when many distinct elements share a hash (the hash is not keyed, so
/// colliding flags can be crafted; comparing each with every earlier one of
/// its hash, as this did first, was quadratic in them).
pub(super) fn equality_classes(a: &[Value], b: &[Value]) -> (Vec<u32>, Vec<u32>) {
    let all: Vec<&Value> = a.iter().chain(b).collect();
    let mut keyed: Vec<(u64, u32)> = all.iter().map(|v| hash(v)).zip(0u32..).collect();
    let value = |i: u32| all[i as usize];
    keyed.sort_unstable_by(|x, y| x.0.cmp(&y.0).then_with(|| order(value(x.1), value(y.1))));
    let mut class = vec![0u32; all.len()];
    let mut next = 0u32;
    for (k, &(h, i)) in keyed.iter().enumerate() {
        let same = k > 0 && {
            let (ph, pi) = keyed[k - 1];
            ph == h && value(pi) == value(i)
        };
        if !same {
            next += 1;
        }
        class[i as usize] = next;
    }
    let bi = class.split_off(a.len());
    (class, bi)
}

/// A total order on JSON values in which two values are `Equal` exactly when
/// they are `==`: kinds first, then numbers by kind (integers, negative
/// integers, floats: `1` and `1.0` differ, `0.0` and `-0.0` do not, as for
/// `==`), strings by bytes, arrays and (sorted) maps element by element.
fn order(a: &Value, b: &Value) -> Ordering {
    fn kind(v: &Value) -> u8 {
        match v {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Number(_) => 2,
            Value::String(_) => 3,
            Value::Array(_) => 4,
            Value::Object(_) => 5,
        }
    }
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Number(x), Value::Number(y)) => order_numbers(x, y),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => x
            .iter()
            .zip(y)
            .map(|(x, y)| order(x, y))
            .find(|o| o.is_ne())
            .unwrap_or_else(|| x.len().cmp(&y.len())),
        (Value::Object(x), Value::Object(y)) => x
            .iter()
            .zip(y)
            .map(|((kx, vx), (ky, vy))| kx.cmp(ky).then_with(|| order(vx, vy)))
            .find(|o| o.is_ne())
            .unwrap_or_else(|| x.len().cmp(&y.len())),
        _ => kind(a).cmp(&kind(b)),
    }
}

/// serde_json keeps a number as a `u64`, a negative `i64` or a finite `f64`,
/// and numbers of different kinds are never equal.
fn order_numbers(x: &Number, y: &Number) -> Ordering {
    fn kind(n: &Number) -> u8 {
        if n.is_u64() {
            0
        } else if n.is_i64() {
            1
        } else {
            2
        }
    }
    kind(x).cmp(&kind(y)).then_with(|| match kind(x) {
        0 => x.as_u64().cmp(&y.as_u64()),
        1 => x.as_i64().cmp(&y.as_i64()),
        _ => (x.as_f64().partial_cmp(&y.as_f64())).unwrap_or(Ordering::Equal),
    })
}

/// A 64-bit hash of each element: equal elements have equal hashes.
pub(super) fn hashes(items: &[Value]) -> Vec<u64> {
    items.iter().map(hash).collect()
}

fn hash(v: &Value) -> u64 {
    #[cfg(test)]
    if COLLIDE.with(std::cell::Cell::get) {
        return 0;
    }
    let mut hasher = FixedState::with_seed(0).build_hasher();
    hash_value(v, &mut hasher);
    hasher.finish()
}

/// Feeds a value to a hasher; equal values feed equal input.
///
/// The hasher is foldhash's, unkeyed (its fixed seed): the hash only has to
/// give equal values equal numbers, and a collision costs one equality check
/// (`lcs::kept_equal` then redoes the alignment on exact classes). It reads
/// long strings in six independent lanes; the one-lane multiply-rotate hash
/// this had before was 9 % of a first-time OperatingSystemConfig review,
/// whose files (40 KB of base64 a side) are hashed for the alignment of
/// `spec.files` (`cargo bench --bench mutate -- osc_`, docs/performance.md).
fn hash_value(v: &Value, h: &mut impl Hasher) {
    match v {
        Value::Null => h.write_u8(0),
        Value::Bool(b) => h.write_u8(1 + u8::from(*b)),
        Value::Number(n) => {
            h.write_u8(3);
            // `0.0 == -0.0`: adding 0.0 turns -0.0 into 0.0, so they hash alike.
            h.write_u64((n.as_f64().unwrap_or_default() + 0.0).to_bits());
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

#[cfg(test)]
thread_local! {
    /// Every value hashes to 0 while set: the worst case of crafted
    /// collisions, which foldhash's fixed seed does not rule out.
    static COLLIDE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with every hash colliding (on this thread).
#[cfg(test)]
pub(super) fn with_colliding_hashes<T>(f: impl FnOnce() -> T) -> T {
    COLLIDE.with(|c| c.set(true));
    let out = f();
    COLLIDE.with(|c| c.set(false));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Values that are equal or nearly so, of every kind.
    fn values() -> Vec<Value> {
        vec![
            json!("--x"),
            json!(1),
            json!(1.0),
            json!({"a": [1]}),
            json!("--x"),
            json!(null),
            json!({"a": [1]}),
            json!("--y"),
            json!(1),
            json!(false),
            json!(0),
            json!(0.0),
            json!(-0.0),
            json!(-1),
            json!(-1.0),
            json!(1.5),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(i64::MAX),
            json!([1, 2]),
            json!([1]),
            json!([1, 3]),
            json!({"a": 1}),
            json!({"a": 1, "b": 2}),
            json!({"b": 1}),
            json!({"a": 1.0}),
            json!(""),
            json!([]),
            json!({}),
        ]
    }

    #[test]
    fn equal_elements_and_only_those_share_a_class() {
        let all = values();
        let (a, b) = all.split_at(6);
        let (ai, bi) = equality_classes(a, b);
        let ids: Vec<u32> = ai.into_iter().chain(bi).collect();
        for (i, x) in all.iter().enumerate() {
            for (j, y) in all.iter().enumerate() {
                assert_eq!(x == y, ids[i] == ids[j], "{x} vs {y}");
            }
        }
    }

    #[test]
    fn the_order_is_total_and_equal_exactly_when_values_are() {
        let all = values();
        for x in &all {
            for y in &all {
                assert_eq!(order(x, y).is_eq(), x == y, "{x} vs {y}");
                assert_eq!(order(x, y), order(y, x).reverse(), "{x} vs {y}");
                if x == y {
                    assert_eq!(hash(x), hash(y), "{x} vs {y}");
                }
                for z in &all {
                    if order(x, y).is_le() && order(y, z).is_le() {
                        assert!(order(x, z).is_le(), "{x} <= {y} <= {z}");
                    }
                }
            }
        }
    }

    #[test]
    fn colliding_hashes_still_give_a_class_each() {
        let a: Vec<Value> = (0..300).map(|i| json!(format!("--flag-{i}"))).collect();
        let b: Vec<Value> = a.iter().rev().cloned().collect();
        let (ai, bi) = with_colliding_hashes(|| {
            assert!(a.iter().all(|v| hash(v) == 0));
            equality_classes(&a, &b)
        });
        let mut distinct = ai.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), a.len());
        assert!(ai.iter().rev().eq(bi.iter()));
    }
}
