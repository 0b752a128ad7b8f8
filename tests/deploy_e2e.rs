//! The installation end to end on a real kube-apiserver (the test bed):
//! `helm install` of `charts/scion` with the values gardenlet injects (every
//! object accepted), scion run as the chart's Deployment says — as a process
//! on loopback, authenticated with a token of the chart's ServiceAccount
//! (TokenRequest), so the real RBAC authorizer enforces exactly the chart's
//! roles — doing its work (certificates, self-registration in url mode,
//! leader election, heartbeat, webhooks, a ControlPlane reconciled and
//! deleted); no request of scion is ever forbidden, and every grant of the
//! chart is used (least privilege, read from the API server's audit log).
//! `helm upgrade` to another image changes only the image; `helm uninstall`
//! and gardenlet's deletion of the namespace leave nothing behind, the
//! webhook configuration included (its owner reference, through the real
//! garbage collector).

#[path = "support/testbed/mod.rs"]
mod testbed;

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};
use testbed::extension::{
    deployment_command, helm_ok, request, wait_registered_at, wait_succeeded,
};
use testbed::{
    ApiServer, ApiServerOptions, Testbed, chart, eventually, gardenlet_object, root, yaml_documents,
};

const NS: &str = "extension-scion-provider-aws-x1";
const RELEASE: &str = "scion-provider-aws";
const SA: &str = "gardener-extension-provider-aws";
const SHOOT: &str = "shoot--dev--aws";

/// The objects of the release as helm recorded them.
fn release_objects(api: &ApiServer) -> Vec<Value> {
    chart::split_rendered(&helm_ok(api, &["get", "manifest", RELEASE, "-n", NS]))
        .into_iter()
        .map(|r| r.object)
        .collect()
}

async fn stored(api: &ApiServer, object: &Value) -> Option<Value> {
    let ns = object["metadata"]["namespace"].as_str();
    api.get(
        object["apiVersion"].as_str().unwrap(),
        object["kind"].as_str().unwrap(),
        ns,
        object["metadata"]["name"].as_str().unwrap(),
    )
    .await
}

/// One API request of scion as the audit log records it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Call {
    verb: String,
    group: String,
    resource: String,
    namespace: String,
    name: String,
}

fn calls_of(api: &ApiServer, user: &str) -> (Vec<Call>, Vec<Value>) {
    let mut calls = Vec::new();
    let mut forbidden = Vec::new();
    for e in api.audit_events() {
        // a watch is recorded when its response starts (it completes only
        // when it ends)
        let long_running = e["stage"] == "ResponseStarted";
        if e["user"]["username"] != user || !(e["stage"] == "ResponseComplete" || long_running) {
            continue;
        }
        if e["responseStatus"]["code"] == 403 {
            forbidden.push(e.clone());
        }
        let r = &e["objectRef"];
        let mut resource = r["resource"].as_str().unwrap_or_default().to_owned();
        if let Some(sub) = r["subresource"].as_str() {
            resource = format!("{resource}/{sub}");
        }
        let call = Call {
            verb: e["verb"].as_str().unwrap_or_default().to_owned(),
            group: r["apiGroup"].as_str().unwrap_or_default().to_owned(),
            resource,
            namespace: r["namespace"].as_str().unwrap_or_default().to_owned(),
            name: r["name"].as_str().unwrap_or_default().to_owned(),
        };
        // a server-side apply that created its object (201) was authorized
        // as `create` as well
        if call.verb == "patch" && e["responseStatus"]["code"] == 201 {
            calls.push(Call {
                verb: "create".into(),
                ..call.clone()
            });
        }
        calls.push(call);
    }
    (calls, forbidden)
}

/// Every (rule, verb, resource) of the chart's ClusterRole and Role that no
/// call in `calls` used.
fn unused_grants(roles: &[(String, Value)], calls: &[Call]) -> Vec<String> {
    let mut unused = Vec::new();
    for (role, object) in roles {
        let namespace = object["metadata"]["namespace"].as_str();
        for rule in object["rules"].as_array().unwrap() {
            let names: Option<Vec<&str>> = rule["resourceNames"]
                .as_array()
                .map(|n| n.iter().map(|v| v.as_str().unwrap()).collect());
            for group in rule["apiGroups"].as_array().unwrap() {
                for resource in rule["resources"].as_array().unwrap() {
                    for verb in rule["verbs"].as_array().unwrap() {
                        let used = calls.iter().any(|c| {
                            c.verb == *verb
                                && c.group == *group
                                && c.resource == *resource
                                && namespace.is_none_or(|ns| c.namespace == ns)
                                && names.as_ref().is_none_or(|n| n.contains(&c.name.as_str()))
                        });
                        if !used {
                            unused.push(format!(
                                "{role}: {verb} {resource}.{} {}",
                                group.as_str().unwrap(),
                                names.as_ref().map(|n| format!("{n:?}")).unwrap_or_default()
                            ));
                        }
                    }
                }
            }
        }
    }
    unused
}

