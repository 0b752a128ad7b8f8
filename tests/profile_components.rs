//! The component language end to end: a provider folder whose component
//! file is changed loads with an error that names the file, the object and
//! the field (issue 24 item 6) — never at the first request — and what it
//! renders follows the conditions, repetitions and filters it is written with.

mod support;

use scion::checksum;
use scion::render::{self, RenderInput, Rendered};
use serde_json::Value;
use support::controller::providers::*;
use support::controller::*;

fn gcp() -> &'static str {
    builtin_ccm("gcp")
}

fn load_error(provider: &str, component: &str) -> String {
    spec_with_ccm(provider, component)
        .expect_err("the folder must not load")
        .to_string()
}

#[test]
fn a_bad_component_is_refused_at_load_naming_file_object_and_field() {
    let file = "components/cloud-controller-manager.yaml: ";
    let deployment = "object Deployment/cloud-controller-manager: field object.spec.template.spec";
    let cases: Vec<(String, Vec<&str>)> = vec![
        (
            gcp().replace(
                "${images.cloud-controller-manager}",
                "${images.cloud-controller-managr}",
            ),
            vec![
                file,
                deployment,
                "containers[0].image",
                "the image vector has no image \"cloud-controller-managr\"",
            ],
        ),
        (
            gcp().replace(
                "\"--cluster-name=${namespace}\"",
                "\"--cluster-name=${namespaec}\"",
            ),
            vec![
                deployment,
                "containers[0].args[6]",
                "unknown value \"namespaec\"",
            ],
        ),
        (
            gcp().replace("${code.network.projectID}", "${code.netwrk.projectID}"),
            vec![
                "object values.cloudConfig: field cloudprovider.conf.$lines[1]",
                "the code of gcp computes no value \"netwrk\" (it computes: network)",
            ],
        ),
        (
            gcp().replace("name: cloud-controller-manager\nshootAccess", "shootAccess"),
            vec![file, "missing field `name`"],
        ),
        (
            gcp().replace(
                "name: cloud-controller-manager\nshootAccess",
                "name: \" \"\nshootAccess",
            ),
            vec![file, "field name: a component needs a name"],
        ),
        (
            gcp().replace("join(\",\")}'", "joined(\",\")}'"),
            vec![
                deployment,
                "containers[0].args[0]",
                "unknown filter \"joined\"",
            ],
        ),
        (
            gcp().replace("{$when: {dualStack: true}", "{$when: {dualstack: true}"),
            vec![
                deployment,
                "containers[0].args[7].$when.dualstack",
                "unknown \"dualstack\"",
            ],
        ),
        (
            gcp().replace(
                ", $else: --cidr-allocator-type=RangeAllocator}",
                ", $otherwise: x}",
            ),
            vec![
                deployment,
                "containers[0].args[7].$otherwise",
                "unknown directive",
            ],
        ),
        (
            gcp().replace(
                "{of: nodeCIDRMaskSize, notEmpty: true}",
                "{of: nodeCIDRMask, notEmpty: true}",
            ),
            vec![
                deployment,
                "containers[0].args[1].$when",
                "unknown value \"nodeCIDRMask\"",
            ],
        ),
        (
            gcp().replace(
                "- into: seed\n  object:\n    apiVersion: v1\n    kind: Service",
                "- into: sead\n  object:\n    apiVersion: v1\n    kind: Service",
            ),
            vec![file, "unknown variant `sead`"],
        ),
        (
            gcp().replace("    kind: PodDisruptionBudget\n", ""),
            vec![
                file,
                "object objects[2]: field object.kind: must be a non-empty string",
            ],
        ),
        (
            gcp().replace(
                "  labels: {app: kubernetes, role: cloud-controller-manager}",
                "  labels: \"${other}\"\n  other: \"${labels}\"",
            ),
            vec![file, "values depend on each other in a circle"],
        ),
        (
            gcp().replace(
                "${secrets.cloud-controller-manager-server}",
                "${secrets.webhook-server}",
            ),
            vec![
                deployment,
                "volumes[1].secret.secretName",
                "keeps no certificate \"webhook-server\"",
            ],
        ),
        (
            gcp().replace(
                "deployments: [cloud-controller-manager]",
                "deployments: [cloud-controller-managr]",
            ),
            vec![
                file,
                "field health.deployments[0]",
                "\"cloud-controller-managr\" is not a Deployment of this component",
            ],
        ),
        (
            gcp().replace(
                "deployments: [cloud-controller-manager]",
                "deployments: [cloud-controller-manager, cloud-controller-manager]",
            ),
            vec![file, "field health.deployments[1]", "is listed twice"],
        ),
        (
            gcp().replace(
                "deployments: [cloud-controller-manager]",
                "deployments: [{name: cloud-controller-manager, when: {dualStak: true}}]",
            ),
            vec![file, "field health.deployments[0].when", "dualStak"],
        ),
        (
            // the health checks know the shoot, not the component's values
            gcp().replace(
                "deployments: [cloud-controller-manager]",
                "deployments: [{name: cloud-controller-manager, when: {value: {of: replicas, equals: 1}}}]",
            ),
            vec![file, "field health.deployments[0].when", "value"],
        ),
        (
            gcp().replace(
                "deployments: [cloud-controller-manager]",
                "deployment: [cloud-controller-manager]",
            ),
            vec![file, "health", "unknown field `deployment`"],
        ),
        (
            // A name `each` gives over a literal list counts, one not among them does not.
            gcp()
                .replace(
                    "deployments: [cloud-controller-manager]",
                    "deployments: [cloud-controller-manager, ccm-a, ccm-c]",
                )
                .replace(
                    "  labels: {app: kubernetes, role: cloud-controller-manager}",
                    "  labels: {app: kubernetes, role: cloud-controller-manager}\n  copies: [a, b]",
                )
                + "- into: seed\n  each: copies\n  as: copy\n  object: {apiVersion: apps/v1, kind: Deployment, metadata: {name: \"ccm-${copy}\"}}\n",
            vec![
                file,
                "field health.deployments[2]",
                "\"ccm-c\" is not a Deployment of this component",
            ],
        ),
        (
            gcp().replace(
                "deployments: [cloud-controller-manager]",
                "deployments: [cloud-controller-manager]\n  events:\n  - {involvedObject: {kind: ServiceAccount, name: ccm}, within: 5}",
            ),
            vec![file, "health.events[0].within", "invalid type"],
        ),
        (
            gcp().replace(
                "deployments: [cloud-controller-manager]",
                "deployments: [cloud-controller-manager]\n  events:\n  - {involvedObject: {kind: ServiceAccount, name: ccm}, within: 5x}",
            ),
            vec![file, "field health.events[0].within", "unknown unit"],
        ),
        (
            gcp().replace(
                "deployments: [cloud-controller-manager]",
                "deployments: [cloud-controller-manager]\n  events:\n  - {involvedObject: {kind: ServiceAccount, name: ccm}, within: 0s}",
            ),
            vec![file, "field health.events[0].within", "above zero"],
        ),
        (
            gcp().replace(
                "deployments: [cloud-controller-manager]",
                "deployments: [cloud-controller-manager]\n  events:\n  - {involvedObject: {kind: Service Account, name: ccm}, within: 5m}",
            ),
            vec![file, "field health.events[0].involvedObject.kind", "is not a kind"],
        ),
        (
            gcp().replace(
                "deployments: [cloud-controller-manager]",
                "deployments: [cloud-controller-manager]\n  events:\n  - {involvedObject: {kind: ServiceAccount, name: CCM}, within: 5m}",
            ),
            vec![file, "field health.events[0].involvedObject.name", "is not an object name"],
        ),
        (
            gcp().replace(
                "deployments: [cloud-controller-manager]",
                "deployments: [cloud-controller-manager]\n  events:\n  - {involvedObject: {kind: ServiceAccount, name: ccm}, within: 5m, codes: [{code: ERR_QUOTA}]}",
            ),
            vec![file, "field health.events[0].codes[0].code", "\"ERR_QUOTA\" is not one of Gardener's error codes"],
        ),
        (
            gcp().replace(
                "deployments: [cloud-controller-manager]",
                "deployments: [cloud-controller-manager]\n  events:\n  - {involvedObject: {kind: ServiceAccount, name: ccm}, within: 5m, codes: [{messageContains: '', code: ERR_INFRA_DEPENDENCIES}]}",
            ),
            vec![file, "field health.events[0].codes[0].messageContains", "must not be empty"],
        ),
        (
            gcp().replace(
                "deployments: [cloud-controller-manager]",
                "deployments: [cloud-controller-manager]\n  events:\n  - {involvedObject: {kind: ServiceAccount, name: ccm}, within: 5m, when: {value: {of: replicas, equals: 1}}}",
            ),
            vec![file, "field health.events[0].when", "value"],
        ),
        (
            gcp().replace(
                "deployments: [cloud-controller-manager]",
                "deployments: [cloud-controller-manager]\n  events:\n  - {involvedObject: {kind: ServiceAccount, name: ccm}, within: 5m}\n  - {involvedObject: {kind: ServiceAccount, name: ccm, namespace: kube-system}, within: 1m}",
            ),
            vec![file, "field health.events[1].involvedObject", "is listed twice"],
        ),
        (
            gcp().replace(
                "deployments: [cloud-controller-manager]",
                "deployments: [cloud-controller-manager]\n  events:\n  - {involvedObject: {kind: ServiceAccount, name: ccm}, window: 5m}",
            ),
            vec![file, "health.events[0]", "unknown field `window`"],
        ),
        (
            // gcp declares no extension feature gates
            gcp().replace(
                "deployments: [cloud-controller-manager]",
                "deployments: [{name: cloud-controller-manager, when: {not: {extensionFeatureGate: Nope}}}]",
            ),
            vec![
                file,
                "field health.deployments[0].when",
                "the profile declares no extension feature gate \"Nope\" (declared: none; add it to extensionFeatureGates in profile.yaml)",
            ],
        ),
        (
            gcp().replace(
                "            - --v=2\n",
                "            - --v=2\n            - {$when: {extensionFeatureGate: Nope}, $value: --nope}\n",
            ),
            vec![
                deployment,
                "$when",
                "declares no extension feature gate \"Nope\"",
            ],
        ),
        (
            gcp().replace(
                "            - --v=2\n",
                "            - --v=2\n            - \"--nope=${extensionFeatureGates.Nope}\"\n",
            ),
            vec![
                deployment,
                "${extensionFeatureGates.Nope}: the profile declares no extension feature gate \"Nope\"",
            ],
        ),
    ];
    for (text, needles) in cases {
        let err = load_error("gcp", &text);
        for needle in needles {
            assert!(err.contains(needle), "{needle:?} not in: {err}");
        }
        assert!(
            !err.contains("$when.$when"),
            "the path names $when once: {err}"
        );
    }
}

