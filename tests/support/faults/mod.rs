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