/// Ask for `operation` (gardener.cloud/operation) on the ControlPlane and
/// wait until scion reports it done: annotation removed, last operation of
/// `op_type` succeeded.
async fn operate(api: &ApiServer, cp: &Value, operation: &str, op_type: &str) {
    request(api, cp, operation).await;
    wait_succeeded(api, cp, op_type, String::new).await;
}

/// A shoot of Kubernetes 1.18 (in-tree cloud provider) and gardenlet's write
/// of its kube-apiserver: the rules mount and checksum the ConfigMap.
async fn write_old_shoot_kube_apiserver(
    api: &ApiServer,
    files: &[std::path::PathBuf],
    scion: &testbed::Scion,
) {
    let old = "shoot--dev--aws-old";
    api.namespace(old, &[("shoot.gardener.cloud/provider", "aws")])
        .await;
    for mut doc in files
        .iter()
        .flat_map(|f| yaml_documents(&std::fs::read_to_string(f).unwrap()))
    {
        match doc["kind"].as_str().unwrap() {
            "Cluster" => {
                doc["metadata"]["name"] = json!(old);
                doc["spec"]["shoot"]["spec"]["kubernetes"]["version"] = json!("1.18.20");
            }
            "Secret" | "ConfigMap" => doc["metadata"]["namespace"] = json!(old),
            _ => continue,
        }
        api.apply(&doc, "gardenlet").await.unwrap();
    }
    let kapi = gardenlet_object(
        "tests/fixtures/admission/aws-1.17-kube-apiserver.review.json",
        old,
    );
    let stored = eventually(
        "scion knows the old shoot's Cluster",
        Duration::from_secs(30),
        || async {
            match api.create(&kapi).await {
                Ok(stored) => Some(stored),
                Err(e) if e.to_string().contains("Cluster") => None,
                Err(e) => panic!("old kube-apiserver write: {e}\n{}", scion.log()),
            }
        },
    )
    .await;
    let annotations = &stored["spec"]["template"]["metadata"]["annotations"];
    assert!(
        annotations
            .get("checksum/configmap-cloud-provider-config")
            .is_some(),
        "{annotations}"
    );
}

