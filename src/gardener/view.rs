//! Lenient typed views: decoding the part of a Gardener object scion reads,
//! straight from its text, with the field path in every error.
//!
//! A view is a struct declared with [`view!`] whose fields name their JSON key
//! and have a [`Lenient`] type. Decoding a view builds exactly its fields and
//! skips everything else while parsing (a `Cluster` is 100–500 KB of embedded
//! Shoot, Seed and CloudProfile; its view is a few hundred bytes). It is
//! lenient in one precise sense: a value of the wrong shape does not abort the
//! parse. It is consumed and reported as a [`Problem`] naming the field path
//! (`spec.shoot.spec.networking.ipFamilies[1]: expected a string, found the
//! number 6`), and the surrounding text goes on parsing. So one malformed
//! Cluster in a page of 50 fails only itself, and an objects-directory file
//! with a malformed Cluster still loads its other objects. Text that is not
//! JSON/YAML at all is still a parse error of the deserializer.
//!
//! Absent keys and `null` read as Go's decoder reads them: empty string,
//! `false`, empty list or map, `None`. A field marked `required` (or a type
//! that has no absent value, such as a Kubernetes version) is a "missing"
//! problem instead.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::version::parse_version;

/// The kubectl annotation holding a copy of the whole applied object; never
/// kept in a string map (it can be as large as the object itself).
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Key(String),
    Index(usize),
}

/// What a value turned out to be, for "expected …, found …".
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    Nothing,
    Boolean,
    Number(Number),
    String,
    List,
    Object,
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Found::Nothing => f.write_str("nothing"),
            Found::Boolean => f.write_str("a boolean"),
            Found::Number(n) => write!(f, "the number {n}"),
            Found::String => f.write_str("a string"),
            Found::List => f.write_str("a list"),
            Found::Object => f.write_str("an object"),
        }
    }
}

/// A value of the wrong shape, or a required value that is missing, at a path
/// below the value being decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// Outermost first.
    path: Vec<Segment>,
    reason: String,
    /// Set for type mismatches: what the value was.
    found: Option<Found>,
}

impl Problem {
    /// A problem with the value itself.
    pub fn new(reason: impl Into<String>) -> Problem {
        Problem {
            path: Vec::new(),
            reason: reason.into(),
            found: None,
        }
    }

    /// `expected <expected>, found <found>`.
    pub fn mismatch(expected: &str, found: Found) -> Problem {
        Problem {
            path: Vec::new(),
            reason: format!("expected {expected}, found {found}"),
            found: Some(found),
        }
    }

    /// A required value that is absent or null.
    pub fn missing() -> Problem {
        Problem::new("missing")
    }

    /// The same problem seen from the map holding `key`.
    pub fn under(mut self, key: &str) -> Problem {
        self.path.insert(0, Segment::Key(key.to_string()));
        self
    }

    /// The same problem seen from the list holding it at `index`.
    pub fn at_index(mut self, index: usize) -> Problem {
        self.path.insert(0, Segment::Index(index));
        self
    }

    /// The dotted path, `a.b[1].c`, prefixed by `prefix` (itself a dotted path).
    pub fn field(&self, prefix: &str) -> String {
        let mut out = prefix.to_string();
        for segment in &self.path {
            match segment {
                Segment::Key(key) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(key);
                }
                Segment::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        out
    }

    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// Whether the value itself (not one below it) was found to be a string
    /// where something else was expected.
    pub fn is_string_here(&self) -> bool {
        self.path.is_empty() && self.found == Some(Found::String)
    }
}

/// A decoded value, or the first problem found in it.
pub type Checked<T> = Result<T, Problem>;

/// A type a view field can have: decoded leniently from any value.
pub trait Lenient: Sized {
    /// Decode one value. A value of the wrong shape is consumed and returned
    /// as `Ok(Err(problem))`; `Err` is reserved for text that does not parse.
    fn read<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Checked<Self>, D::Error>;