fn render_gcp(
    spec: &scion::profile::ControlPlaneSpec,
    shoot: &scion::gardener::ShootContext,
) -> Rendered {
    let cp = gcp_cp(None);
    let secret = gcp_static_secret();
    render::render(
        &RenderInput {
            credentials: Some(&secret),
            ..RenderInput::new(
                &cp,
                shoot,
                &scion::profile::ImageVector::builtin(&cp.spec.type_),
                &scion::secrets::Certificates::fixed(SERVER_SECRET, &spec.certificates(), ""),
            )
        },
        spec,
    )
    .expect("renders")
}

fn args(r: &Rendered) -> Vec<String> {
    serde_json::from_value(
        object(r, "Deployment", "cloud-controller-manager")["spec"]["template"]["spec"]["containers"][0]["args"]
            .clone(),
    )
    .expect("args")
}

#[test]
fn conditions_compose_and_each_repeats() {
    let text = gcp().replace(
        "            - --v=2\n",
        "            - --v=2\n            - {$when: {dualStack: false, ipv6: false, overlayEnabled: true, workloadIdentity: false, seedInShootRegion: true}, $value: --all-true}\n            - {$when: {any: [{dualStack: true}, {not: {ipv6: false}}]}, $value: --never}\n            - {$each: ipFamilies, $as: family, $value: \"--family=${family}\"}\n",
    );
    let spec = spec_with_ccm("gcp", &text).expect("loads");
    let mut shoot = provider_shoot("gcp", "europe-west1", &["IPv4"], false);
    let a = args(&render_gcp(&spec, &shoot));
    assert!(
        a.contains(&"--all-true".into()) && !a.contains(&"--never".into()),
        "{a:?}"
    );
    assert!(a.ends_with(&["--family=IPv4".to_string()]), "{a:?}");
    shoot.seed.spec.provider.region = Some("us-east1".into());
    assert!(!args(&render_gcp(&spec, &shoot)).contains(&"--all-true".into()));
}

