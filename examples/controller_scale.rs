//! The ControlPlane controller at seed scale: N ControlPlanes (default 1,000)
//! against the tests' fake API server, which runs in a child process over
//! loopback HTTP so that the controller process's memory is its own.
//!
//! Phases, each reconciling every ControlPlane with the controller's
//! concurrency (5) the way the kube-runtime `Controller` hands them over:
//! 1. **create**: the first reconcile of every ControlPlane (certificates,
//!    shoot access Secret, three ManagedResources each);
//! 2. **resync**: every ControlPlane again with nothing requested (the 10-min
//!    resync or a controller restart) — the API calls and writes it makes;
//! 3. **storm**: gardenlet restarted and annotated every ControlPlane with
//!    `gardener.cloud/operation: reconcile` — time and API calls;
//!
//! Each phase also prints the CPU time the controller process and the fake
//! spent in it (`/proc/self/stat`), since both share the machine's cores and
//! the wall time is theirs together. Then the controller process's peak RSS
//! (VmHWM) and the fake's.
//!
//! ```text
//! cargo run --release --example controller_scale                      # 1,000 ControlPlanes
//! cargo run --release --example controller_scale -- --controlplanes 200
//! ```

// `tests/support/mod.rs` allows its own dead code and unused imports
#[path = "../tests/support/mod.rs"]
mod support;
use support::controller as fixtures;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use clap::Parser;
use fixtures::fake::FakeApi;
use futures::StreamExt;
use kube::api::{Api, ListParams};
use scion::controller::{self, ControlPlaneActuator, ControlPlaneReconciler};
use scion::gardener::ControlPlane;
use scion::state::Snapshot;
use serde_json::{Value, json};

/// The allocator of the `scion` binary, so the figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
struct Args {
    /// Number of ControlPlanes (one shoot namespace each).
    #[arg(long, default_value_t = 1000)]
    controlplanes: usize,
    /// Reconciles in flight (the controller's concurrency).
    #[arg(long, default_value_t = 5)]
    concurrency: usize,
    /// Internal: run the fake API server and print its port.
    #[arg(long, hide = true)]
    serve_fake: bool,
}

fn namespace(i: usize) -> String {
    format!("shoot--scale--s{i:04}")
}

fn controlplane(i: usize) -> Value {
    let ns = namespace(i);
    let mut cp = fixtures::mock::cp_json(&fixtures::aws_cp(None, fixtures::aws_subnets()));
    cp["metadata"]["namespace"] = json!(ns);
    cp["metadata"]["uid"] = json!(format!("uid-cp-{i}"));
    cp["spec"]["secretRef"]["namespace"] = json!(ns);
    cp
}

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// This process's CPU time (user and system) in seconds, from
/// `/proc/self/stat` (clock ticks of 10 ms, Linux's `USER_HZ`).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // the fields after the command, which is in parentheses
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after `)`
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (ticks(11) + ticks(12)) as f64 / 100.0
}

/// The fake API server over HTTP, with `/_fake/stats`, `/_fake/reset`,
/// `/_fake/annotate`, `/_fake/rss` and `/_fake/cpu` for the driver.
async fn serve_fake(n: usize) -> anyhow::Result<()> {
    let mut api = FakeApi::new();
    for i in 0..n {
        api.insert(controlplane(i));
    }
    let api = Arc::new(Mutex::new(api));
    let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
        let api = api.clone();
        async move {
            let (method, path, query, content_type) = fixtures::fake::request_parts(&req);
            let bytes = axum::body::to_bytes(req.into_body(), 64 << 20)
                .await
                .unwrap_or_default();
            let (code, body) = {
                let mut api = api.lock().expect("fake");
                match path.as_str() {
                    "/_fake/stats" => {
                        let writes = api.writes().len();
                        (200, json!({"calls": api.calls.len(), "writes": writes}))
                    }
                    "/_fake/reset" => {
                        api.clear_calls();
                        (200, json!({}))
                    }
                    "/_fake/annotate" => {
                        for i in 0..n {
                            let p = fixtures::fake::path_of(&controlplane(i));
                            if let Some(cp) = api.get_mut(&p) {
                                cp["metadata"]["annotations"]["gardener.cloud/operation"] =
                                    json!("reconcile");
                            }
                        }
                        (200, json!({}))
                    }
                    "/_fake/rss" => (200, json!({"vm_hwm_kib": vm_hwm_kib()})),
                    "/_fake/cpu" => (200, json!({"seconds": cpu_seconds()})),
                    _ => api.handle(&method, &path, &query, &content_type, &bytes),
                }
            };
            axum::response::Response::builder()
                .status(code)
                .header("content-type", "application/json")
                .body(axum::body::Body::from(
                    serde_json::to_vec(&body).unwrap_or_default(),
                ))
                .expect("response")
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("{}", listener.local_addr()?.port());
    std::io::stdout().flush()?;
    // Serve until the driver closes our stdin.
    let stdin_closed = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        while std::io::stdin()
            .read_line(&mut line)
            .map(|n| n > 0)
            .unwrap_or(false)
        {}
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = stdin_closed.await;
        })
        .await?;
    Ok(())
}

async fn control(client: &reqwestless::Http, path: &str) -> anyhow::Result<Value> {
    client.get(path).await
}

