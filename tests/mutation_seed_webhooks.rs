//! The `cloudprovider` Secret and seedprovider Etcd webhooks through the
//! server's path (`WebhookMutator` over a `Snapshot`) for all five
//! providers: which keys, when, what wins (reference §1.7), storage class and
//! capacity per provider and configuration, AWS's old volume, GCP's backup
//! endpoint (§1.8), the denials, and the recorded example objects of every
//! provider.

mod support;

use base64::Engine as _;
use scion::admission::Verdict;
use scion::mutation::{EtcdConfig, WebhookMutator};
use scion::state::Snapshot;
use serde_json::{Value, json};
use support::mutation::{NS, mutator, run, shoot, snapshot};

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn secret(data: &[(&str, &str)], labels: Value) -> Value {
    let data: serde_json::Map<String, Value> = data
        .iter()
        .map(|(k, v)| (k.to_string(), json!(b64(v))))
        .collect();
    json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "cloudprovider", "namespace": NS, "labels": labels}, "data": data})
}

/// The request as the server decodes it (oldObject kept for an Etcd).
fn review(object: &Value, old: Option<&Value>) -> scion::admission::AdmissionRequest {
    let (group, version) = object["apiVersion"]
        .as_str()
        .unwrap()
        .split_once('/')
        .unwrap_or(("", "v1"));
    let mut request = json!({"uid": "u", "kind": {"group": group, "version": version, "kind": object["kind"]},
        "name": object["metadata"]["name"], "namespace": object["metadata"]["namespace"],
        "operation": "UPDATE", "object": object});
    if let Some(old) = old {
        request["oldObject"] = old.clone();
    }
    let body =
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request});
    scion::decode::whole(&serde_json::to_vec(&body).unwrap()).unwrap()
}

fn stored(m: &WebhookMutator, object: &Value, old: Option<&Value>) -> Result<Value, String> {
    let req = review(object, old);
    let verdict = run(m, &req).map_err(|d| format!("{} {d}", d.code()))?;
    Ok(support::mutation::patch_and_apply(&req, &verdict).1)
}

fn key(object: &Value, key: &str) -> String {
    let v = object["data"][key]
        .as_str()
        .unwrap_or_else(|| panic!("no {key}"));
    String::from_utf8(base64::engine::general_purpose::STANDARD.decode(v).unwrap()).unwrap()
}

fn provider(name: &str) -> WebhookMutator {
    let mut s = shoot("1.33.2");
    s.shoot.spec.provider.type_ = name.into();
    mutator(name, snapshot(s, &[]))
}

#[test]
fn aws_and_alicloud_credentials_files_and_idempotence() {
    let m = provider("aws");
    let input = secret(
        &[("accessKeyID", "AKIA1"), ("secretAccessKey", "s3cr3t")],
        json!({"gardener.cloud/purpose": "cloudprovider"}),
    );
    let out = stored(&m, &input, None).unwrap();
    assert_eq!(
        key(&out, "credentialsFile"),
        "[default]\naws_access_key_id=AKIA1\naws_secret_access_key=s3cr3t\nregion=eu-west-1"
    );
    assert_eq!(
        run(&m, &review(&out, None)),
        Ok(Verdict::Unchanged),
        "a second pass changes nothing"
    );
    let err = stored(&m, &secret(&[("accessKeyID", "AKIA1")], json!({})), None).unwrap_err();
    // The object is named once, by the server (tests/server_attack.rs).
    assert_eq!(
        err,
        "403 could not mutate cloudprovider secret as \"secretAccessKey\" field is missing"
    );
    let ali = stored(
        &provider("alicloud"),
        &secret(&[("accessKeyID", "A"), ("accessKeySecret", "S")], json!({})),
        None,
    )
    .unwrap();
    assert_eq!(
        key(&ali, "credentialsFile"),
        "[default]\ntype = access_key\naccess_key_id = A\naccess_key_secret = S"
    );
    // Another Secret name passes.
    let mut other = input.clone();
    other["metadata"]["name"] = json!("cloudprovider-old");
    assert_eq!(run(&m, &review(&other, None)), Ok(Verdict::Unchanged));
}

