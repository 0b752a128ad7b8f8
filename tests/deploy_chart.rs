//! The Helm chart `charts/scion`, rendered by the real `helm template` and
//! checked by `helm lint` (the test bed's helm, see tests/support/chart.rs):
//! with its default values it is `scion manifests` without the
//! MutatingWebhookConfiguration (the leader registers that one), object for
//! object and field for field, for every provider; every flag it passes is
//! one `scion serve` accepts; the values gardenlet injects and the optional
//! parts render as documented. That a real API server accepts what it
//! renders is tests/deploy_e2e.rs.

#[path = "support/testbed/mod.rs"]
mod testbed;

use testbed::chart;

use chart::{GARDENLET_VALUES, Rendered, render, try_render};
use clap::Parser as _;
use scion::deploy::{self, DEFAULT_IMAGE, Extension, InstallOptions, Manifest};
use scion::profile::BUILTIN_PROVIDERS;
use serde_json::Value;

fn key(kind: &str, name: &str) -> String {
    format!("{kind}/{name}")
}

fn by_key(docs: &[Rendered]) -> std::collections::BTreeMap<String, Value> {
    docs.iter()
        .map(|d| (key(d.kind(), d.name()), d.object.clone()))
        .collect()
}

fn find<'a>(docs: &'a [Rendered], kind: &str) -> &'a Value {
    &docs
        .iter()
        .find(|d| d.kind() == kind)
        .unwrap_or_else(|| panic!("no {kind} rendered"))
        .object
}

