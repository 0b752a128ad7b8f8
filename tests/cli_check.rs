//! `scion check` against a real kube-apiserver holding a seed with three shoots:
//! one whose objects are already what scion writes (matches), one as
//! gardenlet writes them before any webhook (differs), and one of another
//! provider (not audited). Both aws shoots have a ControlPlane: the matching
//! one holds the ManagedResources the controller writes (produced here by the
//! controller's own render and bundling, with the certificate Secrets present
//! in the namespace), the differing one a seed ManagedResource whose CCM
//! Deployment has another flag and no shoot ManagedResource. The audit reads
//! only, with a token of a ServiceAccount bound to the read-only ClusterRole
//! `scion check --print-rbac` prints: the API server's audit log shows only
//! gets, lists and watches, none of them forbidden.
//!
//! A seed-wide audit reads every Cluster and Deployment of the seed, so the
//! two tests that audit a whole seed have a test bed of their own; the 403
//! of an identity without rights comes from the bed shared by this binary.
//! The exit codes' cases without an API server (a kubeconfig that cannot be
//! used, nothing listening) need none.

mod support;

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use scion::cli::check::{Report, Verdict, check_seed};
use scion::controller::controlplane::{self, SEED_MR, SHOOT_CRDS_MR, SHOOT_MR, STORAGECLASSES_MR};
use scion::deploy::Extension;
use scion::deploy::rbac::check_cluster_role;
use scion::managedresources::{self, Bundle, compare::secret_data};
use scion::mutation::{Engine, Outcome, mutate_request};
use scion::profile::{ImageVector, Profile};
use scion::render::{self, RenderInput};
use scion::secrets;
use scion::state::ObjectsDir;
use serde_json::{Value, json};
use support::testbed::apiserver::client_from;
use support::testbed::extension::{bind, printed_check_role, requests};
use support::testbed::{ApiServer, Testbed, gardenlet_object};

const MATCHING: &str = "shoot--dev--aws";
const DIFFERING: &str = "shoot--dev--awsb";
/// A shoot whose ManagedResources are the controller's but whose certificate
/// Secrets are gone: a reconcile would generate new ones.
const NO_CERTS: &str = "shoot--dev--awsc";

fn yaml(path: &str) -> Value {
    let text = std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    serde_saphyr::from_str(&text).unwrap()
}

/// A Secret manifest as the API server returns it (`data`, base64).
fn live_secret(mut secret: Value, namespace: &str) -> Value {
    let string_data = secret["stringData"].take();
    if let Some(map) = string_data.as_object() {
        let data: serde_json::Map<String, Value> = map
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    Value::String(STANDARD.encode(v.as_str().unwrap())),
                )
            })
            .collect();
        secret["data"] = Value::Object(data);
    }
    secret.as_object_mut().unwrap().remove("stringData");
    secret["metadata"]["namespace"] = json!(namespace);
    secret
}

fn renamed(mut object: Value, namespace: &str) -> Value {
    if object["kind"] == "Cluster" {
        object["metadata"]["name"] = json!(namespace);
    } else {
        object["metadata"]["namespace"] = json!(namespace);
    }
    object
}

