//! The schema additions of the `ccm:` section: conditional arguments, image
//! ranges, credentials items, `credentialsFile` env, checksum algorithms,
//! workload-identity detection, probe port and hostPath type.

mod support;

use scion::ccm::{self, RenderInput};
use scion::checksum;
use serde_json::Value;
use support::controller::providers::*;
use support::controller::*;

const GCP: &str = include_str!("../src/profile/builtin/gcp.yaml");
const ALICLOUD: &str = include_str!("../src/profile/builtin/alicloud.yaml");
const AZURE: &str = include_str!("../src/profile/builtin/azure.yaml");

#[test]
fn errors_in_the_new_primitives_name_the_problem() {
    let cases = [
        (GCP.replace("when: {dualStack: true}", "when: {dualstack: true}"), "unknown \"dualstack\""),
        (
            GCP.replace("when: {any: [{overlayEnabled: true}, {dualStack: true}]}", "when: {oneOf: [{overlayEnabled: true}]}"),
            "unknown \"oneOf\"",
        ),
        (
            GCP.replace("    else: --cidr-allocator-type=RangeAllocator\n", "    otherwise: x\n"),
            "otherwise",
        ),
        (
            GCP.replace("    workloadIdentityItems:\n    - key: credentialsConfig\n      path: credentialsConfig\n    - key: token\n      path: token\n", ""),
            "ccm.credentialsMount.workloadIdentityKey/workloadIdentityItems",
        ),
        (
            GCP.replace("    path: /srv/cloudprovider\n", ""),
            "ccm.credentialsMount.path: keys need a mount path",
        ),
        (GCP.replace("credentialsFile: credentialsConfig", "credentialsPath: x"), "credentialsPath"),
        (
            GCP.replace("workloadIdentity: externalAccountCredentials", "workloadIdentity: always"),
            "always",
        ),
        (
            ALICLOUD.replace("${data:cloudprovider.conf}", "${value}"),
            "ccm.cloudConfig.checksum.manifest: unknown placeholder",
        ),
        (
            ALICLOUD.replace("      algorithm: manifestSha256\n", ""),
            "only used by algorithm manifestSha256",
        ),
        (ALICLOUD.replace("    port: 10258\n", "    port: 70000\n"), "ccm.livenessProbe.port"),
        (AZURE.replace("type: DirectoryOrCreate", "kind: DirectoryOrCreate"), "kind"),
    ];
    for (yaml, needle) in cases {
        let err = ccm_spec(&yaml).expect_err(needle).to_string();
        assert!(err.contains(needle), "{needle}: {err}");
    }
    let gcp = ccm_spec(&GCP.replace("  credentialsMount:", "  credentialsMountX:"));
    assert!(gcp.is_err());
}

/// The aws section written with the old single-key mount and the new items
/// form render the same objects: the addition is backwards compatible.
#[test]
fn credentials_items_generalise_the_single_key() {
    let old = builtin_spec("aws").expect("aws");
    let new = ccm_spec(&include_str!("../src/profile/builtin/aws.yaml").replace(
        "    key: credentialsFile\n",
        "    items:\n    - key: credentialsFile\n      path: credentialsFile\n",
    ))
    .expect("items form");
    let cp = aws_cp(None, aws_subnets());
    let shoot = shoot(&["IPv4"], false);
    let secret = aws_static_secret();
    let input = RenderInput {
        cp: &cp,
        shoot: &shoot,
        credentials: Some(&secret),
        kube_apiserver_replicas: None,
        image_override: None,
        images: &scion::profile::ImageVector::builtin(&cp.spec.type_),
        server_secret: Some(SERVER_SECRET),
    };
    assert_eq!(
        ccm::render(&input, &old).expect("old"),
        ccm::render(&input, &new).expect("new")
    );
}

