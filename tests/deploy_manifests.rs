//! The generated installation: every object survives a YAML round trip
//! through its k8s-openapi type, the webhook configuration matches the route
//! and the provider, and the workload is hardened as documented.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use scion::admission::{CONTROLPLANE_PATH, GroupVersionKind};
use scion::deploy::names::{CERT_DIR, HEALTH_PORT, METRICS_PORT, SERVICE_PORT, WEBHOOK_PORT};
use scion::deploy::{
    self, DEFAULT_IMAGE, Extension, InstallOptions, Manifest, controlplane_rules,
    webhook_configuration,
};
use scion::profile::BUILTIN_PROVIDERS;
use serde_json::Value;

fn options(provider: &str, ca: Option<Vec<u8>>) -> InstallOptions {
    let ext = Extension::new(provider, &format!("extension-provider-{provider}")).unwrap();
    InstallOptions::new(ext, DEFAULT_IMAGE, ca).unwrap()
}

fn ca_pem() -> Vec<u8> {
    rcgen::generate_simple_self_signed(vec!["ca".to_owned()])
        .unwrap()
        .cert
        .pem()
        .into_bytes()
}

#[test]
fn every_manifest_round_trips_through_its_type_without_losing_fields() {
    for provider in BUILTIN_PROVIDERS {
        for manifest in deploy::install_objects(&options(provider, Some(ca_pem()))) {
            let yaml = manifest.to_yaml().unwrap();
            // typed: YAML -> k8s-openapi type -> YAML gives the same bytes
            let parsed = Manifest::from_yaml(&yaml).unwrap();
            assert_eq!(
                parsed,
                manifest,
                "{} changed in a typed round trip",
                manifest.kind()
            );
            assert_eq!(parsed.to_yaml().unwrap(), yaml);
            // untyped: the YAML carries every field with its JSON type (a
            // label value "true" stays a string, ports stay numbers), which is
            // what kubectl reads
            let untyped: Value = serde_saphyr::from_str(&yaml).unwrap();
            assert_eq!(
                untyped,
                serde_json::to_value(&manifest).unwrap(),
                "{}",
                manifest.kind()
            );
        }
    }
}

/// Without a CA bundle no webhook configuration is printed: with an empty
/// `caBundle` its `failurePolicy: Fail` entries would reject every matching
/// write of gardenlet until the leader filled the bundle in.
#[test]
fn without_a_ca_bundle_no_webhook_configuration_can_block_writes() {
    for provider in BUILTIN_PROVIDERS {
        let objects = deploy::install_objects(&options(provider, None));
        assert!(
            !objects
                .iter()
                .any(|m| m.kind() == "MutatingWebhookConfiguration"),
            "{provider}"
        );
        let text = deploy::render(&options(provider, None)).unwrap();
        assert!(!text.contains("failurePolicy"), "{provider}");
    }
    // the Deployment registers it itself, with the bundle
    let d = deployment("aws");
    let args = d["spec"]["template"]["spec"]["containers"][0]["args"].to_string();
    assert!(args.contains("--register-webhook"), "{args}");
}

#[test]
fn the_stream_splits_into_the_objects_in_apply_order() {
    let opts = options("aws", Some(ca_pem()));
    let stream = deploy::render(&opts).unwrap();
    let kinds: Vec<&str> = deploy::split_documents(&stream)
        .into_iter()
        .map(|doc| Manifest::from_yaml(doc).unwrap().kind())
        .collect();
    assert_eq!(
        kinds,
        [
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Service",
            "Deployment",
            "PodDisruptionBudget",
            "VerticalPodAutoscaler",
            "MutatingWebhookConfiguration"
        ]
    );
    assert_eq!(
        deploy::render(&opts).unwrap(),
        stream,
        "rendering is deterministic"
    );
}