/// scion for GCP with the chart's ServiceAccount (no registration, no
/// controller: the ClusterRole names only aws's webhook configuration), and
/// an Etcd review sent to it directly: the webhook reads the BackupBucket.
async fn gcp_etcd_reads_the_backup_bucket(bed: &Testbed, kubeconfig: &std::path::Path) {
    let api = &bed.seed;
    let ns = "shoot--dev--gcp";
    api.namespace(ns, &[("seed.gardener.cloud/provider", "gcp")])
        .await;
    let dir = root().join("examples/objects/gcp");
    for f in std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()) {
        for doc in yaml_documents(&std::fs::read_to_string(f).unwrap()) {
            if doc["kind"] != "ControlPlane" {
                api.apply(&doc, "gardenlet").await.unwrap();
            }
        }
    }
    let gcp = bed
        .scion("gcp", kubeconfig)
        .args(["--controllers=none"])
        .start()
        .await;
    let etcd: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("examples/etcd/gcp-etcd-main.json")).unwrap(),
    )
    .unwrap();
    let review = json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "0e5f3c1a-7d2b-4e8f-9a6c-1b2d3e4f5a6b",
            "kind": {"group": "druid.gardener.cloud", "version": "v1alpha1", "kind": "Etcd"},
            "resource": {"group": "druid.gardener.cloud", "version": "v1alpha1", "resource": "etcds"},
            "name": "etcd-main", "namespace": ns, "operation": "CREATE", "object": etcd},
    });
    let out = std::process::Command::new("curl")
        .args(["-sS", "--max-time", "20", "--cacert"])
        .arg(gcp.cert_dir.path().join("ca.crt"))
        .args([
            "-H",
            "content-type: application/json",
            "--data-binary",
            &review.to_string(),
        ])
        .arg(format!("https://{}/seedprovider", gcp.webhook))
        .output()
        .expect("curl");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(
        answer["response"]["allowed"],
        true,
        "{answer}\n{}",
        gcp.log()
    );
    assert_eq!(gcp.stop(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_install_upgrade_uninstall_with_scion_running_on_the_charts_rbac() {
    let bed = Testbed::start_with(&[ApiServerOptions {
        controller_manager: true,
        ..ApiServerOptions::named("seed")
    }])
    .await;
    let api = &bed.seed;
    api.install_crds().await;
    // gardenlet creates the namespace and renders the chart with its values
    api.namespace(
        NS,
        &[
            ("gardener.cloud/role", "extension"),
            ("controllerregistration.core.gardener.cloud/name", RELEASE),
        ],
    )
    .await;
    let values = bed.dir().join("gardenlet-values.yaml");
    std::fs::write(
        &values,
        format!(
            "{}image:\n  repository: reg.local/scion\n  tag: 0.1.0\n",
            chart::GARDENLET_VALUES
        ),
    )
    .unwrap();
    let chart_dir = root().join("charts/scion");
    let (chart_path, values_path) = (chart_dir.to_str().unwrap(), values.to_str().unwrap());
    helm_ok(
        api,
        &[
            "install",
            RELEASE,
            chart_path,
            "-n",
            NS,
            "-f",
            values_path,
            // the heartbeat renews every second instead of 30, so the test sees it
            "--set",
            "controllers.heartbeat.renewIntervalSeconds=1",
        ],
    );
    let installed = release_objects(api);
    assert!(installed.len() >= 9, "{installed:?}");
    for object in &installed {
        assert!(
            stored(api, object).await.is_some(),
            "{} {} not stored",
            object["kind"],
            object["metadata"]["name"]
        );
    }

    // scion as the chart's Deployment runs it, with its ServiceAccount's token
    let deployment = api
        .get("apps/v1", "Deployment", Some(NS), SA)
        .await
        .unwrap();
    let (args, env) = deployment_command(&deployment, "scion-e2e-0");
    let token = api.service_account_token(NS, SA).await;
    let kubeconfig = api.kubeconfig_with_token("scion-aws.kubeconfig", &token);
    let mut builder = bed.scion("aws", &kubeconfig).register_webhook().args(args);
    for (k, v) in &env {
        builder = builder.env(k, v);
    }
    let mut scion = builder.start().await;

    // certificates issued into the namespace, the configuration registered
    // with their CA at scion's loopback URL (a certificate naming 127.0.0.1)
    let url = format!("https://{}", scion.webhook);
    let ca = eventually(
        "the managed webhook certificate",
        Duration::from_secs(90),
        || async {
            let tls = api
                .get("v1", "Secret", Some(NS), &format!("{SA}-tls"))
                .await?;
            tls["data"]["ca.crt"].as_str().map(str::to_owned)
        },
    )
    .await;
    wait_registered_at(api, RELEASE, &url, Some(&ca)).await;
    scion.assert_running();
    // the first registration waited for the managed bundle instead of
    // failing on it (it used to warn and retry only after 10 s)
    let log = scion.log();
    assert!(
        !log.contains("cannot read the CA bundle") && !log.contains("webhook registration failed"),
        "{log}"
    );

    // the webhooks and the controller at work: a shoot with its context, a
    // gardenlet write of kube-controller-manager, a ControlPlane
    api.namespace(
        SHOOT,
        &[
            ("shoot.gardener.cloud/provider", "aws"),
            ("seed.gardener.cloud/provider", "aws"),
        ],
    )
    .await;
    let dir = root().join("examples/objects/aws");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut controlplane = None;
    for doc in files
        .iter()
        .flat_map(|f| yaml_documents(&std::fs::read_to_string(f).unwrap()))
    {
        if doc["kind"] == "ControlPlane" {
            // a field scion does not honour: the OptionsNotHonoured Event
            // (and so the chart's events grant) is used in this run
            let mut doc = doc;
            doc["spec"]["providerConfig"]["ipamController"] = json!({"enabled": true});
            controlplane = Some(doc);
        } else {
            api.apply(&doc, "gardenlet").await.unwrap();
        }
    }
    let kcm = gardenlet_object("examples/reviews/aws-kube-controller-manager.json", SHOOT);
    let before = kcm["spec"]["template"]["spec"]["containers"][0]["command"].clone();
    let stored_kcm = api
        .create(&kcm)
        .await
        .unwrap_or_else(|e| panic!("KCM write: {e}\n{}", scion.log()));
    assert_ne!(
        stored_kcm["spec"]["template"]["spec"]["containers"][0]["command"], before,
        "not mutated"
    );

    // an old shoot (in-tree cloud provider): its kube-apiserver's rules read
    // the cloud-provider-config ConfigMap
    write_old_shoot_kube_apiserver(api, &files, &scion).await;

    // the ControlPlane: reconciled, reconciled again hibernated (the
    // ManagedResources change: an update; kube-apiserver's replicas read),
    // migrated (keepObjects patched), deleted (finalizer released)
    let cp = controlplane.expect("examples/objects/aws has a ControlPlane");
    let cp_name = cp["metadata"]["name"].as_str().unwrap().to_owned();
    operate(api, &cp, "reconcile", "Create").await;
    let mut cluster = files
        .iter()
        .flat_map(|f| yaml_documents(&std::fs::read_to_string(f).unwrap()))
        .find(|d| d["kind"] == "Cluster")
        .unwrap();
    cluster["spec"]["shoot"]["spec"]["hibernation"] = json!({"enabled": true});
    api.apply(&cluster, "gardenlet").await.unwrap();
    operate(api, &cp, "reconcile", "Reconcile").await;
    operate(api, &cp, "migrate", "Migrate").await;
    api.delete(
        "extensions.gardener.cloud/v1alpha1",
        "ControlPlane",
        Some(SHOOT),
        &cp_name,
    )
    .await;
    eventually(
        "the ControlPlane deleted (finalizer released)",
        Duration::from_secs(120),
        || async {
            api.get(
                "extensions.gardener.cloud/v1alpha1",
                "ControlPlane",
                Some(SHOOT),
                &cp_name,
            )
            .await
            .is_none()
            .then_some(())
        },
    )
    .await;
    scion.assert_running();

    // the ClusterRole is the same for every provider: GCP's Etcd webhook
    // reads a BackupBucket, with the same ServiceAccount's token
    gcp_etcd_reads_the_backup_bucket(&bed, &kubeconfig).await;

    // the heartbeat renewed its Lease at least once
    let user = format!("system:serviceaccount:{NS}:{SA}");
    eventually("a heartbeat renewal", Duration::from_secs(60), || async {
        calls_of(api, &user)
            .0
            .iter()
            .any(|c| c.verb == "patch" && c.name == "gardener-extension-heartbeat")
            .then_some(())
    })
    .await;

    // no request of scion was forbidden, and every grant was used
    let (calls, forbidden) = calls_of(api, &user);
    assert!(
        forbidden.is_empty(),
        "the chart's RBAC forbade scion's requests:\n{:#?}\nscion's log:\n{}",
        forbidden
            .iter()
            .map(|e| format!("{} {}", e["verb"], e["requestURI"]))
            .collect::<Vec<_>>(),
        scion.log()
    );
    let mut roles = Vec::new();
    for (kind, ns, name) in [
        (
            "ClusterRole",
            None,
            "extensions.gardener.cloud:provider-aws".to_owned(),
        ),
        ("Role", Some(NS), SA.to_owned()),
    ] {
        let role = api
            .get("rbac.authorization.k8s.io/v1", kind, ns, &name)
            .await
            .unwrap();
        roles.push((format!("{kind} {name}"), role));
    }
    let unused = unused_grants(&roles, &calls);
    let used: BTreeSet<String> = calls
        .iter()
        .map(|c| {
            format!(
                "{} {}.{} {}",
                c.verb,
                c.resource,
                c.group,
                if c.namespace == NS {
                    "(extension namespace)"
                } else {
                    ""
                }
            )
        })
        .collect();
    assert!(
        unused.is_empty(),
        "the chart grants what scion never used in this run:\n{unused:#?}\nused:\n{used:#?}"
    );

    // upgrade to another image: the image changes, the objects stay
    helm_ok(
        api,
        &[
            "upgrade",
            RELEASE,
            chart_path,
            "-n",
            NS,
            "-f",
            values_path,
            "--set",
            "image.tag=0.2.0",
        ],
    );
    let upgraded = api
        .get("apps/v1", "Deployment", Some(NS), SA)
        .await
        .unwrap();
    assert_eq!(
        upgraded["spec"]["template"]["spec"]["containers"][0]["image"],
        "reg.local/scion:0.2.0"
    );
    let kinds = |objects: &[Value]| -> BTreeSet<String> {
        objects
            .iter()
            .map(|o| format!("{}/{}", o["kind"], o["metadata"]["name"]))
            .collect()
    };
    assert_eq!(kinds(&release_objects(api)), kinds(&installed));

    // uninstall, then gardenlet deletes the namespace: nothing is left
    assert_eq!(scion.stop(), Some(0), "scion serve did not drain cleanly");
    helm_ok(
        api,
        &[
            "uninstall",
            RELEASE,
            "-n",
            NS,
            "--wait",
            "--timeout",
            "120s",
        ],
    );
    for object in &installed {
        assert!(
            stored(api, object).await.is_none(),
            "{} {} left after helm uninstall",
            object["kind"],
            object["metadata"]["name"]
        );
    }
    api.delete("v1", "Namespace", None, NS).await;
    eventually(
        "the extension namespace and everything owned by it gone",
        Duration::from_secs(180),
        || async {
            let ns = api.get("v1", "Namespace", None, NS).await;
            let config = api
                .get(
                    "admissionregistration.k8s.io/v1",
                    "MutatingWebhookConfiguration",
                    None,
                    RELEASE,
                )
                .await;
            (ns.is_none() && config.is_none()).then_some(())
        },
    )
    .await;
    for (api_version, kind) in [
        (
            "admissionregistration.k8s.io/v1",
            "MutatingWebhookConfiguration",
        ),
        ("rbac.authorization.k8s.io/v1", "ClusterRole"),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ] {
        let list = api
            .api(api_version, kind, None)
            .await
            .list(&kube::api::ListParams::default().labels("app.kubernetes.io/part-of=scion"))
            .await
            .unwrap();
        assert!(
            list.items.is_empty(),
            "{kind} left behind: {:?}",
            list.items
                .iter()
                .map(|o| o.metadata.name.clone())
                .collect::<Vec<_>>()
        );
    }
}

/// The development installation (`kubectl apply -k manifests/`: every CRD,
/// then `scion manifests`' output without a CA bundle) is accepted, and with
/// no scion running it blocks no gardenlet write: without `--ca-file` there
/// is no webhook configuration whose Fail policy could reject them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_development_manifests_apply_and_never_block_gardenlets_writes() {
    let bed = Testbed::start().await;
    let api = &bed.seed;
    api.namespace("extension-provider-aws", &[]).await;
    let dir = root().join("manifests");
    let crds = dir.join("crds");
    // as docs/operating.md says: the CRDs, established, then everything (in
    // one go kubectl cannot map the VPA before its CRD is served)
    let mut applied = String::new();
    for args in [
        vec!["apply", "--server-side", "-f", crds.to_str().unwrap()],
        vec![
            "wait",
            "--for",
            "condition=established",
            "--timeout=120s",
            "-f",
            crds.to_str().unwrap(),
        ],
        vec!["apply", "--server-side", "-k", dir.to_str().unwrap()],
    ] {
        let out = api.kubectl(&args);
        assert!(
            out.status.success(),
            "kubectl {args:?}:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        applied = String::from_utf8_lossy(&out.stdout).into_owned();
    }
    for crd in std::fs::read_dir(dir.join("crds")).unwrap() {
        let name = yaml_documents(&std::fs::read_to_string(crd.unwrap().path()).unwrap())[0]["metadata"]["name"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(applied.contains(&name), "{name} not applied:\n{applied}");
    }
    assert!(
        api.get(
            "admissionregistration.k8s.io/v1",
            "MutatingWebhookConfiguration",
            None,
            "scion-provider-aws"
        )
        .await
        .is_none(),
        "a webhook configuration without a CA bundle was installed"
    );
    // gardenlet writes a control-plane Deployment of an aws shoot: accepted
    api.namespace(SHOOT, &[("shoot.gardener.cloud/provider", "aws")])
        .await;
    let kcm = gardenlet_object("examples/reviews/aws-kube-controller-manager.json", SHOOT);
    api.create(&kcm).await.unwrap_or_else(|e| {
        panic!("gardenlet's write was blocked by the development installation: {e}")
    });
}

/// A test that needs a seed and a shoot gets two API servers on one etcd:
/// separate clusters (what is written to one is not in the other), each
/// with its own CRDs and service accounts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seed_and_a_shoot_api_server_are_separate_clusters() {
    let bed = Testbed::start_with_shoot().await;
    let shoot = bed.shoot.as_ref().expect("a shoot API server");
    assert_ne!(bed.seed.url, shoot.url);
    shoot.namespace("kube-system-extra", &[]).await;
    assert!(
        bed.seed
            .get("v1", "Namespace", None, "kube-system-extra")
            .await
            .is_none()
    );
    shoot.install_crds().await;
    assert!(
        bed.seed
            .get(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                None,
                "etcds.druid.gardener.cloud"
            )
            .await
            .is_none()
    );
    // each issues tokens for its own ServiceAccounts
    shoot
        .apply(
            &json!({"apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": "cloud-controller-manager", "namespace": "kube-system"}}),
            "testbed",
        )
        .await
        .unwrap();
    let token = shoot
        .service_account_token("kube-system", "cloud-controller-manager")
        .await;
    assert!(!token.is_empty());
}
