//! Checking JSON text without building anything: whitespace, string and
//! number tokens, and whole values.
//!
//! [`value`] accepts the values serde_json's `IgnoredAny` accepts, with one
//! rule more: the JSON grammar (RFC 8259) with strings free of control
//! characters and with valid escapes, where `\uXXXX` needs four hex digits
//! and a surrogate must be a high one directly followed by a low one, as when
//! a string is built (serde_json does not check pairing in text it skips;
//! scion rejects a lone surrogate wherever it sits, see `crate::decode`), and
//! no limit on nesting. It works with an explicit stack, so deep input cannot
//! overflow the call stack.

use super::error::Error;

/// The first index at or after `i` that is not JSON whitespace (space, tab,
/// LF, CR), or `bytes.len()`.
#[inline]
pub(super) fn whitespace(bytes: &[u8], mut i: usize) -> usize {
    if bytes.get(i).is_some_and(|&b| b > b' ') {
        return i;
    }
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(i) {
        i += 1;
    }
    i
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of every byte of `word` (little-endian) that is `"`, `\` or
/// below 0x20. Bytes above the lowest flagged one may be flagged wrongly (a
/// borrow runs upwards); the lowest flagged byte is always right.
#[inline]
fn specials(word: u64) -> u64 {
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let zero_in = |x: u64| x.wrapping_sub(ONES) & !x;
    (zero_in(quote) | zero_in(backslash) | (word.wrapping_sub(ONES * 0x20) & !word)) & HIGH
}

/// The index of the first `"`, `\` or control character (< 0x20) at or after
/// `i`, or `bytes.len()`. Eight bytes at a time; after the first 64 (most
/// strings are shorter), whole 64-byte blocks are passed over first.
#[inline]
pub(super) fn string_special(bytes: &[u8], mut i: usize) -> usize {
    let mut words = 0;
    while let Some(chunk) = bytes.get(i..i + 8) {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        let found = specials(u64::from_le_bytes(word));
        if found != 0 {
            return i + (found.trailing_zeros() / 8) as usize;
        }
        i += 8;
        words += 1;
        if words == 8 {
            i = plain_blocks(bytes, i);
        }
    }
    while let Some(&b) = bytes.get(i) {
        if b == b'"' || b == b'\\' || b < 0x20 {
            return i;
        }
        i += 1;
    }
    i
}

/// The start of the first 64-byte block at or after `i` that holds a `"`, a
/// `\` or a control character (or of the incomplete block at the end).
///
/// The test of a block has no branch per byte, so the compiler turns it into
/// vector compares: long strings (the base64 files of an
/// OperatingSystemConfig, its old object skipped whole) are crossed at
/// several times the speed of eight bytes at a time
/// (`cargo bench --bench mutate -- part_skip_old_object`).
#[inline]
fn plain_blocks(bytes: &[u8], mut i: usize) -> usize {
    while let Some(block) = bytes.get(i..i + 64) {
        let special = block.iter().fold(0u8, |acc, &b| {
            acc | u8::from(b == b'"' || b == b'\\' || b < 0x20)
        });
        if special != 0 {
            break;
        }
        i += 64;
    }
    i
}

/// Skips the rest of a string whose opening quote is just before `i`;
/// returns the index after the closing quote.
#[inline(always)]
pub(super) fn string(bytes: &[u8], mut i: usize) -> Result<usize, Error> {
    loop {
        i = string_special(bytes, i);
        match bytes.get(i) {
            Some(b'"') => return Ok(i + 1),
            Some(b'\\') => i = escape(bytes, i + 1)?,
            Some(_) => return Err(Error::syntax("control character in a string", i)),
            None => return Err(Error::syntax("unterminated string", i)),
        }
    }
}

/// Skips an escape whose backslash is just before `i`; `\uXXXX` needs four
/// hex digits, and a surrogate must pair (see the module doc). Returns the
/// index after the escape.
fn escape(bytes: &[u8], i: usize) -> Result<usize, Error> {
    match bytes.get(i) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(i + 1),
        Some(b'u') => unicode_escape(bytes, i + 1).map(|(_, next)| next),
        _ => Err(Error::syntax("invalid escape", i)),
    }
}

/// Four hex digits at `i`.
fn hex4(bytes: &[u8], i: usize) -> Result<u16, Error> {
    let digits = bytes
        .get(i..i + 4)
        .ok_or_else(|| Error::syntax("unterminated \\u escape", i))?;
    digits.iter().try_fold(0u16, |n, &d| {
        let digit = char::from(d)
            .to_digit(16)
            .ok_or_else(|| Error::syntax("invalid \\u escape", i))?;
        Ok((n << 4) | digit as u16)
    })
}

/// The character of the `\u` escape whose hex digits start at `i` (with the
/// low surrogate's escape after it, for a high surrogate); and the index after.
pub(super) fn unicode_escape(bytes: &[u8], i: usize) -> Result<(char, usize), Error> {
    let high = hex4(bytes, i)?;
    if !(0xD800..=0xDFFF).contains(&high) {
        let c = char::from_u32(u32::from(high)).expect("not a surrogate");
        return Ok((c, i + 4));
    }
    if high >= 0xDC00 || bytes.get(i + 4..i + 6) != Some(b"\\u") {
        return Err(Error::syntax("lone surrogate in a \\u escape", i));
    }
    let low = hex4(bytes, i + 6)?;
    if !(0xDC00..=0xDFFF).contains(&low) {
        return Err(Error::syntax("lone surrogate in a \\u escape", i + 6));
    }
    let code = 0x1_0000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
    let c = char::from_u32(code).expect("a surrogate pair is a character");
    Ok((c, i + 10))
}

