//! The ControlPlane type and the CRD manifests.

use serde_json::{Value, json};

#[test]
fn controlplane_type_parses_gardeners_example_and_round_trips() {
    let example = r#"
apiVersion: extensions.gardener.cloud/v1alpha1
kind: ControlPlane
metadata:
  name: control-plane
  namespace: shoot--foo--bar
spec:
  type: aws
  region: eu-west-1
  secretRef:
    name: cloudprovider
    namespace: shoot--foo--bar
  providerConfig:
    apiVersion: aws.provider.extensions.gardener.cloud/v1alpha1
    kind: ControlPlaneConfig
    cloudControllerManager:
      featureGates:
        SomeKubernetesFeature: true
  infrastructureProviderStatus:
    apiVersion: aws.provider.extensions.gardener.cloud/v1alpha1
    kind: InfrastructureStatus
    vpc:
      id: vpc-1234
      subnets:
      - id: subnet-acbd1234
        purpose: public
        zone: eu-west-1a
status:
  lastOperation:
    type: Reconcile
    state: Succeeded
    progress: 100
    description: Successfully reconciled ControlPlane
    lastUpdateTime: "2026-01-01T00:00:00Z"
  observedGeneration: 3
"#;
    let cp: scion::gardener::ControlPlane = serde_saphyr::from_str(example).expect("parses");
    assert_eq!(
        (cp.spec.type_.as_str(), cp.class(), cp.spec.region.as_str()),
        ("aws", "shoot", "eu-west-1")
    );
    assert_eq!(cp.spec.secret_ref.name, "cloudprovider");
    let status = cp.status.as_ref().expect("status");
    assert_eq!(status.observed_generation, Some(3));
    assert_eq!(
        status.last_operation.as_ref().expect("op").state,
        "Succeeded"
    );
    let back: scion::gardener::ControlPlane =
        serde_json::from_value(serde_json::to_value(&cp).expect("json")).expect("again");
    assert_eq!(back, cp);
}

#[test]
fn crds_match_gardeners_shape() {
    let cp: Value = serde_saphyr::from_str(include_str!(
        "../manifests/crds/extensions.gardener.cloud_controlplanes.yaml"
    ))
    .expect("cp crd");
    assert_eq!(cp["spec"]["group"], "extensions.gardener.cloud");
    assert_eq!(cp["spec"]["scope"], "Namespaced");
    assert_eq!(cp["spec"]["names"]["shortNames"], json!(["cp"]));
    let v = &cp["spec"]["versions"][0];
    assert_eq!(v["name"], "v1alpha1");
    assert_eq!(v["subresources"]["status"], json!({}));
    let columns: Vec<&str> = v["additionalPrinterColumns"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| c["name"].as_str().expect("name"))
        .collect();
    assert_eq!(columns, ["Type", "Status", "Age"]);
    let spec = &v["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(spec["required"], json!(["region", "secretRef", "type"]));
    for raw in ["providerConfig", "infrastructureProviderStatus"] {
        assert_eq!(
            spec["properties"][raw]["x-kubernetes-preserve-unknown-fields"], true,
            "{raw}"
        );
    }
    let cluster: Value = serde_saphyr::from_str(include_str!(
        "../manifests/crds/extensions.gardener.cloud_clusters.yaml"
    ))
    .expect("cluster crd");
    assert_eq!(cluster["spec"]["scope"], "Cluster");
    let props = &cluster["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(props["required"], json!(["cloudProfile", "shoot"]));
    for f in ["cloudProfile", "seed", "shoot"] {
        assert_eq!(
            props["properties"][f]["x-kubernetes-preserve-unknown-fields"], true,
            "{f}"
        );
    }
}
