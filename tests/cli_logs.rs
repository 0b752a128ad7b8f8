//! What an operator reads: the log lines of `scion serve` and the error lines
//! of the commands carry no Rust debug syntax (`None`, `Some(…)`,
//! `Status { … }`, `["a", "b"]`), durations without float noise, a denied
//! request with its reason, and a successful admission nothing at info.

mod support;

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyper::StatusCode;
use serde_json::Value;
use support::server::{client_config, connect};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The first piece of `text` that looks like Rust's `{:?}` output, if any.
pub fn debug_syntax(text: &str) -> Option<String> {
    let words = ["Some(", "None", "Ok(", "Err(", "\\\"", " { ", "[\""];
    for w in words {
        if let Some(at) = text.find(w) {
            // `None` as a word only (not `none` or `NoneSuch`).
            if w == "None" {
                let after = text[at + 4..].chars().next();
                let before = text[..at].chars().next_back();
                if after.is_some_and(char::is_alphanumeric)
                    || before.is_some_and(char::is_alphanumeric)
                {
                    continue;
                }
            }
            let start = at.saturating_sub(40);
            let end = (at + 40).min(text.len());
            let (start, end) = (floor(text, start), floor(text, end));
            return Some(text[start..end].to_string());
        }
    }
    None
}

fn floor(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Every string in a JSON line.
fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
        Value::Object(m) => m.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

#[test]
fn the_detector_finds_debug_syntax() {
    for bad in [
        "Some(\"examples/objects\")",
        "None",
        "ApiError: x (Status { status: Some(Failure) })",
        "names: [\"localhost\", \"127.0.0.1\"]",
    ] {
        assert!(debug_syntax(bad).is_some(), "{bad}");
    }
    for good in [
        "examples/objects",
        "--controllers none",
        "unknown provider \"nope\"",
        "API server answered 404 NotFound: leases \"x\" not found",
        "localhost, 127.0.0.1",
    ] {
        assert_eq!(debug_syntax(good), None, "{good}");
    }
}

struct Serve {
    child: std::process::Child,
    lines: Arc<Mutex<Vec<String>>>,
    https: SocketAddr,
}

fn serve(cert_dir: &Path) -> Serve {
    serve_with(&["--provider", "aws"], cert_dir)
}

fn serve_with(args: &[&str], cert_dir: &Path) -> Serve {
    let mut child = Command::new(env!("CARGO_BIN_EXE_scion"))
        .arg("serve")
        .args(args)
        .args(["--log-format", "json"])
        .arg("--objects-dir")
        .arg(root().join("examples/objects"))
        .args(["--listen", "127.0.0.1:0", "--health-listen", "127.0.0.1:0"])
        .args(["--metrics-listen", "127.0.0.1:0", "--cert-dir"])
        .arg(cert_dir)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let (seen, stderr) = (lines.clone(), child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && v["msg"] == "listening"
                && v["listener"] == "https"
            {
                let _ = tx.send(v["addr"].as_str().unwrap().parse::<SocketAddr>().unwrap());
            }
            seen.lock().unwrap().push(line);
        }
    });
    let https = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("serve listens");
    Serve {
        child,
        lines,
        https,
    }
}

fn stop(mut serve: Serve) -> Vec<String> {
    let killed = Command::new("kill")
        .args(["-TERM", &serve.child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let started = Instant::now();
    while serve.child.try_wait().unwrap().is_none() {
        assert!(started.elapsed() < Duration::from_secs(10), "no exit");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    serve.lines.lock().unwrap().clone()
}

fn review_in(namespace: &str, uid: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": uid,
            "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
            "name": "kube-apiserver", "namespace": namespace, "operation": "UPDATE",
            "object": {"apiVersion": "apps/v1", "kind": "Deployment",
                       "metadata": {"name": "kube-apiserver", "namespace": namespace}}}
    }))
    .unwrap()
}