/// Skips a number token starting at `i`: `-`? (`0` | [1-9][0-9]*)
/// (`.` [0-9]+)? ([eE] [+-]? [0-9]+)?. Returns its end and whether it is an
/// integer (no fraction, no exponent).
pub(super) fn number(bytes: &[u8], mut i: usize) -> Result<(usize, bool), Error> {
    let digits = |mut i: usize| {
        while let Some(b'0'..=b'9') = bytes.get(i) {
            i += 1;
        }
        i
    };
    if bytes.get(i) == Some(&b'-') {
        i += 1;
    }
    match bytes.get(i) {
        Some(b'0') if matches!(bytes.get(i + 1), Some(b'0'..=b'9')) => {
            return Err(Error::syntax("leading zero in a number", i));
        }
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = digits(i + 1),
        _ => return Err(Error::syntax("invalid number", i)),
    }
    let mut integer = true;
    if bytes.get(i) == Some(&b'.') {
        integer = false;
        let end = digits(i + 1);
        if end == i + 1 {
            return Err(Error::syntax("no digit after the decimal point", end));
        }
        i = end;
    }
    if let Some(b'e' | b'E') = bytes.get(i) {
        integer = false;
        i += 1;
        if let Some(b'+' | b'-') = bytes.get(i) {
            i += 1;
        }
        let end = digits(i);
        if end == i {
            return Err(Error::syntax("no digit in the exponent", end));
        }
        i = end;
    }
    Ok((i, integer))
}

/// Checks that `word` is at `i`; returns the index after it.
#[inline]
pub(super) fn literal(bytes: &[u8], i: usize, word: &'static [u8]) -> Result<usize, Error> {
    match bytes.get(i..i + word.len()) {
        Some(found) if found == word => Ok(i + word.len()),
        _ => Err(Error::syntax("invalid literal", i)),
    }
}

/// The containers a skipped value is inside, one bit each (1 = object): the
/// innermost 64 in `top`, the outer ones in `spilled`, which allocates only
/// beyond a nesting of 64.
struct Nesting {
    top: u64,
    depth: usize,
    spilled: Vec<u64>,
}

impl Nesting {
    fn push(&mut self, object: bool) {
        if self.depth > 0 && self.depth.is_multiple_of(64) {
            self.spilled.push(self.top);
            self.top = 0;
        }
        self.top = (self.top << 1) | u64::from(object);
        self.depth += 1;
    }

    fn pop(&mut self) {
        self.top >>= 1;
        self.depth -= 1;
        if self.depth > 0 && self.depth.is_multiple_of(64) {
            self.top = self.spilled.pop().unwrap_or_default();
        }
    }

    fn in_object(&self) -> bool {
        self.top & 1 == 1
    }
}

/// Skips `"key"` `:` of an object member, starting at the key's opening quote
/// (after whitespace); returns the index after the colon.
#[inline]
fn member_key(bytes: &[u8], i: usize) -> Result<usize, Error> {
    if bytes.get(i) != Some(&b'"') {
        return Err(Error::syntax("expected a string key", i));
    }
    let i = whitespace(bytes, string(bytes, i + 1)?);
    match bytes.get(i) {
        Some(b':') => Ok(i + 1),
        _ => Err(Error::syntax("expected `:`", i)),
    }
}

/// Skips one JSON value starting at `i` (leading whitespace allowed) and
/// returns the index after it.
pub(super) fn value(bytes: &[u8], mut i: usize) -> Result<usize, Error> {
    let mut nesting = Nesting {
        top: 0,
        depth: 0,
        spilled: Vec::new(),
    };
    loop {
        // A value starts at `i`.
        i = whitespace(bytes, i);
        match bytes.get(i) {
            Some(b'"') => i = string(bytes, i + 1)?,
            Some(b'-' | b'0'..=b'9') => i = number(bytes, i)?.0,
            Some(b't') => i = literal(bytes, i, b"true")?,
            Some(b'f') => i = literal(bytes, i, b"false")?,
            Some(b'n') => i = literal(bytes, i, b"null")?,
            Some(&open @ (b'[' | b'{')) => {
                let close = if open == b'[' { b']' } else { b'}' };
                i = whitespace(bytes, i + 1);
                if bytes.get(i) == Some(&close) {
                    i += 1;
                } else {
                    nesting.push(open == b'{');
                    if open == b'{' {
                        i = member_key(bytes, i)?;
                    }
                    continue;
                }
            }
            Some(_) => return Err(Error::syntax("expected a value", i)),
            None => return Err(Error::syntax("unexpected end of text", i)),
        }
        // A value ended before `i`: close containers until one goes on.
        loop {
            if nesting.depth == 0 {
                return Ok(i);
            }
            i = whitespace(bytes, i);
            let object = nesting.in_object();
            match bytes.get(i) {
                Some(b',') if object => {
                    i = member_key(bytes, whitespace(bytes, i + 1))?;
                    break;
                }
                Some(b',') => {
                    i += 1;
                    break;
                }
                Some(b'}') if object => {}
                Some(b']') if !object => {}
                _ => return Err(Error::syntax("expected `,` or the end of a container", i)),
            }
            i += 1;
            nesting.pop();
        }
    }
}
