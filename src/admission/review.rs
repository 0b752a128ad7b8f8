//! `admission.k8s.io/v1` and `v1beta1` AdmissionReview, as far as scion needs it.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The two AdmissionReview versions the API server may send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewVersion {
    V1,
    V1Beta1,
}

impl ReviewVersion {
    /// The version of an `apiVersion` string, if it is one.
    pub fn of(api_version: &str) -> Option<ReviewVersion> {
        match api_version {
            "admission.k8s.io/v1" => Some(ReviewVersion::V1),
            "admission.k8s.io/v1beta1" => Some(ReviewVersion::V1Beta1),
            _ => None,
        }
    }

    /// The `apiVersion` string of this version.
    pub fn api_version(self) -> &'static str {
        match self {
            ReviewVersion::V1 => "admission.k8s.io/v1",
            ReviewVersion::V1Beta1 => "admission.k8s.io/v1beta1",
        }
    }
}

/// The operation of an admission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// `request.kind`: the fully-qualified kind of the object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupVersionKind {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
}

/// `request` of an AdmissionReview. `object` is the JSON the API server sent
/// (decoded whole, or only within the mutator's reach); `oldObject` is only
/// noted, its content is skipped (except for an Etcd). Decoded by
/// [`crate::decode`].
#[derive(Debug, Clone, PartialEq)]
pub struct AdmissionRequest {
    /// Identifies this call; echoed in the response.
    pub uid: String,
    /// The kind of the object (e.g. apps/v1 Deployment).
    pub kind: GroupVersionKind,
    /// Name of the object; may be empty on CREATE with generateName.
    pub name: String,
    /// Namespace of the object; empty for cluster-scoped objects.
    pub namespace: String,
    pub operation: Operation,
    /// The object as sent (absent on DELETE).
    pub object: Option<Value>,
    /// Whether the request carried an `oldObject` (UPDATE and DELETE). Its
    /// content is skipped while parsing: no rule reads the previous object
    /// (Gardener's control-plane ensurers do not either), and building it as a
    /// JSON tree doubled the parsing cost of every UPDATE.
    pub has_old_object: bool,
    /// `oldObject`, kept only for the kinds whose rules read it (an Etcd:
    /// AWS keeps the old storage class and capacity); `None` otherwise.
    pub old_object: Option<Value>,
    pub dry_run: Option<bool>,
    /// Which AdmissionReview version carried this request (not on the wire).
    pub version: ReviewVersion,
}

impl AdmissionRequest {
    /// `Deployment shoot--a--b/kube-apiserver`: how every answer names the
    /// object, once, before the reason (a mutator's denial does not).
    pub fn identity(&self) -> String {
        let name = if self.name.is_empty() {
            "(unnamed)"
        } else {
            &self.name
        };
        if self.namespace.is_empty() {
            format!("{} {name}", self.kind.kind)
        } else {
            format!("{} {}/{name}", self.kind.kind, self.namespace)
        }
    }
}

/// Why a body is not an AdmissionReview scion can answer (HTTP 400).
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error("body is not valid JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// Not UTF-8, or JSON only a lenient reader accepts (a lone surrogate).
    #[error("body is not valid JSON: {0}")]
    Invalid(String),
    #[error(
        "not an AdmissionReview: apiVersion {0:?} is neither admission.k8s.io/v1 nor admission.k8s.io/v1beta1"
    )]
    ApiVersion(String),
    #[error("not an AdmissionReview: kind {0:?} is not AdmissionReview")]
    Kind(String),
    #[error("AdmissionReview has no request")]
    NoRequest,
    #[error("AdmissionReview request is malformed: {0}")]
    Request(#[source] serde_json::Error),
    #[error("AdmissionReview request has no uid")]
    NoUid,
    #[error("AdmissionReview request {field} is {len} bytes long; at most {max} are allowed")]
    TooLong {
        field: &'static str,
        len: usize,
        max: usize,
    },
    /// The request's budget ran out while it was being decoded.
    #[error("{0}")]
    Exhausted(crate::budget::Exhausted),
}

/// `response.status` for a denied request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Status {
    pub code: u16,
    pub reason: String,
    pub message: String,
}

