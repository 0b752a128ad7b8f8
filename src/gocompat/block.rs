//! A fast reader for the block YAML that sigs.k8s.io/yaml (yaml.v2) writes,
//! which is how every kubelet configuration gardenlet puts into an OSC looks:
//! block maps with two-space indentation, sequences at their key's
//! indentation, one-line scalars, `{}` and `[]` for empty collections.
//!
//! Measured need (docs/performance.md, "Seed webhooks"): the general YAML
//! parser took about 300 µs of a 600 µs OSC review for a 3 KB kubelet
//! configuration; this reader takes a few microseconds. It is a fast path,
//! not a second YAML implementation: it reads only what it can read with
//! certainty and answers `None` for anything else (comments, anchors, tags,
//! flow collections with content, block or multi-line scalars, tabs,
//! duplicate keys, and every plain scalar whose type it does not know for
//! sure, such as floats, hex or `yes`), and the caller then uses the general
//! parser. Where it answers, it answers what the general parser answers;
//! the tests compare both on the emitter's output and on tricky scalars.

use serde_json::{Map, Number, Value};

/// The document as JSON, or `None` when the fast path cannot be sure.
pub fn read(text: &str) -> Option<Value> {
    let mut lines = Vec::new();
    for raw in text.split('\n') {
        let body = raw.trim_start_matches(' ');
        if body.is_empty() {
            continue;
        }
        // `#` is rare: look for it first (a substring search per line was a
        // tenth of the reading time).
        if body.starts_with(['#', '\t', '%'])
            || body.starts_with("---")
            || (body.contains('#') && body.contains(" #"))
        {
            return None;
        }
        if raw.ends_with([' ', '\r']) {
            return None;
        }
        lines.push(Line {
            indent: raw.len() - body.len(),
            body,
        });
    }
    if lines.is_empty() {
        return None;
    }
    let mut reader = Reader { lines, next: 0 };
    let first = reader.lines[0].indent;
    let value = reader.node(first)?;
    (reader.next == reader.lines.len()).then_some(value)
}

struct Line<'a> {
    indent: usize,
    body: &'a str,
}

struct Reader<'a> {
    lines: Vec<Line<'a>>,
    next: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<&Line<'a>> {
        self.lines.get(self.next)
    }

    /// A block collection starting at the next line, which has `indent`.
    fn node(&mut self, indent: usize) -> Option<Value> {
        let line = self.peek()?;
        if line.indent != indent {
            return None;
        }
        if is_item(line.body) {
            self.sequence(indent)
        } else {
            self.mapping(indent, None)
        }
    }

    /// A block map whose lines have `indent`; `first` is the text of its
    /// first entry when it began after a sequence item's `- `.
    fn mapping(&mut self, indent: usize, first: Option<&'a str>) -> Option<Value> {
        // Entries first, the map at the end: the keys come nearly sorted, so
        // building it at once costs a comparison per key where an insert
        // each searched the map.
        let mut entries = Vec::new();
        let mut pending = first;
        loop {
            let body = match pending.take() {
                Some(body) => body,
                None => {
                    let Some(line) = self.peek() else { break };
                    if line.indent < indent || (line.indent == indent && is_item(line.body)) {
                        break;
                    }
                    if line.indent != indent {
                        return None;
                    }
                    let body = line.body;
                    self.next += 1;
                    body
                }
            };
            let (key, rest) = split_entry(body)?;
            let value = if rest.is_empty() {
                // A nested block: a map deeper, or a sequence at this
                // indentation or deeper.
                let line = self.peek()?;
                if line.indent > indent || (line.indent == indent && is_item(line.body)) {
                    let nested = line.indent;
                    self.node(nested)?
                } else {
                    return None;
                }
            } else {
                scalar(rest)?
            };
            entries.push((key, value));
        }
        let count = entries.len();
        let map: Map<String, Value> = entries.into_iter().collect();
        // A duplicate key collapsed: the general parser decides.
        (map.len() == count).then_some(Value::Object(map))
    }

    /// A block sequence whose `- ` lines have `indent`.
    fn sequence(&mut self, indent: usize) -> Option<Value> {
        let mut items = Vec::new();
        while let Some(line) = self.peek() {
            if line.indent < indent {
                break;
            }
            if line.indent != indent || !is_item(line.body) {
                if line.indent == indent {
                    break;
                }
                return None;
            }
            let body = line.body;
            self.next += 1;
            let rest = body.strip_prefix("- ")?;
            let item = if rest.starts_with(['"', '\'', '{', '[']) || split_entry(rest).is_none() {
                scalar(rest)?
            } else {
                // A map item: its first entry after `- `, the others at
                // the indentation of that entry.
                self.mapping(indent + 2, Some(rest))?
            };
            items.push(item);
        }
        Some(Value::Array(items))
    }
}

