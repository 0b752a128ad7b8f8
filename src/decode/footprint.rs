//! The part of an object a profile reads or writes, as a [`Reach`], so the
//! server decodes only that part of each request object.
//!
//! Derived from where each action writes ([`crate::profile::Action::touches`],
//! one exhaustive match: a new action cannot be added without saying where it
//! writes). Besides the actions, every object
//! needs what dispatch and the shape check read: `metadata.name`,
//! `metadata.namespace`, `metadata.deletionTimestamp`, for a Deployment the
//! `name`, `command` and `args` of each container, and for an
//! OperatingSystemConfig its pool label, purpose, units and files.

use super::{ObjectReach, Reach};
use crate::profile::{Place, Profile, TARGETS, Touch};

/// The reach of each object the profile mutates: per target, what dispatch,
/// the shape check and the target's rules read or write.
pub fn footprint(profile: &Profile) -> ObjectReach {
    let metadata = Reach::keys([
        ("name", Reach::All),
        ("namespace", Reach::All),
        ("deletionTimestamp", Reach::All),
    ]);
    let common = Reach::keys([("metadata", metadata)]);
    let targets = TARGETS.iter().map(|target| {
        // What the shape check reads: a VPA's spec is a map; a Deployment's
        // containers are maps with a name and string lists.
        let checked = if target.is_osc() {
            // The purpose and the pool label decide; the phases that
            // re-encode the kubelet unit, its configuration and the sysctl
            // file run whatever the actions are, so units and files are
            // reached whole.
            Reach::keys([
                ("metadata", Reach::keys([("labels", Reach::All)])),
                (
                    "spec",
                    Reach::keys([
                        ("purpose", Reach::All),
                        ("units", Reach::All),
                        ("files", Reach::All),
                    ]),
                ),
            ])
        } else if target.is_secret() {
            // Labels tell workload identity; the data is read and written.
            Reach::keys([
                ("metadata", Reach::keys([("labels", Reach::All)])),
                ("data", Reach::All),
            ])
        } else if target.is_etcd() {
            along(&["spec"], Reach::All)
        } else if target.is_vpa() {
            along(&["spec"], Reach::keys::<&str>([]))
        } else {
            containers_with(&["name", "command", "args"])
        };
        let rules = profile.rules(target.component);
        let touched = rules
            .iter()
            .flat_map(|r| &r.actions)
            .flat_map(|a| a.touches());
        let reach = touched.fold(checked, |reach, touch| reach.union(reach_of(*touch)));
        let identity = (target.group, target.version, target.kind, target.name);
        (identity, reach)
    });
    ObjectReach::new(common, targets)
}

/// What a touch reaches. A place changed whole is decoded whole: a replaced
/// element is diffed field by field against the one it replaces.
fn reach_of(touch: Touch) -> Reach {
    match touch {
        Touch::Whole(place) => along(place.path(), Reach::All),
        Touch::ContainerField(field) => containers_with(&[field]),
    }
}

/// These fields of every container.
fn containers_with(fields: &[&str]) -> Reach {
    let each = Reach::keys(fields.iter().map(|f| (*f, Reach::All)));
    along(Place::Containers.path(), Reach::Each(Box::new(each)))
}

/// `leaf` at `path` from the object's root.
fn along(path: &[&str], leaf: Reach) -> Reach {
    path.iter()
        .rev()
        .fold(leaf, |reach, key| Reach::keys([(*key, reach)]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn aws_reach_keeps_what_rules_touch_and_drops_the_rest() {
        let reach = footprint(&Profile::builtin("aws").unwrap());
        let kind = |k: &str| crate::admission::GroupVersionKind {
            group: "apps".into(),
            version: "v1".into(),
            kind: k.into(),
        };
        let object = json!({
            "metadata": {"name": "kube-controller-manager", "namespace": "shoot--a--b",
                "managedFields": [{"manager": "gardenlet"}], "labels": {"app": "x"}},
            "spec": {"replicas": 1, "template": {
                "metadata": {"labels": {"a": "b"}, "annotations": {"c": "d"}, "creationTimestamp": null},
                "spec": {"containers": [{"name": "kcm", "image": "i", "command": ["--v=2"],
                    "env": [{"name": "E"}], "volumeMounts": [{"name": "m"}],
                    "resources": {"limits": {"cpu": "1"}}}],
                    "volumes": [{"name": "v", "secret": {"secretName": "s"}}],
                    "priorityClassName": "p"}}},
            "status": {"replicas": 1}
        });
        let kcm = json!({
            "metadata": {"name": "kube-controller-manager", "namespace": "shoot--a--b"},
            "spec": {"template": {
                "metadata": {"labels": {"a": "b"}, "annotations": {"c": "d"}},
                "spec": {"containers": [{"name": "kcm", "command": ["--v=2"],
                    "env": [{"name": "E"}], "volumeMounts": [{"name": "m"}]}],
                    "volumes": [{"name": "v", "secret": {"secretName": "s"}}]}}}
        });
        assert_eq!(reach.prune(&kind("Deployment"), &object), kcm);
        // The MCM sidecar replaces containers whole: they are kept whole.
        let mut mcm = object.clone();
        mcm["metadata"]["name"] = json!("machine-controller-manager");
        let pruned = reach.prune(&kind("Deployment"), &mcm);
        assert_eq!(
            pruned["spec"]["template"]["spec"]["containers"],
            object["spec"]["template"]["spec"]["containers"]
        );
        // Objects that are not targets keep their metadata only.
        assert_eq!(
            reach.prune(&kind("StatefulSet"), &object),
            json!({"metadata": {"name": "kube-controller-manager", "namespace": "shoot--a--b"}})
        );
    }

    #[test]
    fn without_container_actions_only_container_fields_are_kept() {
        let reach =
            containers_with(&["name", "args"]).union(reach_of(Touch::ContainerField("env")));
        let object = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "i", "env": [], "args": ["x"]}]}}}});
        assert_eq!(
            reach.prune(&object),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "env": [], "args": ["x"]}]}}}})
        );
        // A container action reaches the containers whole.
        let whole = reach.union(reach_of(Touch::Whole(Place::Containers)));
        assert_eq!(whole.prune(&object), object);
    }
}
