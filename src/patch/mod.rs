//! Minimal, deterministic RFC 6902 diffs between two JSON values.
//!
//! `json_patch::diff` compares arrays index by index, so inserting or removing
//! an element anywhere but at the end rewrites every later element. Control-plane
//! objects are mostly arrays (flags, env, volumes, containers) where the webhook
//! removes an item in the middle or appends one, so scion diffs arrays with a
//! longest-common-subsequence alignment instead:
//!
//! * elements equal on both sides are anchors and produce no operation;
//! * between two anchors, the removed and added elements are paired up by
//!   position: a pair recurses (a changed flag string becomes one `replace`, a
//!   changed container a few field-level operations), the surplus on the left
//!   becomes `remove`s and the surplus on the right `add`s at their index.
//!
//! Objects recurse key by key in the map's (sorted) key order, scalars that
//! differ become `replace`, and a type change replaces the whole value. The
//! output depends only on the two inputs, so identical input gives identical
//! bytes. Paths are always explicit indices (never `/-`).

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, Patch, PatchOperation, RemoveOperation, ReplaceOperation};
use serde_json::{Map, Value};

use classes::equality_classes;

mod classes;

/// The JSONPatch that turns `before` into `after`. Applying it to `before` with
/// any RFC 6902 implementation yields a value equal to `after`.
pub fn diff(before: &Value, after: &Value) -> Patch {
    let mut ops = Vec::new();
    let mut path = Path(String::new());
    diff_value(&mut path, before, after, &mut ops);
    Patch(ops)
}

/// The JSON pointer of the value being compared, as an escaped string. Kept as
/// a plain string (truncated on the way back up) so that walking the document
/// allocates nothing; a `PointerBuf` is built only for an emitted operation.
struct Path(String);

impl Path {
    /// Append a key (escaped per RFC 6901) and return the length to truncate back to.
    fn push_key(&mut self, key: &str) -> usize {
        let len = self.0.len();
        self.0.push('/');
        for c in key.chars() {
            match c {
                '~' => self.0.push_str("~0"),
                '/' => self.0.push_str("~1"),
                c => self.0.push(c),
            }
        }
        len
    }

    fn push_index(&mut self, index: usize) -> usize {
        let len = self.0.len();
        self.0.push('/');
        self.0.push_str(&index.to_string());
        len
    }

    fn truncate(&mut self, len: usize) {
        self.0.truncate(len);
    }

    fn pointer(&self) -> PointerBuf {
        // The string is built from escaped tokens, so it is always a valid pointer.
        PointerBuf::parse(self.0.clone()).unwrap_or_default()
    }
}

fn diff_value(path: &mut Path, a: &Value, b: &Value, ops: &mut Vec<PatchOperation>) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => diff_object(path, a, b, ops),
        (Value::Array(a), Value::Array(b)) => diff_array(path, a, b, ops),
        _ if a == b => {}
        _ => ops.push(PatchOperation::Replace(ReplaceOperation {
            path: path.pointer(),
            value: b.clone(),
        })),
    }
}

fn diff_object(
    path: &mut Path,
    a: &Map<String, Value>,
    b: &Map<String, Value>,
    ops: &mut Vec<PatchOperation>,
) {
    for (key, av) in a {
        let len = path.push_key(key);
        match b.get(key) {
            Some(bv) => diff_value(path, av, bv, ops),
            None => ops.push(PatchOperation::Remove(RemoveOperation {
                path: path.pointer(),
            })),
        }
        path.truncate(len);
    }
    for (key, bv) in b {
        if !a.contains_key(key) {
            let len = path.push_key(key);
            ops.push(PatchOperation::Add(AddOperation {
                path: path.pointer(),
                value: bv.clone(),
            }));
            path.truncate(len);
        }
    }
}

/// One step of the alignment of two arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Equal element on both sides.
    Keep,
    /// Element only on the left.
    Delete(usize),
    /// Element only on the right.
    Insert(usize),
}

fn diff_array(path: &mut Path, a: &[Value], b: &[Value], ops: &mut Vec<PatchOperation>) {
    let steps = align(a, b);
    // `index` is the position in the array as already patched by the emitted ops.
    let mut index = 0usize;
    let mut i = 0;
    while i < steps.len() {
        if steps[i] == Step::Keep {
            index += 1;
            i += 1;
            continue;
        }
        // A gap between anchors: all deletes and inserts up to the next Keep.
        let start = i;
        while i < steps.len() && steps[i] != Step::Keep {
            i += 1;
        }
        let deleted: Vec<usize> = steps[start..i]
            .iter()
            .filter_map(|s| match s {
                Step::Delete(x) => Some(*x),
                _ => None,
            })
            .collect();
        let inserted: Vec<usize> = steps[start..i]
            .iter()
            .filter_map(|s| match s {
                Step::Insert(y) => Some(*y),
                _ => None,
            })
            .collect();
        let paired = deleted.len().min(inserted.len());
        for k in 0..paired {
            let len = path.push_index(index);
            diff_value(path, &a[deleted[k]], &b[inserted[k]], ops);
            path.truncate(len);
            index += 1;
        }
        for _ in paired..deleted.len() {
            let len = path.push_index(index);
            ops.push(PatchOperation::Remove(RemoveOperation {
                path: path.pointer(),
            }));
            path.truncate(len);
        }
        for &y in &inserted[paired..] {
            let len = path.push_index(index);
            ops.push(PatchOperation::Add(AddOperation {
                path: path.pointer(),
                value: b[y].clone(),
            }));
            path.truncate(len);
            index += 1;
        }
    }
}

