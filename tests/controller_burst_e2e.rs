//! gardenlet restarted (issue 23, scenario 5): every shoot namespace's
//! control-plane objects (the context, the control-plane Deployments and
//! the machine-controller-manager VPA, an OperatingSystemConfig, the Etcds,
//! the `cloudprovider` Secret, a ControlPlane with the operation
//! annotation) written through the test bed's real API server as fast as
//! it takes them, by 16 writers at once: zero failed admissions, every
//! Deployment mutated, every ControlPlane `Succeeded` with whole objects;
//! the write latency (p50/p99), scion's own admission latency (p99 bucket
//! of `scion_admission_request_duration_seconds`) and scion's peak memory
//! are printed for docs/reliability.md.
//!
//! Size: `SCION_BURST_SHOOTS` namespaces, 40 by default (what `.ci/run`
//! runs: about a minute on 2 shared cores); the full size is
//! `SCION_BURST_SHOOTS=200 scripts/test.sh --test controller_burst_e2e -- --nocapture`.

#[path = "support/faults/mod.rs"]
mod faults;
#[path = "support/testbed/mod.rs"]
mod testbed;

use std::time::{Duration, Instant};

use faults::seed::{self, EXTENSION_NS, PROVIDER};
use futures::StreamExt as _;
use serde_json::Value;
use testbed::extension::gardenlet_objects;
use testbed::{ApiServer, Testbed, eventually};

/// Shoot namespaces `.ci/run` writes.
const CI_SHOOTS: usize = 40;
/// Writers at once, as gardenlet's concurrent shoot flows.
const WRITERS: usize = 16;

/// One write: how long it took, the error.
type Written = (Duration, Option<String>);

/// Everything gardenlet writes for one shoot; the ControlPlane last, with
/// the operation annotation. The kube-controller-manager as stored.
async fn write_shoot(api: &ApiServer, ns: String) -> (Vec<Written>, Option<Value>) {
    let mut writes = Vec::new();
    let t0 = Instant::now();
    let controlplane = seed::create_shoot(api, &ns).await;
    writes.push((t0.elapsed(), None));
    let mut kcm = None;
    for object in gardenlet_objects(PROVIDER, &ns) {
        if object["kind"] == "Secret" {
            continue; // the cloudprovider Secret is part of the context above
        }
        let t0 = Instant::now();
        let result = api.create(&object).await;
        let took = t0.elapsed();
        match result {
            Ok(stored) => {
                if object["metadata"]["name"] == "kube-controller-manager"
                    && object["kind"] == "Deployment"
                {
                    kcm = Some(stored);
                }
                writes.push((took, None));
            }
            Err(e) => writes.push((
                took,
                Some(format!(
                    "{ns}: {} {}: {e}",
                    object["kind"], object["metadata"]["name"]
                )),
            )),
        }
    }
    let t0 = Instant::now();
    seed::request(api, &controlplane, "reconcile").await;
    writes.push((t0.elapsed(), None));
    (writes, kcm)
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gardenlet_writes_every_shoot_at_once() {
    let shoots: usize = std::env::var("SCION_BURST_SHOOTS")
        .map(|v| v.parse().expect("SCION_BURST_SHOOTS: a number"))
        .unwrap_or(CI_SHOOTS);
    let bed = Testbed::start().await;
    let api = &bed.seed;
    api.install_crds().await;
    let token = seed::install_extension(api).await;
    let kubeconfig = api.kubeconfig_with_token("scion.kubeconfig", &token);
    let mut scion = bed
        .scion(PROVIDER, &kubeconfig)
        .namespace(EXTENSION_NS)
        .register_webhook()
        .start()
        .await;
    eventually(
        "the webhook configuration registered",
        Duration::from_secs(60),
        || seed::registered_ca_bundle(api),
    )
    .await;
    let (_, idle_peak) = scion.memory_kib().unwrap();

    let namespaces: Vec<String> = (0..shoots).map(seed::shoot_namespace).collect();
    let started = Instant::now();
    let results: Vec<(Vec<Written>, Option<Value>)> = futures::stream::iter(namespaces.clone())
        .map(|ns| write_shoot(api, ns))
        .buffer_unordered(WRITERS)
        .collect()
        .await;
    let written_in = started.elapsed();
    seed::wait_succeeded(api, &namespaces, Duration::from_secs(600)).await;
    let succeeded_in = started.elapsed();
    let (_, peak) = scion.memory_kib().unwrap();
    let metrics = scion.metrics_text().await;
    scion.assert_running();

    let mut took: Vec<Duration> = results
        .iter()
        .flat_map(|(w, _)| w.iter().map(|(t, _)| *t))
        .collect();
    took.sort();
    let failures: Vec<&String> = results
        .iter()
        .flat_map(|(w, _)| w.iter().filter_map(|(_, e)| e.as_ref()))
        .collect();
    assert!(
        failures.is_empty(),
        "{} writes failed:\n{}",
        failures.len(),
        failures
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    let original = testbed::extension::recorded_object(PROVIDER, "kube-controller-manager", "x");
    let command = |o: &Value| o["spec"]["template"]["spec"]["containers"][0]["command"].clone();
    let unmutated = results
        .iter()
        .filter(|(_, kcm)| {
            kcm.as_ref()
                .is_none_or(|k| command(k) == command(&original))
        })
        .count();
    assert_eq!(unmutated, 0, "kube-controller-managers not mutated");
    let problems = seed::problems(api, &namespaces).await;
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // every answer allowed, with or without a patch
    let refused: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("scion_admission_requests_total{"))
        .filter(|l| !l.contains("\"allowed\"") && !l.contains("\"patched\""))
        .filter(|l| l.rsplit(' ').next().and_then(|n| n.parse::<f64>().ok()) != Some(0.0))
        .collect();
    assert!(refused.is_empty(), "scion refused admissions: {refused:?}");
    let admission_p99 =
        faults::histogram_quantile(&metrics, "scion_admission_request_duration_seconds", 0.99)
            .expect("scion recorded admissions");
    faults::report(
        &format!("gardenlet restarted: {shoots} shoot namespaces at once"),
        &[
            (
                "writes",
                format!(
                    "{} in {:.1} s by {WRITERS} writers, 0 failed",
                    took.len(),
                    written_in.as_secs_f64()
                ),
            ),
            (
                "write latency",
                format!(
                    "p50 {:?} p99 {:?} max {:?}",
                    quantile(&took, 0.5),
                    quantile(&took, 0.99),
                    quantile(&took, 1.0)
                ),
            ),
            ("scion admission p99 ≤", format!("{admission_p99} s")),
            (
                "every ControlPlane Succeeded after",
                format!("{:.1} s", succeeded_in.as_secs_f64()),
            ),
            (
                "scion peak memory",
                format!(
                    "{:.1} MiB (idle {:.1} MiB)",
                    peak as f64 / 1024.0,
                    idle_peak as f64 / 1024.0
                ),
            ),
        ],
    );
}