    /// The value of an absent or null field: the type's empty value, or a
    /// "missing" problem for types that have none.
    fn absent() -> Checked<Self>;
}

/// A [`DeserializeSeed`] reading a [`Lenient`] value.
pub struct Read<T>(PhantomData<T>);

impl<T> Read<T> {
    pub fn new() -> Self {
        Read(PhantomData)
    }
}

impl<T> Default for Read<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'de, T: Lenient> DeserializeSeed<'de> for Read<T> {
    type Value = Checked<T>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Checked<T>, D::Error> {
        T::read(deserializer)
    }
}

/// Decode a view from a JSON value (tests, and objects already in memory).
pub fn from_value<T: Lenient>(value: &Value) -> Checked<T> {
    // A `&Value` deserializer never fails on syntax.
    T::read(value).unwrap_or_else(|e| Err(Problem::new(e.to_string())))
}

/// A scalar leaf: built from what a visitor saw; lists and maps are consumed
/// and reported as mismatches.
trait Scalar: Sized {
    /// The expectation in messages, e.g. "a string".
    const EXPECTED: &'static str;
    fn absent() -> Checked<Self>;
    fn from_bool(_: bool) -> Checked<Self> {
        Err(Problem::mismatch(Self::EXPECTED, Found::Boolean))
    }
    fn from_number(n: Number) -> Checked<Self> {
        Err(Problem::mismatch(Self::EXPECTED, Found::Number(n)))
    }
    fn from_str(_: &str) -> Checked<Self> {
        Err(Problem::mismatch(Self::EXPECTED, Found::String))
    }
}

struct ScalarVisitor<T>(PhantomData<T>);

impl<'de, T: Scalar> Visitor<'de> for ScalarVisitor<T> {
    type Value = Checked<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(T::EXPECTED)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(T::from_bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(T::from_number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(T::from_number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(match Number::from_f64(v) {
            Some(n) => T::from_number(n),
            None => T::absent(),
        })
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(T::from_str(v))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(T::absent())
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(T::absent())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        skip_seq(seq)?;
        Ok(Err(Problem::mismatch(T::EXPECTED, Found::List)))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        skip_map(map)?;
        Ok(Err(Problem::mismatch(T::EXPECTED, Found::Object)))
    }
}

/// Consume the rest of a list.
pub fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Consume the rest of a map.
pub fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_key::<IgnoredAny>()?.is_some() {
        map.next_value::<IgnoredAny>()?;
    }
    Ok(())
}

macro_rules! scalar_lenient {
    ($($ty:ty),*) => {$(
        impl Lenient for $ty {
            fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Checked<Self>, D::Error> {
                d.deserialize_any(ScalarVisitor::<$ty>(PhantomData))
            }
            fn absent() -> Checked<Self> {
                <$ty as Scalar>::absent()
            }
        }
    )*};
}

impl Scalar for String {
    const EXPECTED: &'static str = "a string";
    fn absent() -> Checked<Self> {
        Ok(String::new())
    }
    fn from_str(v: &str) -> Checked<Self> {
        Ok(v.to_string())
    }
}

impl Scalar for bool {
    const EXPECTED: &'static str = "a boolean";
    fn absent() -> Checked<Self> {
        Ok(false)
    }
    fn from_bool(v: bool) -> Checked<Self> {
        Ok(v)
    }
}

impl Scalar for i64 {
    const EXPECTED: &'static str = "an integer";
    fn absent() -> Checked<Self> {
        Ok(0)
    }
    fn from_number(n: Number) -> Checked<Self> {
        n.as_i64()
            .ok_or_else(|| Problem::mismatch(Self::EXPECTED, Found::Number(n)))
    }
}

/// A Kubernetes version (`1.31`, `v1.31.2`), parsed leniently like Gardener's;
/// it has no absent value.
impl Scalar for semver::Version {
    const EXPECTED: &'static str = "a version string";
    fn absent() -> Checked<Self> {
        Err(Problem::missing())
    }
    fn from_number(n: Number) -> Checked<Self> {
        Err(Problem::new(format!(
            "expected a version string, found a number (quote the version in YAML: \"{n}\")"
        )))
    }
    fn from_str(v: &str) -> Checked<Self> {
        parse_version(v).map_err(Problem::new)
    }
}

scalar_lenient!(String, bool, i64, semver::Version);

/// An optional value: absent or null is `None`.
impl<T: Lenient> Lenient for Option<T> {
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Checked<Self>, D::Error> {
        d.deserialize_option(OptionVisitor::<T>(PhantomData))
    }
    fn absent() -> Checked<Self> {
        Ok(None)
    }
}

struct OptionVisitor<T>(PhantomData<T>);

impl<'de, T: Lenient> Visitor<'de> for OptionVisitor<T> {
    type Value = Checked<Option<T>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Ok(None))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Ok(None))
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        Ok(T::read(d)?.map(Some))
    }
}

