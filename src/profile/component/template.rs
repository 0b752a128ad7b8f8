//! Templates: YAML data with placeholders and directives, parsed once when
//! the profile loads and filled for each render.
//!
//! | written | is |
//! |---|---|
//! | `"${expr}"` (the whole string) | the expression's value, typed: a number stays a number, a map a map |
//! | `"text ${expr} text"` | the string with each value written in (strings, numbers, booleans; anything else is an error); `$${` writes `${` |
//! | a map key with `${expr}` | the key with the value written in |
//! | list item `{$when: <condition>, $value: <node>, $else: <node>}` | the item when the condition holds, else `$else` or nothing |
//! | list item map with `$when:` and other keys | the map without `$when`, when the condition holds |
//! | list item `{$each: <expr>, $as: <name>, $value: <node>, $when: …}` | `$value` once per item of the list value, the item as `${<name>}` (default `item`), each under `$when` |
//! | map entry value `{$when, $value, $else}` | the entry with that value, or no entry |
//! | `{$lines: [<items>]}` | the items (strings; `$when` and `$each` allowed) joined by newlines |
//!
//! Subtrees without placeholders or directives are kept as literal values and
//! copied whole. Conditions are the profile's one condition language.

use std::borrow::Cow;
use std::cell::RefCell;

use serde_json::{Map, Value};

use super::expr::{Expr, scalar_text};
use crate::profile::condition::{Condition, ConditionError, Facts, Place, ValueLookup};

/// A node of a template.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// No placeholder or directive below: copied as is.
    Lit(Value),
    /// A string with placeholders.
    Str(Interp),
    List(Vec<Item>),
    Map(Vec<(Key, Item)>),
    /// `{$lines: [...]}`: strings joined by newlines.
    Lines(Vec<Item>),
    /// `{$when, $value, $else}` where a value is required.
    Choice {
        when: Condition,
        then: Box<Node>,
        otherwise: Box<Node>,
    },
}

/// A map key.
#[derive(Debug, Clone, PartialEq)]
pub enum Key {
    Lit(String),
    Interp(Interp),
    /// `$merge: <node>`: the entries of the node's map (none when absent)
    /// join the map after the written ones, winning on the same key.
    Merge,
}

/// The map key that merges a map value into the map it stands in.
const MERGE: &str = "$merge";

/// A string with placeholders.
#[derive(Debug, Clone, PartialEq)]
pub enum Interp {
    /// `"${expr}"`: the value itself.
    Whole(Expr),
    /// Text and values.
    Parts(Vec<Part>),
}

/// A piece of an interpolated string.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(String),
    Expr(Expr),
}

/// A list item or a map entry's value, with its directives.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub when: Option<Condition>,
    /// `$each` and the name the item is bound to.
    pub each: Option<(Expr, String)>,
    pub value: Node,
    pub otherwise: Option<Node>,
}

impl Item {
    fn plain(value: Node) -> Item {
        Item {
            when: None,
            each: None,
            value,
            otherwise: None,
        }
    }

    fn is_plain_lit(&self) -> Option<&Value> {
        match (self, &self.value) {
            (
                Item {
                    when: None,
                    each: None,
                    otherwise: None,
                    ..
                },
                Node::Lit(v),
            ) => Some(v),
            _ => None,
        }
    }
}

/// A parse or evaluation error: the field (outermost first) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    /// Segments in reverse order (innermost first) while it bubbles up.
    rev_field: Vec<String>,
    pub message: String,
}

impl TemplateError {
    pub fn new(message: impl Into<String>) -> Self {
        TemplateError {
            rev_field: Vec::new(),
            message: message.into(),
        }
    }

    /// Prefix a field segment (`key` or `[3]`).
    pub fn at(mut self, segment: impl Into<String>) -> Self {
        self.rev_field.push(segment.into());
        self
    }

    /// The field as `a.b[3].c`.
    pub fn field(&self) -> String {
        let mut out = String::new();
        for seg in self.rev_field.iter().rev() {
            if !seg.starts_with('[') && !out.is_empty() {
                out.push('.');
            }
            out.push_str(seg);
        }
        out
    }
}

