//! Decoding only the part of an object a mutator reads.
//!
//! A control-plane Deployment arrives with `managedFields`, probes, resources,
//! images, ports and a status that no rule reads or writes, yet building them
//! as a JSON tree was most of the cost of a review. A [`Reach`] names the part
//! of the object a mutator can read or write; [`decode`] builds exactly that
//! part as a [`Value`] and skips the rest of the text without allocating.
//!
//! The pruned tree keeps every map that lies on a reached path and every
//! element of a reached array, so a JSON pointer into the pruned tree points at
//! the same place in the full object. A diff between the pruned object and its
//! mutation is therefore a valid patch of the full object, provided the mutator
//! keeps to its reach: it may add, change or remove reached keys, change
//! elements of an [`Reach::Each`] array field by field, and add or remove whole
//! elements only of arrays it reaches [`Reach::All`].
//!
//! A value whose type differs from what the reach expects (a string where a
//! map is reached by keys) is kept whole, so the mutator sees it and reports the
//! same shape error as on the full object.

use std::fmt;

use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The part of a JSON value that is decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// The whole value.
    All,
    /// In a map, only these keys, each to its own reach; other keys are
    /// skipped. A value that is not a map is kept whole.
    Keys(Vec<(String, Reach)>),
    /// In an array, every element to this reach (no element is skipped, so
    /// indices stay those of the full array). A value that is not an array is
    /// kept whole.
    Each(Box<Reach>),
}

impl Reach {
    /// A map reach from `(key, reach)` pairs.
    pub fn keys<K: Into<String>>(keys: impl IntoIterator<Item = (K, Reach)>) -> Reach {
        Reach::Keys(keys.into_iter().map(|(k, r)| (k.into(), r)).collect())
    }

    /// The reach of a map key, if the key is reached: every key of a map
    /// reached whole is reached whole; an array reach reaches no key.
    pub(super) fn key(&self, key: &str) -> Option<&Reach> {
        static WHOLE: Reach = Reach::All;
        match self {
            Reach::Keys(keys) => keys.iter().find(|(k, _)| k == key).map(|(_, r)| r),
            Reach::All => Some(&WHOLE),
            Reach::Each(_) => None,
        }
    }

    /// The smallest reach covering both `self` and `other`.
    pub fn union(self, other: Reach) -> Reach {
        match (self, other) {
            (Reach::All, _) | (_, Reach::All) => Reach::All,
            (Reach::Each(a), Reach::Each(b)) => Reach::Each(Box::new(a.union(*b))),
            (Reach::Keys(mut a), Reach::Keys(b)) => {
                for (key, reach) in b {
                    match a.iter().position(|(k, _)| *k == key) {
                        Some(i) => {
                            let mine = std::mem::replace(&mut a[i].1, Reach::All);
                            a[i].1 = mine.union(reach);
                        }
                        None => a.push((key, reach)),
                    }
                }
                Reach::Keys(a)
            }
            // A map reach and an array reach of the same field: the field can
            // only be one of the two, and decoding it whole is always correct.
            _ => Reach::All,
        }
    }

    /// `value` cut down to this reach: what [`decode`] builds from its text.
    pub fn prune(&self, value: &Value) -> Value {
        match (self, value) {
            (Reach::Keys(keys), Value::Object(map)) => Value::Object(
                map.iter()
                    .filter_map(|(k, v)| {
                        let reach = keys.iter().find(|(rk, _)| rk == k)?;
                        Some((k.clone(), reach.1.prune(v)))
                    })
                    .collect(),
            ),
            (Reach::Each(item), Value::Array(items)) => {
                Value::Array(items.iter().map(|v| item.prune(v)).collect())
            }
            _ => value.clone(),
        }
    }
}

/// The scalar methods of a visitor building a [`Value`], as serde_json's own.
/// Shared by the pruning decoders here and in `state::prune`.
macro_rules! scalar_values {
    () => {
        fn visit_bool<E>(self, v: bool) -> Result<::serde_json::Value, E> {
            Ok(::serde_json::Value::Bool(v))
        }

        fn visit_i64<E>(self, v: i64) -> Result<::serde_json::Value, E> {
            Ok(::serde_json::Value::Number(v.into()))
        }

        fn visit_u64<E>(self, v: u64) -> Result<::serde_json::Value, E> {
            Ok(::serde_json::Value::Number(v.into()))
        }

        fn visit_f64<E>(self, v: f64) -> Result<::serde_json::Value, E> {
            Ok(::serde_json::Number::from_f64(v)
                .map_or(::serde_json::Value::Null, ::serde_json::Value::Number))
        }

        fn visit_str<E>(self, v: &str) -> Result<::serde_json::Value, E> {
            Ok(::serde_json::Value::String(v.to_owned()))
        }

        fn visit_string<E>(self, v: String) -> Result<::serde_json::Value, E> {
            Ok(::serde_json::Value::String(v))
        }

        fn visit_unit<E>(self) -> Result<::serde_json::Value, E> {
            Ok(::serde_json::Value::Null)
        }

        fn visit_none<E>(self) -> Result<::serde_json::Value, E> {
            Ok(::serde_json::Value::Null)
        }
    };
}
pub(crate) use scalar_values;

