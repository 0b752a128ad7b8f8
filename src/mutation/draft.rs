//! The object as the rules change it: the original, borrowed, plus a copy of
//! each place a rule changed.
//!
//! Rules write to five places only ([`Place`]). Instead of copying the whole
//! object and diffing the copy against it, a [`Draft`] copies a place the first
//! time a rule writes to it and leaves the rest of the object borrowed. The
//! patch is the diff of each copied place against the original, emitted in the
//! order a diff of the two whole objects would emit it, so it is the same patch
//! computed on a fraction of the object (`tests/decode_reach.rs` and the
//! property tests compare the two).
//!
//! Invariant: no edit lies inside another. A place is written either inside an
//! edit that already holds it, or as a new edit whose path is the place itself
//! or the shallowest of its ancestors that the original lacks; and no place is
//! an ancestor of another.

use std::cell::OnceCell;
use std::cmp::Ordering;

use json_patch::Patch;
use serde_json::{Map, Value};

use super::place::{ListAt, check, dotted, empty};
use super::primitives::List;
use super::shape::{ApplyError, shape};
use crate::profile::Place;

/// One copied node.
#[derive(Debug, Clone, PartialEq)]
struct Edit<'a> {
    /// A place's path, or the shallowest of its ancestors the original lacks
    /// (absent or null).
    path: &'static [&'static str],
    /// The node in the original; `None` when its key is absent.
    before: Option<&'a Value>,
    /// The node as the rules left it.
    after: Value,
}

impl Edit<'_> {
    /// Whether the edit's `k`th key is one the original lacks: a whole diff
    /// emits such keys after all the keys both sides have.
    fn adds_key_at(&self, k: usize) -> bool {
        self.before.is_none() && k + 1 == self.path.len()
    }
}

/// The order in which a diff of the whole objects meets two edits: maps are
/// walked in key order, keys both sides have first, added keys after them.
fn document_order(a: &Edit<'_>, b: &Edit<'_>) -> Ordering {
    let shared = a
        .path
        .iter()
        .zip(b.path)
        .take_while(|(x, y)| x == y)
        .count();
    match (a.path.get(shared), b.path.get(shared)) {
        (Some(x), Some(y)) => (a.adds_key_at(shared), x).cmp(&(b.adds_key_at(shared), y)),
        // One inside the other: excluded by the invariant; keep a total order.
        _ => a.path.len().cmp(&b.path.len()),
    }
}

/// An object as the rules see it while they run. See the module comment.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft<'a> {
    original: &'a Value,
    edits: Vec<Edit<'a>>,
    /// Per place, the edit holding it.
    held: [Option<usize>; Place::ALL.len()],
    /// Per place, where it is in the original: walked once, as every action
    /// looks its place up.
    found: [OnceCell<Result<Option<&'a Value>, ApplyError>>; Place::ALL.len()],
}

impl<'a> Draft<'a> {
    pub fn new(original: &'a Value) -> Self {
        Draft {
            original,
            edits: Vec::new(),
            held: [None; Place::ALL.len()],
            found: Default::default(),
        }
    }

    /// The edit holding `place`, if any.
    fn holding(&self, place: Place) -> Option<usize> {
        self.held[place as usize]
    }

