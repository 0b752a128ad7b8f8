//! The provider settings in `/etc/sysctl.d/99-k8s-general.conf`, as the AWS
//! and GCP ensurers write them: the Go RE2 expression
//! `<key>[[:space:]]*=[[:space:]]*([[:alnum:]]+)` (the key's dots unescaped,
//! so each matches any character but a newline) — every match replaced by
//! `<key> = <value>`; no match: `\n`, the comment lines and `<key> = <value>`
//! appended without a final newline.
//!
//! The expression is matched by hand: its parts are disjoint classes, so
//! leftmost-first matching has exactly one way to match at each position.

/// `[[:space:]]`: tab, newline, vertical tab, form feed, carriage return, space.
fn is_posix_space(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ')
}

/// The byte length of a match of the expression at the start of `s`.
fn match_at(s: &str, key: &str) -> Option<usize> {
    let mut chars = s.char_indices().peekable();
    for k in key.chars() {
        let (_, c) = chars.next()?;
        let ok = if k == '.' { c != '\n' } else { c == k };
        if !ok {
            return None;
        }
    }
    while chars.next_if(|(_, c)| is_posix_space(*c)).is_some() {}
    chars.next_if(|(_, c)| *c == '=')?;
    while chars.next_if(|(_, c)| is_posix_space(*c)).is_some() {}
    chars.next_if(|(_, c)| c.is_ascii_alphanumeric())?;
    while chars.next_if(|(_, c)| c.is_ascii_alphanumeric()).is_some() {}
    Some(chars.peek().map_or(s.len(), |(i, _)| *i))
}

/// Ensure `key = value`: replace every match, or append the block.
pub fn ensure(text: &str, key: &str, value: &str, comments: &[String]) -> String {
    let setting = format!("{key} = {value}");
    let mut out = String::with_capacity(text.len() + setting.len());
    let mut found = false;
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(len) = match_at(rest, key) {
            out.push_str(&setting);
            rest = &rest[len..];
            found = true;
            continue;
        }
        // No match here: copy up to the next place one can start (a
        // match starts with the key's first character unless that is a
        // dot); one character at a time, this was 2 % of an OSC review.
        let step = rest.chars().next().map_or(1, char::len_utf8);
        let skip = match key.chars().next() {
            Some(first) if first != '.' => {
                rest[step..].find(first).map_or(rest.len(), |i| step + i)
            }
            _ => step,
        };
        out.push_str(&rest[..skip]);
        rest = &rest[skip..];
    }
    if found {
        return out;
    }
    let mut out = text.to_string();
    out.push('\n');
    for comment in comments {
        out.push_str("# ");
        out.push_str(comment);
        out.push('\n');
    }
    out.push_str(&setting);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "net.ipv4.neigh.default.gc_thresh1";

    fn aws(text: &str) -> String {
        ensure(
            text,
            KEY,
            "0",
            &[
                "AWS specific settings".into(),
                "See https://github.com/kubernetes/kubernetes/issues/23395".into(),
            ],
        )
    }

    #[test]
    fn replaces_every_match_or_appends() {
        assert_eq!(
            aws("a = 1\n"),
            "a = 1\n\n# AWS specific settings\n# See https://github.com/kubernetes/kubernetes/issues/23395\nnet.ipv4.neigh.default.gc_thresh1 = 0"
        );
        assert_eq!(
            aws(
                "x\nnet.ipv4.neigh.default.gc_thresh1=128\ny\nnet.ipv4.neigh.default.gc_thresh1 \t=  7 # c\n"
            ),
            "x\nnet.ipv4.neigh.default.gc_thresh1 = 0\ny\nnet.ipv4.neigh.default.gc_thresh1 = 0 # c\n"
        );
        // Unescaped dots match any character; a non-alphanumeric value does
        // not match, so the block is appended and the key ends up twice.
        assert_eq!(
            aws("netXipv4.neigh.default.gc_thresh1 = 5"),
            "net.ipv4.neigh.default.gc_thresh1 = 0"
        );
        assert!(aws("net.ipv4.neigh.default.gc_thresh1 = -1").ends_with("gc_thresh1 = 0"));
        assert!(
            aws("net.ipv4.neigh.default.gc_thresh1 = -1")
                .starts_with("net.ipv4.neigh.default.gc_thresh1 = -1\n#")
        );
        // Mutating twice equals mutating once.
        let once = aws("a = 1\n");
        assert_eq!(aws(&once), once);
        let gcp = ensure(
            "net.core.wmem_max = 16777216\nnet.ipv4.ip_forward = 5\nz",
            "net.ipv4.ip_forward",
            "1",
            &["GCE specific settings".into()],
        );
        assert_eq!(
            gcp,
            "net.core.wmem_max = 16777216\nnet.ipv4.ip_forward = 1\nz"
        );
    }

    /// The replacement one character at a time, as the expression scans.
    fn scan(text: &str, key: &str, value: &str) -> Option<String> {
        let (mut out, mut rest, mut found) = (String::new(), text, false);
        while let Some(c) = rest.chars().next() {
            if let Some(len) = match_at(rest, key) {
                out.push_str(&format!("{key} = {value}"));
                rest = &rest[len..];
                found = true;
                continue;
            }
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
        found.then_some(out)
    }

    proptest::proptest! {
        /// Skipping to the key's first character finds every match.
        #[test]
        fn skipping_ahead_finds_what_scanning_finds(
            text in "[nk.=1é \n]{0,40}",
            key in "(n.k|nk|.k|k)",
        ) {
            let got = ensure(&text, &key, "0", &[]);
            match scan(&text, &key, "0") {
                Some(replaced) => proptest::prop_assert_eq!(got, replaced),
                None => proptest::prop_assert_eq!(got, format!("{text}\n{key} = 0")),
            }
        }
    }
}
