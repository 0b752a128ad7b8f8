//! `admission.k8s.io/v1` and `v1beta1` AdmissionReview, as far as scion needs it.

use base64::Engine as _;
use serde::de::DeserializeSeed;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::object_reach::ObjectReach;
use super::request::{RequestSeed, ReviewSeed};

/// The two AdmissionReview versions the API server may send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewVersion {
    V1,
    V1Beta1,
}

impl ReviewVersion {
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
/// (decoded whole, or only within the mutator's [`Reach`]); `oldObject` is only
/// noted, its content is skipped. Decoded by [`super::request::RequestSeed`].
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
    pub dry_run: Option<bool>,
    /// Which AdmissionReview version carried this request (not on the wire).
    pub version: ReviewVersion,
}

/// Why a body is not an AdmissionReview scion can answer (HTTP 400).
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error("body is not valid JSON: {0}")]
    Json(#[source] serde_json::Error),
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
}

impl AdmissionRequest {
    /// Parse an AdmissionReview body and return its request, with the whole object.
    pub fn from_review_bytes(body: &[u8]) -> Result<AdmissionRequest, ReviewError> {
        static ALL: ObjectReach = ObjectReach::ALL;
        Self::from_review_bytes_within(body, &ALL)
    }

    /// Parse an AdmissionReview body and return its request, with the object
    /// decoded only within its reach (see [`ObjectReach`]; the rest of its text
    /// is checked and skipped).
    pub fn from_review_bytes_within(
        body: &[u8],
        reach: &ObjectReach,
    ) -> Result<AdmissionRequest, ReviewError> {
        // Fast path: one pass straight into the request, with scion's own JSON
        // reader (which skips the unneeded text at twice serde_json's speed and
        // never accepts what serde_json rejects). The body is checked to be
        // UTF-8 once, up front, which is cheaper than checking every string it
        // decodes. Anything unusual takes the checked path below, which parses
        // with serde_json and names what is wrong.
        if let Ok(text) = std::str::from_utf8(body) {
            let mut de = super::json::Deserializer::from_str(text);
            if let Ok(review) = ReviewSeed(reach).deserialize(&mut de)
                && de.end().is_ok()
                && let Some(version) = review.api_version.as_deref().and_then(version_of)
                && review.kind.as_deref() == Some("AdmissionReview")
                && let Some(mut request) = review.request
                && !request.uid.is_empty()
            {
                request.version = version;
                return Ok(request);
            }
        }
        Self::from_review_bytes_checked(body, reach)
    }

    fn from_review_bytes_checked(
        body: &[u8],
        reach: &ObjectReach,
    ) -> Result<AdmissionRequest, ReviewError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Envelope {
            #[serde(default)]
            api_version: String,
            #[serde(default)]
            kind: String,
            #[serde(default)]
            request: Option<Value>,
        }
        let envelope: Envelope = serde_json::from_slice(body).map_err(ReviewError::Json)?;
        let Some(version) = version_of(&envelope.api_version) else {
            return Err(ReviewError::ApiVersion(envelope.api_version));
        };
        if envelope.kind != "AdmissionReview" {
            return Err(ReviewError::Kind(envelope.kind));
        }
        let request = match envelope.request {
            Some(Value::Null) | None => return Err(ReviewError::NoRequest),
            Some(request) => request,
        };
        if request
            .get("uid")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(ReviewError::NoUid);
        }
        let mut request = RequestSeed(&ObjectReach::ALL)
            .deserialize(request)
            .map_err(ReviewError::Request)?;
        request.version = version;
        if let Some(object) = request.object.as_mut() {
            *object = reach.prune(&request.kind, object);
        }
        Ok(request)
    }
}

fn version_of(api_version: &str) -> Option<ReviewVersion> {
    match api_version {
        "admission.k8s.io/v1" => Some(ReviewVersion::V1),
        "admission.k8s.io/v1beta1" => Some(ReviewVersion::V1Beta1),
        _ => None,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1beta1_request_is_recognised_and_answered_in_kind() {
        let body = br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview",
            "request":{"uid":"u-1","kind":{"group":"apps","version":"v1","kind":"Deployment"},
            "name":"kube-apiserver","namespace":"shoot--a--b","operation":"UPDATE","object":{"x":1}}}"#;
        let request = AdmissionRequest::from_review_bytes(body).unwrap();
        assert_eq!(request.version, ReviewVersion::V1Beta1);
        assert_eq!(request.operation, Operation::Update);
        let out: Value = serde_json::from_slice(
            &AdmissionResponse::allow(&request.uid).into_review_bytes(request.version),
        )
        .unwrap();
        assert_eq!(
            out,
            serde_json::json!({"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true}})
        );
    }

    #[test]
    fn old_object_is_noted_but_not_kept() {
        let review = |old: &str| {
            format!(
                r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"u",
                "kind":{{"group":"apps","version":"v1","kind":"Deployment"}},"operation":"UPDATE",
                "object":{{"a":1}}{old}}}}}"#
            )
        };
        let with = AdmissionRequest::from_review_bytes(
            review(r#","oldObject":{"a":[0,{"b":2}]}"#).as_bytes(),
        )
        .unwrap();
        assert!(with.has_old_object);
        assert_eq!(with.object, Some(serde_json::json!({"a": 1})));
        let null =
            AdmissionRequest::from_review_bytes(review(r#","oldObject":null"#).as_bytes()).unwrap();
        assert!(!null.has_old_object);
        let without = AdmissionRequest::from_review_bytes(review("").as_bytes()).unwrap();
        assert!(!without.has_old_object);
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
    fn missing_uid_and_request_are_named() {
        let no_request = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#;
        assert!(matches!(
            AdmissionRequest::from_review_bytes(no_request),
            Err(ReviewError::NoRequest)
        ));
        let no_uid = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE"}}"#;
        assert!(matches!(
            AdmissionRequest::from_review_bytes(no_uid),
            Err(ReviewError::NoUid)
        ));
    }
}