    /// The place in the original.
    fn in_original(&self, place: Place) -> Result<Option<&'a Value>, ApplyError> {
        self.found[place as usize]
            .get_or_init(|| walk(self.original, place, 0))
            .clone()
    }

    fn push(&mut self, edit: Edit<'a>) -> usize {
        let index = self.edits.len();
        for place in Place::ALL {
            if place.path().starts_with(edit.path) {
                self.held[place as usize].get_or_insert(index);
            }
        }
        self.edits.push(edit);
        index
    }

    /// The place as it is now; `None` when it (or a map on the way) is absent
    /// or null. A node on the way that is not a map is a shape error.
    pub fn get(&self, place: Place) -> Result<Option<&Value>, ApplyError> {
        match self.holding(place) {
            Some(i) => walk(&self.edits[i].after, place, self.edits[i].path.len()),
            None => self.in_original(place),
        }
    }

    /// Let `edit` change the list at `at`. An absent or null list is given
    /// empty if `create`, else `edit` is not called. The place is copied only
    /// when `edit` writes to the list.
    pub fn edit_list(
        &mut self,
        at: ListAt<'_>,
        create: bool,
        edit: impl FnOnce(&mut List<'_>),
    ) -> Result<(), ApplyError> {
        let place = at.place();
        if self.holding(place).is_none() {
            let current = match self.in_original(place)? {
                Some(node) => at.find(node)?,
                None => None,
            };
            let mut list = match current {
                Some(items) => List::Borrowed(items),
                None if create => List::Owned(Vec::new()),
                None => return Ok(()),
            };
            edit(&mut list);
            if let List::Owned(items) = list {
                // Copy the place without the list about to be replaced.
                let edit = self.start(place, Some(at))?;
                self.push(edit);
                *at.slot(self.get_mut(place)?)? = Value::Array(items);
            }
            return Ok(());
        }
        // Already copied: change the copy, moved out and back.
        let exists = match self.get(place)? {
            Some(node) => at.find(node)?.is_some(),
            None => false,
        };
        if !exists && !create {
            return Ok(());
        }
        let slot = at.slot(self.get_mut(place)?)?;
        let mut list = match slot {
            Value::Array(items) => List::Owned(std::mem::take(items)),
            _ => List::Owned(Vec::new()),
        };
        edit(&mut list);
        *slot = Value::Array(list.into_owned());
        Ok(())
    }

    /// Set `key` of the map at `place` (created if absent) to `value`, unless
    /// it already is.
    pub fn set_key(&mut self, place: Place, key: &str, value: &str) -> Result<(), ApplyError> {
        let current = self.get(place)?.and_then(|map| map.get(key));
        if current.and_then(Value::as_str) != Some(value)
            && let Value::Object(map) = self.get_mut(place)?
        {
            map.insert(key.to_string(), Value::String(value.to_string()));
        }
        Ok(())
    }

    /// Remove `key` from the map at `place`, if there.
    pub fn remove_key(&mut self, place: Place, key: &str) -> Result<(), ApplyError> {
        let present = self.get(place)?.is_some_and(|map| map.get(key).is_some());
        if present && let Value::Object(map) = self.get_mut(place)? {
            map.remove(key);
        }
        Ok(())
    }

    /// The place for writing: copied from the original the first time, created
    /// with the maps leading to it if absent or null.
    pub fn get_mut(&mut self, place: Place) -> Result<&mut Value, ApplyError> {
        let index = match self.holding(place) {
            Some(i) => i,
            None => {
                let edit = self.start(place, None)?;
                self.push(edit)
            }
        };
        let path = place.path();
        let edit = &mut self.edits[index];
        let mut node = &mut edit.after;
        for depth in edit.path.len()..path.len() {
            let map = node
                .as_object_mut()
                .ok_or_else(|| shape(dotted(&path[..depth]), "a map"))?;
            let slot = map.entry(path[depth]).or_insert(Value::Null);
            if slot.is_null() {
                *slot = skeleton(place, depth + 1);
            }
            node = slot;
        }
        check(place, node)?;
        Ok(node)
    }

    /// A new edit for `place`, which no edit holds; the list at `leave_out`,
    /// which the caller replaces, is not copied.
    fn start(&self, place: Place, leave_out: Option<ListAt<'_>>) -> Result<Edit<'a>, ApplyError> {
        let path = place.path();
        let whole = |node: &'a Value| Edit {
            path,
            before: Some(node),
            after: match leave_out {
                Some(at) => at.copy_without(node),
                None => node.clone(),
            },
        };
        if let Some(node) = self.in_original(place)? {
            return Ok(whole(node));
        }
        // Absent or null on the way: the edit starts at the shallowest such node.
        let mut node = self.original;
        for depth in 0..path.len() {
            let map = node
                .as_object()
                .ok_or_else(|| shape(dotted(&path[..depth]), "a map"))?;
            match map.get(path[depth]) {
                None | Some(Value::Null) => {
                    return Ok(Edit {
                        path: &path[..=depth],
                        before: map.get(path[depth]),
                        after: skeleton(place, depth + 1),
                    });
                }
                Some(next) => node = next,
            }
        }
        check(place, node)?;
        Ok(whole(node))
    }

    /// The whole object as the rules left it.
    pub fn to_object(&self) -> Value {
        let mut object = self.original.clone();
        for edit in &self.edits {
            let (last, parents) = edit.path.split_last().expect("an edit path is never empty");
            // The parents are maps of the original (see `start`).
            let parent = parents
                .iter()
                .try_fold(&mut object, |node, key| node.get_mut(*key));
            if let Some(Value::Object(map)) = parent {
                map.insert((*last).to_string(), edit.after.clone());
            }
        }
        object
    }

    /// The JSONPatch from the original to the object as the rules left it:
    /// the same operations, in the same order, as
    /// `crate::patch::diff(original, &self.to_object())`.
    pub fn patch(&self) -> Patch {
        let mut edits: Vec<&Edit<'_>> = self.edits.iter().collect();
        edits.sort_by(|a, b| document_order(a, b));
        let mut ops = Vec::new();
        for edit in edits {
            crate::patch::diff_at(edit.path, edit.before, &edit.after, &mut ops);
        }
        Patch(ops)
    }
}

