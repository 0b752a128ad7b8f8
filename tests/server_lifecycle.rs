//! Shutdown, readiness, metrics, and the binary's exit behaviour.

mod support;

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use hyper::StatusCode;
use support::server::{TestServer, client_config, connect, http_get, review, sample};

const V1: &str = "admission.k8s.io/v1";

/// A part that cannot go on (the leader work, see `controller_leader.rs`)
/// turns `/healthz` into a 500 naming it, so the kubelet restarts the pod;
/// `/readyz` and the webhook are not affected meanwhile.
#[tokio::test]
async fn healthz_fails_once_a_part_reports_it_cannot_go_on() {
    let server = TestServer::start().await;
    let (status, body) = http_get(server.addrs.health, "/healthz").await.unwrap();
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::OK, "[+]ping ok\nhealthz check passed\n")
    );
    server.readiness.fail_liveness(
        "leader-election",
        "the leader work ended while this replica was leading",
    );
    let (status, body) = http_get(server.addrs.health, "/healthz").await.unwrap();
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(
        body.contains(
            "[-]leader-election failed: the leader work ended while this replica was leading\n"
        ),
        "{body}"
    );
    assert_eq!(
        http_get(server.addrs.health, "/readyz").await.unwrap().0,
        StatusCode::OK
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn shutdown_drains_in_flight_requests_and_readyz_fails_meanwhile() {
    let mut server = TestServer::start().await;
    let ca = server.ca_pem();
    let (status, body) = http_get(server.addrs.health, "/readyz").await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("[+]webhook-server ok"), "{body}");
    assert_eq!(
        http_get(server.addrs.health, "/healthz").await.unwrap().0,
        StatusCode::OK
    );

    // Five slow requests (700 ms each), over h1 and h2 connections.
    let mut in_flight = Vec::new();
    for i in 0..5 {
        let alpn: &[&[u8]] = if i % 2 == 0 { &[b"http/1.1"] } else { &[b"h2"] };
        let mut conn = connect(server.addrs.https, client_config(&[&ca], alpn))
            .await
            .unwrap();
        in_flight.push(tokio::spawn(async move {
            conn.review(review(V1, &format!("slow-{i}"), &format!("slow-{i}")))
                .await
        }));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    server.begin_shutdown();

    // Not ready at once, while the drain is still running.
    let (status, body) = loop {
        let (status, body) = http_get(server.addrs.health, "/readyz").await.unwrap();
        if status != StatusCode::OK || started.elapsed() > Duration::from_millis(300) {
            break (status, body);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body.contains("[-]not-draining failed"), "{body}");
    assert!(server.readiness.is_draining());
    // No new connections.
    while tokio::net::TcpStream::connect(server.addrs.https)
        .await
        .is_ok()
    {
        assert!(
            started.elapsed() < Duration::from_millis(300),
            "still accepting"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        in_flight.iter().any(|request| !request.is_finished()),
        "the checks ran while requests were still in flight"
    );

    for (i, request) in in_flight.into_iter().enumerate() {
        let (status, _, body) = request.await.unwrap().unwrap();
        assert_eq!(status, StatusCode::OK);
        let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(answer["response"]["uid"], format!("slow-{i}"));
        assert_eq!(answer["response"]["allowed"], true);
    }
    let health = server.addrs.health;
    server.stop().await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // The probes close after the drain.
    assert!(http_get(health, "/healthz").await.is_err());
}

#[tokio::test]
async fn the_grace_period_bounds_the_drain() {
    let server = TestServer::start_with(tempfile::tempdir().unwrap(), |c| {
        c.shutdown_grace = Duration::from_millis(200);
    })
    .await;
    let mut conn = connect(
        server.addrs.https,
        client_config(&[&server.ca_pem()], &[b"http/1.1"]),
    )
    .await
    .unwrap();
    let hanging = tokio::spawn(async move { conn.review(review(V1, "h", "hang")).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    server.stop().await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(hanging.await.unwrap().is_err());
}

#[tokio::test]
async fn readyz_reports_registered_checks() {
    let server = TestServer::start().await;
    let synced = Arc::new(AtomicBool::new(false));
    let flag = synced.clone();
    server.readiness.add_check(
        "state-synced",
        Arc::new(move || flag.load(std::sync::atomic::Ordering::SeqCst)),
    );
    let (status, body) = http_get(server.addrs.health, "/readyz").await.unwrap();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body.contains("[-]state-synced failed"), "{body}");
    synced.store(true, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        http_get(server.addrs.health, "/readyz").await.unwrap().0,
        StatusCode::OK
    );
}

#[tokio::test]
async fn metrics_expose_the_named_families() {
    let server = TestServer::start().await;
    let mut conn = connect(
        server.addrs.https,
        client_config(&[&server.ca_pem()], &[b"http/1.1"]),
    )
    .await
    .unwrap();
    conn.review(review(V1, "a", "patch-me")).await.unwrap();
    conn.review(review(V1, "b", "other")).await.unwrap();
    conn.review(review(V1, "c", "deny-me")).await.unwrap();
    conn.review(b"{}".to_vec()).await.unwrap();

    let (status, text) = http_get(server.addrs.metrics, "/metrics").await.unwrap();
    assert_eq!(status, StatusCode::OK);
    for (series, value) in [
        ("scion_admission_requests_total{outcome=\"patched\"}", 1.0),
        ("scion_admission_requests_total{outcome=\"allowed\"}", 1.0),
        ("scion_admission_requests_total{outcome=\"denied\"}", 1.0),
        ("scion_admission_requests_total{outcome=\"invalid\"}", 1.0),
        ("scion_admission_requests_total{outcome=\"timeout\"}", 0.0),
        (
            "scion_admission_request_duration_seconds_count{outcome=\"patched\"}",
            1.0,
        ),
        ("scion_admission_patch_bytes_count", 1.0),
        ("scion_certificate_reloads_total{result=\"success\"}", 0.0),
        // controller-runtime's families, as Gardener's webhook dashboards query them:
        // three reviews answered 200, the non-review 400, 500 initialised
        (
            "controller_runtime_webhook_requests_total{webhook=\"/controlplane\",code=\"200\"}",
            3.0,
        ),
        (
            "controller_runtime_webhook_requests_total{webhook=\"/controlplane\",code=\"400\"}",
            1.0,
        ),
        (
            "controller_runtime_webhook_requests_total{webhook=\"/controlplane\",code=\"500\"}",
            0.0,
        ),
        (
            "controller_runtime_webhook_requests_total{webhook=\"/seedprovider\",code=\"200\"}",
            0.0,
        ),
        (
            "controller_runtime_webhook_requests_in_flight{webhook=\"/controlplane\"}",
            0.0,
        ),
        (
            "controller_runtime_webhook_latency_seconds_count{webhook=\"/controlplane\"}",
            4.0,
        ),
        ("scion_certificate_reloads_total{result=\"failure\"}", 0.0),
    ] {
        assert_eq!(sample(&text, series), Some(value), "{series} in\n{text}");
    }
    assert!(sample(&text, "scion_certificate_expiry_timestamp_seconds").is_some_and(|v| v > 1.7e9));
    assert!(!text.contains("namespace="), "no namespace labels");
    assert_eq!(
        http_get(server.addrs.metrics, "/nope").await.unwrap().0,
        StatusCode::NOT_FOUND
    );
}

/// The `listening` log lines of a JSON-logging `scion serve`.
fn listening(line: &str) -> Option<(String, SocketAddr)> {
    let fields: serde_json::Value = serde_json::from_str(line).ok()?;
    if fields.get("msg")? != "listening" {
        return None;
    }
    Some((
        fields.get("listener")?.as_str()?.to_string(),
        fields.get("addr")?.as_str()?.parse().ok()?,
    ))
}

/// Start the binary on free loopback ports; returns it with its HTTPS and
/// health addresses once it logged them.
fn spawn_serve(dir: &std::path::Path) -> (std::process::Child, SocketAddr, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(["serve", "--provider", "aws", "--log-format", "json"])
        .arg("--objects-dir")
        .arg(examples_dir())
        .args(["--listen", "127.0.0.1:0", "--health-listen", "127.0.0.1:0"])
        .args(["--metrics-listen", "127.0.0.1:0", "--cert-dir"])
        .arg(dir)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let (mut https, mut health, mut ca_logged) = (None, None, false);
    while https.is_none() || health.is_none() {
        let line = lines.next().expect("serve logs before exiting").unwrap();
        ca_logged |= line.contains("ca.crt");
        match listening(&line) {
            Some((name, addr)) if name == "https" => https = Some(addr),
            Some((name, addr)) if name == "health" => health = Some(addr),
            _ => {}
        }
    }
    assert!(ca_logged, "the generated CA path is logged");
    // Keep draining stderr so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (child, https.unwrap(), health.unwrap())
}

fn sigterm(child: &std::process::Child) {
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
}

async fn wait_exit(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(started.elapsed() < limit, "no exit within {limit:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_binary_serves_and_exits_zero_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, https, health) = spawn_serve(dir.path());
    let ca = std::fs::read(dir.path().join("ca.crt")).unwrap();
    let mut conn = connect(https, client_config(&[&ca], &[b"h2"]))
        .await
        .unwrap();
    let (status, _, _) = conn.review(review(V1, "u", "x")).await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(http_get(health, "/readyz").await.unwrap().0, StatusCode::OK);

    sigterm(&child);
    assert_eq!(
        wait_exit(&mut child, Duration::from_secs(10)).await.code(),
        Some(0)
    );
}

#[tokio::test]
async fn the_binary_waits_for_a_request_in_flight_and_a_second_signal_cuts_the_drain() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let dir = tempfile::tempdir().unwrap();
    let (mut child, https, health) = spawn_serve(dir.path());
    let ca = std::fs::read(dir.path().join("ca.crt")).unwrap();
    // A request whose body is still on its way: in flight until the 8 s request timeout.
    let tcp = tokio::net::TcpStream::connect(https).await.unwrap();
    let connector = tokio_rustls::TlsConnector::from(client_config(&[&ca], &[b"http/1.1"]));
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = connector.connect(name, tcp).await.unwrap();
    tls.write_all(
        b"POST /controlplane HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{",
    )
    .await
    .unwrap();
    tls.flush().await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    sigterm(&child);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        child.try_wait().unwrap().is_none(),
        "exited with a request in flight"
    );
    assert_eq!(
        http_get(health, "/readyz").await.unwrap().0,
        StatusCode::SERVICE_UNAVAILABLE
    );

    sigterm(&child);
    assert_eq!(
        wait_exit(&mut child, Duration::from_secs(5)).await.code(),
        Some(130)
    );
    let mut rest = Vec::new();
    let _ = tls.read_to_end(&mut rest).await;
    assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
}

/// The example objects directory the README's start command uses.
fn examples_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/objects")
}

fn serve_failure(extra: &[&str], cert_dir: &std::path::Path) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(["serve", "--log-level", "warn"])
        .arg("--objects-dir")
        .arg(examples_dir())
        .args([
            "--health-listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "127.0.0.1:0",
        ])
        .args(extra)
        .arg("--cert-dir")
        .arg(cert_dir)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn startup_failures_exit_non_zero_with_one_line() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = serve_failure(&["--provider", "aws", "--listen", &addr], dir.path());
    assert_eq!(code, Some(1));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "scion: error: cannot listen on {addr} (--listen): "
        )),
        "{stderr}"
    );

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tls.key"), "x").unwrap();
    let (code, stderr) = serve_failure(
        &["--provider", "aws", "--listen", "127.0.0.1:0"],
        dir.path(),
    );
    assert_eq!(code, Some(1));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("tls.crt is missing"), "{stderr}");

    let (code, stderr) = serve_failure(&["--provider", "nope"], dir.path());
    assert_eq!(code, Some(2));
    assert!(stderr.contains("unknown provider \"nope\""), "{stderr}");

    // Flags come from SCION_* variables as well.
    let out = Command::new(env!("CARGO_BIN_EXE_scion"))
        .arg("serve")
        .env("SCION_PROVIDER", "nope")
        .env("SCION_CERT_DIR", dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown provider \"nope\""));
}

#[test]
fn without_objects_dir_or_kubernetes_api_serve_says_which_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(["serve", "--provider", "aws", "--listen", "127.0.0.1:0"])
        .args([
            "--health-listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "127.0.0.1:0",
        ])
        .args(["--log-level", "warn"])
        .arg("--cert-dir")
        .arg(dir.path())
        .env("KUBECONFIG", dir.path().join("no-such-kubeconfig"))
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("no --objects-dir given and no Kubernetes API configured"),
        "{stderr}"
    );
}

#[test]
fn webhook_registration_needs_a_kubernetes_api() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = serve_failure(
        &[
            "--provider",
            "aws",
            "--listen",
            "127.0.0.1:0",
            "--register-webhook",
        ],
        dir.path(),
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("--register-webhook needs a Kubernetes API"),
        "{stderr}"
    );
    let (code, stderr) = serve_failure(
        &[
            "--provider",
            "aws",
            "--listen",
            "127.0.0.1:0",
            "--manage-certs",
        ],
        dir.path(),
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("--manage-certs needs a Kubernetes API"),
        "{stderr}"
    );
}