/// The cloudprovider and seedprovider entries as Gardener registers them
/// (reference §1.7, §1.8, §2.2).
fn check_seed_entries(
    provider: &str,
    cloudprovider: &k8s_openapi::api::admissionregistration::v1::MutatingWebhook,
    seedprovider: &k8s_openapi::api::admissionregistration::v1::MutatingWebhook,
) {
    let cp = serde_json::to_value(cloudprovider).unwrap();
    assert_eq!(cp["clientConfig"]["service"]["path"], "/cloudprovider");
    assert_eq!(
        cp["rules"],
        serde_json::json!([{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["secrets"]}])
    );
    assert_eq!(
        cp["namespaceSelector"],
        serde_json::json!({"matchExpressions": [{"key": "shoot.gardener.cloud/provider", "operator": "In", "values": [provider]}]})
    );
    assert_eq!(
        cp["objectSelector"],
        serde_json::json!({"matchLabels": {"gardener.cloud/purpose": "cloudprovider"}})
    );
    let sp = serde_json::to_value(seedprovider).unwrap();
    assert_eq!(sp["clientConfig"]["service"]["path"], "/seedprovider");
    assert_eq!(
        sp["rules"],
        serde_json::json!([{"apiGroups": ["druid.gardener.cloud"], "apiVersions": ["v1alpha1"], "operations": ["CREATE", "UPDATE"], "resources": ["etcds"]}])
    );
    assert_eq!(
        sp["namespaceSelector"],
        serde_json::json!({"matchExpressions": [{"key": "seed.gardener.cloud/provider", "operator": "In", "values": [provider]}]}),
        "the seed's provider, not the shoot's"
    );
    assert!(sp.get("objectSelector").is_none_or(Value::is_null));
    for entry in [&cp, &sp] {
        assert_eq!(entry["failurePolicy"], "Fail");
        assert_eq!(entry["timeoutSeconds"], 10);
        assert_eq!(entry["sideEffects"], "None");
    }
}

#[test]
fn webhook_configuration_matches_the_route_and_the_provider() {
    for provider in BUILTIN_PROVIDERS {
        let ext = Extension::new(provider, "garden-ext").unwrap();
        let config = webhook_configuration(&ext, None);
        assert_eq!(
            config.metadata.name.as_deref(),
            Some(format!("scion-provider-{provider}").as_str())
        );
        let labels = config.metadata.labels.as_ref().unwrap();
        assert_eq!(
            labels["remediation.webhook.shoot.gardener.cloud/exclude"],
            "true"
        );
        let hooks = config.webhooks.as_ref().unwrap();
        let names: Vec<&str> = hooks.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(
            names,
            [
                format!("cloudprovider.{provider}.extensions.gardener.cloud"),
                format!("controlplane.{provider}.extensions.gardener.cloud"),
                format!("seedprovider.{provider}.extensions.gardener.cloud"),
            ],
            "sorted by name, as Gardener sorts them"
        );
        check_seed_entries(provider, &hooks[0], &hooks[2]);
        let hook = &hooks[1];
        assert_eq!(
            hook.name,
            format!("controlplane.{provider}.extensions.gardener.cloud")
        );
        let service = hook.client_config.service.as_ref().unwrap();
        assert_eq!(service.path.as_deref(), Some(CONTROLPLANE_PATH));
        assert_eq!(service.port, Some(i32::from(SERVICE_PORT)));
        assert_eq!(
            service.name,
            format!("gardener-extension-provider-{provider}")
        );
        assert_eq!(service.namespace, "garden-ext");
        assert!(hook.client_config.ca_bundle.is_none());
        assert!(hook.client_config.url.is_none());

        let ns = serde_json::to_value(&hook.namespace_selector).unwrap();
        assert_eq!(
            ns,
            serde_json::json!({"matchExpressions": [
                {"key": "shoot.gardener.cloud/provider", "operator": "In", "values": [provider]}
            ]})
        );
        let obj = serde_json::to_value(&hook.object_selector).unwrap();
        assert_eq!(
            obj,
            serde_json::json!({"matchLabels": {
                "provider.extensions.gardener.cloud/mutated-by-controlplane-webhook": "true"
            }})
        );
        assert_eq!(hook.failure_policy.as_deref(), Some("Fail"));
        assert_eq!(hook.side_effects, "None");
        assert_eq!(hook.match_policy.as_deref(), Some("Exact"));
        assert_eq!(hook.timeout_seconds, Some(10));
        assert_eq!(hook.admission_review_versions, ["v1", "v1beta1"]);
        assert_eq!(hook.reinvocation_policy, None);

        let rules = serde_json::to_value(&hook.rules).unwrap();
        assert_eq!(
            rules,
            serde_json::json!([
                {"apiGroups": ["apps"], "apiVersions": ["v1"],
                 "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]},
                {"apiGroups": ["autoscaling.k8s.io"], "apiVersions": ["v1"],
                 "operations": ["CREATE", "UPDATE"], "resources": ["verticalpodautoscalers"]},
                {"apiGroups": ["extensions.gardener.cloud"], "apiVersions": ["v1alpha1"],
                 "operations": ["CREATE", "UPDATE"], "resources": ["operatingsystemconfigs"]}
            ])
        );
    }
}

#[test]
fn rules_as_data_cover_exactly_deployments_vpas_and_oscs() {
    let gvk = |group: &str, version: &str, kind: &str| GroupVersionKind {
        group: group.to_owned(),
        version: version.to_owned(),
        kind: kind.to_owned(),
    };
    let rules = controlplane_rules();
    let covered = |g: &GroupVersionKind| rules.iter().any(|r| r.covers(g));
    assert!(covered(&gvk("apps", "v1", "Deployment")));
    assert!(covered(&gvk(
        "autoscaling.k8s.io",
        "v1",
        "VerticalPodAutoscaler"
    )));
    assert!(covered(&gvk(
        "extensions.gardener.cloud",
        "v1alpha1",
        "OperatingSystemConfig"
    )));
    assert!(!covered(&gvk("apps", "v1", "StatefulSet")));
    assert!(!covered(&gvk("", "v1", "Pod")));
    assert!(!covered(&gvk("apps", "v1beta1", "Deployment")));
}

#[test]
fn ca_file_ends_up_base64_in_the_ca_bundle() {
    let pem = ca_pem();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ca.crt");
    std::fs::write(&path, &pem).unwrap();
    let bundle = deploy::read_ca_bundle(&path).unwrap();
    let stream = deploy::render(&options("aws", Some(bundle))).unwrap();
    let doc = deploy::split_documents(&stream).pop().unwrap();
    let untyped: Value = serde_saphyr::from_str(doc).unwrap();
    let encoded = untyped["webhooks"][0]["clientConfig"]["caBundle"]
        .as_str()
        .unwrap();
    assert_eq!(STANDARD.decode(encoded).unwrap(), pem);
}

#[test]
fn bad_ca_files_are_rejected_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.crt");
    let err = deploy::read_ca_bundle(&missing).unwrap_err().to_string();
    assert!(err.contains("missing.crt"), "{err}");

    let key = dir.path().join("tls.key");
    let signing = rcgen::KeyPair::generate().unwrap();
    std::fs::write(&key, signing.serialize_pem()).unwrap();
    let err = deploy::read_ca_bundle(&key).unwrap_err().to_string();
    assert!(err.contains("expected CERTIFICATE"), "{err}");

    let empty = dir.path().join("empty.crt");
    std::fs::write(&empty, "").unwrap();
    let err = deploy::read_ca_bundle(&empty).unwrap_err().to_string();
    assert!(err.contains("no PEM CERTIFICATE"), "{err}");
}

