//! The error of the JSON reader: what went wrong and at which byte.

use std::fmt;

/// Why the text was not accepted: a syntax error of the JSON text, or an
/// error a visitor raised (wrong type, missing field, …). Boxed, so that a
/// `Result` of the reader stays small; errors are the rare path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(Box<Inner>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct Inner {
    /// Byte offset into the text, if known. Errors raised by visitors learn it
    /// when they pass back through the reader.
    offset: Option<usize>,
    message: Message,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Message {
    Syntax(&'static str),
    Custom(String),
    /// The request's budget stopped the reading (see [`crate::budget`]).
    Exhausted(crate::budget::Exhausted),
}

impl Error {
    /// A syntax error at byte `offset`.
    #[cold]
    pub(super) fn syntax(what: &'static str, offset: usize) -> Error {
        Error(Box::new(Inner {
            offset: Some(offset),
            message: Message::Syntax(what),
        }))
    }

    /// The budget stopped the reading.
    #[cold]
    pub(super) fn exhausted(why: crate::budget::Exhausted) -> Error {
        Error(Box::new(Inner {
            offset: None,
            message: Message::Exhausted(why),
        }))
    }

    /// Whether the budget stopped the reading, and why.
    pub fn budget(&self) -> Option<crate::budget::Exhausted> {
        match self.0.message {
            Message::Exhausted(why) => Some(why),
            _ => None,
        }
    }

    /// This error, placed at `offset` if it does not know its place yet.
    #[cold]
    pub(super) fn at(mut self, offset: usize) -> Error {
        self.0.offset.get_or_insert(offset);
        self
    }

    /// The byte offset the error refers to, if known.
    pub fn offset(&self) -> Option<usize> {
        self.0.offset
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0.message {
            Message::Syntax(what) => f.write_str(what)?,
            Message::Custom(message) => f.write_str(message)?,
            Message::Exhausted(why) => return write!(f, "{why}"),
        }
        match self.0.offset {
            Some(offset) => write!(f, " at byte {offset}"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for Error {}

impl serde::de::Error for Error {
    #[cold]
    fn custom<T: fmt::Display>(message: T) -> Error {
        Error(Box::new(Inner {
            offset: None,
            message: Message::Custom(message.to_string()),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::Error as _;

    #[test]
    fn the_first_known_offset_stays() {
        let error = Error::custom("missing field `uid`").at(7).at(9);
        assert_eq!(error.offset(), Some(7));
        assert_eq!(error.to_string(), "missing field `uid` at byte 7");
        let syntax = Error::syntax("expected `:`", 3).at(5);
        assert_eq!(syntax.to_string(), "expected `:` at byte 3");
    }
}
