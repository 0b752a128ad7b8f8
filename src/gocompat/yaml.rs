//! YAML exactly as Gardener's kubelet config codec writes it: Go's
//! `json.Marshal`, then sigs.k8s.io/yaml v1.6.0 `JSONToYAML`, which parses
//! the JSON with go.yaml.in/yaml/v2 (v2.4) into generic maps and marshals
//! them again with the same library.
//!
//! That fixes every detail of the layout, reproduced here from the v2.4
//! emitter (`emitterc.go`, `encode.go`, `resolve.go`, `sorter.go`):
//! - map keys in yaml.v2's "natural" order (digit runs compared as numbers,
//!   other characters before letters), block style, two-space indentation,
//!   sequence items at their key's indentation, `{}` and `[]` when empty;
//! - a string that would read back as another type (`"0"`, `"true"`, `""`,
//!   a date, `1:20`) double-quoted; one the emitter cannot write plain
//!   (leading space, `: `, ` #`, an indicator first) single-quoted, or
//!   double-quoted with escapes when it has special characters; a string
//!   with a newline as a literal block (`|`, `|-`, `|+`);
//! - plain and quoted scalars folded at spaces once a line passes 80
//!   columns (yaml.v2's default width), continuation lines indented;
//! - a trailing newline.

use std::borrow::Cow;
use std::cmp::Ordering;

/// A value as yaml.v2 sees it after reading Go's JSON; keys and strings
/// borrowed from the value written (copying them was a tenth of the
/// encoding time).
#[derive(Debug, Clone, PartialEq)]
pub enum Node<'a> {
    Map(Vec<(Cow<'a, str>, Node<'a>)>),
    Seq(Vec<Node<'a>>),
    Str(Cow<'a, str>),
    /// An integer, as its decimal text.
    Int(String),
    Float(f64),
    Bool(bool),
    Null,
}

/// yaml.v2's order of string map keys (`keyList.Less`).
pub fn key_order(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    if less(a, b) {
        Ordering::Less
    } else {
        Ordering::Greater
    }
}

fn less(a: &str, b: &str) -> bool {
    // Keys are ASCII in practice: compare bytes, without collecting chars
    // (the sort compares each key about log n times).
    if a.is_ascii() && b.is_ascii() {
        return less_in(a.as_bytes(), b.as_bytes());
    }
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    less_in(&ar, &br)
}

/// `keyList.Less` over the runes of two keys (bytes for ASCII keys).
fn less_in<C: Copy + Into<char>>(ar: &[C], br: &[C]) -> bool {
    let a = |i: usize| -> char { ar[i].into() };
    let b = |i: usize| -> char { br[i].into() };
    let mut i = 0;
    while i < ar.len() && i < br.len() {
        if a(i) == b(i) {
            i += 1;
            continue;
        }
        let al = a(i).is_alphabetic();
        let bl = b(i).is_alphabetic();
        if al && bl {
            return a(i) < b(i);
        }
        if al || bl {
            return bl;
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if a(i) == '0' || b(i) == '0' {
            let mut j = i;
            while j > 0 && a(j - 1).is_ascii_digit() {
                if a(j - 1) != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
                j -= 1;
            }
        }
        let mut ai = i;
        while ai < ar.len() && a(ai).is_ascii_digit() {
            an = an
                .wrapping_mul(10)
                .wrapping_add(i64::from(a(ai) as u8 - b'0'));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && b(bi).is_ascii_digit() {
            bn = bn
                .wrapping_mul(10)
                .wrapping_add(i64::from(b(bi) as u8 - b'0'));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return a(i) < b(i);
    }
    ar.len() < br.len()
}

/// What a plain scalar would read back as (yaml.v2's `resolve` with no tag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resolved {
    Str,
    Other,
}

fn resolve(s: &str) -> Resolved {
    const MAP: &[&str] = &[
        "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", "n", "N", "no",
        "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF", "", "~", "null", "Null",
        "NULL", ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
        "-.Inf", "-.INF", "<<",
    ];
    // Every word of the table has at most five bytes; keys are longer.
    if s.len() <= 5 && MAP.contains(&s) {
        return Resolved::Other;
    }
    let Some(first) = s.bytes().next() else {
        return Resolved::Other;
    };
    match first {
        b'.' => {
            if is_dot_float(s) {
                Resolved::Other
            } else {
                Resolved::Str
            }
        }
        b'+' | b'-' | b'0'..=b'9' => {
            if is_timestamp(s) {
                return Resolved::Other;
            }
            let plain = if s.contains('_') {
                Cow::Owned(s.replace('_', ""))
            } else {
                Cow::Borrowed(s)
            };
            if parses_go_int(&plain) || is_yaml_float(&plain) || is_binary(&plain) {
                Resolved::Other
            } else {
                Resolved::Str
            }
        }
        _ => Resolved::Str,
    }
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `strconv.ParseFloat` success for text starting with `.`.
fn is_dot_float(s: &str) -> bool {
    let body = &s[1..];
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    digits(mantissa)
        && exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)))
        && s.parse::<f64>().is_ok_and(f64::is_finite)
}

/// `strconv.ParseInt(s, 0, 64)` or `ParseUint(s, 0, 64)` success.
fn parses_go_int(s: &str) -> bool {
    let (negative, body) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = if let Some(rest) = body.strip_prefix("0x").or(body.strip_prefix("0X")) {
        (16, rest)
    } else if let Some(rest) = body.strip_prefix("0o").or(body.strip_prefix("0O")) {
        (8, rest)
    } else if let Some(rest) = body.strip_prefix("0b").or(body.strip_prefix("0B")) {
        (2, rest)
    } else if body.len() > 1 && body.starts_with('0') {
        (8, &body[1..])
    } else {
        (10, body)
    };
    if digits.is_empty() {
        return false;
    }
    match u64::from_str_radix(digits, radix) {
        Ok(v) if negative => v <= 1u64 << 63,
        Ok(v) => s.starts_with('+') && v <= i64::MAX as u64 || !s.starts_with('+'),
        Err(_) => false,
    }
}

/// yaml.v2's `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$` and a
/// finite `ParseFloat`.
pub(super) fn is_yaml_float(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", frac)) => digits(frac),
        Some((int, frac)) => digits(int) && (frac.is_empty() || digits(frac)),
        None => digits(mantissa),
    };
    mantissa_ok
        && exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)))
        && s.parse::<f64>().is_ok_and(f64::is_finite)
}