/// Align two arrays along a longest common subsequence of equal elements. The
/// common prefix and suffix are matched directly; the middle uses the classic
/// dynamic programme (the arrays of a pod spec are short). Ties prefer deleting
/// before inserting, which keeps the output deterministic.
fn align(a: &[Value], b: &[Value]) -> Vec<Step> {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (am, bm) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let (n, m) = (am.len(), bm.len());

    let mut steps = vec![Step::Keep; prefix];
    if n == 0 || m == 0 {
        steps.extend((0..n).map(|x| Step::Delete(prefix + x)));
        steps.extend((0..m).map(|y| Step::Insert(prefix + y)));
    } else if n == 1 || m == 1 {
        // One element on a side (a container changed in place, a flag
        // replaced): the common subsequence is at most that element, matched
        // at its first occurrence on the other side, as the table below finds.
        // Within a gap the order of deletes and inserts does not matter.
        let (one, many) = if n == 1 { (&am[0], bm) } else { (&bm[0], am) };
        let other = |k: usize| {
            if n == 1 {
                Step::Insert(prefix + k)
            } else {
                Step::Delete(prefix + k)
            }
        };
        match many.iter().position(|v| v == one) {
            Some(at) => {
                steps.extend((0..at).map(other));
                steps.push(Step::Keep);
                steps.extend((at + 1..many.len()).map(other));
            }
            None => {
                steps.extend((0..n).map(|x| Step::Delete(prefix + x)));
                steps.extend((0..m).map(|y| Step::Insert(prefix + y)));
            }
        }
    } else {
        steps.extend(align_by_table(am, bm, prefix));
    }
    steps.extend(std::iter::repeat_n(Step::Keep, suffix));
    steps
}