fn config_annotation(spec: &scion::profile::ControlPlaneSpec) -> (String, Value) {
    let shoot = provider_shoot("gcp", "europe-west1", &["IPv4"], false);
    let r = render_gcp(spec, &shoot);
    (
        object(&r, "Deployment", "cloud-controller-manager")["spec"]["template"]["metadata"]
            ["annotations"]["checksum/configmap-cloud-provider-config"]
            .as_str()
            .expect("annotation")
            .to_string(),
        object(&r, "ConfigMap", "cloud-provider-config")["data"].clone(),
    )
}

#[test]
fn each_checksum_filter_hashes_the_rendered_config() {
    let (json_sum, data) = config_annotation(&builtin_spec("gcp").expect("gcp"));
    let data: std::collections::BTreeMap<String, String> =
        serde_json::from_value(data).expect("string data");
    assert_eq!(json_sum, checksum::configmap_checksum(Some(&data)));

    let with = |annotation: &str| {
        spec_with_ccm(
            "gcp",
            &gcp().replace("${cloudConfig | configMapChecksum}", annotation),
        )
        .expect("loads")
    };
    let (per_key, _) = config_annotation(&with("${cloudConfig | perKeyChecksum}"));
    assert_eq!(per_key, checksum::per_key_checksum(&data));
    assert_ne!(per_key, json_sum);
    // A value holding manifest text, hashed as Helm's sha256sum hashes it.
    let manifest = spec_with_ccm(
        "gcp",
        &gcp()
            .replace(
                "values:\n",
                "values:\n  manifest: 'ns=${namespace} conf=${cloudConfig.\"cloudprovider.conf\" | b64}'\n",
            )
            .replace("${cloudConfig | configMapChecksum}", "${manifest | sha256}"),
    )
    .expect("loads");
    let (manifest_sum, _) = config_annotation(&manifest);
    let b64 = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        &data["cloudprovider.conf"],
    );
    let text = format!("ns={NS} conf={b64}");
    assert_eq!(manifest_sum, checksum::sha256_hex(text.as_bytes()));
}

