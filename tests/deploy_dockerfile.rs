//! The Dockerfile cannot be built here (no container engine), so this test
//! checks what would break it: every COPY source exists and is not excluded by
//! .dockerignore, every path Cargo.toml needs is in the build context, the
//! build is `--release --locked` for the `[[bin]]` the crate declares, the
//! runtime image runs that binary as a non-root user and exposes the ports the
//! manifests use.

use std::path::Path;

use scion::deploy::names::{BINARY_PATH, HEALTH_PORT, METRICS_PORT, WEBHOOK_PORT};
use scion::deploy::workload::RUN_AS_ID;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(name: &str) -> String {
    std::fs::read_to_string(root().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Instructions as (KEYWORD, arguments), with continuation lines joined and
/// comments dropped.
fn instructions() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in read("Dockerfile").lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_empty()) {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(part) => {
                current.push_str(part);
                current.push(' ');
            }
            None => {
                current.push_str(trimmed);
                let (keyword, args) = current.split_once(' ').unwrap_or((&current, ""));
                out.push((keyword.to_uppercase(), args.trim().to_owned()));
                current.clear();
            }
        }
    }
    out
}

/// Glob match with `*` (within a path segment) and `**` (any number of
/// segments), as .dockerignore uses them.
fn glob(pattern: &str, path: &str) -> bool {
    fn go(p: &[u8], s: &[u8]) -> bool {
        match p {
            [] => s.is_empty(),
            [b'*', b'*', b'/', rest @ ..] => {
                (0..=s.len()).any(|i| (i == 0 || s[i - 1] == b'/') && go(rest, &s[i..]))
            }
            [b'*', rest @ ..] => (0..=s.len())
                .take_while(|&i| i == 0 || s[i - 1] != b'/')
                .any(|i| go(rest, &s[i..])),
            [c, rest @ ..] => s.first() == Some(c) && go(rest, &s[1..]),
        }
    }
    go(pattern.as_bytes(), path.as_bytes())
}

/// Whether `path` (relative to the context root) is excluded by .dockerignore.
fn ignored(path: &str) -> bool {
    read(".dockerignore")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .any(|pattern| {
            let pattern = pattern.trim_end_matches('/');
            // a pattern matching a directory excludes everything below it
            let mut prefix = String::new();
            path.split('/').any(|segment| {
                if !prefix.is_empty() {
                    prefix.push('/');
                }
                prefix.push_str(segment);
                glob(pattern, &prefix)
            })
        })
}

/// `[[bin]]` names and every `path = "..."` in Cargo.toml.
fn cargo_targets() -> (Vec<String>, Vec<String>) {
    let mut bins = Vec::new();
    let mut paths = Vec::new();
    let mut section = String::new();
    for line in read("Cargo.toml").lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_owned();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim().trim_matches('"').to_owned();
        match key.trim() {
            "name" if section == "[[bin]]" => bins.push(value),
            "path" if !line.contains('{') => paths.push(value),
            _ => {}
        }
    }
    (bins, paths)
}

fn stages() -> Vec<Vec<(String, String)>> {
    let mut stages: Vec<Vec<(String, String)>> = Vec::new();
    for (keyword, args) in instructions() {
        if keyword == "FROM" {
            stages.push(Vec::new());
        }
        if let Some(stage) = stages.last_mut() {
            stage.push((keyword, args));
        }
    }
    stages
}

#[test]
fn copy_sources_exist_and_are_in_the_build_context() {
    let mut copies = 0;
    for (keyword, args) in instructions() {
        if keyword != "COPY" && keyword != "ADD" {
            continue;
        }
        let words: Vec<&str> = args.split_whitespace().collect();
        if words.iter().any(|w| w.starts_with("--from=")) {
            continue;
        }
        let operands: Vec<&str> = words.into_iter().filter(|w| !w.starts_with("--")).collect();
        let (_, sources) = operands.split_last().expect("COPY needs a destination");
        for source in sources {
            let source = source.trim_start_matches("./");
            let source = if source.is_empty() { "." } else { source };
            assert!(
                root().join(source).exists(),
                "COPY source {source} does not exist"
            );
            assert!(
                source == "." || !ignored(source),
                "COPY source {source} is .dockerignored"
            );
            copies += 1;
        }
    }
    assert!(copies > 0, "the Dockerfile copies no sources");
}

