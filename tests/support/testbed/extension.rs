//! The extension's side of a seed in the test bed, for the controller and
//! `scion check` end-to-end tests: scion installed by its chart (helm, with
//! the values gardenlet injects) and run with the chart's flags and a token
//! of the chart's ServiceAccount; a shoot namespace as gardenlet prepares it
//! (the provider's example Cluster, Secrets and ControlPlane, moved into a
//! namespace of the test's choice); gardener-resource-manager played by the
//! test ([`Grm`]: it applies every object of a ManagedResource to the API
//! server the class names, reports it applied and healthy, and releases a
//! deleted one after deleting its objects); and the audit log read as the
//! writes of one user.

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine as _;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use super::{ApiServer, Scion, ScionBuilder, Testbed, chart, eventually, root, yaml_documents};

/// The ControlPlane API.
pub const CP_API: &str = "extensions.gardener.cloud/v1alpha1";
/// The ManagedResource API.
pub const MR_API: &str = "resources.gardener.cloud/v1alpha1";
/// The finalizer gardener-resource-manager puts on every ManagedResource.
pub const GRM_FINALIZER: &str = "resources.gardener.cloud/gardener-resource-manager";
/// The operation annotation gardenlet sets.
pub const OPERATION: &str = "gardener.cloud/operation";

