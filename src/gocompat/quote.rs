//! Go's string quoting, written once: `strconv.Quote` (`fmt`'s `%q`, which
//! Helm's `quote` and go-systemd's error messages use, and which OpenStack's
//! resolv.conf script embeds) and `encoding/json`'s string encoding (HTML
//! escaping on, the default of `json.Marshal`). Both walk the string the same
//! way and share the escapes of `"`, `\`, newline, carriage return and tab;
//! they differ in how they write other characters ([`Style`]).
//!
//! `strconv.Quote` is exact for ASCII. For other characters Go keeps what
//! `unicode.IsPrint` calls printable; Rust has no such table, so scion keeps
//! every character except controls, spaces other than U+0020, the line and
//! paragraph separators and the format characters listed in
//! [`is_go_printable`] — a difference only for unassigned code points, which
//! CloudProfiles do not contain.

use std::fmt::Write as _;

/// How a quoting writes the characters the two styles do not share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// `strconv.Quote`: `\a \b \f \v`, `\xNN` below U+0080, `\uNNNN`, `\UNNNNNNNN`.
    Strconv,
    /// `encoding/json` (Go 1.22 and later): `\b`, `\f`, `\u00NN` for the
    /// other controls, and `<`, `>`, `&`, U+2028,
    /// U+2029 as `\u003c`, `\u003e`, `\u0026`, `\u2028`, `\u2029`.
    Json,
}

/// Append `s` quoted in `style` to `out`.
fn quote_into(out: &mut String, s: &str, style: Style) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => match style {
                Style::Json => match c {
                    '\u{8}' => out.push_str("\\b"),
                    '\u{c}' => out.push_str("\\f"),
                    '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                        let _ = write!(out, "\\u{:04x}", c as u32);
                    }
                    c if (c as u32) < 0x20 => {
                        let _ = write!(out, "\\u{:04x}", c as u32);
                    }
                    c => out.push(c),
                },
                Style::Strconv => match c {
                    '\u{7}' => out.push_str("\\a"),
                    '\u{8}' => out.push_str("\\b"),
                    '\u{c}' => out.push_str("\\f"),
                    '\u{b}' => out.push_str("\\v"),
                    c if is_go_printable(c) => out.push(c),
                    c if (c as u32) < 0x80 => {
                        let _ = write!(out, "\\x{:02x}", c as u32);
                    }
                    c if (c as u32) < 0x10000 => {
                        let _ = write!(out, "\\u{:04x}", c as u32);
                    }
                    c => {
                        let _ = write!(out, "\\U{:08x}", c as u32);
                    }
                },
            },
        }
    }
    out.push('"');
}

/// Go's `strconv.Quote(s)` (`%q`; Helm's `quote`).
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    quote_into(&mut out, s, Style::Strconv);
    out
}

/// At most this many bytes of an input are quoted in a message.
pub const EXCERPT_BYTES: usize = 64;

/// An input quoted for a message: Go's `%q` of `s`, or of its first
/// [`EXCERPT_BYTES`] (cut at a character boundary) followed by `...` and the
/// length, so a message stays short whatever it quotes (issue 27: a 5 MB
/// value made a 5 MB denial). Never for a Secret's value: those are not
/// quoted at all.
pub fn excerpt(s: &str) -> String {
    if s.len() <= EXCERPT_BYTES {
        return go_quote(s);
    }
    let mut cut = EXCERPT_BYTES;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}... ({} bytes)", go_quote(&s[..cut]), s.len())
}

/// An input cut for a message, unquoted: `s`, or its first
/// [`EXCERPT_BYTES`] followed by `...` and the length (for messages that
/// Go words with the raw text, such as yaml.v2's "cannot decode").
pub fn cut(s: &str) -> std::borrow::Cow<'_, str> {
    if s.len() <= EXCERPT_BYTES {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut at = EXCERPT_BYTES;
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    std::borrow::Cow::Owned(format!("{}... ({} bytes)", &s[..at], s.len()))
}

/// A string as Go's `json.Marshal` writes it (HTML escaping on), quotes included.
pub fn json_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    quote_into(&mut out, s, Style::Json);
    out
}

/// Append `s` as Go's `json.Marshal` writes it.
pub fn push_json_quoted(out: &mut String, s: &str) {
    quote_into(out, s, Style::Json);
}

/// Go's `strconv.IsPrint`, exactly for ASCII, approximately above.
fn is_go_printable(c: char) -> bool {
    if c.is_ascii() {
        return (' '..='~').contains(&c);
    }
    !(c.is_control()
        || c.is_whitespace()
        || matches!(
            c,
            '\u{ad}'
                | '\u{600}'..='\u{605}'
                | '\u{61c}'
                | '\u{6dd}'
                | '\u{70f}'
                | '\u{180e}'
                | '\u{200b}'..='\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{206f}'
                | '\u{feff}'
                | '\u{fff9}'..='\u{fffb}'
                | '\u{fffe}'..='\u{ffff}'
        ))
}

#[cfg(test)]
mod tests {
    use super::{EXCERPT_BYTES, excerpt, go_quote, json_quote};

    #[test]
    fn excerpts_are_short_whatever_they_quote() {
        assert_eq!(excerpt("gzip"), "\"gzip\"");
        let long = "é".repeat(3_000_000);
        let quoted = excerpt(&long);
        assert!(quoted.len() < 2 * EXCERPT_BYTES, "{quoted}");
        assert!(quoted.ends_with("... (6000000 bytes)"), "{quoted}");
    }

    #[test]
    fn quotes_like_strconv() {
        assert_eq!(go_quote(""), "\"\"");
        assert_eq!(
            go_quote("options rotate timeout:1"),
            "\"options rotate timeout:1\""
        );
        assert_eq!(go_quote("a\"b\\c\n\t\u{1}"), "\"a\\\"b\\\\c\\n\\t\\x01\"");
        assert_eq!(go_quote("é\u{a0}\u{2028}"), "\"é\\u00a0\\u2028\"");
        assert_eq!(go_quote("<&>\u{7}"), "\"<&>\\a\"");
    }

    #[test]
    fn html_characters_are_escaped_like_encoding_json() {
        assert_eq!(
            json_quote("<a href=\"x\">&\u{2028}\u{1}é</a>"),
            r#""\u003ca href=\"x\"\u003e\u0026\u2028\u0001é\u003c/a\u003e""#
        );
        assert_eq!(json_quote("a<b"), r#""a\u003cb""#);
        // As Go 1.26's json.Marshal writes it (`\b` and `\f` since Go 1.22).
        assert_eq!(
            json_quote("a\u{8}b\u{c}c\u{1}<\u{7f}\t"),
            "\"a\\bb\\fc\\u0001\\u003c\u{7f}\\t\""
        );
    }
}