/// scion's own answer for `object` in the example shoot: what a seed where
/// scion already runs would hold.
async fn mutated(engine: &Engine, object: &Value) -> Value {
    let (state, _) =
        ObjectsDir::load(format!("{}/examples/objects", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let request = scion::cli::mutate::request_for_object(object.clone()).unwrap();
    match mutate_request(engine, &state, &request).await.unwrap() {
        Outcome::Mutated(m) => m.object(),
        Outcome::Skipped(_) => object.clone(),
    }
}

/// Store `object` on the seed as gardenlet (or the controller) wrote it.
async fn store(api: &ApiServer, object: &Value) {
    api.apply(object, "gardenlet")
        .await
        .unwrap_or_else(|e| panic!("{} {}: {e}", object["kind"], object["metadata"]["name"]));
}

/// A client of `api` acting as a ServiceAccount bound to the ClusterRole
/// `scion check --print-rbac` prints, and its user name.
async fn auditor(api: &ApiServer) -> (kube::Client, String) {
    let role = printed_check_role("aws").await;
    let (kubeconfig, user) = bind(api, &role, "auditor").await;
    let client = client_from(&kubeconfig).await;
    // the authorizer sees the new binding
    let clusters: kube::Api<kube::api::DynamicObject> = kube::Api::all_with(
        client.clone(),
        &kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("extensions.gardener.cloud", "v1alpha1", "Cluster"),
            "clusters",
        ),
    );
    for _ in 0..100 {
        if clusters.list(&Default::default()).await.is_ok() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    (client, user)
}

/// The certificate Secrets the secrets manager keeps in `namespace`, as the
/// API server lists them, and the serving certificate's Secret name.
fn certificates(namespace: &str) -> (Vec<Value>, secrets::Certificates) {
    let profile = Profile::builtin("aws").unwrap();
    let plan = secrets::plan(&secrets::Request {
        provider: "aws",
        namespace,
        now: k8s_openapi::jiff::Timestamp::now().as_second(),
        rotation: secrets::CaRotation::default(),
        existing: &[],
        certificates: &profile.control_plane().unwrap().certificates(),
    })
    .unwrap();
    (plan.create, plan.certificates)
}

/// The ManagedResources the controller writes for the example ControlPlane in
/// `namespace`: its own render and bundling over the objects the fake serves.
fn controller_bundles(
    namespace: &str,
    served: &[Value],
    certificates: &secrets::Certificates,
) -> Vec<Bundle> {
    let dir = tempfile::tempdir().unwrap();
    for (i, object) in served.iter().enumerate() {
        std::fs::write(
            dir.path().join(format!("{i}.json")),
            serde_json::to_vec(object).unwrap(),
        )
        .unwrap();
    }
    let (cp, shoot, credentials) =
        scion::cli::render::load_render_inputs(dir.path(), namespace, "control-plane").unwrap();
    let profile = Profile::builtin("aws").unwrap();
    let images = ImageVector::builtin("aws").with_env_overwrite().unwrap();
    let rendered = render::render(
        &RenderInput {
            credentials: credentials.as_ref(),
            ..RenderInput::new(&cp, &shoot, &images, certificates)
        },
        profile.control_plane().unwrap(),
    )
    .unwrap();
    controlplane::bundles(namespace, &rendered).unwrap()
}

/// `bundle` with one more flag on the CCM container, and that flag's index.
fn with_changed_flag(bundle: &Bundle) -> (Bundle, usize) {
    let data = secret_data(&bundle.secret).unwrap();
    let (key, _) = data.iter().next().unwrap();
    let mut objects = managedresources::decode(&data).unwrap();
    let deployment = objects
        .iter_mut()
        .find(|o| o["kind"] == "Deployment" && o["metadata"]["name"] == render::CCM_NAME)
        .unwrap();
    let command = deployment["spec"]["template"]["spec"]["containers"][0]["command"]
        .as_array_mut()
        .unwrap();
    let index = command.len();
    command.push(json!("--v=6"));
    let changed =
        managedresources::bundle(&bundle.namespace, &bundle.name, bundle.class, key, &objects)
            .unwrap();
    (changed, index)
}

async fn store_bundle(api: &ApiServer, bundle: &Bundle) {
    store(api, &bundle.secret).await;
    store(api, &bundle.managed_resource).await;
}

/// The findings of `ns` of `kinds`: (kind, name, result).
fn rows<'a>(report: &'a Report, ns: &str, kinds: &[&str]) -> Vec<(&'a str, &'a str, Verdict)> {
    report
        .findings
        .iter()
        .filter(|f| f.namespace == ns && kinds.contains(&f.kind.as_str()))
        .map(|f| (f.kind.as_str(), f.name.as_str(), f.result.clone()))
        .collect()
}

#[tokio::test]
async fn reports_matching_and_differing_shoots_and_only_reads() {
    let bed = Testbed::start().await;
    let api = &bed.seed;
    api.install_crds().await;
    let engine = Engine::new(Profile::builtin("aws").unwrap());
    let mut controlplane = yaml("examples/objects/aws/controlplane.yaml");
    // a field scion does not honour, for the warning row (issue 25 item 2);
    // everything the example sets is honoured
    controlplane["spec"]["providerConfig"]["ipamController"] = json!({"enabled": true});
    let cluster = yaml("examples/objects/aws/cluster.yaml");
    let gcp_cluster = yaml("examples/objects/gcp/cluster.yaml");
    let secret = yaml("examples/objects/aws/secret-cloudprovider.yaml");
    let config = yaml("examples/objects/aws/configmap-cloud-provider-config.yaml");
    let review = "examples/reviews/aws-kube-controller-manager.json";
    let kcm = gardenlet_object(review, MATCHING);
    let kcm_done = mutated(&engine, &kcm).await;
    assert_ne!(kcm, kcm_done, "the example is one scion changes");
    let secret_done = mutated(&engine, &live_secret(secret.clone(), MATCHING)).await;

    let mut flag_index = None;
    for c in [
        cluster.clone(),
        renamed(cluster.clone(), DIFFERING),
        renamed(cluster.clone(), NO_CERTS),
        gcp_cluster.clone(),
    ] {
        store(api, &c).await;
    }
    for (ns, kcm, secret) in [
        (MATCHING, kcm_done.clone(), secret_done.clone()),
        (
            DIFFERING,
            gardenlet_object(review, DIFFERING),
            live_secret(secret.clone(), DIFFERING),
        ),
        (
            NO_CERTS,
            gardenlet_object(review, NO_CERTS),
            live_secret(secret.clone(), NO_CERTS),
        ),
    ] {
        api.namespace(ns, &[("shoot.gardener.cloud/provider", "aws")])
            .await;
        // the ControlPlane, the certificates and the ManagedResources
        let mut cp = renamed(controlplane.clone(), ns);
        cp["spec"]["secretRef"]["namespace"] = json!(ns);
        let (certs, issued) = certificates(ns);
        let bundles = controller_bundles(
            ns,
            &[renamed(cluster.clone(), ns), cp.clone(), secret.clone()],
            &issued,
        );
        store(api, &cp).await;
        if ns != NO_CERTS {
            for cert in &certs {
                store(api, cert).await;
            }
        }
        for bundle in &bundles {
            match (ns, bundle.name.as_str()) {
                (DIFFERING, SEED_MR) => {
                    let (changed, index) = with_changed_flag(bundle);
                    flag_index = Some(index);
                    store_bundle(api, &changed).await;
                }
                (DIFFERING, SHOOT_MR) => {} // missing
                _ => store_bundle(api, bundle).await,
            }
        }
        store(api, &kcm).await;
        store(api, &secret).await;
        store(api, &renamed(config.clone(), ns)).await;
    }
    // The Go extension, its healthcheck controller disabled: no warning.
    api.namespace("extension-provider-aws-go", &[]).await;
    store(
        api,
        &go_extension(
            "extension-provider-aws-go",
            &["--disable-controllers=controlplane,healthcheck"],
        ),
    )
    .await;
    let (client, user) = auditor(api).await;
    let since = support::testbed::extension::mark(api);

    let report = check_seed(client, &engine, None).await.unwrap();
    // no two writers of ControlPlaneHealthy; the only warnings are the
    // example ControlPlane's setting scion does not honour (issue 25 item 2)
    let warnings: Vec<(&str, &str)> = report
        .findings
        .iter()
        .filter(|f| f.result == Verdict::Warning)
        .map(|f| (f.kind.as_str(), f.message.as_deref().unwrap_or_default()))
        .collect();
    assert!(!warnings.is_empty(), "{report:#?}");
    assert!(
        warnings
            .iter()
            .all(|(kind, message)| *kind == "ControlPlane"
                && message.starts_with(
                    "ControlPlaneConfig ipamController.enabled = true is not honoured"
                )),
        "{report:#?}"
    );
    assert_eq!(
        report.exit_code(),
        scion::cli::check::EXIT_DIFFERS,
        "differs, and every object was read"
    );
    let webhooks = ["Deployment", "Secret", "VerticalPodAutoscaler", "Etcd"];
    let by = |ns: &str| rows(&report, ns, &webhooks);
    assert_eq!(
        by(MATCHING),
        [
            ("Deployment", "kube-controller-manager", Verdict::Matches),
            ("Secret", "cloudprovider", Verdict::Matches),
        ],
        "{report:#?}"
    );
    let differing = by(DIFFERING);
    assert!(
        differing.contains(&("Deployment", "kube-controller-manager", Verdict::Differs)),
        "{report:#?}"
    );
    // the changes are the webhook's patch: the KCM gets --cloud-provider=external
    let kcm_finding = report
        .findings
        .iter()
        .find(|f| f.namespace == DIFFERING && f.kind == "Deployment")
        .unwrap();
    assert!(
        kcm_finding
            .changes
            .iter()
            .any(|c| c.contains("/spec/template/spec/containers/0/command")),
        "{kcm_finding:?}"
    );
    // the ManagedResources: all three match in the matching shoot ...
    let mr = ["ManagedResource"];
    assert_eq!(
        rows(&report, MATCHING, &mr),
        [
            ("ManagedResource", controlplane::CONFIG_MR, Verdict::Matches),
            ("ManagedResource", SEED_MR, Verdict::Matches),
            ("ManagedResource", SHOOT_MR, Verdict::Matches),
            ("ManagedResource", SHOOT_CRDS_MR, Verdict::Matches),
            ("ManagedResource", STORAGECLASSES_MR, Verdict::Matches),
        ],
        "{report:#?}"
    );
    // ... the changed flag and the missing one are found in the other
    assert_eq!(
        rows(&report, DIFFERING, &mr),
        [
            ("ManagedResource", controlplane::CONFIG_MR, Verdict::Matches),
            ("ManagedResource", SEED_MR, Verdict::Differs),
            ("ManagedResource", SHOOT_MR, Verdict::Missing),
            ("ManagedResource", SHOOT_CRDS_MR, Verdict::Matches),
            ("ManagedResource", STORAGECLASSES_MR, Verdict::Matches),
        ],
        "{report:#?}"
    );
    let seed_mr = report
        .findings
        .iter()
        .find(|f| f.namespace == DIFFERING && f.name == SEED_MR)
        .unwrap();
    assert_eq!(
        seed_mr.changes,
        [format!(
            "changed Deployment {DIFFERING}/{} (/spec/template/spec/containers/0/command/{})",
            render::CCM_NAME,
            flag_index.unwrap()
        )],
        "{seed_mr:?}"
    );
    // the certificates present were reused: no certificate would be generated
    for ns in [MATCHING, DIFFERING] {
        assert!(
            !report
                .findings
                .iter()
                .any(|f| f.namespace == ns && f.result == Verdict::Missing && f.kind == "Secret"),
            "{report:#?}"
        );
    }
    // without certificate Secrets the four are generated; the CCM
    // Deployment mounts the new serving certificate, and the shoot's ALB
    // webhook configurations carry the new CA's bundle
    assert_eq!(
        rows(&report, NO_CERTS, &["Secret", "ManagedResource"])[1..],
        [
            ("Secret", "ca-provider-aws-controlplane", Verdict::Missing),
            (
                "Secret",
                "ca-provider-aws-controlplane-bundle",
                Verdict::Missing
            ),
            ("Secret", secrets::SERVER_CONFIG, Verdict::Missing),
            (
                "Secret",
                "aws-load-balancer-controller-webhook-service",
                Verdict::Missing
            ),
            ("ManagedResource", controlplane::CONFIG_MR, Verdict::Matches),
            ("ManagedResource", SEED_MR, Verdict::Differs),
            ("ManagedResource", SHOOT_MR, Verdict::Differs),
            ("ManagedResource", SHOOT_CRDS_MR, Verdict::Matches),
            ("ManagedResource", STORAGECLASSES_MR, Verdict::Matches),
        ],
        "{report:#?}"
    );
    let seed_mr = report
        .findings
        .iter()
        .find(|f| f.namespace == NO_CERTS && f.name == SEED_MR)
        .unwrap();
    assert!(
        seed_mr.changes[0].contains("/spec/template/spec/volumes/"),
        "{seed_mr:?}"
    );
    // the gcp shoot is not aws's business (its seed is not aws either)
    assert!(by("shoot--dev--gcp").is_empty(), "{report:#?}");
    assert!(report.problems() >= 1);
    let table = report.table();
    assert!(table.starts_with("NAMESPACE"), "{table}");
    assert!(table.contains("differs"), "{table}");
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["findings"][0]["result"], "matches");

    // read-only, and within the documented ClusterRole
    let role = check_cluster_role(&Extension::new("aws", "default").unwrap());
    let rules = role.rules.unwrap();
    for rule in &rules {
        for verb in &rule.verbs {
            assert!(["get", "list", "watch"].contains(&verb.as_str()), "{verb}");
        }
    }
    let seen = requests(api, &user, since);
    assert!(seen.len() > 5, "{seen:?}");
    for request in seen {
        assert!(
            ["get", "list", "watch"].contains(&request.verb.as_str()) && request.code != 403,
            "scion check with its role: {request}"
        );
    }
}

