//! Why an action could not be applied: the object has the wrong shape where a
//! rule writes (a 400 answer), or a Secret/ConfigMap a rule reads is missing
//! (a 403 answer).

use std::fmt;

use crate::gardener::ObjectKind;

/// Why an action could not be applied.
#[derive(Debug, Clone, PartialEq)]
pub enum ApplyError {
    /// The object has the wrong shape at `path` (→ 400).
    Shape {
        path: String,
        expected: &'static str,
    },
    /// A needed object is missing (→ 403).
    Missing { kind: ObjectKind, name: String },
    /// An image the profile names is not in the image vector (→ 403).
    NoImage(String),
}

/// A shape error at `path`.
pub(super) fn shape(path: impl fmt::Display, expected: &'static str) -> ApplyError {
    ApplyError::Shape {
        path: path.to_string(),
        expected,
    }
}