/// Run the test bed's helm against `api`; its stdout, or a panic with its
/// output.
pub fn helm_ok(api: &ApiServer, args: &[&str]) -> String {
    let out = api.helm(args);
    assert!(
        out.status.success(),
        "helm {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// scion's flags and environment as the chart's stored Deployment gives
/// them, less what a process on loopback replaces (listen addresses,
/// certificate directory, the registration: the builder adds them, in url
/// mode). `pod` stands for the pod's name.
pub fn deployment_command(deployment: &Value, pod: &str) -> (Vec<String>, Vec<(String, String)>) {
    let namespace = deployment["metadata"]["namespace"].as_str().unwrap();
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let args = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .filter(|a| {
            ![
                "serve",
                "--provider=",
                "--cert-dir=",
                "--register-webhook",
                "--webhook-config-server-port=",
                "--metrics-bind-address=",
                "--health-bind-address=",
                "--log-format=",
            ]
            .iter()
            .any(|p| a == p.trim_end_matches('=') || (p.ends_with('=') && a.starts_with(p)))
        })
        .collect();
    let env = container["env"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let value = match (&e["value"], &e["valueFrom"]["fieldRef"]["fieldPath"]) {
                (Value::String(v), _) => v.clone(),
                (_, Value::String(path)) if path == "metadata.namespace" => namespace.to_owned(),
                (_, Value::String(path)) if path == "metadata.name" => pod.to_owned(),
                other => panic!("unknown env source in the chart: {other:?}"),
            };
            (e["name"].as_str().unwrap().to_owned(), value)
        })
        .collect();
    (args, env)
}

/// scion installed on a seed by its chart.
pub struct Installed {
    pub provider: String,
    /// The extension namespace (the release's).
    pub namespace: String,
    /// The chart's ServiceAccount, `gardener-extension-provider-<p>`.
    pub service_account: String,
    /// Its user name in the audit log.
    pub user: String,
    /// A kubeconfig with a TokenRequest token of the ServiceAccount.
    pub kubeconfig: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

/// `helm install` of `charts/scion` for `provider` into the extension
/// namespace `extension-provider-<p>` (created with gardenlet's labels),
/// with gardenlet's values and `set` (`--set` items, e.g.
/// `config.healthCheckConfig.syncPeriod=1s`).
pub async fn install_chart(bed: &Testbed, provider: &str, set: &[&str]) -> Installed {
    let api = &bed.seed;
    let release = format!("provider-{provider}");
    let namespace = format!("extension-{release}");
    api.namespace(
        &namespace,
        &[
            ("gardener.cloud/role", "extension"),
            ("controllerregistration.core.gardener.cloud/name", &release),
        ],
    )
    .await;
    let values = bed.dir().join(format!("values-{provider}.yaml"));
    let text = chart::GARDENLET_VALUES.replacen(
        "\nprovider: aws\n",
        &format!("\nprovider: {provider}\n"),
        1,
    );
    std::fs::write(
        &values,
        format!("{text}image:\n  repository: reg.local/scion\n  tag: 0.1.0\n"),
    )
    .unwrap();
    let chart_dir = root().join("charts/scion");
    let mut args = vec![
        "install",
        &release,
        chart_dir.to_str().unwrap(),
        "-n",
        &namespace,
        "-f",
        values.to_str().unwrap(),
    ];
    for item in set {
        args.extend(["--set", item]);
    }
    helm_ok(api, &args);
    let service_account = format!("gardener-extension-provider-{provider}");
    let deployment = api
        .get("apps/v1", "Deployment", Some(&namespace), &service_account)
        .await
        .expect("the chart's Deployment");
    let (args, env) = deployment_command(&deployment, &format!("{service_account}-0"));
    let token = api
        .service_account_token(&namespace, &service_account)
        .await;
    let kubeconfig = api.kubeconfig_with_token(&format!("scion-{provider}.kubeconfig"), &token);
    Installed {
        provider: provider.to_owned(),
        user: format!("system:serviceaccount:{namespace}:{service_account}"),
        namespace,
        service_account,
        kubeconfig,
        args,
        env,
    }
}

impl Installed {
    /// `scion serve` as the chart's Deployment runs it, with the
    /// ServiceAccount's token, registering its webhooks in url mode.
    pub fn scion(&self, bed: &Testbed) -> ScionBuilder {
        let mut builder = bed
            .scion(&self.provider, &self.kubeconfig)
            .register_webhook()
            .args(self.args.iter().cloned());
        for (k, v) in &self.env {
            builder = builder.env(k, v);
        }
        builder
    }
}

/// The example objects of `provider` (`examples/objects/<p>/`: Cluster,
/// Secrets, ConfigMaps, BackupBucket, ControlPlane), moved from
/// `shoot--dev--<p>` into `namespace` (every mention: the Cluster's name,
/// the technical ID, the cloud config's cluster tags).
pub fn example_objects(provider: &str, namespace: &str) -> Vec<Value> {
    let dir = root().join("examples/objects").join(provider);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let from = format!("shoot--dev--{provider}");
    files
        .iter()
        .flat_map(|f| {
            yaml_documents(
                &std::fs::read_to_string(f)
                    .unwrap()
                    .replace(&from, namespace),
            )
        })
        .collect()
}

/// The control-plane components whose Deployments (and the
/// machine-controller-manager VPA) gardenlet writes and scion's webhooks
/// mutate, as named in the recorded reviews.
pub const COMPONENTS: &[&str] = &[
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "cluster-autoscaler",
    "machine-controller-manager",
    "machine-controller-manager-vpa",
];

fn read_json(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The object of the newest recorded review of `component` for `provider`
/// (`tests/fixtures/admission/`), as gardenlet sends it, moved into
/// `namespace`.
pub fn recorded_object(provider: &str, component: &str, namespace: &str) -> Value {
    let dir = root().join("tests/fixtures/admission");
    let mut found: Vec<(semver::Version, std::path::PathBuf)> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            let version = name
                .strip_prefix(&format!("{provider}-"))?
                .strip_suffix(&format!("-{component}.review.json"))?;
            let v = semver::Version::parse(&format!("{version}.0")).ok()?;
            Some((v, dir.join(&name)))
        })
        .collect();
    found.sort();
    let (_, path) = found
        .pop()
        .unwrap_or_else(|| panic!("no recorded review of {provider} {component}"));
    super::gardenlet_object(
        path.strip_prefix(root()).unwrap().to_str().unwrap(),
        namespace,
    )
}

/// Every object the webhooks of `provider` mutate, as gardenlet writes them
/// into `namespace`: the [`COMPONENTS`], an OperatingSystemConfig, the main
/// and events Etcds and the `cloudprovider` Secret.
pub fn gardenlet_objects(provider: &str, namespace: &str) -> Vec<Value> {
    let mut objects: Vec<Value> = COMPONENTS
        .iter()
        .map(|c| recorded_object(provider, c, namespace))
        .collect();
    let mut osc = read_json(&root().join(format!("examples/osc/{provider}-original.json")));
    osc["metadata"]["namespace"] = json!(namespace);
    objects.push(osc);
    for etcd in ["main", "events"] {
        let mut e = read_json(&root().join(format!("examples/etcd/{provider}-etcd-{etcd}.json")));
        e["metadata"]["namespace"] = json!(namespace);
        objects.push(e);
    }
    let secret = example_objects(provider, namespace)
        .into_iter()
        .find(|o| o["kind"] == "Secret" && o["metadata"]["name"] == "cloudprovider")
        .expect("an example cloudprovider Secret");
    objects.push(secret);
    objects
}

/// A shoot namespace as gardenlet prepares it for the extension: the
/// namespace with the provider labels, the Cluster, the `cloudprovider`
/// Secret and the other example objects; the ControlPlane is returned, not
/// written.
pub async fn prepare_shoot(api: &ApiServer, provider: &str, namespace: &str) -> Value {
    api.namespace(
        namespace,
        &[
            ("shoot.gardener.cloud/provider", provider),
            ("seed.gardener.cloud/provider", provider),
        ],
    )
    .await;
    let mut controlplane = None;
    for object in example_objects(provider, namespace) {
        if object["kind"] == "ControlPlane" {
            controlplane = Some(object);
        } else {
            api.apply(&object, "gardenlet")
                .await
                .unwrap_or_else(|e| panic!("{provider}: {}: {e}", object["kind"]));
        }
    }
    controlplane.expect("the examples have a ControlPlane")
}

/// The Secret `gardener` gardenlet keeps in a shoot namespace, the shoot's
/// kubeconfig under `kubeconfig`, which the health checks' Event checks
/// (aws: the custom-route controller's) read: here the admin kubeconfig of
/// `shoot`, the test bed's shoot API server or, in a bed without one, the
/// seed's standing in for it.
pub async fn shoot_kubeconfig(api: &ApiServer, namespace: &str, shoot: &ApiServer) {
    let kubeconfig = std::fs::read(&shoot.kubeconfig).expect("the shoot's kubeconfig");
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "gardener", "namespace": namespace},
        "type": "Opaque",
        "data": {"kubeconfig": b64(&kubeconfig)},
    });
    api.apply(&secret, "gardenlet")
        .await
        .unwrap_or_else(|e| panic!("{namespace}: Secret gardener: {e}"));
}

