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
//! The alignment is the classic LCS table's (`lcs.rs`) whenever the differing
//! middle of the two arrays (what is left once the common prefix and suffix
//! are matched) has at most 255 elements a side, as the arrays of a pod spec
//! do. A longer middle gets the same alignment from a search bounded to 64
//! edits (`myers.rs`); past that, one `replace` of the whole array. Aligning
//! an array thus takes time and memory linear in its size for any input (a
//! `command` of 50,000 flags in any order: under 2 ms and 3 MiB, docs/diff.md),
//! where the table alone grew with the product of the two lengths.
//!
//! Objects recurse key by key in the map's (sorted) key order, scalars that
//! differ become `replace`, and a type change replaces the whole value. The
//! output depends only on the two inputs, so identical input gives identical
//! bytes. Paths are always explicit indices (never `/-`).

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, Patch, PatchOperation, RemoveOperation, ReplaceOperation};
use serde_json::{Map, Value};

use lcs::{LIMITS, Limits, align_by_table, align_long};

mod classes;
mod lcs;
mod myers;

/// The JSONPatch that turns `before` into `after`. Applying it to `before` with
/// any RFC 6902 implementation yields a value equal to `after`.
pub fn diff(before: &Value, after: &Value) -> Patch {
    let mut ops = Vec::new();
    diff_at(&[], Some(before), after, &mut ops);
    Patch(ops)
}

/// Append to `ops` the operations that turn `before` into `after` where both
/// sit at `at` (unescaped keys from the root): those `diff` emits for that
/// location. `before` is `None` when the key is absent: one `add`.
pub fn diff_at(at: &[&str], before: Option<&Value>, after: &Value, ops: &mut Vec<PatchOperation>) {
    let mut path = Path(String::new());
    for key in at {
        path.push_key(key);
    }
    match before {
        Some(before) => diff_value(&mut path, before, after, ops),
        None => ops.push(PatchOperation::Add(AddOperation {
            path: path.pointer(),
            value: after.clone(),
        })),
    }
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
    let Some(steps) = align(a, b) else {
        // Long arrays that differ much: one `replace` of the whole array.
        ops.push(PatchOperation::Replace(ReplaceOperation {
            path: path.pointer(),
            value: Value::Array(b.to_vec()),
        }));
        return;
    };
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
/// dynamic programme when its sides are short, as the arrays of a pod spec
/// are, and otherwise a search for the same alignment bounded by a number of
/// edits (`lcs.rs`). Ties prefer deleting before inserting, which keeps the
/// output deterministic. `None` when a side of the middle is long and the
/// arrays differ by more edits than that bound: then the caller replaces the
/// whole array, one operation no larger than the array.
fn align(a: &[Value], b: &[Value]) -> Option<Vec<Step>> {
    align_within(a, b, LIMITS)
}

/// The lengths of the common prefix and of the common suffix (after it).
fn common_ends(a: &[Value], b: &[Value]) -> (usize, usize) {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    (prefix, suffix)
}

fn align_within(a: &[Value], b: &[Value], limits: Limits) -> Option<Vec<Step>> {
    let (prefix, suffix) = common_ends(a, b);
    let (am, bm) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let (n, m) = (am.len(), bm.len());

    let mut steps = vec![Step::Keep; prefix];
    if n.max(m) > limits.short {
        steps.extend(align_long(am, bm, prefix, limits.max_edits)?);
    } else if n == 0 || m == 0 {
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
    Some(steps)
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
