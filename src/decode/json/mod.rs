//! A serde [`Deserializer`](serde::Deserializer) over JSON text that is
//! already known to be UTF-8, for the fast path of decoding an AdmissionReview.
//!
//! Most of a review is text the decoder skips (`oldObject`, `managedFields`,
//! images, probes, `status`, …). serde_json skips a value byte by byte through
//! its reader; [`skip`] checks the same grammar over the byte slice directly,
//! strings eight bytes at a time (past 64 bytes, whole 64-byte blocks at
//! once), at about twice the speed.
//!
//! The contract, checked against serde_json by the tests:
//! - It never accepts a text serde_json rejects, and what it accepts decodes
//!   to what serde_json decodes (the same `serde_json::Value`, numbers
//!   included: see [`number::visit`]).
//! - Whitespace is space, tab, LF and CR. [`Deserializer::end`] rejects
//!   anything but whitespace after the value.
//! - Strings are borrowed from the text when they have no escape. No string
//!   may hold a lone surrogate escape, built or skipped: serde_json accepts
//!   one in text it skips, scion rejects it wherever it sits (one rule for the
//!   whole body, `crate::decode`).
//! - Nesting is limited as in serde_json: the 128th container opened by a
//!   `deserialize_*` call inside 127 others is an error. Skipped values
//!   (`deserialize_ignored_any`) are not limited, as in serde_json, and are
//!   skipped without recursion.
//! - It rejects a few things serde_json accepts, none of which an
//!   AdmissionReview needs (the caller then falls back to serde_json): an enum
//!   written as a map (`{"Variant":…}`), map keys read as numbers or booleans
//!   (`{"1":…}` into an integer key), integers beyond `u64`/`i64` read as
//!   128-bit integers, serde_json's `RawValue`, and byte strings
//!   (`deserialize_bytes`) holding control characters or lone surrogate
//!   escapes.

mod access;
mod error;
mod number;
mod skip;
mod string;

use serde::de::{self, Visitor};

use crate::budget::{Ticker, cost};
pub use error::Error;

use access::{MapAccess, SeqAccess, UnitVariantAccess};
use string::Str;

/// Reads one JSON value from a `&str`; see the module documentation.
pub struct Deserializer<'de> {
    text: &'de str,
    /// The next byte to read.
    pos: usize,
    /// How many more containers may be opened (serde_json's limit).
    remaining_depth: u8,
    /// What the values read so far cost, against the request's budget
    /// ([`crate::budget`]): a value built from the text is charged where it
    /// is read, a skipped one is free.
    ticker: Ticker,
}

impl<'de> Deserializer<'de> {
    /// A reader over `text`, at its start.
    pub fn new(text: &'de str) -> Self {
        Deserializer {
            text,
            pos: 0,
            remaining_depth: 128,
            ticker: Ticker::new(),
        }
    }
}

impl<'de> Deserializer<'de> {
    /// Checks that only whitespace follows the value read (and charges what
    /// is left to charge).
    pub fn end(&mut self) -> Result<(), Error> {
        self.ticker.flush().map_err(Error::exhausted)?;
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(Error::syntax("trailing characters", self.pos)),
        }
    }

    fn bytes(&self) -> &'de [u8] {
        self.text.as_bytes()
    }

    /// The next byte after whitespace, which is then at `self.pos`.
    #[inline]
    fn peek(&mut self) -> Option<u8> {
        self.pos = skip::whitespace(self.bytes(), self.pos);
        self.bytes().get(self.pos).copied()
    }

    #[cold]
    fn unexpected(&self, at: Option<u8>) -> Error {
        match at {
            Some(_) => Error::syntax("unexpected token", self.pos),
            None => Error::syntax("unexpected end of text", self.pos),
        }
    }

    /// Reads `word` at `self.pos`.
    #[inline]
    fn literal(&mut self, word: &'static [u8]) -> Result<(), Error> {
        self.pos = skip::literal(self.bytes(), self.pos, word)?;
        Ok(())
    }

    /// Reads the string whose opening quote is at `self.pos`.
    #[inline]
    fn string(&mut self) -> Result<Str<'de>, Error> {
        let (s, next) = string::parse(self.text, self.pos + 1)?;
        self.charge(next - self.pos + cost::STRING)?;
        self.pos = next;
        Ok(s)
    }

    /// Counts `bytes` built from the text against the budget.
    #[inline]
    fn charge(&mut self, bytes: usize) -> Result<(), Error> {
        self.ticker.step(bytes).map_err(Error::exhausted)
    }

    /// Visits the string whose opening quote is at `self.pos`.
    #[inline]
    fn visit_string<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, Error> {
        match self.string()? {
            Str::Borrowed(s) => visitor.visit_borrowed_str(s),
            Str::Owned(s) => visitor.visit_string(s),
        }
    }

    /// Visits the number that starts at `self.pos`.
    #[inline]
    fn visit_number<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, Error> {
        let start = self.pos;
        let (end, integer) = skip::number(self.bytes(), start)?;
        self.pos = end;
        number::visit(&self.text[start..end], integer, visitor)
    }

    /// Visits the array whose `[` is at `self.pos`, within the nesting limit.
    fn visit_array<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, Error> {
        self.enter()?;
        let value = visitor.visit_seq(SeqAccess::new(self));
        self.leave(value, b']')
    }

    /// Visits the object whose `{` is at `self.pos`, within the nesting limit.
    fn visit_object<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, Error> {
        self.enter()?;
        let value = visitor.visit_map(MapAccess::new(self));
        self.leave(value, b'}')
    }

    /// Closes the container opened by [`Self::enter`] once its content was
    /// visited: the `close` byte must follow.
    fn leave<T>(&mut self, value: Result<T, Error>, close: u8) -> Result<T, Error> {
        self.remaining_depth += 1;
        let value = value?;
        match self.peek() {
            Some(b) if b == close => {
                self.pos += 1;
                Ok(value)
            }
            other => Err(self.unexpected(other)),
        }
    }

    /// Opens the container at `self.pos` if the nesting limit allows.
    fn enter(&mut self) -> Result<(), Error> {
        self.remaining_depth -= 1;
        if self.remaining_depth == 0 {
            self.remaining_depth += 1;
            return Err(Error::syntax("nested too deeply", self.pos));
        }
        self.pos += 1;
        Ok(())
    }

    /// Places an error raised while reading at the current position.
    #[cold]
    fn placed(&self, error: Error) -> Error {
        error.at(self.pos)
    }
}