/// Write the ControlPlane as gardenlet does (server-side apply), with the
/// operation annotation `operation`.
pub async fn request(api: &ApiServer, cp: &Value, operation: &str) {
    let mut cp = cp.clone();
    cp["metadata"]["annotations"][OPERATION] = json!(operation);
    api.apply(&cp, "gardenlet").await.unwrap();
}

/// The stored ControlPlane `name` of `namespace`.
pub async fn controlplane(api: &ApiServer, namespace: &str, name: &str) -> Option<Value> {
    api.get(CP_API, "ControlPlane", Some(namespace), name).await
}

/// Wait until the ControlPlane's annotation is gone and its last operation
/// is `op_type` and succeeded; the stored ControlPlane.
pub async fn wait_succeeded(
    api: &ApiServer,
    cp: &Value,
    op_type: &str,
    log: impl Fn() -> String,
) -> Value {
    let (ns, name) = (
        cp["metadata"]["namespace"].as_str().unwrap().to_owned(),
        cp["metadata"]["name"].as_str().unwrap().to_owned(),
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let stored = controlplane(api, &ns, &name)
            .await
            .expect("the ControlPlane");
        let last = &stored["status"]["lastOperation"];
        if stored["metadata"]["annotations"].get(OPERATION).is_none()
            && last["type"] == op_type
            && last["state"] == "Succeeded"
        {
            return stored;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{ns}: no successful {op_type} after 120 s: {:#}\nscion's log:\n{}",
            stored["status"],
            log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The `ControlPlaneHealthy` condition of a stored ControlPlane.
pub fn healthy_condition(cp: &Value) -> Option<Value> {
    cp["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "ControlPlaneHealthy")
        .cloned()
}

/// Every object of `kind` in `namespace`.
pub async fn list(api: &ApiServer, api_version: &str, kind: &str, namespace: &str) -> Vec<Value> {
    api.api(api_version, kind, Some(namespace))
        .await
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|o| serde_json::to_value(o).unwrap())
        .collect()
}

/// The name of a stored object.
pub fn name_of(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or_default()
}

/// The objects in a ManagedResource Secret (plain or Brotli keys).
pub fn secret_objects(secret: &Value) -> Vec<Value> {
    let data = scion::managedresources::compare::secret_data(secret).unwrap();
    scion::managedresources::decode(&data).unwrap()
}

/// One object of a ManagedResource as gardener-resource-manager applied it.
#[derive(Debug, Clone)]
pub struct Applied {
    pub managed_resource: String,
    /// `seed` or `shoot`: the API server it went to.
    pub target: &'static str,
    /// What the ManagedResource asks for (with GRM's injected labels).
    pub desired: Value,
    /// What the API server stored.
    pub stored: Value,
}

/// gardener-resource-manager, played by the test: seed-class
/// ManagedResources go to the seed API server, the others to the shoot's.
pub struct Grm<'a> {
    pub seed: &'a ApiServer,
    /// `None`: the shoot objects are not applied (a test that only needs
    /// the ManagedResources' status).
    pub shoot: Option<&'a ApiServer>,
}

impl Grm<'_> {
    /// The ManagedResources of `namespace`.
    pub async fn managed_resources(&self, namespace: &str) -> Vec<Value> {
        list(self.seed, MR_API, "ManagedResource", namespace).await
    }

    /// The objects a ManagedResource carries, with its `injectLabels`.
    pub async fn objects(&self, mr: &Value) -> Vec<Value> {
        let ns = mr["metadata"]["namespace"].as_str().unwrap();
        let mut objects = Vec::new();
        for reference in mr["spec"]["secretRefs"].as_array().unwrap() {
            let name = reference["name"].as_str().unwrap();
            let secret = self
                .seed
                .get("v1", "Secret", Some(ns), name)
                .await
                .unwrap_or_else(|| panic!("{ns}: the Secret {name} of {}", mr["metadata"]["name"]));
            objects.extend(secret_objects(&secret));
        }
        if let Some(labels) = mr["spec"]["injectLabels"].as_object() {
            for object in &mut objects {
                for (k, v) in labels {
                    object["metadata"]["labels"][k] = v.clone();
                }
            }
        }
        objects
    }

    fn target(&self, mr: &Value) -> Option<(&'static str, &ApiServer)> {
        if mr["spec"]["class"] == "seed" {
            Some(("seed", self.seed))
        } else {
            self.shoot.map(|s| ("shoot", s))
        }
    }

    /// Take over every ManagedResource of `namespace` as GRM does: its
    /// finalizer; every object server-side applied to the API server it is
    /// meant for (each must be accepted); status applied and healthy at the
    /// current generation. Returns what was applied.
    pub async fn apply(&self, namespace: &str) -> Vec<Applied> {
        let mut applied = Vec::new();
        for mr in self.managed_resources(namespace).await {
            let name = mr["metadata"]["name"].as_str().unwrap().to_owned();
            if mr["metadata"]["deletionTimestamp"].is_string() {
                continue;
            }
            let mut resources = Vec::new();
            if let Some((target, api)) = self.target(&mr) {
                for desired in self.objects(&mr).await {
                    let meta = &desired["metadata"];
                    resources.push(json!({
                        "apiVersion": desired["apiVersion"], "kind": desired["kind"],
                        "name": meta["name"], "namespace": meta["namespace"],
                    }));
                    let stored = api.apply(&desired, "gardener-resource-manager").await.unwrap_or_else(|e| {
                        panic!(
                            "{namespace}: the {target} API server rejects {} {} of ManagedResource {name}: {e}",
                            desired["kind"], desired["metadata"]["name"]
                        )
                    });
                    applied.push(Applied {
                        managed_resource: name.clone(),
                        target,
                        desired,
                        stored,
                    });
                }
            }
            self.status(&mr, true, Some(resources)).await;
        }
        applied
    }

    /// GRM's finalizer on `mr` and its conditions: applied, and healthy or
    /// not, observed at the current generation.
    pub async fn report(&self, mr: &Value, healthy: bool) {
        self.status(mr, healthy, None).await;
    }

    /// [`Grm::report`], and with `resources` the objects applied
    /// (`status.resources`, what GRM deletes when the ManagedResource goes).
    async fn status(&self, mr: &Value, healthy: bool, resources: Option<Vec<Value>>) {
        let ns = mr["metadata"]["namespace"].as_str().unwrap();
        let name = mr["metadata"]["name"].as_str().unwrap();
        let api = self.seed.api(MR_API, "ManagedResource", Some(ns)).await;
        let current = api.get(name).await.unwrap();
        let mut finalizers = current.metadata.finalizers.clone().unwrap_or_default();
        if !finalizers.iter().any(|f| f == GRM_FINALIZER) {
            finalizers.push(GRM_FINALIZER.to_owned());
            api.patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"finalizers": finalizers}})),
            )
            .await
            .unwrap();
        }
        let now = scion::controller::extension::status::now_rfc3339();
        let condition = |type_: &str, status: &str, reason: &str| {
            json!({"type": type_, "status": status, "reason": reason, "message": reason,
                   "lastTransitionTime": now, "lastUpdateTime": now})
        };
        let health = if healthy { "True" } else { "False" };
        let mut status = json!({"status": {
            "observedGeneration": current.metadata.generation,
            "conditions": [
                condition("ResourcesApplied", "True", "ApplySucceeded"),
                condition("ResourcesHealthy", health, if healthy { "ResourcesHealthy" } else { "ResourcesUnhealthy" }),
                condition("ResourcesProgressing", "False", "ResourcesRolledOut"),
            ],
        }});
        if let Some(resources) = resources {
            status["status"]["resources"] = Value::Array(resources);
        }
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(status))
            .await
            .unwrap();
    }

    /// Finish the deletion of every ManagedResource of `namespace` that is
    /// being deleted: the objects it applied (`status.resources`: its
    /// Secret may be gone already, as Gardener deletes it with the
    /// ManagedResource) deleted from their API server unless `keepObjects`,
    /// then GRM's finalizer removed. Returns how many.
    pub async fn release_deleted(&self, namespace: &str) -> usize {
        let mut released = 0;
        for mr in self.managed_resources(namespace).await {
            if !mr["metadata"]["deletionTimestamp"].is_string() {
                continue;
            }
            if mr["spec"]["keepObjects"] != true
                && let Some((_, api)) = self.target(&mr)
            {
                for object in mr["status"]["resources"].as_array().into_iter().flatten() {
                    let mut object = object.clone();
                    object["metadata"] =
                        json!({"name": object["name"], "namespace": object["namespace"]});
                    delete_object(api, &object).await;
                }
            }
            let name = mr["metadata"]["name"].as_str().unwrap();
            let finalizers: Vec<&Value> = mr["metadata"]["finalizers"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|f| *f != GRM_FINALIZER)
                .collect();
            let api = self
                .seed
                .api(MR_API, "ManagedResource", Some(namespace))
                .await;
            match api
                .patch(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"finalizers": finalizers}})),
                )
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => panic!("{namespace}: release {name}: {e}"),
            }
            released += 1;
        }
        released
    }
}

