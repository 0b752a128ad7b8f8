//! Every built-in profile loads and validates, its CCM section included, and
//! uses only documented actions and condition keys.

use std::collections::BTreeSet;

use scion::profile::ccm::Arg;
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
fn every_builtin_profile_has_a_valid_ccm_section() {
    for provider in BUILTIN_PROVIDERS {
        let profile = Profile::builtin(provider).unwrap();
        let ccm = profile.ccm().unwrap();
        assert!(ccm.validate().is_ok(), "{provider}");
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
        for arg in &p.ccm().unwrap().args {
            if let Arg::Conditional { condition, .. } = arg {
                condition.keys(&mut keys);
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
