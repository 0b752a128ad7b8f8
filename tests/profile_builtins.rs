//! Every built-in profile loads and validates, its components included, and
//! uses only documented actions, condition keys, values and filters.

use std::collections::BTreeSet;

use scion::profile::component::{ROOTS, expr::FILTERS};
use scion::profile::{BUILTIN_PROVIDERS, Profile};

const SCHEMA_DOC: &str = include_str!("../docs/profiles.md");

#[test]
fn all_five_providers_are_built_in() {
    assert_eq!(
        BUILTIN_PROVIDERS,
        ["alicloud", "aws", "azure", "gcp", "openstack"]
    );
}

#[test]
fn every_builtin_profile_has_the_cloud_controller_manager_component() {
    for provider in BUILTIN_PROVIDERS {
        let profile = Profile::builtin(provider).unwrap();
        let plane = profile.control_plane().unwrap();
        assert_eq!(
            plane.components[0].name, "cloud-controller-manager",
            "{provider}"
        );
        assert_eq!(
            plane.components[0].file,
            format!("{provider}/components/cloud-controller-manager.yaml")
        );
        assert_eq!(plane.code.map(|c| c.0.name()), Some(*provider));
    }
}

#[test]
fn every_builtin_profile_covers_the_webhook_components() {
    for provider in BUILTIN_PROVIDERS {
        let p = Profile::builtin(provider).unwrap();
        for component in [
            "kube-controller-manager",
            "machine-controller-manager",
            "machine-controller-manager-vpa",
        ] {
            assert!(!p.rules(component).is_empty(), "{provider}: {component}");
        }
    }
}

#[test]
fn builtin_profiles_use_only_documented_actions_and_conditions() {
    for provider in BUILTIN_PROVIDERS {
        let p = Profile::builtin(provider).unwrap();
        let mut keys = BTreeSet::new();
        for (_, rules) in &p.components {
            for rule in rules {
                for action in &rule.actions {
                    keys.insert(action.kind());
                }
                if let Some(c) = &rule.when {
                    c.keys(&mut keys);
                }
            }
        }
        for component in &p.control_plane().unwrap().components {
            for c in component.conditions() {
                c.keys(&mut keys);
            }
        }
        for key in keys {
            assert!(
                SCHEMA_DOC.contains(&format!("`{key}")),
                "{provider}: `{key}` is not documented in docs/profiles.md (profile schema)"
            );
        }
    }
}

#[test]
fn every_value_and_filter_of_the_component_language_is_documented() {
    for (name, _) in ROOTS {
        assert!(
            SCHEMA_DOC.contains(&format!("| `{name}")),
            "value `{name}` has no row in docs/profiles.md"
        );
    }
    for (filter, _) in FILTERS {
        let name = filter.split('(').next().unwrap_or(filter);
        assert!(
            SCHEMA_DOC.contains(&format!("| `{name}")),
            "filter `{name}` has no row in docs/profiles.md"
        );
    }
}
