//! Webhook certificates managed in the cluster, on a real kube-apiserver
//! (the test bed shared by this binary): bootstrap from nothing, rotation
//! with an overlapping CA bundle (the serving certificate switches only once
//! the webhook configuration trusts the new CA, the old CA leaves a day
//! later), every replica copying the current certificate. Each test has an
//! extension of its own (provider `certs<n>`, its namespace) and acts as a
//! user RBAC grants exactly the Role and ClusterRole scion installs for it,
//! so the real authorizer checks every call; the calls are read back from
//! the audit log.

mod support;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use scion::deploy::Extension;
use scion::deploy::certs::{reconcile_certificates, sync_cert_dir};
use scion::deploy::rbac;
use scion::tls::rotation::{self, Plan};
use serde_json::{Value, json};
use support::testbed::shared::{Session, unique};

const DAY: i64 = 24 * 3600;
const T0: i64 = 1_800_000_000;

/// An extension of its own and a session acting with exactly its roles.
struct Installed {
    ext: Extension,
    /// Acts as the extension (RBAC: scion's Role and ClusterRole only).
    scion: Session,
    admin: Session,
}

impl Installed {
    async fn new() -> Installed {
        let provider = format!("certs{}", unique());
        let namespace = format!("extension-provider-{provider}");
        let ext = Extension::new(&provider, &namespace).unwrap();
        let admin = Session::in_namespace(&namespace).await;
        admin
            .apply(&json!({"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": namespace}}))
            .await;
        let scion = Session::as_member_of(&namespace, &[]).await;
        let subject =
            json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": scion.user}]);
        let mut role = serde_json::to_value(rbac::role(&ext)).unwrap();
        role["apiVersion"] = json!("rbac.authorization.k8s.io/v1");
        role["kind"] = json!("Role");
        role["metadata"] = json!({"name": "scion", "namespace": namespace});
        admin.apply(&role).await;
        admin
            .apply(&json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "scion", "namespace": namespace},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "scion"},
                "subjects": subject}))
            .await;
        let mut cluster_role = serde_json::to_value(rbac::cluster_role(&ext)).unwrap();
        cluster_role["apiVersion"] = json!("rbac.authorization.k8s.io/v1");
        cluster_role["kind"] = json!("ClusterRole");
        cluster_role["metadata"] = json!({"name": format!("scion-{provider}")});
        admin.apply(&cluster_role).await;
        admin
            .apply(&json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": format!("scion-{provider}")},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": format!("scion-{provider}")},
                "subjects": subject}))
            .await;
        // the authorizer sees the bindings: the Secret can be read
        let path = format!(
            "/api/v1/namespaces/{namespace}/secrets/{}",
            ext.cert_secret_name()
        );
        for _ in 0..100 {
            let request = http::Request::get(&path).body(Vec::new()).unwrap();
            match scion.client.request::<Value>(request).await {
                Err(kube::Error::Api(s)) if s.code == 403 => {}
                _ => break,
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        scion.clear().await;
        Installed { ext, scion, admin }
    }

    /// A key of a stored Secret, decoded.
    async fn data(&self, name: &str, key: &str) -> Option<String> {
        let secret = self
            .admin
            .get(&format!(
                "/api/v1/namespaces/{}/secrets/{name}",
                self.ext.namespace()
            ))
            .await?;
        let v = secret["data"][key].as_str()?;
        Some(String::from_utf8(STANDARD.decode(v).unwrap()).unwrap())
    }

    /// The webhook configuration as the registration leaves it: trusting
    /// `bundle`.
    async fn trust(&self, bundle: &str) {
        let mut config = serde_json::to_value(scion::deploy::webhook_configuration(
            &self.ext,
            Some(bundle.as_bytes()),
        ))
        .unwrap();
        config["apiVersion"] = json!("admissionregistration.k8s.io/v1");
        config["kind"] = json!("MutatingWebhookConfiguration");
        self.admin.apply(&config).await;
    }

    /// The writes of scion so far.
    async fn writes(&self) -> usize {
        self.scion
            .requests()
            .await
            .iter()
            .filter(|r| r.is_write())
            .count()
    }

    /// No request of scion was forbidden, and every one stayed in its
    /// namespace or was cluster-scoped.
    async fn assert_rbac(&self) {
        let forbidden: Vec<String> = self
            .scion
            .requests()
            .await
            .iter()
            .filter(|r| r.code == 403)
            .map(|r| r.line())
            .collect();
        assert_eq!(forbidden, Vec::<String>::new());
    }
}

fn pems(bundle: &str) -> Vec<String> {
    bundle
        .split_inclusive("-----END CERTIFICATE-----\n")
        .map(str::to_owned)
        .collect()
}

fn cn(pem: &str) -> String {
    rotation::inspect(pem.as_bytes()).unwrap().subject_cn
}

fn issuer(pem: &str) -> String {
    rotation::inspect(pem.as_bytes()).unwrap().issuer_cn
}

