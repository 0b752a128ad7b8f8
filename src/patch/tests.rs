//! The diff's contract: minimal operations that reproduce the target.

use super::*;
use serde_json::json;

/// The alignment of the full LCS table over exact equality classes, the
/// algorithm before any bound: the oracle of the alignment's tests.
pub(super) fn table_alignment(a: &[Value], b: &[Value], prefix: usize) -> Vec<Step> {
    let (ai, bi) = classes::equality_classes(a, b);
    let widen = |k: &[u32]| k.iter().map(|&c| u64::from(c)).collect::<Vec<u64>>();
    lcs::table_steps(&widen(&ai), &widen(&bi), prefix)
}

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
            assert_eq!(align(a, b), Some(table_alignment(a, b, 0)), "{a:?} {b:?}");
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

fn flags(count: usize) -> Vec<Value> {
    (0..count).map(|i| json!(format!("--flag-{i}=x"))).collect()
}

/// The attack of the issue: a flag the webhook moves to the end, followed by
/// 50,000 others. The table would have 2.5·10^9 cells; the bounded search
/// finds the same two operations.
#[test]
fn a_flag_moved_past_fifty_thousand_is_two_operations() {
    let mut a = vec![json!("/bin/kcm"), json!("--allocate-node-cidrs=true")];
    a.extend(flags(50_000));
    let mut b = a.clone();
    let moved = b.remove(1);
    b.push(moved);
    assert_eq!(
        ops(&json!({"c": a}), &json!({"c": b})),
        json!([
            {"op": "remove", "path": "/c/1"},
            {"op": "add", "path": "/c/50001", "value": "--allocate-node-cidrs=true"}
        ])
    );
}

/// Long arrays that differ by more than the bounded search looks for are
/// replaced whole, in one operation: shuffled, reversed, or reversed but for
/// common ends.
#[test]
fn fifty_thousand_flags_reversed_or_shuffled_are_replaced_whole() {
    let a = flags(50_000);
    let mut shuffled = a.clone();
    let mut seed = 11u64;
    for i in (1..shuffled.len()).rev() {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        shuffled.swap(i, (seed >> 33) as usize % (i + 1));
    }
    let mut reversed = a.clone();
    reversed.reverse();
    let mut ends = a.clone();
    ends[100..49_900].reverse();
    for b in [shuffled, reversed, ends] {
        assert_eq!(
            ops(&json!({"c": a}), &json!({"c": b})),
            json!([{"op": "replace", "path": "/c", "value": b}])
        );
    }
}

/// The bounds are on the middle: a long array whose middle is short is
/// aligned by the table whatever the difference, one whose middle is long
/// by the bounded search when the difference is small.
#[test]
fn the_table_aligns_a_short_middle_of_a_long_array() {
    let a = flags(10_000);
    let mut b = a.clone();
    b[5_000..5_200].reverse();
    // The table keeps one element of the reversed 200, deleting the 199
    // before it and inserting the 199 after it.
    let out = ops(&Value::Array(a.clone()), &Value::Array(b.clone()));
    assert_eq!(out.as_array().map(Vec::len), Some(398), "{out}");
    assert_eq!(align(&a, &b), Some(table_alignment(&a, &b, 0)));
    // 32 flags replaced across the array are 64 edits, the most the search
    // looks for; one more removed is past it.
    let mut c = a.clone();
    for k in 0..32 {
        c[100 + k * 300] = json!(format!("--new-{k}"));
    }
    assert!(align(&a, &c).is_some_and(|steps| steps == table_alignment(&a, &c, 0)));
    c.remove(9_000);
    assert_eq!(align(&a, &c), None);
}

/// Hashes that collide pair unequal elements in the hashed alignment; the
/// alignment is redone on exact classes, past the table as under it.
#[test]
fn colliding_hashes_still_give_the_exact_alignment() {
    for count in [40, 200, 400] {
        let a: Vec<Value> = (0..count).map(|i| json!(format!("--f{i}"))).collect();
        let mut b = a.clone();
        let moved = b.remove(0);
        b.push(moved);
        b.swap(10, 20);
        classes::with_colliding_hashes(|| {
            assert_eq!(align(&a, &b), Some(table_alignment(&a, &b, 0)), "{count}");
            ops(&Value::Array(a), &Value::Array(b));
        });
    }
}
