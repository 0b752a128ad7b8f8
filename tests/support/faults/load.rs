//! Continuous gardenlet-like writes through the API server while a fault
//! happens: each writer updates a control-plane Deployment (a merge patch of
//! an annotation, which the API server sends to scion's webhook as an
//! UPDATE), one after another, and records when each write started, how
//! long it took and how it ended. A failed admission is told apart from any
//! other failure by the API server's message ("failed calling webhook",
//! "denied the request").

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

/// One write.
#[derive(Debug, Clone)]
pub struct Write {
    /// Start, since the load started.
    pub at: Duration,
    pub took: Duration,
    pub target: String,
    pub error: Option<String>,
}

impl Write {
    /// The API server refused it because of the webhook (failed to call it,
    /// or it denied).
    pub fn failed_admission(&self) -> bool {
        self.error.as_deref().is_some_and(|e| {
            e.contains("failed calling webhook") || e.contains("denied the request")
        })
    }
}

/// Writers running until [`Load::stop`].
pub struct Load {
    pub started: Instant,
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<Vec<Write>>>,
}

/// Deployments the writers take turns on: `(namespace, name)`.
pub type Targets = Vec<(String, String)>;

impl Load {
    /// `writers` writers over `targets` (writer i starts at target i), each
    /// pausing `pause` between writes.
    pub fn start(client: kube::Client, targets: Targets, writers: usize, pause: Duration) -> Load {
        assert!(!targets.is_empty(), "a load needs targets");
        let started = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let seq = Arc::new(AtomicU64::new(0));
        let targets = Arc::new(targets);
        let tasks = (0..writers)
            .map(|w| {
                let (client, stop, seq, targets) =
                    (client.clone(), stop.clone(), seq.clone(), targets.clone());
                tokio::spawn(async move {
                    let mut writes = Vec::new();
                    let mut i = w;
                    while !stop.load(Ordering::SeqCst) {
                        let (ns, name) = &targets[i % targets.len()];
                        i += writers;
                        let n = seq.fetch_add(1, Ordering::SeqCst);
                        let api: Api<Deployment> = Api::namespaced(client.clone(), ns);
                        let patch = json!({"metadata": {"annotations": {"load.scion.test/write": n.to_string()}}});
                        let at = started.elapsed();
                        let t0 = Instant::now();
                        let result = tokio::time::timeout(
                            Duration::from_secs(60),
                            api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)),
                        )
                        .await;
                        let error = match result {
                            Ok(Ok(_)) => None,
                            Ok(Err(e)) => Some(e.to_string()),
                            Err(_) => Some("no answer within 60 s".to_owned()),
                        };
                        writes.push(Write {
                            at,
                            took: t0.elapsed(),
                            target: format!("{ns}/{name}"),
                            error,
                        });
                        tokio::time::sleep(pause).await;
                    }
                    writes
                })
            })
            .collect();
        Load {
            started,
            stop,
            tasks,
        }
    }

    /// Since the load started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Stop the writers after their current write; every write.
    pub async fn stop(self) -> LoadReport {
        self.stop.store(true, Ordering::SeqCst);
        let mut writes = Vec::new();
        for task in self.tasks {
            writes.extend(task.await.expect("a load writer panicked"));
        }
        writes.sort_by_key(|w| w.at);
        LoadReport { writes }
    }
}

/// What the writers saw.
#[derive(Debug, Clone)]
pub struct LoadReport {
    pub writes: Vec<Write>,
}

impl LoadReport {
    pub fn failed(&self) -> Vec<&Write> {
        self.writes.iter().filter(|w| w.error.is_some()).collect()
    }

    pub fn failed_admissions(&self) -> Vec<&Write> {
        self.writes
            .iter()
            .filter(|w| w.failed_admission())
            .collect()
    }

    /// The `q`-quantile (0..=1) of the write latency.
    pub fn quantile(&self, q: f64) -> Duration {
        let mut took: Vec<Duration> = self.writes.iter().map(|w| w.took).collect();
        took.sort();
        if took.is_empty() {
            return Duration::ZERO;
        }
        let i = ((took.len() as f64 * q).ceil() as usize).clamp(1, took.len()) - 1;
        took[i]
    }

    /// One line for the test's output and the reliability table.
    pub fn summary(&self) -> String {
        format!(
            "{} writes, {} failed ({} failed admissions), latency p50 {:?} p99 {:?} max {:?}",
            self.writes.len(),
            self.failed().len(),
            self.failed_admissions().len(),
            self.quantile(0.5),
            self.quantile(0.99),
            self.quantile(1.0),
        )
    }

    /// The failures, one per line, for a failure message.
    pub fn failures_text(&self) -> String {
        self.failed()
            .iter()
            .map(|w| {
                format!(
                    "  at {:.2} s ({}, took {:?}): {}",
                    w.at.as_secs_f64(),
                    w.target,
                    w.took,
                    w.error.as_deref().unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}