fn is_binary(s: &str) -> bool {
    let rest = s.strip_prefix("0b").or_else(|| s.strip_prefix("-0b"));
    rest.is_some_and(|r| {
        !r.is_empty() && r.len() <= 64 && r.bytes().all(|b| b == b'0' || b == b'1')
    })
}

/// yaml.v2's `parseTimestamp`: four digits, `-`, then one of its layouts
/// (`2006-1-2`, optionally with a time after `T`, `t` or a space).
pub(super) fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let rest = &s[5..];
    let (date, time) = match rest.find(['T', 't', ' ']) {
        Some(i) => (&rest[..i], Some((&rest[i..i + 1], &rest[i + 1..]))),
        None => (rest, None),
    };
    let Some((month, day)) = date.split_once('-') else {
        return false;
    };
    let small = |t: &str, max: u32| {
        (1..=2).contains(&t.len()) && digits(t) && t.parse::<u32>().is_ok_and(|v| v <= max)
    };
    if !small(month, 12)
        || !small(day, 31)
        || month.parse::<u32>() == Ok(0)
        || day.parse::<u32>() == Ok(0)
    {
        return false;
    }
    let Some((sep, time)) = time else {
        return true;
    };
    let (clock, zone) = if sep == " " {
        (time, None)
    } else {
        match time.find(['Z', '+', '-']) {
            Some(i) => (&time[..i], Some(&time[i..])),
            None => return false,
        }
    };
    let (hms, frac) = match clock.split_once('.') {
        Some((h, f)) => (h, Some(f)),
        None => (clock, None),
    };
    let parts: Vec<&str> = hms.split(':').collect();
    let clock_ok = parts.len() == 3
        && small(parts[0], 23)
        && small(parts[1], 59)
        && small(parts[2], 59)
        && frac.is_none_or(|f| (1..=9).contains(&f.len()) && digits(f));
    let zone_ok = zone.is_none_or(|z| {
        z == "Z" || (z.len() == 6 && digits(&z[1..3]) && &z[3..4] == ":" && digits(&z[4..6]))
    });
    clock_ok && zone_ok
}

