//! YAML read as Gardener's Go code reads it: sigs.k8s.io/yaml v1.6.0
//! `YAMLToJSON` (and `YAMLToJSONStrict`), which decodes the first document
//! with go.yaml.in/yaml/v2 (v2.4) into generic values and converts them to
//! JSON. The kubelet configuration codec and the provider configs of the
//! `cloudprovider` Secret decode their YAML this way before the JSON reaches
//! the Go struct.
//!
//! The syntax is read by `granit-parser` (the YAML parser under
//! serde-saphyr); what a node means is yaml.v2's, reproduced from its
//! `decode.go` and `resolve.go` (issue 27 found the YAML 1.2 reading of the
//! general parser answering differently):
//! - plain scalars resolve by YAML 1.1 rules: `y`, `yes`, `on`, `off` … are
//!   booleans; integers are Go's `ParseInt(s, 0, 64)` after dropping `_`, so
//!   `0110` is octal (72), `0x1F` hex, `0b101` binary; then
//!   `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?` floats; a
//!   timestamp stays the text it was;
//! - a quoted or block scalar is a string;
//! - tags: `!!str`, `!!int`, `!!float`, `!!bool`, `!!null`, `!!timestamp`
//!   resolve the text as that type (or fail: "cannot decode !!str `x` as a
//!   !!int"), `!!binary` decodes base64, and any other tag (`!custom`, the
//!   non-specific `!`) leaves the text a string — so `maxPods: !custom 110`
//!   is the string "110", which the struct then refuses;
//! - `<<` merges maps (earlier entries of a merged list take precedence),
//!   aliases copy their anchor's value, a document whose aliases make up too
//!   much of it is refused as yaml.v2 refuses it;
//! - keys become strings as sigs.k8s.io/yaml converts them (`1`, `true`,
//!   floats with `%g` at float32 precision); a null or unsigned 64-bit key
//!   is an error; a duplicate key wins over the earlier one, except in
//!   strict mode where it is an error;
//! - NaN and infinities are errors (`json.Marshal` refuses them).
//!
//! Everything built is counted against the request's budget
//! ([`crate::budget`]), aliases included, so an alias bomb or a list of
//! millions of tiny maps stops at the allowance; nesting is limited by the
//! parser (255 flow and 255 block levels) and alias chains by [`MAX_DEPTH`].

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use granit_parser::{Event, Parser, ScalarStyle, Tag};
use serde_json::{Map, Number, Value};

use crate::budget::{Exhausted, Ticker, cost};

/// Nodes nested deeper than this (through aliases) are refused.
pub const MAX_DEPTH: usize = 1000;

const LONG_TAG_PREFIX: &str = "tag:yaml.org,2002:";
const STR: &str = "tag:yaml.org,2002:str";
const BOOL: &str = "tag:yaml.org,2002:bool";
const INT: &str = "tag:yaml.org,2002:int";
const FLOAT: &str = "tag:yaml.org,2002:float";
const NULL: &str = "tag:yaml.org,2002:null";
const TIMESTAMP: &str = "tag:yaml.org,2002:timestamp";
const BINARY: &str = "tag:yaml.org,2002:binary";
const MERGE: &str = "tag:yaml.org,2002:merge";

/// Why YAML could not be converted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum YamlError {
    /// The text is not YAML, or yaml.v2 or the conversion to JSON refuses
    /// what it says. `line` is 1-based when known. The message names no
    /// more than an excerpt of the input.
    Invalid {
        line: Option<usize>,
        message: String,
    },
    /// The request's budget stopped the conversion.
    Exhausted(Exhausted),
}

impl YamlError {
    fn at(line: Option<usize>, message: impl Into<String>) -> YamlError {
        YamlError::Invalid {
            line,
            message: message.into(),
        }
    }

    /// The error without anything of the input: where it is, and of what
    /// kind (for a Secret's YAML, whose text must never be repeated).
    pub fn without_input(&self) -> String {
        match self {
            YamlError::Invalid {
                line: Some(line), ..
            } => {
                format!("yaml: line {line}: the value is not valid YAML for this field")
            }
            YamlError::Invalid { line: None, .. } => {
                "yaml: the value is not valid YAML for this field".to_string()
            }
            YamlError::Exhausted(e) => e.to_string(),
        }
    }
}