/// A raw value, kept whole (provider configs); never a problem.
impl Lenient for Value {
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Checked<Self>, D::Error> {
        <Value as de::Deserialize>::deserialize(d).map(Ok)
    }
    fn absent() -> Checked<Self> {
        Ok(Value::Null)
    }
}

/// A list of views: each element decoded on its own, problems name the index.
impl<T: Lenient> Lenient for Vec<T> {
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Checked<Self>, D::Error> {
        d.deserialize_any(ListVisitor::<T>(PhantomData))
    }
    fn absent() -> Checked<Self> {
        Ok(Vec::new())
    }
}

struct ListVisitor<T>(PhantomData<T>);

impl<'de, T: Lenient> Visitor<'de> for ListVisitor<T> {
    type Value = Checked<Vec<T>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        let mut problem = None;
        while let Some(item) = seq.next_element_seed(Read::<T>::new())? {
            match item {
                Ok(item) => out.push(item),
                Err(p) => {
                    let index = out.len();
                    problem.get_or_insert(p.at_index(index));
                }
            }
        }
        Ok(problem.map_or(Ok(out), Err))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Ok(Vec::new()))
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Ok(Vec::new()))
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        skip_map(map)?;
        Ok(Err(Problem::mismatch("a list", Found::Object)))
    }

    other_scalars!("a list");
}

/// The scalar visit methods of a visitor for a container: a mismatch.
macro_rules! other_scalars {
    ($expected:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Err(Problem::mismatch($expected, Found::Boolean)))
        }
        fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Err(Problem::mismatch($expected, Found::Number(v.into()))))
        }
        fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Err(Problem::mismatch($expected, Found::Number(v.into()))))
        }
        fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
            let found = Number::from_f64(v).map_or(Found::Nothing, Found::Number);
            Ok(Err(Problem::mismatch($expected, found)))
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok(Err(Problem::mismatch($expected, Found::String)))
        }
    };
}
use other_scalars;

/// A list of strings in which a single string is a list of one: the shoot spec
/// holds one CIDR per field, its status a list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Strings(pub Vec<String>);

impl Lenient for Strings {
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Checked<Self>, D::Error> {
        d.deserialize_any(StringsVisitor)
    }
    fn absent() -> Checked<Self> {
        Ok(Strings::default())
    }
}

struct StringsVisitor;

impl<'de> Visitor<'de> for StringsVisitor {
    type Value = Checked<Strings>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or a list of strings")
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Ok(Strings(vec![v.to_string()])))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Ok(ListVisitor::<String>(PhantomData)
            .visit_seq(seq)?
            .map(Strings))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Ok(Strings::default()))
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Ok(Strings::default()))
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        skip_map(map)?;
        Ok(Err(Problem::mismatch(
            "a string or a list of strings",
            Found::Object,
        )))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Err(Problem::mismatch(
            "a string or a list of strings",
            Found::Boolean,
        )))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Err(Problem::mismatch(
            "a string or a list of strings",
            Found::Number(v.into()),
        )))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Err(Problem::mismatch(
            "a string or a list of strings",
            Found::Number(v.into()),
        )))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        let found = Number::from_f64(v).map_or(Found::Nothing, Found::Number);
        Ok(Err(Problem::mismatch(
            "a string or a list of strings",
            found,
        )))
    }
}