fn key_segment(key: &str) -> String {
    key.to_string()
}

fn index_segment(i: usize) -> String {
    format!("[{i}]")
}

/// Where in a template a node is parsed: some directives only fit some places.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// A value that must exist (a `$value`, the object, `$else`).
    Value,
    /// A list item (may vanish or repeat).
    ListItem,
    /// A map entry's value (may vanish).
    MapValue,
}

const DIRECTIVES: &[&str] = &["$when", "$value", "$else", "$each", "$as", "$lines"];

impl Node {
    /// Parse a template from its YAML value.
    pub fn parse(value: &Value) -> Result<Node, TemplateError> {
        match parse_item(value, Slot::Value)? {
            Item {
                when: None,
                each: None,
                value,
                otherwise: None,
            } => Ok(value),
            _ => Err(TemplateError::new("a directive that is not allowed here")),
        }
    }

    /// Call `f` on every expression and every condition below, with the names
    /// `$each` binds where they are visible, and the field path.
    pub fn visit<'n>(
        &'n self,
        bound: &mut Vec<&'n str>,
        f: &mut Visitor<'_, 'n>,
    ) -> Result<(), TemplateError> {
        match self {
            Node::Lit(_) => Ok(()),
            Node::Str(interp) => interp.visit(bound, f),
            Node::List(items) => {
                for (i, item) in items.iter().enumerate() {
                    item.visit(bound, f).map_err(|e| e.at(index_segment(i)))?;
                }
                Ok(())
            }
            Node::Lines(items) => {
                for (i, item) in items.iter().enumerate() {
                    item.visit(bound, f)
                        .map_err(|e| e.at(index_segment(i)).at("$lines"))?;
                }
                Ok(())
            }
            Node::Map(entries) => {
                for (key, item) in entries {
                    let seg = match key {
                        Key::Lit(k) => k.clone(),
                        Key::Interp(i) => {
                            i.visit(bound, f)?;
                            i.source()
                        }
                        Key::Merge => MERGE.to_string(),
                    };
                    item.visit(bound, f).map_err(|e| e.at(key_segment(&seg)))?;
                }
                Ok(())
            }
            Node::Choice {
                when,
                then,
                otherwise,
            } => {
                f(Used::Condition(when), bound).map_err(|e| e.at("$when"))?;
                then.visit(bound, f)?;
                otherwise.visit(bound, f)
            }
        }
    }
}

/// What [`Node::visit`] calls with each expression and condition, and the
/// names `$each` binds there.
pub type Visitor<'f, 'n> = dyn FnMut(Used<'n>, &[&'n str]) -> Result<(), TemplateError> + 'f;

/// What [`Node::visit`] shows.
#[derive(Debug, Clone, Copy)]
pub enum Used<'n> {
    Expr(&'n Expr),
    Condition(&'n Condition),
}

impl Interp {
    fn visit<'n>(
        &'n self,
        bound: &mut Vec<&'n str>,
        f: &mut Visitor<'_, 'n>,
    ) -> Result<(), TemplateError> {
        match self {
            Interp::Whole(e) => f(Used::Expr(e), bound),
            Interp::Parts(parts) => {
                for p in parts {
                    if let Part::Expr(e) = p {
                        f(Used::Expr(e), bound)?;
                    }
                }
                Ok(())
            }
        }
    }

    /// The string as written.
    fn source(&self) -> String {
        match self {
            Interp::Whole(e) => format!("${{{}}}", e.text),
            Interp::Parts(parts) => parts
                .iter()
                .map(|p| match p {
                    Part::Text(t) => t.replace("${", "$${"),
                    Part::Expr(e) => format!("${{{}}}", e.text),
                })
                .collect(),
        }
    }
}

