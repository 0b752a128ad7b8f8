//! The reader against serde_json on chosen texts: every malformed case must be
//! rejected when serde_json rejects it, accepted texts must decode equally,
//! and the seeds of the AdmissionReview decoder must agree on every recorded
//! review. Generated texts are in `proptests.rs`.

use std::fmt::Debug;

use serde::de::{DeserializeOwned, DeserializeSeed, IgnoredAny};
use serde_json::Value;

use super::Deserializer;
use crate::admission::{GroupVersionKind, Operation};
use crate::decode::object_reach::ObjectReach;
use crate::decode::reach::Reach;
use crate::decode::request::ReviewSeed;

/// `text` read as a `T` by this reader, then `end`.
pub(super) fn ours<T: DeserializeOwned>(text: &str) -> Result<T, super::Error> {
    let mut de = Deserializer::new(text);
    let value = T::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// How this reader and serde_json disagree on `text` read as a `T`, if they do:
/// one accepts what the other rejects, or both accept but decode differently.
pub(super) fn disagreement<T: DeserializeOwned + PartialEq + Debug>(text: &str) -> Option<String> {
    let theirs = serde_json::from_str::<T>(text);
    match (ours::<T>(text), theirs) {
        (Ok(a), Ok(b)) if a == b => None,
        (Err(_), Err(_)) => None,
        // The one rule more: a lone surrogate is an error wherever it sits,
        // also in text serde_json skips (it rejects it when it builds).
        (Err(e), Ok(_))
            if e.to_string().contains("lone surrogate")
                && serde_json::from_str::<Value>(text).is_err() =>
        {
            None
        }
        (a, b) => Some(format!("{text:?}: ours {a:?}, serde_json {b:?}")),
    }
}

/// Asserts that both agree on `text` as a `Value` and when skipping it.
pub(super) fn assert_agree(text: &str) {
    assert_eq!(disagreement::<Value>(text), None);
    assert_eq!(disagreement::<IgnoredAny>(text), None);
}

#[test]
fn numbers_agree_at_the_edges_of_each_kind() {
    for text in [
        "0",
        "-0",
        "-0.0",
        "1",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "-9223372036854775809",
        "99999999999999999999999",
        "1.5",
        "-1.5e-3",
        "1E+2",
        "1e400",
        "-1e400",
        "1e-400",
        "1e99999999999999999999",
        "0.1e-99999999999999999999",
        "2.2250738585072011e-308",
        "1.7976931348623157e308",
        "0.30000000000000004",
        "123456789012345678901234567890.123456789e-10",
    ] {
        assert_agree(text);
        assert_agree(&format!("[{text},{text}]"));
    }
}

#[test]
fn malformed_numbers_are_rejected() {
    for text in [
        "-",
        "01",
        "-01",
        "00",
        "1.",
        "1.e5",
        ".5",
        "+1",
        "1e",
        "1e+",
        "1E-",
        "--1",
        "0x10",
        "1_0",
        "Infinity",
        "NaN",
        "-Infinity",
        "1.5.",
        "[1.]",
        "[-]",
        "{\"a\":1e}",
    ] {
        assert!(ours::<IgnoredAny>(text).is_err(), "{text}");
        assert_agree(text);
    }
}

#[test]
fn strings_and_escapes_agree() {
    for text in [
        r#""""#,
        r#""plain""#,
        r#""\"\\\/\b\f\n\r\t""#,
        r#""\u00e9\u0000\uFFFF""#,
        r#""\ud83d\ude00 and \uD83D\uDE00""#,
        "\"r\u{e9}sum\u{e9} \u{1F600}\"",
        r#""\ud800""#,
        r#""\udc00""#,
        r#""\ud800x""#,
        r#""\ud800\n""#,
        r#""\ud800\u0041""#,
        r#""\ud800\ud800""#,
        r#""\udbff\udfff""#,
        r#""\udc00\udc00""#,
        r#""\udfff\ud800\udc00""#,
        r#""\x""#,
        r#""\u12""#,
        r#""\u12G4""#,
        r#""\"#,
        r#""abc"#,
        "\"tab\there\"",
        "\"nl\nhere\"",
        "\"\u{1f}\"",
        "\"\u{7f}\"",
        "\"long string with an escape at the end, past the first eight bytes\\n\"",
    ] {
        assert_agree(text);
        assert_agree(&format!("{{{text}:{text}}}"));
    }
    // No string may hold a lone surrogate, built or skipped (serde_json
    // accepts one when it skips; scion does not).
    for lone in [
        r#""\ud800""#,
        r#""\udc00""#,
        r#""\ud800\u0041""#,
        r#""a\ud800b""#,
    ] {
        assert!(ours::<IgnoredAny>(lone).is_err(), "{lone}");
        assert!(ours::<Value>(lone).is_err(), "{lone}");
    }
    assert!(ours::<IgnoredAny>(r#""\ud83d\ude00""#).is_ok());
}

#[test]
fn structure_whitespace_and_trailing_text_agree() {
    for text in [
        "",
        " ",
        "null",
        " \t\r\n[ 1 , { \"a\" : [ ] } ] \n",
        "\u{c}1",
        "1\u{a0}",
        "tru",
        "nul",
        "nulll",
        "true false",
        "{} {}",
        "[1,]",
        "[,1]",
        "[1 2]",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{\"a\":}",
        "{1:2}",
        "{\"a\":1 \"b\":2}",
        "[}",
        "{]",
        "[[]",
        "[]]",
        "{\"a\":1}}",
        "{\"a\":1,\"a\":2}",
        "{\"$serde_json::private::RawValue\":\"[1,2]\"}",
    ] {
        assert_agree(text);
    }
}

#[test]
fn nesting_is_limited_as_in_serde_json_but_not_when_skipped() {
    for depth in [126, 127, 128, 129] {
        let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert_agree(&text);
        let objects = format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth));
        assert_agree(&objects);
    }
    assert!(ours::<Value>(&format!("{}{}", "[".repeat(127), "]".repeat(127))).is_ok());
    assert!(ours::<Value>(&format!("{}{}", "[".repeat(128), "]".repeat(128))).is_err());
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(ours::<IgnoredAny>(&deep).is_ok());
    assert_agree(&deep);
    assert_agree(&"[".repeat(10_000));
    assert_agree(&format!("{}{}", "[".repeat(10_000), "]".repeat(9_999)));
    assert_agree(&format!(
        "{}{}",
        "{\"a\":[".repeat(5_000),
        "]}".repeat(5_000)
    ));
}

#[test]
fn typed_reads_agree() {
    fn both<T: DeserializeOwned + PartialEq + Debug>(texts: &[&str]) {
        for text in texts {
            assert_eq!(
                disagreement::<T>(text),
                None,
                "as {}",
                std::any::type_name::<T>()
            );
        }
    }
    let options = [
        "null", "true", "false", "nul", "1", "\"true\"", " null ", "",
    ];
    both::<Option<bool>>(&options);
    both::<bool>(&options);
    both::<()>(&options);
    both::<Option<String>>(&["null", "\"a\"", "1", "[]"]);
    both::<String>(&["\"a\\u00e9\"", "1", "null", "[\"a\"]"]);
    both::<char>(&["\"a\"", "\"ab\"", "\"\\u00e9\""]);
    both::<Operation>(&[
        "\"UPDATE\"",
        "\"update\"",
        "\"DELETE\"",
        "1",
        "null",
        "[\"CREATE\"]",
    ]);
    both::<GroupVersionKind>(&[
        r#"{"group":"apps","version":"v1","kind":"Deployment"}"#,
        r#"{"kind":"Deployment","extra":{"x":[1]}}"#,
        r#"["apps","v1","Deployment"]"#,
        r#"{"kind":"a","kind":"b"}"#,
        r#"{"kind":1}"#,
        r#""apps/v1""#,
    ]);
    both::<u8>(&["255", "256", "-1", "1.0", "\"1\"", "null"]);
    both::<i64>(&["-9223372036854775808", "9223372036854775808", "true"]);
    both::<f64>(&["1", "-1", "1.5", "1e400", "\"1\""]);
    both::<Vec<u64>>(&["[]", "[1,2]", "[1,-2]", "[1,]", "{}"]);
    both::<(u8, String)>(&["[1,\"a\"]", "[1]", "[1,\"a\",2]"]);
    both::<Option<Vec<u8>>>(&["null", "[1]"]);
    both::<std::collections::BTreeMap<String, i32>>(&[r#"{"a":1,"b":-2}"#, r#"{"a":"1"}"#]);
}

#[test]
fn the_rejections_serde_json_does_not_make_are_the_documented_ones() {
    // An enum written as a map.
    let map_enum = r#"{"UPDATE":null}"#;
    assert!(serde_json::from_str::<Operation>(map_enum).is_ok());
    assert!(ours::<Operation>(map_enum).is_err());
    // A key read as a number.
    let numeric_key = r#"{"1":2}"#;
    assert!(serde_json::from_str::<std::collections::BTreeMap<u8, u8>>(numeric_key).is_ok());
    assert!(ours::<std::collections::BTreeMap<u8, u8>>(numeric_key).is_err());
    // A byte string with a control character.
    assert_eq!(
        bytes_of(&mut serde_json::Deserializer::from_str("\"a\\n\"")),
        Some(b"a\n".to_vec())
    );
    assert_eq!(
        bytes_of(&mut Deserializer::new("\"a\\n\"")),
        Some(b"a\n".to_vec())
    );
    assert_eq!(
        bytes_of(&mut serde_json::Deserializer::from_str("\"\u{1}\"")),
        Some(vec![1])
    );
    assert_eq!(bytes_of(&mut Deserializer::new("\"\u{1}\"")), None);
}

/// A byte string read with `deserialize_bytes`.
fn bytes_of<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Option<Vec<u8>> {
    struct Bytes;
    impl serde::de::Visitor<'_> for Bytes {
        type Value = Vec<u8>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("bytes")
        }
        fn visit_bytes<E>(self, v: &[u8]) -> Result<Vec<u8>, E> {
            Ok(v.to_vec())
        }
    }
    deserializer.deserialize_bytes(Bytes).ok()
}

/// Both readers through the review decoder's seeds, compared field by field.
fn assert_reviews_agree(text: &str, reach: &ObjectReach) {
    let mut de = Deserializer::new(text);
    let ours = ReviewSeed(reach).deserialize(&mut de).unwrap();
    de.end().unwrap();
    let mut de = serde_json::Deserializer::from_str(text);
    let theirs = ReviewSeed(reach).deserialize(&mut de).unwrap();
    de.end().unwrap();
    assert_eq!(ours.api_version, theirs.api_version);
    assert_eq!(ours.kind, theirs.kind);
    assert_eq!(ours.request, theirs.request);
}

#[test]
fn every_recorded_review_decodes_as_with_serde_json() {
    let within = Reach::keys([(
        "spec",
        Reach::keys([(
            "template",
            Reach::keys([(
                "spec",
                Reach::keys([(
                    "containers",
                    Reach::Each(Box::new(Reach::keys([
                        ("name", Reach::All),
                        ("command", Reach::All),
                    ]))),
                )]),
            )]),
        )]),
    )]);
    let common = Reach::keys([("metadata", Reach::keys([("name", Reach::All)]))]);
    let pruned = ObjectReach::new(
        common,
        [(
            ("apps", "v1", "Deployment", "kube-controller-manager"),
            within,
        )],
    );
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/admission");
    let mut reviews = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if !path.to_string_lossy().ends_with(".review.json") {
            continue;
        }
        let recorded = std::fs::read_to_string(&path).unwrap();
        let compact = serde_json::to_string(&serde_json::from_str::<Value>(&recorded).unwrap());
        for text in [recorded.clone(), compact.unwrap()] {
            assert_reviews_agree(&text, &ObjectReach::ALL);
            assert_reviews_agree(&text, &pruned);
            assert_agree(&text);
        }
        reviews += 1;
    }
    assert!(reviews > 100, "only {reviews} recorded reviews found");
}

/// The first special byte is found wherever it sits in a long string: in the
/// first words, inside a 64-byte block, across a block's edge, in the tail.
#[test]
fn the_first_special_byte_is_found_at_every_position() {
    for len in [0usize, 7, 31, 33, 64, 95, 96, 97, 160, 200, 301] {
        for start in [0usize, 1, 5] {
            for special in [b'"', b'\\', b'\n', 0x1f, 0] {
                let plain = vec![b'A'; len];
                assert_eq!(
                    super::skip::string_special(&plain, start.min(len)),
                    len,
                    "{len} {start}"
                );
                for at in start..len {
                    let mut bytes = plain.clone();
                    bytes[at] = special;
                    if at + 1 < len {
                        bytes[len - 1] = b'"';
                    }
                    assert_eq!(
                        super::skip::string_special(&bytes, start),
                        at,
                        "{len} {start} {at} {special}"
                    );
                }
            }
        }
    }
}
