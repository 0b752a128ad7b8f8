//! Status bodies (Gardener's `extensions/pkg/controller/status.go`): merge
//! patches on the `status` subresource. The texts name the kind
//! (`Reconciling the ControlPlane`).

use serde_json::{Value, json};

use super::operation::OperationType;

/// `Processing`, progress 1.
pub fn processing(kind: &str, op: OperationType, now: &str) -> Value {
    json!({"status": {"lastOperation": {
        "type": op.as_str(),
        "state": "Processing",
        "progress": 1,
        "description": op.texts(kind).0,
        "lastUpdateTime": now,
    }}})
}

/// `Succeeded`, progress 100, lastError cleared, observedGeneration set.
pub fn succeeded(kind: &str, op: OperationType, generation: Option<i64>, now: &str) -> Value {
    succeeded_with(kind, op, generation, now, None)
}

/// [`succeeded`] with `note` after Gardener's description (`<text>; <note>`).
pub fn succeeded_with(
    kind: &str,
    op: OperationType,
    generation: Option<i64>,
    now: &str,
    note: Option<&str>,
) -> Value {
    let description = match note {
        Some(note) => format!("{}; {note}", op.texts(kind).1),
        None => op.texts(kind).1,
    };
    json!({"status": {
        "lastOperation": {
            "type": op.as_str(),
            "state": "Succeeded",
            "progress": 100,
            "description": description,
            "lastUpdateTime": now,
        },
        "lastError": null,
        "observedGeneration": generation,
    }})
}

/// `Error`, progress 50, lastError set (with its codes, when any),
/// observedGeneration set. The description's first character is upper case.
pub fn error(
    kind: &str,
    op: OperationType,
    generation: Option<i64>,
    err: &str,
    codes: &[&str],
    now: &str,
) -> Value {
    let mut description = format!("{}: {err}", op.texts(kind).2);
    if let Some(first) = description.get(..1) {
        description = first.to_uppercase() + &description[1..];
    }
    let mut last_error = json!({"description": description, "lastUpdateTime": now});
    if !codes.is_empty() {
        last_error["codes"] = json!(codes);
    }
    json!({"status": {
        "lastOperation": {
            "type": op.as_str(),
            "state": "Error",
            "progress": 50,
            "description": description,
            "lastUpdateTime": now,
        },
        "lastError": last_error,
        "observedGeneration": generation,
    }})
}

/// The current time as Kubernetes writes it (RFC 3339, seconds, UTC).
pub fn now_rfc3339() -> String {
    let time =
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now());
    match serde_json::to_value(time) {
        Ok(Value::String(s)) => s,
        _ => String::new(),
    }
}
