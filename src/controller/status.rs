//! Status bodies (Gardener's `extensions/pkg/controller/status.go`): merge patches
//! on the `status` subresource.

use serde_json::{Value, json};

use super::operation::OperationType;

/// `Processing`, progress 1.
pub fn processing(op: OperationType, now: &str) -> Value {
    json!({"status": {"lastOperation": {
        "type": op.as_str(),
        "state": "Processing",
        "progress": 1,
        "description": op.texts().0,
        "lastUpdateTime": now,
    }}})
}

/// `Succeeded`, progress 100, lastError cleared, observedGeneration set.
pub fn succeeded(op: OperationType, generation: Option<i64>, now: &str) -> Value {
    json!({"status": {
        "lastOperation": {
            "type": op.as_str(),
            "state": "Succeeded",
            "progress": 100,
            "description": op.texts().1,
            "lastUpdateTime": now,
        },
        "lastError": null,
        "observedGeneration": generation,
    }})
}

/// `Error`, progress 50, lastError set, observedGeneration set.
pub fn error(op: OperationType, generation: Option<i64>, err: &str, now: &str) -> Value {
    let description = format!("{}: {err}", op.texts().2);
    json!({"status": {
        "lastOperation": {
            "type": op.as_str(),
            "state": "Error",
            "progress": 50,
            "description": description,
            "lastUpdateTime": now,
        },
        "lastError": {"description": description, "lastUpdateTime": now},
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