/// `response` of an AdmissionReview, serialised exactly as the API documents it:
/// `patch` is a base64 string and `patchType`/`patch`/`status` are omitted when
/// they do not apply.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    pub uid: String,
    pub allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
}

impl AdmissionResponse {
    /// Allowed, no patch.
    pub fn allow(uid: &str) -> Self {
        AdmissionResponse {
            uid: uid.to_string(),
            allowed: true,
            patch_type: None,
            patch: None,
            status: None,
        }
    }

    /// Allowed with an RFC 6902 patch (the serialised JSON array of operations).
    pub fn patched(uid: &str, patch_json: &[u8]) -> Self {
        AdmissionResponse {
            uid: uid.to_string(),
            allowed: true,
            patch_type: Some("JSONPatch"),
            patch: Some(base64::engine::general_purpose::STANDARD.encode(patch_json)),
            status: None,
        }
    }

    /// Denied with a status code, reason and message.
    pub fn deny(uid: &str, code: u16, reason: &str, message: impl Into<String>) -> Self {
        AdmissionResponse {
            uid: uid.to_string(),
            allowed: false,
            patch_type: None,
            patch: None,
            status: Some(Status {
                code,
                reason: reason.to_string(),
                message: message.into(),
            }),
        }
    }

    /// Wrap into a full AdmissionReview of the given version, serialised to bytes.
    pub fn into_review_bytes(self, version: ReviewVersion) -> Vec<u8> {
        if let (Some(patch), None) = (&self.patch, &self.status) {
            return patched_review_bytes(version, &self.uid, self.allowed, patch);
        }
        self.serialize_review(version)
    }

    fn serialize_review(self, version: ReviewVersion) -> Vec<u8> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Review {
            api_version: &'static str,
            kind: &'static str,
            response: AdmissionResponse,
        }
        serde_json::to_vec(&Review {
            api_version: version.api_version(),
            kind: "AdmissionReview",
            response: self,
        })
        .expect("an AdmissionResponse always serialises")
    }
}

/// What `serialize_review` writes for a patch, without running serde_json's
/// escaping over the base64 text, which has nothing to escape (for the 13 KB
/// patch of an OperatingSystemConfig that scan was 3 % of the review).
fn patched_review_bytes(version: ReviewVersion, uid: &str, allowed: bool, patch: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(patch.len() + uid.len() + 160);
    out.extend_from_slice(b"{\"apiVersion\":\"");
    out.extend_from_slice(version.api_version().as_bytes());
    out.extend_from_slice(b"\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":");
    serde_json::to_writer(&mut out, uid).expect("a string always serialises");
    out.extend_from_slice(if allowed {
        b",\"allowed\":true"
    } else {
        b",\"allowed\":false"
    });
    out.extend_from_slice(b",\"patchType\":\"JSONPatch\",\"patch\":\"");
    debug_assert!(
        patch
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b))
    );
    out.extend_from_slice(patch.as_bytes());
    out.extend_from_slice(b"\"}}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patched_review_is_written_as_serde_writes_it() {
        for version in [ReviewVersion::V1, ReviewVersion::V1Beta1] {
            for uid in ["u", "a\"b\\c\u{1}é"] {
                let answer = AdmissionResponse::patched(uid, b"[{\"op\":\"add\"}]");
                assert_eq!(
                    answer.clone().into_review_bytes(version),
                    answer.serialize_review(version)
                );
            }
        }
    }

    #[test]
    fn patch_is_a_base64_string_on_the_wire() {
        let out: Value = serde_json::from_slice(
            &AdmissionResponse::patched("u", b"[]").into_review_bytes(ReviewVersion::V1),
        )
        .unwrap();
        assert_eq!(out["response"]["patch"], "W10=");
        assert_eq!(out["response"]["patchType"], "JSONPatch");
    }

    #[test]
    fn an_allowed_answer_has_no_patch_fields() {
        let out: Value = serde_json::from_slice(
            &AdmissionResponse::allow("u-1").into_review_bytes(ReviewVersion::V1Beta1),
        )
        .unwrap();
        assert_eq!(
            out,
            serde_json::json!({"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true}})
        );
    }
}
