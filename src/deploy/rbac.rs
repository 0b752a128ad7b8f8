//! Least-privilege RBAC generated from one table of API calls.
//!
//! [`API_CALLS`] lists every Kubernetes API call scion makes, one row per call
//! site. The ClusterRole and Role are generated from it, so a grant exists
//! only because a row needs it. When code gains or drops an API call, the row
//! changes with it.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::names::Extension;

/// An RBAC verb, in the order Kubernetes documents them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
}

impl Verb {
    /// The verb as it appears in a PolicyRule.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
        }
    }
}

/// Where a call is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Cluster-scoped objects, or namespaced objects in namespaces only known
    /// at run time (shoot namespaces): granted by the ClusterRole.
    Cluster,
    /// Objects in the extension's own namespace: granted by the Role.
    ExtensionNamespace,
}

/// Which objects of the resource a call touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Names {
    /// Any object (needed for list, watch, create, and objects named at run time).
    Any,
    /// Only the MutatingWebhookConfiguration `scion-provider-<p>`.
    WebhookConfiguration,
    /// Only the Namespace the extension runs in.
    ExtensionNamespace,
    /// Only the Lease `gardener-extension-heartbeat`.
    HeartbeatLease,
    /// Only the webhook certificate Secrets (`<name>-webhook-ca`, `<name>-tls`).
    CertificateSecrets,
}

impl Names {
    fn resolve(self, ext: &Extension) -> Option<Vec<String>> {
        match self {
            Names::Any => None,
            Names::WebhookConfiguration => Some(vec![ext.webhook_config_name()]),
            Names::ExtensionNamespace => Some(vec![ext.namespace().to_owned()]),
            Names::HeartbeatLease => Some(vec![crate::gardener::HEARTBEAT_LEASE_NAME.to_owned()]),
            Names::CertificateSecrets => {
                Some(vec![ext.cert_secret_name(), ext.webhook_ca_secret_name()])
            }
        }
    }
}

/// A resource of an API group: `group` is `""` for the core group; `resource`
/// is the plural name, optionally with `/subresource`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupResource {
    pub group: &'static str,
    pub resource: &'static str,
}

const fn gr(group: &'static str, resource: &'static str) -> GroupResource {
    GroupResource { group, resource }
}

/// One Kubernetes API call site.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiCall {
    /// The code making the call (module and purpose).
    pub site: &'static str,
    /// The resources it reads or writes.
    pub resources: &'static [GroupResource],
    /// The verbs the call site uses.
    pub verbs: &'static [Verb],
    pub scope: Scope,
    pub names: Names,
}

const EXTENSIONS: &str = "extensions.gardener.cloud";

