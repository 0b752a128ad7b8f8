//! Hostile clients against a running `scion serve`, on loopback only, every
//! loop bounded. Each case reports PASS or FAIL with its figures on one
//! `CASE` line (details on the lines after it). `scripts/attack.sh` builds
//! the release binary, starts a fresh server per case (with the flags the
//! case asks for) and runs them all.
//!
//! ```text
//! cargo run --release --example attack -- --list            # name|server flags|open-file limit|description
//! cargo run --release --example attack -- --target 127.0.0.1:18443 --health 127.0.0.1:18444 \
//!     --metrics 127.0.0.1:18445 --ca certs/ca.crt --server-pid PID CASE...
//! ```
//!
//! Adding a case: write an `async fn(Arc<Ctx>) -> Report` (the helpers
//! below open TLS and raw connections, start the [`Monitor`] — probes,
//! paced valid reviews and the server's memory, measured from a child
//! process — and read the server's metrics and log), then add one [`Case`]
//! line to [`CASES`] with the server flags and open-file limit it needs.
//! The script picks it up from `--list` (`name|flags|nofile|description`).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser;
use futures::future::BoxFuture;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::{Semaphore, watch};

/// The hostile seed-webhook inputs of issue 27, as the tests and the bench
/// build them.
#[path = "../tests/support/hostile.rs"]
#[allow(dead_code)]
mod hostile;

/// Every hostile loop and wait is bounded by this, whatever the case.
const CASE_LIMIT: Duration = Duration::from_secs(300);
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

#[derive(Debug, Parser)]
#[command(about = "Hostile clients against scion serve on loopback")]
struct Args {
    /// Print the cases, one a line: name|server flags|open-file limit for the server|description.
    #[arg(long)]
    list: bool,
    /// The HTTPS webhook listener (loopback only).
    #[arg(long, default_value = "127.0.0.1:18443")]
    target: SocketAddr,
    /// The health listener.
    #[arg(long, default_value = "127.0.0.1:18444")]
    health: SocketAddr,
    /// The metrics listener.
    #[arg(long, default_value = "127.0.0.1:18445")]
    metrics: SocketAddr,
    /// CA certificate the server's certificate chains to.
    #[arg(long, value_name = "FILE")]
    ca: Option<PathBuf>,
    /// The server's process id (for its memory from /proc).
    #[arg(long)]
    server_pid: Option<u32>,
    /// The server's log file (some cases count lines in it).
    #[arg(long, value_name = "FILE")]
    server_log: Option<PathBuf>,
    /// A valid AdmissionReview the server answers with `allowed: true`.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "examples/reviews/aws-kube-controller-manager.json"
    )]
    review: PathBuf,
    /// Connections per idle-connection case.
    #[arg(long, default_value_t = 10_000)]
    connections: usize,
    /// Handshakes in progress at once while opening them.
    #[arg(long, default_value_t = 32)]
    open_concurrency: usize,
    /// New connections per second while opening them. The attacker shares
    /// the server's CPUs here; an unpaced storm of handshakes measures the
    /// attacker's own CPU use as much as the server's.
    #[arg(long, default_value_t = 1000)]
    open_rate: u32,
    /// The server's first-request deadline.
    #[arg(long, default_value = "10", value_name = "SECONDS")]
    first_request_timeout: f64,
    /// The server's idle timeout.
    #[arg(long, default_value = "30", value_name = "SECONDS")]
    idle_timeout: f64,
    /// A connection counts as closed in time up to this after its deadline.
    #[arg(long, default_value = "2", value_name = "SECONDS")]
    slack: f64,
    /// Seconds of each valid-traffic run of the `mixed` case.
    #[arg(long, default_value_t = 10)]
    duration: u64,
    /// Body size of the `chunks` case (sent in one-byte chunks, then in 64-byte chunks).
    #[arg(long, default_value_t = 1_500_000)]
    chunks: usize,
    /// Internal: run only the measuring clients (VALID,EVERY_MS) until stdin closes.
    #[arg(long, hide = true)]
    monitor: Option<String>,
    /// The cases to run (default: all).
    cases: Vec<String>,
}

/// A case of the attack: what it needs from the server, and how to run it.
struct Case {
    name: &'static str,
    about: &'static str,
    /// Extra `scion serve` flags.
    server_flags: &'static [&'static str],
    /// Open-file limit to start the server with (`None`: unchanged).
    server_nofile: Option<u64>,
    run: fn(Arc<Ctx>) -> BoxFuture<'static, Report>,
}

const CASES: &[Case] = &[
    Case {
        name: "silent-tls",
        about: "TLS handshakes (ALPN h2), then not a byte: closed at the first-request deadline",
        server_flags: &[],
        server_nofile: None,
        run: |ctx| Box::pin(idle_case(ctx, "silent-tls", Idle::SilentTls)),
    },
    Case {
        name: "partial-preface",
        about: "16 of the 24 bytes of the HTTP/2 preface: closed at the first-request deadline",
        server_flags: &[],
        server_nofile: None,
        run: |ctx| Box::pin(idle_case(ctx, "partial-preface", Idle::PartialPreface)),
    },
    Case {
        name: "idle-h2",
        about: "HTTP/2 preface and SETTINGS, no request: closed at the first-request deadline",
        server_flags: &[],
        server_nofile: None,
        run: |ctx| Box::pin(idle_case(ctx, "idle-h2", Idle::IdleH2)),
    },
    Case {
        name: "open-headers",
        about: "HEADERS without END_HEADERS, never continued: closed at the first-request deadline",
        server_flags: &[],
        server_nofile: None,
        run: |ctx| Box::pin(idle_case(ctx, "open-headers", Idle::OpenHeaders)),
    },
    Case {
        name: "slow-h1",
        about: "an HTTP/1.1 request head that never ends: closed at the first-request deadline",
        server_flags: &[],
        server_nofile: None,
        run: |ctx| Box::pin(idle_case(ctx, "slow-h1", Idle::SlowH1)),
    },
    Case {
        name: "idle-h1",
        about: "one answered HTTP/1.1 request, then silence: closed at the idle timeout",
        server_flags: &[],
        server_nofile: None,
        run: |ctx| Box::pin(idle_case(ctx, "idle-h1", Idle::IdleH1)),
    },
    Case {
        name: "chunks",
        about: "a 1.5 MB review in one-byte chunks (refused early) and in 64-byte chunks (answered), alone and four at once: peak RSS",
        server_flags: &[],
        server_nofile: None,
        run: |ctx| Box::pin(chunks_case(ctx)),
    },
    Case {
        name: "mixed",
        about: "valid reviews on 16 connections, undisturbed and with hostile clients: throughput and failures",
        server_flags: &[],
        server_nofile: None,
        run: |ctx| Box::pin(mixed_case(ctx)),
    },
    Case {
        name: "fd-exhaustion",
        about: "open-file limit 1024, 3000 silent TCP clients: the cap holds, probes answer, no log flood",
        server_flags: &[],
        server_nofile: Some(1024),
        run: |ctx| Box::pin(fd_case(ctx, "fd-exhaustion", true)),
    },
    Case {
        name: "emfile",
        about: "open-file limit 1024 but --max-connections 4000, 3000 silent TCP clients: accepts fail, one warning per burst",
        server_flags: &["--max-connections", "4000"],
        server_nofile: Some(1024),
        run: |ctx| Box::pin(fd_case(ctx, "emfile", false)),
    },
    Case {
        name: "flags",
        about: "a review with 50,000 flags moved, shuffled, reversed and interleaved: answered < 100 ms, peak RSS < 64 MiB",
        server_flags: &[],
        server_nofile: None,
        run: |ctx| Box::pin(flags_case(ctx)),
    },
    Case {
        name: "strict",
        about: "bodies that are not valid JSON wherever the fault sits, a 6.9 MB uid, a non-object object, a duplicate request: one rule",
        server_flags: &[],
        server_nofile: None,
        run: |ctx| Box::pin(strict_case(ctx)),
    },
    Case {
        name: "unit-sections",
        about: "kubelet units with 12,500 to 200,000 sections, then four of 200,000 at once: linear, valid reviews served, no work after the answers",
        server_flags: &[],
        server_nofile: None,
        run: |ctx| Box::pin(unit_sections_case(ctx)),
    },
    Case {
        name: "unit-long-lines",
        about: "250, 500 and 1,000 lines of 2,000 bytes before the kubelet unit's first section: linear",
        server_flags: &[],
        server_nofile: None,
        run: |ctx| Box::pin(long_lines_case(ctx)),
    },
    Case {
        name: "kubelet-memo",
        about: "256 reviews with another 2 MB kubelet configuration each, 256 with another 60 KB one, 16 with 5 MB: memory bounded and back near idle",
        server_flags: &[],
        server_nofile: None,
        run: |ctx| Box::pin(kubelet_memo_case(ctx)),
    },
    Case {
        name: "tiny-files",
        about: "spec.files with 212,500 to 850,000 one-key maps, then eight of 850,000 at once: refused in linear time within the memory shares",
        server_flags: &[],
        server_nofile: None,
        run: |ctx| Box::pin(files_case(ctx, "tiny-files")),
    },
    Case {
        name: "many-files",
        about: "12,500 to 50,000 ordinary files, then eight of 50,000 at once: refused in linear time within the memory shares",
        server_flags: &[],
        server_nofile: None,
        run: |ctx| Box::pin(files_case(ctx, "many-files")),
    },
    Case {
        name: "seed-denials",
        about: "denials of 5 MB values, Secrets with a canary value, an OSC on the Secret path: short, named once, no Secret value",
        server_flags: &[],
        server_nofile: None,
        run: |ctx| Box::pin(seed_denials_case(ctx)),
    },
    Case {
        name: "in-flight",
        about: "--max-requests-in-flight 16, 16 slow bodies then 200 requests: 429 at once",
        server_flags: &["--max-requests-in-flight", "16"],
        server_nofile: None,
        run: |ctx| Box::pin(in_flight_case(ctx)),
    },
];

/// What a case found.
struct Report {
    name: &'static str,
    pass: bool,
    figures: Vec<(String, String)>,
    details: Vec<String>,
}

