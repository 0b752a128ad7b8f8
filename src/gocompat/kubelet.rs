//! The kubelet configuration file (`/var/lib/kubelet/config/kubelet`) as
//! Gardener's codec reads and writes it: YAML into the Go struct
//! `kubelet.config.k8s.io/v1beta1 KubeletConfiguration` (non-strict: unknown
//! fields dropped, names case-sensitive, no defaulting), then `json.Marshal`
//! and sigs.k8s.io/yaml (see [`super::yaml`]).
//!
//! How Go's field set is reproduced: [`SCHEMA`] (in `gardener/`, with the
//! other API types) declares every field of the
//! struct at k8s.io/kubelet v0.36.3 with its JSON name, Go type, pointer-ness
//! and `omitempty`; [`normalize`] is `json.Marshal(json.Unmarshal(x))` over
//! that table. It drops what the struct does not know, fills what Go always
//! writes (`authentication`, `authorization`, `containerRuntimeEndpoint`,
//! every `metav1.Duration` as `0s`, `memorySwap: {}`, `crashLoopBackOff: {}`,
//! `logging`), omits empty `omitempty` values, and re-formats typed values
//! (durations in Go form, quantities canonical, times in UTC). Key order is
//! not Go's struct order: sigs.k8s.io/yaml sorts keys.
//!
//! Version skew: a field carries the k8s.io/kubelet minor that introduced it
//! ([`Field::since`]); a provider whose extension is built against an older
//! library (a profile's `kubeletLibrary`, e.g. `0.35` for azure and alicloud)
//! loses the newer fields on re-encode, as the Go extension does.

use std::borrow::Cow;

use serde_json::{Map, Number, Value};

use super::yaml::{Node, emit, key_order};
pub use crate::gardener::kubelet::{Field, NEWEST_LIBRARY, OLDEST_LIBRARY, SCHEMA, Ty};

pub const API_VERSION: &str = "kubelet.config.k8s.io/v1beta1";
pub const KIND: &str = "KubeletConfiguration";

/// Why a kubelet configuration cannot be decoded (or a value set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

fn err<T>(message: String) -> Result<T, ConfigError> {
    Err(ConfigError(message))
}

/// Why [`decode`] stopped: the configuration is not one Go decodes, or the
/// request's budget ran out while reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    Config(ConfigError),
    Exhausted(crate::budget::Exhausted),
}

impl From<ConfigError> for DecodeError {
    fn from(e: ConfigError) -> Self {
        DecodeError::Config(e)
    }
}

/// Decode the file's YAML into the struct's JSON form (what `json.Marshal`
/// of the decoded struct gives), for a library of minor `library`.
/// gardenlet's block YAML is read by [`super::block`]; anything that reader
/// is not sure of by yaml.v2's reading ([`super::yamltojson`]).
pub fn decode(text: &str, library: u32) -> Result<Map<String, Value>, DecodeError> {
    let value = match super::block::read(text) {
        Some(value) => value,
        None => super::yamltojson::to_json(text, false).map_err(|e| match e {
            super::yamltojson::YamlError::Exhausted(e) => DecodeError::Exhausted(e),
            e => DecodeError::Config(ConfigError(format!(
                "could not decode kubelet configuration from YAML: {e}"
            ))),
        })?,
    };
    let Value::Object(map) = value else {
        return Err(ConfigError(format!(
            "could not decode kubelet configuration from YAML: not a map but {}",
            kind_of(&value)
        ))
        .into());
    };
    for (key, want) in [("apiVersion", API_VERSION), ("kind", KIND)] {
        match map.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s == want => {}
            Some(other) => {
                return Err(ConfigError(format!(
                    "could not decode kubelet configuration from YAML: {key} {} is not {want:?}",
                    excerpt_of(other)
                ))
                .into());
            }
        }
    }
    Ok(normalize(&Value::Object(map), library)?)
}

/// A value of the input for a message: at most an excerpt of it.
fn excerpt_of(v: &Value) -> String {
    match v {
        Value::String(s) => super::quote::excerpt(s),
        other => {
            let text = other.to_string();
            super::quote::cut(&text).into_owned()
        }
    }
}

