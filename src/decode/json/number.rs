//! Decoding a JSON number token into the value serde_json gives for it.

use serde::de::Visitor;

use super::error::Error;

/// Visits the number token `token` (already checked to be a JSON number) as
/// serde_json does: an integer that fits `u64` is a `u64`; a negative integer
/// that fits `i64` (except `-0`) is an `i64`; anything else — a fraction, an
/// exponent, `-0`, an integer too large — is the `f64` serde_json's default
/// parser makes of it, out of range (`1e400`) being an error. Those rare tokens
/// are handed to serde_json itself, so the float is exactly its own.
#[inline]
pub(super) fn visit<'de, V: Visitor<'de>>(
    token: &str,
    integer: bool,
    visitor: V,
) -> Result<V::Value, Error> {
    if integer {
        let (negative, digits) = match token.strip_prefix('-') {
            Some(digits) => (true, digits),
            None => (false, token),
        };
        if let Some(magnitude) = small_integer(digits) {
            if !negative {
                return visitor.visit_u64(magnitude);
            }
            if magnitude != 0 && magnitude <= 1 << 63 {
                return visitor.visit_i64((magnitude as i64).wrapping_neg());
            }
        }
    }
    let float = serde_json::from_str::<f64>(token)
        .map_err(|_| <Error as serde::de::Error>::custom("number out of range"))?;
    visitor.visit_f64(float)
}

/// The value of a run of ASCII digits if it fits `u64`.
#[inline]
fn small_integer(digits: &str) -> Option<u64> {
    digits.bytes().try_fold(0u64, |n, d| {
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    struct ValueOf;

    impl Visitor<'_> for ValueOf {
        type Value = Value;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a number")
        }
        fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
            Ok(v.into())
        }
        fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
            Ok(v.into())
        }
        fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
            Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
        }
    }

    #[test]
    fn integers_take_the_narrowest_of_serde_jsons_kinds() {
        for token in [
            "0",
            "-0",
            "7",
            "-7",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "-18446744073709551616",
            "123456789012345678901234567890",
        ] {
            let ours = visit(token, true, ValueOf).unwrap();
            let theirs: Value = serde_json::from_str(token).unwrap();
            assert_eq!(ours, theirs, "{token}");
            assert_eq!(ours.is_u64(), theirs.is_u64(), "{token}");
            assert_eq!(ours.is_i64(), theirs.is_i64(), "{token}");
            assert_eq!(ours.is_f64(), theirs.is_f64(), "{token}");
        }
        assert!(visit("-0", true, ValueOf).unwrap().is_f64());
        assert!(
            visit("-9223372036854775808", true, ValueOf)
                .unwrap()
                .is_i64()
        );
    }

    #[test]
    fn out_of_range_floats_are_errors_like_serde_jsons() {
        assert!(visit("1e400", false, ValueOf).is_err());
        assert!(serde_json::from_str::<Value>("1e400").is_err());
        assert_eq!(
            visit("1e-400", false, ValueOf).unwrap(),
            serde_json::json!(0.0)
        );
    }
}
