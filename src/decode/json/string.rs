//! Decoding a JSON string token: borrowed from the text when it has no
//! escape, unescaped into a `String` otherwise.

use super::error::Error;
use super::skip::{string_special, unicode_escape};

/// A decoded string.
pub(super) enum Str<'de> {
    /// The text between the quotes, which had no escape.
    Borrowed(&'de str),
    /// The unescaped content.
    Owned(String),
}

/// Decodes the string whose opening quote is just before `i`; returns it and
/// the index after the closing quote.
///
/// As serde_json when it builds a string: control characters (< 0x20) are
/// errors; the escapes are `\" \\ \/ \b \f \n \r \t \uXXXX`; a `\u` escape of a
/// UTF-16 surrogate must be a high surrogate directly followed by a `\u`
/// escape of a low one (the pair is one character), anything else (a lone
/// high or low surrogate) is an error.
#[inline]
pub(super) fn parse(text: &str, i: usize) -> Result<(Str<'_>, usize), Error> {
    let bytes = text.as_bytes();
    let end = string_special(bytes, i);
    match bytes.get(end) {
        // `i` and `end` are next to ASCII bytes, so on character boundaries.
        Some(b'"') => Ok((Str::Borrowed(&text[i..end]), end + 1)),
        _ => unescape(text, i, end),
    }
}

/// The slow path of [`parse`]: the first special byte at `end` is not the
/// closing quote.
#[cold]
fn unescape(text: &str, start: usize, mut end: usize) -> Result<(Str<'_>, usize), Error> {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(end - start + 16);
    let mut i = start;
    loop {
        out.push_str(&text[i..end]);
        match bytes.get(end) {
            Some(b'"') => return Ok((Str::Owned(out), end + 1)),
            Some(b'\\') => {
                let escaped = bytes.get(end + 1).copied();
                i = end + 2;
                let simple = match escaped {
                    Some(b'"') => '"',
                    Some(b'\\') => '\\',
                    Some(b'/') => '/',
                    Some(b'b') => '\u{8}',
                    Some(b'f') => '\u{c}',
                    Some(b'n') => '\n',
                    Some(b'r') => '\r',
                    Some(b't') => '\t',
                    Some(b'u') => {
                        let (c, next) = unicode_escape(bytes, end + 2)?;
                        i = next;
                        c
                    }
                    _ => return Err(Error::syntax("invalid escape", end + 1)),
                };
                out.push(simple);
            }
            Some(_) => return Err(Error::syntax("control character in a string", end)),
            None => return Err(Error::syntax("unterminated string", end)),
        }
        end = string_special(bytes, i);
    }
}