impl Item {
    fn visit<'n>(
        &'n self,
        bound: &mut Vec<&'n str>,
        f: &mut Visitor<'_, 'n>,
    ) -> Result<(), TemplateError> {
        let depth = bound.len();
        if let Some((over, name)) = &self.each {
            f(Used::Expr(over), bound).map_err(|e| e.at("$each"))?;
            bound.push(name);
        }
        let result = (|| {
            if let Some(when) = &self.when {
                f(Used::Condition(when), bound).map_err(|e| e.at("$when"))?;
            }
            self.value.visit(bound, f)?;
            if let Some(otherwise) = &self.otherwise {
                otherwise.visit(bound, f).map_err(|e| e.at("$else"))?;
            }
            Ok(())
        })();
        bound.truncate(depth);
        result
    }
}

/// Parse an interpolated string; `Ok(None)` when it has no placeholder.
fn parse_interp(text: &str) -> Result<Option<Interp>, TemplateError> {
    if !text.contains("${") {
        return Ok(None);
    }
    let mut parts: Vec<Part> = Vec::new();
    let mut literal = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        if at > 0 && rest.as_bytes()[at - 1] == b'$' {
            // `$${` writes `${`.
            literal.push_str(&rest[..at - 1]);
            literal.push_str("${");
            rest = &rest[at + 2..];
            continue;
        }
        literal.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| TemplateError::new(format!("{text:?}: a ${{ is not closed")))?;
        let expr = Expr::parse(&after[..end])
            .map_err(|e| TemplateError::new(format!("${{{}}}: {e}", &after[..end])))?;
        if !literal.is_empty() {
            parts.push(Part::Text(std::mem::take(&mut literal)));
        }
        parts.push(Part::Expr(expr));
        rest = &after[end + 1..];
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        parts.push(Part::Text(literal));
    }
    if parts.iter().all(|p| matches!(p, Part::Text(_))) {
        // Only `$${` escapes: a literal after all.
        return Ok(None);
    }
    Ok(Some(match parts.as_slice() {
        [Part::Expr(e)] => Interp::Whole(e.clone()),
        _ => Interp::Parts(parts),
    }))
}

/// The text of a string once its `$${` escapes are resolved (for strings
/// without placeholders).
fn unescape(text: &str) -> Cow<'_, str> {
    if text.contains("$${") {
        Cow::Owned(text.replace("$${", "${"))
    } else {
        Cow::Borrowed(text)
    }
}

/// A map key without placeholders: `$$x` is the key `$x` (`$x` would be a
/// directive), and `$${` is `${`.
fn unescape_key(key: &str) -> String {
    match key.strip_prefix("$$") {
        Some(rest) if !rest.starts_with('{') => format!("${}", unescape(rest)),
        _ => unescape(key).into_owned(),
    }
}

fn compile_when(v: &Value) -> Result<Condition, TemplateError> {
    Condition::compile(v, "$when", Place::Component).map_err(|(field, message)| {
        let mut e = TemplateError::new(message);
        for seg in field.split('.').rev() {
            e = e.at(seg);
        }
        e
    })
}

fn parse_item(value: &Value, slot: Slot) -> Result<Item, TemplateError> {
    match value {
        Value::String(text) => Ok(Item::plain(match parse_interp(text)? {
            Some(interp) => Node::Str(interp),
            None => Node::Lit(Value::String(unescape(text).into_owned())),
        })),
        Value::Array(items) => {
            let mut parsed = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                parsed.push(parse_item(item, Slot::ListItem).map_err(|e| e.at(index_segment(i)))?);
            }
            Ok(Item::plain(collapse_list(parsed)))
        }
        Value::Object(map) if map.keys().any(|k| is_directive_key(k) && k != MERGE) => {
            parse_directive(map, slot)
        }
        Value::Object(map) => {
            let mut entries = Vec::with_capacity(map.len());
            for (k, v) in map {
                if k == MERGE {
                    let item = parse_item(v, Slot::Value).map_err(|e| e.at(MERGE))?;
                    entries.push((Key::Merge, item));
                    continue;
                }
                let key = match parse_interp(k).map_err(|e| e.at(key_segment(k)))? {
                    Some(interp) => Key::Interp(interp),
                    None => Key::Lit(unescape_key(k)),
                };
                let item = parse_item(v, Slot::MapValue).map_err(|e| e.at(key_segment(k)))?;
                entries.push((key, item));
            }
            Ok(Item::plain(collapse_map(entries)))
        }
        other => Ok(Item::plain(Node::Lit(other.clone()))),
    }
}