impl fmt::Display for YamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            YamlError::Invalid {
                line: Some(line),
                message,
            } => write!(f, "yaml: line {line}: {message}"),
            YamlError::Invalid {
                line: None,
                message,
            } => write!(f, "yaml: {message}"),
            YamlError::Exhausted(e) => e.fmt(f),
        }
    }
}

impl From<Exhausted> for YamlError {
    fn from(e: Exhausted) -> Self {
        YamlError::Exhausted(e)
    }
}

/// `YAMLToJSON` (`strict`: `YAMLToJSONStrict`) of `text`, as a JSON value.
pub fn to_json(text: &str, strict: bool) -> Result<Value, YamlError> {
    let tree = Tree::parse(text)?;
    let Some(root) = tree.root else {
        return Ok(Value::Null);
    };
    let mut decoder = Decoder {
        tree: &tree,
        strict,
        ticker: Ticker::new(),
        aliases: Vec::new(),
        decode_count: 0,
        alias_count: 0,
        alias_depth: 0,
    };
    let value = decoder.decode(root, 0)?;
    decoder.ticker.flush()?;
    Ok(value)
}

/// A node of the first document, as yaml.v2's parser builds it.
#[derive(Debug)]
enum Node<'a> {
    Scalar {
        value: Cow<'a, str>,
        /// The tag in its long form (`tag:yaml.org,2002:int`, `!custom`).
        tag: Option<String>,
        /// yaml.v2's `implicit`: plain without a tag, or tagged `!`.
        implicit: bool,
        line: usize,
    },
    Seq(Vec<usize>, usize),
    /// Keys and values, alternating.
    Map(Vec<usize>, usize),
    Alias(usize, usize),
}

struct Tree<'a> {
    nodes: Vec<Node<'a>>,
    root: Option<usize>,
}

/// What one parsed node costs while it is held.
const NODE_BYTES: usize = std::mem::size_of::<Node<'static>>() + 8;

fn tag_text(tag: Option<Cow<'_, Tag>>) -> Option<String> {
    tag.map(|t| format!("{}{}", t.handle(), t.suffix()))
}

impl<'a> Tree<'a> {
    fn parse(text: &'a str) -> Result<Tree<'a>, YamlError> {
        let mut tree = Tree {
            nodes: Vec::new(),
            root: None,
        };
        // Open collections: their node and, for maps, nothing else.
        let mut open: Vec<usize> = Vec::new();
        let mut anchors: HashMap<usize, usize> = HashMap::new();
        let mut ticker = Ticker::new();
        let mut started = false;
        for event in Parser::new_from_str(text) {
            let (event, span) =
                event.map_err(|e| YamlError::at(Some(e.marker().line()), bounded(&e.info())))?;
            ticker.step(NODE_BYTES)?;
            let line = span.start.line();
            let node = match event {
                Event::StreamStart | Event::StreamEnd => continue,
                Event::DocumentStart(..) => {
                    started = true;
                    continue;
                }
                // Only the first document is read, as yaml.v2's Unmarshal.
                Event::DocumentEnd => break,
                Event::SequenceEnd | Event::MappingEnd => {
                    open.pop();
                    continue;
                }
                Event::Scalar(value, style, anchor, tag) => {
                    let tag = tag_text(tag);
                    let implicit = (tag.is_none() && style == ScalarStyle::Plain)
                        || tag.as_deref() == Some("!");
                    ticker.step(value.len())?;
                    tree.push(
                        Node::Scalar {
                            value,
                            tag,
                            implicit,
                            line,
                        },
                        anchor,
                        &mut anchors,
                    )
                }
                Event::SequenceStart(_, anchor, _) => {
                    tree.push(Node::Seq(Vec::new(), line), anchor, &mut anchors)
                }
                Event::MappingStart(_, anchor, _) => {
                    tree.push(Node::Map(Vec::new(), line), anchor, &mut anchors)
                }
                Event::Alias(id) => {
                    let Some(&target) = anchors.get(&id) else {
                        return Err(YamlError::at(Some(line), "unknown anchor referenced"));
                    };
                    tree.nodes.push(Node::Alias(target, line));
                    tree.nodes.len() - 1
                }
                _ => continue,
            };
            debug_assert!(started);
            match open.last().map(|&p| &mut tree.nodes[p]) {
                Some(Node::Seq(children, _) | Node::Map(children, _)) => children.push(node),
                _ => {
                    if tree.root.is_none() {
                        tree.root = Some(node);
                    }
                }
            }
            if matches!(tree.nodes[node], Node::Seq(..) | Node::Map(..)) {
                open.push(node);
            }
        }
        ticker.flush()?;
        Ok(tree)
    }

    fn push(
        &mut self,
        node: Node<'a>,
        anchor: usize,
        anchors: &mut HashMap<usize, usize>,
    ) -> usize {
        self.nodes.push(node);
        let index = self.nodes.len() - 1;
        if anchor != 0 {
            anchors.insert(anchor, index);
        }
        index
    }
}

/// A message of the parser, cut to a bounded length.
fn bounded(message: &str) -> String {
    const MAX: usize = 200;
    if message.len() <= MAX {
        return message.to_string();
    }
    let mut cut = MAX;
    while !message.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...", &message[..cut])
}

/// A map key as yaml.v2 holds it in a `map[interface{}]interface{}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Str(String),
    Int(i64),
    Uint(u64),
    Float(u64),
    Bool(bool),
    Null,
}

