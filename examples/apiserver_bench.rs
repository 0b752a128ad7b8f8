//! The webhook's latency as the API server sees it (`scripts/bench-apiserver.sh`
//! runs it inside a loopback-only network namespace): a test bed API server,
//! `scion serve` (this build) registered in url mode for aws, and the no-op
//! webhook (`examples/noop_webhook.rs`, the floor) registered for a
//! namespace of its own. gardenlet-like writes — an UPDATE of the recorded
//! kube-controller-manager Deployment with a changed annotation, as dry runs
//! so that etcd's disk is not what is measured — are driven at each rate
//! for each webhook in turn; the API server's own histogram
//! `apiserver_admission_webhook_admission_duration_seconds` (per webhook
//! name, its delta over the run) gives mean, p50 and p99.
//!
//! ```sh
//! scripts/bench-apiserver.sh                 # 100 and 1000 writes/s, 20 s each
//! RATES="100 1000" DURATION=20 scripts/bench-apiserver.sh
//! ```

#[path = "../tests/support/testbed/mod.rs"]
mod testbed;

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kube::api::{DynamicObject, PostParams};
use serde_json::{Value, json};
use testbed::process::{Proc, free_port};
use testbed::{
    ApiServer, ApiServerOptions, Testbed, eventually, gardenlet_object, root, yaml_documents,
};

const SCION_WEBHOOK: &str = "controlplane.aws.extensions.gardener.cloud";
const NOOP_WEBHOOK: &str = "noop.bench.scion.local";
const METRIC: &str = "apiserver_admission_webhook_admission_duration_seconds";

/// The histogram of `webhook` (UPDATE admits): bucket bounds with cumulative
/// counts, sum and count.
#[derive(Debug, Clone, Default)]
struct Histogram {
    buckets: Vec<(f64, f64)>,
    sum: f64,
    count: f64,
}

fn histogram(metrics: &str, webhook: &str) -> Histogram {
    let mut h = Histogram::default();
    for line in metrics.lines() {
        if !line.starts_with(METRIC)
            || !line.contains(&format!("name=\"{webhook}\""))
            || !line.contains("operation=\"UPDATE\"")
            || !line.contains("type=\"admit\"")
            || !line.contains("rejected=\"false\"")
        {
            continue;
        }
        let value: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        if line.starts_with(&format!("{METRIC}_bucket")) {
            let le = line
                .split("le=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            let bound = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().unwrap()
            };
            h.buckets.push((bound, value));
        } else if line.starts_with(&format!("{METRIC}_sum")) {
            h.sum = value;
        } else if line.starts_with(&format!("{METRIC}_count")) {
            h.count = value;
        }
    }
    h.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    h
}

impl Histogram {
    fn minus(&self, before: &Histogram) -> Histogram {
        let at = |bound: f64| {
            before
                .buckets
                .iter()
                .find(|b| b.0 == bound)
                .map_or(0.0, |b| b.1)
        };
        Histogram {
            buckets: self.buckets.iter().map(|&(b, c)| (b, c - at(b))).collect(),
            sum: self.sum - before.sum,
            count: self.count - before.count,
        }
    }

    /// The q-quantile, linearly interpolated inside its bucket as
    /// Prometheus' histogram_quantile does.
    fn quantile(&self, q: f64) -> f64 {
        let rank = q * self.count;
        let mut lower = (0.0, 0.0);
        for &(bound, count) in &self.buckets {
            if count >= rank {
                if bound.is_infinite() {
                    return lower.0;
                }
                let width = count - lower.1;
                let frac = if width > 0.0 {
                    (rank - lower.1) / width
                } else {
                    0.0
                };
                return lower.0 + (bound - lower.0) * frac;
            }
            lower = (bound, count);
        }
        f64::NAN
    }

    /// The bucket bounds around the q-quantile.
    fn bucket_of(&self, q: f64) -> (f64, f64) {
        let rank = q * self.count;
        let mut lower = 0.0;
        for &(bound, count) in &self.buckets {
            if count >= rank {
                return (lower, bound);
            }
            lower = bound;
        }
        (lower, f64::INFINITY)
    }
}

/// Drive dry-run UPDATEs of `object` at `rate` per second for `duration`.
/// Returns (sent, failed, achieved rate).
async fn drive(api: &ApiServer, object: &Value, rate: u32, duration: Duration) -> (u64, u64, f64) {
    let ns = object["metadata"]["namespace"].as_str().unwrap();
    let deployments = api.api("apps/v1", "Deployment", Some(ns)).await;
    let name = object["metadata"]["name"].as_str().unwrap().to_owned();
    let current = deployments.get(&name).await.unwrap();
    let mut base: DynamicObject = serde_json::from_value(object.clone()).unwrap();
    base.metadata.resource_version = current.metadata.resource_version;
    let base = Arc::new(base);
    let failed = Arc::new(AtomicU64::new(0));
    let in_flight = Arc::new(tokio::sync::Semaphore::new(512));
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(rate)));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let start = Instant::now();
    let mut sent = 0u64;
    let mut tasks = tokio::task::JoinSet::new();
    while start.elapsed() < duration {
        ticker.tick().await;
        let permit = in_flight.clone().acquire_owned().await.unwrap();
        let (api, base, failed, name) = (
            deployments.clone(),
            base.clone(),
            failed.clone(),
            name.clone(),
        );
        sent += 1;
        tasks.spawn(async move {
            let mut obj = (*base).clone();
            obj.metadata
                .annotations
                .get_or_insert_default()
                .insert("bench.scion.local/write".into(), sent.to_string());
            let params = PostParams {
                dry_run: true,
                field_manager: Some("gardenlet".into()),
            };
            if let Err(e) = api.replace(&name, &params, &obj).await
                && failed.fetch_add(1, Ordering::Relaxed) < 3
            {
                eprintln!("write failed: {e}");
            }
            drop(permit);
        });
    }
    while tasks.join_next().await.is_some() {}
    let elapsed = start.elapsed().as_secs_f64();
    (sent, failed.load(Ordering::Relaxed), sent as f64 / elapsed)
}