fn collapse_list(items: Vec<Item>) -> Node {
    if items.iter().all(|i| i.is_plain_lit().is_some()) {
        Node::Lit(Value::Array(
            items
                .iter()
                .filter_map(|i| i.is_plain_lit().cloned())
                .collect(),
        ))
    } else {
        Node::List(items)
    }
}

fn collapse_map(entries: Vec<(Key, Item)>) -> Node {
    let all_lit = entries
        .iter()
        .all(|(k, i)| matches!(k, Key::Lit(_)) && i.is_plain_lit().is_some());
    if all_lit {
        Node::Lit(Value::Object(
            entries
                .iter()
                .filter_map(|(k, i)| match k {
                    Key::Lit(k) => Some((k.clone(), i.is_plain_lit()?.clone())),
                    Key::Interp(_) | Key::Merge => None,
                })
                .collect(),
        ))
    } else {
        Node::Map(entries)
    }
}

/// A key that is a directive (`$when`), not a key that starts with `$$` or
/// a placeholder (`${…}`).
fn is_directive_key(key: &str) -> bool {
    key.starts_with('$') && !key.starts_with("$$") && !key.starts_with("${")
}

fn parse_directive(map: &Map<String, Value>, slot: Slot) -> Result<Item, TemplateError> {
    if let Some(unknown) = map
        .keys()
        .find(|k| is_directive_key(k) && !DIRECTIVES.contains(&k.as_str()))
    {
        return Err(TemplateError::new(format!(
            "unknown directive {unknown:?} (known: {}; write $$ for a key that starts with $)",
            DIRECTIVES.join(", ")
        ))
        .at(key_segment(unknown)));
    }
    let has = |k: &str| map.contains_key(k);
    if has("$lines") {
        if map.len() != 1 {
            return Err(TemplateError::new(
                "$lines stands alone; put a condition on the item that holds it",
            ));
        }
        let Value::Array(items) = &map["$lines"] else {
            return Err(TemplateError::new("must be a list of lines").at("$lines"));
        };
        let mut parsed = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            parsed.push(
                parse_item(item, Slot::ListItem)
                    .map_err(|e| e.at(index_segment(i)).at("$lines"))?,
            );
        }
        return Ok(Item::plain(Node::Lines(parsed)));
    }
    let when = map.get("$when").map(compile_when).transpose()?;
    let each = match map.get("$each") {
        None => None,
        Some(Value::String(text)) => {
            if slot != Slot::ListItem {
                return Err(
                    TemplateError::new("$each repeats list items; it stands in a list").at("$each"),
                );
            }
            let expr = Expr::parse(text).map_err(|e| TemplateError::new(e).at("$each"))?;
            let name = match map.get("$as") {
                None => "item".to_string(),
                Some(Value::String(n)) if is_name(n) => n.clone(),
                Some(other) => {
                    return Err(TemplateError::new(format!(
                        "must be a name like item or class, not {other}"
                    ))
                    .at("$as"));
                }
            };
            Some((expr, name))
        }
        Some(other) => {
            return Err(TemplateError::new(format!(
                "must be an expression naming a list, not {other}"
            ))
            .at("$each"));
        }
    };
    if has("$as") && each.is_none() {
        return Err(TemplateError::new("$as names the item of $each").at("$as"));
    }
    let plain_keys: Vec<&String> = map.keys().filter(|k| !is_directive_key(k)).collect();
    let value = match map.get("$value") {
        Some(v) => {
            if !plain_keys.is_empty() {
                return Err(TemplateError::new(format!(
                    "with $value, the other keys ({}) have no place",
                    plain_keys
                        .iter()
                        .map(|k| k.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            Node::parse(v).map_err(|e| e.at("$value"))?
        }
        None if each.is_some() => {
            return Err(TemplateError::new(
                "$each needs $value, what each item becomes",
            ));
        }
        None if has("$when") && !plain_keys.is_empty() => {
            // The map itself, without `$when`, under the condition.
            let rest: Map<String, Value> = map
                .iter()
                .filter(|(k, _)| !is_directive_key(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            parse_item(&Value::Object(rest), Slot::Value)?.value
        }
        None => {
            return Err(TemplateError::new(
                "$when needs $value, or the keys of the map it stands in",
            ));
        }
    };
    let otherwise = map
        .get("$else")
        .map(|v| Node::parse(v).map_err(|e| e.at("$else")))
        .transpose()?;
    if otherwise.is_some() && when.is_none() {
        return Err(TemplateError::new("$else needs $when").at("$else"));
    }
    if otherwise.is_some() && each.is_some() {
        return Err(TemplateError::new("$else does not go with $each").at("$else"));
    }
    match slot {
        Slot::Value => match (when, otherwise) {
            (Some(when), Some(otherwise)) => Ok(Item::plain(Node::Choice {
                when,
                then: Box::new(value),
                otherwise: Box::new(otherwise),
            })),
            _ => Err(TemplateError::new(
                "a value is required here: $when needs $else",
            )),
        },
        _ => Ok(Item {
            when,
            each,
            value,
            otherwise,
        }),
    }
}

/// Whether `s` can name a bound item.
pub fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
}

/// What evaluation reads: the values by expression, and the facts conditions
/// need. Component rendering implements it over the render's roots.
pub trait Values {
    /// The value of `expr`'s path (null when absent), filters not applied.
    fn lookup(&self, expr: &Expr) -> Result<Value, String>;
    /// The facts of the shoot and the credentials, without values.
    fn facts(&self) -> Facts<'_>;
}

/// An evaluation: the values and the items `$each` binds.
pub struct Eval<'a> {
    values: &'a dyn Values,
    bound: RefCell<Vec<(String, Value)>>,
}

impl ValueLookup for Eval<'_> {
    fn value(&self, expr: &Expr) -> Result<Value, String> {
        self.expr(expr)
    }
}

impl<'a> Eval<'a> {
    pub fn new(values: &'a dyn Values) -> Self {
        Eval {
            values,
            bound: RefCell::new(Vec::new()),
        }
    }

    /// An expression's value, filters applied.
    pub fn expr(&self, expr: &Expr) -> Result<Value, String> {
        let root = expr.root();
        let bound = self
            .bound
            .borrow()
            .iter()
            .rev()
            .find(|(name, _)| name == root)
            .map(|(_, v)| walk(v, &expr.path[1..]));
        let value = match bound {
            Some(v) => v,
            None => self.values.lookup(expr)?,
        };
        expr.apply(value)
    }

    fn condition(&self, when: &Condition) -> Result<bool, TemplateError> {
        let facts = Facts {
            values: Some(self),
            ..self.values.facts()
        };
        when.eval(&facts).map_err(|e| {
            TemplateError::new(match e {
                ConditionError::Value { expr, reason } => format!("{expr}: {reason}"),
                other => other.to_string(),
            })
            .at("$when")
        })
    }

    /// Evaluate a node.
    pub fn node(&self, node: &Node) -> Result<Value, TemplateError> {
        match node {
            Node::Lit(v) => Ok(v.clone()),
            Node::Str(interp) => self.interp(interp),
            Node::List(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    self.item(item, &mut out)
                        .map_err(|e| e.at(index_segment(i)))?;
                }
                Ok(Value::Array(out))
            }
            Node::Lines(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    self.item(item, &mut out)
                        .map_err(|e| e.at(index_segment(i)).at("$lines"))?;
                }
                let mut text = String::new();
                for (i, line) in out.iter().enumerate() {
                    if i > 0 {
                        text.push('\n');
                    }
                    match line {
                        Value::String(s) => text.push_str(s),
                        other => {
                            return Err(TemplateError::new(format!(
                                "a line must be a string, not {other}"
                            ))
                            .at(index_segment(i))
                            .at("$lines"));
                        }
                    }
                }
                Ok(Value::String(text))
            }
            Node::Map(entries) => {
                let mut out = Map::new();
                let mut merged = None;
                for (key, item) in entries {
                    let key_text = match key {
                        Key::Merge => {
                            merged = Some(item);
                            continue;
                        }
                        Key::Lit(k) => k.clone(),
                        Key::Interp(i) => match self.interp(i)? {
                            Value::String(s) => s,
                            other => scalar_text(&other).map_err(|kind| {
                                TemplateError::new(format!("a key is {kind}"))
                                    .at(key_segment(&i.source()))
                            })?,
                        },
                    };
                    let mut one = Vec::with_capacity(1);
                    self.item(item, &mut one)
                        .map_err(|e| e.at(key_segment(&key_text)))?;
                    if let Some(v) = one.pop() {
                        out.insert(key_text, v);
                    }
                }
                if let Some(item) = merged {
                    // An absent map merges nothing (a whole `${expr}` may be null here).
                    let extra = match &item.value {
                        Node::Str(Interp::Whole(e)) => self
                            .expr(e)
                            .map_err(|m| TemplateError::new(format!("${{{e}}}: {m}")).at(MERGE))?,
                        other => self.node(other).map_err(|e| e.at(MERGE))?,
                    };
                    match extra {
                        Value::Object(extra) => out.extend(extra),
                        Value::Null => {}
                        other => {
                            return Err(TemplateError::new(format!(
                                "must be a map (or absent), not {other}"
                            ))
                            .at(MERGE));
                        }
                    }
                }
                Ok(Value::Object(out))
            }
            Node::Choice {
                when,
                then,
                otherwise,
            } => {
                if self.condition(when)? {
                    self.node(then).map_err(|e| e.at("$value"))
                } else {
                    self.node(otherwise).map_err(|e| e.at("$else"))
                }
            }
        }
    }

    /// Evaluate an item into `out` (none, one or, with `$each`, several values).
    pub fn item(&self, item: &Item, out: &mut Vec<Value>) -> Result<(), TemplateError> {
        let Some((over, name)) = &item.each else {
            return self.one(item, out);
        };
        let list = match self.expr(over) {
            Ok(Value::Array(items)) => items,
            Ok(Value::Null) => Vec::new(),
            Ok(other) => {
                return Err(
                    TemplateError::new(format!("${{{over}}} must be a list, not {other}"))
                        .at("$each"),
                );
            }
            Err(e) => return Err(TemplateError::new(format!("${{{over}}}: {e}")).at("$each")),
        };
        for (i, element) in list.into_iter().enumerate() {
            self.bound.borrow_mut().push((name.clone(), element));
            let result = self.one(item, out);
            self.bound.borrow_mut().pop();
            result.map_err(|e| e.at(format!("$each[{i}]")))?;
        }
        Ok(())
    }

    fn one(&self, item: &Item, out: &mut Vec<Value>) -> Result<(), TemplateError> {
        let holds = match &item.when {
            Some(when) => self.condition(when)?,
            None => true,
        };
        if holds {
            out.push(self.node(&item.value)?);
        } else if let Some(otherwise) = &item.otherwise {
            out.push(self.node(otherwise).map_err(|e| e.at("$else"))?);
        }
        Ok(())
    }

    fn interp(&self, interp: &Interp) -> Result<Value, TemplateError> {
        let value = |e: &Expr| {
            self.expr(e)
                .map_err(|m| TemplateError::new(format!("${{{e}}}: {m}")))
        };
        match interp {
            Interp::Whole(e) => match value(e)? {
                Value::Null => Err(TemplateError::new(format!(
                    "${{{e}}} is absent; put the field under a $when with value {{of: …, notEmpty: true}} if it is optional"
                ))),
                v => Ok(v),
            },
            Interp::Parts(parts) => {
                let mut out = String::new();
                for part in parts {
                    match part {
                        Part::Text(t) => out.push_str(t),
                        Part::Expr(e) => {
                            let v = value(e)?;
                            let text = match &v {
                                Value::String(s) => s.as_str(),
                                other => &scalar_text(other).map_err(|kind| {
                                    TemplateError::new(format!(
                                        "${{{e}}} is {kind}; only strings, numbers and booleans can be written into a string"
                                    ))
                                })?,
                            };
                            out.push_str(text);
                        }
                    }
                }
                Ok(Value::String(out))
            }
        }
    }
}

/// The value below `value` at `path` (null when absent): map keys, list
/// indexes.
pub fn walk(value: &Value, path: &[String]) -> Value {
    walk_ref(value, path).cloned().unwrap_or(Value::Null)
}

/// [`walk`] without the copy.
pub fn walk_ref<'v>(value: &'v Value, path: &[String]) -> Option<&'v Value> {
    let mut cur = value;
    for seg in path {
        cur = match cur {
            Value::Object(map) => map.get(seg)?,
            Value::Array(items) => items.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::gardener::ShootContext;

    struct Fixed {
        shoot: ShootContext,
        values: Value,
    }

    impl Values for Fixed {
        fn lookup(&self, expr: &Expr) -> Result<Value, String> {
            if expr.root() == "broken" {
                return Err("cannot be computed".into());
            }
            Ok(walk(&self.values, &expr.path))
        }
        fn facts(&self) -> Facts<'_> {
            Facts {
                workload_identity: Some(true),
                ..Facts::of_shoot(&self.shoot)
            }
        }
    }

    fn render(template: Value, values: Value) -> Result<Value, TemplateError> {
        let node = Node::parse(&template)?;
        let fixed = Fixed {
            shoot: ShootContext::new("ns", semver::Version::new(1, 33, 0)),
            values,
        };
        Eval::new(&fixed).node(&node)
    }

    #[test]
    fn placeholders_are_typed_or_written_in() {
        let out = render(
            json!({"replicas": "${n}", "name": "pv-${ns}-${n}", "${ns}-key": "x", "m": "${map}", "esc": "$${ns}", "lit": [1, {"a": "b"}], "$$ref": "x"}),
            json!({"n": 3, "ns": "shoot", "map": {"a": [1]}}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"replicas": 3, "name": "pv-shoot-3", "shoot-key": "x", "m": {"a": [1]}, "esc": "${ns}", "lit": [1, {"a": "b"}], "$ref": "x"})
        );
        assert!(matches!(
            Node::parse(&json!({"a": [1, "b"]})).unwrap(),
            Node::Lit(_)
        ));
    }

    #[test]
    fn merge_adds_a_maps_entries_and_they_win() {
        let template = json!({"annotations": {"a": "1", "b": "2", "$merge": "${extra}"}});
        assert_eq!(
            render(template.clone(), json!({"extra": {"b": "x", "c": "3"}})).unwrap(),
            json!({"annotations": {"a": "1", "b": "x", "c": "3"}})
        );
        assert_eq!(
            render(template.clone(), json!({})).unwrap(),
            json!({"annotations": {"a": "1", "b": "2"}}),
            "absent merges nothing"
        );
        let err = render(template, json!({"extra": ["no"]})).unwrap_err();
        assert_eq!(
            (err.field(), err.message.as_str()),
            (
                "annotations.$merge".to_string(),
                "must be a map (or absent), not [\"no\"]"
            )
        );
        // Conditions and templates inside the merged node.
        assert_eq!(
            render(
                json!({"m": {"$merge": {"$when": {"workloadIdentity": true}, "$value": {"k-${n}": "v"}, "$else": {}}}}),
                json!({"n": 1})
            )
            .unwrap(),
            json!({"m": {"k-1": "v"}})
        );
    }

    #[test]
    fn items_and_entries_come_and_go_with_their_conditions() {
        let out = render(
            json!({
                "args": [
                    "--a",
                    {"$when": {"workloadIdentity": true}, "$value": "--wi"},
                    {"$when": {"workloadIdentity": false}, "$value": "--static", "$else": "--not-static"},
                    {"$when": {"value": {"of": "gates", "notEmpty": true}}, "$value": "--feature-gates=${gates}"},
                    {"$each": "agents", "$value": "--user-agent=${item}"},
                    {"$each": "classes", "$as": "c", "$when": {"value": {"of": "c.on", "equals": true}}, "$value": "${c.name}"},
                ],
                "env": [{"$when": {"workloadIdentity": false}, "name": "X"}],
                "annotations": {"keep": "1", "drop": {"$when": {"workloadIdentity": false}, "$value": "2"}},
                "conf": {"$lines": ["[Global]", {"$when": {"workloadIdentity": true}, "$value": "wi=1"}, ""]},
                "mode": {"$when": {"workloadIdentity": true}, "$value": "a", "$else": "b"},
            }),
            json!({"gates": "", "agents": ["d", "t"], "classes": [{"name": "x", "on": true}, {"name": "y", "on": false}]}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({
                "args": ["--a", "--wi", "--not-static", "--user-agent=d", "--user-agent=t", "x"],
                "env": [],
                "annotations": {"keep": "1"},
                "conf": "[Global]\nwi=1\n",
                "mode": "a",
            })
        );
    }

    #[test]
    fn errors_name_the_field() {
        let err = render(json!({"a": [{"b": "x-${missing}"}]}), json!({})).unwrap_err();
        assert_eq!(err.field(), "a[0].b");
        assert!(
            err.message.contains("${missing} is absent"),
            "{}",
            err.message
        );
        let err = render(json!({"a": "${missing}"}), json!({})).unwrap_err();
        assert!(err.message.contains("is absent"), "{}", err.message);
        let err = render(json!({"a": "${broken}"}), json!({})).unwrap_err();
        assert_eq!(err.message, "${broken}: cannot be computed");
        let err = render(json!({"a": "${m}x"}), json!({"m": {}})).unwrap_err();
        assert!(err.message.contains("is a map"), "{}", err.message);
        for (bad, field, want) in [
            (json!({"a": {"$bogus": 1}}), "a.$bogus", "unknown directive"),
            (
                json!({"a": {"$each": "l", "$value": 1}}),
                "a.$each",
                "stands in a list",
            ),
            (json!({"a": [{"$each": "l"}]}), "a[0]", "needs $value"),
            (
                json!({"a": [{"$when": {"nope": 1}, "$value": 1}]}),
                "a[0].$when.nope",
                "unknown",
            ),
            (json!({"a": "${x"}), "a", "not closed"),
            (json!({"a": "${x | nope}"}), "a", "unknown filter"),
            (
                json!({"$when": {"ipv6": true}, "$value": 1}),
                "",
                "$when needs $else",
            ),
            (
                json!({"a": [{"$lines": ["x"], "$when": {"ipv6": true}}]}),
                "a[0]",
                "stands alone",
            ),
        ] {
            let err = Node::parse(&bad).unwrap_err();
            assert_eq!(err.field(), field, "{bad}: {}", err.message);
            assert!(err.message.contains(want), "{bad}: {}", err.message);
        }
    }

    #[test]
    fn visit_sees_every_expression_with_the_names_in_scope() {
        let node = Node::parse(&json!({
            "a": "${x}",
            "b": [{"$each": "l", "$as": "c", "$value": "${c.n}", "$when": {"value": {"of": "y", "notEmpty": true}}}],
        }))
        .unwrap();
        let mut seen = Vec::new();
        node.visit(&mut Vec::new(), &mut |used, bound| {
            match used {
                Used::Expr(e) => seen.push(format!("{} {:?}", e.text, bound)),
                Used::Condition(c) => {
                    let mut exprs = Vec::new();
                    c.value_exprs(&mut exprs);
                    for e in exprs {
                        seen.push(format!("when {} {:?}", e.text, bound));
                    }
                }
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, ["x []", "l []", "when y [\"c\"]", "c.n [\"c\"]"]);
    }
}