/// Every Deployment of `namespace` on the seed (the CCM, the CSI
/// controllers and the extras the seed ManagedResource carries) reported as
/// a Deployment controller would: observed at its generation, available or
/// not. One list and one status patch per Deployment.
pub async fn report_deployments(api: &ApiServer, namespace: &str, available: bool) {
    let deployments = api.api("apps/v1", "Deployment", Some(namespace)).await;
    let listed = deployments
        .list(&Default::default())
        .await
        .unwrap_or_else(|e| panic!("{namespace}: the Deployments: {e}"));
    assert!(
        listed
            .items
            .iter()
            .any(|d| d.metadata.name.as_deref() == Some("cloud-controller-manager")),
        "{namespace}: no CCM Deployment"
    );
    let now = scion::controller::extension::status::now_rfc3339();
    let (status, reason) = if available {
        ("True", "MinimumReplicasAvailable")
    } else {
        ("False", "MinimumReplicasUnavailable")
    };
    let replicas = i64::from(available);
    for current in listed.items {
        let body = json!({"status": {
            "observedGeneration": current.metadata.generation,
            "replicas": 1, "updatedReplicas": 1, "readyReplicas": replicas, "availableReplicas": replicas,
            "conditions": [
                {"type": "Available", "status": status, "reason": reason, "message": reason,
                 "lastTransitionTime": now, "lastUpdateTime": now},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                 "message": "rolled out", "lastTransitionTime": now, "lastUpdateTime": now},
            ],
        }});
        let name = current.metadata.name.as_deref().unwrap();
        deployments
            .patch_status(name, &PatchParams::default(), &Patch::Merge(body))
            .await
            .unwrap();
    }
}