/// A resolved scalar (yaml.v2's `resolve` result).
#[derive(Debug, Clone, PartialEq)]
enum Scalar {
    Str(String),
    Int(i64),
    Uint(u64),
    Float(f64),
    Bool(bool),
    Null,
}

struct Decoder<'t, 'a> {
    tree: &'t Tree<'a>,
    strict: bool,
    ticker: Ticker,
    /// The aliases being expanded (yaml.v2 refuses one that contains itself).
    aliases: Vec<usize>,
    decode_count: usize,
    alias_count: usize,
    alias_depth: usize,
}

/// yaml.v2's `allowedAliasRatio`.
fn allowed_alias_ratio(decode_count: usize) -> f64 {
    const LOW: usize = 400_000;
    const HIGH: usize = 4_000_000;
    if decode_count <= LOW {
        0.99
    } else if decode_count >= HIGH {
        0.10
    } else {
        0.99 - 0.89 * ((decode_count - LOW) as f64 / (HIGH - LOW) as f64)
    }
}

impl Decoder<'_, '_> {
    /// yaml.v2's `unmarshal` into an `interface{}`, converted to JSON.
    fn decode(&mut self, node: usize, depth: usize) -> Result<Value, YamlError> {
        self.count()?;
        if depth > MAX_DEPTH {
            return Err(YamlError::at(
                None,
                format!("exceeded max depth of {MAX_DEPTH}"),
            ));
        }
        match &self.tree.nodes[node] {
            Node::Alias(target, line) => self.alias(node, *target, *line, depth),
            Node::Scalar { line, .. } => {
                let line = *line;
                match self.scalar(node)? {
                    Scalar::Float(f) if !f.is_finite() => Err(YamlError::at(
                        Some(line),
                        format!("json: unsupported value: {}", go_float_word(f)),
                    )),
                    scalar => {
                        let value = json_of(scalar);
                        if let Value::String(s) = &value {
                            self.ticker.step(s.len() + cost::STRING)?;
                        }
                        Ok(value)
                    }
                }
            }
            Node::Seq(children, _) => {
                let mut items = Vec::with_capacity(children.len());
                for &child in children {
                    self.ticker.step(cost::ELEMENT)?;
                    items.push(self.decode(child, depth + 1)?);
                }
                Ok(Value::Array(items))
            }
            Node::Map(..) => {
                let mut entries: Vec<(Key, Value)> = Vec::new();
                let mut index: HashMap<Key, usize> = HashMap::new();
                self.mapping(node, depth, &mut entries, &mut index)?;
                let mut map = Map::new();
                for (key, value) in entries {
                    map.insert(key_string(key)?, value);
                }
                Ok(Value::Object(map))
            }
        }
    }

    /// yaml.v2's decode counter and its check against alias bombs.
    fn count(&mut self) -> Result<(), YamlError> {
        self.decode_count += 1;
        if self.alias_depth > 0 {
            self.alias_count += 1;
        }
        if self.alias_count > 100
            && self.decode_count > 1000
            && self.alias_count as f64 / self.decode_count as f64
                > allowed_alias_ratio(self.decode_count)
        {
            return Err(YamlError::at(None, "document contains excessive aliasing"));
        }
        self.ticker.tick()?;
        Ok(())
    }