/// A map of strings (labels, annotations): null values are skipped, and so is
/// the kubectl last-applied annotation, which is never read.
impl Lenient for BTreeMap<String, String> {
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Checked<Self>, D::Error> {
        d.deserialize_any(StringMapVisitor)
    }
    fn absent() -> Checked<Self> {
        Ok(BTreeMap::new())
    }
}

struct StringMapVisitor;

impl<'de> Visitor<'de> for StringMapVisitor {
    type Value = Checked<BTreeMap<String, String>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of strings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = BTreeMap::new();
        let mut problem = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == LAST_APPLIED {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            match map.next_value_seed(Read::<Option<String>>::new())? {
                Ok(Some(value)) => {
                    out.insert(key, value);
                }
                Ok(None) => {}
                Err(p) => {
                    problem.get_or_insert(p.under(&key));
                }
            }
        }
        Ok(problem.map_or(Ok(out), Err))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Ok(BTreeMap::new()))
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Ok(BTreeMap::new()))
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        skip_seq(seq)?;
        Ok(Err(Problem::mismatch("a map of strings", Found::List)))
    }

    other_scalars!("a map of strings");
}

/// A raw value kept whole, except that in a map the key `drop` is skipped
/// while parsing (a CloudProfile's machine-image catalogue).
pub fn raw_without<'de, D: Deserializer<'de>>(
    d: D,
    drop: &'static str,
) -> Result<Option<Value>, D::Error> {
    d.deserialize_any(RawWithout(drop))
}

/// A [`DeserializeSeed`] for [`raw_without`]; `null` is `None`.
#[derive(Clone, Copy)]
pub struct RawWithout(pub &'static str);

impl<'de> DeserializeSeed<'de> for RawWithout {
    type Value = Option<Value>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for RawWithout {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == self.0 {
                map.next_value::<IgnoredAny>()?;
            } else {
                out.insert(key, map.next_value()?);
            }
        }
        Ok(Some(Value::Object(out)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(item) = seq.next_element()? {
            out.push(item);
        }
        Ok(Some(Value::Array(out)))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(Value::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Number::from_f64(v).map(Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(Value::String(v.to_string())))
    }
}

/// A map key matched against a view's keys without allocating: the key if it
/// is one of them, `None` (skip the value) if not.
pub struct KeyOf(pub &'static [&'static str]);

impl<'de> DeserializeSeed<'de> for KeyOf {
    type Value = Option<&'static str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeyOf {
    type Value = Option<&'static str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map key")
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().find(|k| **k == v).copied())
    }
}