/// One request in the audit log.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Request {
    pub verb: String,
    /// `resource` or `resource/subresource`.
    pub resource: String,
    pub namespace: String,
    pub name: String,
    pub code: i64,
}

impl std::fmt::Display for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} {}/{} ({})",
            self.verb, self.resource, self.namespace, self.name, self.code
        )
    }
}

/// The audit log position now: [`requests`] from here on.
pub fn mark(api: &ApiServer) -> usize {
    api.audit_events().len()
}

/// The completed requests of `user` after audit position `since`.
pub fn requests(api: &ApiServer, user: &str, since: usize) -> Vec<Request> {
    api.audit_events()
        .into_iter()
        .skip(since)
        .filter(|e| e["user"]["username"] == user && e["stage"] == "ResponseComplete")
        .map(|e| {
            let r = &e["objectRef"];
            let mut resource = r["resource"].as_str().unwrap_or_default().to_owned();
            if let Some(sub) = r["subresource"].as_str() {
                resource = format!("{resource}/{sub}");
            }
            Request {
                verb: e["verb"].as_str().unwrap_or_default().to_owned(),
                resource,
                namespace: r["namespace"].as_str().unwrap_or_default().to_owned(),
                name: r["name"].as_str().unwrap_or_default().to_owned(),
                code: e["responseStatus"]["code"].as_i64().unwrap_or_default(),
            }
        })
        .collect()
}

