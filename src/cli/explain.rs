//! `scion mutate --explain`: which rule caused each operation of the patch.
//!
//! The engine applies the matching rules in profile order, so the object
//! passes through stages: the object as sent, then after the first rule,
//! after the second, and so on (stage 0 is the engine with no rule at all:
//! an OperatingSystemConfig's fixed handling). Each rule's own change is the
//! diff between its stage and the one before. An operation of the final
//! patch is the work of the rule whose own change holds the same operation:
//! the same kind on the same path with the same value (for a removal, the
//! same removed value), or, when later rules shifted a list's indices, the
//! same kind and value in the same list; the latest such rule, since what a
//! later rule writes is what stays. Earlier rules that wrote the same path (a
//! file or a unit several rules edit in turn) are named with it. An
//! operation no rule's change holds on its own is reported as such.

use serde_json::Value;

/// What an operation does, in the terms it is matched by.
#[derive(Debug, Clone, PartialEq)]
struct Effect {
    op: String,
    path: String,
    /// The value added or replaced with, or the value removed.
    value: Value,
}

impl Effect {
    /// The path with a trailing list index dropped: `…/command/26` → `…/command`.
    fn list(&self) -> &str {
        match self.path.rsplit_once('/') {
            Some((parent, last)) if last.bytes().all(|b| b.is_ascii_digit()) || last == "-" => {
                parent
            }
            _ => &self.path,
        }
    }
}

/// The effects of `patch` applied to `before`, one per operation, in order.
fn effects(before: &Value, patch: &json_patch::Patch) -> Vec<Effect> {
    let mut doc = before.clone();
    let mut out = Vec::new();
    for op in &patch.0 {
        let json = serde_json::to_value(op).unwrap_or(Value::Null);
        let kind = json["op"].as_str().unwrap_or_default().to_owned();
        let path = json["path"].as_str().unwrap_or_default().to_owned();
        let value = match kind.as_str() {
            "remove" => doc.pointer(&path).cloned().unwrap_or(Value::Null),
            _ => json.get("value").cloned().unwrap_or(Value::Null),
        };
        // Keep the document in step for the removals that follow.
        let _ = json_patch::patch(&mut doc, std::slice::from_ref(op));
        out.push(Effect {
            op: kind,
            path,
            value,
        });
    }
    out
}

/// One operation of the final patch and the stage that caused it
/// (`Some(0)`: the engine without rules; `Some(k)`: the k-th matching rule;
/// `None`: no single rule).
#[derive(Debug, Clone, PartialEq)]
pub struct Attributed {
    pub op: Value,
    pub stage: Option<usize>,
    /// Earlier stages that changed the same path (a file or flag list two
    /// rules wrote in turn), in order.
    pub earlier: Vec<usize>,
}

/// Attribute each operation of `diff(original, stages.last())` to a stage.
/// `stages[0]` is the object after the engine with no rule, `stages[k]` after
/// the first `k` matching rules.
pub fn attribute(original: &Value, stages: &[Value]) -> Vec<Attributed> {
    let Some(last) = stages.last() else {
        return Vec::new();
    };
    let final_patch = crate::patch::diff(original, last);
    let finals = effects(original, &final_patch);
    let mut own: Vec<Vec<Effect>> = Vec::new();
    let mut before = original;
    for stage in stages {
        own.push(effects(before, &crate::patch::diff(before, stage)));
        before = stage;
    }
    final_patch
        .0
        .iter()
        .zip(finals)
        .map(|(op, effect)| {
            let exact = |e: &Effect| *e == effect;
            let shifted = |e: &Effect| {
                e.op == effect.op && e.value == effect.value && e.list() == effect.list()
            };
            // The last stage that did it: a later rule's change is what stays.
            let stage = (0..own.len())
                .rev()
                .find(|k| own[*k].iter().any(exact))
                .or_else(|| (0..own.len()).rev().find(|k| own[*k].iter().any(shifted)));
            let earlier = (0..stage.unwrap_or(0))
                .filter(|k| own[*k].iter().any(|e| e.path == effect.path))
                .collect();
            Attributed {
                op: serde_json::to_value(op).unwrap_or(Value::Null),
                stage,
                earlier,
            }
        })
        .collect()
}

/// An operation as one line: `add /spec/…/command/26 "--cloud-provider=external"`
/// (values over 120 characters cut).
pub fn op_line(op: &Value) -> String {
    let kind = op["op"].as_str().unwrap_or_default();
    let path = op["path"].as_str().unwrap_or_default();
    match op.get("value") {
        Some(value) => {
            let mut text = value.to_string();
            if text.len() > 120 {
                let mut end = 117;
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                text.truncate(end);
                text.push('…');
            }
            format!("{kind} {path} {text}")
        }
        None => format!("{kind} {path}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stages(list: &[Value]) -> Vec<Value> {
        list.to_vec()
    }

    #[test]
    fn each_operation_is_the_work_of_the_rule_that_made_it() {
        let original = json!({"command": ["a", "--x", "b"], "env": []});
        // rule 1 appends a flag, rule 2 removes "--x" (shifting rule 1's
        // index), rule 3 sets an env var.
        let s = stages(&[
            original.clone(),
            json!({"command": ["a", "--x", "b", "--cloud"], "env": []}),
            json!({"command": ["a", "b", "--cloud"], "env": []}),
            json!({"command": ["a", "b", "--cloud"], "env": [{"name": "E"}]}),
        ]);
        let got = attribute(&original, &s);
        let lines: Vec<(String, Option<usize>)> =
            got.iter().map(|a| (op_line(&a.op), a.stage)).collect();
        assert!(
            lines.contains(&("remove /command/1".into(), Some(2))),
            "{lines:?}"
        );
        assert!(
            lines
                .iter()
                .any(|(l, s)| l.contains("\"--cloud\"") && *s == Some(1)),
            "{lines:?}"
        );
        assert!(
            lines
                .iter()
                .any(|(l, s)| l.starts_with("add /env/0") && *s == Some(3)),
            "{lines:?}"
        );
        assert_eq!(got.len(), 3);
    }

    #[test]
    fn a_value_replaced_twice_belongs_to_the_last_rule_and_stage_zero_counts() {
        let original = json!({"image": "a", "flags": "x"});
        let s = stages(&[
            original.clone(),
            json!({"image": "b", "flags": "x,y"}),
            json!({"image": "c", "flags": "x,y,z"}),
        ]);
        let got = attribute(&original, &s);
        let image = got.iter().find(|a| a.op["path"] == "/image").unwrap();
        assert_eq!(image.stage, Some(2));
        assert_eq!(image.earlier, [1], "rule 1 wrote it before");
        let flags = got.iter().find(|a| a.op["path"] == "/flags").unwrap();
        assert_eq!(flags.stage, Some(2), "the last rule wrote the final value");
        // Stage 0 (no rule) changing something is attributed to it.
        let s = stages(&[json!({"image": "a", "flags": "x", "fixed": true})]);
        let got = attribute(&original, &s);
        assert_eq!(got[0].stage, Some(0));
        assert_eq!(op_line(&got[0].op), "add /fixed true");
    }
}