/// The place below `node`, which sits at `from` keys down the place's path.
fn walk(mut node: &Value, place: Place, from: usize) -> Result<Option<&Value>, ApplyError> {
    let path = place.path();
    for depth in from..path.len() {
        let map = node
            .as_object()
            .ok_or_else(|| shape(dotted(&path[..depth]), "a map"))?;
        match map.get(path[depth]) {
            None | Some(Value::Null) => return Ok(None),
            Some(next) => node = next,
        }
    }
    check(place, node)?;
    Ok(Some(node))
}

/// What a new node at `depth` of the place's path holds: the maps down to the
/// place, and the place empty.
fn skeleton(place: Place, depth: usize) -> Value {
    let path = place.path();
    let mut node = empty(place);
    for key in path[depth..].iter().rev() {
        let mut map = Map::new();
        map.insert((*key).to_string(), node);
        node = Value::Object(map);
    }
    node
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::diff;
    use serde_json::json;

    fn push(item: Value) -> impl FnOnce(&mut List<'_>) {
        move |l| l.to_mut().push(item)
    }

    #[test]
    fn the_patch_is_the_whole_diff_with_added_keys_last() {
        let original = json!({"spec": {"template": {
            "metadata": {"labels": {"a": "1"}},
            "spec": {"containers": [{"name": "c", "command": ["x"]}], "volumes": null}
        }}});
        let mut d = Draft::new(&original);
        d.set_key(Place::Annotations, "k", "v").unwrap();
        d.set_key(Place::Labels, "b", "2").unwrap();
        let volumes = ListAt::Place(Place::Volumes);
        d.edit_list(volumes, true, push(json!({"name": "v"})))
            .unwrap();
        let args = ListAt::ContainerField {
            index: 0,
            name: "c",
            field: "args",
        };
        d.edit_list(args, true, push(json!("--y"))).unwrap();
        let after = d.to_object();
        assert_eq!(
            after["spec"]["template"]["spec"]["containers"][0]["args"],
            json!(["--y"])
        );
        assert_eq!(d.patch(), diff(&original, &after));
        let ops = serde_json::to_value(d.patch()).unwrap();
        let paths: Vec<&str> = ops
            .as_array()
            .unwrap()
            .iter()
            .map(|op| op["path"].as_str().unwrap())
            .collect();
        assert_eq!(
            paths,
            [
                "/spec/template/metadata/labels/b",
                "/spec/template/metadata/annotations",
                "/spec/template/spec/containers/0/args",
                "/spec/template/spec/volumes",
            ]
        );
    }

    #[test]
    fn missing_maps_are_created_once_and_reads_copy_nothing() {
        let original = json!({"kind": "VerticalPodAutoscaler"});
        let mut d = Draft::new(&original);
        let policies = ListAt::Place(Place::ContainerPolicies);
        d.edit_list(policies, false, push(json!(1))).unwrap();
        d.remove_key(Place::Labels, "x").unwrap();
        assert_eq!(d.get(Place::Containers).unwrap(), None);
        assert!(d.edits.is_empty(), "nothing written, nothing copied");
        d.edit_list(policies, true, push(json!({"containerName": "a"})))
            .unwrap();
        d.edit_list(policies, true, push(json!({"containerName": "b"})))
            .unwrap();
        assert_eq!(d.edits.len(), 1);
        assert_eq!(d.edits[0].path, ["spec"]);
        assert_eq!(
            serde_json::to_value(d.patch()).unwrap(),
            json!([{"op": "add", "path": "/spec", "value": {"resourcePolicy": {
                "containerPolicies": [{"containerName": "a"}, {"containerName": "b"}]
            }}}])
        );
    }

    #[test]
    fn a_node_of_the_wrong_type_is_a_shape_error_naming_it() {
        let original = json!({"spec": {"template": {"metadata": {"labels": "x"}, "spec": []}}});
        let mut d = Draft::new(&original);
        let err = d.set_key(Place::Labels, "a", "b").unwrap_err();
        assert_eq!(err, shape("spec.template.metadata.labels", "a map"));
        let err = d.get(Place::Volumes).unwrap_err();
        assert_eq!(err, shape("spec.template.spec", "a map"));
        assert_eq!(d.to_object(), original);
    }
}