/// The writes among `requests`.
pub fn writes(requests: &[Request]) -> Vec<&Request> {
    requests
        .iter()
        .filter(|r| {
            matches!(
                r.verb.as_str(),
                "create" | "update" | "patch" | "delete" | "deletecollection"
            )
        })
        .collect()
}

/// Delete an object by its manifest (absent is fine).
pub async fn delete_object(api: &ApiServer, object: &Value) {
    api.delete(
        object["apiVersion"].as_str().unwrap(),
        object["kind"].as_str().unwrap(),
        object["metadata"]["namespace"].as_str(),
        object["metadata"]["name"].as_str().unwrap(),
    )
    .await;
}

/// Brotli-compress `text` as Gardener writes `data.yaml.br`.
pub fn brotli(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut writer = brotli::CompressorWriter::new(&mut out, 4096, 11, 22);
    std::io::Write::write_all(&mut writer, text).unwrap();
    drop(writer);
    out
}

/// base64 of `bytes`, as a Secret's data carries it.
pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Wait until `api` shows the `ControlPlaneHealthy` condition of the
/// ControlPlane `namespace/name` with `status`; the condition.
pub async fn wait_healthy(
    api: &ApiServer,
    namespace: &str,
    name: &str,
    status: &str,
    log: impl Fn() -> String,
) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    loop {
        let cp = controlplane(api, namespace, name)
            .await
            .expect("the ControlPlane");
        if let Some(c) = healthy_condition(&cp)
            && c["status"] == status
        {
            return c;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{namespace}: ControlPlaneHealthy is not {status} after 90 s: {:#}\nscion's log:\n{}",
            cp["status"],
            log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Where `defaults::apply(desired)` — the table of the API server's
/// defaults `scion check` compares with — differs from what the API server
/// stored for `desired`, as JSON patch operations from the table's answer to
/// the stored object; empty when the table is right. Not compared: what the
/// server populates per object (`defaults::SERVER_METADATA`, `status`, the
/// namespace) and what it allocates rather than defaults when the object
/// leaves it out (a Service's `clusterIP`, `clusterIPs`, `ipFamilies`,
/// `ipFamilyPolicy`, node ports; a DaemonSet's `deprecated.daemonset.template.generation`
/// annotation; a Job's generated selector and `controller-uid` labels).
pub fn defaults_mismatch(desired: &Value, stored: &Value) -> Vec<String> {
    let mut want = desired.clone();
    scion::gardener::defaults::apply(&mut want);
    let mut have = stored.clone();
    for object in [&mut want, &mut have] {
        let map = object.as_object_mut().unwrap();
        map.remove("status");
        let meta = map["metadata"].as_object_mut().unwrap();
        for field in scion::gardener::defaults::SERVER_METADATA {
            meta.remove(field);
        }
        meta.remove("namespace");
    }
    match desired["kind"].as_str().unwrap_or_default() {
        "Service" => {
            for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
                if desired["spec"].get(field).is_none()
                    && let Some(spec) = have["spec"].as_object_mut()
                {
                    spec.remove(field);
                }
            }
            // a NodePort or LoadBalancer Service's node ports are allocated
            let wanted = desired["spec"]["ports"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if let Some(ports) = have["spec"]["ports"].as_array_mut() {
                for (port, want) in ports.iter_mut().zip(&wanted) {
                    if want.get("nodePort").is_none()
                        && let Some(port) = port.as_object_mut()
                    {
                        port.remove("nodePort");
                    }
                }
            }
        }
        // without a selector of its own, a Job's is generated from its uid
        "Job" if desired["spec"].get("selector").is_none() => {
            if let Some(spec) = have["spec"].as_object_mut() {
                spec.remove("selector");
            }
            for path in ["/metadata/labels", "/spec/template/metadata/labels"] {
                if let Some(labels) = have.pointer_mut(path).and_then(Value::as_object_mut) {
                    labels.remove("controller-uid");
                    labels.remove("batch.kubernetes.io/controller-uid");
                }
            }
        }
        "DaemonSet" => {
            let meta = have["metadata"].as_object_mut().unwrap();
            if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
                annotations.remove("deprecated.daemonset.template.generation");
                if annotations.is_empty() && desired["metadata"].get("annotations").is_none() {
                    meta.remove("annotations");
                }
            }
        }
        _ => {}
    }
    scion::patch::diff(&want, &have)
        .0
        .iter()
        .map(|op| serde_json::to_string(op).unwrap())
        .collect()
}

/// The sum of every sample of the metric family `name` in a `/metrics` text.
pub fn metric_sum(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// scion's log lines above info.
pub fn warnings(scion: &Scion) -> Vec<String> {
    scion
        .log_lines()
        .into_iter()
        .filter(|l| l["level"] != "info" && l["level"] != "debug")
        .map(|l| l.to_string())
        .collect()
}

/// The read-only ClusterRole `scion check --print-rbac` prints for `provider`.
pub async fn printed_check_role(provider: &str) -> Value {
    let out = tokio::process::Command::new(super::scion::scion_binary())
        .args(["check", "--print-rbac", "--provider", provider])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let role = yaml_documents(&String::from_utf8(out.stdout).unwrap())
        .pop()
        .expect("a ClusterRole");
    assert_eq!(role["kind"], "ClusterRole");
    role
}

/// The kubeconfig of a ServiceAccount bound to the read-only ClusterRole
/// `scion check --print-rbac` prints for `provider`, and its user name.
pub async fn check_role(api: &ApiServer, provider: &str) -> (PathBuf, String) {
    let role = printed_check_role(provider).await;
    bind(api, &role, &format!("auditor-{provider}")).await
}

/// `role` (a ClusterRole) bound to a new ServiceAccount `account` of
/// namespace `auditors`: the kubeconfig of its token, and its user name.
pub async fn bind(api: &ApiServer, role: &Value, account: &str) -> (PathBuf, String) {
    api.apply(role, "operator").await.unwrap();
    let ns = "auditors";
    api.namespace(ns, &[]).await;
    api.apply(
        &json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": account, "namespace": ns}}),
        "operator",
    )
    .await
    .unwrap();
    api.apply(
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": account},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role["metadata"]["name"]},
                "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": ns}]}),
        "operator",
    )
    .await
    .unwrap();
    let token = api.service_account_token(ns, account).await;
    (
        api.kubeconfig_with_token(&format!("{account}.kubeconfig"), &token),
        format!("system:serviceaccount:{ns}:{account}"),
    )
}