/// A view struct: its fields, each read from its key with its own lenient
/// type; other keys are skipped while parsing. A field marked `required` is a
/// "missing" problem when absent or null.
///
/// ```ignore
/// view! {
///     /// `spec.shoot.spec.provider.workers[]`
///     #[derive(Debug, Clone, Default, PartialEq)]
///     pub struct WorkerPool {
///         required "name" => pub name: String,
///         "maximum" => pub maximum: i64,
///     }
/// }
/// ```
macro_rules! view {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $($required:ident)? $key:literal => pub $field:ident : $ty:ty
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $crate::gardener::view::Lenient for $name {
            fn read<'de, D: ::serde::de::Deserializer<'de>>(
                d: D,
            ) -> Result<$crate::gardener::view::Checked<Self>, D::Error> {
                struct V;
                impl<'de> ::serde::de::Visitor<'de> for V {
                    type Value = $crate::gardener::view::Checked<$name>;

                    fn expecting(&self, f: &mut ::std::fmt::Formatter) -> ::std::fmt::Result {
                        f.write_str("an object")
                    }

                    #[allow(unused_mut)]
                    fn visit_map<A: ::serde::de::MapAccess<'de>>(
                        self,
                        mut map: A,
                    ) -> Result<Self::Value, A::Error> {
                        use $crate::gardener::view::{Problem, Read};
                        $( let mut $field: Option<$ty> = None; )*
                        let mut problem: Option<Problem> = None;
                        const KEYS: &[&str] = &[$($key),*];
                                                while let Some(key) = map.next_key_seed($crate::gardener::view::KeyOf(KEYS))? {
                            match key {
                                $(
                                    Some($key) => {
                                        let read = if $crate::gardener::view::view!(@required $($required)?) {
                                            map.next_value_seed(Read::<Option<$ty>>::new())?
                                                .and_then(|v| v.ok_or_else(Problem::missing))
                                        } else {
                                            map.next_value_seed(Read::<$ty>::new())?
                                        };
                                        match read {
                                            Ok(v) => $field = Some(v),
                                            Err(p) => {
                                                problem.get_or_insert(p.under($key));
                                            }
                                        }
                                    }
                                )*
                                _ => {
                                    map.next_value::<::serde::de::IgnoredAny>()?;
                                }
                            }
                        }
                        if let Some(p) = problem {
                            return Ok(Err(p));
                        }
                        Ok((|| {
                            Ok($name {
                                $(
                                    $field: match $field {
                                        Some(v) => v,
                                        None if $crate::gardener::view::view!(@required $($required)?) => {
                                            return Err(Problem::missing().under($key));
                                        }
                                        None => <$ty as $crate::gardener::view::Lenient>::absent()
                                            .map_err(|p| p.under($key))?,
                                    },
                                )*
                            })
                        })())
                    }

                    fn visit_unit<E>(self) -> Result<Self::Value, E> {
                        Ok(<$name as $crate::gardener::view::Lenient>::absent())
                    }

                    fn visit_none<E>(self) -> Result<Self::Value, E> {
                        Ok(<$name as $crate::gardener::view::Lenient>::absent())
                    }

                    fn visit_some<D: ::serde::de::Deserializer<'de>>(
                        self,
                        d: D,
                    ) -> Result<Self::Value, D::Error> {
                        d.deserialize_any(self)
                    }

                    fn visit_seq<A: ::serde::de::SeqAccess<'de>>(
                        self,
                        seq: A,
                    ) -> Result<Self::Value, A::Error> {
                        $crate::gardener::view::skip_seq(seq)?;
                        Ok(Err($crate::gardener::view::Problem::mismatch(
                            "an object",
                            $crate::gardener::view::Found::List,
                        )))
                    }

                    $crate::gardener::view::view_scalars!();
                }
                d.deserialize_any(V)
            }

            fn absent() -> $crate::gardener::view::Checked<Self> {
                use $crate::gardener::view::Problem;
                Ok($name {
                    $(
                        $field: if $crate::gardener::view::view!(@required $($required)?) {
                            return Err(Problem::missing().under($key));
                        } else {
                            <$ty as $crate::gardener::view::Lenient>::absent()
                                .map_err(|p| p.under($key))?
                        },
                    )*
                })
            }
        }
    };
    (@required required) => { true };
    (@required) => { false };
}
pub(crate) use view;

