//! RBAC covers every API call in `deploy::API_CALLS` and no more. The roles
//! are checked with a small RBAC authoriser (apiGroups × resources × verbs,
//! resourceNames), independent of how the rules were generated.

use k8s_openapi::api::rbac::v1::PolicyRule;
use scion::deploy::rbac::{self, ResourceRequest as Request, cluster_role, role};
use scion::deploy::{API_CALLS, Extension, Names, Scope, Verb};

fn ext() -> Extension {
    Extension::new("aws", "extension-provider-aws").unwrap()
}

fn allows(rules: &[PolicyRule], req: Request<'_>) -> bool {
    rbac::allows(rules, &req)
}

fn rules_for(scope: Scope) -> Vec<PolicyRule> {
    match scope {
        Scope::Cluster => cluster_role(&ext()).rules.unwrap(),
        Scope::ExtensionNamespace => role(&ext()).rules.unwrap(),
    }
}

/// The object names a call touches (`None`: any name).
fn names_of(names: Names) -> Option<Vec<String>> {
    match names {
        Names::Any => None,
        Names::WebhookConfiguration => Some(vec![ext().webhook_config_name()]),
        Names::ExtensionNamespace => Some(vec![ext().namespace().to_owned()]),
        Names::CertificateSecrets => Some(vec![
            ext().cert_secret_name(),
            ext().webhook_ca_secret_name(),
        ]),
        Names::HeartbeatLease => Some(vec!["gardener-extension-heartbeat".to_owned()]),
    }
}

fn name_of(names: Names) -> Option<String> {
    names_of(names).map(|n| n.join(","))
}

#[test]
fn every_api_call_is_allowed() {
    for call in API_CALLS {
        let rules = rules_for(call.scope);
        let names: Vec<Option<String>> = match names_of(call.names) {
            None => vec![None],
            Some(list) => list.into_iter().map(Some).collect(),
        };
        for name in &names {
            for r in call.resources {
                for verb in call.verbs {
                    let req = Request {
                        group: r.group,
                        resource: r.resource,
                        verb: verb.as_str(),
                        name: name.as_deref(),
                    };
                    assert!(
                        allows(&rules, req),
                        "{:?} of {:?} is not allowed",
                        req,
                        call.site
                    );
                }
            }
        }
    }
}

#[test]
fn every_grant_is_needed_by_a_call() {
    for scope in [Scope::Cluster, Scope::ExtensionNamespace] {
        for rule in rules_for(scope) {
            for group in rule.api_groups.as_ref().unwrap() {
                for resource in rule.resources.as_ref().unwrap() {
                    for verb in &rule.verbs {
                        let needed = API_CALLS.iter().any(|call| {
                            call.scope == scope
                                && name_of(call.names)
                                    == rule.resource_names.as_ref().map(|n| n.join(","))
                                && call.verbs.iter().any(|v| v.as_str() == verb)
                                && call
                                    .resources
                                    .iter()
                                    .any(|r| r.group == group && r.resource == resource)
                        });
                        assert!(
                            needed,
                            "{scope:?} grants {verb} on {group}/{resource} (names {:?}) that no call needs",
                            rule.resource_names
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn no_wildcards_and_no_privilege_verbs() {
    for scope in [Scope::Cluster, Scope::ExtensionNamespace] {
        for rule in rules_for(scope) {
            let all = rule
                .api_groups
                .iter()
                .chain(rule.resources.iter())
                .flatten()
                .chain(rule.verbs.iter());
            for item in all {
                assert_ne!(item, "*", "wildcard in {rule:?}");
                assert!(
                    !matches!(item.as_str(), "escalate" | "bind" | "impersonate"),
                    "{rule:?}"
                );
            }
            assert!(rule.non_resource_urls.is_none());
        }
    }
}

#[test]
fn what_scion_must_never_be_allowed() {
    let cluster = rules_for(Scope::Cluster);
    let req = |group, resource, verb, name| Request {
        group,
        resource,
        verb,
        name,
    };
    let forbidden = [
        // the Cluster resources are gardenlet's: read-only
        req("extensions.gardener.cloud", "clusters", "patch", None),
        req("extensions.gardener.cloud", "clusters", "delete", None),
        // ControlPlanes are never created or deleted by the extension
        req("extensions.gardener.cloud", "controlplanes", "create", None),
        req("extensions.gardener.cloud", "controlplanes", "delete", None),
        // other webhook configurations and other namespaces are off limits
        req(
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations",
            "patch",
            Some("gardener-extension-provider-gcp"),
        ),
        req(
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations",
            "list",
            None,
        ),
        req(
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations",
            "delete",
            Some("gardener-extension-provider-aws"),
        ),
        req("", "namespaces", "get", Some("kube-system")),
        req("", "namespaces", "list", None),
        // Leases only in the extension namespace, through the Role
        req("coordination.k8s.io", "leases", "get", None),
        req("", "pods", "get", None),
    ];
    for r in forbidden {
        assert!(!allows(&cluster, r), "ClusterRole allows {r:?}");
    }
    let own = rules_for(Scope::ExtensionNamespace);
    assert!(
        !allows(&own, req("", "secrets", "get", None)),
        "Role must not grant Secrets"
    );
    assert!(!allows(
        &own,
        req("coordination.k8s.io", "leases", "delete", None)
    ));
    assert!(allows(
        &own,
        req(
            "coordination.k8s.io",
            "leases",
            "update",
            Some("provider-aws-leader-election")
        )
    ));
    // controller::leader writes the Lease by update (a resourceVersion
    // guard, as client-go's election); it never patches it
    assert!(!allows(
        &own,
        req(
            "coordination.k8s.io",
            "leases",
            "patch",
            Some("provider-aws-leader-election")
        )
    ));
}

#[test]
fn table_rows_are_well_formed() {
    let mut sites: Vec<&str> = API_CALLS.iter().map(|c| c.site).collect();
    sites.sort_unstable();
    let before = sites.len();
    sites.dedup();
    assert_eq!(before, sites.len(), "duplicate call sites in API_CALLS");
    for call in API_CALLS {
        assert!(
            !call.site.is_empty() && !call.verbs.is_empty() && !call.resources.is_empty(),
            "{call:?}"
        );
        if call.names != Names::Any {
            // RBAC cannot name objects in list, watch or a POST create; a
            // server-side apply that creates is authorized as `create` of
            // the object named in its URL (tests/deploy_e2e.rs shows it on
            // a real API server), so a named `create` must come with an apply
            assert!(
                !call
                    .verbs
                    .iter()
                    .any(|v| matches!(v, Verb::List | Verb::Watch)),
                "{call:?}"
            );
            assert!(
                !call.verbs.contains(&Verb::Create)
                    || (call.verbs.contains(&Verb::Patch)
                        && call.site.contains("server-side apply")),
                "{call:?}"
            );
        }
    }
}