/// `scion check -o json` for `provider`: exit code, report, stderr.
pub async fn scion_check(
    provider: &str,
    kubeconfig: &std::path::Path,
    args: &[&str],
) -> (i32, Value, String) {
    let out = tokio::process::Command::new(super::scion::scion_binary())
        .args([
            "check",
            "--provider",
            provider,
            "-o",
            "json",
            "-q",
            "--kubeconfig",
        ])
        .arg(kubeconfig)
        .args(args)
        .env_remove("KUBECONFIG")
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), report, stderr)
}

/// The findings of a report that do not match.
pub fn not_matching(report: &Value) -> Vec<&Value> {
    report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["result"] != "matches")
        .collect()
}

/// The webhook configuration of `provider` points at this scion.
pub async fn wait_registered(api: &ApiServer, provider: &str, scion: &Scion) {
    let url = format!("https://{}", scion.webhook);
    wait_registered_at(api, &format!("scion-provider-{provider}"), &url, None).await;
}

/// Wait until the webhook configuration `name` has its three webhooks at
/// `url` (url mode) with a CA bundle (`ca_bundle`, base64, if given).
pub async fn wait_registered_at(api: &ApiServer, name: &str, url: &str, ca_bundle: Option<&str>) {
    eventually(
        &format!("{name} registered at {url}"),
        Duration::from_secs(90),
        || async {
            let config = api
                .get(
                    "admissionregistration.k8s.io/v1",
                    "MutatingWebhookConfiguration",
                    None,
                    name,
                )
                .await?;
            let hooks = config["webhooks"].as_array()?;
            (hooks.len() == 3
                && hooks.iter().all(|w| {
                    let bundle = &w["clientConfig"]["caBundle"];
                    ca_bundle.map_or(bundle.is_string(), |ca| bundle == ca)
                        && w["clientConfig"]["url"]
                            .as_str()
                            .is_some_and(|u| u.starts_with(url))
                }))
            .then_some(())
        },
    )
    .await;
}

