//! The diff's contract: minimal operations that reproduce the target.

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
