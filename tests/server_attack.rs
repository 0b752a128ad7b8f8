//! Small, in-process versions of the hostile clients of `scripts/attack.sh`:
//! connections that say nothing (or not enough) are closed by their
//! deadlines, the caps hold, tiny chunks are accepted, and neither probes
//! nor other requests wait for a mutation that blocks its thread. Deadlines
//! are short here (hundreds of milliseconds); the bounds asserted are
//! generous (seconds), so a slow CI machine does not make them flaky.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use hyper::StatusCode;
use rustls_pki_types::ServerName;
use scion::admission::{AdmissionRequest, Denial, Mutator, ReviewError, Verdict};
use scion::server::{BoundAddrs, Metrics, Readiness, Server, ServerConfig};
use support::server::{
    Scripted, Sender, client_config, connect, http_get, review, sample, test_config,
};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

const V1: &str = "admission.k8s.io/v1";
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// How many connections of each kind the tests open at once.
const CONNECTIONS: usize = 20;
/// A connection must be closed within this of its deadline (generous).
const SLACK: Duration = Duration::from_secs(5);

/// Short deadlines, so the cases finish in about a second each.
fn short_deadlines(c: &mut ServerConfig) {
    c.handshake_timeout = Duration::from_millis(500);
    c.first_request_timeout = Duration::from_millis(300);
    c.idle_timeout = Duration::from_millis(600);
    c.h2_header_timeout = Duration::from_millis(300);
}

/// A server in this process, answering with any mutator.
struct Target {
    addrs: BoundAddrs,
    metrics: Metrics,
    ca: Vec<u8>,
    _dir: tempfile::TempDir,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Target {
    async fn start(adjust: impl FnOnce(&mut ServerConfig), mutator: Arc<dyn Mutator>) -> Target {
        let dir = tempfile::tempdir().unwrap();
        let mut config = test_config(dir.path());
        adjust(&mut config);
        let metrics = Metrics::new();
        let server = Server::bind(config, mutator, Readiness::new(), metrics.clone())
            .await
            .expect("server binds");
        let addrs = server.local_addrs();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(server.serve(async {
            let _ = stopped.await;
        }));
        let ca = std::fs::read(dir.path().join("ca.crt")).unwrap();
        Target {
            addrs,
            metrics,
            ca,
            _dir: dir,
            _stop: stop,
        }
    }

    fn ca_pem(&self) -> Vec<u8> {
        self.ca.clone()
    }
}

async fn start() -> Target {
    Target::start(short_deadlines, Arc::new(Scripted)).await
}

async fn tls(server: &Target, alpn: &[&[u8]]) -> TlsStream<TcpStream> {
    let tcp = TcpStream::connect(server.addrs.https).await.unwrap();
    let connector = tokio_rustls::TlsConnector::from(client_config(&[&server.ca_pem()], alpn));
    connector
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap()
}

/// Read and discard until the server closes the connection; how long that took.
async fn until_closed(mut stream: impl tokio::io::AsyncRead + Unpin) -> Duration {
    let started = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(SLACK * 2, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return started.elapsed(),
            Ok(Ok(_)) => {}
            Err(_) => panic!("the connection was not closed within {:?}", SLACK * 2),
        }
    }
}

/// An HTTP/2 frame on stream `stream`.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len();
    let mut out = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// HPACK "literal header field without indexing, new name", no Huffman.
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

fn post_headers() -> Vec<u8> {
    hpack(&[
        (":method", "POST"),
        (":scheme", "https"),
        (":path", "/controlplane"),
        (":authority", "localhost"),
        ("content-type", "application/json"),
    ])
}

const SETTINGS: u8 = 0x4;
const HEADERS: u8 = 0x1;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;