impl Report {
    fn new(name: &'static str) -> Self {
        Report {
            name,
            pass: true,
            figures: Vec::new(),
            details: Vec::new(),
        }
    }

    fn figure(&mut self, key: impl Into<String>, value: impl std::fmt::Display) {
        self.figures.push((key.into(), value.to_string()));
    }

    /// Record a requirement; the case fails if it does not hold.
    fn require(&mut self, ok: bool, what: impl Into<String>) {
        let what = what.into();
        self.details
            .push(format!("  {} {what}", if ok { "ok  " } else { "FAIL" }));
        self.pass &= ok;
    }

    fn print(&self) {
        let figures: Vec<String> = self
            .figures
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        println!(
            "CASE {} {} {}",
            self.name,
            if self.pass { "PASS" } else { "FAIL" },
            figures.join(" ")
        );
        for line in &self.details {
            println!("{line}");
        }
    }
}

/// Shared by all cases.
struct Ctx {
    args: Args,
    tls_h2: Arc<rustls::ClientConfig>,
    tls_h1: Arc<rustls::ClientConfig>,
    /// The valid review, compact JSON.
    review: Bytes,
    /// Rotates the loopback source address, so tens of thousands of
    /// connections never run out of ephemeral ports (all of 127/8 is local).
    connects: AtomicU32,
}

impl Ctx {
    fn first_request(&self) -> Duration {
        Duration::from_secs_f64(self.args.first_request_timeout)
    }

    fn idle(&self) -> Duration {
        Duration::from_secs_f64(self.args.idle_timeout)
    }

    fn slack(&self) -> Duration {
        Duration::from_secs_f64(self.args.slack)
    }

    /// A TCP connection to the webhook port from 127.0.0.2–127.0.0.251.
    async fn tcp(&self) -> std::io::Result<TcpStream> {
        let n = self.connects.fetch_add(1, Ordering::Relaxed);
        let source = Ipv4Addr::new(127, 0, 0, 2 + ((n / 20_000) % 250) as u8);
        let socket = TcpSocket::new_v4()?;
        socket.bind(SocketAddr::new(IpAddr::V4(source), 0))?;
        match tokio::time::timeout(Duration::from_secs(5), socket.connect(self.args.target)).await {
            Ok(result) => result,
            Err(_) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "connect timed out",
            )),
        }
    }

    async fn tls(
        &self,
        config: &Arc<rustls::ClientConfig>,
    ) -> anyhow::Result<tokio_rustls::client::TlsStream<TcpStream>> {
        let tcp = self.tcp().await?;
        let connector = tokio_rustls::TlsConnector::from(config.clone());
        let tls = tokio::time::timeout(
            Duration::from_secs(10),
            connector.connect(ServerName::try_from("localhost")?, tcp),
        )
        .await
        .context("TLS handshake timed out")??;
        Ok(tls)
    }

    /// The server's VmRSS and VmHWM in KiB.
    fn server_memory(&self) -> Option<(u64, u64)> {
        let pid = self.args.server_pid?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        };
        Some((field("VmRSS:")?, field("VmHWM:")?))
    }

    /// Start the server's peak RSS (VmHWM) afresh from its current RSS
    /// (`/proc/PID/clear_refs`, Linux 4.0), so the next peak is one
    /// request's.
    fn reset_peak(&self) {
        if let Some(pid) = self.args.server_pid {
            let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
        }
    }

    /// One sample of the server's metrics text.
    async fn metric(&self, series: &str) -> Option<f64> {
        let (_, text) = http_get(self.args.metrics, "/metrics").await.ok()?;
        text.lines().find_map(|line| {
            line.strip_prefix(series)?
                .strip_prefix(' ')?
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1}MiB", kib as f64 / 1024.0)
}

fn ms(d: Duration) -> String {
    format!("{:.2}ms", d.as_secs_f64() * 1000.0)
}

/// The `q` quantile of `samples` (sorted in place).
fn quantile(samples: &mut [Duration], q: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort_unstable();
    let index = ((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1;
    samples[index]
}

/// Plain HTTP/1.1 GET on a fresh connection, as the kubelet probes.
async fn http_get(addr: SocketAddr, path: &str) -> anyhow::Result<(u16, String)> {
    let request = async {
        let tcp = TcpStream::connect(addr).await?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
        tokio::spawn(conn);
        let request = hyper::Request::get(path)
            .header(hyper::header::HOST, "localhost")
            .body(Full::new(Bytes::new()))?;
        let response = sender.send_request(request).await?;
        let status = response.status().as_u16();
        let body = response.into_body().collect().await?.to_bytes();
        anyhow::Ok((status, String::from_utf8_lossy(&body).into_owned()))
    };
    tokio::time::timeout(Duration::from_secs(5), request)
        .await
        .context("timed out")?
}

/// A keep-alive HTTP/1.1 connection for valid reviews.
struct Valid {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
}

impl Valid {
    async fn open(ctx: &Ctx) -> anyhow::Result<Valid> {
        let tcp = TcpStream::connect(ctx.args.target).await?;
        let connector = tokio_rustls::TlsConnector::from(ctx.tls_h1.clone());
        let tls = connector
            .connect(ServerName::try_from("localhost")?, tcp)
            .await?;
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
        tokio::spawn(conn);
        Ok(Valid { sender })
    }

    /// One review; `Ok(latency)` for HTTP 200 with `"allowed":true`.
    async fn review(&mut self, body: &Bytes) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let request = hyper::Request::post("/controlplane")
            .header(hyper::header::HOST, "localhost")
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(body.clone()))?;
        let answer = async {
            self.sender.ready().await?;
            let response = self.sender.send_request(request).await?;
            let status = response.status();
            let body = response.into_body().collect().await?.to_bytes();
            anyhow::Ok((status, body))
        };
        let (status, body) = tokio::time::timeout(Duration::from_secs(10), answer)
            .await
            .context("no answer within 10 s")??;
        if status != 200 || !contains(&body, b"\"allowed\":true") {
            bail!(
                "HTTP {status}: {}",
                String::from_utf8_lossy(&body[..body.len().min(200)])
            );
        }
        Ok(started.elapsed())
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Background measurements while a case runs: `/healthz` every 100 ms on a
/// fresh connection, paced valid reviews on keep-alive connections, the
/// server's resident memory every 100 ms.
struct Monitor {
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

#[derive(Default)]
struct Samples {
    /// When the measuring started, and the slowest answers (latency, offset).
    start: Option<Instant>,
    slowest: Vec<(Duration, Duration)>,
    probes: Vec<Duration>,
    probe_failures: u64,
    reviews: Vec<Duration>,
    review_failures: u64,
    review_errors: Vec<String>,
    peak_rss_kib: u64,
}

impl Samples {
    /// Note a review's latency (and keep the ten slowest with their time).
    fn review(&mut self, latency: Duration) {
        self.reviews.push(latency);
        let start = *self.start.get_or_insert_with(Instant::now);
        self.slowest.push((latency, start.elapsed()));
        if self.slowest.len() > 20 {
            self.slowest
                .sort_unstable_by_key(|s| std::cmp::Reverse(s.0));
            self.slowest.truncate(10);
        }
    }

    fn merge(&mut self, other: Samples) {
        self.slowest.extend(other.slowest);
        self.slowest
            .sort_unstable_by_key(|s| std::cmp::Reverse(s.0));
        self.slowest.truncate(10);
        self.probes.extend(other.probes);
        self.probe_failures += other.probe_failures;
        self.reviews.extend(other.reviews);
        self.review_failures += other.review_failures;
        self.review_errors.extend(other.review_errors);
        self.peak_rss_kib = self.peak_rss_kib.max(other.peak_rss_kib);
    }

    fn to_json(&self) -> String {
        let micros = |v: &[Duration]| v.iter().map(|d| d.as_micros() as u64).collect::<Vec<_>>();
        serde_json::json!({
            "probes": micros(&self.probes),
            "probe_failures": self.probe_failures,
            "reviews": micros(&self.reviews),
            "review_failures": self.review_failures,
            "review_errors": self.review_errors.iter().take(10).collect::<Vec<_>>(),
            "peak_rss_kib": self.peak_rss_kib,
            "slowest": self.slowest.iter().map(|(l, at)| [l.as_micros() as u64, at.as_micros() as u64]).collect::<Vec<_>>(),
        })
        .to_string()
    }

    fn from_json(text: &str) -> Option<Samples> {
        let value: serde_json::Value = serde_json::from_str(text).ok()?;
        let durations = |key: &str| -> Option<Vec<Duration>> {
            value[key]
                .as_array()?
                .iter()
                .map(|v| v.as_u64().map(Duration::from_micros))
                .collect()
        };
        Some(Samples {
            start: None,
            slowest: value["slowest"]
                .as_array()?
                .iter()
                .filter_map(|pair| {
                    Some((
                        Duration::from_micros(pair[0].as_u64()?),
                        Duration::from_micros(pair[1].as_u64()?),
                    ))
                })
                .collect(),
            probes: durations("probes")?,
            probe_failures: value["probe_failures"].as_u64()?,
            reviews: durations("reviews")?,
            review_failures: value["review_failures"].as_u64()?,
            review_errors: value["review_errors"]
                .as_array()?
                .iter()
                .filter_map(|e| e.as_str().map(str::to_string))
                .collect(),
            peak_rss_kib: value["peak_rss_kib"].as_u64()?,
        })
    }

    /// Figures and requirements: probes all answered, reviews all allowed
    /// with `review_p99` at most.
    fn report(mut self, report: &mut Report, review_p99: Option<Duration>) {
        let probe_p99 = quantile(&mut self.probes, 0.99);
        let probe_max = self.probes.last().copied().unwrap_or_default();
        report.figure("healthz", self.probes.len());
        report.figure("healthz_failed", self.probe_failures);
        report.figure("healthz_p99", ms(probe_p99));
        report.figure("healthz_max", ms(probe_max));
        report.require(
            self.probe_failures == 0 && !self.probes.is_empty(),
            format!(
                "/healthz answered {} times, {} failures, p99 {}, max {}",
                self.probes.len(),
                self.probe_failures,
                ms(probe_p99),
                ms(probe_max)
            ),
        );
        if let Some(limit) = review_p99 {
            let p50 = quantile(&mut self.reviews, 0.5);
            let p99 = quantile(&mut self.reviews, 0.99);
            let max = self.reviews.last().copied().unwrap_or_default();
            report.figure("reviews", self.reviews.len());
            report.figure("reviews_failed", self.review_failures);
            report.figure("review_p50", ms(p50));
            report.figure("review_p99", ms(p99));
            report.figure("review_max", ms(max));
            report.require(
                self.review_failures == 0 && !self.reviews.is_empty(),
                format!(
                    "valid reviews: {} answered, {} failed {:?}",
                    self.reviews.len(),
                    self.review_failures,
                    self.review_errors.iter().take(3).collect::<Vec<_>>()
                ),
            );
            report.require(
                p99 < limit,
                format!("valid reviews p99 {} < {}", ms(p99), ms(limit)),
            );
            let slowest: Vec<String> = self
                .slowest
                .iter()
                .map(|(latency, at)| format!("{} at {:.1}s", ms(*latency), at.as_secs_f64()))
                .collect();
            report
                .details
                .push(format!("  slowest reviews: {}", slowest.join(", ")));
        }
        if self.peak_rss_kib > 0 {
            report.figure("peak_rss", mib(self.peak_rss_kib));
        }
    }
}

/// Run `work` on a thread of its own (a single-threaded runtime), so the
/// measuring clients are not delayed by the hostile ones sharing this
/// process's runtime.
fn on_own_thread<F, Fut, T>(work: F) -> tokio::sync::oneshot::Receiver<T>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = T>,
    T: Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for the measuring thread");
        let _ = tx.send(runtime.block_on(work()));
    });
    rx
}

/// The measuring loop of a [`Monitor`]: `/healthz` every 100 ms, `valid`
/// connections sending a review every `every`, the server's memory; until
/// `stopped`. Tells `ready` once the valid connections are open.
async fn measure(
    ctx: Arc<Ctx>,
    valid: usize,
    every: Duration,
    stopped: watch::Receiver<bool>,
    ready: tokio::sync::oneshot::Sender<anyhow::Result<()>>,
) -> Samples {
    let until = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let mut conns = Vec::new();
    for _ in 0..valid {
        match Valid::open(&ctx).await {
            Ok(conn) => conns.push(conn),
            Err(err) => {
                let _ = ready.send(Err(err));
                return Samples::default();
            }
        }
    }
    let _ = ready.send(Ok(()));
    let mut tasks = Vec::new();
    {
        let ctx = ctx.clone();
        let stopped = stopped.clone();
        tasks.push(tokio::spawn(async move {
            let mut samples = Samples::default();
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            let mut stop = std::pin::pin!(until(stopped));
            loop {
                tokio::select! {
                    () = &mut stop => break,
                    _ = tick.tick() => {}
                }
                let started = Instant::now();
                match http_get(ctx.args.health, "/healthz").await {
                    Ok((200, _)) => samples.probes.push(started.elapsed()),
                    _ => samples.probe_failures += 1,
                }
                if let Some((rss, _)) = ctx.server_memory() {
                    samples.peak_rss_kib = samples.peak_rss_kib.max(rss);
                }
            }
            samples
        }));
    }
    for mut conn in conns {
        let ctx = ctx.clone();
        let stopped = stopped.clone();
        tasks.push(tokio::spawn(async move {
            let mut samples = Samples::default();
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut stop = std::pin::pin!(until(stopped));
            loop {
                tokio::select! {
                    () = &mut stop => break,
                    _ = tick.tick() => {}
                }
                match conn.review(&ctx.review).await {
                    Ok(latency) => samples.review(latency),
                    Err(err) => {
                        samples.review_failures += 1;
                        samples.review_errors.push(err.to_string());
                        match Valid::open(&ctx).await {
                            Ok(fresh) => conn = fresh,
                            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                        }
                    }
                }
            }
            samples
        }));
    }
    let mut all = Samples::default();
    for task in tasks {
        if let Ok(samples) = task.await {
            all.merge(samples);
        }
    }
    all
}

impl Monitor {
    /// Start the measuring in a child process of its own (this binary with
    /// `--monitor`), so neither this process's hostile clients nor its
    /// allocator delay the measurements. `valid` connections each send a
    /// review every `every`. Fails if a valid connection cannot be opened.
    async fn start(ctx: &Arc<Ctx>, valid: usize, every: Duration) -> anyhow::Result<Monitor> {
        use tokio::io::AsyncBufReadExt as _;
        let args = &ctx.args;
        let mut command = tokio::process::Command::new(std::env::current_exe()?);
        command
            .arg("--monitor")
            .arg(format!("{valid},{}", every.as_millis()))
            .arg("--target")
            .arg(args.target.to_string())
            .arg("--health")
            .arg(args.health.to_string())
            .arg("--metrics")
            .arg(args.metrics.to_string())
            .arg("--review")
            .arg(&args.review)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true);
        if let Some(ca) = &args.ca {
            command.arg("--ca").arg(ca);
        }
        if let Some(pid) = args.server_pid {
            command.arg("--server-pid").arg(pid.to_string());
        }
        let mut child = command
            .spawn()
            .context("cannot start the monitor process")?;
        let stdin = child.stdin.take();
        let mut lines =
            tokio::io::BufReader::new(child.stdout.take().context("no stdout")?).lines();
        let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .context("the monitor did not start")??
            .unwrap_or_default();
        if first != "READY" {
            bail!("monitor: {first}");
        }
        Ok(Monitor {
            child,
            stdin,
            lines,
        })
    }

    async fn finish(mut self) -> Samples {
        drop(self.stdin.take());
        let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line()).await;
        let _ = self.child.wait().await;
        match line {
            Ok(Ok(Some(json))) => Samples::from_json(&json).unwrap_or_default(),
            _ => Samples::default(),
        }
    }
}