#[test]
fn everything_cargo_needs_is_in_the_build_context() {
    let (_, paths) = cargo_targets();
    let mut needed = vec![
        "Cargo.toml".to_owned(),
        "Cargo.lock".to_owned(),
        "src/main.rs".to_owned(),
    ];
    needed.extend(paths);
    // auto-discovered targets
    for dir in ["benches", "examples", "tests"] {
        if root().join(dir).is_dir() {
            needed.push(dir.to_owned());
        }
    }
    for path in needed {
        assert!(
            root().join(&path).exists(),
            "{path} named by Cargo.toml does not exist"
        );
        assert!(
            !ignored(&path),
            "{path} is needed by cargo but .dockerignored"
        );
    }
    // and the things that must stay out
    assert!(ignored("target/release/scion"));
    assert!(ignored("certs/tls.key"));
    assert!(ignored("tests/fixtures/tls/server.key"));
}

#[test]
fn builds_the_declared_binary_release_and_locked() {
    let (bins, _) = cargo_targets();
    assert_eq!(
        bins.len(),
        1,
        "expected one [[bin]] in Cargo.toml: {bins:?}"
    );
    let bin = &bins[0];
    let stages = stages();
    assert!(stages.len() >= 2, "multi-stage build expected");
    let builds: Vec<&String> = stages[0]
        .iter()
        .filter(|(k, a)| k == "RUN" && a.contains("cargo build"))
        .map(|(_, a)| a)
        .collect();
    assert_eq!(builds.len(), 1);
    let build = builds[0];
    let words: Vec<&str> = build.split_whitespace().collect();
    assert!(
        words.contains(&"--release") && words.contains(&"--locked"),
        "{build}"
    );
    let bin_flag = words
        .iter()
        .position(|w| *w == "--bin")
        .map(|i| words[i + 1]);
    assert_eq!(bin_flag, Some(bin.as_str()));
    assert!(build.contains(&format!("target/release/{bin} ")), "{build}");

    let rust_version = read("Cargo.toml")
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .map(|v| v.trim_matches('"').to_owned())
        .unwrap();
    let image = &stages[0][0].1;
    let tag = image.split(':').nth(1).unwrap().split('-').next().unwrap();
    let version = |v: &str| -> Vec<u32> { v.split('.').map(|n| n.parse().unwrap()).collect() };
    assert!(
        version(tag) >= version(&rust_version),
        "builder {image} older than {rust_version}"
    );
}

#[test]
fn runtime_stage_runs_the_binary_as_non_root_on_the_server_ports() {
    let stages = stages();
    let runtime = stages.last().unwrap();
    let get = |keyword: &str| -> Vec<&String> {
        runtime
            .iter()
            .filter(|(k, _)| k == keyword)
            .map(|(_, a)| a)
            .collect()
    };
    assert!(
        get("FROM")[0].contains("distroless"),
        "runtime image should have no shell"
    );
    assert!(
        get("RUN").is_empty(),
        "a shell-less runtime stage cannot RUN"
    );

    let copy = get("COPY");
    let dest = copy
        .iter()
        .find(|a| a.starts_with("--from=builder"))
        .and_then(|a| a.split_whitespace().last())
        .unwrap();
    assert_eq!(dest, BINARY_PATH);
    let entrypoint: Vec<String> = serde_json::from_str(get("ENTRYPOINT")[0]).unwrap();
    assert_eq!(entrypoint, [BINARY_PATH]);
    let cmd: Vec<String> = serde_json::from_str(get("CMD")[0]).unwrap();
    assert_eq!(cmd[0], "serve");

    let user = get("USER");
    assert_eq!(user.len(), 1);
    let uid = user[0].split(':').next().unwrap();
    let uid: i64 = uid
        .parse()
        .expect("numeric USER, so runAsNonRoot can verify it");
    assert_ne!(uid, 0);
    assert_eq!(uid, RUN_AS_ID, "the Deployment's runAsUser");

    let exposed: Vec<u16> = get("EXPOSE")
        .iter()
        .flat_map(|a| a.split_whitespace())
        .map(|p| p.trim_end_matches("/tcp").parse().unwrap())
        .collect();
    for port in [WEBHOOK_PORT, METRICS_PORT, HEALTH_PORT] {
        assert!(exposed.contains(&port), "EXPOSE misses {port}");
    }
}

#[test]
fn glob_matches_like_dockerignore() {
    assert!(glob("**/*.key", "a/b/c.key"));
    assert!(glob("**/*.key", "c.key"));
    assert!(!glob("**/*.key", "c.keys"));
    assert!(glob("target", "target"));
    assert!(!glob("target", "targets"));
    assert!(!glob("*.key", "a/c.key"));
}