#[tokio::test]
async fn serve_logs_have_no_debug_syntax_and_a_denial_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let serve = serve(dir.path());
    let ca = std::fs::read(dir.path().join("ca.crt")).unwrap();
    let mut conn = connect(serve.https, client_config(&[&ca], &[b"http/1.1"]))
        .await
        .unwrap();
    let patched =
        std::fs::read(root().join("examples/reviews/aws-kube-controller-manager.json")).unwrap();
    let (status, _, body) = conn.review(patched).await.unwrap();
    assert_eq!(status, StatusCode::OK);
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    let allowed_uid = answer["response"]["uid"].as_str().unwrap().to_string();
    // No Cluster for this namespace in the example objects: a 403 denial.
    let (status, _, body) = conn
        .review(review_in("shoot--nowhere--aws", "denied-1"))
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["response"]["allowed"], false, "{answer}");
    let denial = answer["response"]["status"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    let lines = stop(serve);

    let mut parsed = Vec::new();
    for line in &lines {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let mut texts = Vec::new();
        strings(&v, &mut texts);
        for text in texts {
            assert_eq!(debug_syntax(&text), None, "debug syntax in {line}");
        }
        parsed.push(v);
    }
    let start = &parsed[0];
    assert_eq!(start["msg"], "starting scion serve", "{start}");
    assert_eq!(start["provider"], "aws");
    assert!(
        start["objects_dir"]
            .as_str()
            .unwrap()
            .ends_with("examples/objects"),
        "{start}"
    );
    assert!(
        start.get("profile").is_none(),
        "an unset option is left out: {start}"
    );

    let generated = parsed
        .iter()
        .find(|v| {
            v["msg"]
                .as_str()
                .unwrap_or("")
                .starts_with("generated a development")
        })
        .expect("the certificate line");
    assert_eq!(generated["names"], "localhost, 127.0.0.1");

    let refused = parsed
        .iter()
        .find(|v| v["uid"] == "denied-1")
        .expect("the denied request is logged");
    assert_eq!(refused["level"], "warn");
    assert_eq!(refused["outcome"], "denied");
    assert_eq!(refused["reason"], denial.as_str(), "{refused}");
    assert!(denial.contains("shoot--nowhere--aws"), "{denial}");
    let ms = refused["duration_ms"].as_f64().unwrap();
    let text = refused["duration_ms"].to_string();
    assert!(
        text.split('.').nth(1).is_none_or(|d| d.len() <= 3) && ms >= 0.0,
        "float noise: {text}"
    );
    assert!(
        !parsed.iter().any(|v| v["uid"] == allowed_uid.as_str()),
        "a successful admission logged at info: {lines:#?}"
    );
}

/// At start, each extension feature gate the provider declares is logged
/// with its value; a gate set that it does not declare is warned about in
/// words that name no provider, and serve runs.
#[test]
fn serve_logs_the_feature_gates_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let serve = serve_with(
        &[
            "--provider",
            "azure",
            "--feature-gates",
            "MTUCustomizer=false,DisableRemedyController=true",
        ],
        dir.path(),
    );
    let lines: Vec<Value> = stop(serve)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let gates: Vec<&Value> = lines.iter().filter(|v| v["gate"].is_string()).collect();
    assert_eq!(gates.len(), 2, "{gates:#?}");
    let declared = gates[0];
    assert_eq!(declared["level"], "info");
    assert_eq!(declared["msg"], "extension feature gate");
    assert_eq!(declared["gate"], "DisableRemedyController");
    assert_eq!(declared["enabled"], true);
    assert_eq!(declared["set"], true);
    let other = gates[1];
    assert_eq!(other["level"], "warn");
    assert_eq!(other["gate"], "MTUCustomizer");
    assert_eq!(other["enabled"], false);
    let text = other["msg"].as_str().unwrap();
    assert!(text.starts_with("feature gate has no effect"), "{text}");
    for provider in scion::profile::BUILTIN_PROVIDERS {
        assert!(!text.contains(provider), "names {provider}: {text}");
    }
}

fn scion(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(args)
        .current_dir(root())
        .env_remove("IMAGEVECTOR_OVERWRITE")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn error_lines_of_the_commands_have_no_debug_syntax() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.yaml");
    let missing = missing.to_str().unwrap();
    let half = dir.path().join("half");
    std::fs::create_dir(&half).unwrap();
    std::fs::write(half.join("tls.crt"), "x").unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "render",
            "--provider",
            "nope",
            "--objects-dir",
            "examples/objects",
            "--controlplane",
            "a/b",
        ],
        vec![
            "render",
            "--provider",
            "aws",
            "--objects-dir",
            "examples/objects",
            "--controlplane",
            "ab",
        ],
        vec!["mutate", "--provider", "aws", "-f", missing],
        vec![
            "mutate",
            "--provider",
            "aws",
            "--objects-dir",
            "no-such-dir",
            "-f",
            "examples/reviews/aws-kube-controller-manager.json",
        ],
        vec![
            "manifests",
            "--provider",
            "aws",
            "--namespace",
            "x",
            "--ca-file",
            missing,
        ],
        vec![
            "serve",
            "--provider",
            "aws",
            "--objects-dir",
            "examples/objects",
            "--cert-dir",
            half.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "--health-listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "127.0.0.1:0",
        ],
        vec!["serve", "--provider", "aws", "--request-timeout", "8"],
        vec![
            "certs",
            "--cert-dir",
            dir.path().to_str().unwrap(),
            "--cert-host",
            "bad_host",
        ],
    ];
    for args in cases {
        let (code, stderr) = scion(&args);
        assert_ne!(code, Some(0), "{args:?} succeeded");
        assert!(!stderr.trim().is_empty(), "{args:?}: no error line");
        assert_eq!(debug_syntax(&stderr), None, "{args:?}: {stderr}");
    }
}