/// Every Kubernetes API call scion makes, one row per call site.
pub const API_CALLS: &[ApiCall] = &[
    ApiCall {
        // Server-side apply creates a missing Secret with the same PATCH.
        site: "deploy::certs: the leader reads and applies the webhook CA and serving certificate Secrets; every replica reads the serving one",
        resources: &[gr("", "secrets")],
        verbs: &[Verb::Get, Verb::Patch],
        scope: Scope::ExtensionNamespace,
        names: Names::CertificateSecrets,
    },
    ApiCall {
        site: "deploy::certs: the leader reads the webhook configuration's caBundle (does it trust the current CA?)",
        resources: &[gr(
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations",
        )],
        verbs: &[Verb::Get],
        scope: Scope::Cluster,
        names: Names::WebhookConfiguration,
    },
    ApiCall {
        site: "state: Cluster reflector",
        resources: &[gr(EXTENSIONS, "clusters")],
        verbs: &[Verb::List, Verb::Watch],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "state: live LIST of one Cluster by name (fieldSelector) for a webhook request the reflector has not delivered yet",
        resources: &[gr(EXTENSIONS, "clusters")],
        verbs: &[Verb::List],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "state: live GET of Secrets and ConfigMaps in shoot namespaces (never cached)",
        resources: &[gr("", "configmaps"), gr("", "secrets")],
        verbs: &[Verb::Get],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "state: live LIST of Secrets by label in all namespaces (seed Secrets a provider's cloudprovider Secret ensurer reads, e.g. tenant service principals)",
        resources: &[gr("", "secrets")],
        verbs: &[Verb::List],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "state: live GET of a BackupBucket (an Etcd's backup endpoint override, etcdStorage.backupEndpointOverride)",
        resources: &[gr(EXTENSIONS, "backupbuckets")],
        verbs: &[Verb::Get],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "controller: ControlPlane watch",
        resources: &[gr(EXTENSIONS, "controlplanes")],
        verbs: &[Verb::List, Verb::Watch],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "controller::extension: finalizer and operation-annotation patch",
        resources: &[gr(EXTENSIONS, "controlplanes")],
        verbs: &[Verb::Patch],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "controller: status patch (operations, health conditions)",
        resources: &[gr(EXTENSIONS, "controlplanes/status")],
        verbs: &[Verb::Patch],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        // kube-runtime's Recorder: a new Event is created, a repeated one
        // (within 6 minutes) patched into a series.
        site: "controller::controlplane: the Warning Event naming the settings scion does not honour, on the ControlPlane",
        resources: &[gr("events.k8s.io", "events")],
        verbs: &[Verb::Create, Verb::Patch],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "controller::health: cache of the CCM Deployments (label-selected watch)",
        resources: &[gr("apps", "deployments")],
        verbs: &[Verb::List, Verb::Watch],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "controller::health: caches of the three ManagedResources (name-selected watches)",
        resources: &[gr("resources.gardener.cloud", "managedresources")],
        verbs: &[Verb::List, Verb::Watch],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "controller::health::shoot: the shoot kubeconfig Secret (gardener-internal, else gardener) of a shoot namespace whose Event check applies, read every pass (never cached)",
        resources: &[gr("", "secrets")],
        verbs: &[Verb::Get],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "controller::controlplane::deliver: ManagedResources: get, create, update when the spec changes, keepObjects patch on migrate, delete",
        resources: &[gr("resources.gardener.cloud", "managedresources")],
        verbs: &[
            Verb::Get,
            Verb::Create,
            Verb::Update,
            Verb::Patch,
            Verb::Delete,
        ],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "controller::controlplane::deliver: ManagedResource Secrets (create, delete), old ones labelled garbage-collectable (get, patch), the shoot access Secret (get, create, patch, delete)",
        resources: &[gr("", "secrets")],
        verbs: &[Verb::Get, Verb::Create, Verb::Patch, Verb::Delete],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "controller::controlplane::certificates: the secrets manager's Secrets (list by label, create, delete stale)",
        resources: &[gr("", "secrets")],
        verbs: &[Verb::List, Verb::Create, Verb::Delete],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "controller::controlplane: GET kube-apiserver (hibernation) and the CCM Deployment (Secrets it mounts, before cleanup)",
        resources: &[gr("apps", "deployments")],
        verbs: &[Verb::Get],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "controller::heartbeat: create the heartbeat Lease",
        resources: &[gr("coordination.k8s.io", "leases")],
        verbs: &[Verb::Create],
        scope: Scope::ExtensionNamespace,
        names: Names::Any,
    },
    ApiCall {
        site: "controller::heartbeat: read and renew the heartbeat Lease",
        resources: &[gr("coordination.k8s.io", "leases")],
        verbs: &[Verb::Get, Verb::Patch],
        scope: Scope::ExtensionNamespace,
        names: Names::HeartbeatLease,
    },
    ApiCall {
        site: "controller::leader: read, create and update the leader-election Lease",
        resources: &[gr("coordination.k8s.io", "leases")],
        verbs: &[Verb::Get, Verb::Create, Verb::Update],
        scope: Scope::ExtensionNamespace,
        names: Names::Any,
    },
    ApiCall {
        // Server-side apply creates the configuration with a PATCH, which
        // the API server authorizes as `create` of that name as well (a real
        // API server forbade the first registration without it); none on any
        // other configuration.
        site: "deploy::register_webhook: read and server-side apply (create, then patch) the webhook configuration",
        resources: &[gr(
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations",
        )],
        verbs: &[Verb::Get, Verb::Create, Verb::Patch],
        scope: Scope::Cluster,
        names: Names::WebhookConfiguration,
    },
    ApiCall {
        site: "deploy::register_webhook: uid of the owner Namespace",
        resources: &[gr("", "namespaces")],
        verbs: &[Verb::Get],
        scope: Scope::Cluster,
        names: Names::ExtensionNamespace,
    },
];