/// A minimal HTTP GET over the kube client's transport for the control endpoints.
mod reqwestless {
    use serde_json::Value;

    pub struct Http(pub kube::Client);

    impl Http {
        pub async fn get(&self, path: &str) -> anyhow::Result<Value> {
            let req = http::Request::get(path).body(Vec::new())?;
            Ok(self.0.request::<Value>(req).await?)
        }
    }
}

/// The CPU seconds the controller process and the fake spent since `since`
/// (the pair [`cpu_now`] gave), as text.
async fn cpu_since(http: &reqwestless::Http, since: (f64, f64)) -> anyhow::Result<String> {
    let (controller, fake) = cpu_now(http).await?;
    Ok(format!(
        "CPU: controller {:.2} s, fake {:.2} s",
        controller - since.0,
        fake - since.1
    ))
}

/// The CPU seconds of the controller process and of the fake so far.
async fn cpu_now(http: &reqwestless::Http) -> anyhow::Result<(f64, f64)> {
    let fake = control(http, "/_fake/cpu").await?["seconds"]
        .as_f64()
        .unwrap_or(0.0);
    Ok((cpu_seconds(), fake))
}

/// Reconcile every ControlPlane the API lists, `concurrency` at a time;
/// returns the seconds it took.
async fn reconcile_all(
    ctx: &Arc<ControlPlaneReconciler>,
    concurrency: usize,
) -> anyhow::Result<f64> {
    let list = Api::<ControlPlane>::all(ctx.client.clone())
        .list(&ListParams::default())
        .await?;
    let start = Instant::now();
    let results: Vec<_> = futures::stream::iter(list.items.into_iter().map(Arc::new))
        .map(|cp| controller::reconcile(cp, ctx.clone()))
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let elapsed = start.elapsed().as_secs_f64();
    let failed: Vec<String> = results
        .into_iter()
        .filter_map(|r| r.err().map(|e| e.to_string()))
        .collect();
    if let Some(first) = failed.first() {
        anyhow::bail!("{} reconciles failed, first: {first}", failed.len());
    }
    Ok(elapsed)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.serve_fake {
        return serve_fake(args.controlplanes).await;
    }
    let n = args.controlplanes;
    let mut child = Command::new(std::env::current_exe()?)
        .args(["--serve-fake", "--controlplanes", &n.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut port = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut port)?;
    let port: u16 = port.trim().parse()?;
    let config = kube::Config::new(format!("http://127.0.0.1:{port}").parse()?);
    let client = kube::Client::try_from(config)?;
    let http = reqwestless::Http(client.clone());

    let mut snapshot = Snapshot::default();
    for i in 0..n {
        let mut shoot = fixtures::shoot(&["IPv4"], false);
        shoot.cluster_name = namespace(i);
        shoot.shoot.status.technical_id = Some(namespace(i));
        snapshot.insert_shoot(shoot);
        snapshot.insert_object(
            &namespace(i),
            "cloudprovider",
            fixtures::aws_static_secret(),
        );
    }
    let state: Arc<dyn scion::state::StateSource> = Arc::new(snapshot);
    let spec = scion::profile::Profile::builtin("aws")?
        .control_plane()?
        .clone();
    let actuator = ControlPlaneActuator::new(client.clone(), state.clone(), "aws", Arc::new(spec));
    let ctx = Arc::new(ControlPlaneReconciler::new(client, state, "aws", actuator));

    println!("{n} ControlPlanes, concurrency {}", args.concurrency);
    let cpu = cpu_now(&http).await?;
    let created = reconcile_all(&ctx, args.concurrency).await?;
    let stats = control(&http, "/_fake/stats").await?;
    println!(
        "create:  {created:.2} s, {} API calls, {} writes; {}",
        stats["calls"],
        stats["writes"],
        cpu_since(&http, cpu).await?
    );

    control(&http, "/_fake/reset").await?;
    let resync = reconcile_all(&ctx, args.concurrency).await?;
    let stats = control(&http, "/_fake/stats").await?;
    // The LIST that hands the objects over is the driver's, not a reconcile's.
    println!(
        "resync:  {resync:.3} s, {} API calls besides the driver's LIST, {} writes",
        stats["calls"].as_u64().unwrap_or(0).saturating_sub(1),
        stats["writes"]
    );

    control(&http, "/_fake/annotate").await?;
    control(&http, "/_fake/reset").await?;
    let cpu = cpu_now(&http).await?;
    let storm = reconcile_all(&ctx, args.concurrency).await?;
    let stats = control(&http, "/_fake/stats").await?;
    println!(
        "storm:   {storm:.2} s ({:.1} ms per ControlPlane), {} API calls, {} writes; {}",
        storm * 1000.0 / n as f64,
        stats["calls"],
        stats["writes"],
        cpu_since(&http, cpu).await?
    );

    let fake_rss = control(&http, "/_fake/rss").await?;
    println!(
        "peak RSS: controller {:.1} MiB (fake API server, separate process: {:.1} MiB)",
        vm_hwm_kib() as f64 / 1024.0,
        fake_rss["vm_hwm_kib"].as_u64().unwrap_or(0) as f64 / 1024.0
    );
    drop(child.stdin.take());
    child.wait()?;
    Ok(())
}
