//! Gardener's webhook helpers (`extensions/pkg/webhook/utils.go`) over JSON
//! arrays, with the exact semantics of the Go originals. Non-string elements of
//! a flag list are never matched and never moved.
//!
//! Each helper takes the list as a [`Cow`] and writes to it (`to_mut`) only
//! when it changes something, so a list a rule leaves as it is never gets
//! copied (see [`super::draft`]).

use std::borrow::Cow;

use serde_json::Value;

/// A list a helper may change; borrowed until the first write.
pub type List<'l> = Cow<'l, [Value]>;

/// `s.starts_with(prefix)`, rejecting most other flags on the prefix's last
/// byte (`=` sits at a different place in each) before comparing the rest.
fn starts_with(s: &str, prefix: &str) -> bool {
    match prefix.as_bytes().last() {
        Some(last) => s.as_bytes().get(prefix.len() - 1) == Some(last) && s.starts_with(prefix),
        None => true,
    }
}

fn has_prefix(v: &Value, prefix: &str) -> bool {
    v.as_str().is_some_and(|s| starts_with(s, prefix))
}

/// The rest of `s` after `prefix`.
fn after_prefix<'s>(s: &'s str, prefix: &str) -> Option<&'s str> {
    starts_with(s, prefix).then(|| &s[prefix.len()..])
}

/// `s` is `prefix` followed by `value`.
fn is_flag(s: &str, prefix: &str, value: &str) -> bool {
    s.len() == prefix.len() + value.len() && after_prefix(s, prefix) == Some(value)
}

/// `EnsureStringWithPrefix`: replace every element starting with `prefix` by
/// `prefix + value` in place; if there is none, append it.
pub fn ensure_flag(list: &mut List<'_>, prefix: &str, value: &str) {
    let mut found = false;
    for i in 0..list.len() {
        let Some(s) = list[i].as_str().filter(|s| starts_with(s, prefix)) else {
            continue;
        };
        found = true;
        if !is_flag(s, prefix, value) {
            list.to_mut()[i] = Value::String(format!("{prefix}{value}"));
        }
    }
    if !found {
        list.to_mut()
            .push(Value::String(format!("{prefix}{value}")));
    }
}

/// `EnsureNoStringWithPrefix`: remove every element starting with `prefix`.
pub fn remove_flag(list: &mut List<'_>, prefix: &str) {
    if list.iter().any(|v| has_prefix(v, prefix)) {
        list.to_mut().retain(|v| !has_prefix(v, prefix));
    }
}

/// `EnsureNoStringWithPrefix(remove)` then `EnsureStringWithPrefix(flag, value)`,
/// except that a list whose only element starting with `remove` already equals
/// `flag+value` is left alone (a fixed point instead of moving it to the end).
pub fn replace_flag(list: &mut List<'_>, remove: &str, flag: &str, value: &str) {
    let mut matches = list.iter().filter(|v| has_prefix(v, remove));
    if let (Some(only), None) = (matches.next(), matches.next())
        && only.as_str().is_some_and(|s| is_flag(s, flag, value))
    {
        return;
    }
    remove_flag(list, remove);
    ensure_flag(list, flag, value);
}

/// `EnsureStringWithPrefixContains`: if no element starts with `prefix`, append
/// `prefix + item`; otherwise append `item` to the `sep`-list of every such
/// element that lacks it as an exact member.
pub fn ensure_list_item(list: &mut List<'_>, prefix: &str, item: &str, sep: &str) {
    let mut found = false;
    for i in 0..list.len() {
        let Some(s) = list[i].as_str() else { continue };
        let Some(rest) = after_prefix(s, prefix) else {
            continue;
        };
        found = true;
        if !rest.split(sep).any(|member| member == item) {
            // Go splits "" into [""] and joins [""] + item with sep: "--x=" gains ",item".
            let joined = format!("{s}{sep}{item}");
            list.to_mut()[i] = Value::String(joined);
        }
    }
    if !found {
        list.to_mut().push(Value::String(format!("{prefix}{item}")));
    }
}