/// `json.Marshal(json.Unmarshal(object))` over [`SCHEMA`]: apiVersion and
/// kind first set, as the codec does.
pub fn normalize(object: &Value, library: u32) -> Result<Map<String, Value>, ConfigError> {
    let mut out = decode_struct(object, SCHEMA, library, &At::Root)?;
    out.insert("apiVersion".into(), Value::String(API_VERSION.into()));
    out.insert("kind".into(), Value::String(KIND.into()));
    Ok(out)
}

/// The YAML Gardener's codec writes for the struct's JSON form.
pub fn encode(object: &Map<String, Value>) -> String {
    emit(&map_node(object))
}

/// The value at the dotted `path`, if there is one.
pub fn get<'a>(object: &'a Map<String, Value>, path: &[String]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut value = object.get(first)?;
    for key in rest {
        value = value.as_object()?.get(key)?;
    }
    Some(value)
}

/// Set the field at the dotted `path` (struct fields, then map keys) to
/// `value`; [`normalize`] afterwards types and checks it.
pub fn set(object: &mut Map<String, Value>, path: &[String], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut node = object;
    for key in parents {
        let slot = node
            .entry(key.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        node = slot.as_object_mut().expect("just made a map");
    }
    node.insert(last.clone(), value);
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Where a value is, written only when an error names it (`a.b[0].c`):
/// building the text for every field was a tenth of the decoding time.
#[derive(Clone, Copy)]
enum At<'a> {
    Root,
    Key(&'a At<'a>, &'a str),
    Index(&'a At<'a>, usize),
}

impl std::fmt::Display for At<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            At::Root => Ok(()),
            // Map keys come from the input: at most an excerpt of each.
            At::Key(At::Root, key) => f.write_str(&super::quote::cut(key)),
            At::Key(parent, key) => write!(f, "{parent}.{}", super::quote::cut(key)),
            At::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

/// The indices of a struct's fields in the byte order of their JSON names,
/// the order of a decoded map's keys: [`decode_struct`] walks both side by
/// side instead of looking each of the ~150 fields up in the map (measured:
/// the look-ups and inserts were half of the decoding time). Computed once
/// per struct of [`SCHEMA`], keyed by the address of its field list: the
/// root is a `static` and every inner list is read out of it, so each has
/// one address (a `const` root missed the cache on every decode, see
/// [`SCHEMA`]); a list the cache does not know is sorted on the spot.
fn name_order(fields: &'static [Field]) -> Cow<'static, [usize]> {
    use std::collections::HashMap;
    use std::sync::OnceLock;
    fn sorted(fields: &[Field]) -> Vec<usize> {
        let mut order: Vec<usize> = (0..fields.len()).collect();
        order.sort_by_key(|&i| fields[i].name);
        order
    }
    fn walk(fields: &'static [Field], out: &mut HashMap<usize, Vec<usize>>) {
        if out.contains_key(&(fields.as_ptr() as usize)) {
            return;
        }
        out.insert(fields.as_ptr() as usize, sorted(fields));
        for field in fields {
            let mut ty = &field.ty;
            while let Ty::Map(inner) | Ty::List(inner) = ty {
                ty = inner;
            }
            if let Ty::Struct(inner) = ty {
                walk(inner, out);
            }
        }
    }
    static ORDERS: OnceLock<HashMap<usize, Vec<usize>>> = OnceLock::new();
    let orders = ORDERS.get_or_init(|| {
        let mut out = HashMap::new();
        walk(SCHEMA, &mut out);
        out
    });
    match orders.get(&(fields.as_ptr() as usize)) {
        Some(order) => Cow::Borrowed(order),
        None => Cow::Owned(sorted(fields)),
    }
}

fn mismatch<T>(path: &At<'_>, got: &Value, ty: &str) -> Result<T, ConfigError> {
    err(format!(
        "field {path}: cannot unmarshal {} into Go value of type {ty}",
        kind_of(got)
    ))
}

fn decode_struct(
    object: &Value,
    fields: &'static [Field],
    library: u32,
    path: &At<'_>,
) -> Result<Map<String, Value>, ConfigError> {
    let empty = Map::new();
    let map = match object {
        Value::Object(map) => map,
        Value::Null => &empty,
        other => return mismatch(path, other, "struct"),
    };
    let mut out: Vec<(String, Value)> = Vec::new();
    let mut input = map.iter().peekable();
    for &k in name_order(fields).iter() {
        let field = &fields[k];
        let mut raw = None;
        while let Some((key, value)) = input.peek() {
            match key.as_str().cmp(field.name) {
                std::cmp::Ordering::Less => {}
                std::cmp::Ordering::Equal => raw = Some(*value),
                std::cmp::Ordering::Greater => break,
            }
            input.next();
        }
        if field.since > library {
            continue;
        }
        if field.ptr && matches!(raw, None | Some(Value::Null)) {
            // A nil pointer (most of the struct).
            if !field.omitempty {
                out.push((field.name.into(), Value::Null));
            }
            continue;
        }
        let here = At::Key(path, field.name);
        let value = match raw {
            None | Some(Value::Null) if field.ptr => None,
            None => Some(zero(&field.ty, library, &here)?),
            Some(Value::Null) => Some(null_into(&field.ty, library, &here)?),
            Some(v) => Some(decode_value(v, &field.ty, library, &here)?),
        };
        match value {
            None if field.omitempty => {}
            None => out.push((field.name.into(), Value::Null)),
            Some(v) if field.omitempty && !field.ptr && is_empty(&v, &field.ty) => {}
            Some(v) => out.push((field.name.into(), v)),
        }
    }
    // In key order already: the map is built without searching.
    Ok(out.into_iter().collect())
}

/// The marshalled zero value of a non-pointer field.
fn zero(ty: &Ty, library: u32, path: &At<'_>) -> Result<Value, ConfigError> {
    Ok(match ty {
        Ty::Str => Value::String(String::new()),
        Ty::Bool => Value::Bool(false),
        Ty::I32 | Ty::I64 | Ty::U32 | Ty::F64 | Ty::FlushFrequency => Value::from(0),
        Ty::Duration => Value::String("0s".into()),
        Ty::Quantity => Value::String("0".into()),
        Ty::Time => Value::Null,
        Ty::Map(_) | Ty::List(_) => Value::Null,
        Ty::Struct(fields) => Value::Object(decode_struct(&Value::Null, fields, library, path)?),
    })
}

/// A JSON `null` decoded into a non-pointer field: Go leaves most types
/// alone, but `metav1.Duration`'s UnmarshalJSON rejects it.
fn null_into(ty: &Ty, library: u32, path: &At<'_>) -> Result<Value, ConfigError> {
    match ty {
        Ty::Duration => err(format!("field {path}: time: invalid duration \"\"")),
        _ => zero(ty, library, path),
    }
}

/// Go's `omitempty`: false, 0, "", and empty (or nil) maps and lists.
/// Structs, durations and quantities are never empty.
fn is_empty(v: &Value, ty: &Ty) -> bool {
    match (ty, v) {
        (Ty::Struct(_) | Ty::Duration | Ty::Quantity | Ty::FlushFrequency, _) => false,
        (_, Value::Null) => true,
        (_, Value::Bool(b)) => !b,
        (_, Value::Number(n)) => n.as_f64() == Some(0.0),
        (_, Value::String(s)) => s.is_empty(),
        (_, Value::Array(a)) => a.is_empty(),
        (_, Value::Object(m)) => m.is_empty(),
    }
}

fn integer(v: &Value, path: &At<'_>, ty: &str, min: i128, max: i128) -> Result<Value, ConfigError> {
    let Value::Number(n) = v else {
        return mismatch(path, v, ty);
    };
    let value = if let Some(i) = n.as_i64() {
        i128::from(i)
    } else if let Some(u) = n.as_u64() {
        i128::from(u)
    } else {
        // A YAML float is JSON's number text; Go accepts it for an
        // integer only when it is one (`110.0` is written `110`).
        let f = n.as_f64().unwrap_or(f64::NAN);
        if f.fract() != 0.0 || !f.is_finite() || f.abs() > 1e30 {
            return err(format!(
                "field {path}: cannot unmarshal number {n} into Go value of type {ty}"
            ));
        }
        f as i128
    };
    if value < min || value > max {
        return err(format!(
            "field {path}: cannot unmarshal number {n} into Go value of type {ty}"
        ));
    }
    Ok(Value::Number(Number::from(value as i64)))
}

fn decode_value(v: &Value, ty: &Ty, library: u32, path: &At<'_>) -> Result<Value, ConfigError> {
    match ty {
        Ty::Str => match v {
            Value::String(_) => Ok(v.clone()),
            _ => mismatch(path, v, "string"),
        },
        Ty::Bool => match v {
            Value::Bool(_) => Ok(v.clone()),
            _ => mismatch(path, v, "bool"),
        },
        Ty::I32 => integer(v, path, "int32", i128::from(i32::MIN), i128::from(i32::MAX)),
        Ty::I64 => integer(v, path, "int64", i128::from(i64::MIN), i128::from(i64::MAX)),
        Ty::U32 => integer(v, path, "uint32", 0, i128::from(u32::MAX)),
        Ty::F64 => match v {
            Value::Number(_) => Ok(v.clone()),
            _ => mismatch(path, v, "float64"),
        },
        Ty::Duration => match v {
            Value::String(s) => parse_duration(s)
                .map(|d| Value::String(format_duration(d)))
                .map_err(|e| ConfigError(format!("field {path}: {e}"))),
            _ => mismatch(path, v, "string"),
        },
        Ty::FlushFrequency => match v {
            Value::String(s) => parse_duration(s)
                .map(|d| Value::String(format_duration(d)))
                .map_err(|e| ConfigError(format!("field {path}: {e}"))),
            _ => integer(
                v,
                path,
                "time.Duration",
                i128::from(i64::MIN),
                i128::from(i64::MAX),
            ),
        },
        Ty::Quantity => {
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return mismatch(path, v, "resource.Quantity"),
            };
            canonical_quantity(&text)
                .map(Value::String)
                .map_err(|e| ConfigError(format!("field {path}: {e}")))
        }
        Ty::Time => match v {
            Value::String(s) => rfc3339_utc(s).map(Value::String).ok_or_else(|| {
                ConfigError(format!(
                    "field {path}: {} is not an RFC 3339 time",
                    super::quote::excerpt(s)
                ))
            }),
            _ => mismatch(path, v, "metav1.Time"),
        },
        Ty::Map(inner) => {
            let Value::Object(map) = v else {
                return mismatch(path, v, "map");
            };
            let mut out = Map::new();
            for (key, item) in map {
                let here = At::Key(path, key);
                let value = match item {
                    Value::Null => Value::Null,
                    item => decode_value(item, inner, library, &here)?,
                };
                out.insert(key.clone(), value);
            }
            Ok(Value::Object(out))
        }
        Ty::List(inner) => {
            let Value::Array(items) = v else {
                return mismatch(path, v, "slice");
            };
            items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let here = At::Index(path, i);
                    match (item, inner) {
                        (Value::Null, Ty::Struct(fields)) => {
                            Ok(Value::Object(decode_struct(item, fields, library, &here)?))
                        }
                        (Value::Null, _) => zero(inner, library, &here),
                        _ => decode_value(item, inner, library, &here),
                    }
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array)
        }
        Ty::Struct(fields) => decode_struct(v, fields, library, path).map(Value::Object),
    }
}

/// The YAML tree of the struct's JSON form, keys in yaml.v2's order.
fn node(v: &Value) -> Node<'_> {
    match v {
        Value::Null => Node::Null,
        Value::Bool(b) => Node::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Node::Int(i.to_string()),
            (None, Some(u), _) => Node::Int(u.to_string()),
            (None, None, Some(f)) if f.fract() == 0.0 && f.abs() < 1e21 => {
                Node::Int(format!("{f:.0}"))
            }
            (None, None, Some(f)) => Node::Float(f),
            _ => Node::Null,
        },
        Value::String(s) => Node::Str(Cow::Borrowed(s)),
        Value::Array(items) => Node::Seq(items.iter().map(node).collect()),
        Value::Object(map) => map_node(map),
    }
}