fn config_annotation(spec: &scion::profile::CcmSpec) -> (String, Value) {
    let cp = gcp_cp(None);
    let shoot = provider_shoot("gcp", "europe-west1", &["IPv4"], false);
    let secret = gcp_static_secret();
    let r = ccm::render(
        &RenderInput {
            cp: &cp,
            shoot: &shoot,
            credentials: Some(&secret),
            kube_apiserver_replicas: None,
            image_override: None,
            images: &scion::profile::ImageVector::builtin(&cp.spec.type_),
            server_secret: Some(SERVER_SECRET),
        },
        spec,
    )
    .expect("renders");
    let dep = r
        .all()
        .into_iter()
        .find(|o| o.kind == "Deployment")
        .expect("deployment");
    let cm = r
        .all()
        .into_iter()
        .find(|o| o.kind == "ConfigMap")
        .expect("configmap");
    (
        dep.object["spec"]["template"]["metadata"]["annotations"]
            ["checksum/configmap-cloud-provider-config"]
            .as_str()
            .expect("annotation")
            .to_string(),
        cm.object["data"].clone(),
    )
}

#[test]
fn each_checksum_algorithm_hashes_the_rendered_config() {
    let json_spec = builtin_spec("gcp").expect("gcp");
    let (json_sum, data) = config_annotation(&json_spec);
    let data: std::collections::BTreeMap<String, String> =
        serde_json::from_value(data).expect("string data");
    assert_eq!(json_sum, checksum::configmap_checksum(Some(&data)));

    let per_key = ccm_spec(&GCP.replace(
        "    format: gcp-ini\n",
        "    format: gcp-ini\n    checksum:\n      algorithm: perKey\n",
    ))
    .expect("perKey");
    let (per_key_sum, _) = config_annotation(&per_key);
    assert_eq!(per_key_sum, checksum::per_key_checksum(&data));
    assert_ne!(per_key_sum, json_sum);

    let manifest = ccm_spec(&GCP.replace(
        "    format: gcp-ini\n",
        "    format: gcp-ini\n    checksum:\n      algorithm: manifestSha256\n      manifest: \"ns=${namespace} name=${name} conf=${data:cloudprovider.conf} missing=${data:nope}\"\n",
    ))
    .expect("manifest");
    let (manifest_sum, _) = config_annotation(&manifest);
    let text = format!(
        "ns={NS} name=cloud-provider-config conf={} missing=",
        data["cloudprovider.conf"]
    );
    assert_eq!(manifest_sum, checksum::sha256_hex(text.as_bytes()));
}

#[test]
fn conditions_compose() {
    let yaml = GCP.replace(
        "  - --v=2\n",
        "  - --v=2\n  - when: {dualStack: false, ipv6: false, overlayEnabled: true, workloadIdentity: false, seedInShootRegion: true}\n    then: --all-true\n  - when: {any: [{dualStack: true}, {not: {ipv6: false}}]}\n    then: --never\n",
    );
    let spec = ccm_spec(&yaml).expect("conditions parse");
    let cp = gcp_cp(None);
    let secret = gcp_static_secret();
    let mut shoot = provider_shoot("gcp", "europe-west1", &["IPv4"], false);
    let args = |shoot: &scion::gardener::ShootContext| -> Vec<String> {
        let r = ccm::render(
            &RenderInput {
                cp: &cp,
                shoot,
                credentials: Some(&secret),
                kube_apiserver_replicas: None,
                image_override: None,
                images: &scion::profile::ImageVector::builtin(&cp.spec.type_),
                server_secret: Some(SERVER_SECRET),
            },
            &spec,
        )
        .expect("renders");
        let dep = r
            .all()
            .into_iter()
            .find(|o| o.kind == "Deployment")
            .expect("d");
        serde_json::from_value(
            dep.object["spec"]["template"]["spec"]["containers"][0]["args"].clone(),
        )
        .expect("args")
    };
    let a = args(&shoot);
    assert!(
        a.contains(&"--all-true".into()) && !a.contains(&"--never".into()),
        "{a:?}"
    );
    shoot.seed.spec.provider.region = Some("us-east1".into());
    assert!(!args(&shoot).contains(&"--all-true".into()));
}