/// `EnsureNoStringWithPrefixContains`: remove the first exact occurrence of
/// `item` from the `sep`-list of every element starting with `prefix`. The
/// element stays even when its list becomes empty.
pub fn remove_list_item(list: &mut List<'_>, prefix: &str, item: &str, sep: &str) {
    for i in 0..list.len() {
        let Some(s) = list[i].as_str() else { continue };
        let Some(rest) = after_prefix(s, prefix) else {
            continue;
        };
        let mut members: Vec<&str> = rest.split(sep).collect();
        if let Some(pos) = members.iter().position(|m| *m == item) {
            members.remove(pos);
            let joined = format!("{prefix}{}", members.join(sep));
            list.to_mut()[i] = Value::String(joined);
        }
    }
}

fn key_is(v: &Value, key: &str, name: &str) -> bool {
    v.get(key).and_then(Value::as_str) == Some(name)
}

/// `EnsureEnvVarWithName` and friends: replace the first item whose `key`
/// equals the new item's, whole and in place; otherwise append.
pub fn ensure_named(list: &mut List<'_>, key: &str, item: Value) {
    let first = match item.get(key).and_then(Value::as_str) {
        Some(name) => list.iter().position(|v| key_is(v, key, name)),
        None => None,
    };
    match first {
        Some(i) if list[i] == item => {}
        Some(i) => list.to_mut()[i] = item,
        None => list.to_mut().push(item),
    }
}

