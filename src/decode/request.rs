//! Decoding an AdmissionReview's `request` in one pass over the body, with the
//! object decoded only within a [`Reach`] and `oldObject` skipped.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

use super::object_reach::{ObjectReach, ObjectSeed};
use crate::admission::{AdmissionRequest, GroupVersionKind, Operation, ReviewVersion};

/// Decodes an AdmissionReview `request` with its object cut down to its reach
/// (see [`ObjectSeed`]).
/// Field rules are those of the API: `uid`, `kind` and `operation` are
/// required, a field may appear once, unknown fields are ignored, `null` is an
/// absent `object`/`oldObject`/`dryRun`.
#[derive(Clone, Copy)]
pub struct RequestSeed<'r>(pub &'r ObjectReach);

impl<'de> DeserializeSeed<'de> for RequestSeed<'_> {
    type Value = AdmissionRequest;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Deserialize<'de> for AdmissionRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        static ALL: ObjectReach = ObjectReach::ALL;
        RequestSeed(&ALL).deserialize(deserializer)
    }
}

/// The fields scion reads; everything else in a request is skipped.
enum Field {
    Uid,
    Kind,
    Name,
    Namespace,
    Operation,
    Object,
    OldObject,
    DryRun,
    Other,
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldVisitor;
        impl Visitor<'_> for FieldVisitor {
            type Value = Field;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Field, E> {
                Ok(match key {
                    "uid" => Field::Uid,
                    "kind" => Field::Kind,
                    "name" => Field::Name,
                    "namespace" => Field::Namespace,
                    "operation" => Field::Operation,
                    "object" => Field::Object,
                    "oldObject" => Field::OldObject,
                    "dryRun" => Field::DryRun,
                    _ => Field::Other,
                })
            }
        }
        deserializer.deserialize_identifier(FieldVisitor)
    }
}

/// Set a field once; a second occurrence is an error, as with derived decoders.
fn once<T, E: de::Error>(slot: &mut Option<T>, value: T, name: &'static str) -> Result<(), E> {
    if slot.is_some() {
        return Err(E::duplicate_field(name));
    }
    *slot = Some(value);
    Ok(())
}

impl<'de> Visitor<'de> for RequestSeed<'_> {
    type Value = AdmissionRequest;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an AdmissionReview request")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AdmissionRequest, A::Error> {
        let (mut uid, mut kind, mut name, mut namespace, mut operation) =
            (None, None, None, None, None);
        let (mut object, mut old_object, mut dry_run) = (None, None, None);
        let mut kept_old = None;
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Uid => once(&mut uid, map.next_value::<String>()?, "uid")?,
                Field::Kind => once(&mut kind, map.next_value::<GroupVersionKind>()?, "kind")?,
                Field::Name => once(&mut name, map.next_value::<String>()?, "name")?,
                Field::Namespace => once(&mut namespace, map.next_value::<String>()?, "namespace")?,
                Field::Operation => {
                    once(&mut operation, map.next_value::<Operation>()?, "operation")?
                }
                Field::Object => {
                    let seed = Optional(ObjectSeed {
                        reach: self.0,
                        kind: kind.as_ref(),
                    });
                    once(&mut object, map.next_value_seed(seed)?, "object")?
                }
                Field::OldObject if kind.as_ref().is_some_and(keeps_old_object) => {
                    let old = map.next_value::<Option<serde_json::Value>>()?;
                    once(&mut old_object, old.is_some(), "oldObject")?;
                    kept_old = old;
                }
                Field::OldObject => {
                    let present = map.next_value::<Option<IgnoredAny>>()?.is_some();
                    once(&mut old_object, present, "oldObject")?
                }
                Field::DryRun => once(&mut dry_run, map.next_value::<Option<bool>>()?, "dryRun")?,
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(AdmissionRequest {
            uid: uid.ok_or_else(|| de::Error::missing_field("uid"))?,
            kind: kind.ok_or_else(|| de::Error::missing_field("kind"))?,
            name: name.unwrap_or_default(),
            namespace: namespace.unwrap_or_default(),
            operation: operation.ok_or_else(|| de::Error::missing_field("operation"))?,
            object: object.flatten(),
            has_old_object: old_object.unwrap_or(false),
            old_object: kept_old,
            dry_run: dry_run.flatten(),
            version: ReviewVersion::V1,
        })
    }
}

/// Whether `oldObject` of this kind is kept: an Etcd (small), whose AWS rule
/// reads the old storage class and capacity.
fn keeps_old_object(kind: &GroupVersionKind) -> bool {
    let etcd = crate::gardener::ETCD;
    kind.group == etcd.group && kind.version == etcd.version && kind.kind == etcd.kind
}

/// `null` or an object decoded within its reach.
struct Optional<'r>(ObjectSeed<'r>);

impl<'de> DeserializeSeed<'de> for Optional<'_> {
    type Value = Option<serde_json::Value>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for Optional<'_> {
    type Value = Option<serde_json::Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object or null")
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(deserializer).map(Some)
    }
}

/// Decodes a whole AdmissionReview (`apiVersion`, `kind`, `request`) in one
/// pass. `None` fields are absent; checking them is the caller's business.
pub(super) struct ReviewSeed<'r>(pub &'r ObjectReach);

pub(super) struct Review {
    pub api_version: Option<String>,
    pub kind: Option<String>,
    pub request: Option<AdmissionRequest>,
}

impl<'de> DeserializeSeed<'de> for ReviewSeed<'_> {
    type Value = Review;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Review, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ReviewSeed<'_> {
    type Value = Review;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an AdmissionReview")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Review, A::Error> {
        let mut review = Review {
            api_version: None,
            kind: None,
            request: None,
        };
        while let Some(key) = map.next_key::<ReviewField>()? {
            match key {
                ReviewField::ApiVersion => {
                    once(&mut review.api_version, map.next_value()?, "apiVersion")?
                }
                ReviewField::Kind => once(&mut review.kind, map.next_value()?, "kind")?,
                ReviewField::Request => once(
                    &mut review.request,
                    map.next_value_seed(RequestSeed(self.0))?,
                    "request",
                )?,
                ReviewField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(review)
    }
}

enum ReviewField {
    ApiVersion,
    Kind,
    Request,
    Other,
}

impl<'de> Deserialize<'de> for ReviewField {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ReviewField;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<ReviewField, E> {
                Ok(match key {
                    "apiVersion" => ReviewField::ApiVersion,
                    "kind" => ReviewField::Kind,
                    "request" => ReviewField::Request,
                    _ => ReviewField::Other,
                })
            }
        }
        deserializer.deserialize_identifier(V)
    }
}