    fn alias(
        &mut self,
        alias: usize,
        target: usize,
        line: usize,
        depth: usize,
    ) -> Result<Value, YamlError> {
        if self.aliases.contains(&alias) {
            return Err(YamlError::at(Some(line), "anchor value contains itself"));
        }
        self.aliases.push(alias);
        self.alias_depth += 1;
        let value = self.decode(target, depth + 1);
        self.alias_depth -= 1;
        self.aliases.pop();
        value
    }

    /// The entries of the map `node` (following aliases) added to `entries`,
    /// merges included, in yaml.v2's order: a later key replaces an earlier
    /// one (strict: is an error).
    fn mapping(
        &mut self,
        node: usize,
        depth: usize,
        entries: &mut Vec<(Key, Value)>,
        index: &mut HashMap<Key, usize>,
    ) -> Result<(), YamlError> {
        if let Node::Alias(target, line) = self.tree.nodes[node] {
            if self.aliases.contains(&node) {
                return Err(YamlError::at(Some(line), "anchor value contains itself"));
            }
            self.aliases.push(node);
            self.alias_depth += 1;
            let merged = self.mapping(target, depth + 1, entries, index);
            self.alias_depth -= 1;
            self.aliases.pop();
            return merged;
        }
        let Node::Map(children, map_line) = &self.tree.nodes[node] else {
            return Err(YamlError::at(
                None,
                "map merge requires map or sequence of maps as the value",
            ));
        };
        let map_line = *map_line;
        for pair in children.chunks(2) {
            let (k, v) = (pair[0], pair[1]);
            if self.is_merge(k) {
                self.merge(v, depth, entries, index)?;
                continue;
            }
            let key = self.key(k, depth)?;
            let value = self.decode(v, depth + 1)?;
            self.ticker.step(if entries.is_empty() {
                cost::MAP
            } else {
                cost::ENTRY
            })?;
            match index.get(&key) {
                Some(_) if self.strict => {
                    let line = self.line_of(v).unwrap_or(map_line);
                    return Err(YamlError::at(
                        Some(line),
                        format!("key {} already set in map", key_words(&key)),
                    ));
                }
                Some(&i) => entries[i].1 = value,
                None => {
                    index.insert(key.clone(), entries.len());
                    entries.push((key, value));
                }
            }
        }
        Ok(())
    }

    /// yaml.v2's `merge`: a map, an alias of one, or a list of them (the
    /// earlier ones take precedence, so they are merged last).
    fn merge(
        &mut self,
        value: usize,
        depth: usize,
        entries: &mut Vec<(Key, Value)>,
        index: &mut HashMap<Key, usize>,
    ) -> Result<(), YamlError> {
        let want_map = || {
            YamlError::at(
                None,
                "map merge requires map or sequence of maps as the value",
            )
        };
        let target = self.resolve_alias(value)?;
        match &self.tree.nodes[target] {
            Node::Map(..) => self.mapping(value, depth + 1, entries, index),
            Node::Seq(children, _) if matches!(self.tree.nodes[value], Node::Seq(..)) => {
                for &child in children.iter().rev() {
                    let inner = self.resolve_alias(child)?;
                    if !matches!(self.tree.nodes[inner], Node::Map(..)) {
                        return Err(want_map());
                    }
                    self.mapping(child, depth + 1, entries, index)?;
                }
                Ok(())
            }
            _ => Err(want_map()),
        }
    }

    fn resolve_alias(&self, mut node: usize) -> Result<usize, YamlError> {
        let mut hops = 0;
        while let Node::Alias(target, line) = self.tree.nodes[node] {
            hops += 1;
            if hops > MAX_DEPTH {
                return Err(YamlError::at(Some(line), "anchor value contains itself"));
            }
            node = target;
        }
        Ok(node)
    }

    fn line_of(&self, node: usize) -> Option<usize> {
        match &self.tree.nodes[node] {
            Node::Scalar { line, .. }
            | Node::Seq(_, line)
            | Node::Map(_, line)
            | Node::Alias(_, line) => Some(*line),
        }
    }

