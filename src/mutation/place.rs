//! The places of an object that rules write to, and the lists in them.

use serde_json::{Map, Value};

use super::apply::{ApplyError, shape};

/// A map or list of an object that rules write to, reached through maps only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// `spec.template.metadata.labels`
    Labels,
    /// `spec.template.metadata.annotations`
    Annotations,
    /// `spec.template.spec.containers`
    Containers,
    /// `spec.template.spec.volumes`
    Volumes,
    /// `spec.resourcePolicy.containerPolicies` of a VerticalPodAutoscaler
    ContainerPolicies,
}

impl Place {
    pub(super) const ALL: [Place; 5] = [
        Place::Labels,
        Place::Annotations,
        Place::Containers,
        Place::Volumes,
        Place::ContainerPolicies,
    ];

    pub(super) fn index(self) -> usize {
        self as usize
    }

    pub(super) fn path(self) -> &'static [&'static str] {
        match self {
            Place::Labels => &["spec", "template", "metadata", "labels"],
            Place::Annotations => &["spec", "template", "metadata", "annotations"],
            Place::Containers => &["spec", "template", "spec", "containers"],
            Place::Volumes => &["spec", "template", "spec", "volumes"],
            Place::ContainerPolicies => &["spec", "resourcePolicy", "containerPolicies"],
        }
    }

    fn is_list(self) -> bool {
        !matches!(self, Place::Labels | Place::Annotations)
    }

    pub(super) fn empty(self) -> Value {
        if self.is_list() {
            Value::Array(Vec::new())
        } else {
            Value::Object(Map::new())
        }
    }

    /// The node at the end of the path has the place's type.
    pub(super) fn check(self, node: &Value) -> Result<(), ApplyError> {
        let (ok, expected) = if self.is_list() {
            (node.is_array(), "a list")
        } else {
            (node.is_object(), "a map")
        };
        if ok {
            Ok(())
        } else {
            Err(shape(dotted(self.path()), expected))
        }
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
