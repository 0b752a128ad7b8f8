//! Time and peak memory of diffing long arrays, the attack of a Deployment
//! whose container `command` carries tens of thousands of flags.
//!
//! Builds a `command` of `--flags` flags arranged by `--shape`, diffs it with
//! `scion::patch::diff` and prints the time, the number of operations and the
//! peak resident memory of the process (VmHWM from /proc/self/status) before
//! and after the diff. With `--review` the flags go into the recorded
//! kube-controller-manager AdmissionReview instead, and the whole answer is
//! computed in process as the server does (decode, rules, diff, encode), so
//! the figure is the request path's: the server process adds its idle
//! resident memory (13 MiB, README) and the request body buffer.
//!
//! Peak memory is per process: run one shape per process.
//!
//! ```text
//! cargo run --release --example diff_memory -- --flags 50000 --shape moved
//! cargo run --release --example diff_memory -- --flags 50000 --shape shuffled
//! cargo run --release --example diff_memory -- --flags 50000 --shape reversed --review
//! cargo run --release --example diff_memory -- --flags 50000 --shape shuffled --review \
//!     --from examples/reviews/aws-kube-controller-manager.json --write-review /tmp/review.json
//! ```
//!
//! The last writes the review to post to `scion serve` (docs/diff.md).

use std::sync::Arc;
use std::time::{Duration, Instant};

/// The allocator of the `scion` binary (src/main.rs), so the figures are its.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, ValueEnum};
use scion::admission::{AdmissionResponse, Mutator, Verdict};
use scion::gardener::ShootContext;
use scion::gardener::view::Strings;
use scion::mutation::{Engine, WebhookMutator};
use scion::profile::Profile;
use scion::state::Snapshot;
use serde_json::{Value, json};

const RECORDED: &[u8] = include_bytes!(
    "../tests/fixtures/admission/aws-1.33-vac-ipv4-kube-controller-manager.review.json"
);

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Shape {
    /// The flag the webhook moves (`--allocate-node-cidrs=true`) moved to the end.
    Moved,
    /// The flags in a random order (the seed is fixed).
    Shuffled,
    Reversed,
    /// Every other flag is one the webhook removes (`--allocate-node-cidrs…`).
    Interleaved,
    /// One flag repeated, the first and the last 31 replaced (64 edits): once
    /// past the last ones, the search's snakes run along the whole array on
    /// every diagonal, its worst case within 64 edits.
    Repeated,
}

#[derive(Debug, Parser)]
struct Args {
    /// Number of flags.
    #[arg(long, default_value_t = 50_000)]
    flags: usize,
    #[arg(long, value_enum, default_value = "moved")]
    shape: Shape,
    /// Answer the recorded kube-controller-manager review carrying the flags
    /// (in the shape's order) instead of diffing two arrays.
    #[arg(long)]
    review: bool,
    /// With `--review`: the review to put the flags in, instead of the
    /// recorded one (whose shoot the in-process answer is computed for).
    #[arg(long, value_name = "FILE", requires = "write_review")]
    from: Option<std::path::PathBuf>,
    /// With `--review`: only write the review with the flags to FILE (compact
    /// JSON, as an API server sends it), to post it to `scion serve`.
    #[arg(long, value_name = "FILE", requires = "review")]
    write_review: Option<std::path::PathBuf>,
    /// Diffs (or answers) to time; the fastest is printed.
    #[arg(long, default_value_t = 5)]
    repeat: usize,
}

fn main() {
    let args = Args::parse();
    println!("start:       {}", memory());
    let took = if args.review {
        review(&args)
    } else {
        arrays(&args)
    };
    println!(
        "fastest of {}: {:.3} ms",
        args.repeat,
        took.as_secs_f64() * 1e3
    );
    println!("end:         {}", memory());
}

/// The `before` and `after` commands of the shape.
fn commands(flags: usize, shape: Shape) -> (Vec<Value>, Vec<Value>) {
    let moved = json!("--allocate-node-cidrs=true");
    let flag = |i: usize| match shape {
        Shape::Interleaved if i % 2 == 1 => json!(format!("--allocate-node-cidrs-{i}")),
        Shape::Repeated => json!("--flag=x"),
        _ => json!(format!("--flag-{i}=x")),
    };
    let mut before = vec![
        json!("/usr/local/bin/kube-controller-manager"),
        moved.clone(),
    ];
    before.extend((0..flags).map(flag));
    let mut after = before.clone();
    match shape {
        Shape::Moved => {
            after.remove(1);
            after.push(moved);
        }
        Shape::Shuffled => {
            let mut seed = 11u64;
            for i in (2..after.len()).rev() {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                after.swap(i, 2 + (seed >> 33) as usize % (i - 1));
            }
        }
        Shape::Reversed => after[1..].reverse(),
        Shape::Interleaved => {
            after.retain(|f| {
                !f.as_str()
                    .is_some_and(|f| f.starts_with("--allocate-node-cidrs"))
            });
            after.push(moved);
        }
        Shape::Repeated => {
            // Different first and last flags, so that the common prefix and
            // suffix do not swallow the run: 1 + 31 flags replaced.
            after[1] = json!("--edited");
            let len = after.len();
            for (k, f) in after[len - 31..].iter_mut().enumerate() {
                *f = json!(format!("--edited-{k}"));
            }
        }
    }
    (before, after)
}

