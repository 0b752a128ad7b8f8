//! `scion serve` as a process against a test bed API server: the binary
//! cargo built for this test, loopback listeners on free ports, a
//! certificate directory of its own, a kubeconfig of the caller's choice
//! (admin, or a ServiceAccount token so the real authorizer applies the
//! chart's RBAC). [`ScionBuilder::register_webhook`] makes it register its
//! webhooks in url mode at its own loopback address.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::process::{Proc, free_port};

/// The `scion` binary cargo built: given to integration tests; an example
/// (`examples/testbed.rs`) finds it beside its own directory.
pub fn scion_binary() -> PathBuf {
    match option_env!("CARGO_BIN_EXE_scion") {
        Some(path) => PathBuf::from(path),
        None => std::env::current_exe()
            .ok()
            .and_then(|exe| Some(exe.parent()?.parent()?.join("scion")))
            .expect("the scion binary beside target/<profile>/examples"),
    }
}

/// How `scion serve` is started.
pub struct ScionBuilder {
    provider: String,
    kubeconfig: PathBuf,
    namespace: Option<String>,
    register: bool,
    args: Vec<String>,
    env: Vec<(String, String)>,
    log_dir: PathBuf,
}

impl ScionBuilder {
    /// `--webhook-namespace` (the extension's namespace: leases, owner of
    /// the webhook configuration, certificate Secrets).
    pub fn namespace(mut self, ns: &str) -> Self {
        self.namespace = Some(ns.to_owned());
        self
    }

    /// Register the webhooks (`--register-webhook`) in url mode at
    /// `https://127.0.0.1:<webhook port>/<path>`.
    pub fn register_webhook(mut self) -> Self {
        self.register = true;
        self
    }

    /// More flags (e.g. `--controllers=none`, `--leader-election=false`).
    pub fn args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// An environment variable.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Start and wait until `/readyz` answers 200 (panics with the log tail
    /// if it exits or is not ready in time).
    pub async fn start(self) -> Scion {
        self.launch(true).await
    }

    /// Start and wait only until the health listener answers, ready or not
    /// (a replica that cannot get ready, on purpose).
    pub async fn spawn(self) -> Scion {
        self.launch(false).await
    }

    async fn launch(self, ready: bool) -> Scion {
        let cert_dir = tempfile::tempdir().unwrap();
        let webhook = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let health = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let metrics = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let mut cmd = Command::new(scion_binary());
        cmd.arg("serve")
            .arg(format!("--provider={}", self.provider))
            .arg(format!("--listen={webhook}"))
            .arg(format!("--health-listen={health}"))
            .arg(format!("--metrics-listen={metrics}"))
            .arg(format!("--cert-dir={}", cert_dir.path().display()))
            .arg("--log-format=json")
            .arg("--shutdown-grace=5s");
        if let Some(ns) = &self.namespace {
            cmd.arg(format!("--webhook-namespace={ns}"));
        }
        if self.register {
            cmd.arg("--register-webhook")
                .arg("--webhook-config-mode=url")
                .arg(format!("--webhook-config-url={webhook}"));
        }
        cmd.args(&self.args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("KUBECONFIG", &self.kubeconfig)
            .env("RUST_BACKTRACE", "1");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        std::fs::create_dir_all(&self.log_dir).unwrap();
        let log = self
            .log_dir
            .join(format!("scion-{}-{}.log", self.provider, webhook.port()));
        let proc = Proc::spawn(&format!("scion serve ({})", self.provider), cmd, &log);
        let mut scion = Scion {
            proc,
            webhook,
            health,
            metrics,
            cert_dir,
        };
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            scion.proc.assert_running();
            match scion.http_get(scion.health, "/readyz").await {
                Some((200, _)) => return scion,
                Some(_) if !ready => return scion,
                _ => {}
            }
            if Instant::now() > deadline {
                panic!(
                    "scion serve not {} after 120 s; its log:\n{}",
                    if ready { "ready" } else { "listening" },
                    scion.proc.log_tail(6000)
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// A running `scion serve`.
pub struct Scion {
    proc: Proc,
    pub webhook: SocketAddr,
    pub health: SocketAddr,
    pub metrics: SocketAddr,
    pub cert_dir: tempfile::TempDir,
}

impl Scion {
    /// How to start `scion serve --provider <provider>` with `kubeconfig`;
    /// its log goes to `log_dir`.
    pub fn builder(provider: &str, kubeconfig: &Path, log_dir: &Path) -> ScionBuilder {
        ScionBuilder {
            provider: provider.to_owned(),
            kubeconfig: kubeconfig.to_path_buf(),
            namespace: None,
            register: false,
            args: Vec::new(),
            env: Vec::new(),
            log_dir: log_dir.to_path_buf(),
        }
    }

    /// Its log so far (JSON lines).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.proc.log_path()).unwrap_or_default()
    }

    /// The log lines as JSON objects.
    pub fn log_lines(&self) -> Vec<Value> {
        self.log()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Panic with the log if the process has exited.
    pub fn assert_running(&mut self) {
        self.proc.assert_running();
    }

    /// Its `/metrics` text.
    pub async fn metrics_text(&self) -> String {
        self.http_get(self.metrics, "/metrics")
            .await
            .map(|(_, body)| body)
            .unwrap_or_default()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }

    /// `kill -9`: the process ends at once, without draining or releasing
    /// its Lease (a crashed or OOM-killed pod).
    pub fn kill(mut self) {
        self.proc.kill();
    }

    /// `(resident, peak resident)` memory in KiB (`VmRSS`, `VmHWM`).
    pub fn memory_kib(&self) -> Option<(u64, u64)> {
        self.proc.memory_kib()
    }

    /// `GET <path>` on the health listener (`/readyz`, `/healthz`,
    /// `/readyz?verbose`): status and body, `None` when nothing answers.
    pub async fn probe(&self, path: &str) -> Option<(u16, String)> {
        self.http_get(self.health, path).await
    }

    /// SIGTERM, wait for the drain; the exit code.
    pub fn stop(mut self) -> Option<i32> {
        self.proc
            .stop(Duration::from_secs(20))
            .and_then(|s| s.code())
    }

    /// A plain HTTP/1.1 GET on loopback: status and body.
    async fn http_get(&self, addr: SocketAddr, path: &str) -> Option<(u16, String)> {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let fut = async {
            let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
            stream
                .write_all(
                    format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
                        .as_bytes(),
                )
                .await
                .ok()?;
            let mut answer = String::new();
            stream.read_to_string(&mut answer).await.ok()?;
            let status = answer.get(9..12)?.parse().ok()?;
            let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_owned())?;
            Some((status, body))
        };
        tokio::time::timeout(Duration::from_secs(10), fut)
            .await
            .ok()
            .flatten()
    }
}
