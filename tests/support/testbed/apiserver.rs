//! etcd and kube-apiserver as processes on 127.0.0.1, and what a test does
//! with an API server: clients (admin or a ServiceAccount token), server-side
//! apply of any object, reads, CRDs, kubectl, helm, the audit log.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use kube::api::{
    Api, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use super::certs::Pki;
use super::process::{Proc, free_port};
use super::{Binaries, eventually};

/// How long a start may take on a loaded 2-core machine before the test
/// fails. A warm start takes seconds; this bound is for the worst case.
pub const START_TIMEOUT: Duration = Duration::from_secs(180);

/// One etcd serving every API server of a test bed (each under its own
/// `--etcd-prefix`). A fault test stops it ([`Etcd::stop`]) and starts it
/// again on the same ports and data ([`Etcd::start_again`]).
pub struct Etcd {
    proc: Mutex<Proc>,
    pub url: String,
    bins: &'static Binaries,
    /// `(client, peer)` ports.
    ports: (u16, u16),
    data: PathBuf,
    log: PathBuf,
}

impl Etcd {
    pub fn start(bins: &'static Binaries, dir: &Path) -> Etcd {
        for attempt in 1..=3 {
            let ports = (free_port(), free_port());
            let data = dir.join(format!("etcd-data-{attempt}"));
            let log = dir.join("etcd.log");
            let mut proc = Proc::spawn("etcd", Self::command(bins, ports, &data), &log);
            match Self::wait_healthy(&mut proc, ports.0, attempt < 3) {
                true => {
                    return Etcd {
                        proc: Mutex::new(proc),
                        url: format!("http://127.0.0.1:{}", ports.0),
                        bins,
                        ports,
                        data,
                        log,
                    };
                }
                false => continue,
            }
        }
        unreachable!("etcd start loop returns or panics")
    }

    fn command(bins: &Binaries, (client, peer): (u16, u16), data: &Path) -> Command {
        let url = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let mut cmd = Command::new(bins.etcd());
        cmd.arg("--name=testbed")
            .arg(format!("--data-dir={}", data.display()))
            .arg(format!("--listen-client-urls={url}"))
            .arg(format!("--advertise-client-urls={url}"))
            .arg(format!("--listen-peer-urls={peer_url}"))
            .arg(format!("--initial-advertise-peer-urls={peer_url}"))
            .arg(format!("--initial-cluster=testbed={peer_url}"))
            // a test's data need not survive a power cut
            .arg("--unsafe-no-fsync")
            .arg("--log-level=warn");
        cmd
    }

