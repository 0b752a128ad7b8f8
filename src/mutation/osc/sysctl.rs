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
fn is_posix_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ')
}

/// The width of the character at the start of `s` as Go's regexp reads it:
/// a UTF-8 sequence, or one byte that is not part of a valid one (Go reads
/// it as U+FFFD of width 1).
fn rune_len(s: &[u8]) -> usize {
    let width = match s.first() {
        None => return 0,
        Some(0x00..=0x7f) => return 1,
        Some(0xc2..=0xdf) => 2,
        Some(0xe0..=0xef) => 3,
        Some(0xf0..=0xf4) => 4,
        Some(_) => return 1,
    };
    match s.get(..width).map(std::str::from_utf8) {
        Some(Ok(_)) => width,
        _ => 1,
    }
}

/// The byte length of a match of the expression at the start of `s`.
fn match_at(s: &[u8], key: &str) -> Option<usize> {
    let mut at = 0;
    for k in key.chars() {
        if k == '.' {
            // Any character but a newline (an invalid byte included).
            if s.get(at).is_none_or(|&b| b == b'\n') {
                return None;
            }
            at += rune_len(&s[at..]);
        } else {
            let mut buf = [0u8; 4];
            let k = k.encode_utf8(&mut buf).as_bytes();
            if !s[at..].starts_with(k) {
                return None;
            }
            at += k.len();
        }
    }
    while s.get(at).is_some_and(|&b| is_posix_space(b)) {
        at += 1;
    }
    if s.get(at) != Some(&b'=') {
        return None;
    }
    at += 1;
    while s.get(at).is_some_and(|&b| is_posix_space(b)) {
        at += 1;
    }
    let value = s[at..]
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric())
        .count();
    (value > 0).then_some(at + value)
}

/// Ensure `key = value` in the file's bytes (Go keeps bytes that are not
/// UTF-8 as they are, and so does this): replace every match, or append the
/// block.
pub fn ensure(text: &[u8], key: &str, value: &str, comments: &[String]) -> Vec<u8> {
    let setting = format!("{key} = {value}");
    let mut out = Vec::with_capacity(text.len() + setting.len());
    let mut found = false;
    let mut rest = text;
    // A match starts with the key's first character unless that is a dot;
    // an ASCII byte never sits inside another character, so the search may
    // jump to it (one character at a time, this was 2 % of an OSC review).
    let first = key
        .as_bytes()
        .first()
        .copied()
        .filter(|&b| b != b'.' && b.is_ascii());
    while !rest.is_empty() {
        if let Some(len) = match_at(rest, key) {
            out.extend_from_slice(setting.as_bytes());
            rest = &rest[len..];
            found = true;
            continue;
        }
        let step = rune_len(rest);
        let skip = match first {
            Some(first) => rest[step..]
                .iter()
                .position(|&b| b == first)
                .map_or(rest.len(), |i| step + i),
            None => step,
        };
        out.extend_from_slice(&rest[..skip]);
        rest = &rest[skip..];
    }
    if found {
        return out;
    }
    let mut out = text.to_vec();
    out.push(b'\n');
    for comment in comments {
        out.extend_from_slice(b"# ");
        out.extend_from_slice(comment.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(setting.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "net.ipv4.neigh.default.gc_thresh1";

    fn aws(text: &str) -> String {
        text_of(ensure(
            text.as_bytes(),
            KEY,
            "0",
            &[
                "AWS specific settings".into(),
                "See https://github.com/kubernetes/kubernetes/issues/23395".into(),
            ],
        ))
    }

    fn text_of(bytes: Vec<u8>) -> String {
        String::from_utf8(bytes).expect("UTF-8 in, UTF-8 out")
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
        let gcp = text_of(ensure(
            b"net.core.wmem_max = 16777216\nnet.ipv4.ip_forward = 5\nz",
            "net.ipv4.ip_forward",
            "1",
            &["GCE specific settings".into()],
        ));
        assert_eq!(
            gcp,
            "net.core.wmem_max = 16777216\nnet.ipv4.ip_forward = 1\nz"
        );
    }

    /// Issue 27, item 6: bytes that are not UTF-8 stay as they are, and a
    /// dot of the key matches one of them as Go's regexp does.
    #[test]
    fn bytes_that_are_not_utf8_are_kept() {
        let text = b"a\xff\xfe=1\nnet.ipv4\xffneigh.default.gc_thresh1 = 5\n\xc3";
        let out = ensure(text, KEY, "0", &[]);
        assert_eq!(
            out,
            b"a\xff\xfe=1\nnet.ipv4.neigh.default.gc_thresh1 = 0\n\xc3"
        );
        let appended = ensure(b"\x80", KEY, "0", &[]);
        assert_eq!(appended, b"\x80\nnet.ipv4.neigh.default.gc_thresh1 = 0");
    }

    /// The replacement one character at a time, as the expression scans.
    fn scan(text: &[u8], key: &str, value: &str) -> Option<Vec<u8>> {
        let (mut out, mut rest, mut found) = (Vec::new(), text, false);
        while !rest.is_empty() {
            if let Some(len) = match_at(rest, key) {
                out.extend_from_slice(format!("{key} = {value}").as_bytes());
                rest = &rest[len..];
                found = true;
                continue;
            }
            let step = rune_len(rest);
            out.extend_from_slice(&rest[..step]);
            rest = &rest[step..];
        }
        found.then_some(out)
    }

    proptest::proptest! {
        /// Skipping to the key's first character finds every match.
        #[test]
        fn skipping_ahead_finds_what_scanning_finds(
            text in proptest::collection::vec(proptest::sample::select(
                vec![b'n', b'k', b'.', b'=', b'1', 0xc3, 0xa9, 0xff, b' ', b'\n']), 0..40),
            key in "(n.k|nk|.k|k)",
        ) {
            let got = ensure(&text, &key, "0", &[]);
            match scan(&text, &key, "0") {
                Some(replaced) => proptest::prop_assert_eq!(got, replaced),
                None => {
                    let mut appended = text.clone();
                    appended.extend_from_slice(format!("\n{key} = 0").as_bytes());
                    proptest::prop_assert_eq!(got, appended)
                }
            }
        }
    }
}
