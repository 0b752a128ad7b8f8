//! Every built-in profile loads, validates, round-trips through the documented
//! schema (parse → write → parse gives an equal profile, the CCM section
//! included) and uses only documented actions and condition keys.

use std::collections::BTreeSet;

use scion::ccm::{CcmSpec, builtin_spec};
use scion::profile::{BUILTIN_PROVIDERS, Condition, Profile};

const SCHEMA_DOC: &str = include_str!("../docs/profiles.md");

#[test]
fn all_five_providers_are_built_in() {
    assert_eq!(
        BUILTIN_PROVIDERS,
        ["alicloud", "aws", "azure", "gcp", "openstack"]
    );
}

#[test]
fn every_builtin_profile_round_trips_through_the_schema() {
    for provider in BUILTIN_PROVIDERS {
        let profile = Profile::builtin(provider).unwrap();
        assert_eq!(&profile.provider, provider);
        let yaml = profile.to_yaml().unwrap();
        let again = Profile::from_yaml(&profile.source, &yaml)
            .unwrap_or_else(|e| panic!("{provider}: written profile does not load: {e}\n{yaml}"));
        assert_eq!(profile, again, "{provider} changed in the round trip");
        // Writing is deterministic.
        assert_eq!(yaml, again.to_yaml().unwrap(), "{provider}");
    }
}

#[test]
fn every_builtin_profile_has_a_valid_ccm_section_read_from_the_profile() {
    for provider in BUILTIN_PROVIDERS {
        let profile = Profile::builtin(provider).unwrap();
        let from_profile = CcmSpec::from_profile(&profile).unwrap();
        from_profile.validate().unwrap();
        let builtin = builtin_spec(provider).unwrap();
        assert_eq!(
            format!("{from_profile:?}"),
            format!("{builtin:?}"),
            "{provider}: builtin_spec reads the profile file"
        );
        // And the round-tripped profile gives the same CCM spec.
        let again = Profile::from_yaml("x.yaml", &profile.to_yaml().unwrap()).unwrap();
        assert_eq!(
            format!("{:?}", CcmSpec::from_profile(&again).unwrap()),
            format!("{builtin:?}")
        );
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

fn condition_keys(c: &Condition, out: &mut BTreeSet<&'static str>) {
    match c {
        Condition::Kubernetes(_) => {
            out.insert("kubernetes");
        }
        Condition::WorkerKubernetes { .. } => {
            out.insert("workerKubernetes");
        }
        Condition::Ipv6(_) => {
            out.insert("ipv6");
        }
        Condition::AnnotationTrue(_) => {
            out.insert("annotation");
        }
        Condition::InfrastructureConfig { .. } => {
            out.insert("infrastructureConfig");
        }
        Condition::All(l) | Condition::Any(l) => l.iter().for_each(|c| condition_keys(c, out)),
        Condition::Not(c) => condition_keys(c, out),
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
                    condition_keys(c, &mut keys);
                }
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