fn map_node(map: &Map<String, Value>) -> Node<'_> {
    let mut entries: Vec<(Cow<'_, str>, Node<'_>)> = map
        .iter()
        .map(|(k, v)| (Cow::Borrowed(k.as_str()), node(v)))
        .collect();
    // The map's order is the bytes'; yaml.v2's differs from it only where a
    // key has a digit or another non-letter, so keys of letters alone (the
    // struct's field names) are in order already.
    if !map
        .keys()
        .all(|k| k.bytes().all(|b| b.is_ascii_alphabetic()))
    {
        entries.sort_by(|a, b| key_order(&a.0, &b.0));
    }
    Node::Map(entries)
}

const NANOSECOND: u64 = 1;
const MICROSECOND: u64 = 1_000;
const MILLISECOND: u64 = 1_000_000;
const SECOND: u64 = 1_000_000_000;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;

/// Go's `time.ParseDuration`, in nanoseconds.
pub fn parse_duration(text: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {}", super::quote::excerpt(text));
    let mut s = text.as_bytes();
    let mut negative = false;
    if let Some((&c, rest)) = s.split_first()
        && (c == b'-' || c == b'+')
    {
        negative = c == b'-';
        s = rest;
    }
    if s == b"0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let limit = 1u64 << 63;
    let mut total: u64 = 0;
    while !s.is_empty() {
        if !(s[0] == b'.' || s[0].is_ascii_digit()) {
            return Err(invalid());
        }
        let start = s.len();
        let mut v: u64 = 0;
        while let Some((&c, rest)) = s.split_first()
            && c.is_ascii_digit()
        {
            if v > limit / 10 {
                return Err(invalid());
            }
            v = v * 10 + u64::from(c - b'0');
            if v > limit {
                return Err(invalid());
            }
            s = rest;
        }
        let pre = start != s.len();
        let (mut frac, mut scale, mut post) = (0u64, 1f64, false);
        if s.first() == Some(&b'.') {
            s = &s[1..];
            let before = s.len();
            let mut overflow = false;
            while let Some((&c, rest)) = s.split_first()
                && c.is_ascii_digit()
            {
                s = rest;
                if overflow {
                    continue;
                }
                if frac > (limit - 1) / 10 {
                    overflow = true;
                    continue;
                }
                let y = frac * 10 + u64::from(c - b'0');
                if y > limit {
                    overflow = true;
                    continue;
                }
                frac = y;
                scale *= 10.0;
            }
            post = before != s.len();
        }
        if !pre && !post {
            return Err(invalid());
        }
        let unit_len = s
            .iter()
            .position(|c| *c == b'.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if unit_len == 0 {
            return Err(format!(
                "time: missing unit in duration {}",
                super::quote::excerpt(text)
            ));
        }
        let unit_text = String::from_utf8_lossy(&s[..unit_len]).into_owned();
        s = &s[unit_len..];
        let unit = match unit_text.as_str() {
            "ns" => NANOSECOND,
            "us" | "\u{b5}s" | "\u{3bc}s" => MICROSECOND,
            "ms" => MILLISECOND,
            "s" => SECOND,
            "m" => MINUTE,
            "h" => HOUR,
            _ => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    super::quote::excerpt(&unit_text),
                    super::quote::excerpt(text)
                ));
            }
        };
        if v > limit / unit {
            return Err(invalid());
        }
        v *= unit;
        if frac > 0 {
            v += (frac as f64 * (unit as f64 / scale)) as u64;
            if v > limit {
                return Err(invalid());
            }
        }
        total += v;
        if total > limit {
            return Err(invalid());
        }
    }
    if negative {
        return Ok((total as i128).wrapping_neg() as i64);
    }
    if total > limit - 1 {
        return Err(invalid());
    }
    Ok(total as i64)
}