#[test]
fn a_component_without_an_object_of_a_kind_renders_without_it() {
    let text = builtin_ccm("aws");
    let start = text
        .find("- into: seed\n  object:\n    apiVersion: autoscaling.k8s.io/v1")
        .expect("vpa object");
    let end = start + 1 + text[start + 1..].find("\n- into:").expect("next object");
    let without_vpa = format!("{}{}", &text[..start], &text[end + 1..]);
    let spec = spec_with_ccm("aws", &without_vpa).expect("valid without a VPA");
    let cp = aws_cp(None, aws_subnets());
    let shoot = shoot(&["IPv4"], false);
    let r = render::render(
        &RenderInput::new(
            &cp,
            &shoot,
            &scion::profile::ImageVector::builtin(&cp.spec.type_),
            &scion::secrets::Certificates::fixed(SERVER_SECRET, &spec.certificates(), ""),
        ),
        &spec,
    )
    .expect("renders");
    let ccm: Vec<&str> = r
        .all()
        .into_iter()
        .filter(|o| o.name.contains("cloud-controller-manager") || o.kind == "ConfigMap")
        .map(|o| o.kind.as_str())
        .collect();
    assert_eq!(
        ccm,
        [
            "Secret",
            "ConfigMap",
            "Service",
            "PodDisruptionBudget",
            "Deployment",
            "ServiceMonitor",
            "PrometheusRule",
            "ClusterRoleBinding"
        ]
    );
    assert!(
        !r.all()
            .iter()
            .any(|o| o.name == "cloud-controller-manager-vpa")
    );
}