    /// yaml.v2's `isMerge`.
    fn is_merge(&self, node: usize) -> bool {
        matches!(&self.tree.nodes[node], Node::Scalar { value, tag, implicit, .. }
            if value == "<<" && (*implicit || tag.as_deref() == Some(MERGE)))
    }

    /// A key as yaml.v2 decodes it into an `interface{}`.
    fn key(&mut self, node: usize, depth: usize) -> Result<Key, YamlError> {
        let target = self.resolve_alias(node)?;
        match &self.tree.nodes[target] {
            Node::Scalar { .. } => {
                self.count()?;
                Ok(match self.scalar(target)? {
                    Scalar::Str(s) => Key::Str(s),
                    Scalar::Int(i) => Key::Int(i),
                    Scalar::Uint(u) => Key::Uint(u),
                    Scalar::Float(f) => Key::Float(f.to_bits()),
                    Scalar::Bool(b) => Key::Bool(b),
                    Scalar::Null => Key::Null,
                })
            }
            _ => {
                // Decoded first, as yaml.v2 does, then refused.
                self.decode(node, depth + 1)?;
                Err(YamlError::at(
                    self.line_of(node),
                    "invalid map key: a map or a list",
                ))
            }
        }
    }

    /// yaml.v2's `prepare` and `scalar` for an `interface{}` target.
    fn scalar(&mut self, node: usize) -> Result<Scalar, YamlError> {
        let Node::Scalar {
            value,
            tag,
            implicit,
            line,
        } = &self.tree.nodes[node]
        else {
            unreachable!("called on scalars");
        };
        // (yaml.v2's `prepare` only skips allocating pointers for a null; an
        // `interface{}` target goes on to `scalar` whatever the text.)
        let tag = tag.as_deref().map(long_tag);
        if tag.is_none() && !implicit {
            return Ok(Scalar::Str(value.to_string()));
        }
        let (rtag, resolved) = resolve(tag.as_deref().unwrap_or(""), value)
            .map_err(|m| YamlError::at(Some(*line), m))?;
        Ok(match resolved {
            _ if rtag == BINARY => {
                let bytes = go_base64(value).ok_or_else(|| {
                    YamlError::at(Some(*line), "!!binary value contains invalid base64 data")
                })?;
                Scalar::Str(go_string_lossy(&bytes))
            }
            // A timestamp into an interface{} stays its text (yaml.v2).
            _ if rtag == TIMESTAMP => Scalar::Str(value.to_string()),
            other => other,
        })
    }
}

/// `longTag`: `!!x` is `tag:yaml.org,2002:x` (the parser already resolved
/// handles; a verbatim or local tag stays as written).
fn long_tag(tag: &str) -> String {
    match tag.strip_prefix("!!") {
        Some(rest) => format!("{LONG_TAG_PREFIX}{rest}"),
        None => tag.to_string(),
    }
}

fn short_tag(tag: &str) -> String {
    match tag.strip_prefix(LONG_TAG_PREFIX) {
        Some(rest) => format!("!!{rest}"),
        None => tag.to_string(),
    }
}

/// yaml.v2's `resolve(tag, in)`: the resolved tag and value, or its failure
/// message for an explicit tag the text is not.
fn resolve(tag: &str, text: &str) -> Result<(String, Scalar), String> {
    if !matches!(tag, "" | STR | BOOL | INT | FLOAT | NULL | TIMESTAMP) {
        return Ok((tag.to_string(), Scalar::Str(text.to_string())));
    }
    let (rtag, out) = resolve_plain(tag, text);
    match tag {
        "" | STR | BINARY => return Ok((rtag.to_string(), out)),
        _ if tag == rtag => return Ok((rtag.to_string(), out)),
        // yaml.v2 turns an `int` (not a `uint64`) into the float asked for.
        FLOAT if rtag == INT => {
            if let Scalar::Int(i) = out {
                return Ok((FLOAT.to_string(), Scalar::Float(i as f64)));
            }
        }
        _ => {}
    }
    Err(format!(
        "cannot decode {} `{}` as a {}",
        short_tag(rtag),
        super::quote::cut(text),
        short_tag(tag)
    ))
}