/// The LCS alignment of two non-empty arrays by the dynamic programme; indices
/// are offset by `prefix`.
fn align_by_table(am: &[Value], bm: &[Value], prefix: usize) -> Vec<Step> {
    let (n, m) = (am.len(), bm.len());
    let mut steps = Vec::with_capacity(n + m);
    // The table compares every element of one side with every element of
    // the other: compare small integers standing for equal values instead
    // of the values themselves.
    let (ai, bi) = equality_classes(am, bm);
    // lcs[x][y] = LCS length of am[x..] and bm[y..].
    let width = m + 1;
    let mut lcs = vec![0u32; (n + 1) * width];
    for x in (0..n).rev() {
        for y in (0..m).rev() {
            lcs[x * width + y] = if ai[x] == bi[y] {
                lcs[(x + 1) * width + y + 1] + 1
            } else {
                lcs[(x + 1) * width + y].max(lcs[x * width + y + 1])
            };
        }
    }
    let (mut x, mut y) = (0, 0);
    while x < n && y < m {
        if ai[x] == bi[y] {
            steps.push(Step::Keep);
            x += 1;
            y += 1;
        } else if lcs[(x + 1) * width + y] >= lcs[x * width + y + 1] {
            steps.push(Step::Delete(prefix + x));
            x += 1;
        } else {
            steps.push(Step::Insert(prefix + y));
            y += 1;
        }
    }
    steps.extend((x..n).map(|x| Step::Delete(prefix + x)));
    steps.extend((y..m).map(|y| Step::Insert(prefix + y)));
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ops(before: &Value, after: &Value) -> Value {
        let patch = diff(before, after);
        let mut applied = before.clone();
        json_patch::patch(&mut applied, &patch.0).unwrap();
        assert_eq!(
            &applied, after,
            "patch {patch:?} does not reproduce the target"
        );
        serde_json::to_value(&patch).unwrap()
    }

    #[test]
    fn removal_in_the_middle_is_one_remove() {
        let a = json!({"c": ["/bin/x", "--a=1", "--cloud-config=x", "--b=2", "--c=3"]});
        let b = json!({"c": ["/bin/x", "--a=1", "--b=2", "--c=3"]});
        assert_eq!(ops(&a, &b), json!([{"op": "remove", "path": "/c/2"}]));
    }

    #[test]
    fn append_is_one_add_at_its_index() {
        let a = json!({"c": ["--a", "--b"]});
        let b = json!({"c": ["--a", "--b", "--cloud-provider=external"]});
        assert_eq!(
            ops(&a, &b),
            json!([{"op": "add", "path": "/c/2", "value": "--cloud-provider=external"}])
        );
    }

    #[test]
    fn prepend_does_not_cascade() {
        let a = json!([{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]);
        let b = json!([{"name": "new"}, {"name": "a", "image": "x"}, {"name": "b", "image": "y"}]);
        assert_eq!(
            ops(&a, &b),
            json!([{"op": "add", "path": "/0", "value": {"name": "new"}}])
        );
    }

    #[test]
    fn changed_element_in_place_recurses() {
        let a = json!(["--x", "--feature-gates=A=true", "--y"]);
        let b = json!(["--x", "--feature-gates=A=true,B=true", "--y"]);
        assert_eq!(
            ops(&a, &b),
            json!([{"op": "replace", "path": "/1", "value": "--feature-gates=A=true,B=true"}])
        );
        let a = json!([{"name": "c", "env": [{"name": "A"}, {"name": "B"}]}]);
        let b = json!([{"name": "c", "env": [{"name": "A"}]}]);
        assert_eq!(ops(&a, &b), json!([{"op": "remove", "path": "/0/env/1"}]));
    }

    #[test]
    fn removal_and_append_together_keep_indices_right() {
        let a = json!(["0", "--cloud-provider=aws", "1", "--cloud-config=x", "2"]);
        let b = json!([
            "0",
            "1",
            "2",
            "--cloud-provider=external",
            "--allocate-node-cidrs=true"
        ]);
        let out = ops(&a, &b);
        assert_eq!(out.as_array().unwrap().len(), 4, "{out}");
    }

    #[test]
    fn missing_map_is_added_whole_and_keys_are_escaped() {
        let a = json!({"metadata": {}});
        let b = json!({"metadata": {"annotations": {"checksum/secret-x": "abc"}}});
        assert_eq!(
            ops(&a, &b),
            json!([{"op": "add", "path": "/metadata/annotations", "value": {"checksum/secret-x": "abc"}}])
        );
        let a = json!({"l": {"example.com/a~b": "1"}});
        let b = json!({"l": {}});
        assert_eq!(
            ops(&a, &b),
            json!([{"op": "remove", "path": "/l/example.com~1a~0b"}])
        );
    }

    #[test]
    fn equal_values_give_an_empty_patch_and_type_changes_replace() {
        let a = json!({"a": [1, {"b": null}], "c": "x"});
        assert_eq!(ops(&a, &a.clone()), json!([]));
        assert_eq!(
            ops(&json!({"a": [1]}), &json!({"a": {"x": 1}})),
            json!([{"op": "replace", "path": "/a", "value": {"x": 1}}])
        );
    }

    #[test]
    fn a_side_of_one_element_aligns_as_the_table_does() {
        let pool = [json!("a"), json!("b"), json!({"name": "c"}), json!(1)];
        let mut seed = 7u64;
        for _ in 0..3000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let pick = |k: u64| pool[(k % 4) as usize].clone();
            let one = vec![pick(seed >> 7)];
            let many: Vec<Value> = (0..(seed >> 20) % 6 + 1)
                .map(|i| pick(seed >> (24 + 3 * i)))
                .collect();
            for (a, b) in [(&one, &many), (&many, &one)] {
                // Only arrays that share no prefix or suffix reach the middle.
                if a[0] == b[0] || a[a.len() - 1] == b[b.len() - 1] {
                    continue;
                }
                assert_eq!(align(a, b), align_by_table(a, b, 0), "{a:?} {b:?}");
            }
        }
    }

    /// A small deterministic generator of arrays, to check the round-trip
    /// property on many shapes without an extra dependency.
    #[test]
    fn applying_the_patch_always_gives_the_target() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..2000 {
            let gen_array = |next: &mut dyn FnMut() -> u64| -> Value {
                let len = (next() % 7) as usize;
                Value::Array(
                    (0..len)
                        .map(|_| match next() % 4 {
                            0 => json!(next() % 4),
                            1 => json!({"name": format!("n{}", next() % 3), "v": next() % 2}),
                            2 => json!([next() % 2, next() % 2]),
                            _ => json!(format!("--f{}", next() % 5)),
                        })
                        .collect(),
                )
            };
            let a = json!({"x": gen_array(&mut next), "y": {"z": gen_array(&mut next)}});
            let b = json!({"x": gen_array(&mut next), "y": {"z": gen_array(&mut next)}});
            ops(&a, &b);
            assert_eq!(diff(&a, &b), diff(&a, &b));
        }
    }
}
