//! A stand-in for the extension's Service in front of several `scion serve`
//! replicas: one loopback address the webhook configuration points at (url
//! mode), TCP connections spread over the replicas whose `/readyz` answers
//! 200, as kube-proxy spreads them over a Service's ready endpoints.
//!
//! What it models, and how: the endpoints follow readiness (each replica's
//! `/readyz` polled every 100 ms, as the kubelet's probe and the
//! EndpointSlice controller do) with a propagation delay
//! ([`ServiceOptions::propagation`], 1 s by default: kube-proxy programs a
//! change about a second after it). A connection goes to the next ready
//! endpoint (round robin) and is spliced byte for byte (TLS stays end to
//! end, between the API server and scion). A connection to an endpoint that
//! no longer listens fails, as it does behind kube-proxy: nothing here
//! retries.
//!
//! The stand-in exists because the test bed has no kube-proxy and no pod
//! network; everything else in the scenarios is real.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};

/// One replica behind the Service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    /// Its HTTPS webhook listener.
    pub webhook: SocketAddr,
    /// Its health listener (`/readyz`).
    pub health: SocketAddr,
}

impl Endpoint {
    pub fn of(scion: &super::super::testbed::Scion) -> Endpoint {
        Endpoint {
            webhook: scion.webhook,
            health: scion.health,
        }
    }
}

/// How the stand-in follows readiness.
#[derive(Debug, Clone, Copy)]
pub struct ServiceOptions {
    /// How often each endpoint's `/readyz` is asked.
    pub probe_period: Duration,
    /// How long a change of readiness takes to reach the forwarding.
    pub propagation: Duration,
}

impl Default for ServiceOptions {
    fn default() -> Self {
        ServiceOptions {
            probe_period: Duration::from_millis(100),
            propagation: Duration::from_secs(1),
        }
    }
}

#[derive(Debug)]
struct Member {
    endpoint: Endpoint,
    /// What the forwarding uses now.
    ready: bool,
    /// A readiness change seen by the probe, effective at the instant.
    pending: Option<(bool, Instant)>,
}

#[derive(Debug, Default)]
struct Shared {
    members: Mutex<Vec<Member>>,
    next: AtomicUsize,
    /// Connections accepted, and those that found no ready endpoint or could
    /// not reach the chosen one.
    accepted: AtomicUsize,
    refused: AtomicUsize,
}

/// The Service stand-in; stops when dropped.
pub struct Service {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Service {
    /// Listen on a free loopback port; no endpoints yet.
    pub async fn start(options: ServiceOptions) -> Service {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared::default());
        let accept = tokio::spawn(accept_loop(listener, shared.clone()));
        let probe = tokio::spawn(probe_loop(shared.clone(), options));
        Service {
            addr,
            shared,
            tasks: vec![accept, probe],
        }
    }

    /// Add a replica (not ready until its first probe answers 200 and the
    /// change has propagated).
    pub fn add(&self, endpoint: Endpoint) {
        self.shared.members.lock().unwrap().push(Member {
            endpoint,
            ready: false,
            pending: None,
        });
    }

    /// Remove a replica at once (its pod object is gone).
    pub fn remove(&self, endpoint: Endpoint) {
        self.shared
            .members
            .lock()
            .unwrap()
            .retain(|m| m.endpoint != endpoint);
    }

    /// The endpoints the forwarding uses now.
    pub fn ready(&self) -> Vec<Endpoint> {
        self.shared
            .members
            .lock()
            .unwrap()
            .iter()
            .filter(|m| m.ready)
            .map(|m| m.endpoint)
            .collect()
    }

    /// Wait until exactly `endpoints` are used for forwarding.
    pub async fn wait_ready(&self, endpoints: &[Endpoint], timeout: Duration) {
        let mut want = endpoints.to_vec();
        want.sort_by_key(|e| e.webhook);
        super::super::testbed::eventually(
            &format!("the Service's ready endpoints are {want:?}"),
            timeout,
            || async {
                let mut have = self.ready();
                have.sort_by_key(|e| e.webhook);
                (have == want).then_some(())
            },
        )
        .await;
    }

    /// `(accepted, refused)` connections so far.
    pub fn connections(&self) -> (usize, usize) {
        (
            self.shared.accepted.load(Ordering::SeqCst),
            self.shared.refused.load(Ordering::SeqCst),
        )
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        shared.accepted.fetch_add(1, Ordering::SeqCst);
        let backend = {
            let members = shared.members.lock().unwrap();
            let ready: Vec<Endpoint> = members
                .iter()
                .filter(|m| m.ready)
                .map(|m| m.endpoint)
                .collect();
            (!ready.is_empty())
                .then(|| ready[shared.next.fetch_add(1, Ordering::SeqCst) % ready.len()])
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let Some(backend) = backend else {
                shared.refused.fetch_add(1, Ordering::SeqCst);
                return;
            };
            match TcpStream::connect(backend.webhook).await {
                Ok(mut server) => {
                    let mut client = client;
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                }
                Err(_) => {
                    shared.refused.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
    }
}

async fn probe_loop(shared: Arc<Shared>, options: ServiceOptions) {
    loop {
        let endpoints: Vec<Endpoint> = shared
            .members
            .lock()
            .unwrap()
            .iter()
            .map(|m| m.endpoint)
            .collect();
        let mut results = Vec::new();
        for endpoint in endpoints {
            results.push((endpoint, readyz(endpoint.health).await));
        }
        apply_probes(&shared, &results, options.propagation);
        tokio::time::sleep(options.probe_period).await;
    }
}

/// Take the probes' results in: a change of readiness becomes effective
/// `propagation` after it was first seen.
fn apply_probes(shared: &Shared, results: &[(Endpoint, bool)], propagation: Duration) {
    let now = Instant::now();
    let mut members = shared.members.lock().unwrap();
    for member in members.iter_mut() {
        let Some((_, ready)) = results.iter().find(|(e, _)| *e == member.endpoint) else {
            continue;
        };
        match member.pending {
            _ if *ready == member.ready => member.pending = None,
            Some((want, _)) if want == *ready => {}
            _ => member.pending = Some((*ready, now + propagation)),
        }
        if let Some((want, at)) = member.pending
            && now >= at
        {
            member.ready = want;
            member.pending = None;
        }
    }
}

/// Whether `GET /readyz` answers 200 within a second.
async fn readyz(addr: SocketAddr) -> bool {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let ask = async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        stream
            .write_all(b"GET /readyz HTTP/1.1\r\nHost: scion\r\nConnection: close\r\n\r\n")
            .await
            .ok()?;
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).await.ok()?;
        Some(&head[9..12] == b"200")
    };
    tokio::time::timeout(Duration::from_secs(1), ask)
        .await
        .ok()
        .flatten()
        .unwrap_or(false)
}