/// PolicyRules for one scope, generated from `calls`: rules are merged where
/// group, resource names and verbs agree, and sorted, so the output is
/// deterministic.
pub fn policy_rules(calls: &[ApiCall], scope: Scope, ext: &Extension) -> Vec<PolicyRule> {
    // (group, resource, names) -> verbs
    let mut grants: BTreeMap<(&str, &str, Names), BTreeSet<Verb>> = BTreeMap::new();
    for call in calls.iter().filter(|c| c.scope == scope) {
        for r in call.resources {
            grants
                .entry((r.group, r.resource, call.names))
                .or_default()
                .extend(call.verbs.iter().copied());
        }
    }
    // (group, names, verbs) -> resources
    let mut rules: BTreeMap<(&str, Names, Vec<Verb>), BTreeSet<&str>> = BTreeMap::new();
    for ((group, resource, names), verbs) in grants {
        rules
            .entry((group, names, verbs.into_iter().collect()))
            .or_default()
            .insert(resource);
    }
    rules
        .into_iter()
        .map(|((group, names, verbs), resources)| PolicyRule {
            api_groups: Some(vec![group.to_owned()]),
            resources: Some(resources.into_iter().map(str::to_owned).collect()),
            verbs: verbs.iter().map(|v| v.as_str().to_owned()).collect(),
            resource_names: names.resolve(ext),
            non_resource_urls: None,
        })
        .collect()
}

/// Every call `scion check` makes: reads only. The ClusterRole
/// [`check_cluster_role`] grants exactly these; `tests/cli_check.rs` records
/// the calls of an audit and checks each against it.
pub const CHECK_API_CALLS: &[ApiCall] = &[
    ApiCall {
        site: "cli::check: the Cluster list (shoot namespaces and contexts)",
        resources: &[gr(EXTENSIONS, "clusters")],
        verbs: &[Verb::List, Verb::Watch],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "cli::check: the objects the webhooks mutate, by name",
        resources: &[
            gr("", "secrets"),
            gr("apps", "deployments"),
            gr("autoscaling.k8s.io", "verticalpodautoscalers"),
        ],
        verbs: &[Verb::Get],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "cli::check: the objects the webhooks mutate, of any name",
        resources: &[
            gr(EXTENSIONS, "operatingsystemconfigs"),
            gr("druid.gardener.cloud", "etcds"),
        ],
        verbs: &[Verb::List],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "cli::check: what the rules read (Secrets, ConfigMaps, a BackupBucket), as the webhook's state source does",
        resources: &[
            gr("", "configmaps"),
            gr("", "secrets"),
            gr(EXTENSIONS, "backupbuckets"),
        ],
        verbs: &[Verb::Get],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "cli::check: the provider's ControlPlanes of a shoot namespace",
        resources: &[gr(EXTENSIONS, "controlplanes")],
        verbs: &[Verb::List],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "cli::check: the ControlPlane's ManagedResources and the Secrets they reference, the credentials and kube-apiserver the render reads",
        resources: &[
            gr("resources.gardener.cloud", "managedresources"),
            gr("", "secrets"),
            gr("apps", "deployments"),
        ],
        verbs: &[Verb::Get],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "cli::check: the secrets manager's certificate Secrets by label (reused, as the controller reuses them)",
        resources: &[gr("", "secrets")],
        verbs: &[Verb::List],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "cli::check: the Go extension's Deployments by label (does it run its healthcheck controller?)",
        resources: &[gr("apps", "deployments")],
        verbs: &[Verb::List],
        scope: Scope::Cluster,
        names: Names::Any,
    },
    ApiCall {
        site: "cli::check: the labelled seed Secrets a provider's cloudprovider Secret ensurer reads",
        resources: &[gr("", "secrets")],
        verbs: &[Verb::List],
        scope: Scope::Cluster,
        names: Names::Any,
    },
];

