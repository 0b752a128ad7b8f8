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
//! 10 KB kube-controller-manager review as an API server sends it (20.5–20.7 µs
//! end to end on the 2-vCPU AMD EPYC machine at load average ~2; the table and
//! its conditions are in `docs/performance.md`):
//!
//! | part | what | buys |
//! |---|---|---|
//! | [`footprint`] | derives each target's reach from the profile (one exhaustive match over the actions, [`crate::profile::Action::touches`]) | the reach below; computed once per profile |
//! | [`reach`], [`object_reach`] | build only the reached part of the object as a `Value` (2.8 KB of 10 KB), skip the rest without allocating | parsing the body into a `Value` takes 35.6–36.3 µs, decoding the review with the whole object 14.4–15.0 µs, with the object pruned to the reach 10.8–11.0 µs |
//! | [`request`] | one pass over the review: `uid`, `kind`, `object` within the reach chosen by kind and name, `oldObject` only noted | skipping `oldObject` (4.7 KB) without building it |
//! | [`json`] | scion's own serde `Deserializer` over the checked UTF-8 text: skipped text is checked against the JSON grammar over the bytes, strings eight bytes at a time, past 64 bytes whole 64-byte blocks at once (the 42 KB `oldObject` of an OperatingSystemConfig review) | skipping `oldObject` in 2.1–2.9 µs instead of serde_json's 3.2–3.9 µs; the pruned decode with serde_json's reader in its place took 18.6–19.4 µs instead of 10.8–11.0 µs. It also refuses a lone surrogate in skipped text, which serde_json's `IgnoredAny` lets through (the one strictness rule) |
//!
//! Correctness is anchored to the plain path: anything the fast path does not
//! take (it never accepts what serde_json rejects) is decoded by serde_json,
//! which also words every error; `tests/decode_*.rs` and the property tests
//! check that both give the same request, and that a pruned object gives the
//! same patch as the whole one.

pub mod footprint;
pub mod json;
pub mod object_reach;
pub mod reach;
mod request;

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

/// The longest `request.uid` accepted: Kubernetes UIDs are UUIDs (36
/// characters); the limit leaves room and keeps a hostile uid out of the
/// answer and the log.
pub const MAX_UID_BYTES: usize = 128;
/// The longest `request.name`: a Kubernetes object name is a DNS subdomain.
pub const MAX_NAME_BYTES: usize = 253;
/// The longest `request.namespace`: a namespace name is a DNS label.
pub const MAX_NAMESPACE_BYTES: usize = 63;

/// Decode an AdmissionReview body and return its request, with the object
/// decoded only within its reach (see [`ObjectReach`]; the rest of its text
/// is checked and skipped).
///
/// One strictness rule for the whole body, wherever a fault sits: it must be
/// UTF-8 JSON (RFC 8259) whose strings are valid Unicode (a `\u` escape of a
/// surrogate must pair); a duplicate key is allowed and the last one wins,
/// as in Go's `encoding/json` and the API server; `uid`, `name` and
/// `namespace` are at most [`MAX_UID_BYTES`], [`MAX_NAME_BYTES`] and
/// [`MAX_NAMESPACE_BYTES`] long. Anything else is a [`ReviewError`] (HTTP 400).
pub fn review(body: &[u8], reach: &ObjectReach) -> Result<AdmissionRequest, ReviewError> {
    let request = decode(body, reach)?;
    for (field, len, max) in [
        ("uid", request.uid.len(), MAX_UID_BYTES),
        ("name", request.name.len(), MAX_NAME_BYTES),
        ("namespace", request.namespace.len(), MAX_NAMESPACE_BYTES),
    ] {
        if len > max {
            return Err(ReviewError::TooLong { field, len, max });
        }
    }
    Ok(request)
}