/// Issue 21: check reported "differs" on the machine-controller-manager
/// Deployment scion's own webhook wrote, because the API server had stored
/// the sidecar with its defaults (`terminationMessagePath`, …) and scion's
/// answer to the stored object drops them again. Compared as stored, that is
/// no change; a real one still is.
#[tokio::test]
async fn what_the_api_server_defaults_is_no_difference() {
    let engine = Engine::new(Profile::builtin("aws").unwrap());
    let sent = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "machine-controller-manager", "namespace": MATCHING,
                     "labels": {"provider.extensions.gardener.cloud/mutated-by-controlplane-webhook": "true"}},
        "spec": {"selector": {"matchLabels": {"role": "machine-controller-manager"}},
                 "template": {"metadata": {"labels": {"role": "machine-controller-manager"}},
                              "spec": {"containers": [{"name": "machine-controller-manager",
                                                       "image": "registry.example/mcm:v0.62.1"}]}}},
    });
    let written = mutated(&engine, &sent).await;
    let containers = written["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert_eq!(containers.len(), 2, "the sidecar: {written}");
    assert!(containers[1].get("terminationMessagePath").is_none());
    // what the API server stores
    let mut stored = written.clone();
    scion::gardener::defaults::apply(&mut stored);
    stored["metadata"]["resourceVersion"] = json!("42");
    stored["metadata"]["uid"] = json!("0b0c");
    let answered = mutated(&engine, &stored).await;
    assert_ne!(
        answered, stored,
        "scion's raw answer to the stored object drops the defaults (the wolf)"
    );
    assert_eq!(
        scion::cli::check::stored_changes(&stored, &answered),
        Vec::<String>::new()
    );
    // a real difference: the stored sidecar lacks a flag scion sets
    let mut drifted = stored.clone();
    drifted["spec"]["template"]["spec"]["containers"][1]["args"]
        .as_array_mut()
        .unwrap()
        .pop();
    let answered = mutated(&engine, &drifted).await;
    let changes = scion::cli::check::stored_changes(&drifted, &answered);
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert!(
        changes[0].starts_with("add /spec/template/spec/containers/1/args/"),
        "{changes:?}"
    );
}