/// Name of the read-only ClusterRole of `scion check`.
pub const CHECK_CLUSTER_ROLE: &str = "scion-check";

/// The read-only ClusterRole `scion check` needs, generated from
/// [`CHECK_API_CALLS`] (`scion check --print-rbac`).
pub fn check_cluster_role(ext: &Extension) -> ClusterRole {
    ClusterRole {
        metadata: ObjectMeta {
            name: Some(CHECK_CLUSTER_ROLE.to_owned()),
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/part-of".to_owned(),
                "scion".to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        rules: Some(policy_rules(CHECK_API_CALLS, Scope::Cluster, ext)),
        aggregation_rule: None,
    }
}

fn subject(ext: &Extension) -> Subject {
    Subject {
        kind: "ServiceAccount".to_owned(),
        name: ext.resource_name(),
        namespace: Some(ext.namespace().to_owned()),
        api_group: None,
    }
}

/// The ClusterRole for the cluster-wide calls of [`API_CALLS`].
pub fn cluster_role(ext: &Extension) -> ClusterRole {
    ClusterRole {
        metadata: ObjectMeta {
            name: Some(ext.cluster_role_name()),
            labels: Some(ext.common_labels()),
            ..ObjectMeta::default()
        },
        rules: Some(policy_rules(API_CALLS, Scope::Cluster, ext)),
        aggregation_rule: None,
    }
}

/// Binds [`cluster_role`] to the extension's ServiceAccount.
pub fn cluster_role_binding(ext: &Extension) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: ObjectMeta {
            name: Some(ext.cluster_role_name()),
            labels: Some(ext.common_labels()),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_owned(),
            kind: "ClusterRole".to_owned(),
            name: ext.cluster_role_name(),
        },
        subjects: Some(vec![subject(ext)]),
    }
}

/// The Role for the calls of [`API_CALLS`] in the extension namespace.
pub fn role(ext: &Extension) -> Role {
    Role {
        metadata: ObjectMeta {
            name: Some(ext.resource_name()),
            namespace: Some(ext.namespace().to_owned()),
            labels: Some(ext.common_labels()),
            ..ObjectMeta::default()
        },
        rules: Some(policy_rules(API_CALLS, Scope::ExtensionNamespace, ext)),
    }
}

/// Binds [`role`] to the extension's ServiceAccount.
pub fn role_binding(ext: &Extension) -> RoleBinding {
    RoleBinding {
        metadata: ObjectMeta {
            name: Some(ext.resource_name()),
            namespace: Some(ext.namespace().to_owned()),
            labels: Some(ext.common_labels()),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_owned(),
            kind: "Role".to_owned(),
            name: ext.resource_name(),
        },
        subjects: Some(vec![subject(ext)]),
    }
}

/// A resource request as the RBAC authoriser sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceRequest<'a> {
    pub group: &'a str,
    pub resource: &'a str,
    pub verb: &'a str,
    /// The object name; `None` for list, watch, create and collection calls.
    pub name: Option<&'a str>,
}

/// Whether `rules` allow `request`, as the Kubernetes RBAC authoriser decides
/// it: the group, the resource and the verb must each be listed (or `*`), and
/// a rule with `resourceNames` only allows requests for one of those names.
pub fn allows(rules: &[PolicyRule], request: &ResourceRequest<'_>) -> bool {
    let listed = |list: &Option<Vec<String>>, item: &str| {
        list.as_ref()
            .is_some_and(|l| l.iter().any(|x| x == item || x == "*"))
    };
    rules.iter().any(|rule| {
        listed(&rule.api_groups, request.group)
            && listed(&rule.resources, request.resource)
            && rule.verbs.iter().any(|v| v == request.verb || v == "*")
            && match &rule.resource_names {
                Some(names) if !names.is_empty() => {
                    request.name.is_some_and(|n| names.iter().any(|x| x == n))
                }
                _ => true,
            }
    })
}