    /// Wait until `/health` answers; `false` when the port was taken and
    /// `retry` allows another attempt (panics otherwise).
    fn wait_healthy(proc: &mut Proc, client: u16, retry: bool) -> bool {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if proc.exited().is_some() {
                if proc.log_tail(4000).contains("address already in use") && retry {
                    return false;
                }
                proc.assert_running();
            }
            if http_get_ok(&format!("127.0.0.1:{client}"), "/health") {
                return true;
            }
            if Instant::now() > deadline {
                panic!(
                    "etcd not healthy after {START_TIMEOUT:?}; its log:\n{}",
                    proc.log_tail(4000)
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stop etcd now (API servers using it fail from then on).
    pub fn stop(&self) {
        self.proc.lock().unwrap().stop(Duration::from_secs(10));
    }

    /// Start etcd again after [`Etcd::stop`]: same ports, same data, so the
    /// API servers reconnect by themselves. Waits until it is healthy.
    pub fn start_again(&self) {
        let mut proc = self.proc.lock().unwrap();
        proc.stop(Duration::from_secs(10));
        *proc = Proc::spawn(
            "etcd",
            Self::command(self.bins, self.ports, &self.data),
            &self.log,
        );
        Self::wait_healthy(&mut proc, self.ports.0, false);
    }
}

/// A plain-HTTP GET on loopback that answers 200 (etcd's /health).
fn http_get_ok(addr: &str, path: &str) -> bool {
    use std::io::{Read as _, Write as _};
    let Ok(mut stream) = std::net::TcpStream::connect(addr) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    if write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .is_err()
    {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200")
}

/// Options of one API server.
#[derive(Debug, Clone)]
pub struct ApiServerOptions {
    /// A name for logs and the etcd prefix (`seed`, `shoot`).
    pub name: String,
    /// Write an audit log of every request (Metadata level) to
    /// [`ApiServer::audit_events`]. Off for benchmarks.
    pub audit: bool,
    /// Run a kube-controller-manager with its garbage collector and
    /// namespace controller beside the API server: owner references and
    /// namespace deletion then work as on a seed (no other controller runs;
    /// no Pod is ever scheduled).
    pub controller_manager: bool,
    /// The controllers that kube-controller-manager runs (its
    /// `--controllers`), when [`ApiServerOptions::controller_manager`] is
    /// on: by default the garbage collector and the namespace controller; a
    /// shoot test adds `persistentvolume-binder` to bind claims to volumes.
    pub controllers: Vec<String>,
    /// More kube-controller-manager flags.
    pub controller_manager_args: Vec<String>,
    /// More kube-apiserver flags.
    pub extra_args: Vec<String>,
}

impl ApiServerOptions {
    pub fn named(name: &str) -> Self {
        ApiServerOptions {
            name: name.to_owned(),
            audit: true,
            controller_manager: false,
            controllers: vec!["garbagecollector".into(), "namespace".into()],
            controller_manager_args: Vec::new(),
            extra_args: Vec::new(),
        }
    }

    /// A shoot's API server, with the flags of Gardener's shoot
    /// kube-apiserver that the control-plane components need: privileged
    /// containers allowed (the CSI node plugins are privileged), and the
    /// MutatingAdmissionPolicy API (the calico policy of aws and gcp).
    pub fn shoot(name: &str) -> Self {
        ApiServerOptions {
            extra_args: vec![
                "--allow-privileged=true".into(),
                "--feature-gates=MutatingAdmissionPolicy=true".into(),
                "--runtime-config=admissionregistration.k8s.io/v1beta1=true".into(),
            ],
            ..ApiServerOptions::named(name)
        }
    }
}

/// A running kube-apiserver with an admin client.
pub struct ApiServer {
    pub name: String,
    pub dir: PathBuf,
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    pub ca_pem: String,
    /// Admin kubeconfig (client certificate in `system:masters`).
    pub kubeconfig: PathBuf,
    audit_log: Option<PathBuf>,
    client: kube::Client,
    resources: Mutex<HashMap<String, ApiResource>>,
    bins: &'static Binaries,
    /// The kube-apiserver flags, for [`ApiServer::start_again`].
    args: Vec<String>,
    // stopped before the API server
    controller_manager: Option<Proc>,
    proc: Proc,
    // dropped after the API server
    _etcd: Arc<Etcd>,
}

const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n";

/// Why an API server did not become ready.
enum NotReady {
    /// It exited because its port was taken (another attempt may do).
    PortTaken,
    /// It exited otherwise or did not get ready in time.
    Failed(String),
}

impl ApiServer {
    /// Start an API server on `etcd` with files under `dir` (which must exist).
    pub async fn start(
        bins: &'static Binaries,
        etcd: Arc<Etcd>,
        dir: &Path,
        options: ApiServerOptions,
    ) -> ApiServer {
        let dir = dir.join(&options.name);
        std::fs::create_dir_all(&dir).unwrap();
        let pki = Pki::generate(&dir);
        let audit_log = options.audit.then(|| dir.join("audit.log"));
        if audit_log.is_some() {
            std::fs::write(dir.join("audit-policy.yaml"), AUDIT_POLICY).unwrap();
        }
        for attempt in 1..=3 {
            let port = free_port();
            let url = format!("https://127.0.0.1:{port}");
            let mut args = vec![
                format!("--etcd-servers={}", etcd.url),
                format!("--etcd-prefix=/{}", options.name),
                "--bind-address=127.0.0.1".into(),
                "--advertise-address=127.0.0.1".into(),
                format!("--secure-port={port}"),
                format!("--tls-cert-file={}", pki.server_cert.display()),
                format!("--tls-private-key-file={}", pki.server_key.display()),
                format!("--client-ca-file={}", pki.ca_cert.display()),
                "--authorization-mode=Node,RBAC".into(),
                // the default admission plugins (MutatingAdmissionWebhook
                // among them) stay on; nothing is disabled
                "--service-account-issuer=https://kubernetes.default.svc".into(),
                format!(
                    "--service-account-key-file={}",
                    pki.service_account_public_key.display()
                ),
                format!(
                    "--service-account-signing-key-file={}",
                    pki.service_account_key.display()
                ),
                "--service-cluster-ip-range=10.0.0.0/24".into(),
                // no kubernetes Service endpoint for a loopback address
                "--endpoint-reconciler-type=none".into(),
                "--profiling=false".into(),
                "--v=1".into(),
            ];
            args.extend(options.extra_args.iter().cloned());
            if let Some(log) = &audit_log {
                args.extend([
                    format!(
                        "--audit-policy-file={}",
                        dir.join("audit-policy.yaml").display()
                    ),
                    format!("--audit-log-path={}", log.display()),
                    "--audit-log-maxsize=0".into(),
                ]);
            }
            let mut proc = Self::spawn(bins, &options.name, &dir, &args);
            let kubeconfig = dir.join("admin.kubeconfig");
            std::fs::write(
                &kubeconfig,
                kubeconfig_text(
                    &url,
                    &pki.ca_pem,
                    json!({
                        "client-certificate-data": STANDARD.encode(&pki.admin_cert_pem),
                        "client-key-data": STANDARD.encode(&pki.admin_key_pem),
                    }),
                ),
            )
            .unwrap();
            let client = client_from(&kubeconfig).await;
            match Self::wait_ready(&mut proc, &client, attempt < 3).await {
                Ok(()) => {}
                Err(NotReady::PortTaken) => continue,
                Err(NotReady::Failed(why)) => panic!("kube-apiserver ({}) {why}", options.name),
            }
            let controller_manager = options.controller_manager.then(|| {
                let mut cmd = Command::new(bins.kube_controller_manager());
                cmd.arg(format!("--kubeconfig={}", kubeconfig.display()))
                    .arg(format!("--controllers={}", options.controllers.join(",")))
                    .arg("--leader-elect=false")
                    .arg("--secure-port=0")
                    .arg("--v=1")
                    .args(&options.controller_manager_args);
                Proc::spawn(
                    &format!("kube-controller-manager ({})", options.name),
                    cmd,
                    &dir.join("kube-controller-manager.log"),
                )
            });
            return ApiServer {
                controller_manager,
                name: options.name.clone(),
                dir: dir.clone(),
                url,
                ca_pem: pki.ca_pem.clone(),
                kubeconfig,
                audit_log,
                client,
                resources: Mutex::new(HashMap::new()),
                bins,
                args,
                proc,
                _etcd: etcd,
            };
        }
        unreachable!("API server start loop returns or panics")
    }

    fn spawn(bins: &Binaries, name: &str, dir: &Path, args: &[String]) -> Proc {
        let mut cmd = Command::new(bins.kube_apiserver());
        cmd.args(args);
        Proc::spawn(
            &format!("kube-apiserver ({name})"),
            cmd,
            &dir.join("kube-apiserver.log"),
        )
    }

    /// Poll `/readyz` until it says `ok`.
    async fn wait_ready(
        proc: &mut Proc,
        client: &kube::Client,
        may_retry: bool,
    ) -> Result<(), NotReady> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = proc.exited() {
                if proc.log_tail(6000).contains("address already in use") && may_retry {
                    return Err(NotReady::PortTaken);
                }
                return Err(NotReady::Failed(format!(
                    "exited ({status}); the end of its log:\n{}",
                    proc.log_tail(6000)
                )));
            }
            let req = http::Request::get("/readyz").body(Vec::new()).unwrap();
            let last = match client.request_text(req).await {
                Ok(text) if text.trim() == "ok" => return Ok(()),
                Ok(text) => text,
                Err(e) => e.to_string(),
            };
            if Instant::now() > deadline {
                return Err(NotReady::Failed(format!(
                    "not ready after {START_TIMEOUT:?} (last answer: {last}); its log:\n{}",
                    proc.log_tail(6000)
                )));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Stop the API server: SIGTERM (its graceful shutdown: it stops
    /// listening at once and drains), SIGKILL after 10 s (seen: a test bed
    /// API server that had stopped listening took a minute to exit).
    /// Clients see connection errors until [`ApiServer::start_again`].
    pub fn stop(&mut self) {
        self.proc.stop(Duration::from_secs(10));
    }

    /// Start the stopped API server again: same port, certificates, flags
    /// and etcd prefix, so every client reconnects by itself. Waits until
    /// `/readyz` says `ok`.
    pub async fn start_again(&mut self) {
        self.proc.stop(Duration::from_secs(10));
        self.proc = Self::spawn(self.bins, &self.name, &self.dir, &self.args);
        // without a retry, a taken port is reported as a failure
        if let Err(NotReady::Failed(why)) =
            Self::wait_ready(&mut self.proc, &self.client, false).await
        {
            panic!("kube-apiserver ({}) after a restart {why}", self.name);
        }
    }

    /// The admin client.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The last bytes of the API server's log (for failure messages).
    pub fn log_tail(&mut self) -> String {
        self.proc.log_tail(6000)
    }

    /// A kubeconfig that authenticates with `token`, written into the test
    /// bed's directory.
    pub fn kubeconfig_with_token(&self, file_name: &str, token: &str) -> PathBuf {
        let path = self.dir.join(file_name);
        std::fs::write(
            &path,
            kubeconfig_text(&self.url, &self.ca_pem, json!({"token": token})),
        )
        .unwrap();
        path
    }

    /// A token of ServiceAccount `namespace/name` from the TokenRequest API,
    /// valid for an hour.
    pub async fn service_account_token(&self, namespace: &str, name: &str) -> String {
        use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
        use k8s_openapi::api::core::v1::ServiceAccount;
        let api: Api<ServiceAccount> = Api::namespaced(self.client(), namespace);
        let request = TokenRequest {
            spec: TokenRequestSpec {
                audiences: vec![],
                expiration_seconds: Some(3600),
                bound_object_ref: None,
            },
            ..TokenRequest::default()
        };
        api.create_token_request(name, &PostParams::default(), &request)
            .await
            .unwrap_or_else(|e| panic!("TokenRequest for {namespace}/{name}: {e}"))
            .status
            .expect("a TokenRequest answer has a status")
            .token
    }

    /// The API of the kind of `api_version`/`kind`, namespaced if
    /// `namespace` is given (discovered once per kind).
    pub async fn api(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
    ) -> Api<DynamicObject> {
        let key = format!("{api_version}/{kind}");
        let cached = self.resources.lock().unwrap().get(&key).cloned();
        let resource = match cached {
            Some(r) => r,
            None => {
                let (group, version) = match api_version.split_once('/') {
                    Some((g, v)) => (g, v),
                    None => ("", api_version),
                };
                let gvk = GroupVersionKind::gvk(group, version, kind);
                let (resource, _) = kube::discovery::pinned_kind(&self.client, &gvk)
                    .await
                    .unwrap_or_else(|e| panic!("the API server does not serve {key}: {e}"));
                self.resources.lock().unwrap().insert(key, resource.clone());
                resource
            }
        };
        match namespace {
            Some(ns) => Api::namespaced_with(self.client(), ns, &resource),
            None => Api::all_with(self.client(), &resource),
        }
    }

    async fn api_of(&self, object: &Value) -> (Api<DynamicObject>, String) {
        let api_version = object["apiVersion"]
            .as_str()
            .expect("object has apiVersion");
        let kind = object["kind"].as_str().expect("object has kind");
        let name = object["metadata"]["name"]
            .as_str()
            .expect("object has metadata.name")
            .to_owned();
        let ns = object["metadata"]["namespace"].as_str();
        (self.api(api_version, kind, ns).await, name)
    }

    /// Server-side apply `object` as `manager` (forced), as gardenlet writes.
    pub async fn apply(&self, object: &Value, manager: &str) -> Result<Value, kube::Error> {
        let (api, name) = self.api_of(object).await;
        let params = PatchParams::apply(manager).force();
        api.patch(&name, &params, &Patch::Apply(object))
            .await
            .map(|o| serde_json::to_value(o).unwrap())
    }

    /// Create `object` (POST).
    pub async fn create(&self, object: &Value) -> Result<Value, kube::Error> {
        let (api, _) = self.api_of(object).await;
        let obj: DynamicObject = serde_json::from_value(object.clone()).unwrap();
        api.create(&PostParams::default(), &obj)
            .await
            .map(|o| serde_json::to_value(o).unwrap())
    }

    /// Replace `object` (PUT) over the stored one, whatever its
    /// resourceVersion: the whole object as sent, as gardenlet's update does.
    pub async fn update(&self, object: &Value) -> Result<Value, kube::Error> {
        let (api, name) = self.api_of(object).await;
        let current = api.get(&name).await?;
        let mut obj: DynamicObject = serde_json::from_value(object.clone()).unwrap();
        obj.metadata.resource_version = current.metadata.resource_version;
        api.replace(&name, &PostParams::default(), &obj)
            .await
            .map(|o| serde_json::to_value(o).unwrap())
    }

    /// The stored object, `None` if absent.
    pub async fn get(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        self.api(api_version, kind, namespace)
            .await
            .get_opt(name)
            .await
            .unwrap_or_else(|e| panic!("get {kind} {name}: {e}"))
            .map(|o| serde_json::to_value(o).unwrap())
    }

    /// Delete an object; absent is fine.
    pub async fn delete(&self, api_version: &str, kind: &str, namespace: Option<&str>, name: &str) {
        match self
            .api(api_version, kind, namespace)
            .await
            .delete(name, &DeleteParams::default())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => panic!("delete {kind} {name}: {e}"),
        }
    }

    /// Create (or update) a Namespace with `labels`.
    pub async fn namespace(&self, name: &str, labels: &[(&str, &str)]) -> Value {
        let labels: serde_json::Map<String, Value> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect();
        self.apply(
            &json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": name, "labels": labels}}),
            "testbed",
        )
        .await
        .unwrap_or_else(|e| panic!("namespace {name}: {e}"))
    }

    /// Apply every document of a YAML file or stream (server-side, manager
    /// `testbed`); documents without `metadata.namespace` that are namespaced
    /// go to `default_namespace`.
    pub async fn apply_yaml(&self, text: &str, default_namespace: Option<&str>) -> Vec<Value> {
        let mut out = Vec::new();
        for doc in yaml_documents(text) {
            let mut doc = doc;
            if let Some(ns) = default_namespace
                && doc["metadata"].get("namespace").is_none()
            {
                let (api, _) = self.api_of(&doc).await;
                if api.resource_url().contains("/namespaces/") {
                    doc["metadata"]["namespace"] = json!(ns);
                }
            }
            out.push(
                self.apply(&doc, "testbed")
                    .await
                    .unwrap_or_else(|e| panic!("apply {}: {e}", doc["metadata"]["name"])),
            );
        }
        out
    }

    /// Install every CRD of `manifests/crds/` and wait until each is
    /// established (served).
    pub async fn install_crds(&self) {
        let dir = super::root().join("manifests/crds");
        let mut names = Vec::new();
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for crd in self.apply_yaml(&text, None).await {
                names.push(crd["metadata"]["name"].as_str().unwrap().to_owned());
            }
        }
        for name in names {
            self.established(&name).await;
        }
    }

    /// Wait until the CRD `name` is established (served), at most 60 s.
    pub async fn established(&self, name: &str) {
        eventually(
            &format!("CRD {name} established"),
            Duration::from_secs(60),
            || async {
                let crd = self
                    .get(
                        "apiextensions.k8s.io/v1",
                        "CustomResourceDefinition",
                        None,
                        name,
                    )
                    .await?;
                crd["status"]["conditions"]
                    .as_array()?
                    .iter()
                    .any(|c| c["type"] == "Established" && c["status"] == "True")
                    .then_some(())
            },
        )
        .await;
    }

    /// Run the test bed's kubectl against this API server (admin).
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.tool(&self.bins.kubectl(), args)
    }

    /// Run the test bed's helm against this API server (admin), with its
    /// configuration, cache and data in the test bed's directory.
    pub fn helm(&self, args: &[&str]) -> Output {
        self.tool(&self.bins.helm(), args)
    }

    fn tool(&self, bin: &Path, args: &[&str]) -> Output {
        let home = self.dir.join("tool-home");
        std::fs::create_dir_all(&home).unwrap();
        Command::new(bin)
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", &home)
            .env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_DATA_HOME", home.join("data"))
            .output()
            .unwrap_or_else(|e| panic!("run {}: {e}", bin.display()))
    }

    /// Every audit event so far (one JSON object per request), oldest first.
    pub fn audit_events(&self) -> Vec<Value> {
        let path = self
            .audit_log
            .as_ref()
            .expect("this API server runs without an audit log");
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The API server's Prometheus metrics text.
    pub async fn metrics(&self) -> String {
        let req = http::Request::get("/metrics").body(Vec::new()).unwrap();
        self.client
            .request_text(req)
            .await
            .expect("GET /metrics of the API server")
    }
}

/// A kubeconfig for `url` trusting `ca_pem`, with `user` as the credentials.
fn kubeconfig_text(url: &str, ca_pem: &str, user: Value) -> String {
    serde_json::to_string_pretty(&json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "testbed", "cluster": {
            "server": url,
            "certificate-authority-data": STANDARD.encode(ca_pem),
        }}],
        "users": [{"name": "testbed", "user": user}],
        "contexts": [{"name": "testbed", "context": {"cluster": "testbed", "user": "testbed", "namespace": "default"}}],
        "current-context": "testbed",
    }))
    .unwrap()
}

/// A kube client from a kubeconfig file.
pub async fn client_from(kubeconfig: &Path) -> kube::Client {
    let config = kube::Config::from_custom_kubeconfig(
        Kubeconfig::read_from(kubeconfig).unwrap(),
        &KubeConfigOptions::default(),
    )
    .await
    .unwrap_or_else(|e| panic!("kubeconfig {}: {e}", kubeconfig.display()));
    kube::Client::try_from(config).unwrap()
}

/// The documents of a YAML stream as JSON values (empty documents skipped).
pub fn yaml_documents(text: &str) -> Vec<Value> {
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(text).unwrap_or_else(|e| panic!("invalid YAML stream: {e}"));
    docs.into_iter().filter(|d| !d.is_null()).collect()
}