/// A shoot of `provider` in `namespace` as far as scion's work reaches, on a
/// seed where `scion` runs: gardenlet prepares the namespace, writes the
/// control-plane objects through scion's webhooks (registered first) and
/// asks for the ControlPlane's reconcile; gardener-resource-manager applies
/// the ManagedResources and a Deployment controller reports the CCM
/// available; `ControlPlaneHealthy` is `True`. The stored ControlPlane and
/// what GRM applied.
pub async fn reconciled_shoot(
    grm: &Grm<'_>,
    provider: &str,
    namespace: &str,
    scion: &Scion,
) -> (Value, Vec<Applied>) {
    let seed = grm.seed;
    // registered first: the last scion's registration may still point at
    // a process that is gone, and its failure policy rejects the writes
    wait_registered(seed, provider, scion).await;
    let cp = prepare_shoot(seed, provider, namespace).await;
    shoot_kubeconfig(seed, namespace, grm.shoot.unwrap_or(seed)).await;
    for object in gardenlet_objects(provider, namespace) {
        if object["kind"] != "Secret" {
            seed.create(&object).await.unwrap_or_else(|e| {
                panic!(
                    "{provider}: gardenlet's {}: {e}\n{}",
                    object["kind"],
                    scion.log()
                )
            });
        }
    }
    request(seed, &cp, "reconcile").await;
    let stored = wait_succeeded(seed, &cp, "Create", || scion.log()).await;
    let applied = grm.apply(namespace).await;
    report_deployments(seed, namespace, true).await;
    let name = cp["metadata"]["name"].as_str().unwrap();
    let condition = wait_healthy(seed, namespace, name, "True", || scion.log()).await;
    assert_eq!(
        condition["message"], "All health checks successful",
        "{provider}"
    );
    (stored, applied)
}