fn resolve_plain(tag: &str, text: &str) -> (&'static str, Scalar) {
    let str_of = || (STR, Scalar::Str(text.to_string()));
    let hint = match text.as_bytes().first() {
        None => b'N',
        Some(b'+' | b'-') => b'S',
        Some(b'0'..=b'9') => b'D',
        Some(b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~') => b'M',
        Some(b'.') => b'.',
        Some(_) => 0,
    };
    if hint == 0 || tag == STR || tag == BINARY {
        return str_of();
    }
    match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return (BOOL, Scalar::Bool(true));
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return (BOOL, Scalar::Bool(false));
        }
        "" | "~" | "null" | "Null" | "NULL" => return (NULL, Scalar::Null),
        ".nan" | ".NaN" | ".NAN" => return (FLOAT, Scalar::Float(f64::NAN)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return (FLOAT, Scalar::Float(f64::INFINITY));
        }
        "-.inf" | "-.Inf" | "-.INF" => return (FLOAT, Scalar::Float(f64::NEG_INFINITY)),
        _ => {}
    }
    match hint {
        b'.' => {
            if let Some(f) = go_parse_float(text) {
                return (FLOAT, Scalar::Float(f));
            }
        }
        b'D' | b'S' => {
            if (tag.is_empty() || tag == TIMESTAMP) && super::yaml::is_timestamp(text) {
                return (TIMESTAMP, Scalar::Str(text.to_string()));
            }
            let plain: Cow<'_, str> = if text.contains('_') {
                Cow::Owned(text.replace('_', ""))
            } else {
                Cow::Borrowed(text)
            };
            if let Some(i) = go_parse_int(&plain) {
                return (INT, Scalar::Int(i));
            }
            if let Some(u) = go_parse_uint(&plain) {
                return (INT, Scalar::Uint(u));
            }
            if super::yaml::is_yaml_float(&plain)
                && let Some(f) = go_parse_float(&plain)
            {
                return (FLOAT, Scalar::Float(f));
            }
            if let Some(bits) = plain.strip_prefix("0b") {
                if let Some(i) = radix(bits, 2).and_then(|u| i64::try_from(u).ok()) {
                    return (INT, Scalar::Int(i));
                }
                if let Some(u) = radix(bits, 2) {
                    return (INT, Scalar::Uint(u));
                }
            } else if let Some(bits) = plain.strip_prefix("-0b")
                && let Some(u) = radix(bits, 2)
                && u <= 1 << 63
            {
                return (INT, Scalar::Int((u as i64).wrapping_neg()));
            }
        }
        _ => {}
    }
    str_of()
}

/// Digits of `radix` as a `u64` (`strconv.ParseUint(s, radix, 64)`).
fn radix(digits: &str, radix: u32) -> Option<u64> {
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// The magnitude of `strconv.ParseUint(s, 0, 64)` without a sign.
fn go_base0(body: &str) -> Option<u64> {
    if let Some(rest) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        radix(rest, 16)
    } else if let Some(rest) = body.strip_prefix("0o").or_else(|| body.strip_prefix("0O")) {
        radix(rest, 8)
    } else if let Some(rest) = body.strip_prefix("0b").or_else(|| body.strip_prefix("0B")) {
        radix(rest, 2)
    } else if body.len() > 1 && body.starts_with('0') {
        radix(&body[1..], 8)
    } else {
        radix(body, 10)
    }
}

/// `strconv.ParseInt(s, 0, 64)`.
fn go_parse_int(s: &str) -> Option<i64> {
    let (negative, body) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let magnitude = go_base0(body)?;
    if negative {
        (magnitude <= 1 << 63).then(|| (magnitude as i64).wrapping_neg())
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// `strconv.ParseUint(s, 0, 64)` (no sign).
fn go_parse_uint(s: &str) -> Option<u64> {
    go_base0(s)
}

/// `strconv.ParseFloat(s, 64)` for decimal text; `None` when Go fails
/// (out of range included).
fn go_parse_float(s: &str) -> Option<f64> {
    if !s
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Go's `base64.StdEncoding.DecodeString` (line breaks skipped).
fn go_base64(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let cleaned: String = text.chars().filter(|c| !matches!(c, '\r' | '\n')).collect();
    base64::engine::general_purpose::STANDARD
        .decode(cleaned)
        .ok()
}

/// A Go string as `json.Marshal` writes it: each byte that is not part of
/// valid UTF-8 becomes U+FFFD.
fn go_string_lossy(mut bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let valid = e.valid_up_to();
                out.push_str(std::str::from_utf8(&bytes[..valid]).expect("valid prefix"));
                out.push(char::REPLACEMENT_CHARACTER);
                bytes = &bytes[valid + 1..];
            }
        }
    }
}