/// `--monitor VALID,EVERY_MS`: measure until stdin closes; `READY` first,
/// the samples as one JSON line last.
fn run_monitor(ctx: Arc<Ctx>, spec: &str) -> anyhow::Result<()> {
    let (valid, every) = spec.split_once(',').context("--monitor VALID,EVERY_MS")?;
    let (valid, every): (usize, u64) = (valid.parse()?, every.parse()?);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let (stop, stopped) = watch::channel(false);
        let (ready_tx, ready) = tokio::sync::oneshot::channel();
        let measuring = tokio::spawn(measure(
            ctx,
            valid,
            Duration::from_millis(every),
            stopped,
            ready_tx,
        ));
        match ready.await {
            Ok(Ok(())) => println!("READY"),
            Ok(Err(err)) => {
                println!("ERROR {err:#}");
                return anyhow::Ok(());
            }
            Err(_) => {
                println!("ERROR the measuring ended");
                return anyhow::Ok(());
            }
        }
        // Until the parent closes stdin, or the case limit.
        let mut stdin = tokio::io::stdin();
        let mut buf = [0u8; 64];
        let _ = tokio::time::timeout(CASE_LIMIT, async {
            while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
        })
        .await;
        let _ = stop.send(true);
        let samples = measuring.await?;
        println!("{}", samples.to_json());
        anyhow::Ok(())
    })
}

/// The kinds of connections that say nothing, or not enough.
#[derive(Debug, Clone, Copy)]
enum Idle {
    SilentTls,
    PartialPreface,
    IdleH2,
    OpenHeaders,
    SlowH1,
    IdleH1,
}

/// An HTTP/2 frame.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len();
    let mut out = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// HPACK literals without indexing, no Huffman coding.
fn hpack(headers: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in headers {
        out.push(0x00);
        out.push(name.len() as u8);
        out.extend_from_slice(name.as_bytes());
        out.push(value.len() as u8);
        out.extend_from_slice(value.as_bytes());
    }
    out
}

/// A connection, TLS or plain.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}
type Stream = Box<dyn Io>;

/// Open one connection of `kind` and bring it to its silent state; returns
/// it and the moment it fell silent.
async fn open_idle(ctx: &Ctx, kind: Idle) -> anyhow::Result<(Stream, Instant)> {
    let config = match kind {
        Idle::SlowH1 | Idle::IdleH1 => &ctx.tls_h1,
        _ => &ctx.tls_h2,
    };
    let mut tls = ctx.tls(config).await?;
    match kind {
        Idle::SilentTls => {}
        Idle::PartialPreface => tls.write_all(&PREFACE[..16]).await?,
        Idle::IdleH2 => {
            tls.write_all(PREFACE).await?;
            tls.write_all(&frame(0x4, 0, 0, &[])).await?;
        }
        Idle::OpenHeaders => {
            let headers = hpack(&[
                (":method", "POST"),
                (":scheme", "https"),
                (":path", "/controlplane"),
                (":authority", "localhost"),
            ]);
            tls.write_all(PREFACE).await?;
            tls.write_all(&frame(0x4, 0, 0, &[])).await?;
            tls.write_all(&frame(0x1, 0x1, 1, &headers[..24])).await?;
        }
        Idle::SlowH1 => {
            tls.write_all(b"POST /controlplane HTTP/1.1\r\nhost: localhost\r\n")
                .await?;
        }
        Idle::IdleH1 => {
            let head = format!(
                "POST /controlplane HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                ctx.review.len()
            );
            tls.write_all(head.as_bytes()).await?;
            tls.write_all(&ctx.review).await?;
            read_response(&mut tls).await?;
        }
    }
    tls.flush().await?;
    Ok((Box::new(tls), Instant::now()))
}