/// Open `CONNECTIONS` connections with `open`, then check that each is
/// closed within its deadline plus slack while `/healthz` answers.
async fn each_closed<F, Fut, S>(server: &Target, deadline: Duration, open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
    S: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    let mut waiting = Vec::new();
    for _ in 0..CONNECTIONS {
        let stream = open().await;
        waiting.push(tokio::spawn(until_closed(stream)));
    }
    let (status, _) = http_get(server.addrs.health, "/healthz").await.unwrap();
    assert_eq!(status, StatusCode::OK);
    for closed in waiting {
        let after = closed.await.unwrap();
        assert!(after < deadline + SLACK, "closed after {after:?}");
    }
}

async fn still_serves(server: &Target) {
    let mut conn = connect(
        server.addrs.https,
        client_config(&[&server.ca_pem()], &[b"h2"]),
    )
    .await
    .unwrap();
    let (status, _, _) = conn.review(review(V1, "after", "patch-me")).await.unwrap();
    assert_eq!(status, StatusCode::OK);
    let (status, body) = http_get(server.addrs.health, "/readyz").await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
}

fn closed_count(server: &Target, reason: &str) -> f64 {
    let text = server.metrics.encode().unwrap();
    sample(
        &text,
        &format!("scion_connections_closed_total{{listener=\"https\",reason=\"{reason}\"}}"),
    )
    .unwrap_or(0.0)
}

#[tokio::test]
async fn connections_that_say_nothing_or_not_enough_are_closed_by_their_deadlines() {
    let server = start().await;
    let first = Duration::from_millis(300);

    // A TLS connection that sends nothing after the handshake (ALPN h2, so
    // hyper would wait for the preface forever).
    each_closed(&server, first, || tls(&server, &[b"h2"])).await;
    // No ALPN at all: hyper has to sniff the version from the first bytes.
    each_closed(&server, first, || tls(&server, &[])).await;
    // Half an HTTP/2 preface.
    each_closed(&server, first, || async {
        let mut stream = tls(&server, &[b"h2"]).await;
        stream.write_all(&PREFACE[..16]).await.unwrap();
        stream
    })
    .await;
    // An HTTP/2 connection that only sent its SETTINGS.
    each_closed(&server, first, || async {
        let mut stream = tls(&server, &[b"h2"]).await;
        stream.write_all(PREFACE).await.unwrap();
        stream.write_all(&frame(SETTINGS, 0, 0, &[])).await.unwrap();
        stream
    })
    .await;
    // HEADERS without END_HEADERS, never continued.
    each_closed(&server, first, || async {
        let mut stream = tls(&server, &[b"h2"]).await;
        stream.write_all(PREFACE).await.unwrap();
        stream.write_all(&frame(SETTINGS, 0, 0, &[])).await.unwrap();
        let headers = post_headers();
        stream
            .write_all(&frame(HEADERS, END_STREAM, 1, &headers[..20]))
            .await
            .unwrap();
        stream
    })
    .await;
    // HTTP/1.1 request head that never ends.
    each_closed(&server, first, || async {
        let mut stream = tls(&server, &[b"http/1.1"]).await;
        stream
            .write_all(b"POST /controlplane HTTP/1.1\r\nhost: localhost\r\n")
            .await
            .unwrap();
        stream
    })
    .await;
    assert!(closed_count(&server, "first_request_timeout") >= (6 * CONNECTIONS) as f64);

    // Idle after one answered request: the idle timeout (HTTP/1.1 and HTTP/2).
    let idle = Duration::from_millis(600);
    for alpn in [&b"http/1.1"[..], b"h2"] {
        let mut waiting = Vec::new();
        for _ in 0..CONNECTIONS {
            let mut conn = connect(
                server.addrs.https,
                client_config(&[&server.ca_pem()], &[alpn]),
            )
            .await
            .unwrap();
            let (status, _, _) = conn.review(review(V1, "u", "x")).await.unwrap();
            assert_eq!(status, StatusCode::OK);
            waiting.push(tokio::spawn(async move {
                let started = Instant::now();
                let closed = || match &conn.sender {
                    Sender::H1(s) => s.is_closed(),
                    Sender::H2(s) => s.is_closed(),
                };
                while !closed() {
                    assert!(
                        started.elapsed() < idle + SLACK,
                        "idle connection still open"
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                started.elapsed()
            }));
        }
        for closed in waiting {
            let after = closed.await.unwrap();
            assert!(after < idle + SLACK, "closed after {after:?}");
        }
    }
    assert!(closed_count(&server, "idle_timeout") >= (2 * CONNECTIONS) as f64);
    still_serves(&server).await;
}

/// A mutator whose `hang` requests never finish (to keep a request in
/// flight on a connection) and that answers anything else unchanged.
struct Hang;

impl Mutator for Hang {
    fn decode(&self, body: &[u8]) -> Result<AdmissionRequest, ReviewError> {
        scion::decode::whole(body)
    }

    fn mutate<'a>(
        &'a self,
        request: &'a AdmissionRequest,
    ) -> BoxFuture<'a, Result<Verdict, Denial>> {
        Box::pin(async move {
            if request.name == "hang" {
                std::future::pending::<()>().await;
            }
            Ok(Verdict::Unchanged)
        })
    }
}