fn is_item(body: &str) -> bool {
    body.starts_with("- ")
}

/// `key: rest` or `key:` with a plain key the reader is sure of.
fn split_entry(body: &str) -> Option<(String, &str)> {
    // The first `:` ends the key (a key with a `:` is not for this reader),
    // and a space or the line's end follows it.
    let i = body.find(':')?;
    let key = &body[..i];
    let rest = match &body[i + 1..] {
        "" => "",
        after => after.strip_prefix(' ')?,
    };
    if key.is_empty()
        || !key.bytes().all(safe_byte)
        || !key.as_bytes()[0].is_ascii_alphabetic()
        || word(key)
    {
        return None;
    }
    Some((key.to_string(), rest))
}

/// Bytes of plain scalars the reader accepts.
fn safe_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'/' | b'-' | b'_' | b':' | b'%')
}

/// A word some YAML schema reads as a boolean, null, infinity or NaN.
fn word(s: &str) -> bool {
    const WORDS: &[&str] = &[
        "y", "yes", "n", "no", "true", "false", "on", "off", "null", "inf", "infinity", "nan",
    ];
    s.len() <= 8 && WORDS.iter().any(|w| w.eq_ignore_ascii_case(s))
}

/// A one-line scalar or empty collection.
fn scalar(text: &str) -> Option<Value> {
    match text {
        "{}" => return Some(Value::Object(Map::new())),
        "[]" => return Some(Value::Array(Vec::new())),
        "true" => return Some(Value::Bool(true)),
        "false" => return Some(Value::Bool(false)),
        "null" | "~" => return Some(Value::Null),
        _ => {}
    }
    if let Some(inner) = text.strip_prefix('"') {
        return double(inner.strip_suffix('"')?).map(Value::String);
    }
    if let Some(inner) = text.strip_prefix('\'') {
        let inner = inner.strip_suffix('\'')?;
        if inner.replace("''", "").contains('\'') {
            return None;
        }
        return Some(Value::String(inner.replace("''", "'")));
    }
    let bytes = text.as_bytes();
    if text.is_empty() || !bytes.iter().all(|&b| safe_byte(b)) || word(text) {
        return None;
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let unsigned = text.strip_prefix('-').unwrap_or(text);
    if digits(unsigned) {
        if unsigned.len() > 1 && unsigned.starts_with('0') {
            return None;
        }
        return text
            .parse::<i64>()
            .ok()
            .map(|i| Value::Number(Number::from(i)));
    }
    let first = bytes[0];
    if first.is_ascii_alphabetic() || first == b'/' {
        return Some(Value::String(text.to_string()));
    }
    // Starts with a digit, `-` or `.`: a string only when no number notation
    // can read it: a unit letter or `%` (`2m0s`, `100Mi`, `5%`), or two dots
    // (`100.64.0.10`).
    let number_letter = |b: u8| matches!(b.to_ascii_lowercase(), b'e' | b'x' | b'o' | b'b');
    let unit = bytes
        .iter()
        .any(|&b| b == b'%' || (b.is_ascii_alphabetic() && !number_letter(b)));
    let dots = bytes.iter().filter(|&&b| b == b'.').count();
    let only_digits_and_dots = bytes.iter().all(|&b| b.is_ascii_digit() || b == b'.');
    if first.is_ascii_digit() && !text.contains(':') && (unit || dots >= 2 && only_digits_and_dots)
    {
        return Some(Value::String(text.to_string()));
    }
    None
}

/// The content of a one-line double-quoted scalar with the escapes the
/// emitter writes; anything unusual is left to the general parser.
fn double(inner: &str) -> Option<String> {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return None,
            '\\' => out.push(match chars.next()? {
                '"' => '"',
                '\\' => '\\',
                'n' => '\n',
                't' => '\t',
                _ => return None,
            }),
            c if c.is_control() => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// yaml.v2's reading, which the fast path must agree with.
    fn general(text: &str) -> Value {
        crate::gocompat::yamltojson::to_json(text, false).unwrap()
    }

    /// Where the fast path answers, the general parser agrees.
    fn agrees(text: &str) -> Option<Value> {
        let fast = read(text);
        if let Some(v) = &fast {
            assert_eq!(v, &general(text), "{text}");
        }
        fast
    }

    #[test]
    fn gardeners_kubelet_configuration_is_read_on_the_fast_path() {
        let golden = include_str!("testdata/kubelet-config-golden.yaml");
        let v = agrees(golden).expect("the fast path reads the codec's golden vector");
        assert_eq!(v["kind"], "KubeletConfiguration");
    }

    #[test]
    fn shapes_the_emitter_writes() {
        let text = "a:\n  b: 1\n  c: []\n  d: {}\nlist:\n- 100.64.0.10\n- x\ntaints:\n- effect: NoSchedule\n  key: k\n- key: j\nq: \"0\"\ns: 'it''s'\nz: -5\n";
        assert_eq!(
            agrees(text).unwrap(),
            json!({"a": {"b": 1, "c": [], "d": {}}, "list": ["100.64.0.10", "x"],
                "taints": [{"effect": "NoSchedule", "key": "k"}, {"key": "j"}],
                "q": "0", "s": "it's", "z": -5})
        );
    }

    #[test]
    fn anything_uncertain_goes_to_the_general_parser() {
        for text in [
            "a: 1.5\n",
            "a: 0x10\n",
            "a: yes\n",
            "a: 010\n",
            "a: 1e3\n",
            "a: .inf\n",
            "a: b # comment\n",
            "a: &x 1\n",
            "a: !!str 1\n",
            "a: [1]\n",
            "a: |\n  x\n",
            "a: long\n  folded\n",
            "a:\tb\n",
            "a: 1\na: 2\n",
            "---\na: 1\n",
            "a: 12:30\n",
            "a: \"\\u00e9\"\n",
            "\"quoted key\": 1\n",
            "a:\n",
            "a: 99999999999999999999\n",
            "a: b \n",
        ] {
            assert_eq!(read(text), None, "{text}");
        }
    }

    fn scalar_text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[0-9]{1,4}(\\.[0-9]{1,3}){0,3}",
            "-?[0-9]{1,3}[a-zA-Z%]{0,3}[0-9]{0,2}[a-z]{0,2}",
            "[a-zA-Z/][a-zA-Z0-9./:_-]{0,12}",
            Just("0".to_string()),
            Just("-0".to_string()),
            "(true|false|null|~|True|NULL|Yes|off|Inf|NaN)",
        ]
    }

    fn emitted_node() -> impl Strategy<Value = super::super::yaml::Node<'static>> {
        use super::super::yaml::Node;
        let leaf = prop_oneof![
            scalar_text().prop_map(|s| Node::Str(s.into())),
            "[ -~]{0,90}".prop_map(|s| Node::Str(s.into())),
            (-1000i64..1000).prop_map(|i| Node::Int(i.to_string())),
            any::<bool>().prop_map(Node::Bool),
            Just(Node::Null),
        ];
        leaf.prop_recursive(4, 40, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Node::Seq),
                prop::collection::btree_map("[a-z][a-zA-Z0-9.]{0,8}", inner, 0..5)
                    .prop_map(|m| Node::Map(m.into_iter().map(|(k, v)| (k.into(), v)).collect())),
            ]
        })
    }

    proptest! {
        /// What the emitter writes (the kubelet configuration of an OSC
        /// already mutated) is read as the general parser reads it.
        #[test]
        fn the_emitters_output_is_read_as_the_general_parser_reads_it(
            entries in prop::collection::btree_map("[a-z][a-zA-Z0-9.]{0,8}", emitted_node(), 1..6),
        ) {
            use super::super::yaml::{Node, emit};
            let text = emit(&Node::Map(entries.into_iter().map(|(k, v)| (k.into(), v)).collect()));
            if let Some(fast) = read(&text) {
                prop_assert_eq!(fast, general(&text), "{}", text);
            }
        }

        #[test]
        fn the_fast_path_never_disagrees_with_the_general_parser(
            keys in prop::collection::vec("[a-z][a-zA-Z0-9.]{0,8}", 1..6),
            values in prop::collection::vec(scalar_text(), 1..6),
        ) {
            let mut text = String::new();
            for (i, key) in keys.iter().enumerate() {
                let value = &values[i % values.len()];
                text.push_str(&format!("{key}: {value}\n"));
                text.push_str(&format!("n{i}:\n  {key}: {value}\nl{i}:\n- {value}\n- {key}: {value}\n"));
            }
            // Duplicate keys: the fast path refuses, yaml.v2 takes the last.
            if let Ok(v) = crate::gocompat::yamltojson::to_json(&text, false)
                && let Some(fast) = read(&text)
            {
                prop_assert_eq!(fast, v, "{}", text);
            }
        }
    }
}