/// Go's `time.Duration.String`.
pub fn format_duration(d: i64) -> String {
    let negative = d < 0;
    let mut u = d.unsigned_abs();
    let mut out = String::new();
    if u < SECOND {
        let (prec, unit) = match u {
            0 => return "0s".into(),
            u if u < MICROSECOND => (0, "ns"),
            u if u < MILLISECOND => (3, "\u{b5}s"),
            _ => (6, "ms"),
        };
        let (frac, rest) = fmt_frac(u, prec);
        out = format!("{rest}{frac}{unit}");
    } else {
        let (frac, rest) = fmt_frac(u, 9);
        u = rest;
        let seconds = u % 60;
        u /= 60;
        let mut text = format!("{seconds}{frac}s");
        if u > 0 {
            text = format!("{}m{text}", u % 60);
            u /= 60;
            if u > 0 {
                text = format!("{u}h{text}");
            }
        }
        out.push_str(&text);
    }
    if negative {
        out.insert(0, '-');
    }
    out
}

/// `fmtFrac`: the fraction of `v / 10^prec` without trailing zeros (and no
/// point when it is zero), and the integer part.
fn fmt_frac(mut v: u64, prec: u32) -> (String, u64) {
    let mut digits = Vec::new();
    let mut printed = false;
    for _ in 0..prec {
        let digit = v % 10;
        printed = printed || digit != 0;
        if printed {
            digits.push(char::from(b'0' + digit as u8));
        }
        v /= 10;
    }
    if printed {
        digits.push('.');
    }
    digits.reverse();
    (digits.into_iter().collect(), v)
}