#[tokio::test]
async fn a_header_block_left_open_on_a_busy_http2_connection_hits_the_header_deadline() {
    let server = Target::start(
        |c| {
            short_deadlines(c);
            c.request_timeout = Duration::from_secs(20);
        },
        Arc::new(Hang),
    )
    .await;
    let mut stream = tls(&server, &[b"h2"]).await;
    stream.write_all(PREFACE).await.unwrap();
    stream.write_all(&frame(SETTINGS, 0, 0, &[])).await.unwrap();
    // Stream 1: a request whose body never comes, so it stays in flight
    // (and neither the first-request nor the idle deadline applies).
    stream
        .write_all(&frame(HEADERS, END_HEADERS, 1, &post_headers()))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Stream 3: a header block that never ends.
    let headers = post_headers();
    stream
        .write_all(&frame(HEADERS, 0, 3, &headers[..10]))
        .await
        .unwrap();
    let after = until_closed(stream).await;
    assert!(after < Duration::from_millis(300) + SLACK, "{after:?}");
    assert_eq!(closed_count(&server, "header_timeout"), 1.0);
    still_serves(&server).await;
}

#[tokio::test]
async fn the_connection_cap_holds_and_the_probes_keep_answering() {
    let server = Target::start(
        |c| {
            short_deadlines(c);
            c.max_connections = 4;
        },
        Arc::new(Scripted),
    )
    .await;
    // Eight clients that never start TLS: four are accepted, four wait.
    let mut silent = Vec::new();
    for _ in 0..8 {
        silent.push(TcpStream::connect(server.addrs.https).await.unwrap());
    }
    let metrics = || server.metrics.encode().unwrap();
    let open = |text: &str| sample(text, "scion_connections_open{listener=\"https\"}").unwrap();
    let accepted =
        |text: &str| sample(text, "scion_connections_accepted_total{listener=\"https\"}").unwrap();
    let deadline = Instant::now() + SLACK;
    while accepted(&metrics()) < 8.0 {
        let text = metrics();
        assert!(open(&text) <= 4.0, "{text}");
        let (status, _) = http_get(server.addrs.health, "/healthz").await.unwrap();
        assert_eq!(status, StatusCode::OK);
        assert!(
            Instant::now() < deadline,
            "the waiting clients were never accepted"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let text = metrics();
    assert_eq!(
        sample(&text, "scion_connections_max{listener=\"https\"}"),
        Some(4.0)
    );
    assert!(
        sample(
            &text,
            "scion_connection_limit_reached_total{listener=\"https\"}"
        )
        .unwrap()
            >= 1.0
    );
    for stream in silent {
        until_closed(stream).await;
    }
    assert_eq!(closed_count(&server, "handshake_timeout"), 8.0);
    still_serves(&server).await;
}

#[tokio::test]
async fn requests_beyond_the_in_flight_cap_are_refused_at_once() {
    let server = Target::start(
        |c| {
            c.max_requests_in_flight = 2;
            c.request_timeout = Duration::from_secs(3);
        },
        Arc::new(Hang),
    )
    .await;
    let ca = server.ca_pem();
    let mut hanging = Vec::new();
    for i in 0..2 {
        let mut conn = connect(server.addrs.https, client_config(&[&ca], &[b"http/1.1"]))
            .await
            .unwrap();
        hanging.push(tokio::spawn(async move {
            conn.review(review(V1, &format!("h{i}"), "hang")).await
        }));
    }
    // Wait until both are in flight.
    let deadline = Instant::now() + SLACK;
    while sample(
        &server.metrics.encode().unwrap(),
        "scion_admission_requests_in_flight",
    ) != Some(2.0)
    {
        assert!(
            Instant::now() < deadline,
            "the hanging requests never arrived"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut conn = connect(server.addrs.https, client_config(&[&ca], &[b"h2"]))
        .await
        .unwrap();
    let (status, headers, body) = conn.review(review(V1, "third", "x")).await.unwrap();
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(headers[hyper::header::RETRY_AFTER], "1");
    let message: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        message["message"],
        "too many admission requests in flight (limit 2); retry later"
    );
    assert!(
        hanging.iter().all(|h| !h.is_finished()),
        "refused while the others were still in flight"
    );
    // The hanging ones end with the 504 denial; then there is room again.
    for request in hanging {
        let (status, _, body) = request.await.unwrap().unwrap();
        assert_eq!(status, StatusCode::OK);
        let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(answer["response"]["status"]["code"], 504);
    }
    let (status, _, _) = conn.review(review(V1, "fourth", "x")).await.unwrap();
    assert_eq!(status, StatusCode::OK);
    let text = server.metrics.encode().unwrap();
    assert_eq!(
        sample(
            &text,
            "scion_admission_requests_total{outcome=\"overloaded\"}"
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(&text, "scion_admission_requests_in_flight"),
        Some(0.0)
    );
}

/// The chunked wire form of `body` in pieces of `size` bytes.
fn chunked(body: &[u8], size: usize) -> Vec<u8> {
    let mut wire = b"POST /controlplane HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
    for piece in body.chunks(size) {
        wire.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        wire.extend_from_slice(piece);
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(b"0\r\n\r\n");
    wire
}

/// Send `wire` while reading the answer; the answer's text (empty if the
/// server reset the connection before it could be read).
async fn exchange(server: &Target, wire: Vec<u8>) -> String {
    let stream = tls(server, &[b"http/1.1"]).await;
    let (mut reader, mut writer) = tokio::io::split(stream);
    let writing = tokio::spawn(async move {
        for part in wire.chunks(64 * 1024) {
            if writer.write_all(part).await.is_err() {
                break;
            }
        }
        let _ = writer.flush().await;
        writer
    });
    let mut answer = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match tokio::time::timeout(SLACK, reader.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => {
                answer.extend_from_slice(&buf[..n]);
                if answer.ends_with(b"}") {
                    break;
                }
            }
            Ok(_) => break,
            Err(_) => panic!("no answer within {SLACK:?}"),
        }
    }
    drop(writing);
    String::from_utf8_lossy(&answer).into_owned()
}

/// The review padded with blanks inside the JSON to `size` bytes.
fn padded(uid: &str, size: usize) -> Vec<u8> {
    let mut body = review(V1, uid, "patch-me");
    let close = body.pop().unwrap();
    body.resize(size - 1, b' ');
    body.push(close);
    body
}

#[tokio::test]
async fn a_body_in_small_chunks_is_answered_and_one_in_one_byte_chunks_is_refused_early() {
    let server = start().await;
    let text = exchange(&server, chunked(&padded("chunky", 200_000), 64)).await;
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("\"uid\":\"chunky\""), "{text}");
    assert!(text.contains("\"patchType\":\"JSONPatch\""), "{text}");

    // A million one-byte chunks: refused after about a thousand. The
    // server may reset the connection before the client reads the answer.
    let started = Instant::now();
    let text = exchange(&server, chunked(&padded("tiny", 1_000_000), 1)).await;
    assert!(
        text.is_empty()
            || (text.starts_with("HTTP/1.1 400") && text.contains("too many small pieces")),
        "{text}"
    );
    assert!(started.elapsed() < SLACK, "{:?}", started.elapsed());
    let metrics = server.metrics.encode().unwrap();
    assert_eq!(
        sample(
            &metrics,
            "scion_admission_requests_total{outcome=\"invalid\"}"
        ),
        Some(1.0)
    );
}

/// A mutator that blocks its thread for a while (as a CPU-heavy mutation
/// would) for `block-*` objects and answers anything else at once.
struct Blocking;

const BLOCK_FOR: Duration = Duration::from_millis(2500);

impl Mutator for Blocking {
    fn decode(&self, body: &[u8]) -> Result<AdmissionRequest, ReviewError> {
        scion::decode::whole(body)
    }

    fn mutate<'a>(
        &'a self,
        request: &'a AdmissionRequest,
    ) -> BoxFuture<'a, Result<Verdict, Denial>> {
        Box::pin(async move {
            if request.name.starts_with("block") {
                std::thread::sleep(BLOCK_FOR);
            }
            Ok(Verdict::Unchanged)
        })
    }
}

async fn blocking_server(timeout: Duration) -> Target {
    Target::start(
        |c| {
            c.request_timeout = timeout;
            c.mutation_workers = 4;
        },
        Arc::new(Blocking),
    )
    .await
}

#[tokio::test]
async fn a_mutation_that_blocks_its_thread_stalls_neither_probes_nor_other_requests() {
    // This test's runtime has a single thread: had the mutation run on it,
    // nothing else could be answered until it finished.
    let server = blocking_server(Duration::from_secs(8)).await;
    let ca = server.ca_pem();
    let started = Instant::now();
    let mut blocked = Vec::new();
    for i in 0..2 {
        let mut conn = connect(server.addrs.https, client_config(&[&ca], &[b"h2"]))
            .await
            .unwrap();
        blocked.push(tokio::spawn(async move {
            conn.review(review(V1, &format!("b{i}"), "block")).await
        }));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (status, _) = http_get(server.addrs.health, "/healthz").await.unwrap();
    assert_eq!(status, StatusCode::OK);
    let (status, _) = http_get(server.addrs.metrics, "/metrics").await.unwrap();
    assert_eq!(status, StatusCode::OK);
    let mut conn = connect(server.addrs.https, client_config(&[&ca], &[b"http/1.1"]))
        .await
        .unwrap();
    let (status, _, _) = conn.review(review(V1, "quick", "x")).await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert!(
        started.elapsed() < BLOCK_FOR && blocked.iter().all(|b| !b.is_finished()),
        "answered while the blocking mutations were still running ({:?})",
        started.elapsed()
    );
    for request in blocked {
        let (status, _, _) = request.await.unwrap().unwrap();
        assert_eq!(status, StatusCode::OK);
    }
}

#[tokio::test]
async fn a_mutation_that_never_yields_is_still_answered_504_on_time() {
    let server = blocking_server(Duration::from_secs(1)).await;
    let mut conn = connect(
        server.addrs.https,
        client_config(&[&server.ca_pem()], &[b"http/1.1"]),
    )
    .await
    .unwrap();
    let started = Instant::now();
    let (status, _, body) = conn.review(review(V1, "uid-stuck", "block")).await.unwrap();
    let elapsed = started.elapsed();
    assert!(elapsed < BLOCK_FOR, "{elapsed:?}");
    assert_eq!(status, StatusCode::OK);
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let response = &answer["response"];
    assert_eq!(response["uid"], "uid-stuck");
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 504);
    assert_eq!(response["status"]["reason"], "Timeout");
    assert!(
        response["status"]["message"]
            .as_str()
            .unwrap()
            .contains("Deployment shoot--core--test/block: the mutation did not finish within the request timeout of 1s"),
        "{response}"
    );
}
