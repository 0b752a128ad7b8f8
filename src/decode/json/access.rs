//! The elements of arrays, the members of objects and unit enum variants, as
//! serde's access traits over the [`Deserializer`].

use serde::de::{self, DeserializeSeed, Unexpected, Visitor};

use super::{Deserializer, Error};
use crate::budget::cost;

/// The elements of an array whose `[` was read: values separated by commas;
/// a comma must be followed by a value. The caller reads the `]`.
pub(super) struct SeqAccess<'a, 'de> {
    de: &'a mut Deserializer<'de>,
    first: bool,
}

impl<'a, 'de> SeqAccess<'a, 'de> {
    pub(super) fn new(de: &'a mut Deserializer<'de>) -> Self {
        SeqAccess { de, first: true }
    }
}

impl<'de> de::SeqAccess<'de> for SeqAccess<'_, 'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        match self.de.peek() {
            Some(b']') => return Ok(None),
            Some(_) if self.first => self.first = false,
            Some(b',') => {
                self.de.pos += 1;
                if let other @ (Some(b']') | None) = self.de.peek() {
                    return Err(self.de.unexpected(other));
                }
            }
            other => return Err(self.de.unexpected(other)),
        }
        self.de.charge(cost::ELEMENT)?;
        seed.deserialize(&mut *self.de).map(Some)
    }
}

/// The members of an object whose `{` was read: `"key": value` separated by
/// commas; a comma must be followed by a member. The caller reads the `}`.
pub(super) struct MapAccess<'a, 'de> {
    de: &'a mut Deserializer<'de>,
    first: bool,
}

impl<'a, 'de> MapAccess<'a, 'de> {
    pub(super) fn new(de: &'a mut Deserializer<'de>) -> Self {
        MapAccess { de, first: true }
    }
}

impl<'de> de::MapAccess<'de> for MapAccess<'_, 'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let mut next = self.de.peek();
        if next == Some(b'}') {
            return Ok(None);
        }
        if !self.first {
            if next != Some(b',') {
                return Err(self.de.unexpected(next));
            }
            self.de.pos += 1;
            next = self.de.peek();
        }
        if next != Some(b'"') {
            return Err(self.de.unexpected(next));
        }
        self.de
            .charge(if self.first { cost::MAP } else { cost::ENTRY })?;
        self.first = false;
        seed.deserialize(MapKey(&mut *self.de)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        match self.de.peek() {
            Some(b':') => self.de.pos += 1,
            other => return Err(self.de.unexpected(other)),
        }
        seed.deserialize(&mut *self.de)
    }
}

/// A member's key, at its opening quote: a string, whatever the visitor asks
/// for. (serde_json also reads numbers and booleans inside the quotes when
/// asked for them; a key visitor of that kind gets a string here and fails.)
struct MapKey<'a, 'de>(&'a mut Deserializer<'de>);

impl<'de> de::Deserializer<'de> for MapKey<'_, 'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.0.visit_string(visitor).map_err(|e| self.0.placed(e))
    }

    /// Keys cannot be null.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_enum(self.0, name, variants, visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier ignored_any
    }
}

/// A unit variant written as a string, at its opening quote.
pub(super) struct UnitVariantAccess<'a, 'de>(pub(super) &'a mut Deserializer<'de>);

impl<'de> de::EnumAccess<'de> for UnitVariantAccess<'_, 'de> {
    type Error = Error;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self), Error> {
        let variant = seed.deserialize(&mut *self.0)?;
        Ok((variant, self))
    }
}

impl<'de> de::VariantAccess<'de> for UnitVariantAccess<'_, 'de> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, _seed: T) -> Result<T::Value, Error> {
        Err(de::Error::invalid_type(
            Unexpected::UnitVariant,
            &"newtype variant",
        ))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, _visitor: V) -> Result<V::Value, Error> {
        Err(de::Error::invalid_type(
            Unexpected::UnitVariant,
            &"tuple variant",
        ))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Error> {
        Err(de::Error::invalid_type(
            Unexpected::UnitVariant,
            &"struct variant",
        ))
    }
}
