//! The pure parts of `scion render`: finding the ControlPlane in a directory and
//! formatting the rendered objects.

mod support;

use scion::cli::render::{Delivery, Output, inputs_from_state, load_render_inputs, render_text};
use scion::render::RenderInput;
use scion::state::Snapshot;
use serde_json::Value;
use support::controller::*;

#[test]
fn finds_the_controlplane_and_its_cluster_among_multi_document_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sub = dir.path().join("nested");
    std::fs::create_dir(&sub).expect("mkdir");
    std::fs::write(
        dir.path().join("other.yaml"),
        "apiVersion: v1\nkind: Secret\nmetadata: {name: x, namespace: shoot--foo--bar}\n---\n\
         apiVersion: extensions.gardener.cloud/v1alpha1\nkind: ControlPlane\n\
         metadata: {name: other, namespace: shoot--foo--bar}\n\
         spec: {type: aws, region: r, secretRef: {name: cloudprovider}}\n",
    )
    .expect("write");
    let cp = serde_json::to_string(&aws_cp(None, aws_subnets())).expect("json");
    let mut cp: Value = serde_json::from_str(&cp).expect("value");
    cp["kind"] = "ControlPlane".into();
    cp["apiVersion"] = "extensions.gardener.cloud/v1alpha1".into();
    std::fs::write(sub.join("cp.json"), cp.to_string()).expect("write");

    std::fs::write(
        dir.path().join("cluster.json"),
        serde_json::json!({
            "apiVersion": "extensions.gardener.cloud/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": NS},
            "spec": {"cloudProfile": {}, "seed": {}, "shoot": {"spec": {
                "kubernetes": {"version": "1.33.4"},
                "region": "eu-west-1",
                "provider": {"type": "aws"}
            }}}
        })
        .to_string(),
    )
    .expect("write");

    let (found, shoot, _) = load_render_inputs(dir.path(), NS, "control-plane").expect("found");
    assert_eq!(found, aws_cp(None, aws_subnets()));
    assert_eq!(shoot.cluster_name, NS);
    let err = load_render_inputs(dir.path(), NS, "missing")
        .expect_err("absent")
        .to_string();
    assert!(
        err.contains("no ControlPlane shoot--foo--bar/missing"),
        "{err}"
    );
}

/// The aws example's inputs as `render` reads them from the state.
fn aws_inputs() -> (
    scion::gardener::ControlPlane,
    std::sync::Arc<scion::gardener::ShootContext>,
    Option<scion::gardener::ObjectData>,
) {
    let mut snapshot = Snapshot::default();
    snapshot.insert_shoot(shoot(&["IPv4"], false));
    snapshot.insert_object(NS, "cloudprovider", aws_static_secret());
    inputs_from_state(&snapshot, aws_cp(None, aws_subnets())).expect("inputs")
}

#[test]
fn yaml_and_json_outputs_carry_the_same_objects() {
    let (cp, shoot, secret) = aws_inputs();
    assert_eq!(secret, Some(aws_static_secret()));
    let spec = builtin_spec("aws").expect("spec");
    let images = scion::profile::ImageVector::builtin(&cp.spec.type_);
    let certificates = scion::secrets::Certificates::fixed(SERVER_SECRET, &spec.certificates(), "");
    let input = RenderInput {
        credentials: secret.as_ref(),
        ..RenderInput::new(&cp, &shoot, &images, &certificates)
    };
    let plain = |output| Delivery {
        managed_resources: false,
        output,
    };
    let yaml = render_text(&input, &spec, &[], plain(Output::Yaml)).expect("yaml");
    let docs: Vec<Value> = serde_saphyr::from_multiple(&yaml).expect("yaml parses");
    let json: Value =
        serde_json::from_str(&render_text(&input, &spec, &[], plain(Output::Json)).expect("json"))
            .expect("json parses");
    assert_eq!(json["kind"], "List");
    assert_eq!(json["items"].as_array().expect("items"), &docs);
    let rendered = scion::render::render(&input, &spec).expect("renders");
    let want: Vec<&Value> = rendered.all().into_iter().map(|o| &o.object).collect();
    assert_eq!(docs.iter().collect::<Vec<_>>(), want);
}

/// `--managed-resources` prints the certificates, the shoot access Secret,
/// then each ManagedResource's Secret and the ManagedResource, exactly the
/// bundles the controller writes.
#[test]
fn managed_resources_output_is_the_controllers_bundles() {
    let (cp, shoot, secret) = aws_inputs();
    let spec = builtin_spec("aws").expect("spec");
    let images = scion::profile::ImageVector::builtin(&cp.spec.type_);
    let certificates = scion::secrets::Certificates::fixed(SERVER_SECRET, &spec.certificates(), "");
    let input = RenderInput {
        credentials: secret.as_ref(),
        ..RenderInput::new(&cp, &shoot, &images, &certificates)
    };
    let cert = serde_json::json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "ca-provider-aws-controlplane-1", "namespace": NS}});
    let delivery = Delivery {
        managed_resources: true,
        output: Output::Json,
    };
    let json: Value = serde_json::from_str(
        &render_text(&input, &spec, std::slice::from_ref(&cert), delivery).expect("json"),
    )
    .expect("json parses");
    let items = json["items"].as_array().expect("items");
    let rendered = scion::render::render(&input, &spec).expect("renders");
    let bundles = scion::controller::controlplane::bundles(NS, &rendered).expect("bundles");
    let mut want = vec![cert];
    want.extend(rendered.access_secrets.iter().map(|o| o.object.clone()));
    for b in bundles {
        want.push(b.secret);
        want.push(b.managed_resource);
    }
    assert_eq!(items, &want);
    let names: Vec<&str> = items
        .iter()
        .filter(|i| i["kind"] == "ManagedResource")
        .map(|i| i["metadata"]["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        [
            "extension-controlplane-configuration-seed",
            "extension-controlplane-seed",
            "extension-controlplane-shoot",
            "extension-controlplane-shoot-crds",
            "extension-controlplane-storageclasses"
        ]
    );
}

#[test]
fn render_errors_name_the_controlplane() {
    let snapshot = Snapshot::default();
    let err = inputs_from_state(&snapshot, aws_cp(None, aws_subnets()))
        .expect_err("no cluster")
        .to_string();
    assert!(err.contains("shoot--foo--bar"), "{err}");
    let mut s = Snapshot::default();
    s.insert_shoot(shoot(&["IPv4"], false));
    let cp = aws_cp(None, serde_json::json!([]));
    let (cp, shoot, _) = inputs_from_state(&s, cp).expect("inputs");
    let spec = builtin_spec("aws").expect("spec");
    let images = scion::profile::ImageVector::builtin(&cp.spec.type_);
    let certificates = scion::secrets::Certificates::fixed(SERVER_SECRET, &spec.certificates(), "");
    let input = RenderInput::new(&cp, &shoot, &images, &certificates);
    let err = format!(
        "{:#}",
        render_text(
            &input,
            &spec,
            &[],
            Delivery {
                managed_resources: false,
                output: Output::Yaml
            }
        )
        .expect_err("no subnet")
    );
    assert!(
        err.contains("rendering ControlPlane shoot--foo--bar/control-plane"),
        "{err}"
    );
}