#[tokio::test]
async fn bootstrap_rotation_and_replicas() {
    let it = Installed::new().await;
    let (client, ext) = (&it.scion.client, &it.ext);
    let (ca_secret, tls_secret) = (ext.webhook_ca_secret_name(), ext.cert_secret_name());

    // 1. nothing exists: CA and serving certificate are issued at once
    let pass = reconcile_certificates(client, ext, T0).await.unwrap();
    assert_eq!(
        pass.plan,
        Plan {
            new_ca: true,
            drop_old_ca: false,
            new_server: true
        }
    );
    let ca1 = it.data(&ca_secret, "ca.crt").await.unwrap();
    assert!(
        it.data(&ca_secret, "ca.key")
            .await
            .unwrap()
            .contains("PRIVATE KEY")
    );
    assert!(it.data(&ca_secret, "old-ca.crt").await.is_none());
    let srv1 = it.data(&tls_secret, "tls.crt").await.unwrap();
    assert_eq!(issuer(&srv1), cn(&ca1));
    assert_eq!(
        rotation::inspect(srv1.as_bytes()).unwrap().names,
        ext.service_dns_names()
    );
    assert_eq!(it.data(&tls_secret, "ca.crt").await.unwrap(), ca1);
    let stored = it
        .admin
        .get(&format!(
            "/api/v1/namespaces/{}/secrets/{tls_secret}",
            ext.namespace()
        ))
        .await
        .unwrap();
    assert_eq!(stored["type"], "kubernetes.io/tls");
    it.trust(&ca1).await;

    // a day later nothing is due: reads only
    let before = it.writes().await;
    let pass = reconcile_certificates(client, ext, T0 + DAY).await.unwrap();
    assert_eq!(pass.plan, Plan::default());
    assert_eq!(it.writes().await, before);
    assert!(!pass.awaiting_trust);

    // 2. day 25: the CA is due; a new CA joins the bundle, the server stays
    let t = T0 + 25 * DAY;
    let pass = reconcile_certificates(client, ext, t).await.unwrap();
    assert_eq!(
        pass.plan,
        Plan {
            new_ca: true,
            drop_old_ca: false,
            new_server: false
        }
    );
    let ca2 = it.data(&ca_secret, "ca.crt").await.unwrap();
    assert_ne!(ca2, ca1);
    assert_eq!(it.data(&ca_secret, "old-ca.crt").await.unwrap(), ca1);
    assert_eq!(it.data(&tls_secret, "tls.crt").await.unwrap(), srv1);
    assert!(pass.awaiting_trust, "the next pass comes soon");
    assert_eq!(
        pems(&it.data(&tls_secret, "ca.crt").await.unwrap()),
        [ca2.clone(), ca1.clone()]
    );

    // 3. the configuration still trusts only ca1: the server certificate waits
    let pass = reconcile_certificates(client, ext, t + 60).await.unwrap();
    assert_eq!(pass.plan, Plan::default());
    assert_eq!(it.data(&tls_secret, "tls.crt").await.unwrap(), srv1);
    assert!(pass.awaiting_trust);

    // 4. the registration applied the bundle: the server certificate switches
    it.trust(&format!("{ca2}{ca1}")).await;
    let pass = reconcile_certificates(client, ext, t + 120).await.unwrap();
    assert_eq!(
        pass.plan,
        Plan {
            new_ca: false,
            drop_old_ca: false,
            new_server: true
        }
    );
    let srv2 = it.data(&tls_secret, "tls.crt").await.unwrap();
    assert!(!pass.awaiting_trust, "the rotation is done");
    assert_eq!(issuer(&srv2), cn(&ca2));
    assert_eq!(
        pems(&it.data(&tls_secret, "ca.crt").await.unwrap()),
        [ca2.clone(), ca1.clone()]
    );

    // 5. a day after the new CA: the old one leaves the bundle
    let pass = reconcile_certificates(client, ext, t + DAY + 120)
        .await
        .unwrap();
    assert_eq!(
        pass.plan,
        Plan {
            new_ca: false,
            drop_old_ca: true,
            new_server: false
        }
    );
    assert!(it.data(&ca_secret, "old-ca.crt").await.is_none());
    assert_eq!(it.data(&tls_secret, "ca.crt").await.unwrap(), ca2);

    // every replica copies the current certificate and serves it
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for dir in [a.path(), b.path()] {
        assert!(sync_cert_dir(client, ext, dir).await.unwrap());
        assert_eq!(std::fs::read_to_string(dir.join("tls.crt")).unwrap(), srv2);
        assert_eq!(std::fs::read_to_string(dir.join("ca.crt")).unwrap(), ca2);
        let pair = scion::tls::read_pair(dir).unwrap().unwrap();
        scion::tls::parse_pair(&pair.cert, &pair.key, dir).expect("key and certificate match");
    }

    it.assert_rbac().await;
}

#[tokio::test]
async fn replicas_wait_while_there_is_no_secret() {
    let it = Installed::new().await;
    let dir = tempfile::tempdir().unwrap();
    assert!(
        !sync_cert_dir(&it.scion.client, &it.ext, dir.path())
            .await
            .unwrap()
    );
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "nothing written"
    );
    // no writes from a replica, ever
    assert_eq!(it.writes().await, 0);
    it.assert_rbac().await;
}
