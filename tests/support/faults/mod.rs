//! Support of the fault scenarios on the test bed (issue 23,
//! `docs/reliability.md`): a Service in front of several replicas
//! ([`service`]), a proxy that makes scion's own API requests slow or hang
//! ([`proxy`]), continuous webhook writes ([`load`]), every version of the
//! controller's objects ([`history`]), AdmissionReviews sent straight to
//! a replica ([`review`]), and the seed: extension, shoots,
//! ControlPlanes and the checks of their objects ([`seed`]).
//!
//! The process faults themselves (stopping etcd, restarting the API server,
//! `kill -9` of scion) are the test bed's: [`super::testbed::Etcd::stop`],
//! [`super::testbed::ApiServer::stop`], [`super::testbed::Scion::kill`].

#![allow(dead_code)]

pub mod history;
pub mod load;
pub mod proxy;
pub mod review;
pub mod seed;
pub mod service;

/// The machine's load average (1, 5, 15 min), for the figures a scenario
/// prints: the timings on a shared machine mean little without it.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Print a scenario's measured figures as one line the reliability table
/// is written from (`cargo test -- --nocapture` shows it), with the load
/// average.
pub fn report(scenario: &str, figures: &[(&str, String)]) {
    let figures: Vec<String> = figures.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    eprintln!(
        "RELIABILITY {scenario} | {} | load average {}",
        figures.join(" | "),
        load_average()
    );
}

/// The upper bound (seconds) of the bucket holding the `q`-quantile of the
/// Prometheus histogram `name` in `metrics` (the text format), summed over
/// its label sets; `None` when it has no observations.
pub fn histogram_quantile(metrics: &str, name: &str, q: f64) -> Option<f64> {
    let prefix = format!("{name}_bucket{{");
    let mut buckets: std::collections::BTreeMap<u64, (f64, f64)> = Default::default();
    for line in metrics.lines().filter(|l| l.starts_with(&prefix)) {
        let le = line.split("le=\"").nth(1)?.split('"').next()?;
        let le: f64 = if le == "+Inf" {
            f64::INFINITY
        } else {
            le.parse().ok()?
        };
        let count: f64 = line.rsplit(' ').next()?.parse().ok()?;
        buckets.entry(le.to_bits()).or_insert((le, 0.0)).1 += count;
    }
    let mut sorted: Vec<(f64, f64)> = buckets.into_values().collect();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total = sorted.last()?.1;
    if total == 0.0 {
        return None;
    }
    sorted
        .into_iter()
        .find(|(_, count)| *count >= total * q)
        .map(|(le, _)| le)
}