/// The Go extension's Deployment as its chart renders it, with `flags`.
fn go_extension(namespace: &str, flags: &[&str]) -> Value {
    let mut command = vec![
        "/gardener-extension-provider-aws".to_string(),
        "--config-file=/etc/gardener-extension-provider-aws/config/config.yaml".into(),
    ];
    command.extend(flags.iter().map(|f| f.to_string()));
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "gardener-extension-provider-aws", "namespace": namespace,
                     "labels": {"app.kubernetes.io/name": "gardener-extension-provider-aws"}},
        "spec": {"replicas": 2,
                 "selector": {"matchLabels": {"app.kubernetes.io/name": "gardener-extension-provider-aws"}},
                 "template": {"metadata": {"labels": {"app.kubernetes.io/name": "gardener-extension-provider-aws"}},
                              "spec": {"containers": [
            {"name": "gardener-extension-provider-aws", "image": "europe-docker.pkg.dev/gardener-project/releases/gardener/extensions/provider-aws:v1.60.0",
             "command": command}
        ]}}},
    })
}

/// Issue 25 item 3: the Go extension's healthcheck controller goes on writing
/// `ControlPlaneHealthy` unless it is disabled; check tells when two would
/// write it, from the Deployment's flags and from the ControlPlane's
/// `managedFields`.
#[test]
fn two_writers_of_control_plane_healthy_are_warned_about() {
    use scion::cli::check::{go_runs_healthcheck, second_condition_writer};
    let cases: [(&[&str], Option<bool>); 6] = [
        (&["--disable-controllers="], Some(true)),
        (&["--disable-controllers=controlplane"], Some(true)),
        (
            &["--disable-controllers=controlplane,healthcheck"],
            Some(false),
        ),
        (&["--disable-controllers", "healthcheck"], Some(false)),
        (
            &[
                "--controllers=backupbucket,backupentry,dnsrecord",
                "--disable-webhooks=\"*\"",
            ],
            Some(false),
        ),
        (&["--controllers=controlplane,healthcheck"], Some(true)),
    ];
    for (flags, want) in cases {
        assert_eq!(
            go_runs_healthcheck(&go_extension("extension-x", flags), "aws"),
            want,
            "{flags:?}"
        );
    }
    let mut scaled_down = go_extension("extension-x", &[]);
    scaled_down["spec"]["replicas"] = json!(0);
    assert_eq!(go_runs_healthcheck(&scaled_down, "aws"), Some(false));
    // scion's own Deployment (same name and label) is not the Go extension
    let mut scion = go_extension("extension-x", &[]);
    scion["spec"]["template"]["spec"]["containers"][0] =
        json!({"name": "scion", "image": "scion:0.1.0", "args": ["serve", "--provider=aws"]});
    assert_eq!(go_runs_healthcheck(&scion, "aws"), None);
    assert_eq!(go_runs_healthcheck(&go_extension("x", &[]), "gcp"), None);

    // managedFields: scion owns lastOperation, someone else the conditions
    let cp = |conditions_by: &str| -> scion::gardener::ControlPlane {
        serde_json::from_value(json!({
            "apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "ControlPlane",
            "metadata": {"name": "cp", "namespace": "ns", "managedFields": [
                {"manager": "scion", "operation": "Update", "subresource": "status", "time": "2026-11-20T10:00:00Z",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:lastOperation": {".": {}, "f:state": {}}, "f:observedGeneration": {}}}},
                {"manager": conditions_by, "operation": "Update", "subresource": "status", "time": "2026-11-20T10:05:00Z",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:conditions": {}}}},
            ]},
            "spec": {"type": "aws", "region": "eu-west-1", "secretRef": {"name": "cloudprovider", "namespace": "ns"}},
        }))
        .unwrap()
    };
    assert_eq!(
        second_condition_writer(&cp("gardener-extension-provider-aws")).as_deref(),
        Some("gardener-extension-provider-aws")
    );
    assert_eq!(second_condition_writer(&cp("scion")), None);
    // before the switch-over the Go extension writes both: no warning
    let mut go_owned = cp("gardener-extension-provider-aws");
    go_owned.metadata.managed_fields.as_mut().unwrap()[0].manager =
        Some("gardener-extension-provider-aws".into());
    assert_eq!(second_condition_writer(&go_owned), None);
}

/// scion's Deployment as its chart renders it, with `flags` after `serve`.
fn scion_extension(namespace: &str, flags: &[&str]) -> Value {
    let mut args = vec!["serve".to_string(), "--provider=aws".into()];
    args.extend(flags.iter().map(|f| f.to_string()));
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "gardener-extension-provider-aws", "namespace": namespace,
                     "labels": {"app.kubernetes.io/name": "gardener-extension-provider-aws", "app.kubernetes.io/part-of": "scion"}},
        "spec": {"replicas": 2,
                 "selector": {"matchLabels": {"app.kubernetes.io/name": "gardener-extension-provider-aws"}},
                 "template": {"metadata": {"labels": {"app.kubernetes.io/name": "gardener-extension-provider-aws"}},
                              "spec": {"containers": [
            {"name": "scion", "image": "scion:0.1.0", "args": args}
        ]}}},
    })
}

