//! Decoding an AdmissionReview body: the one place a request is read, and the
//! speed machinery behind it.
//!
//! [`review`] decodes a body into an [`AdmissionRequest`] whose object holds
//! only the part a mutator reads or writes (its [`ObjectReach`]); [`whole`]
//! decodes the object whole (`scion mutate`, tests). A mutator hands its
//! reach to [`review`] in [`crate::admission::Mutator::decode`], so the
//! server never knows about any of this.
//!
//! What each part buys, measured with `cargo bench --bench mutate` on the
//! 10 KB kube-controller-manager review (46–47 µs end to end; the numbers are
//! in `docs/performance.md`):
//!
//! | part | what | buys |
//! |---|---|---|
//! | [`footprint`] | derives each target's reach from the profile (one exhaustive match over the actions, [`crate::profile::Action::touches`]) | the reach below; computed once per profile |
//! | [`reach`], [`object_reach`] | build only the reached part of the object as a `Value` (2.8 KB of 10 KB), skip the rest without allocating | parsing the body into a `Value` takes 98 µs; the pruned decode 24–25 µs |
//! | [`request`] | one pass over the review: `uid`, `kind`, `object` within the reach chosen by kind and name, `oldObject` only noted | skipping `oldObject` (4.7 KB) without building it |
//! | [`json`] | scion's own serde `Deserializer` over the checked UTF-8 text: skipped text is checked against the JSON grammar over the bytes, strings eight bytes at a time | skipping at ~2.3× serde_json's speed: `oldObject` in 3.7 µs instead of 8.6 µs |
//!
//! Correctness is anchored to the plain path: anything the fast path does not
//! take (it never accepts what serde_json rejects) is decoded by serde_json,
//! which also words every error; `tests/decode_*.rs` and the property tests
//! check that both give the same request, and that a pruned object gives the
//! same patch as the whole one.

pub mod footprint;
mod json;
pub mod object_reach;
pub mod reach;
mod request;

use serde::Deserialize;
use serde::de::DeserializeSeed;
use serde_json::Value;

pub use footprint::footprint;
pub use object_reach::ObjectReach;
pub use reach::Reach;

use crate::admission::{AdmissionRequest, ReviewError, ReviewVersion};
use request::{RequestSeed, ReviewSeed};

/// Decode an AdmissionReview body and return its request, with the whole object.
pub fn whole(body: &[u8]) -> Result<AdmissionRequest, ReviewError> {
    static ALL: ObjectReach = ObjectReach::ALL;
    review(body, &ALL)
}

/// Decode an AdmissionReview body and return its request, with the object
/// decoded only within its reach (see [`ObjectReach`]; the rest of its text
/// is checked and skipped).
pub fn review(body: &[u8], reach: &ObjectReach) -> Result<AdmissionRequest, ReviewError> {
    // Fast path: one pass straight into the request, with scion's own JSON
    // reader (which skips the unneeded text at twice serde_json's speed and
    // never accepts what serde_json rejects). The body is checked to be
    // UTF-8 once, up front, which is cheaper than checking every string it
    // decodes. Anything unusual takes the checked path below, which parses
    // with serde_json and names what is wrong.
    if let Ok(text) = std::str::from_utf8(body) {
        let mut de = json::Deserializer::from_str(text);
        if let Ok(review) = ReviewSeed(reach).deserialize(&mut de)
            && de.end().is_ok()
            && let Some(version) = review.api_version.as_deref().and_then(ReviewVersion::of)
            && review.kind.as_deref() == Some("AdmissionReview")
            && let Some(mut request) = review.request
            && !request.uid.is_empty()
        {
            request.version = version;
            return Ok(request);
        }
    }
    checked(body, reach)
}

/// The plain path: serde_json, whole, then pruned to the reach.
fn checked(body: &[u8], reach: &ObjectReach) -> Result<AdmissionRequest, ReviewError> {
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
    let Some(version) = ReviewVersion::of(&envelope.api_version) else {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::Operation;

    #[test]
    fn v1beta1_request_is_recognised() {
        let body = br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview",
            "request":{"uid":"u-1","kind":{"group":"apps","version":"v1","kind":"Deployment"},
            "name":"kube-apiserver","namespace":"shoot--a--b","operation":"UPDATE","object":{"x":1}}}"#;
        let request = whole(body).unwrap();
        assert_eq!(request.version, ReviewVersion::V1Beta1);
        assert_eq!(request.operation, Operation::Update);
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
        let with = whole(review(r#","oldObject":{"a":[0,{"b":2}]}"#).as_bytes()).unwrap();
        assert!(with.has_old_object);
        assert_eq!(with.object, Some(serde_json::json!({"a": 1})));
        let null = whole(review(r#","oldObject":null"#).as_bytes()).unwrap();
        assert!(!null.has_old_object);
        let without = whole(review("").as_bytes()).unwrap();
        assert!(!without.has_old_object);
    }

    #[test]
    fn missing_uid_and_request_are_named() {
        let no_request = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#;
        assert!(matches!(whole(no_request), Err(ReviewError::NoRequest)));
        let no_uid = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE"}}"#;
        assert!(matches!(whole(no_uid), Err(ReviewError::NoUid)));
    }
}