fn container(docs: &[Rendered]) -> &Value {
    &find(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
}

fn args(docs: &[Rendered]) -> Vec<String> {
    container(docs)["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn default_values_render_scion_manifests_without_the_webhook_configuration() {
    for provider in BUILTIN_PROVIDERS {
        let namespace = format!("extension-provider-{provider}-x7k2m");
        let docs = render(&format!("provider: {provider}\n"), &namespace);
        let ext = Extension::new(provider, &namespace).unwrap();
        let opts = InstallOptions::new(ext, DEFAULT_IMAGE, None).unwrap();
        let expected: std::collections::BTreeMap<String, Value> = deploy::install_objects(&opts)
            .iter()
            .filter(|m| !matches!(m, Manifest::MutatingWebhookConfiguration(_)))
            .map(|m| {
                let v = serde_json::to_value(m).unwrap();
                (key(m.kind(), v["metadata"]["name"].as_str().unwrap()), v)
            })
            .collect();
        let rendered = by_key(&docs);
        assert_eq!(
            rendered.keys().collect::<Vec<_>>(),
            expected.keys().collect::<Vec<_>>(),
            "{provider}: the chart renders other objects than scion manifests"
        );
        for (k, want) in &expected {
            assert_eq!(
                &rendered[k], want,
                "{provider}: {k} differs between the chart and scion manifests"
            );
        }
    }
}

#[test]
fn helm_lint_passes_with_the_default_and_gardenlets_values() {
    let dir = tempfile::tempdir().unwrap();
    let values = dir.path().join("gardenlet.yaml");
    std::fs::write(&values, GARDENLET_VALUES).unwrap();
    let chart = chart::chart_dir();
    for extra in [
        vec!["--set", "provider=aws"],
        vec!["--values", values.to_str().unwrap()],
    ] {
        let mut args = vec!["lint", "--strict", chart.to_str().unwrap()];
        args.extend(extra.iter().copied());
        let out = chart::helm(&args);
        assert!(
            out.status.success(),
            "helm {args:?}:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // and lint is not vacuous: without the required value it fails
    let out = chart::helm(&["lint", "--strict", chart.to_str().unwrap()]);
    assert!(
        !out.status.success(),
        "helm lint accepts a chart without provider"
    );
}

#[test]
fn chart_version_is_the_crate_version() {
    let chart = std::fs::read_to_string(chart::chart_dir().join("Chart.yaml")).unwrap();
    let meta: Value = serde_saphyr::from_str(&chart).unwrap();
    assert_eq!(meta["appVersion"], env!("CARGO_PKG_VERSION"));
    assert_eq!(meta["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        DEFAULT_IMAGE,
        format!("scion:{}", env!("CARGO_PKG_VERSION"))
    );
}

/// Parse the container's args as the binary does.
fn serve_accepts(args: &[String]) -> Result<(), String> {
    let mut argv = vec!["scion".to_owned()];
    argv.extend(args.iter().cloned());
    let cli = scion::cli::Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
    match cli.command {
        scion::cli::Command::Serve(serve) => serve.validate(),
        other => Err(format!("not serve: {other:?}")),
    }
}

#[test]
fn every_flag_the_chart_passes_is_accepted_by_scion_serve() {
    let cases = [
        "provider: aws\n",
        "provider: gcp\ndisableWebhooks: [\"*\"]\ndisableControllers: [controlplane]\n\
         controllers: {controlplane: {concurrentSyncs: 12}}\n\
         clientConnection: {qps: 20, burst: 40}\nlogging: {level: debug, format: text}\n\
         metricsPort: 9090\nhealthPort: 9091\nwebhookConfig: {serverPort: 9443}\n",
        "provider: azure\ndisableWebhooks: [seedprovider, cloudprovider]\n",
    ];
    for values in cases {
        let docs = render(values, "extension-x");
        let a = args(&docs);
        serve_accepts(&a).unwrap_or_else(|e| panic!("{values}: {a:?}: {e}"));
    }
    // and the values reach the flags
    let docs = render(cases[1], "extension-x");
    let a = args(&docs);
    for flag in [
        "--disable-webhooks=*",
        "--disable-controllers=controlplane",
        "--controlplane-max-concurrent-reconciles=12",
        "--kube-api-qps=20",
        "--kube-api-burst=40",
        "--log-level=debug",
        "--log-format=text",
        "--metrics-bind-address=:9090",
        "--health-bind-address=:9091",
        "--webhook-config-server-port=9443",
    ] {
        assert!(a.contains(&flag.to_owned()), "{flag} missing in {a:?}");
    }
    let svc = find(&docs, "Service");
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 9443);
    // The Go chart's ControllerConfiguration values and per-controller
    // settings reach their flags, as gardener-extension-provider-aws's do.
    let go_values = "provider: aws\n\
         controllers: {healthcheck: {concurrentSyncs: 3}, heartbeat: {renewIntervalSeconds: 20}}\n\
         config:\n  etcd: {storage: {className: premium, capacity: 80Gi}}\n  \
         healthCheckConfig: {syncPeriod: 1m}\n  featureGates: {MTUCustomizer: true, Other: false}\n";
    let go_docs = render(go_values, "extension-x");
    let a = args(&go_docs);
    serve_accepts(&a).unwrap_or_else(|e| panic!("{a:?}: {e}"));
    for flag in [
        "--healthcheck-max-concurrent-reconciles=3",
        "--heartbeat-renew-interval-seconds=20",
        "--healthcheck-sync-period=1m",
        "--etcd-storage-class=premium",
        "--etcd-storage-capacity=80Gi",
        "--feature-gates=MTUCustomizer=true,Other=false",
    ] {
        assert!(a.contains(&flag.to_owned()), "{flag} missing in {a:?}");
    }
    // Unset: no flag (the profile's chart default); empty: the flag empty
    // (the provider's fallback).
    let a = args(&render("provider: aws\n", "x"));
    assert!(
        !a.iter()
            .any(|f| f.starts_with("--etcd-storage") || f.starts_with("--feature-gates")),
        "{a:?}"
    );
    let a = args(&render(
        "provider: aws\nconfig: {etcd: {storage: {className: \"\"}}}\n",
        "x",
    ));
    assert!(a.contains(&"--etcd-storage-class=".to_owned()), "{a:?}");
    assert!(
        !a.iter().any(|f| f.starts_with("--etcd-storage-capacity")),
        "{a:?}"
    );
    serve_accepts(&a).unwrap();
    let ann = &find(&docs, "Deployment")["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(ann["prometheus.io/port"], "9090");
}

#[test]
fn gardenlet_values_render_and_the_seed_settings_apply() {
    let docs = try_render(
        GARDENLET_VALUES,
        "scion-provider-aws",
        "extension-scion-provider-aws-x1",
        "1.33.4",
    )
    .unwrap();
    let svc = find(&docs, "Service");
    assert_eq!(svc["spec"]["trafficDistribution"], "PreferClose");
    assert_eq!(
        svc["metadata"]["namespace"],
        "extension-scion-provider-aws-x1"
    );
    let docs = try_render(GARDENLET_VALUES, "scion-provider-aws", "ns", "1.34.0").unwrap();
    assert_eq!(
        find(&docs, "Service")["spec"]["trafficDistribution"],
        "PreferSameZone"
    );
    // without the seed setting the Service is the plain one
    let plain = render("provider: aws\n", "ns");
    assert!(
        find(&plain, "Service")["spec"]
            .get("trafficDistribution")
            .is_none()
    );
    // the ServiceAccount in the RBAC binding is the release namespace's
    let crb = find(&docs, "ClusterRoleBinding");
    assert_eq!(crb["subjects"][0]["namespace"], "ns");
}

#[test]
fn network_policy_admits_the_webhook_port_only_from_the_api_server_peers() {
    assert!(
        !render("provider: aws\n", "ns")
            .iter()
            .any(|d| d.kind() == "NetworkPolicy"),
        "off by default"
    );
    let docs = try_render(
        &format!("{GARDENLET_VALUES}\nnetworkPolicy: {{enabled: true}}\n"),
        "scion-provider-aws",
        "ns",
        "1.33.0",
    )
    .unwrap();
    let np = find(&docs, "NetworkPolicy");
    assert_eq!(np["spec"]["policyTypes"], serde_json::json!(["Ingress"]));
    let ingress = np["spec"]["ingress"].as_array().unwrap();
    assert_eq!(ingress[0]["from"][0]["ipBlock"]["cidr"], "10.250.0.0/16");
    assert_eq!(
        ingress[0]["ports"],
        serde_json::json!([{"protocol": "TCP", "port": 10250}])
    );
    assert_eq!(ingress[1]["ports"][0]["port"], 8080);
    assert_eq!(
        np["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/name"],
        "gardener-extension-provider-aws"
    );
    // explicit peers win over the node network
    let docs = render(
        "provider: aws\nnetworkPolicy:\n  enabled: true\n  webhookFrom:\n  - ipBlock: {cidr: 172.16.0.0/24}\n",
        "ns",
    );
    let np = find(&docs, "NetworkPolicy");
    assert_eq!(
        np["spec"]["ingress"][0]["from"][0]["ipBlock"]["cidr"],
        "172.16.0.0/24"
    );
    // no peers at all: a clear error instead of a policy that admits nothing
    let err = try_render(
        "provider: aws\nnetworkPolicy: {enabled: true}\n",
        "r",
        "ns",
        "1.33.0",
    )
    .unwrap_err();
    assert!(err.contains("networkPolicy.webhookFrom"), "{err}");
}

#[test]
fn image_vector_overwrite_is_mounted_and_named_in_the_environment() {
    let values = "provider: openstack\nimageVectorOverwrite: |\n  images:\n  - name: cloud-controller-manager\n    repository: registry.local/ccm\n    tag: v1.33.0\n";
    let docs = render(values, "ns");
    let cm = find(&docs, "ConfigMap");
    assert_eq!(
        cm["metadata"]["name"],
        "gardener-extension-provider-openstack-imagevector-overwrite"
    );
    assert!(
        cm["data"]["images_overwrite.yaml"]
            .as_str()
            .unwrap()
            .contains("registry.local/ccm")
    );
    let c = container(&docs);
    assert!(
        c["env"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "IMAGEVECTOR_OVERWRITE"
                && e["value"] == "/charts_overwrite/images_overwrite.yaml")
    );
    assert!(
        c["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["mountPath"] == "/charts_overwrite/")
    );
    let ann = &find(&docs, "Deployment")["spec"]["template"]["metadata"]["annotations"];
    let sum = ann["checksum/configmap-imagevector-overwrite"]
        .as_str()
        .unwrap();
    assert_eq!(sum.len(), 64, "sha256 of the rendered ConfigMap");
    // a changed overwrite rolls the pods
    let other = render(&values.replace("v1.33.0", "v1.33.1"), "ns");
    assert_ne!(
        find(&other, "Deployment")["spec"]["template"]["metadata"]["annotations"]["checksum/configmap-imagevector-overwrite"],
        sum
    );
}

#[test]
fn the_usual_values_reach_the_workload() {
    let docs = render(
        "provider: alicloud\nreplicaCount: 3\nimage: {repository: reg.local/scion, tag: \"sha256:abc\"}\n\
         resources: {limits: {memory: 1Gi}}\nvpa: {enabled: false}\nmetrics: {enableScraping: false}\n\
         webhookConfig: {certificates: {secretName: scion-cert-manager}}\n",
        "ns",
    );
    let d = find(&docs, "Deployment");
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(container(&docs)["image"], "reg.local/scion@sha256:abc");
    // Helm merges maps over the defaults: the requests stay
    assert_eq!(
        container(&docs)["resources"],
        serde_json::json!({"limits": {"memory": "1Gi"}, "requests": {"cpu": "50m", "memory": "64Mi"}})
    );
    assert!(!docs.iter().any(|d| d.kind() == "VerticalPodAutoscaler"));
    assert!(
        d["spec"]["template"]["metadata"]
            .get("annotations")
            .is_none()
    );
    // an external issuer's Secret replaces the managed certificates
    assert_eq!(
        d["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"],
        "scion-cert-manager"
    );
    assert!(!args(&docs).contains(&"--manage-certs".to_owned()));
    assert_eq!(container(&docs)["volumeMounts"][0]["readOnly"], true);
}

#[test]
fn a_missing_provider_is_named() {
    let err = try_render("{}\n", "r", "ns", "1.33.0").unwrap_err();
    assert!(err.contains("value provider is required"), "{err}");
}

#[test]
fn the_rbac_template_is_generated_from_the_table_of_api_calls() {
    let path = chart::chart_dir().join("templates/rbac.yaml");
    let want = scion::deploy::chart::rbac_template().unwrap();
    if std::env::var_os("SCION_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        have, want,
        "charts/scion/templates/rbac.yaml is stale: SCION_UPDATE_GOLDEN=1 cargo test --test deploy_chart"
    );
}

#[test]
fn the_compiled_in_chart_is_the_chart_directory() {
    let dir = chart::chart_dir();
    let mut on_disk = Vec::new();
    for sub in ["", "templates"] {
        for entry in std::fs::read_dir(dir.join(sub)).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_file() {
                let name = entry.file_name().into_string().unwrap();
                on_disk.push(if sub.is_empty() {
                    name
                } else {
                    format!("{sub}/{name}")
                });
            }
        }
    }
    on_disk.sort();
    let mut compiled: Vec<String> = scion::deploy::chart::CHART_FILES
        .iter()
        .map(|(p, _)| (*p).to_owned())
        .collect();
    compiled.sort();
    assert_eq!(
        compiled, on_disk,
        "src/deploy/chart.rs CHART_FILES lists other files than charts/scion"
    );
    for (path, text) in scion::deploy::chart::CHART_FILES {
        assert_eq!(
            *text,
            std::fs::read_to_string(dir.join(path)).unwrap(),
            "{path}"
        );
    }
}