fn arrays(args: &Args) -> Duration {
    let (before, after) = commands(args.flags, args.shape);
    let (before, after) = (json!({"command": before}), json!({"command": after}));
    println!("inputs:      {}", memory());
    // The first diff alone for the peak memory, then the repeats for the time.
    let started = Instant::now();
    let patch = scion::patch::diff(&before, &after);
    let mut fastest = started.elapsed();
    println!("diffed:      {}", memory());
    for _ in 1..args.repeat {
        let started = Instant::now();
        std::hint::black_box(scion::patch::diff(&before, &after));
        fastest = fastest.min(started.elapsed());
    }
    let bytes = serde_json::to_vec(&patch).map(|b| b.len()).unwrap_or(0);
    println!(
        "{} flags, {:?}: {} operations, {} KB of patch",
        args.flags,
        args.shape,
        patch.0.len(),
        bytes / 1024
    );
    let mut applied = before.clone();
    json_patch::patch(&mut applied, &patch.0).expect("the patch applies");
    assert_eq!(applied, after, "the patch gives the target");
    fastest
}

fn review(args: &Args) -> Duration {
    let text = match &args.from {
        Some(path) => std::fs::read(path).expect("the review file reads"),
        None => RECORDED.to_vec(),
    };
    let mut review: Value = serde_json::from_slice(&text).expect("the review is JSON");
    let command = review
        .pointer_mut("/request/object/spec/template/spec/containers/0/command")
        .and_then(Value::as_array_mut)
        .expect("the review has a command");
    // The webhook moves `--allocate-node-cidrs=true` to the end of the
    // recorded command: the flags go right after it, in the
    // order of the shape's `after`, or `before` for the flags the webhook
    // removes (it computes its own `after`).
    let (before, after) = commands(args.flags, args.shape);
    let order = match args.shape {
        Shape::Shuffled | Shape::Reversed => after,
        Shape::Moved | Shape::Interleaved | Shape::Repeated => before,
    };
    let arranged = order.into_iter().filter(|f| {
        f.as_str()
            .is_some_and(|f| f.starts_with("--") && f != "--allocate-node-cidrs=true")
    });
    let at = command
        .iter()
        .position(|f| f == "--allocate-node-cidrs=true")
        .map_or(command.len(), |i| i + 1);
    let tail = command.split_off(at);
    command.extend(arranged);
    command.extend(tail);
    let body = serde_json::to_vec(&review).expect("serialises");
    drop(review);
    println!("body:        {} KB", body.len() / 1024);
    if let Some(path) = &args.write_review {
        std::fs::write(path, &body).expect("the review writes");
        println!("wrote {}", path.display());
        return Duration::ZERO;
    }
    let mut snap = Snapshot::default();
    snap.insert_shoot(shoot());
    let engine = Engine::new(Profile::builtin("aws").expect("built-in"));
    let mutator = WebhookMutator::new(engine, Arc::new(snap));
    println!("inputs:      {}", memory());
    let started = Instant::now();
    let answer = handle(&mutator, &body);
    let mut fastest = started.elapsed();
    println!("answered:    {}", memory());
    for _ in 1..args.repeat {
        let started = Instant::now();
        std::hint::black_box(handle(&mutator, &body));
        fastest = fastest.min(started.elapsed());
    }
    println!(
        "{} flags, {:?}, review of {} KB: answer of {} KB",
        args.flags,
        args.shape,
        body.len() / 1024,
        answer.len() / 1024
    );
    fastest
}

/// As the server answers a review (benches/mutate.rs).
fn handle(mutator: &WebhookMutator, body: &[u8]) -> Vec<u8> {
    let request = mutator.decode(body).expect("review parses");
    let verdict = futures::executor::block_on(mutator.mutate(&request)).expect("allowed");
    let response = match verdict {
        Verdict::Unchanged => AdmissionResponse::allow(&request.uid),
        Verdict::Patched(patch) => {
            let bytes = serde_json::to_vec(&patch).expect("patch serialises");
            AdmissionResponse::patched(&request.uid, &bytes)
        }
    };
    response.into_review_bytes(request.version)
}

/// The shoot of the recorded review (benches/mutate.rs).
fn shoot() -> ShootContext {
    let mut s = ShootContext::new("shoot--core--prod", semver::Version::new(1, 33, 1));
    s.shoot.metadata.annotations.insert(
        "aws.provider.extensions.gardener.cloud/enable-volume-attributes-class".to_string(),
        "true".to_string(),
    );
    s.shoot.spec.networking.ip_families = Strings(vec!["IPv4".into()]);
    s.shoot.spec.region = "eu-west-1".into();
    s.shoot.spec.provider.type_ = "aws".into();
    s.seed.spec.provider.type_ = Some("aws".into());
    s.seed.spec.provider.region = Some("eu-west-1".into());
    s
}

/// Resident and peak resident memory of this process.
fn memory() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| "?".into())
    };
    format!("VmRSS {}, VmHWM {}", field("VmRSS:"), field("VmHWM:"))
}