/// `EnsureNoEnvVarWithName` and friends: remove every item whose `key` is `name`.
pub fn remove_named(list: &mut List<'_>, key: &str, name: &str) {
    if list.iter().any(|v| key_is(v, key, name)) {
        list.to_mut().retain(|v| !key_is(v, key, name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn list(v: Value) -> List<'static> {
        Cow::Owned(v.as_array().unwrap().clone())
    }

    #[test]
    fn ensure_flag_replaces_every_match_in_place_or_appends() {
        let mut l = list(json!([
            "a",
            "--cloud-provider=aws",
            "b",
            "--cloud-provider=x"
        ]));
        ensure_flag(&mut l, "--cloud-provider=", "external");
        assert_eq!(
            l,
            list(json!([
                "a",
                "--cloud-provider=external",
                "b",
                "--cloud-provider=external"
            ]))
        );
        let mut l = list(json!(["a"]));
        ensure_flag(&mut l, "--cloud-provider=", "external");
        assert_eq!(l, list(json!(["a", "--cloud-provider=external"])));
    }

    #[test]
    fn remove_flag_matches_raw_prefix() {
        let mut l = list(json!([
            "--allocate-node-cidrs",
            "x",
            "--allocate-node-cidrs=true",
            "--allocate-node-cidrs-extra"
        ]));
        remove_flag(&mut l, "--allocate-node-cidrs");
        assert_eq!(l, list(json!(["x"])));
    }

    #[test]
    fn replace_flag_reappends_once_and_then_keeps_its_place() {
        let mut l = list(json!([
            "--allocate-node-cidrs",
            "a",
            "--allocate-node-cidrs=true",
            "b"
        ]));
        replace_flag(
            &mut l,
            "--allocate-node-cidrs",
            "--allocate-node-cidrs=",
            "false",
        );
        assert_eq!(l, list(json!(["a", "b", "--allocate-node-cidrs=false"])));
        l.to_mut().push(json!("--feature-gates=X=true"));
        let before = l.clone();
        replace_flag(
            &mut l,
            "--allocate-node-cidrs",
            "--allocate-node-cidrs=",
            "false",
        );
        assert_eq!(l, before, "already the only form: a fixed point");
        // Two forms, even if one is right: Gardener's remove-and-append.
        let mut l = list(json!([
            "--allocate-node-cidrs=false",
            "a",
            "--allocate-node-cidrs"
        ]));
        replace_flag(
            &mut l,
            "--allocate-node-cidrs",
            "--allocate-node-cidrs=",
            "false",
        );
        assert_eq!(l, list(json!(["a", "--allocate-node-cidrs=false"])));
        let mut l = list(json!(["--allocate-node-cidrs=true"]));
        replace_flag(
            &mut l,
            "--allocate-node-cidrs",
            "--allocate-node-cidrs=",
            "false",
        );
        assert_eq!(l, list(json!(["--allocate-node-cidrs=false"])));
    }

    #[test]
    fn list_items_follow_go_semantics() {
        let mut l = list(json!(["--feature-gates=A=true"]));
        ensure_list_item(&mut l, "--feature-gates=", "B=true", ",");
        assert_eq!(l, list(json!(["--feature-gates=A=true,B=true"])));
        ensure_list_item(&mut l, "--feature-gates=", "B=true", ",");
        assert_eq!(l, list(json!(["--feature-gates=A=true,B=true"])));
        // Conflicting entries are not deduplicated.
        let mut l = list(json!(["--feature-gates=X=false"]));
        ensure_list_item(&mut l, "--feature-gates=", "X=true", ",");
        assert_eq!(l, list(json!(["--feature-gates=X=false,X=true"])));
        let mut l = list(json!(["--x"]));
        ensure_list_item(&mut l, "--feature-gates=", "X=true", ",");
        assert_eq!(l, list(json!(["--x", "--feature-gates=X=true"])));

        let mut l = list(json!([
            "--enable-admission-plugins=P,PersistentVolumeLabel,P"
        ]));
        remove_list_item(&mut l, "--enable-admission-plugins=", "P", ",");
        assert_eq!(
            l,
            list(json!([
                "--enable-admission-plugins=PersistentVolumeLabel,P"
            ]))
        );
        let mut l = list(json!(["--x=A"]));
        remove_list_item(&mut l, "--x=", "A", ",");
        assert_eq!(
            l,
            list(json!(["--x="])),
            "the element stays with an empty list"
        );
    }

    #[test]
    fn named_items_replace_first_and_remove_all() {
        let mut l =
            list(json!([{"name": "A", "value": "1"}, {"name": "B"}, {"name": "A", "value": "2"}]));
        ensure_named(&mut l, "name", json!({"name": "A", "valueFrom": {}}));
        assert_eq!(
            l,
            list(
                json!([{"name": "A", "valueFrom": {}}, {"name": "B"}, {"name": "A", "value": "2"}])
            )
        );
        ensure_named(&mut l, "name", json!({"name": "C"}));
        assert_eq!(l.len(), 4);
        remove_named(&mut l, "name", "A");
        assert_eq!(l, list(json!([{"name": "B"}, {"name": "C"}])));
    }

    #[test]
    fn a_list_left_as_it_is_is_not_copied() {
        let items = [
            json!("--cloud-provider=external"),
            json!("--feature-gates=A=true"),
            json!({"name": "A"}),
        ];
        let mut l: List = Cow::Borrowed(&items);
        ensure_flag(&mut l, "--cloud-provider=", "external");
        remove_flag(&mut l, "--cloud-config=");
        replace_flag(&mut l, "--cloud-provider", "--cloud-provider=", "external");
        ensure_list_item(&mut l, "--feature-gates=", "A=true", ",");
        remove_list_item(&mut l, "--feature-gates=", "B=true", ",");
        ensure_named(&mut l, "name", json!({"name": "A"}));
        remove_named(&mut l, "name", "B");
        assert!(matches!(l, Cow::Borrowed(_)), "{l:?}");
        ensure_flag(&mut l, "--cloud-provider=", "aws");
        assert!(matches!(l, Cow::Owned(_)));
        assert_eq!(l[0], json!("--cloud-provider=aws"));
    }

    #[test]
    fn prefix_matching_is_starts_with() {
        let texts = [
            "",
            "-",
            "--a=",
            "--a=b",
            "--ab",
            "é--a=",
            "--a\u{e9}",
            "--a=é",
        ];
        for s in texts {
            for p in texts.iter().chain(&["--a", "é", "--a=bc"]) {
                assert_eq!(starts_with(s, p), s.starts_with(p), "{s:?} {p:?}");
                assert_eq!(after_prefix(s, p), s.strip_prefix(p), "{s:?} {p:?}");
            }
        }
    }
}
