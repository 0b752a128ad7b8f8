//! Minimal, deterministic RFC 6902 diffs between two JSON values.

use serde_json::Value;

/// The JSONPatch that turns `before` into `after`.
pub fn diff(before: &Value, after: &Value) -> json_patch::Patch {
    json_patch::diff(before, after)
}