/// `resource.Quantity`'s canonical string (`Quantity.String`) of `text`.
pub fn canonical_quantity(text: &str) -> Result<String, String> {
    let bad = || {
        format!(
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {}",
            super::quote::excerpt(text)
        )
    };
    let (negative, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let number_len = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (number, suffix) = body.split_at(number_len);
    if number.is_empty() || number == "." || number.matches('.').count() > 1 {
        return Err(bad());
    }
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let digits = format!("{int}{frac}");
    let mut mantissa: i128 = digits.parse::<i128>().map_err(|_| bad())?;
    let mut scale: i32 = -(frac.len() as i32);
    let (base2, base10) = match suffix {
        "Ki" => (10, 0),
        "Mi" => (20, 0),
        "Gi" => (30, 0),
        "Ti" => (40, 0),
        "Pi" => (50, 0),
        "Ei" => (60, 0),
        "n" => (0, -9),
        "u" => (0, -6),
        "m" => (0, -3),
        "" => (0, 0),
        "k" => (0, 3),
        "M" => (0, 6),
        "G" => (0, 9),
        "T" => (0, 12),
        "P" => (0, 15),
        "E" => (0, 18),
        s if s.starts_with(['e', 'E']) => (0, s[1..].parse::<i32>().map_err(|_| bad())?),
        _ => return Err(bad()),
    };
    let binary = base2 > 0;
    let exponent_form = suffix.starts_with(['e', 'E']);
    mantissa = mantissa.checked_mul(1i128 << base2).ok_or_else(bad)?;
    scale += base10;
    // Round up (away from zero) below nano.
    if scale < -9 {
        let cut = 10i128.checked_pow((-9 - scale) as u32).ok_or_else(bad)?;
        let rounded = mantissa / cut + i128::from(mantissa % cut != 0);
        mantissa = rounded;
        scale = -9;
    }
    if mantissa == 0 {
        return Ok("0".into());
    }
    let sign = if negative { "-" } else { "" };
    // BinarySI stays binary when the value is a whole number of at least 1024.
    let whole = if scale >= 0 {
        mantissa.checked_mul(10i128.checked_pow(scale as u32).unwrap_or(0))
    } else {
        let d = 10i128.pow((-scale) as u32);
        (mantissa % d == 0).then(|| mantissa / d)
    };
    if binary && let Some(mut whole) = whole.filter(|w| *w >= 1024) {
        let mut exponent = 0;
        while whole % 1024 == 0 && exponent < 6 {
            whole /= 1024;
            exponent += 1;
        }
        let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][exponent];
        return Ok(format!("{sign}{whole}{suffix}"));
    }
    while mantissa % 10 == 0 {
        mantissa /= 10;
        scale += 1;
    }
    match scale.rem_euclid(3) {
        1 => {
            mantissa *= 10;
            scale -= 1;
        }
        2 => {
            mantissa *= 100;
            scale -= 2;
        }
        _ => {}
    }
    let suffix = if exponent_form {
        if scale == 0 {
            String::new()
        } else {
            format!("e{scale}")
        }
    } else {
        match scale {
            -9 => "n".into(),
            -6 => "u".into(),
            -3 => "m".into(),
            0 => String::new(),
            3 => "k".into(),
            6 => "M".into(),
            9 => "G".into(),
            12 => "T".into(),
            15 => "P".into(),
            18 => "E".into(),
            s => format!("e{s}"),
        }
    };
    Ok(format!("{sign}{mantissa}{suffix}"))
}

