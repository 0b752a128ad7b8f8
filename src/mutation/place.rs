//! The mechanics of the places rules write to ([`Place`], declared with the
//! actions in the profile): their empty value and type check, and the lists
//! in them ([`ListAt`]).

use serde_json::{Map, Value};

use super::shape::{ApplyError, shape};
use crate::profile::Place;

/// An empty value of the place's type.
pub(super) fn empty(place: Place) -> Value {
    if place.is_list() {
        Value::Array(Vec::new())
    } else {
        Value::Object(Map::new())
    }
}

/// The node at the end of the place's path has the place's type.
pub(super) fn check(place: Place, node: &Value) -> Result<(), ApplyError> {
    let (ok, expected) = if place.is_list() {
        (node.is_array(), "a list")
    } else {
        (node.is_object(), "a map")
    };
    if ok {
        Ok(())
    } else {
        Err(shape(dotted(place.path()), expected))
    }
}

pub(super) fn dotted(path: &[&str]) -> String {
    path.join(".")
}

/// A list a rule changes.
#[derive(Debug, Clone, Copy)]
pub enum ListAt<'n> {
    /// A place that is a list.
    Place(Place),
    /// The list `field` (`command`, `env`, ...) of the container at `index`
    /// of the containers, named `name`.
    ContainerField {
        index: usize,
        name: &'n str,
        field: &'static str,
    },
}

impl ListAt<'_> {
    pub(super) fn place(self) -> Place {
        match self {
            ListAt::Place(place) => place,
            ListAt::ContainerField { .. } => Place::Containers,
        }
    }

    fn field_error(self, expected: &'static str) -> ApplyError {
        match self {
            ListAt::Place(place) => shape(dotted(place.path()), expected),
            ListAt::ContainerField { name, field, .. } => shape(
                format!("spec.template.spec.containers[{name}].{field}"),
                expected,
            ),
        }
    }

    /// The list in `node` (the place); `None` if absent or null.
    pub(super) fn find(self, node: &Value) -> Result<Option<&[Value]>, ApplyError> {
        let node = match self {
            ListAt::Place(_) => node,
            ListAt::ContainerField { index, field, .. } => {
                let container = node.get(index).and_then(Value::as_object);
                match container
                    .ok_or_else(|| self.field_error("a map"))?
                    .get(field)
                {
                    None => return Ok(None),
                    Some(list) => list,
                }
            }
        };
        match node {
            Value::Null => Ok(None),
            Value::Array(items) => Ok(Some(items)),
            _ => Err(self.field_error("a list")),
        }
    }

    /// A copy of `node` (the place) without this list: an empty list for a
    /// place, the containers without this field of this container.
    pub(super) fn copy_without(self, node: &Value) -> Value {
        let (ListAt::ContainerField { index, field, .. }, Value::Array(items)) = (self, node)
        else {
            return Value::Array(Vec::new());
        };
        let copy = items.iter().enumerate().map(|(i, item)| match item {
            Value::Object(map) if i == index => Value::Object(
                map.iter()
                    .filter(|(key, _)| *key != field)
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect(),
            ),
            _ => item.clone(),
        });
        Value::Array(copy.collect())
    }

    /// The slot of the list in `node` (the place), null if absent.
    pub(super) fn slot(self, node: &mut Value) -> Result<&mut Value, ApplyError> {
        let slot = match self {
            ListAt::Place(_) => node,
            ListAt::ContainerField { index, field, .. } => node
                .get_mut(index)
                .and_then(Value::as_object_mut)
                .ok_or_else(|| self.field_error("a map"))?
                .entry(field)
                .or_insert(Value::Null),
        };
        match slot {
            Value::Null | Value::Array(_) => Ok(slot),
            _ => Err(self.field_error("a list")),
        }
    }
}