fn decode(body: &[u8], reach: &ObjectReach) -> Result<AdmissionRequest, ReviewError> {
    let text = std::str::from_utf8(body)
        .map_err(|e| ReviewError::Invalid(format!("invalid UTF-8 at byte {}", e.valid_up_to())))?;
    // Fast path: one pass straight into the request, with scion's own JSON
    // reader (which skips the unneeded text at twice serde_json's speed,
    // checks every byte by the rule above and never accepts what serde_json
    // rejects). The body was checked to be UTF-8 once, up front, which is
    // cheaper than checking every string it decodes. Anything unusual (a
    // duplicate field of the request, which may have chosen the object's
    // reach by a kind that a later one overrides, included) takes the checked
    // path below, which parses with serde_json and names what is wrong.
    let mut de = json::Deserializer::new(text);
    let fast = ReviewSeed(reach)
        .deserialize(&mut de)
        .and_then(|review| de.end().map(|()| review));
    match fast {
        Ok(review) => {
            if let Some(version) = review.api_version.as_deref().and_then(ReviewVersion::of)
                && review.kind.as_deref() == Some("AdmissionReview")
                && let Some(mut request) = review.request
                && !request.uid.is_empty()
            {
                request.version = version;
                return Ok(request);
            }
        }
        // The budget stopped it: the plain path would build more, not less.
        Err(e) if e.budget().is_some() => {
            return Err(ReviewError::Exhausted(e.budget().expect("checked")));
        }
        Err(_) => {}
    }
    crate::budget::check().map_err(ReviewError::Exhausted)?;
    crate::budget::charge(whole_cost(text)).map_err(ReviewError::Exhausted)?;
    checked(text, reach)
}

/// What parsing `text` whole into a `serde_json::Value` may build, at most:
/// a map per `{`, an element or entry per `,` and `[`, and the text itself.
/// The plain path parses the whole body, the skipped parts included, so it
/// is charged before it starts (a fast count over the bytes; only unusual
/// bodies take that path).
fn whole_cost(text: &str) -> usize {
    use crate::budget::cost;
    let (mut maps, mut items) = (0usize, 0usize);
    for &b in text.as_bytes() {
        match b {
            b'{' => maps += 1,
            b',' | b'[' => items += 1,
            _ => {}
        }
    }
    maps * cost::MAP + items * cost::ENTRY.max(cost::ELEMENT) + text.len()
}

