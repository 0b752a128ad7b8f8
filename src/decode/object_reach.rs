//! The reach of request objects, chosen per object once its kind and name are
//! known while decoding.

use std::fmt;

use serde::Deserialize;
use serde::de::value::SeqAccessDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::reach::{Reach, Within, scalar_values};
use crate::admission::GroupVersionKind;

static WHOLE: Reach = Reach::All;

/// The reach of request objects, which depends on what the object is: the
/// reach of a target is known once the request's `kind` and the object's
/// `metadata.name` are, and until then the union of all of them applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectReach {
    /// What every object needs (at least `metadata.name`).
    common: Reach,
    /// Per (group, version, kind, name): `common` and what the target needs.
    targets: Vec<(Identity, Reach)>,
    /// The union of `common` and every target's reach.
    any: Reach,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    group: String,
    version: String,
    kind: String,
    name: String,
}

impl Identity {
    fn is(&self, kind: &GroupVersionKind, name: &str) -> bool {
        (self.name == name || self.name == crate::profile::ANY_NAME)
            && self.kind == kind.kind
            && self.group == kind.group
            && self.version == kind.version
    }
}

impl ObjectReach {
    /// Every object decoded whole.
    pub const ALL: ObjectReach = ObjectReach {
        common: Reach::All,
        targets: Vec::new(),
        any: Reach::All,
    };

    /// `common` for every object, plus per `(group, version, kind, name)` what
    /// that object needs. `common` must reach `metadata.name`.
    pub fn new<'a>(
        common: Reach,
        targets: impl IntoIterator<Item = ((&'a str, &'a str, &'a str, &'a str), Reach)>,
    ) -> ObjectReach {
        let mut any = common.clone();
        let targets: Vec<(Identity, Reach)> = targets
            .into_iter()
            .map(|((group, version, kind, name), reach)| {
                let reach = common.clone().union(reach);
                any = std::mem::replace(&mut any, Reach::All).union(reach.clone());
                let identity = Identity {
                    group: group.into(),
                    version: version.into(),
                    kind: kind.into(),
                    name: name.into(),
                };
                (identity, reach)
            })
            .collect();
        ObjectReach {
            common,
            targets,
            any,
        }
    }

    /// The reach of an object of `kind` named `name`.
    pub fn of(&self, kind: &GroupVersionKind, name: &str) -> &Reach {
        self.targets
            .iter()
            .find(|(identity, _)| identity.is(kind, name))
            .map_or(&self.common, |(_, reach)| reach)
    }

    /// `object` cut down to its reach, exactly.
    pub fn prune(&self, kind: &GroupVersionKind, object: &Value) -> Value {
        let name = object
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        self.of(kind, name).prune(object)
    }
}

/// Decodes a request object: `metadata` first within the union of all
/// reaches, every other top-level field within the reach of the object once its
/// kind and name are known, or within the union before. Decoding within a
/// larger reach is always correct, only slower.
///
/// A second `metadata` field is an error: its name could differ from the one
/// that chose the reach. The caller then falls back to decoding the object
/// whole and pruning it with [`ObjectReach::prune`].
pub struct ObjectSeed<'r> {
    pub reach: &'r ObjectReach,
    /// The request's `kind`, if it came before the object.
    pub kind: Option<&'r GroupVersionKind>,
}

impl<'de> DeserializeSeed<'de> for ObjectSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        if matches!(self.reach.any, Reach::All) {
            return Value::deserialize(deserializer);
        }
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ObjectSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    scalar_values!();

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Value, A::Error> {
        Value::deserialize(SeqAccessDeserializer::new(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        let mut target: Option<&Reach> = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "metadata" {
                if out.contains_key("metadata") {
                    return Err(de::Error::duplicate_field("metadata"));
                }
                // A reach that leaves out `metadata` still gets it whole:
                // dispatch needs the name.
                let reach = self.reach.any.key("metadata").unwrap_or(&WHOLE);
                let metadata = map.next_value_seed(Within(reach))?;
                let name = metadata.get("name").and_then(Value::as_str);
                target = self
                    .kind
                    .map(|kind| self.reach.of(kind, name.unwrap_or_default()));
                out.insert(key, metadata);
                continue;
            }
            match target.unwrap_or(&self.reach.any).key(&key) {
                Some(reach) => {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> GroupVersionKind {
        GroupVersionKind {
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
        }
    }

    fn decoded(reach: &ObjectReach, kind: Option<&GroupVersionKind>, text: &str) -> Value {
        let mut de = serde_json::Deserializer::from_str(text);
        let value = ObjectSeed { reach, kind }.deserialize(&mut de).unwrap();
        de.end().unwrap();
        value
    }

    #[test]
    fn the_reach_follows_kind_and_name_and_is_the_union_before() {
        let common = Reach::keys([("metadata", Reach::keys([("name", Reach::All)]))]);
        let reach = ObjectReach::new(
            common,
            [
                (
                    ("apps", "v1", "Deployment", "a"),
                    Reach::keys([("x", Reach::All)]),
                ),
                (
                    ("apps", "v1", "Deployment", "b"),
                    Reach::keys([("y", Reach::All)]),
                ),
            ],
        );
        let kind = deployment();
        let a = r#"{"metadata":{"name":"a","uid":"1"},"x":1,"y":2,"z":3}"#;
        assert_eq!(
            decoded(&reach, Some(&kind), a),
            json!({"metadata": {"name": "a"}, "x": 1})
        );
        // Fields before metadata, or no kind yet: the union of a and b.
        let late = r#"{"x":1,"y":2,"z":3,"metadata":{"name":"a"}}"#;
        assert_eq!(
            decoded(&reach, Some(&kind), late),
            json!({"metadata": {"name": "a"}, "x": 1, "y": 2})
        );
        assert_eq!(
            decoded(&reach, None, a),
            json!({"metadata": {"name": "a"}, "x": 1, "y": 2})
        );
        // Not a target: metadata only.
        let other = r#"{"metadata":{"name":"c"},"x":1}"#;
        assert_eq!(
            decoded(&reach, Some(&kind), other),
            json!({"metadata": {"name": "c"}})
        );
    }

    #[test]
    fn a_target_reached_whole_keeps_every_field() {
        let common = Reach::keys([("metadata", Reach::keys([("name", Reach::All)]))]);
        let reach = ObjectReach::new(common, [(("apps", "v1", "Deployment", "a"), Reach::All)]);
        let text = r#"{"metadata":{"name":"a","uid":"1"},"x":{"deep":[1]}}"#;
        let whole: Value = serde_json::from_str(text).unwrap();
        assert_eq!(decoded(&reach, Some(&deployment()), text), whole);
    }
}