/// A provider folder declaring a gate of its own: the components read it as
/// a condition and as a value, with the default unless the operator sets it.
#[test]
fn a_folder_declares_its_extension_feature_gates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let folder = scion::providers::builtin("gcp").expect("built-in folder");
    for (path, text) in folder.files {
        let file = dir.path().join(path);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(&file, text).expect("write");
    }
    let profile = folder.file("profile.yaml").expect("profile").to_owned()
        + "extensionFeatureGates:\n  AcmeDebug: {default: true, description: the CCM logs at level 6}\n  AcmeOther: {default: false, description: nothing yet}\n";
    std::fs::write(dir.path().join("profile.yaml"), profile).expect("write");
    let ccm = gcp().replace(
        "            - --v=2\n",
        "            - --v=2\n            - {$when: {extensionFeatureGate: AcmeDebug}, $value: --v=6}\n            - \"--gates=${extensionFeatureGates | featureGates}\"\n",
    );
    std::fs::write(
        dir.path().join("components/cloud-controller-manager.yaml"),
        ccm,
    )
    .expect("write");
    let loaded = scion::profile::Profile::load_dir(dir.path()).expect("loads");
    assert_eq!(
        loaded
            .feature_gates
            .iter()
            .map(|g| (g.name.as_str(), g.default))
            .collect::<Vec<_>>(),
        [("AcmeDebug", true), ("AcmeOther", false)]
    );
    let spec = loaded.control_plane().expect("components").clone();
    let cp = gcp_cp(None);
    let secret = gcp_static_secret();
    let shoot = provider_shoot("gcp", "europe-west1", &["IPv4"], false);
    let images = scion::profile::ImageVector::builtin("gcp");
    let certificates = scion::secrets::Certificates::fixed(SERVER_SECRET, &spec.certificates(), "");
    let with = |set: &[(&str, bool)]| {
        let set: scion::profile::GateSettings =
            set.iter().map(|(n, on)| (n.to_string(), *on)).collect();
        args(
            &render::render(
                &RenderInput {
                    credentials: Some(&secret),
                    feature_gates: &set,
                    ..RenderInput::new(&cp, &shoot, &images, &certificates)
                },
                &spec,
            )
            .expect("renders"),
        )
    };
    let defaults = with(&[]);
    assert!(defaults.contains(&"--v=6".to_owned()), "{defaults:?}");
    assert!(
        defaults.contains(&"--gates=AcmeDebug=true,AcmeOther=false".to_owned()),
        "{defaults:?}"
    );
    let set = with(&[("AcmeDebug", false), ("AcmeOther", true), ("Unknown", true)]);
    assert!(!set.contains(&"--v=6".to_owned()), "{set:?}");
    assert!(
        set.contains(&"--gates=AcmeDebug=false,AcmeOther=true".to_owned()),
        "{set:?}"
    );
}