/// The plain path: serde_json, whole (a duplicate key: the last one wins),
/// then pruned to the reach.
fn checked(text: &str, reach: &ObjectReach) -> Result<AdmissionRequest, ReviewError> {
    // Built whole, so every string is checked (serde_json accepts a lone
    // surrogate only in text it skips).
    let envelope: Value = serde_json::from_str(text).map_err(ReviewError::Json)?;
    let Value::Object(mut envelope) = envelope else {
        return Err(ReviewError::Invalid(
            "an AdmissionReview is a JSON object".into(),
        ));
    };
    let mut field = |key: &str| match envelope.remove(key) {
        Some(Value::String(s)) => Ok(s),
        None | Some(Value::Null) => Ok(String::new()),
        Some(other) => Err(ReviewError::Invalid(format!(
            "{key} must be a string, not {other}"
        ))),
    };
    let api_version = field("apiVersion")?;
    let kind = field("kind")?;
    let Some(version) = ReviewVersion::of(&api_version) else {
        return Err(ReviewError::ApiVersion(api_version));
    };
    if kind != "AdmissionReview" {
        return Err(ReviewError::Kind(kind));
    }
    let request = match envelope.remove("request") {
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

    fn body(request: &str, extra: &str) -> Vec<u8> {
        format!(
            r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"{extra},"request":{request}}}"#
        )
        .into_bytes()
    }

    const REQUEST: &str = r#"{"uid":"u","kind":{"group":"apps","version":"v1","kind":"Deployment"},
        "name":"kube-apiserver","namespace":"shoot--a--b","operation":"UPDATE",
        "object":{"metadata":{"name":"kube-apiserver"},"spec":{"replicas":1}}}"#;

    /// The answers when the whole object or only its metadata is reached.
    fn both(body: &[u8]) -> Vec<Result<AdmissionRequest, String>> {
        let metadata = ObjectReach::new(
            Reach::keys([("metadata", Reach::keys([("name", Reach::All)]))]),
            [],
        );
        [whole(body), review(body, &metadata)]
            .into_iter()
            .map(|r| r.map_err(|e| e.to_string()))
            .collect()
    }

    #[test]
    fn a_body_that_is_not_utf8_json_is_refused_wherever_the_fault_sits() {
        let mut bad_utf8 = body(REQUEST, r#","note":"x""#);
        let at = bad_utf8.iter().position(|&b| b == b'x').unwrap();
        bad_utf8[at] = 0xff;
        for refused in [
            body(REQUEST, r#","note":"\ud800""#),
            body(
                &REQUEST.replace(r#""replicas":1"#, r#""skipped":"\udc00""#),
                "",
            ),
            body(
                &REQUEST.replace(
                    r#""name":"kube-apiserver","namespace""#,
                    r#""name":"a\ud800","namespace""#,
                ),
                "",
            ),
            bad_utf8,
        ] {
            for answer in both(&refused) {
                let err = answer.expect_err("refused");
                assert!(err.starts_with("body is not valid JSON: "), "{err}");
            }
        }
    }

    #[test]
    fn a_duplicate_key_is_allowed_and_the_last_one_wins_everywhere() {
        let twice = body(REQUEST, r#","request":{"uid":"first"}"#);
        for answer in both(&twice) {
            assert_eq!(answer.unwrap().uid, "u");
        }
        let object_twice = REQUEST.replace(
            r#""object":{"metadata""#,
            r#""object":{"metadata":{"name":"other"},"metadata""#,
        );
        for answer in both(&body(&object_twice, "")) {
            let object = answer.unwrap().object.unwrap();
            assert_eq!(object["metadata"]["name"], "kube-apiserver");
        }
        let uid_twice = REQUEST.replace(r#"{"uid":"u","#, r#"{"uid":"a","uid":"b","#);
        for answer in both(&body(&uid_twice, "")) {
            assert_eq!(answer.unwrap().uid, "b");
        }
    }

    #[test]
    fn uid_name_and_namespace_have_kubernetes_sizes() {
        let long = |field: &str, len: usize| {
            let value = "a".repeat(len);
            let request = match field {
                "uid" => REQUEST.replace(r#""uid":"u""#, &format!(r#""uid":"{value}""#)),
                "name" => REQUEST.replace(
                    r#""name":"kube-apiserver","namespace""#,
                    &format!(r#""name":"{value}","namespace""#),
                ),
                _ => REQUEST.replace(
                    r#""namespace":"shoot--a--b""#,
                    &format!(r#""namespace":"{value}""#),
                ),
            };
            whole(&body(&request, ""))
        };
        assert!(long("uid", MAX_UID_BYTES).is_ok());
        assert!(long("name", MAX_NAME_BYTES).is_ok());
        assert!(long("namespace", MAX_NAMESPACE_BYTES).is_ok());
        let err = long("uid", 6_900_000).unwrap_err().to_string();
        assert_eq!(
            err,
            "AdmissionReview request uid is 6900000 bytes long; at most 128 are allowed"
        );
        assert!(long("name", MAX_NAME_BYTES + 1).is_err());
        assert!(long("namespace", MAX_NAMESPACE_BYTES + 1).is_err());
    }

    #[test]
    fn missing_uid_and_request_are_named() {
        let no_request = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#;
        assert!(matches!(whole(no_request), Err(ReviewError::NoRequest)));
        let no_uid = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE"}}"#;
        assert!(matches!(whole(no_uid), Err(ReviewError::NoUid)));
    }
}