/// The audit reports a Go extension that runs its healthcheck while scion
/// runs its own as a warning row (exit 1); before scion's controllers run
/// (webhooks-only stage: healthcheck disabled) the Go extension is the one
/// writer and nothing is reported.
#[tokio::test]
async fn a_go_extension_running_its_healthcheck_beside_scions_is_a_warning_row() {
    use scion::cli::check::scion_runs_healthcheck;
    assert_eq!(
        scion_runs_healthcheck(&scion_extension("e", &[]), "aws"),
        Some(true)
    );
    assert_eq!(
        scion_runs_healthcheck(
            &scion_extension("e", &["--disable-controllers=controlplane,healthcheck"]),
            "aws"
        ),
        Some(false)
    );
    assert_eq!(
        scion_runs_healthcheck(&scion_extension("e", &["--controllers=none"]), "aws"),
        Some(false)
    );
    assert_eq!(
        scion_runs_healthcheck(&scion_extension("e", &[]), "gcp"),
        None
    );
    assert_eq!(scion_runs_healthcheck(&go_extension("e", &[]), "aws"), None);

    // a seed of its own: the audit lists every Deployment of the seed
    let bed = Testbed::start().await;
    let api = &bed.seed;
    api.install_crds().await;
    let engine = Engine::new(Profile::builtin("aws").unwrap());
    for ns in ["extension-provider-aws-go", "extension-scion-provider-aws"] {
        api.namespace(ns, &[]).await;
    }
    store(
        api,
        &go_extension(
            "extension-provider-aws-go",
            &["--disable-controllers=controlplane"],
        ),
    )
    .await;
    let (client, _) = auditor(api).await;
    let audit = |scion_flags: &'static [&'static str]| {
        let (engine, client) = (engine.clone(), client.clone());
        async move {
            store(
                api,
                &scion_extension("extension-scion-provider-aws", scion_flags),
            )
            .await;
            check_seed(client, &engine, None).await.unwrap()
        }
    };
    let report = audit(&[]).await;
    assert_eq!(
        rows(&report, "extension-provider-aws-go", &["Deployment"]),
        [(
            "Deployment",
            "gardener-extension-provider-aws",
            Verdict::Warning
        )],
        "{report:#?}"
    );
    assert!(
        report.findings[0]
            .message
            .as_deref()
            .unwrap()
            .contains("healthcheck")
    );
    assert_eq!(report.exit_code(), scion::cli::check::EXIT_DIFFERS);
    assert!(report.table().contains("warning"));
    let staged = audit(&["--disable-controllers=controlplane,healthcheck"]).await;
    assert!(staged.findings.is_empty(), "{staged:#?}");
    assert_eq!(staged.exit_code(), scion::cli::check::EXIT_MATCHES);
}