#[test]
fn openstack_gcp_and_azure() {
    let mut s = shoot("1.33.2");
    s.cloud_profile.spec.provider_config.0 =
        Some(json!({"keystoneURL": "https://keystone", "keystoneCACert": "CA"}));
    let os = mutator("openstack", snapshot(s, &[]));
    let out = stored(
        &os,
        &secret(&[("username", "u"), ("insecure", "true")], json!({})),
        None,
    )
    .unwrap();
    assert_eq!(
        (key(&out, "authURL"), key(&out, "caCert")),
        ("https://keystone".to_string(), "CA".to_string())
    );
    assert!(
        out["data"].get("insecure").is_none(),
        "insecure only when the CloudProfile enforces it"
    );

    let gcp = provider("gcp");
    let static_secret = secret(&[("serviceaccount.json", "{}")], json!({}));
    assert_eq!(
        run(&gcp, &review(&static_secret, None)),
        Ok(Verdict::Unchanged)
    );
    let wi = secret(
        &[(
            "config",
            "projectID: p\ncredentialsConfig: {type: external_account, audience: aud}\n",
        )],
        json!({"workloadidentity.security.gardener.cloud/provider": "gcp"}),
    );
    let out = stored(&gcp, &wi, None).unwrap();
    assert_eq!(key(&out, "projectID"), "p");
    assert!(
        key(&out, "credentialsConfig").starts_with("{\"audience\":\"aud\",\"credential_source\":")
    );

    let tenant = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sp", "namespace": "garden",
        "labels": {"azure.provider.extensions.gardener.cloud/purpose": "tenant-service-principal-secret"}},
        "data": {"tenantID": b64("t"), "clientID": b64("c"), "clientSecret": b64("x")}});
    let mut s = shoot("1.33.2");
    s.shoot.spec.provider.type_ = "azure".into();
    let azure = mutator("azure", snapshot(s, &[tenant]));
    let out = stored(
        &azure,
        &secret(&[("tenantID", "t"), ("subscriptionID", "s")], json!({})),
        None,
    )
    .unwrap();
    assert_eq!(
        (key(&out, "clientID"), key(&out, "clientSecret")),
        ("c".to_string(), "x".to_string())
    );
    let err = stored(&azure, &secret(&[("tenantID", "other")], json!({})), None).unwrap_err();
    assert!(
        // Go names the tenant id; it is a value of the Secret, never repeated.
        err.ends_with("found no service principal secrets matching to the Secret's tenant id"),
        "{err}"
    );
}

fn etcd(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "druid.gardener.cloud/v1alpha1", "kind": "Etcd",
        "metadata": {"name": name, "namespace": NS}, "spec": spec})
}

fn etcd_mutator(provider_name: &str, config: EtcdConfig, snap: Snapshot) -> WebhookMutator {
    WebhookMutator::new(
        scion::mutation::Engine::new(scion::profile::Profile::builtin(provider_name).unwrap())
            .with_etcd_config(config),
        std::sync::Arc::new(snap),
    )
}

#[test]
fn etcd_storage_per_provider_and_configuration() {
    for (p, capacity, events) in [
        ("aws", "25Gi", "10Gi"),
        ("openstack", "25Gi", "10Gi"),
        ("gcp", "25Gi", "10Gi"),
        ("azure", "33Gi", "10Gi"),
        ("alicloud", "25Gi", "20Gi"),
    ] {
        let m = etcd_mutator(p, EtcdConfig::default(), snapshot(shoot("1.33.2"), &[]));
        let main = stored(&m, &etcd("etcd-main", json!({"replicas": 3})), None).unwrap();
        assert_eq!(
            main["spec"],
            json!({"replicas": 3, "storageClass": "gardener.cloud-fast", "storageCapacity": capacity}),
            "{p}"
        );
        let ev = stored(&m, &etcd("etcd-events", json!({})), None).unwrap();
        assert_eq!(
            ev["spec"],
            json!({"storageClass": "", "storageCapacity": events}),
            "{p}"
        );
    }
    let configured = EtcdConfig {
        storage_class: Some("fast".into()),
        storage_capacity: Some("".into()),
    };
    let m = etcd_mutator("gcp", configured, snapshot(shoot("1.33.2"), &[]));
    let main = stored(&m, &etcd("etcd-main", json!({})), None).unwrap();
    assert_eq!(
        main["spec"],
        json!({"storageClass": "fast", "storageCapacity": "10Gi"})
    );
}