fn flag(args: &[String], name: &str, default: &str) -> String {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| default.to_owned())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rates: Vec<u32> = flag(&args, "--rates", "100 1000")
        .split_whitespace()
        .map(|r| r.parse().expect("--rates: numbers"))
        .collect();
    let duration = Duration::from_secs(flag(&args, "--duration", "20").parse().unwrap());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(run(rates, duration));
}

async fn run(rates: Vec<u32>, duration: Duration) {
    let bed = Testbed::start_with(&[ApiServerOptions {
        audit: false,
        ..ApiServerOptions::named("seed")
    }])
    .await;
    let api = &bed.seed;
    api.install_crds().await;
    let shoot = "shoot--dev--aws";
    api.namespace(shoot, &[("shoot.gardener.cloud/provider", "aws")])
        .await;
    api.namespace("noop-floor", &[("bench.scion.local/noop", "true")])
        .await;
    api.namespace("extension-provider-aws", &[]).await;
    for file in [
        "cluster.yaml",
        "configmap-cloud-provider-config.yaml",
        "secret-cloudprovider.yaml",
    ] {
        let text = std::fs::read_to_string(root().join("examples/objects/aws").join(file)).unwrap();
        for doc in yaml_documents(&text) {
            api.apply(&doc, "gardenlet").await.unwrap();
        }
    }

    // scion (this build), registered in url mode
    let scion = bed
        .scion("aws", &api.kubeconfig)
        .namespace("extension-provider-aws")
        .register_webhook()
        .args(["--controllers=none", "--log-level=warn"])
        .start()
        .await;
    // the floor: the no-op webhook, registered for its namespace only
    let noop_dir = bed.dir().join("noop");
    std::fs::create_dir_all(&noop_dir).unwrap();
    let noop_port = free_port();
    let noop_bin = std::env::current_exe()
        .unwrap()
        .with_file_name("noop_webhook");
    let mut cmd = Command::new(&noop_bin);
    cmd.args(["--listen", &format!("127.0.0.1:{noop_port}"), "--cert-dir"])
        .arg(&noop_dir);
    let mut noop = Proc::spawn("noop webhook", cmd, &bed.dir().join("noop.log"));
    let started = Instant::now();
    let ca = loop {
        noop.assert_running();
        if let Ok(ca) = std::fs::read(noop_dir.join("ca.crt")) {
            break ca;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the no-op webhook wrote no CA"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    use base64::Engine as _;
    let noop_config = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "noop-floor"},
        "webhooks": [{
            "name": NOOP_WEBHOOK,
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Fail",
            "timeoutSeconds": 10,
            "clientConfig": {
                "url": format!("https://127.0.0.1:{noop_port}/controlplane"),
                "caBundle": base64::engine::general_purpose::STANDARD.encode(&ca),
            },
            "namespaceSelector": {"matchLabels": {"bench.scion.local/noop": "true"}},
            "rules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}],
        }],
    });
    api.apply(&noop_config, "bench").await.unwrap();
    eventually(
        "scion's webhook configuration",
        Duration::from_secs(60),
        || async {
            api.get(
                "admissionregistration.k8s.io/v1",
                "MutatingWebhookConfiguration",
                None,
                "scion-provider-aws",
            )
            .await
        },
    )
    .await;

    let kcm = gardenlet_object("examples/reviews/aws-kube-controller-manager.json", shoot);
    let mut targets = Vec::new();
    for (ns, webhook) in [("noop-floor", NOOP_WEBHOOK), (shoot, SCION_WEBHOOK)] {
        let mut object = kcm.clone();
        object["metadata"]["namespace"] = json!(ns);
        api.create(&object).await.unwrap();
        targets.push((ns, webhook, object));
    }
    // warm both paths (connections, the first reads)
    for (_, _, object) in &targets {
        drive(api, object, 50, Duration::from_secs(2)).await;
    }

    println!(
        "| writes/s asked | achieved | webhook | admissions | mean | p50 | p99 | p99 bucket |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for rate in rates {
        for (ns, webhook, object) in &targets {
            let before = histogram(&api.metrics().await, webhook);
            let (sent, failed, achieved) = drive(api, object, rate, duration).await;
            let h = histogram(&api.metrics().await, webhook).minus(&before);
            let ms = |s: f64| format!("{:.2} ms", s * 1000.0);
            let (lo, hi) = h.bucket_of(0.99);
            println!(
                "| {rate} | {achieved:.0} | {} | {} ({failed} of {sent} writes failed) | {} | {} | {} | {}–{} |",
                if *ns == "noop-floor" {
                    "no-op (floor)"
                } else {
                    "scion controlplane"
                },
                h.count,
                ms(h.sum / h.count),
                ms(h.quantile(0.5)),
                ms(h.quantile(0.99)),
                ms(lo),
                ms(hi),
            );
        }
    }
    let buckets: Vec<String> = histogram(&api.metrics().await, SCION_WEBHOOK)
        .buckets
        .iter()
        .map(|b| b.0.to_string())
        .collect();
    println!("\nbucket bounds (s): {}", buckets.join(", "));
    drop(scion);
    drop(noop);
}