/// `scion check` as a process: exit codes and what stderr says.
fn scion_check(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_scion"))
        .arg("check")
        .args(["--provider", "aws"])
        .args(args)
        .env_remove("KUBECONFIG")
        .env("HOME", "/nonexistent")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn kubeconfig(dir: &std::path::Path, server: &str) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: seed\nclusters:\n- name: seed\n  cluster:\n    server: {server}\ncontexts:\n- name: seed\n  context:\n    cluster: seed\n    user: u\nusers:\n- name: u\n  user:\n    token: t\n"
        ),
    )
    .unwrap();
    path
}

#[test]
fn a_kubeconfig_or_context_that_cannot_be_used_is_exit_2() {
    let (code, _, err) = scion_check(&["--kubeconfig", "/nonexistent/kubeconfig"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("could not audit: cannot read the kubeconfig /nonexistent/kubeconfig"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = kubeconfig(dir.path(), "http://127.0.0.1:9");
    let (code, _, err) =
        scion_check(&["--kubeconfig", path.to_str().unwrap(), "--context", "other"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("could not audit") && err.contains("other"),
        "{err}"
    );
}

/// Nothing listens: the Cluster watch's retries are bounded, and check says
/// why it stopped. Progress goes to stderr.
#[test]
fn an_unreachable_api_server_stops_the_audit_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let path = kubeconfig(dir.path(), &format!("http://127.0.0.1:{port}"));
    let started = std::time::Instant::now();
    let (code, out, err) = scion_check(&["--kubeconfig", path.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("listing the Clusters"), "progress: {err}");
    assert!(
        err.contains(
            "could not audit: the API server is unreachable (5 failed connections in a row)"
        ),
        "{err}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(50),
        "{:?}",
        started.elapsed()
    );
}

/// The guard over the real API server: a 403 stops the audit at once with
/// the reason; per-object read errors are "could not audit" too; a complete
/// audit is 1 when something differs and 0 when all matches.
#[tokio::test]
async fn exit_codes_tell_differs_from_could_not_audit() {
    use scion::cli::check::{
        EXIT_DIFFERS, EXIT_MATCHES, EXIT_NOT_AUDITED, Finding, Guard, GuardLayer, Watch,
        check_seed_with,
    };
    let engine = Engine::new(Profile::builtin("aws").unwrap());

    // 403 on the Cluster list (an identity RBAC grants nothing, on the
    // shared test bed): stopped, with the reason, well before the 60 s
    // sync bound.
    let guard = Arc::new(Guard::default());
    let user = format!("nobody-{}", support::testbed::shared::unique());
    let config = support::testbed::shared::config_as(Some(&user), &[]).await;
    let client = kube::client::ClientBuilder::try_from(config)
        .unwrap()
        .with_layer(&GuardLayer(guard.clone()))
        .build();
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = lines.clone();
    let watch = Watch {
        progress: Box::new(move |l| seen.lock().unwrap().push(l.to_string())),
        guard: Some(guard),
    };
    let err = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        check_seed_with(client, &engine, &Default::default(), None, &watch),
    )
    .await
    .expect("stops at once")
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("403 Forbidden to GET /apis/extensions.gardener.cloud/v1alpha1/clusters")
            && err.contains("scion check --print-rbac"),
        "{err}"
    );
    assert_eq!(lines.lock().unwrap().as_slice(), ["listing the Clusters"]);

    // Reports: the verdicts decide.
    let finding = |result| Finding {
        namespace: "ns".into(),
        kind: "Deployment".into(),
        name: "d".into(),
        result,
        changes: vec![],
        message: None,
    };
    let report = |results: Vec<Verdict>, stopped: Option<&str>| Report {
        provider: "aws".into(),
        findings: results.into_iter().map(finding).collect(),
        stopped: stopped.map(String::from),
    };
    assert_eq!(
        report(vec![Verdict::Matches], None).exit_code(),
        EXIT_MATCHES
    );
    for v in [Verdict::Differs, Verdict::Denied, Verdict::Missing] {
        assert_eq!(
            report(vec![Verdict::Matches, v], None).exit_code(),
            EXIT_DIFFERS
        );
    }
    assert_eq!(
        report(vec![Verdict::Differs, Verdict::Error], None).exit_code(),
        EXIT_NOT_AUDITED
    );
    let stopped = report(vec![Verdict::Matches], Some("forbidden"));
    assert_eq!(stopped.exit_code(), EXIT_NOT_AUDITED);
    assert!(stopped.table().contains("audit stopped early: forbidden"));
}