#[test]
fn aws_keeps_the_old_volume_openstack_denies_gcp_reads_the_bucket() {
    let aws = etcd_mutator("aws", EtcdConfig::default(), snapshot(shoot("1.33.2"), &[]));
    let old = etcd(
        "etcd-main",
        json!({"storageClass": "gp3", "storageCapacity": "80Gi"}),
    );
    let out = stored(
        &aws,
        &etcd(
            "etcd-main",
            json!({"storageClass": null, "storageCapacity": "80Gi"}),
        ),
        Some(&old),
    )
    .unwrap();
    assert_eq!(
        out["spec"],
        json!({"storageClass": "gp3", "storageCapacity": "80Gi"})
    );

    let os = etcd_mutator("openstack", EtcdConfig::default(), Snapshot::default());
    let err = stored(&os, &etcd("virtual-garden-etcd-main", json!({})), None).unwrap_err();
    assert_eq!(err, "403 unknown ETCD name \"virtual-garden-etcd-main\"");
    // No Cluster is needed: the garden's Etcds have none.
    let aws_garden = etcd_mutator("aws", EtcdConfig::default(), Snapshot::default());
    assert!(
        stored(
            &aws_garden,
            &etcd("virtual-garden-etcd-events", json!({})),
            None
        )
        .is_ok()
    );

    let mut snap = snapshot(shoot("1.33.2"), &[]);
    let backed_up = etcd(
        "etcd-main",
        json!({"backup": {"store": {"container": "bucket-1"}}}),
    );
    let missing = etcd_mutator("gcp", EtcdConfig::default(), snap.clone());
    assert_eq!(
        stored(&missing, &backed_up, None).unwrap_err(),
        "403 could not get BackupBucket \"bucket-1\": not found"
    );
    snap.insert_backup_bucket(
        "bucket-1",
        json!({"store": {"endpointOverride": "https://gcs.example"}}),
    );
    let gcp = etcd_mutator("gcp", EtcdConfig::default(), snap);
    let out = stored(&gcp, &backed_up, None).unwrap();
    assert_eq!(
        out["spec"]["backup"]["store"]["endpointOverride"],
        "https://gcs.example"
    );
    let err = stored(&gcp, &etcd("etcd-main", json!({"storageClass": 7})), None).unwrap_err();
    assert_eq!(err, "400 field spec.storageClass must be a string");
}

/// The recorded example objects of every provider (examples/etcd/,
/// examples/objects/<p>/ with its Cluster): what changes, and a second pass
/// over the result changes nothing.
#[test]
fn the_recorded_examples_of_every_provider_are_mutated_once_and_stay_put() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for (provider, main_capacity, events_capacity, secret_keys) in [
        ("alicloud", "25Gi", "20Gi", &["credentialsFile"][..]),
        ("aws", "25Gi", "10Gi", &["credentialsFile"][..]),
        ("azure", "33Gi", "10Gi", &[][..]),
        ("gcp", "25Gi", "10Gi", &[][..]),
        ("openstack", "25Gi", "10Gi", &["authURL"][..]),
    ] {
        let m = support::mutation::example_mutator(provider);
        for (role, capacity, class) in [
            ("main", main_capacity, "gardener.cloud-fast"),
            ("events", events_capacity, ""),
        ] {
            let text = std::fs::read_to_string(
                root.join(format!("examples/etcd/{provider}-etcd-{role}.json")),
            )
            .unwrap();
            let input: Value = serde_json::from_str(&text).unwrap();
            let out = stored(&m, &input, None).unwrap();
            assert_eq!(
                (
                    &out["spec"]["storageClass"],
                    &out["spec"]["storageCapacity"]
                ),
                (&json!(class), &json!(capacity)),
                "{provider} {role}"
            );
            let mut rest = out.clone();
            rest["spec"]["storageClass"] = input["spec"]["storageClass"].clone();
            rest["spec"]["storageCapacity"] = input["spec"]["storageCapacity"].clone();
            if input["spec"].get("storageClass").is_none() {
                rest["spec"].as_object_mut().unwrap().remove("storageClass");
            }
            assert_eq!(rest, input, "{provider} {role}: nothing else changes");
            assert_eq!(
                run(&m, &review(&out, Some(&out))),
                Ok(Verdict::Unchanged),
                "{provider} {role}: a second pass"
            );
        }
        let secret = support::mutation::example_cloudprovider_secret(provider);
        let out = stored(&m, &secret, None).unwrap();
        let added: Vec<&str> = out["data"]
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| secret["data"].get(k.as_str()).is_none())
            .map(String::as_str)
            .collect();
        assert_eq!(added, secret_keys, "{provider}");
        assert_eq!(
            run(&m, &review(&out, None)),
            Ok(Verdict::Unchanged),
            "{provider} Secret: a second pass"
        );
    }
}