/// Every numeric `deserialize_*` method: a number token, nothing else.
macro_rules! numbers {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            self.deserialize_number(visitor)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for &mut Deserializer<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let value = match self.peek() {
            Some(b'"') => self.visit_string(visitor),
            Some(b'-' | b'0'..=b'9') => self.visit_number(visitor),
            Some(b'{') => self.visit_object(visitor),
            Some(b'[') => self.visit_array(visitor),
            Some(b't') => self
                .literal(b"true")
                .and_then(|()| visitor.visit_bool(true)),
            Some(b'f') => self
                .literal(b"false")
                .and_then(|()| visitor.visit_bool(false)),
            Some(b'n') => self.literal(b"null").and_then(|()| visitor.visit_unit()),
            other => Err(self.unexpected(other)),
        };
        value.map_err(|e| self.placed(e))
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let value = match self.peek() {
            Some(b't') => self
                .literal(b"true")
                .and_then(|()| visitor.visit_bool(true)),
            Some(b'f') => self
                .literal(b"false")
                .and_then(|()| visitor.visit_bool(false)),
            other => Err(self.unexpected(other)),
        };
        value.map_err(|e| self.placed(e))
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let value = match self.peek() {
            Some(b'"') => self.visit_string(visitor),
            other => Err(self.unexpected(other)),
        };
        value.map_err(|e| self.placed(e))
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    /// A string, checked as any other (serde_json allows control characters
    /// and lone surrogate escapes in byte strings), or an array.
    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let value = match self.peek() {
            Some(b'"') => match self.string() {
                Ok(Str::Borrowed(s)) => visitor.visit_borrowed_bytes(s.as_bytes()),
                Ok(Str::Owned(s)) => visitor.visit_byte_buf(s.into_bytes()),
                Err(e) => Err(e),
            },
            Some(b'[') => self.visit_array(visitor),
            other => Err(self.unexpected(other)),
        };
        value.map_err(|e| self.placed(e))
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_bytes(visitor)
    }

    /// `null` is none; anything else is some, read by the visitor.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.peek() {
            Some(b'n') => {
                self.literal(b"null")?;
                visitor.visit_none()
            }
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let value = match self.peek() {
            Some(b'n') => self.literal(b"null").and_then(|()| visitor.visit_unit()),
            other => Err(self.unexpected(other)),
        };
        value.map_err(|e| self.placed(e))
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let value = match self.peek() {
            Some(b'[') => self.visit_array(visitor),
            other => Err(self.unexpected(other)),
        };
        value.map_err(|e| self.placed(e))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let value = match self.peek() {
            Some(b'{') => self.visit_object(visitor),
            other => Err(self.unexpected(other)),
        };
        value.map_err(|e| self.placed(e))
    }

    /// An object, or an array of the fields in order (as serde_json).
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let value = match self.peek() {
            Some(b'{') => self.visit_object(visitor),
            Some(b'[') => self.visit_array(visitor),
            other => Err(self.unexpected(other)),
        };
        value.map_err(|e| self.placed(e))
    }

    /// A unit variant written as a string; the map form is not supported.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.peek() {
            Some(b'"') => visitor.visit_enum(UnitVariantAccess(self)),
            other => Err(self.unexpected(other)),
        }
    }

    /// Skips the value, checked, without building anything.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.pos = skip::value(self.bytes(), self.pos)?;
        visitor.visit_unit()
    }

    numbers! {
        deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128
        deserialize_f32 deserialize_f64
    }
}

impl<'de> Deserializer<'de> {
    /// Every numeric `deserialize_*`: a number token, nothing else.
    fn deserialize_number<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, Error> {
        let value = match self.peek() {
            Some(b'-' | b'0'..=b'9') => self.visit_number(visitor),
            other => Err(self.unexpected(other)),
        };
        value.map_err(|e| self.placed(e))
    }
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