fn deployment(provider: &str) -> Value {
    let objects = deploy::install_objects(&options(provider, None));
    let found = objects.iter().find(|m| m.kind() == "Deployment").unwrap();
    serde_json::to_value(found).unwrap()
}

#[test]
fn deployment_is_hardened_and_wired_to_the_server_ports() {
    let d = deployment("aws");
    assert_eq!(d["spec"]["replicas"], 2);
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(pod["priorityClassName"], "gardener-system-900");
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let c = &pod["containers"][0];
    let sc = &c["securityContext"];
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["capabilities"]["drop"], serde_json::json!(["ALL"]));
    assert_eq!(sc["runAsNonRoot"], true);
    assert!(c["resources"]["requests"]["cpu"].is_string());
    assert!(c["resources"]["requests"]["memory"].is_string());

    let ports: Vec<i64> = c["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["containerPort"].as_i64().unwrap())
        .collect();
    assert_eq!(
        ports,
        [WEBHOOK_PORT, METRICS_PORT, HEALTH_PORT].map(i64::from)
    );
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    for probe in ["livenessProbe", "readinessProbe"] {
        // named port "health" resolves to HEALTH_PORT
        assert_eq!(c[probe]["httpGet"]["port"], "health");
    }
    assert_eq!(c["ports"][2]["name"], "health");

    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args[0], "serve");
    assert!(args.contains(&"--provider=aws"));
    assert!(args.contains(&format!("--cert-dir={CERT_DIR}").as_str()));
    assert!(args.contains(&"--register-webhook"));
    assert_eq!(
        c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.namespace"
    );

    // managed certificates: an in-memory directory the replica copies the
    // leader's Secret into (no subPath, writable)
    assert!(args.contains(&"--manage-certs"));
    let mount = &c["volumeMounts"][0];
    assert_eq!(mount["mountPath"], CERT_DIR);
    assert!(mount.get("subPath").is_none());
    assert!(mount.get("readOnly").is_none());
    assert_eq!(
        pod["volumes"][0]["emptyDir"],
        serde_json::json!({"medium": "Memory", "sizeLimit": "1Mi"})
    );

    let labels = &d["spec"]["template"]["metadata"]["labels"];
    for label in [
        "networking.gardener.cloud/to-runtime-apiserver",
        "networking.gardener.cloud/to-dns",
        "networking.gardener.cloud/to-public-networks",
        "networking.gardener.cloud/to-private-networks",
        "networking.resources.gardener.cloud/to-all-shoots-kube-apiserver-tcp-443",
    ] {
        assert_eq!(labels[label], "allowed", "{label}");
    }
}