/// An RFC 3339 time as `metav1.Time` writes it: UTC, whole seconds.
fn rfc3339_utc(s: &str) -> Option<String> {
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        rest = &frac[n..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        z if z.len() == 6 && (z.starts_with('+') || z.starts_with('-')) && &z[3..4] == ":" => {
            let h: i64 = z[1..3].parse().ok()?;
            let m: i64 = z[4..6].parse().ok()?;
            let sign = if z.starts_with('-') { -1 } else { 1 };
            sign * (h * 3600 + m * 60)
        }
        _ => return None,
    };
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let total = days * 86400 + hour * 3600 + minute * 60 + second - offset;
    let (days, secs) = (total.div_euclid(86400), total.rem_euclid(86400));
    let (y, m, d) = civil_from_days(days);
    Some(format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    ))
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `decode_struct` walks a map's keys beside the fields sorted by name:
    /// that needs serde_json's sorted map (a dependency turning on
    /// `preserve_order` would break it, and this).
    #[test]
    fn maps_iterate_in_the_byte_order_of_their_keys() {
        let map: Map<String, Value> = ["b", "a", "B", "aa"]
            .into_iter()
            .map(|k| (k.to_string(), Value::Null))
            .collect();
        let keys: Vec<&str> = map.keys().map(String::as_str).collect();
        assert_eq!(keys, ["B", "a", "aa", "b"]);
        let order = name_order(SCHEMA);
        assert!(
            matches!(order, Cow::Borrowed(_)),
            "the root's order is computed once, not per decode"
        );
        assert_eq!(order.len(), SCHEMA.len());
        assert!(
            order
                .windows(2)
                .all(|w| SCHEMA[w[0]].name < SCHEMA[w[1]].name)
        );
        // Every struct the decoder reaches through the schema is cached too.
        fn inner_structs(fields: &'static [Field], out: &mut Vec<&'static [Field]>) {
            for field in fields {
                let mut ty = &field.ty;
                while let Ty::Map(inner) | Ty::List(inner) = ty {
                    ty = inner;
                }
                if let Ty::Struct(inner) = ty {
                    out.push(inner);
                    inner_structs(inner, out);
                }
            }
        }
        let mut structs = Vec::new();
        inner_structs(SCHEMA, &mut structs);
        assert!(structs.len() > 10, "{}", structs.len());
        for fields in structs {
            assert!(matches!(name_order(fields), Cow::Borrowed(_)));
        }
    }

    /// The golden vector of Gardener's `configcodec_test.go` (80 lines).
    pub const GOLDEN: &str = include_str!("testdata/kubelet-config-golden.yaml");

    #[test]
    fn the_golden_vector_round_trips_byte_for_byte() {
        assert_eq!(GOLDEN.lines().count(), 92);
        let decoded = decode(GOLDEN, NEWEST_LIBRARY).unwrap();
        assert_eq!(encode(&decoded), GOLDEN);
    }

    #[test]
    fn go_fills_zero_values_and_drops_unknown_fields() {
        let decoded = decode(
            "kind: KubeletConfiguration\nunknownField: 1\nmaxPods: 110\nport: 0\n",
            NEWEST_LIBRARY,
        )
        .unwrap();
        let text = encode(&decoded);
        assert!(text.starts_with("apiVersion: kubelet.config.k8s.io/v1beta1\nauthentication:\n  anonymous: {}\n  webhook:\n    cacheTTL: 0s\n  x509: {}\nauthorization:\n  webhook:\n    cacheAuthorizedTTL: 0s\n    cacheUnauthorizedTTL: 0s\n"), "{text}");
        assert!(
            !text.contains("unknownField") && !text.contains("port:"),
            "{text}"
        );
        assert!(text.contains("maxPods: 110\n"));
        assert_eq!(encode(&decode(&text, NEWEST_LIBRARY).unwrap()), text);
    }

    #[test]
    fn version_skew_drops_the_newer_fields() {
        let text = "tlsCurvePreferences: [23]\nmemoryReservationPolicy: TieredReservation\n";
        let new = encode(&decode(text, 36).unwrap());
        assert!(
            new.contains("tlsCurvePreferences:\n- 23\n")
                && new.contains("memoryReservationPolicy: TieredReservation")
        );
        let old = encode(&decode(text, 35).unwrap());
        assert!(!old.contains("tlsCurvePreferences") && !old.contains("memoryReservationPolicy"));
    }

    #[test]
    fn bad_values_name_the_field() {
        let e = |t: &str| match decode(t, NEWEST_LIBRARY).unwrap_err() {
            DecodeError::Config(e) => e.0,
            DecodeError::Exhausted(e) => panic!("{e}"),
        };
        assert_eq!(
            e("maxPods: lots\n"),
            "field maxPods: cannot unmarshal string into Go value of type int32"
        );
        assert_eq!(
            e("syncFrequency: 1x\n"),
            "field syncFrequency: time: unknown unit \"x\" in duration \"1x\""
        );
        assert!(
            e("authentication: []\n").starts_with("field authentication: cannot unmarshal array")
        );
        assert!(e("- a\n").contains("not a map"));
        assert!(e("kind: Foo\n").contains("kind \"Foo\""));
        assert!(e("a: [\n").starts_with("could not decode kubelet configuration from YAML"));
    }

    #[test]
    fn durations_and_quantities_like_go() {
        for (text, want) in [
            ("120s", "2m0s"),
            ("1h", "1h0m0s"),
            ("1.5s", "1.5s"),
            ("100ms", "100ms"),
            ("0", "0s"),
            ("2us", "2\u{b5}s"),
            ("-1m", "-1m0s"),
            ("1h30m", "1h30m0s"),
        ] {
            assert_eq!(
                format_duration(parse_duration(text).unwrap()),
                want,
                "{text}"
            );
        }
        assert!(
            parse_duration("").is_err()
                && parse_duration("1").is_err()
                && parse_duration(".s").is_err()
        );
        for (text, want) in [
            ("0", "0"),
            ("1000", "1k"),
            ("1500", "1500"),
            ("0.5", "500m"),
            ("1Ki", "1Ki"),
            ("1024Ki", "1Mi"),
            ("1.5Gi", "1536Mi"),
            ("100Mi", "100Mi"),
            ("512", "512"),
            ("1e3", "1e3"),
            ("1n", "1n"),
        ] {
            assert_eq!(canonical_quantity(text).unwrap(), want, "{text}");
        }
        assert_eq!(
            rfc3339_utc("2026-01-01T01:00:00+02:00").unwrap(),
            "2025-12-31T23:00:00Z"
        );
    }
}