/// The scalar visit methods of a view struct's visitor: "expected an object".
macro_rules! view_scalars {
    () => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Err($crate::gardener::view::Problem::mismatch(
                "an object",
                $crate::gardener::view::Found::Boolean,
            )))
        }
        fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Err($crate::gardener::view::Problem::mismatch(
                "an object",
                $crate::gardener::view::Found::Number(v.into()),
            )))
        }
        fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Err($crate::gardener::view::Problem::mismatch(
                "an object",
                $crate::gardener::view::Found::Number(v.into()),
            )))
        }
        fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
            let found = ::serde_json::Number::from_f64(v).map_or(
                $crate::gardener::view::Found::Nothing,
                $crate::gardener::view::Found::Number,
            );
            Ok(Err($crate::gardener::view::Problem::mismatch(
                "an object",
                found,
            )))
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok(Err($crate::gardener::view::Problem::mismatch(
                "an object",
                $crate::gardener::view::Found::String,
            )))
        }
    };
}
pub(crate) use view_scalars;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    view! {
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct Inner {
            "n" => pub n: i64,
            "tags" => pub tags: Strings,
        }
    }

    view! {
        #[derive(Debug, Clone, PartialEq)]
        pub struct Outer {
            required "name" => pub name: String,
            "inner" => pub inner: Inner,
            "items" => pub items: Vec<Inner>,
            "labels" => pub labels: BTreeMap<String, String>,
            "version" => pub version: Option<semver::Version>,
        }
    }

    fn decode(text: &str) -> Checked<Outer> {
        let mut de = serde_json::Deserializer::from_str(text);
        let out = Outer::read(&mut de).unwrap();
        de.end().unwrap();
        out
    }

    fn problem(text: &str) -> (String, String) {
        let p = decode(text).unwrap_err();
        (p.field("x"), p.reason().to_string())
    }

    #[test]
    fn fields_are_read_and_the_rest_is_skipped() {
        let out = decode(
            r#"{"other":{"deep":[1,2,{"a":null}]},"name":"a","inner":{"n":3,"tags":"t","z":1},
               "items":[{"n":1},null,{"tags":["a","b"]}],"labels":{"k":"v","nul":null},"version":"1.31"}"#,
        )
        .unwrap();
        assert_eq!(out.name, "a");
        assert_eq!(out.inner.n, 3);
        assert_eq!(out.inner.tags, Strings(vec!["t".into()]));
        assert_eq!(out.items.len(), 3);
        assert_eq!(out.items[2].tags.0, ["a", "b"]);
        assert_eq!(out.labels.len(), 1);
        assert_eq!(out.version, Some(semver::Version::new(1, 31, 0)));
    }

    #[test]
    fn problems_name_the_path_and_the_text_still_parses() {
        assert_eq!(
            problem(r#"{"inner":{"n":3}}"#),
            ("x.name".into(), "missing".into())
        );
        assert_eq!(
            problem(r#"{"name":null}"#),
            ("x.name".into(), "missing".into())
        );
        assert_eq!(
            problem(r#"{"name":"a","items":[{},{"tags":["a",6]}],"after":[1]}"#),
            (
                "x.items[1].tags[1]".into(),
                "expected a string, found the number 6".into()
            )
        );
        assert_eq!(
            problem(r#"{"name":"a","inner":"s"}"#),
            (
                "x.inner".into(),
                "expected an object, found a string".into()
            )
        );
        assert_eq!(
            problem(r#"{"name":"a","inner":{"n":1.5}}"#),
            (
                "x.inner.n".into(),
                "expected an integer, found the number 1.5".into()
            )
        );
        assert_eq!(
            problem(r#"{"name":"a","labels":{"k":true}}"#),
            (
                "x.labels.k".into(),
                "expected a string, found a boolean".into()
            )
        );
        assert_eq!(
            problem(r#"{"name":"a","version":1.3}"#).1,
            "expected a version string, found a number (quote the version in YAML: \"1.3\")"
        );
        // The problem does not stop the parse: the caller can go on.
        let mut de = serde_json::Deserializer::from_str(r#"[{"name":5},{"name":"b"}]"#);
        let list = <Vec<Outer>>::read(&mut de).unwrap();
        assert!(list.is_err());
        de.end().unwrap();
    }

    #[test]
    fn raw_maps_drop_only_the_listed_key() {
        let v = raw_without(&json!({"big": [1, 2, 3], "keep": {"big": 1}}), "big").unwrap();
        assert_eq!(v, Some(json!({"keep": {"big": 1}})));
        assert_eq!(raw_without(&json!(null), "big").unwrap(), None);
    }
}