#[test]
fn service_and_pdb_follow_gardener() {
    let objects = deploy::install_objects(&options("openstack", None));
    let get = |kind: &str| {
        serde_json::to_value(objects.iter().find(|m| m.kind() == kind).unwrap()).unwrap()
    };
    let svc = get("Service");
    assert_eq!(svc["spec"]["ports"][0]["port"], 443);
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 10250);
    assert_eq!(svc["spec"]["ports"][1]["port"], 8080);
    let ann = &svc["metadata"]["annotations"];
    let parse = |key: &str| -> Value { serde_json::from_str(ann[key].as_str().unwrap()).unwrap() };
    assert_eq!(
        parse("networking.resources.gardener.cloud/from-all-webhook-targets-allowed-ports"),
        serde_json::json!([{"protocol": "TCP", "port": 10250}])
    );
    assert_eq!(
        parse("networking.resources.gardener.cloud/from-all-seed-scrape-targets-allowed-ports"),
        serde_json::json!([{"protocol": "TCP", "port": 8080}])
    );
    assert_eq!(
        parse("networking.resources.gardener.cloud/namespace-selectors"),
        serde_json::json!([
            {"matchLabels": {"kubernetes.io/metadata.name": "garden"}},
            {"matchLabels": {"gardener.cloud/role": "shoot"}}
        ])
    );
    assert_eq!(
        ann["networking.resources.gardener.cloud/pod-label-selector-namespace-alias"],
        "extensions"
    );
    assert_eq!(
        svc["spec"]["selector"],
        get("Deployment")["spec"]["selector"]["matchLabels"]
    );

    let pdb = get("PodDisruptionBudget");
    assert_eq!(pdb["spec"]["maxUnavailable"], 1);
    assert_eq!(pdb["spec"]["unhealthyPodEvictionPolicy"], "AlwaysAllow");
    assert_eq!(
        pdb["spec"]["selector"],
        get("Deployment")["spec"]["selector"]
    );
}

#[test]
fn every_namespaced_object_lives_in_the_given_namespace() {
    let objects = deploy::install_objects(&options("gcp", None));
    for m in &objects {
        let v = serde_json::to_value(m).unwrap();
        let cluster_scoped = matches!(
            m.kind(),
            "ClusterRole" | "ClusterRoleBinding" | "MutatingWebhookConfiguration"
        );
        if cluster_scoped {
            assert!(v["metadata"].get("namespace").is_none(), "{}", m.kind());
        } else {
            assert_eq!(
                v["metadata"]["namespace"],
                "extension-provider-gcp",
                "{}",
                m.kind()
            );
        }
    }
}

#[test]
fn invalid_image_is_rejected() {
    let ext = Extension::new("aws", "ns").unwrap();
    for image in ["", "scion: 1"] {
        let err = InstallOptions::new(ext.clone(), image, None).unwrap_err();
        assert!(err.to_string().contains("image"), "{err}");
    }
}

#[test]
fn yaml_1_1_scalars_are_quoted_for_kubectl() {
    // kubectl reads YAML 1.1, where a bare `on`, `no`, `y` or `0x1` is not a
    // string; a provider or namespace with such a name must stay a string.
    for name in ["on", "no", "y", "off", "0x1", "1e3"] {
        let ext = Extension::new(name, name).unwrap();
        // with a CA bundle: the webhook configuration's selector is printed too
        let opts = InstallOptions::new(ext, DEFAULT_IMAGE, Some(ca_pem())).unwrap();
        let stream = deploy::render(&opts).unwrap();
        assert!(
            stream.contains(&format!("  namespace: \"{name}\"\n")),
            "{name}"
        );
        assert!(
            stream.contains(&format!("      - \"{name}\"\n")),
            "{name}: selector value"
        );
        assert!(!stream.contains(&format!(": {name}\n")), "{name} unquoted");
    }
}