/// Read one HTTP/1.1 response with a content-length body.
async fn read_response(stream: &mut (impl AsyncRead + Unpin)) -> anyhow::Result<Vec<u8>> {
    let mut data = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let read = async {
        loop {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                bail!("closed before the answer was complete");
            }
            data.extend_from_slice(&buf[..n]);
            if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                if data.len() >= end + 4 + length {
                    return anyhow::Ok(());
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .context("no complete answer within 30 s")??;
    Ok(data)
}

/// Wait until the server closes `stream` (reading and discarding); how long
/// after `since` that was. Gives up after `limit`.
async fn wait_closed(mut stream: Stream, since: Instant, limit: Duration) -> Option<Duration> {
    let mut buf = [0u8; 1024];
    let wait = async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return since.elapsed(),
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(limit, wait).await.ok()
}

async fn idle_case(ctx: Arc<Ctx>, name: &'static str, kind: Idle) -> Report {
    let mut report = Report::new(name);
    let deadline = match kind {
        Idle::IdleH1 => ctx.idle(),
        _ => ctx.first_request(),
    };
    let limit = deadline + ctx.slack();
    let monitor = match Monitor::start(&ctx, 4, Duration::from_millis(20)).await {
        Ok(monitor) => monitor,
        Err(err) => {
            report.require(false, format!("cannot start the valid traffic: {err:#}"));
            return report;
        }
    };
    let started = Instant::now();
    let opening = Arc::new(Semaphore::new(ctx.args.open_concurrency));
    let open_failures = Arc::new(AtomicU64::new(0));
    let mut waiting = tokio::task::JoinSet::new();
    let mut pace = tokio::time::interval(Duration::from_secs(1) / ctx.args.open_rate.max(1));
    pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    for _ in 0..ctx.args.connections {
        pace.tick().await;
        let permit = opening.clone().acquire_owned().await.expect("never closed");
        let ctx = ctx.clone();
        let open_failures = open_failures.clone();
        waiting.spawn(async move {
            let opened = open_idle(&ctx, kind).await;
            drop(permit);
            match opened {
                Ok((stream, since)) => Some(wait_closed(stream, since, limit).await),
                Err(_) => {
                    open_failures.fetch_add(1, Ordering::Relaxed);
                    None
                }
            }
        });
    }
    let opened_in = started.elapsed();
    let peak_open = ctx
        .metric("scion_connections_open{listener=\"https\"}")
        .await
        .unwrap_or(0.0);
    let mut closed_after = Vec::new();
    let mut late = 0u64;
    while let Some(joined) = waiting.join_next().await {
        match joined {
            Ok(Some(Some(after))) => closed_after.push(after),
            Ok(Some(None)) => late += 1,
            _ => {}
        }
    }
    let samples = monitor.finish().await;
    let failures = open_failures.load(Ordering::Relaxed);
    let p50 = quantile(&mut closed_after, 0.5);
    let max = closed_after.last().copied().unwrap_or_default();
    report.figure("connections", ctx.args.connections);
    report.figure("open_rate", ctx.args.open_rate);
    report.figure("opened_in", format!("{:.1}s", opened_in.as_secs_f64()));
    report.figure("open_failed", failures);
    report.figure("open_at_server", peak_open);
    report.figure("deadline", format!("{}s", deadline.as_secs_f64()));
    report.figure("closed_p50", format!("{:.2}s", p50.as_secs_f64()));
    report.figure("closed_max", format!("{:.2}s", max.as_secs_f64()));
    report.figure("not_closed", late);
    report.require(
        failures == 0,
        format!("all {} connections opened", ctx.args.connections),
    );
    report.require(
        late == 0 && closed_after.len() as u64 + failures == ctx.args.connections as u64,
        format!(
            "every connection closed within {:.1}s of falling silent ({late} were not)",
            limit.as_secs_f64()
        ),
    );
    samples.report(&mut report, Some(Duration::from_millis(10)));
    report
}

/// The chunked wire form of `body` in chunks of `size` bytes.
fn chunked(body: &[u8], size: usize) -> Vec<u8> {
    let mut wire = b"POST /controlplane HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
    wire.reserve(body.len() + body.len().div_ceil(size) * 8 + 5);
    for piece in body.chunks(size) {
        wire.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        wire.extend_from_slice(piece);
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(b"0\r\n\r\n");
    wire
}

/// The review padded with blanks (inside the JSON) to `size` bytes.
fn padded_review(review: &[u8], size: usize) -> Vec<u8> {
    let mut body = review.to_vec();
    let close = body.pop().expect("a JSON object ends with }");
    body.resize(size.max(review.len()) - 1, b' ');
    body.push(close);
    body
}

/// How a chunked request went.
struct Sent {
    /// The status line, if an answer arrived before the connection ended.
    status: Option<String>,
    answer: String,
    /// Bytes of the request written before the server stopped taking them.
    written: usize,
    took: Duration,
}

/// Send `wire` on a new connection while reading the answer.
async fn send_chunked(ctx: &Ctx, wire: Arc<Vec<u8>>) -> anyhow::Result<Sent> {
    let started = Instant::now();
    let tls = ctx.tls(&ctx.tls_h1).await?;
    let (mut reader, mut writer) = tokio::io::split(tls);
    let writing = tokio::spawn(async move {
        let mut written = 0;
        for part in wire.chunks(64 * 1024) {
            if writer.write_all(part).await.is_err() {
                return written;
            }
            written += part.len();
        }
        let _ = writer.flush().await;
        written
    });
    let answer = tokio::time::timeout(Duration::from_secs(30), read_response(&mut reader)).await;
    let took = started.elapsed();
    let written = writing.await.unwrap_or(0);
    let answer = match answer {
        Ok(Ok(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
        Ok(Err(_)) => String::new(),
        Err(_) => bail!("no answer and no close within 30 s"),
    };
    Ok(Sent {
        status: answer.lines().next().map(str::to_string),
        answer,
        written,
        took,
    })
}

/// The server accepted it: HTTP 200, allowed.
fn answered(sent: &anyhow::Result<Sent>) -> bool {
    sent.as_ref().is_ok_and(|s| {
        s.status.as_deref() == Some("HTTP/1.1 200 OK") && s.answer.contains("\"allowed\":true")
    })
}

/// The server refused it early: HTTP 400 naming the small pieces, or the
/// connection reset before the answer could be read, with most of the
/// request never taken.
fn refused_early(sent: &anyhow::Result<Sent>, wire: usize) -> bool {
    sent.as_ref().is_ok_and(|s| {
        let refused = match &s.status {
            Some(status) => {
                status.starts_with("HTTP/1.1 400") && s.answer.contains("too many small pieces")
            }
            None => true,
        };
        refused && s.written < wire / 2
    })
}

async fn chunks_case(ctx: Arc<Ctx>) -> Report {
    let mut report = Report::new("chunks");
    let body = padded_review(&ctx.review, ctx.args.chunks);
    let tiny = Arc::new(chunked(&body, 1));
    let small = Arc::new(chunked(&body, 64));
    let before = ctx.server_memory();
    let monitor = match Monitor::start(&ctx, 0, Duration::from_secs(1)).await {
        Ok(monitor) => monitor,
        Err(err) => {
            report.require(false, format!("monitor: {err:#}"));
            return report;
        }
    };
    let parallel = |wire: &Arc<Vec<u8>>| {
        let tasks: Vec<_> = (0..4)
            .map(|_| {
                let ctx = ctx.clone();
                let wire = wire.clone();
                tokio::spawn(async move { send_chunked(&ctx, wire).await })
            })
            .collect();
        async move {
            let mut all = Vec::new();
            for task in tasks {
                all.push(task.await.map_err(anyhow::Error::from).and_then(|r| r));
            }
            all
        }
    };
    let tiny_one = send_chunked(&ctx, tiny.clone()).await;
    let tiny_four = parallel(&tiny).await;
    let after_tiny = ctx.server_memory();
    let small_one = send_chunked(&ctx, small.clone()).await;
    let small_four = parallel(&small).await;
    let after_small = ctx.server_memory();
    let samples = monitor.finish().await;

    report.figure("body_bytes", body.len());
    if let Some((rss, _)) = before {
        report.figure("rss_before", mib(rss));
    }
    report.figure("one_byte_chunks", body.len());
    report.figure("one_byte_wire", tiny.len());
    if let Ok(sent) = &tiny_one {
        report.figure("one_byte_written", sent.written);
        report.figure("one_byte_refused_in", ms(sent.took));
        report.figure(
            "one_byte_answer",
            sent.status
                .as_deref()
                .unwrap_or("(reset)")
                .replace(' ', "_"),
        );
    }
    report.require(
        refused_early(&tiny_one, tiny.len()),
        format!(
            "{} one-byte chunks: refused before half was taken",
            body.len()
        ),
    );
    report.require(
        tiny_four.iter().all(|s| refused_early(s, tiny.len())),
        "four in parallel: each refused before half was taken",
    );
    if let Some((_, hwm)) = after_tiny {
        report.figure("peak_rss_one_byte", mib(hwm));
        report.require(hwm < 64 * 1024, format!("peak RSS {} < 64 MiB", mib(hwm)));
    }
    report.figure("small_chunks", body.len().div_ceil(64));
    if let Ok(sent) = &small_one {
        report.figure("small_chunks_took", ms(sent.took));
    }
    report.require(
        answered(&small_one),
        format!(
            "the same review in {}-byte chunks: answered 200 allowed",
            64
        ),
    );
    report.require(
        small_four.iter().all(answered),
        "four of those in parallel: all answered 200 allowed",
    );
    if let Some((_, hwm)) = after_small {
        report.figure("peak_rss_small", mib(hwm));
        report.require(hwm < 64 * 1024, format!("peak RSS {} < 64 MiB", mib(hwm)));
    }
    for sent in tiny_four
        .iter()
        .chain(&small_four)
        .chain([&tiny_one, &small_one])
    {
        if let Err(err) = sent {
            report.details.push(format!("  error: {err:#}"));
        }
    }
    samples.report(&mut report, None);
    report
}

/// Valid reviews on `conns` connections as fast as they are answered, for
/// `duration`, from a thread of its own: answered count, failures, latencies.
async fn closed_loop(ctx: &Arc<Ctx>, conns: usize, duration: Duration) -> anyhow::Result<Samples> {
    let ctx = ctx.clone();
    let done = on_own_thread(move || async move {
        let mut opened = Vec::new();
        for _ in 0..conns {
            opened.push(Valid::open(&ctx).await?);
        }
        let end = Instant::now() + duration;
        let mut tasks = Vec::new();
        for mut conn in opened {
            let ctx = ctx.clone();
            tasks.push(tokio::spawn(async move {
                let mut samples = Samples::default();
                while Instant::now() < end {
                    match conn.review(&ctx.review).await {
                        Ok(latency) => samples.review(latency),
                        Err(err) => {
                            samples.review_failures += 1;
                            samples.review_errors.push(err.to_string());
                            match Valid::open(&ctx).await {
                                Ok(fresh) => conn = fresh,
                                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                            }
                        }
                    }
                }
                samples
            }));
        }
        let mut all = Samples::default();
        for task in tasks {
            all.merge(task.await?);
        }
        anyhow::Ok(all)
    });
    done.await.context("the load thread ended")?
}

/// Hostile clients for the `mixed` case until `stop`: `per_kind`
/// connections of each silent kind, reopened as the server closes them,
/// and one one-byte-chunk review at a time, back to back. Returns the
/// count of hostile connections opened and chunked reviews sent.
async fn hostile(ctx: Arc<Ctx>, per_kind: usize, stop: watch::Receiver<bool>) -> (u64, u64) {
    let opened = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    let kinds = [
        Idle::SilentTls,
        Idle::PartialPreface,
        Idle::IdleH2,
        Idle::OpenHeaders,
        Idle::SlowH1,
    ];
    for kind in kinds {
        for _ in 0..per_kind {
            let ctx = ctx.clone();
            let mut stop = stop.clone();
            let opened = opened.clone();
            tasks.push(tokio::spawn(async move {
                while !*stop.borrow() {
                    let held = async {
                        if let Ok((stream, since)) = open_idle(&ctx, kind).await {
                            opened.fetch_add(1, Ordering::Relaxed);
                            wait_closed(stream, since, CASE_LIMIT).await;
                        } else {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    };
                    tokio::select! {
                        () = held => {}
                        _ = stop.wait_for(|s| *s) => break,
                    }
                }
            }));
        }
    }
    let chunked = {
        let ctx = ctx.clone();
        let mut stop = stop.clone();
        tokio::spawn(async move {
            let body = padded_review(&ctx.review, ctx.args.chunks);
            let wires = [Arc::new(chunked(&body, 1)), Arc::new(chunked(&body, 64))];
            let mut pace = tokio::time::interval(Duration::from_millis(250));
            let mut sent = 0u64;
            while !*stop.borrow() {
                let wire = wires[(sent % 2) as usize].clone();
                tokio::select! {
                    _ = send_chunked(&ctx, wire) => sent += 1,
                    _ = stop.wait_for(|s| *s) => break,
                }
                tokio::select! {
                    _ = pace.tick() => {}
                    _ = stop.wait_for(|s| *s) => break,
                }
            }
            sent
        })
    };
    for task in tasks {
        let _ = task.await;
    }
    let chunked = chunked.await.unwrap_or(0);
    (opened.load(Ordering::Relaxed), chunked)
}

async fn mixed_case(ctx: Arc<Ctx>) -> Report {
    let mut report = Report::new("mixed");
    let duration = Duration::from_secs(ctx.args.duration);
    let per_kind = 400;
    let undisturbed = match closed_loop(&ctx, 16, duration).await {
        Ok(samples) => samples,
        Err(err) => {
            report.require(false, format!("undisturbed run: {err:#}"));
            return report;
        }
    };
    let (stop, stopped) = watch::channel(false);
    let attack = tokio::spawn(hostile(ctx.clone(), per_kind, stopped));
    // Let the hostile connections build up first.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let hostile_open = ctx
        .metric("scion_connections_open{listener=\"https\"}")
        .await
        .unwrap_or(0.0);
    let monitor = Monitor::start(&ctx, 0, Duration::from_secs(1)).await;
    let disturbed = closed_loop(&ctx, 16, duration).await;
    let probes = match monitor {
        Ok(monitor) => Some(monitor.finish().await),
        Err(_) => None,
    };
    let _ = stop.send(true);
    let (opened, chunked) = tokio::time::timeout(Duration::from_secs(30), attack)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or((0, 0));
    let mut disturbed = match disturbed {
        Ok(samples) => samples,
        Err(err) => {
            report.require(false, format!("disturbed run: {err:#}"));
            return report;
        }
    };
    let mut undisturbed = undisturbed;
    let rate = |s: &Samples| s.reviews.len() as f64 / duration.as_secs_f64();
    let (t0, t1) = (rate(&undisturbed), rate(&disturbed));
    report.figure("undisturbed_req_per_s", format!("{t0:.0}"));
    report.figure(
        "undisturbed_p99",
        ms(quantile(&mut undisturbed.reviews, 0.99)),
    );
    report.figure("undisturbed_failed", undisturbed.review_failures);
    report.figure("disturbed_req_per_s", format!("{t1:.0}"));
    report.figure("disturbed_p99", ms(quantile(&mut disturbed.reviews, 0.99)));
    report.figure("disturbed_failed", disturbed.review_failures);
    report.figure("ratio", format!("{:.2}", t1 / t0.max(1.0)));
    report.figure("hostile_open", hostile_open);
    report.figure("hostile_connections_opened", opened);
    report.figure("hostile_chunked_reviews", chunked);
    report.details.push(format!(
        "  hostile: {per_kind} connections of each of 5 silent kinds held open (reopened when closed); a {}-byte review every 250 ms, alternately in one-byte and 64-byte chunks",
        ctx.args.chunks
    ));
    report.require(
        undisturbed.review_failures == 0 && disturbed.review_failures == 0,
        format!(
            "no valid request failed ({} undisturbed, {} disturbed) {:?}",
            undisturbed.review_failures,
            disturbed.review_failures,
            disturbed.review_errors.iter().take(3).collect::<Vec<_>>()
        ),
    );
    report.require(
        t1 >= 0.8 * t0,
        format!("throughput with hostile clients {t1:.0} >= 80 % of {t0:.0} req/s"),
    );
    if let Some(probes) = probes {
        probes.report(&mut report, None);
    }
    report
}

/// Silent TCP clients against an open-file limit of 1024. `within_limit`:
/// the cap is below the limit (the default), so it must hold and nothing
/// may fail; otherwise the cap is above it, accepts fail for lack of
/// descriptors, and each burst of failures must be logged once.
async fn fd_case(ctx: Arc<Ctx>, name: &'static str, within_limit: bool) -> Report {
    let mut report = Report::new(name);
    let clients = 3000;
    let cap = ctx
        .metric("scion_connections_max{listener=\"https\"}")
        .await
        .unwrap_or(0.0);
    // A valid connection established before the flood keeps being served.
    let monitor = match Monitor::start(&ctx, 1, Duration::from_millis(100)).await {
        Ok(monitor) => monitor,
        Err(err) => {
            report.require(false, format!("monitor: {err:#}"));
            return report;
        }
    };
    let (stop, stopped) = watch::channel(false);
    let sampler = {
        let ctx = ctx.clone();
        let mut stopped = stopped.clone();
        tokio::spawn(async move {
            let mut peak = 0f64;
            while !*stopped.borrow() {
                if let Some(open) = ctx
                    .metric("scion_connections_open{listener=\"https\"}")
                    .await
                {
                    peak = peak.max(open);
                }
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(100)) => {}
                    _ = stopped.wait_for(|s| *s) => {}
                }
            }
            peak
        })
    };
    let opening = Arc::new(Semaphore::new(512));
    let mut held = tokio::task::JoinSet::new();
    let connected = Arc::new(AtomicU64::new(0));
    for _ in 0..clients {
        let permit = opening.clone().acquire_owned().await.expect("never closed");
        let ctx = ctx.clone();
        let connected = connected.clone();
        held.spawn(async move {
            let tcp = ctx.tcp().await;
            drop(permit);
            if let Ok(tcp) = tcp {
                connected.fetch_add(1, Ordering::Relaxed);
                // Silent until the server closes it (handshake timeout) or 30 s.
                let stream: Stream = Box::new(tcp);
                wait_closed(stream, Instant::now(), Duration::from_secs(30)).await;
            }
        });
    }
    while held.join_next().await.is_some() {}
    let _ = stop.send(true);
    let peak_open = sampler.await.unwrap_or(0.0);
    let samples = monitor.finish().await;
    // A new valid connection after the flood.
    let after = match Valid::open(&ctx).await {
        Ok(mut conn) => conn.review(&ctx.review).await.map(|_| ()),
        Err(err) => Err(err),
    };
    let failed_accepts = ctx
        .metric("scion_accept_failures_total{listener=\"https\"}")
        .await
        .unwrap_or(0.0);
    let log_lines = ctx.args.server_log.as_ref().and_then(|path| {
        let text = std::fs::read_to_string(path).ok()?;
        let count = |needle: &str| text.lines().filter(|l| l.contains(needle)).count();
        for line in text
            .lines()
            .filter(|l| l.contains("Too many open files"))
            .take(3)
        {
            report
                .details
                .push(format!("  server log: {}", &line[..line.len().min(240)]));
        }
        // Per listener: the webhook's (the probe listeners have bursts of their own).
        let https = |needle: &str| {
            text.lines()
                .filter(|l| l.contains(needle) && l.contains("listener=\"https\""))
                .count()
        };
        Some((
            count("Too many open files"),
            https("accept failed"),
            https("accepting connections again"),
        ))
    });
    report.figure("clients", clients);
    report.figure("tcp_connected", connected.load(Ordering::Relaxed));
    report.figure("cap", cap);
    report.figure("peak_open", peak_open);
    report.figure("failed_accepts", failed_accepts);
    if within_limit {
        report.require(
            cap > 0.0 && peak_open <= cap,
            format!("open connections stayed at or below the cap ({peak_open} <= {cap})"),
        );
        report.require(
            failed_accepts == 0.0,
            format!("no accept failed ({failed_accepts})"),
        );
    }
    if let Some((emfile, failed_lines, recovered_lines)) = log_lines {
        report.figure("log_emfile_lines", emfile);
        report.figure("log_accept_failed_lines", failed_lines);
        report.figure("log_recovered_lines", recovered_lines);
        report.require(
            failed_lines <= recovered_lines + 1,
            format!(
                "one 'accept failed' line per burst of the webhook listener ({failed_lines} lines, {recovered_lines} recoveries, {failed_accepts} failed accepts)"
            ),
        );
    }
    report.require(
        after.is_ok(),
        format!(
            "a new valid connection is served afterwards {:?}",
            after.err()
        ),
    );
    if within_limit {
        samples.report(&mut report, Some(Duration::from_millis(50)));
    } else {
        // Out of descriptors, the probe listeners cannot accept either:
        // the reason the default cap stays below the limit.
        report.figure("healthz", samples.probes.len());
        report.figure("healthz_failed", samples.probe_failures);
    }
    report
}

async fn in_flight_case(ctx: Arc<Ctx>) -> Report {
    let mut report = Report::new("in-flight");
    let slow = 16;
    let burst = 200;
    // Sixteen requests whose bodies trickle: they hold every slot.
    let mut trickling = Vec::new();
    for _ in 0..slow {
        let ctx = ctx.clone();
        trickling.push(tokio::spawn(async move {
            let mut tls = ctx.tls(&ctx.tls_h1).await?;
            tls.write_all(b"POST /controlplane HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n{").await?;
            tls.flush().await?;
            for _ in 0..60 {
                tokio::time::sleep(Duration::from_millis(200)).await;
                if tls.write_all(b" ").await.is_err() {
                    break;
                }
                let _ = tls.flush().await;
            }
            let answer = read_response(&mut tls).await.unwrap_or_default();
            anyhow::Ok(String::from_utf8_lossy(&answer).lines().next().unwrap_or("").to_string())
        }));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while ctx
        .metric("scion_admission_requests_in_flight")
        .await
        .unwrap_or(0.0)
        < slow as f64
    {
        if Instant::now() > deadline {
            report.require(false, "the slow requests never filled the slots");
            return report;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let monitor = Monitor::start(&ctx, 0, Duration::from_secs(1)).await;
    // Connect all first, then send every request at once: the time measured
    // is from the request to the 429, without the TLS handshakes.
    let mut connected = Vec::new();
    for _ in 0..burst {
        match ctx.tls(&ctx.tls_h1).await {
            Ok(tls) => connected.push(tls),
            Err(err) => {
                report.require(false, format!("cannot connect: {err:#}"));
                return report;
            }
        }
    }
    let (go_tx, go) = watch::channel(false);
    let mut answers = Vec::new();
    for mut tls in connected {
        let ctx = ctx.clone();
        let mut go = go.clone();
        answers.push(tokio::spawn(async move {
            let head = format!(
                "POST /controlplane HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                ctx.review.len()
            );
            let _ = go.wait_for(|go| *go).await;
            let sent = Instant::now();
            tls.write_all(head.as_bytes()).await?;
            tls.write_all(&ctx.review).await?;
            let answer = read_response(&mut tls).await?;
            anyhow::Ok((String::from_utf8_lossy(&answer).to_string(), sent.elapsed()))
        }));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let _ = go_tx.send(true);
    let mut refused = Vec::new();
    let mut other = Vec::new();
    for task in answers {
        match task.await {
            Ok(Ok((text, took))) if text.starts_with("HTTP/1.1 429") => {
                if text.contains("retry-after: 1")
                    && text.contains("too many admission requests in flight")
                {
                    refused.push(took);
                } else {
                    other.push(text.lines().next().unwrap_or("").to_string());
                }
            }
            Ok(Ok((text, _))) => other.push(text.lines().next().unwrap_or("").to_string()),
            Ok(Err(err)) => other.push(err.to_string()),
            Err(err) => other.push(err.to_string()),
        }
    }
    let peak = ctx
        .metric("scion_admission_requests_in_flight")
        .await
        .unwrap_or(0.0);
    let probes = match monitor {
        Ok(monitor) => Some(monitor.finish().await),
        Err(_) => None,
    };
    let mut slow_answers = Vec::new();
    for task in trickling {
        slow_answers.push(
            task.await
                .map_err(anyhow::Error::from)
                .and_then(|r| r)
                .unwrap_or_else(|e| e.to_string()),
        );
    }
    let after = match Valid::open(&ctx).await {
        Ok(mut conn) => conn.review(&ctx.review).await.map(|_| ()),
        Err(err) => Err(err),
    };
    let p99 = quantile(&mut refused, 0.99);
    report.figure("slow_requests", slow);
    report.figure("burst", burst);
    report.figure("refused_429", refused.len());
    report.figure("refused_p99", ms(p99));
    report.figure("in_flight_after_burst", peak);
    report.require(
        refused.len() == burst,
        format!(
            "every request beyond the cap got 429 with Retry-After ({} of {burst}; others: {:?})",
            refused.len(),
            other.iter().take(3).collect::<Vec<_>>()
        ),
    );
    report.require(
        p99 < Duration::from_millis(100),
        format!(
            "429 answers p99 {} < 100 ms ({burst} sent at once)",
            ms(p99)
        ),
    );
    report.require(
        slow_answers.iter().all(|a| a.starts_with("HTTP/1.1 408")),
        format!(
            "the trickling bodies ended with 408 ({:?})",
            slow_answers.iter().take(2).collect::<Vec<_>>()
        ),
    );
    report.require(
        after.is_ok(),
        format!("served again afterwards {:?}", after.err()),
    );
    if let Some(probes) = probes {
        probes.report(&mut report, None);
    }
    report
}

/// An answer to a raw review body: status, body, how long it took.
async fn post(ctx: &Ctx, body: Vec<u8>) -> anyhow::Result<(u16, Vec<u8>, Duration)> {
    post_to(ctx, "/controlplane", body).await
}

/// [`post`] to another webhook path.
async fn post_to(ctx: &Ctx, path: &str, body: Vec<u8>) -> anyhow::Result<(u16, Vec<u8>, Duration)> {
    let tcp = TcpStream::connect(ctx.args.target).await?;
    let connector = tokio_rustls::TlsConnector::from(ctx.tls_h1.clone());
    let tls = connector
        .connect(ServerName::try_from("localhost")?, tcp)
        .await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
    tokio::spawn(conn);
    let started = Instant::now();
    let request = hyper::Request::post(path)
        .header(hyper::header::HOST, "localhost")
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body)))?;
    let answer = async {
        let response = sender.send_request(request).await?;
        let status = response.status().as_u16();
        let body = response.into_body().collect().await?.to_bytes().to_vec();
        anyhow::Ok((status, body))
    };
    let (status, body) = tokio::time::timeout(Duration::from_secs(10), answer)
        .await
        .context("no answer within 10 s")??;
    Ok((status, body, started.elapsed()))
}

/// The valid review with its kube-controller-manager `command` holding
/// `flags` flags after the first, arranged by `arrange`.
fn review_with_flags(review: &[u8], flags: usize, arrange: &str) -> Vec<u8> {
    let mut value: serde_json::Value = serde_json::from_slice(review).expect("the review is JSON");
    let command =
        &mut value["request"]["object"]["spec"]["template"]["spec"]["containers"][0]["command"];
    let mut items: Vec<serde_json::Value> = command.as_array().cloned().unwrap_or_default();
    let head = items.remove(0);
    let mut extra: Vec<serde_json::Value> = (0..flags)
        .map(|i| serde_json::Value::String(format!("--flag-{i}=x")))
        .collect();
    match arrange {
        // The flag the webhook moves to the end stays first.
        "moved" => items.extend(extra),
        "reversed" => {
            extra.reverse();
            items.extend(extra);
        }
        "shuffled" => {
            let mut seed = 7u64;
            for i in (1..extra.len()).rev() {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                extra.swap(i, (seed >> 33) as usize % (i + 1));
            }
            items = extra.into_iter().chain(items).collect();
        }
        // Every other flag one the webhook removes.
        _ => {
            items = extra
                .into_iter()
                .flat_map(|f| [f, serde_json::Value::String("--cloud-config=/x".into())])
                .chain(items)
                .collect();
        }
    }
    items.insert(0, head);
    *command = serde_json::Value::Array(items);
    serde_json::to_vec(&value).expect("serialises")
}

/// Issue 14, item 1: the array diff is linear in time and memory. A review
/// with 50,000 flags in each arrangement is answered in < 100 ms and the
/// server's peak RSS stays < 64 MiB.
async fn flags_case(ctx: Arc<Ctx>) -> Report {
    let mut report = Report::new("flags");
    let before = ctx.server_memory();
    if let Some((rss, _)) = before {
        report.figure("rss_before", mib(rss));
    }
    for arrange in ["moved", "shuffled", "reversed", "interleaved"] {
        let body = review_with_flags(&ctx.review, 50_000, arrange);
        report.figure("body_bytes", body.len());
        let mut fastest = None::<Duration>;
        for _ in 0..3 {
            match post(&ctx, body.clone()).await {
                Ok((200, answer, took)) if contains(&answer, b"\"allowed\":true") => {
                    fastest = Some(fastest.map_or(took, |f| f.min(took)));
                }
                Ok((status, answer, _)) => {
                    report.require(
                        false,
                        format!(
                            "{arrange}: HTTP {status} {}",
                            String::from_utf8_lossy(&answer[..answer.len().min(200)])
                        ),
                    );
                }
                Err(err) => report.require(false, format!("{arrange}: {err:#}")),
            }
        }
        if let Some(took) = fastest {
            report.figure(
                match arrange {
                    "moved" => "moved_ms",
                    "shuffled" => "shuffled_ms",
                    "reversed" => "reversed_ms",
                    _ => "interleaved_ms",
                },
                format!("{:.1}", took.as_secs_f64() * 1000.0),
            );
            report.require(
                took < Duration::from_millis(100),
                format!("50,000 flags {arrange}: answered in {} < 100 ms", ms(took)),
            );
        }
        // The peak so far, after each arrangement: which one raises it.
        if let Some((_, hwm)) = ctx.server_memory() {
            report.figure(format!("peak_after_{arrange}"), mib(hwm));
        }
    }
    peak_under(&ctx, &mut report, "peak_rss", 64, "");
    report
}

/// The server's peak RSS so far as the figure `key`, required under
/// `limit_mib` MiB (`what` says when).
fn peak_under(ctx: &Ctx, report: &mut Report, key: &str, limit_mib: u64, what: &str) {
    if let Some((_, hwm)) = ctx.server_memory() {
        report.figure(key, mib(hwm));
        report.require(
            hwm < limit_mib * 1024,
            format!("{what}peak RSS {} < {limit_mib} MiB", mib(hwm)),
        );
    }
}

/// Issue 14, item 5: one strictness rule. Every body that is not valid JSON
/// is refused wherever the fault sits, duplicate keys are the last one's, a
/// huge uid is refused without being echoed, an object that is not a JSON
/// object is a 400 denial.
async fn strict_case(ctx: Arc<Ctx>) -> Report {
    let mut report = Report::new("strict");
    let review: serde_json::Value = serde_json::from_slice(&ctx.review).expect("JSON");
    let text = serde_json::to_string(&review).expect("serialises");
    let with_note = |note: &[u8]| {
        let mut body = b"{\"note\":\"".to_vec();
        body.extend_from_slice(note);
        body.extend_from_slice(b"\",");
        body.extend_from_slice(&text.as_bytes()[1..]);
        body
    };
    let mut huge_uid = review.clone();
    huge_uid["request"]["uid"] = serde_json::Value::String("u".repeat(6_900_000));
    let mut not_an_object = review.clone();
    not_an_object["request"]["object"] = serde_json::json!("x");
    let mut lone = text.clone();
    lone.insert_str(lone.len() - 2, r#","oldObject":{"a":"\ud800"}"#);
    let cases: Vec<(&str, Vec<u8>, u16, &[u8])> = vec![
        (
            "invalid UTF-8 in an unknown field",
            with_note(b"\xff\xfe"),
            400,
            b"not valid JSON",
        ),
        (
            "a lone surrogate in a skipped field",
            with_note(br"\udc00"),
            400,
            b"not valid JSON",
        ),
        (
            "a lone surrogate in oldObject",
            lone.into_bytes(),
            400,
            b"not valid JSON",
        ),
        (
            "a 6.9 MB uid",
            serde_json::to_vec(&huge_uid).expect("serialises"),
            400,
            b"uid is 6900000 bytes long",
        ),
        (
            "an object that is a string",
            serde_json::to_vec(&not_an_object).expect("serialises"),
            200,
            b"\"code\":400",
        ),
        (
            "a duplicate request (the last wins)",
            {
                let mut body = br#"{"request":{"uid":"first"},"#.to_vec();
                body.extend_from_slice(&text.as_bytes()[1..]);
                body
            },
            200,
            b"\"allowed\":true",
        ),
    ];
    for (what, body, want_status, want) in cases {
        match post(&ctx, body).await {
            Ok((status, answer, _)) => {
                report.require(
                    status == want_status && contains(&answer, want) && answer.len() < 4096,
                    format!(
                        "{what}: HTTP {status} ({} bytes) {}",
                        answer.len(),
                        String::from_utf8_lossy(&answer[..answer.len().min(160)])
                    ),
                );
            }
            Err(err) => report.require(false, format!("{what}: {err:#}")),
        }
    }
    report
}

// Issue 27: the seed webhooks' hostile inputs.

impl Ctx {
    /// The server's CPU time (user + system) so far.
    fn server_cpu(&self) -> Option<Duration> {
        let pid = self.args.server_pid?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let rest = stat.rsplit_once(')')?.1;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 =
            fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
        Some(Duration::from_millis(ticks * 10))
    }
}

/// What an answer says, in one word for the figures.
fn verdict(status: u16, answer: &[u8]) -> String {
    if status != 200 {
        return format!("http{status}");
    }
    if contains(answer, b"\"allowed\":true") {
        return "allowed".into();
    }
    let text = String::from_utf8_lossy(answer);
    let code = text
        .split("\"code\":")
        .nth(1)
        .and_then(|rest| rest.split([',', '}']).next())
        .unwrap_or("?");
    format!("denied{code}")
}

/// The fastest of three answers to `body`: time, verdict.
async fn fastest(
    ctx: &Ctx,
    body: &[u8],
    report: &mut Report,
    what: &str,
) -> Option<(Duration, String)> {
    let mut best: Option<(Duration, String)> = None;
    for _ in 0..3 {
        match post(ctx, body.to_vec()).await {
            Ok((status, answer, took)) => {
                let v = verdict(status, &answer);
                if best.as_ref().is_none_or(|(b, _)| took < *b) {
                    best = Some((took, v));
                }
            }
            Err(err) => report.require(false, format!("{what}: {err:#}")),
        }
    }
    best
}

/// Each size ×1, ×2, ×4: the fastest answer of three and the peak RSS of
/// those three answers, and whether time and memory (the peak above the
/// RSS before the first) grew at most linearly (×4 the size within 6× the
/// time and 6× the memory: linear, with room for the shared machine's noise
/// and the allocator's rounding). Returns the last body.
async fn scaling(
    ctx: &Ctx,
    report: &mut Report,
    key: &str,
    sizes: [usize; 3],
    build: fn(usize) -> Vec<u8>,
) -> Vec<u8> {
    let mut times = Vec::new();
    let mut peaks = Vec::new();
    let mut body = Vec::new();
    let before = ctx.server_memory().map(|(rss, _)| rss);
    if let Some(rss) = before {
        report.figure("rss_before", mib(rss));
    }
    for n in sizes {
        body = build(n);
        ctx.reset_peak();
        if let Some((took, v)) = fastest(ctx, &body, report, &format!("{key} {n}")).await {
            report.figure(
                format!("{key}_{n}_ms"),
                format!("{:.1}", took.as_secs_f64() * 1000.0),
            );
            report.figure(format!("{key}_{n}"), v);
            times.push(took);
        }
        if let Some((_, hwm)) = ctx.server_memory() {
            report.figure(format!("peak_{n}"), mib(hwm));
            peaks.push(hwm);
        }
    }
    if let (Some(before), [p1, _, p4]) = (before, &peaks[..]) {
        let growth = |peak: u64| peak.saturating_sub(before).max(1) as f64;
        let ratio = growth(*p4) / growth(*p1);
        report.figure(format!("{key}_memory_x4_over_x1"), format!("{ratio:.1}"));
        report.require(
            ratio < 6.0,
            format!(
                "{key}: x4 the size took {ratio:.1}x the memory above the {} before (< 6: linear)",
                mib(before)
            ),
        );
    }
    if let [t1, _, t4] = times[..] {
        let ratio = t4.as_secs_f64() / t1.as_secs_f64().max(1e-6);
        report.figure(format!("{key}_x4_over_x1"), format!("{ratio:.1}"));
        report.require(
            ratio < 6.0,
            format!("{key}: x4 the size took {ratio:.1}x the time (< 6: linear)"),
        );
    }
    body
}

/// `n` copies of `body` at once: their verdicts, the longest answer time.
async fn at_once(ctx: &Arc<Ctx>, body: Vec<u8>, n: usize) -> (Vec<String>, Duration) {
    let body = Arc::new(body);
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let ctx = ctx.clone();
            let body = body.clone();
            tokio::spawn(async move { post(&ctx, body.to_vec()).await })
        })
        .collect();
    let mut verdicts = Vec::new();
    let mut longest = Duration::ZERO;
    for task in tasks {
        match task.await {
            Ok(Ok((status, answer, took))) => {
                verdicts.push(verdict(status, &answer));
                longest = longest.max(took);
            }
            Ok(Err(err)) => verdicts.push(format!("error:{err}")),
            Err(err) => verdicts.push(format!("error:{err}")),
        }
    }
    (verdicts, longest)
}

/// The server's CPU time over `window` after the answers: work that goes
/// on after its answer shows here.
async fn cpu_after(ctx: &Ctx, window: Duration) -> Option<Duration> {
    let before = ctx.server_cpu()?;
    tokio::time::sleep(window).await;
    Some(ctx.server_cpu()?.saturating_sub(before))
}

/// Issue 27, item 1: the unit serializer was quadratic; four 200,000-section
/// requests kept every worker busy for 221 s after their answers.
async fn unit_sections_case(ctx: Arc<Ctx>) -> Report {
    let mut report = Report::new("unit-sections");
    let monitor = match Monitor::start(&ctx, 2, Duration::from_millis(100)).await {
        Ok(monitor) => monitor,
        Err(err) => {
            report.require(false, format!("monitor: {err:#}"));
            return report;
        }
    };
    scaling(
        &ctx,
        &mut report,
        "sections",
        [12_500, 25_000, 50_000],
        hostile::many_sections,
    )
    .await;
    // The issue's largest: beyond the request's share, refused at once.
    let mut body = Vec::new();
    for n in [100_000, 200_000] {
        body = hostile::many_sections(n);
        if let Some((took, v)) = fastest(&ctx, &body, &mut report, "sections").await {
            report.figure(
                format!("sections_{n}_ms"),
                format!("{:.1}", took.as_secs_f64() * 1000.0),
            );
            report.figure(format!("sections_{n}"), v);
        }
    }
    report.figure("body_bytes_200000", body.len());
    peak_under(
        &ctx,
        &mut report,
        "peak_rss_one_at_a_time",
        64,
        "one at a time: ",
    );
    let (verdicts, longest) = at_once(&ctx, body, 4).await;
    report.figure("four_at_once", verdicts.join(","));
    report.figure("four_at_once_longest", ms(longest));
    report.require(
        longest < Duration::from_secs(9),
        format!("four of 200,000 sections at once: all answered within {} (< the 8 s request timeout + 1 s)", ms(longest)),
    );
    if let Some(cpu) = cpu_after(&ctx, Duration::from_secs(2)).await {
        report.figure("cpu_in_2s_after", ms(cpu));
        report.require(
            cpu < Duration::from_millis(500),
            format!(
                "server CPU in the 2 s after the answers {} < 500 ms: no work left",
                ms(cpu)
            ),
        );
    }
    monitor
        .finish()
        .await
        .report(&mut report, Some(Duration::from_secs(2)));
    report
}

/// Issue 27, item 5: lines before the first section were lexed ~15× slower
/// than short ones.
async fn long_lines_case(ctx: Arc<Ctx>) -> Report {
    let mut report = Report::new("unit-long-lines");
    let body = scaling(&ctx, &mut report, "lines", [250, 500, 1_000], |n| {
        hostile::long_lines_first(n, 2_000)
    })
    .await;
    report.figure("body_bytes_1000", body.len());
    let short = hostile::long_lines_first(20_000, 98);
    if let (Some((long, _)), Some((short_took, _))) = (
        fastest(&ctx, &body, &mut report, "long lines").await,
        fastest(&ctx, &short, &mut report, "short lines").await,
    ) {
        let ratio = long.as_secs_f64() / short_took.as_secs_f64().max(1e-6);
        report.figure("long_over_short", format!("{ratio:.1}"));
        report.require(
            ratio < 3.0,
            format!(
                "2 MB in 2,000-byte lines took {ratio:.1}x the time of 2 MB in 100-byte lines (< 3)"
            ),
        );
    }
    peak_under(&ctx, &mut report, "peak_rss", 64, "");
    report
}

/// Issue 27, item 2: the memo kept 256 whole 5 MB inputs (3.4 GiB). Now
/// 256 reviews with another 2 MB configuration each (answered, too large
/// to be remembered), 256 with another 60 KB one (remembered, within the
/// memo's 2 MiB), and 5 MB ones (beyond the request's memory share).
async fn kubelet_memo_case(ctx: Arc<Ctx>) -> Report {
    let mut report = Report::new("kubelet-memo");
    for (label, bytes, want) in [
        ("2mb", 2_000_000, "allowed"),
        ("60kb", 60_000, "allowed"),
        ("5mb", 5_000_000, "denied400"),
    ] {
        let started = Instant::now();
        let count = if bytes > 2_000_000 { 16 } else { 256 };
        let mut verdicts = std::collections::BTreeMap::<String, usize>::new();
        for i in 0..count {
            let body =
                hostile::kubelet_config_with(&format!("providerID: {i}-{}\n", "p".repeat(bytes)));
            match post(&ctx, body).await {
                Ok((status, answer, _)) => {
                    *verdicts.entry(verdict(status, &answer)).or_default() += 1
                }
                Err(err) => *verdicts.entry(format!("error:{err}")).or_default() += 1,
            }
        }
        report.figure(
            format!("{label}_took"),
            format!("{:.1}s", started.elapsed().as_secs_f64()),
        );
        let summary: Vec<String> = verdicts.iter().map(|(v, n)| format!("{v}:{n}")).collect();
        report.figure(format!("{label}_answers"), summary.join(","));
        report.require(
            verdicts.get(want) == Some(&count),
            format!(
                "{count} with another {label} configuration each: {want} ({})",
                summary.join(", ")
            ),
        );
        peak_under(&ctx, &mut report, &format!("peak_after_{label}"), 64, "");
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    if let Some((rss, _)) = ctx.server_memory() {
        report.figure("rss_idle_after", mib(rss));
        report.require(
            rss < 48 * 1024,
            format!("RSS idle afterwards {} < 48 MiB", mib(rss)),
        );
    }
    report
}

/// Issue 27, item 3: a list of tiny maps cost ~170× its size (1,176 MiB for
/// one request, 4.4 GiB for eight); 50,000 files, eight at once, 811 MiB.
async fn files_case(ctx: Arc<Ctx>, name: &'static str) -> Report {
    let mut report = Report::new(name);
    type Build = fn(usize) -> Vec<u8>;
    // The issue's sizes, refused by the memory share in time linear in
    // what was read before the refusal. (What fits the share, a few
    // hundred files, is answered in about a millisecond: its linearity is
    // measured in process, `cargo bench --bench mutate -- hostile_`.)
    let (sizes, build): ([usize; 3], Build) = if name == "tiny-files" {
        ([212_500, 425_000, 850_000], hostile::tiny_files)
    } else {
        ([12_500, 25_000, 50_000], hostile::ordinary_files)
    };
    let body = scaling(&ctx, &mut report, "files", sizes, build).await;
    report.figure("body_bytes_largest", body.len());
    peak_under(
        &ctx,
        &mut report,
        "peak_rss_one_at_a_time",
        64,
        "one at a time: ",
    );
    let (verdicts, longest) = at_once(&ctx, body, 8).await;
    report.figure("eight_at_once", verdicts.join(","));
    report.figure("eight_at_once_longest", ms(longest));
    peak_under(
        &ctx,
        &mut report,
        "peak_rss_eight_at_once",
        160,
        "eight at once (bodies 8 x 7 MiB at most, jobs 48 MiB): ",
    );
    report
}

/// Issue 27, item 4: denials echoed 5 MB values and Secret contents and
/// named the object twice; item 6: an OSC on the Secret path was mutated.
async fn seed_denials_case(ctx: Arc<Ctx>) -> Report {
    let mut report = Report::new("seed-denials");
    let canary = "canary-attack-0a1b2c";
    let wi = serde_json::json!({"workloadidentity.security.gardener.cloud/provider": "aws"});
    let secret = |data: &[(&str, &[u8])], labels: &serde_json::Value| {
        hostile::secret_review(data, labels.clone())
    };
    let long = "9".repeat(5_000_000);
    let cases: Vec<(&str, &str, Vec<u8>)> = vec![
        (
            "5 MB syncFrequency",
            "/controlplane",
            hostile::kubelet_config_with(&format!("syncFrequency: {long}s\n")),
        ),
        (
            "5 MB file encoding",
            "/controlplane",
            hostile::osc_review(|object| {
                for file in object["spec"]["files"].as_array_mut().expect("files") {
                    if file["path"] == hostile::KUBELET_CONFIG {
                        file["content"]["inline"]["encoding"] =
                            serde_json::json!("e".repeat(5_000_000));
                    }
                }
            }),
        ),
        (
            "a file that is not a map",
            "/controlplane",
            hostile::osc_review(|object| {
                object["spec"]["files"]
                    .as_array_mut()
                    .expect("files")
                    .push(serde_json::json!(1));
            }),
        ),
        (
            "config that is not a map",
            "/cloudprovider",
            secret(&[("config", format!("{canary}\n").as_bytes())], &wi),
        ),
        (
            "config that is not YAML",
            "/cloudprovider",
            secret(&[("config", format!("a: [{canary}\n").as_bytes())], &wi),
        ),
        (
            "config with a bad tag",
            "/cloudprovider",
            secret(
                &[("config", format!("roleARN: !!int {canary}\n").as_bytes())],
                &wi,
            ),
        ),
        (
            "an OSC on the Secret path",
            "/cloudprovider",
            hostile::osc_review(|_| {}),
        ),
    ];
    for (what, path, body) in cases {
        match post_to(&ctx, path, body).await {
            Ok((status, answer, _)) => {
                let text = String::from_utf8_lossy(&answer);
                let message = text.split("\"message\":\"").nth(1).unwrap_or_default();
                let named = message.matches("OperatingSystemConfig shoot--").count()
                    + message.matches("Secret shoot--").count();
                report.require(
                    status == 200
                        && text.contains("\"allowed\":false")
                        && answer.len() < 1024
                        && named == 1
                        && !text.contains(canary),
                    format!(
                        "{what}: HTTP {status}, {} bytes, object named {named}x, no canary: {}",
                        answer.len(),
                        &text[..text.len().min(220)]
                    ),
                );
            }
            Err(err) => report.require(false, format!("{what}: {err:#}")),
        }
    }
    if let Some(log) = &ctx.args.server_log
        && let Ok(text) = std::fs::read_to_string(log)
    {
        report.require(
            !text.contains(canary),
            "the server log has no line with the canary",
        );
    }
    report
}

fn tls_config(ca: &[u8], alpn: &[u8]) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca) {
        roots.add(cert?)?;
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    Ok(Arc::new(config))
}

/// Raise this process's open-file limit to its hard limit (the idle cases
/// hold ten thousand sockets).
fn raise_nofile() {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let _ = setrlimit(
        Resource::Nofile,
        Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        },
    );
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.list {
        for case in CASES {
            println!(
                "{}|{}|{}|{}",
                case.name,
                case.server_flags.join(" "),
                case.server_nofile
                    .map_or("-".to_string(), |n| n.to_string()),
                case.about
            );
        }
        return Ok(());
    }
    for addr in [args.target, args.health, args.metrics] {
        if !addr.ip().is_loopback() {
            bail!("{addr} is not a loopback address: this tool only attacks 127.0.0.0/8");
        }
    }
    let selected: Vec<&Case> = if args.cases.is_empty() {
        CASES.iter().collect()
    } else {
        args.cases
            .iter()
            .map(|name| {
                CASES
                    .iter()
                    .find(|c| c.name == name)
                    .with_context(|| format!("no case {name:?}; see --list"))
            })
            .collect::<anyhow::Result<_>>()?
    };
    raise_nofile();
    let ca_path = args.ca.clone().context("--ca is required")?;
    let ca =
        std::fs::read(&ca_path).with_context(|| format!("cannot read {}", ca_path.display()))?;
    let review_text = std::fs::read(&args.review)
        .with_context(|| format!("cannot read {}", args.review.display()))?;
    let review: serde_json::Value = serde_json::from_slice(&review_text)?;
    let ctx = Arc::new(Ctx {
        tls_h2: tls_config(&ca, b"h2")?,
        tls_h1: tls_config(&ca, b"http/1.1")?,
        review: Bytes::from(serde_json::to_vec(&review)?),
        connects: AtomicU32::new(0),
        args,
    });
    if let Some(spec) = ctx.args.monitor.clone() {
        return run_monitor(ctx, &spec);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut failed = 0;
    for case in selected {
        let report = runtime.block_on(async {
            match tokio::time::timeout(CASE_LIMIT, (case.run)(ctx.clone())).await {
                Ok(report) => report,
                Err(_) => {
                    let mut report = Report::new(case.name);
                    report.require(false, format!("did not finish within {CASE_LIMIT:?}"));
                    report
                }
            }
        });
        report.print();
        if !report.pass {
            failed += 1;
        }
    }
    if failed > 0 {
        eprintln!("attack: {failed} case(s) failed");
        std::process::exit(1);
    }
    Ok(())
}