/// `isBase60Float`: `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`.
fn is_base60_float(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    if !body.contains(':') {
        return false;
    }
    let (main, frac) = match body.split_once('.') {
        Some((m, f)) => (m, Some(f)),
        None => (body, None),
    };
    if frac.is_some_and(|f| !f.bytes().all(|b| b.is_ascii_digit() || b == b'_')) {
        return false;
    }
    let mut parts = main.split(':');
    let head = parts.next().unwrap_or_default();
    if !head.as_bytes().first().is_some_and(u8::is_ascii_digit)
        || !head.bytes().all(|b| b.is_ascii_digit() || b == b'_')
    {
        return false;
    }
    parts.all(|p| match p.as_bytes() {
        [d] => d.is_ascii_digit(),
        [a, b] => (b'0'..=b'5').contains(a) && b.is_ascii_digit(),
        _ => false,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// `yaml_emitter_analyze_scalar`'s verdicts.
#[derive(Debug, PartialEq, Eq)]
struct Analysis {
    multiline: bool,
    flow_plain: bool,
    block_plain: bool,
    single: bool,
    block: bool,
}

fn is_break_char(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_printable(c: char) -> bool {
    let v = c as u32;
    v == 0x0A
        || (0x20..=0x7E).contains(&v)
        || (0xA0..=0xD7FF).contains(&v)
        || ((0xE000..=0xFFFD).contains(&v) && v != 0xFEFF)
        || (0x10000..=0x10FFFF).contains(&v)
}

/// `chars` are the characters of `value`: its bytes when it is ASCII (no
/// copy), else its chars.
fn analyze<C: Copy + Into<char>>(value: &str, chars: &[C]) -> Analysis {
    if is_word(value) {
        return WORD;
    }
    walk(value, chars)
}

/// Most scalars are words, numbers, paths and addresses: nothing in them is
/// an indicator, a space or a break, so [`walk`] would find nothing (a
/// quarter of the encoding time went to it).
fn is_word(value: &str) -> bool {
    /// The bytes of a word (a table: the test per byte was a quarter of
    /// what remained of the encoding).
    const WORD_BYTES: [bool; 256] = {
        let mut table = [false; 256];
        let mut b = 0;
        while b < 256 {
            let c = b as u8;
            table[b] = c.is_ascii_alphanumeric() || matches!(c, b'.' | b'/' | b'_' | b'-' | b'+');
            b += 1;
        }
        table
    };
    value
        .as_bytes()
        .first()
        .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'/')
        && value.bytes().all(|b| WORD_BYTES[usize::from(b)])
}

/// [`walk`]'s verdict on a word.
const WORD: Analysis = Analysis {
    multiline: false,
    flow_plain: true,
    block_plain: true,
    single: true,
    block: true,
};

/// `yaml_emitter_analyze_scalar`, character by character.
fn walk<C: Copy + Into<char>>(value: &str, chars: &[C]) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            flow_plain: false,
            block_plain: true,
            single: true,
            block: false,
        };
    }
    let (mut block_ind, mut flow_ind) = (false, false);
    if value.starts_with("---") || value.starts_with("...") {
        block_ind = true;
        flow_ind = true;
    }
    let (mut line_breaks, mut special) = (false, false);
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    let mut preceded_by_ws = true;
    for (i, &c) in chars.iter().enumerate() {
        let c: char = c.into();
        let followed_by_ws = chars
            .get(i + 1)
            .is_none_or(|&n| matches!(n.into(), ' ' | '\t'));
        let last = i + 1 == chars.len();
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => {
                    flow_ind = true;
                    block_ind = true;
                }
                '?' | ':' => {
                    flow_ind = true;
                    if followed_by_ws {
                        block_ind = true;
                    }
                }
                '-' if followed_by_ws => {
                    flow_ind = true;
                    block_ind = true;
                }
                _ => {}
            }
        } else {
            match c {
                ',' | '?' | '[' | ']' | '{' | '}' => flow_ind = true,
                ':' => {
                    flow_ind = true;
                    if followed_by_ws {
                        block_ind = true;
                    }
                }
                '#' if preceded_by_ws => {
                    flow_ind = true;
                    block_ind = true;
                }
                _ => {}
            }
        }
        if !is_printable(c) {
            special = true;
        }
        if c == ' ' {
            if i == 0 {
                leading_space = true;
            }
            if last {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break_char(c) {
            line_breaks = true;
            if i == 0 {
                leading_break = true;
            }
            if last {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_ws = matches!(c, ' ' | '\t' | '\0') || is_break_char(c);
    }
    let mut a = Analysis {
        multiline: line_breaks,
        flow_plain: true,
        block_plain: true,
        single: true,
        block: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.flow_plain = false;
        a.block_plain = false;
    }
    if trailing_space {
        a.block = false;
    }
    if break_space {
        a.flow_plain = false;
        a.block_plain = false;
        a.single = false;
    }
    if space_break || special {
        a.flow_plain = false;
        a.block_plain = false;
        a.single = false;
        a.block = false;
    }
    if line_breaks {
        a.flow_plain = false;
        a.block_plain = false;
    }
    if flow_ind {
        a.flow_plain = false;
    }
    if block_ind {
        a.block_plain = false;
    }
    a
}

const BEST_WIDTH: usize = 80;
const BEST_INDENT: i64 = 2;

/// The emitter's state (a port of the parts of `yaml_emitter_t` the
/// encoder's events reach).
struct Emitter {
    out: String,
    column: usize,
    indent: i64,
    indents: Vec<i64>,
    whitespace: bool,
    indention: bool,
    flow_level: usize,
    mapping_context: bool,
    simple_key_context: bool,
    /// Reused by [`Emitter::scalar`].
    scratch: Vec<char>,
}

impl Emitter {
    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0) as usize;
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(&mut self, indicator: &str, need_ws: bool, is_ws: bool, is_indention: bool) {
        if need_ws && !self.whitespace {
            self.put(' ');
        }
        for c in indicator.chars() {
            self.put(c);
        }
        self.whitespace = is_ws;
        self.indention = self.indention && is_indention;
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn node(&mut self, node: &Node<'_>, mapping: bool, simple_key: bool) {
        self.mapping_context = mapping;
        self.simple_key_context = simple_key;
        match node {
            Node::Map(entries) if entries.is_empty() || self.flow_level > 0 => self.flow("{", "}"),
            Node::Seq(items) if items.is_empty() || self.flow_level > 0 => self.flow("[", "]"),
            Node::Map(entries) => self.block_mapping(entries),
            Node::Seq(items) => self.block_sequence(items),
            Node::Str(s) => self.string(s),
            Node::Int(text) => self.scalar(text, Style::Plain),
            Node::Float(f) => self.scalar(&format_float(*f), Style::Plain),
            Node::Bool(b) => self.scalar(if *b { "true" } else { "false" }, Style::Plain),
            Node::Null => self.scalar("null", Style::Plain),
        }
    }

    /// A string: plain unless it would read back as another type.
    fn string(&mut self, s: &str) {
        // A word that starts with a letter and is longer than every word
        // `resolve` knows is a string, written plain: every key of the
        // kubelet configuration and most of its values.
        if s.len() > 5 && s.as_bytes()[0].is_ascii_alphabetic() && is_word(s) {
            self.word(s);
            return;
        }
        let plain = resolve(s) == Resolved::Str && !is_base60_float(s);
        let style = if s.contains('\n') {
            Style::Literal
        } else if plain {
            Style::Plain
        } else {
            Style::Double
        };
        self.scalar(s, style);
    }

    /// An empty collection (the encoder never puts anything inside a flow one).
    fn flow(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.increase_indent(true, false);
        self.flow_level += 1;
        self.flow_level -= 1;
        self.pop_indent();
        self.write_indicator(close, false, false, false);
    }

    fn block_sequence(&mut self, items: &[Node<'_>]) {
        let indentless = self.mapping_context && !self.indention;
        self.increase_indent(false, indentless);
        for item in items {
            self.write_indent();
            self.write_indicator("-", true, false, true);
            self.node(item, false, false);
        }
        self.pop_indent();
    }

    /// A map key, as `node` would write `Node::Str(key)` (without the copy).
    fn key(&mut self, key: &str, simple_key: bool) {
        self.mapping_context = true;
        self.simple_key_context = simple_key;
        self.string(key);
    }

    fn block_mapping(&mut self, entries: &[(Cow<'_, str>, Node<'_>)]) {
        self.increase_indent(false, false);
        for (key, value) in entries {
            self.write_indent();
            let simple = !key.contains(is_break_char) && key.len() <= 128;
            if simple {
                self.key(key, true);
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indicator("?", true, false, true);
                self.key(key, false);
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.node(value, true, false);
        }
        self.pop_indent();
    }

    fn scalar(&mut self, value: &str, wanted: Style) {
        // ASCII (every scalar of a kubelet configuration in practice) is
        // analysed on its bytes; only other text is collected into chars,
        // in one buffer for every scalar. Measured on the recorded kubelet
        // configuration (`cargo bench --bench mutate -- part_osc_kubelet_encode`):
        // collecting the chars of every scalar, and writing them one by one,
        // was half of the encoding time.
        let ascii = value.is_ascii();
        let mut chars = std::mem::take(&mut self.scratch);
        chars.clear();
        let a = if ascii {
            analyze(value, value.as_bytes())
        } else {
            chars.extend(value.chars());
            analyze(value, &chars)
        };
        let mut style = wanted;
        if self.simple_key_context && a.multiline {
            style = Style::Double;
        }
        if style == Style::Plain {
            if (self.flow_level > 0 && !a.flow_plain) || (self.flow_level == 0 && !a.block_plain) {
                style = Style::Single;
            }
            if value.is_empty() && (self.flow_level > 0 || self.simple_key_context) {
                style = Style::Single;
            }
        }
        if style == Style::Single && !a.single {
            style = Style::Double;
        }
        if style == Style::Literal && (!a.block || self.flow_level > 0 || self.simple_key_context) {
            style = Style::Double;
        }
        if style == Style::Plain && ascii && !value.contains([' ', '\n', '\r']) {
            self.word(value);
            self.scratch = chars;
            return;
        }
        if ascii {
            chars.extend(value.chars());
        }
        self.increase_indent(true, false);
        let breaks = !self.simple_key_context;
        match style {
            Style::Plain => self.plain(&chars, breaks),
            Style::Single => self.single(&chars, breaks),
            Style::Double => self.double(&chars, breaks),
            Style::Literal => self.literal(&chars),
        }
        self.scratch = chars;
        self.pop_indent();
    }

    /// What `plain` writes for ASCII without a space to fold at or a line
    /// break: the text as it is.
    fn word(&mut self, value: &str) {
        if !self.whitespace {
            self.put(' ');
        }
        self.out.push_str(value);
        self.column += value.len();
        self.whitespace = false;
        self.indention = false;
    }

    fn plain(&mut self, chars: &[char], allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        let (mut spaces, mut breaks) = (false, false);
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && chars.get(i + 1) != Some(&' ')
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break_char(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    fn single(&mut self, chars: &[char], allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        let (mut spaces, mut breaks) = (false, false);
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < chars.len()
                    && chars[i + 1] != ' '
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break_char(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn double(&mut self, chars: &[char], allow_breaks: bool) {
        let starts_with_bom = chars.first() == Some(&'\u{feff}');
        self.write_indicator("\"", true, false, false);
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if !is_printable(c) || starts_with_bom || is_break_char(c) || c == '"' || c == '\\' {
                self.put('\\');
                match c {
                    '\0' => self.put('0'),
                    '\u{7}' => self.put('a'),
                    '\u{8}' => self.put('b'),
                    '\t' => self.put('t'),
                    '\n' => self.put('n'),
                    '\u{b}' => self.put('v'),
                    '\u{c}' => self.put('f'),
                    '\r' => self.put('r'),
                    '\u{1b}' => self.put('e'),
                    '"' => self.put('"'),
                    '\\' => self.put('\\'),
                    '\u{85}' => self.put('N'),
                    '\u{a0}' => self.put('_'),
                    '\u{2028}' => self.put('L'),
                    '\u{2029}' => self.put('P'),
                    c => {
                        let v = c as u32;
                        let (letter, width) = if v <= 0xFF {
                            ('x', 2)
                        } else if v <= 0xFFFF {
                            ('u', 4)
                        } else {
                            ('U', 8)
                        };
                        self.put(letter);
                        for digit in format!("{v:0width$X}").chars() {
                            self.put(digit);
                        }
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < chars.len()
                {
                    self.write_indent();
                    if chars[i + 1] == ' ' {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn literal(&mut self, chars: &[char]) {
        self.write_indicator("|", true, false, false);
        if chars
            .first()
            .is_some_and(|c| *c == ' ' || is_break_char(*c))
        {
            self.write_indicator(&BEST_INDENT.to_string(), false, false, false);
        }
        let chomp = match chars {
            [] => Some("-"),
            [.., last] if !is_break_char(*last) => Some("-"),
            [_] => Some("+"),
            [.., before, _] if is_break_char(*before) => Some("+"),
            _ => None,
        };
        if let Some(chomp) = chomp {
            self.write_indicator(chomp, false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for &c in chars {
            if is_break_char(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)` with yaml.v2's names for the
/// infinities and NaN.
pub fn format_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            ".inf".into()
        } else {
            "-.inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // Shortest round-trip digits and exponent, from Rust's `{:e}`.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("a decimal exponent");
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if f < 0.0 { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let mut m = digits[..1].to_string();
        if digits.len() > 1 {
            m.push('.');
            m.push_str(&digits[1..]);
        }
        let e_sign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{m}e{e_sign}{:02}", exp.abs());
    }
    let n = digits.len() as i32;
    let text = if exp < 0 {
        format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
    } else if exp + 1 >= n {
        format!("{digits}{}", "0".repeat((exp + 1 - n) as usize))
    } else {
        format!(
            "{}.{}",
            &digits[..(exp + 1) as usize],
            &digits[(exp + 1) as usize..]
        )
    };
    format!("{sign}{text}")
}

/// The document yaml.v2 writes for `node` (a map, as Gardener's codec has).
pub fn emit(node: &Node<'_>) -> String {
    let mut e = Emitter {
        out: String::new(),
        column: 0,
        indent: -1,
        indents: Vec::new(),
        whitespace: true,
        indention: true,
        flow_level: 0,
        mapping_context: false,
        simple_key_context: false,
        scratch: Vec::new(),
    };
    e.node(node, false, false);
    // Document end: a line break after the last line.
    e.write_indent();
    e.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map<'a>(entries: &[(&'a str, Node<'a>)]) -> Node<'a> {
        Node::Map(
            entries
                .iter()
                .map(|(k, v)| (Cow::Borrowed(*k), v.clone()))
                .collect(),
        )
    }

    fn s(v: &str) -> Node<'_> {
        Node::Str(Cow::Borrowed(v))
    }

    #[test]
    fn layout_of_the_kubelet_config() {
        let doc = map(&[
            (
                "authentication",
                map(&[("anonymous", map(&[("enabled", Node::Bool(false))]))]),
            ),
            ("clusterDNS", Node::Seq(vec![s("100.64.0.10")])),
            ("containerRuntimeEndpoint", s("")),
            ("crashLoopBackOff", map(&[])),
            ("evictionHard", map(&[("memory.available", s("100Mi"))])),
            (
                "logging",
                map(&[
                    ("flushFrequency", Node::Int("0".into())),
                    (
                        "options",
                        map(&[("json", map(&[("infoBufferSize", s("0"))]))]),
                    ),
                ]),
            ),
            (
                "registerWithTaints",
                Node::Seq(vec![map(&[("effect", s("NoSchedule")), ("key", s("k"))])]),
            ),
            ("tlsCipherSuites", Node::Seq(vec![])),
        ]);
        assert_eq!(
            emit(&doc),
            "authentication:\n  anonymous:\n    enabled: false\nclusterDNS:\n- 100.64.0.10\ncontainerRuntimeEndpoint: \"\"\ncrashLoopBackOff: {}\nevictionHard:\n  memory.available: 100Mi\nlogging:\n  flushFrequency: 0\n  options:\n    json:\n      infoBufferSize: \"0\"\nregisterWithTaints:\n- effect: NoSchedule\n  key: k\ntlsCipherSuites: []\n"
        );
    }

    #[test]
    fn strings_are_quoted_as_yaml_v2_quotes_them() {
        let one = |v: &str| emit(&map(&[("k", s(v))]));
        assert_eq!(one("true"), "k: \"true\"\n");
        assert_eq!(one("yes"), "k: \"yes\"\n");
        assert_eq!(one("1.5"), "k: \"1.5\"\n");
        assert_eq!(one("0x1F"), "k: \"0x1F\"\n");
        assert_eq!(one("1:20"), "k: \"1:20\"\n");
        assert_eq!(one("2024-01-15"), "k: \"2024-01-15\"\n");
        assert_eq!(one("100.64.0.10"), "k: 100.64.0.10\n");
        assert_eq!(one("2m0s"), "k: 2m0s\n");
        assert_eq!(
            one("unix:///run/containerd/containerd.sock"),
            "k: unix:///run/containerd/containerd.sock\n"
        );
        assert_eq!(one("a: b"), "k: 'a: b'\n");
        assert_eq!(one("*"), "k: '*'\n");
        assert_eq!(one(" x"), "k: ' x'\n");
        assert_eq!(one("it's # x"), "k: 'it''s # x'\n");
        assert_eq!(one("tab\there"), "k: \"tab\\there\"\n");
        assert_eq!(one("a\nb"), "k: |-\n  a\n  b\n");
        assert_eq!(one("a\n"), "k: |\n  a\n");
        assert_eq!(
            emit(&map(&[("1", s("x")), ("true", s("y"))])),
            "\"1\": x\n\"true\": \"y\"\n"
        );
    }

    #[test]
    fn words_get_the_verdict_of_the_walk() {
        for word in [
            "a",
            "x1",
            "100Mi",
            "1e+06",
            "/var/lib/kubelet",
            "unix:x",
            "a-",
            "a--b",
            "cgroupfs",
            "kube_reserved",
            "100.64.0.10",
            "2m0s",
            "Z",
        ] {
            let chars: Vec<char> = word.chars().collect();
            assert_eq!(is_word(word), !word.contains(':'), "{word}");
            if is_word(word) {
                assert_eq!(walk(word, &chars), WORD, "{word}");
            }
        }
        for not_word in [
            "", "-a", ".a", "...", "_a", "a b", "a:b", "a#b", "+1", "a,b", "é",
        ] {
            assert!(!is_word(not_word), "{not_word}");
        }
    }

    proptest::proptest! {
        /// What lets `kubelet::map_node` skip sorting keys of letters.
        #[test]
        fn keys_of_letters_sort_as_their_bytes(a in "[a-zA-Z]{0,12}", b in "[a-zA-Z]{0,12}") {
            proptest::prop_assert_eq!(key_order(&a, &b), a.cmp(&b));
        }

        #[test]
        fn every_word_gets_the_verdict_of_the_walk(word in "[a-zA-Z0-9/][a-zA-Z0-9./_+-]{0,20}") {
            let chars: Vec<char> = word.chars().collect();
            proptest::prop_assert!(is_word(&word));
            proptest::prop_assert_eq!(walk(&word, &chars), WORD);
        }
    }

    #[test]
    fn long_strings_fold_at_80_columns() {
        let long = "word ".repeat(30);
        let long = long.trim_end();
        let out = emit(&map(&[("key", s(long))]));
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.len() > 1, "{out}");
        assert!(lines[0].len() > 80 && lines[0].len() <= 86, "{out}");
        assert!(lines[1].starts_with("  word"), "{out}");
    }

    #[test]
    fn keys_sort_naturally_and_floats_format_like_go() {
        let mut keys = vec!["a10", "a2", "b", "A", "_x", "a"];
        keys.sort_by(|a, b| key_order(a, b));
        assert_eq!(keys, ["_x", "A", "a", "a2", "a10", "b"]);
        assert_eq!(format_float(0.9), "0.9");
        assert_eq!(format_float(1e21), "1e+21");
        assert_eq!(format_float(1e6), "1e+06");
        assert_eq!(format_float(12345.5), "12345.5");
        assert_eq!(format_float(0.0001), "0.0001");
        assert_eq!(format_float(0.00001), "1e-05");
    }
}