fn go_float_word(f: f64) -> &'static str {
    if f.is_nan() {
        "NaN"
    } else if f > 0.0 {
        "+Inf"
    } else {
        "-Inf"
    }
}

/// The JSON of a resolved scalar: an integral float below 1e21 is written
/// as an integer by `json.Marshal`, so it becomes one.
fn json_of(scalar: Scalar) -> Value {
    match scalar {
        Scalar::Str(s) => Value::String(s),
        Scalar::Int(i) => Value::Number(Number::from(i)),
        Scalar::Uint(u) => Value::Number(Number::from(u)),
        Scalar::Bool(b) => Value::Bool(b),
        Scalar::Null => Value::Null,
        Scalar::Float(f) => {
            if f.fract() == 0.0 && f.abs() < 9.2e18 {
                Value::Number(Number::from(f as i64))
            } else {
                Number::from_f64(f).map_or(Value::Null, Value::Number)
            }
        }
    }
}

/// sigs.k8s.io/yaml's conversion of a key to a string.
fn key_string(key: Key) -> Result<String, YamlError> {
    Ok(match key {
        Key::Str(s) => s,
        Key::Int(i) => i.to_string(),
        Key::Bool(b) => b.to_string(),
        Key::Float(bits) => go_float32_g(f64::from_bits(bits)),
        Key::Uint(_) => {
            return Err(YamlError::at(None, "unsupported map key of type: uint64"));
        }
        Key::Null => {
            return Err(YamlError::at(None, "unsupported map key of type: nil"));
        }
    })
}

fn key_words(key: &Key) -> String {
    match key {
        Key::Str(s) => super::quote::excerpt(s),
        Key::Int(i) => i.to_string(),
        Key::Uint(u) => u.to_string(),
        Key::Float(bits) => go_float32_g(f64::from_bits(*bits)),
        Key::Bool(b) => b.to_string(),
        Key::Null => "<nil>".to_string(),
    }
}