/// A [`DeserializeSeed`] decoding a value within a reach.
#[derive(Clone, Copy)]
pub struct Within<'r>(pub &'r Reach);

impl<'de> DeserializeSeed<'de> for Within<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        match self.0 {
            Reach::All => Value::deserialize(deserializer),
            reach => deserializer.deserialize_any(WithinVisitor(reach)),
        }
    }
}

struct WithinVisitor<'r>(&'r Reach);

impl<'de> Visitor<'de> for WithinVisitor<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    scalar_values!();

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        Within(self.0).deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let Reach::Each(item) = self.0 else {
            return Value::deserialize(SeqAccessDeserializer::new(seq));
        };
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(v) = seq.next_element_seed(Within(item))? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        if !matches!(self.0, Reach::Keys(_)) {
            return Value::deserialize(MapAccessDeserializer::new(map));
        }
        let mut out = Map::new();
        while let Some(key) = map.next_key_seed(KeySeed(self.0))? {
            match key {
                Some((key, reach)) => {
                    let value = map.next_value_seed(Within(reach))?;
                    out.insert(key, value);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// A map key: owned and with its reach if reached, `None` (not allocated) if not.
struct KeySeed<'r>(&'r Reach);

impl<'de, 'r> DeserializeSeed<'de> for KeySeed<'r> {
    type Value = Option<(String, &'r Reach)>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'r> Visitor<'_> for KeySeed<'r> {
    type Value = Option<(String, &'r Reach)>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.0.key(key).map(|reach| (key.to_owned(), reach)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decoded(reach: &Reach, text: &str) -> Value {
        let mut de = serde_json::Deserializer::from_str(text);
        let value = Within(reach).deserialize(&mut de).unwrap();
        de.end().unwrap();
        value
    }

    fn pod_reach() -> Reach {
        Reach::keys([
            ("metadata", Reach::keys([("name", Reach::All)])),
            (
                "spec",
                Reach::keys([(
                    "containers",
                    Reach::Each(Box::new(Reach::keys([
                        ("name", Reach::All),
                        ("command", Reach::All),
                    ]))),
                )]),
            ),
        ])
    }

    #[test]
    fn only_reached_keys_are_built_and_array_indices_stay() {
        let text = r#"{"metadata":{"name":"kcm","managedFields":[{"x":1}]},
            "spec":{"replicas":1,"containers":[{"name":"a","image":"i","command":["x"]},
            {"name":"b","resources":{"limits":{"cpu":"1"}}}]},"status":{"ready":1}}"#;
        assert_eq!(
            decoded(&pod_reach(), text),
            json!({"metadata":{"name":"kcm"},"spec":{"containers":[
                {"name":"a","command":["x"]},{"name":"b"}]}})
        );
    }

    #[test]
    fn a_value_of_another_type_is_kept_whole() {
        let text = r#"{"metadata":"oops","spec":{"containers":{"name":"a","image":"i"}}}"#;
        assert_eq!(
            decoded(&pod_reach(), text),
            json!({"metadata":"oops","spec":{"containers":{"name":"a","image":"i"}}})
        );
        assert_eq!(decoded(&pod_reach(), "[1,{\"a\":2}]"), json!([1, {"a": 2}]));
        assert_eq!(decoded(&pod_reach(), "null"), Value::Null);
    }

    #[test]
    fn decoding_agrees_with_pruning_the_full_value() {
        let text = r#"{"metadata":{"name":"n\u00e9\"q","labels":{"a":"b"}},"spec":{"containers":[
            {"name":"c","command":["--x=1",2.5,-3,true,null]},7,"s",[{"name":"d"}]],"other":1e3}}"#;
        let full: Value = serde_json::from_str(text).unwrap();
        for reach in [
            pod_reach(),
            Reach::All,
            Reach::keys::<&str>([]),
            Reach::Each(Box::new(Reach::All)),
        ] {
            assert_eq!(decoded(&reach, text), reach.prune(&full), "{reach:?}");
        }
    }

    #[test]
    fn skipped_text_is_still_checked() {
        let mut de = serde_json::Deserializer::from_str(r#"{"status":{"a":tru}}"#);
        assert!(Within(&pod_reach()).deserialize(&mut de).is_err());
    }

    #[test]
    fn union_covers_both() {
        let a = Reach::keys([("spec", Reach::keys([("a", Reach::All)]))]);
        let b = Reach::keys([
            ("spec", Reach::keys([("b", Reach::All)])),
            ("metadata", Reach::All),
        ]);
        assert_eq!(
            a.union(b),
            Reach::keys([
                ("spec", Reach::keys([("a", Reach::All), ("b", Reach::All)])),
                ("metadata", Reach::All),
            ])
        );
        let each = Reach::Each(Box::new(Reach::keys([("name", Reach::All)])));
        assert_eq!(
            each.clone().union(Reach::keys([("x", Reach::All)])),
            Reach::All
        );
        assert_eq!(each.clone().union(each.clone()), each);
    }
}
