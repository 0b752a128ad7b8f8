//! Go's `strconv.Quote` (`fmt`'s `%q` of a string), which OpenStack's
//! resolv.conf script embeds and go-systemd's error messages print.
//!
//! Exact for ASCII. For other characters Go keeps what `unicode.IsPrint`
//! calls printable; Rust has no such table, so scion keeps every character
//! except controls, spaces other than U+0020, the line and paragraph
//! separators and the format characters listed in [`is_go_printable`] —
//! a difference only for unassigned code points, which CloudProfiles do
//! not contain.

/// Go's `strconv.Quote(s)`.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if is_go_printable(c) => out.push(c),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
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
    use super::go_quote;

    #[test]
    fn quotes_like_go() {
        assert_eq!(go_quote(""), "\"\"");
        assert_eq!(
            go_quote("options rotate timeout:1"),
            "\"options rotate timeout:1\""
        );
        assert_eq!(go_quote("a\"b\\c\n\t\u{1}"), "\"a\\\"b\\\\c\\n\\t\\x01\"");
        assert_eq!(go_quote("é\u{a0}\u{2028}"), "\"é\\u00a0\\u2028\"");
    }
}