/// `strconv.FormatFloat(f, 'g', -1, 32)`, with yaml.v2's `.inf`, `-.inf`,
/// `.nan`.
fn go_float32_g(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    let single = f as f32;
    if single == 0.0 {
        return if single.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // Shortest digits and decimal exponent, as `{:e}` gives them.
    let sci = format!("{single:e}");
    let (mantissa, exponent) = sci.split_once('e').expect("`{:e}` has an exponent");
    let exponent: i32 = exponent.parse().expect("an integer exponent");
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if negative { "-" } else { "" };
    if !(-4..6).contains(&exponent) {
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exponent < 0 { '-' } else { '+' };
        return format!("{sign}{first}{dot}e{esign}{:02}", exponent.abs());
    }
    let point = exponent + 1;
    if point <= 0 {
        format!("{sign}0.{}{digits}", "0".repeat((-point) as usize))
    } else if point as usize >= digits.len() {
        format!(
            "{sign}{digits}{}",
            "0".repeat(point as usize - digits.len())
        )
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{sign}{int}.{frac}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn v(text: &str) -> Value {
        to_json(text, false).unwrap()
    }

    fn e(text: &str) -> String {
        to_json(text, false).unwrap_err().to_string()
    }

    /// Issue 27, item 6, and the YAML 1.1 reading around it.
    #[test]
    fn scalars_resolve_as_yaml_v2_resolves_them() {
        assert_eq!(v("maxPods: 0110"), json!({"maxPods": 72}));
        assert_eq!(v("maxPods: !custom 110"), json!({"maxPods": "110"}));
        assert_eq!(v("a: ! 110"), json!({"a": "110"}));
        assert_eq!(v("a: !!str 110"), json!({"a": "110"}));
        assert_eq!(v("a: !!float 1"), json!({"a": 1}));
        assert_eq!(v("a: !!int '7'"), json!({"a": 7}));
        assert_eq!(
            e("a: !!int abc"),
            "yaml: line 1: cannot decode !!str `abc` as a !!int"
        );
        assert_eq!(
            v(
                "[yes, No, on, OFF, y, ~, null, '', \"null\", '~', 0x1F, 0o17, 0b101, -0b11, 1_000, +5, 1e3, 1.5, .5, 2001-12-14, 1:20, 1e999, 18446744073709551615, 99999999999999999999]"
            ),
            json!([
                true,
                false,
                true,
                false,
                true,
                null,
                null,
                "",
                "null",
                "~",
                31,
                15,
                5,
                -3,
                1000,
                5,
                1000,
                1.5,
                0.5,
                "2001-12-14",
                "1:20",
                "1e999",
                18446744073709551615u64,
                1e20
            ])
        );
        assert_eq!(
            v("a: 08"),
            json!({"a": 8}),
            "not octal: a float, as yaml.v2's regexp allows"
        );
        assert_eq!(v(""), Value::Null);
        assert_eq!(v("# only a comment\n"), Value::Null);
        assert_eq!(
            v("a: 1\n---\nb: 2\n"),
            json!({"a": 1}),
            "the first document only"
        );
    }

    #[test]
    fn keys_become_strings_as_sigs_yaml_converts_them() {
        assert_eq!(
            v("1: a\ntrue: b\nyes: c\n1.5: d\n1000000.0: e\n0.0001: f\n"),
            json!({"1": "a", "true": "c", "1.5": "d", "1e+06": "e", "0.0001": "f"})
        );
        assert_eq!(e("~: a"), "yaml: unsupported map key of type: nil");
        assert_eq!(
            e("18446744073709551615: a"),
            "yaml: unsupported map key of type: uint64"
        );
        assert!(e("[a]: b").contains("invalid map key"));
        assert_eq!(v("a: 1\na: 2"), json!({"a": 2}));
        assert_eq!(
            to_json("a: 1\na: 2", true).unwrap_err().to_string(),
            "yaml: line 2: key \"a\" already set in map"
        );
        assert!(e("a: .nan").contains("unsupported value: NaN"));
    }

    #[test]
    fn merges_aliases_and_binary() {
        // `y` is a boolean key in YAML 1.1, as yaml.v2 reads it.
        assert_eq!(v("{y: 1, x: 2}"), json!({"true": 1, "x": 2}));
        assert_eq!(
            v("base: &b {p: 1, q: 2}\nother: &o {q: 3, r: 4}\nm:\n  <<: [*b, *o]\n  r: 5\n"),
            json!({"base": {"p": 1, "q": 2}, "other": {"q": 3, "r": 4}, "m": {"p": 1, "q": 2, "r": 5}})
        );
        assert_eq!(v("a: &x [1, 2]\nb: *x"), json!({"a": [1, 2], "b": [1, 2]}));
        assert_eq!(v("a: !!binary aGk="), json!({"a": "hi"}));
        assert_eq!(v("a: !!binary /w=="), json!({"a": "\u{fffd}"}));
        assert!(e("<<: 1").contains("map merge requires"));
    }

    #[test]
    fn alias_bombs_and_large_documents_stop_at_the_budget() {
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            let p = i - 1;
            bomb.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        assert!(e(&bomb).contains("excessive aliasing"), "as yaml.v2");
        let tiny: String = (0..200_000).map(|_| "- {a: 0}\n").collect();
        let budget = crate::budget::Budget {
            deadline: None,
            memory: 4 * 1024 * 1024,
        };
        let err = crate::budget::run(budget, || to_json(&tiny, false).unwrap_err());
        assert!(
            matches!(err, YamlError::Exhausted(Exhausted::Memory { .. })),
            "{err}"
        );
    }

    #[test]
    fn errors_quote_no_more_than_an_excerpt() {
        let long = format!("a: !!int {}", "x".repeat(1_000_000));
        assert!(e(&long).len() < 300);
        let secret = "s3cr3t-canary";
        let err = to_json(&format!("key: [{secret}"), false).unwrap_err();
        assert!(!err.without_input().contains(secret));
        assert!(
            err.without_input().starts_with("yaml: line"),
            "{}",
            err.without_input()
        );
    }

    #[test]
    fn floats_format_as_go_formats_float32() {
        for (f, text) in [
            (1.5, "1.5"),
            (100.0, "100"),
            (123456.0, "123456"),
            (1234567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5, "-2.5"),
            (0.1, "0.1"),
        ] {
            assert_eq!(go_float32_g(f), text, "{f}");
        }
    }
}
