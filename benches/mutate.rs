//! One kube-controller-manager AdmissionReview end to end in process, as the
//! server handles it: parse the review (the object only within the engine's
//! reach), run the webhook mutator (shoot lookup, rules), diff and serialise the
//! AdmissionReview response with its base64 patch. Target: under 50 µs.
//! `osc_admission_review_end_to_end` does the same for an OperatingSystemConfig
//! review (issue 15's target: under 150 µs).
//!
//! The recorded fixture is pretty-printed for reading; the API server sends
//! compact JSON, so the bench feeds the fixture re-encoded compactly (10 KB).

use std::sync::Arc;

/// The hostile inputs of issue 27, as the tests and the attack tool build them.
#[path = "../tests/support/hostile.rs"]
#[allow(dead_code)]
mod hostile;

/// The allocator of the `scion` binary (src/main.rs), so the figures are its.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, criterion_group, criterion_main};
use scion::admission::{AdmissionResponse, Mutator, Verdict};
use scion::gardener::ShootContext;
use scion::gardener::view::Strings;
use scion::mutation::{Engine, WebhookMutator};
use scion::profile::Profile;
use scion::state::Snapshot;
use serde::Deserialize as _;

/// gardenlet's UPDATE of a worker pool's `-original` OperatingSystemConfig as
/// the API server sends it (examples/osc/generate.py): the object with its
/// kubelet unit, b64 kubelet configuration, CA bundles and scripts, and the
/// stored object as `oldObject`; 84 KB compact, mostly base64.
const OSC_REVIEW: &[u8] = include_bytes!("../examples/reviews/aws-operatingsystemconfig.json");

const RECORDED: &[u8] = include_bytes!(
    "../tests/fixtures/admission/aws-1.33-vac-ipv4-kube-controller-manager.review.json"
);

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

fn handle(mutator: &WebhookMutator, body: &[u8]) -> Vec<u8> {
    let request = mutator.decode(body).expect("fixture parses");
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

/// CPU time (user + system) of this process in microseconds, from
/// /proc/self/stat; wall-clock figures are unreliable on a shared 2-core box.
fn cpu_micros() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks * 10_000) // USER_HZ = 100
}

fn bench(c: &mut Criterion) {
    let review: serde_json::Value = serde_json::from_slice(RECORDED).expect("fixture is JSON");
    let review = serde_json::to_vec(&review).expect("serialises");
    let review = review.as_slice();
    let mut snap = Snapshot::default();
    snap.insert_shoot(shoot());
    let engine = Engine::new(Profile::builtin("aws").expect("built-in"));
    let mutator = WebhookMutator::new(engine, Arc::new(snap));
    assert!(handle(&mutator, review).len() > 100);
    if let (Ok(n), Some(start)) = (std::env::var("SCION_BENCH_CPU_ITERATIONS"), cpu_micros()) {
        let n: u64 = n.parse().unwrap_or(20_000);
        for _ in 0..n {
            std::hint::black_box(handle(&mutator, std::hint::black_box(review)));
        }
        if let Some(end) = cpu_micros() {
            println!(
                "cpu time per review: {:.1} µs over {n} iterations",
                (end - start) as f64 / n as f64
            );
        }
    }
    c.bench_function("kcm_admission_review_end_to_end", |b| {
        b.iter(|| handle(&mutator, std::hint::black_box(review)))
    });
    // The fixture as recorded (pretty-printed, 18 KB); docs/performance.md
    // gives its figure next to the compact one.
    c.bench_function("kcm_admission_review_pretty_input", |b| {
        b.iter(|| handle(&mutator, std::hint::black_box(RECORDED)))
    });
    // The parts, to see where the time goes. The first is the floor: parsing
    // the body into a serde_json::Value and nothing else.
    c.bench_function("part_floor_json_value_parse", |b| {
        b.iter(|| serde_json::from_slice::<serde_json::Value>(std::hint::black_box(review)))
    });
    // What the reach buys: the same review decoded with its whole object.
    c.bench_function("part_parse_review_whole_object", |b| {
        b.iter(|| scion::decode::whole(std::hint::black_box(review)))
    });
    // What scion's JSON reader buys: skipping `oldObject` (text no rule reads)
    // with it and with serde_json.
    let old_object = {
        let value: serde_json::Value = serde_json::from_slice(review).expect("JSON");
        serde_json::to_string(&value["request"]["oldObject"]).expect("serialises")
    };
    c.bench_function("part_skip_old_object_scion_reader", |b| {
        b.iter(|| {
            let mut de = scion::decode::json::Deserializer::new(std::hint::black_box(&old_object));
            serde::de::IgnoredAny::deserialize(&mut de).expect("skips")
        })
    });
    c.bench_function("part_skip_old_object_serde_json", |b| {
        b.iter(|| {
            serde_json::from_str::<serde::de::IgnoredAny>(std::hint::black_box(&old_object))
                .expect("skips")
        })
    });
    c.bench_function("part_parse_review", |b| {
        b.iter(|| mutator.decode(std::hint::black_box(review)))
    });
    // The OperatingSystemConfig webhook: kubelet unit, b64 kubelet
    // configuration and sysctl re-encoded, ECR and MTU files and units added.
    let osc: serde_json::Value = serde_json::from_slice(OSC_REVIEW).expect("example is JSON");
    let osc = serde_json::to_vec(&osc).expect("serialises");
    let mut shoot_osc = shoot();
    shoot_osc.cluster_name = "shoot--dev--aws".into();
    shoot_osc.shoot.spec.provider.infrastructure_config =
        Some(serde_json::json!({"kind": "InfrastructureConfig"}));
    let mut osc_snap = Snapshot::default();
    osc_snap.insert_shoot(shoot_osc);
    let osc_snap: Arc<Snapshot> = Arc::new(osc_snap);
    let osc_mutator = WebhookMutator::new(
        Engine::new(Profile::builtin("aws").expect("built-in")),
        osc_snap.clone(),
    );
    assert!(
        handle(&osc_mutator, &osc).len() > 1000,
        "the OSC is patched"
    );
    c.bench_function("osc_admission_review_end_to_end", |b| {
        b.iter(|| handle(&osc_mutator, std::hint::black_box(&osc)))
    });
    // The same with the kubelet memo off: the first review of a pool's
    // configuration (every later one with the same content hits the memo).
    let osc_cold = WebhookMutator::new(
        Engine::new(Profile::builtin("aws").expect("built-in")).with_kubelet_memo(0),
        osc_snap,
    );
    c.bench_function("osc_admission_review_first_time", |b| {
        b.iter(|| handle(&osc_cold, std::hint::black_box(&osc)))
    });
    // The kubelet configuration codec, the OSC's main cost: YAML in, the
    // Go struct's JSON form, YAML out.
    let osc_object: serde_json::Value = serde_json::from_slice(OSC_REVIEW).expect("JSON");
    let config_text = osc_object["request"]["object"]["spec"]["files"]
        .as_array()
        .expect("files")
        .iter()
        .find(|f| f["path"] == scion::mutation::osc::KUBELET_CONFIG)
        .and_then(|f| f["content"]["inline"]["data"].as_str())
        .map(|d| scion::gocompat::file::decode("b64", d).expect("b64"))
        .map(|b| String::from_utf8(b).expect("UTF-8"))
        .expect("a kubelet configuration");
    let library = scion::gocompat::kubelet::NEWEST_LIBRARY;
    c.bench_function("part_osc_kubelet_yaml_parse", |b| {
        b.iter(|| {
            serde_saphyr::from_str::<serde_json::Value>(std::hint::black_box(&config_text))
                .expect("YAML")
        })
    });
    c.bench_function("part_osc_kubelet_decode", |b| {
        b.iter(|| scion::gocompat::kubelet::decode(std::hint::black_box(&config_text), library))
    });
    let config = scion::gocompat::kubelet::decode(&config_text, library).expect("decodes");
    c.bench_function("part_osc_kubelet_encode", |b| {
        b.iter(|| scion::gocompat::kubelet::encode(std::hint::black_box(&config)))
    });
    let request = mutator.decode(review).expect("fixture parses");
    c.bench_function("part_mutate_and_diff", |b| {
        b.iter(|| futures::executor::block_on(mutator.mutate(std::hint::black_box(&request))))
    });
    let object = request.object.as_ref().expect("object");
    let target = scion::mutation::dispatch(&request.kind, object).expect("a target");
    let shoot = shoot();
    let objects = scion::mutation::Objects::new();
    let mutation = mutator
        .engine()
        .mutate(target, object, &shoot, &objects)
        .expect("mutates");
    c.bench_function("part_patch_of_the_draft", |b| {
        b.iter(|| std::hint::black_box(&mutation).patch())
    });
}

/// Issue 27: each hostile seed-webhook input at three sizes (×1, ×2, ×4), as
/// the server runs it: under the memory share and deadline a job of that
/// body gets (`scion::server::mutation_budget`). The time must grow at most
/// linearly; those the allowance refuses are measured to the refusal.
fn hostile_inputs(c: &mut Criterion) {
    let mut shoot_osc = shoot();
    shoot_osc.cluster_name = hostile::OSC_NAMESPACE.into();
    shoot_osc.shoot.spec.provider.infrastructure_config =
        Some(serde_json::json!({"kind": "InfrastructureConfig"}));
    let mut snap = Snapshot::default();
    snap.insert_shoot(shoot_osc);
    let mutator = WebhookMutator::new(
        Engine::new(Profile::builtin("aws").expect("built-in")),
        Arc::new(snap),
    );
    type Build = fn(usize) -> Vec<u8>;
    let cases: Vec<(&str, [usize; 3], Build)> = vec![
        (
            "hostile_unit_sections",
            [12_500, 25_000, 50_000],
            hostile::many_sections,
        ),
        ("hostile_unit_long_lines_first", [250, 500, 1_000], |n| {
            hostile::long_lines_first(n, 2_000)
        }),
        (
            "hostile_kubelet_config_bytes",
            [500_000, 1_000_000, 2_000_000],
            hostile::big_kubelet_config,
        ),
        (
            "hostile_tiny_files",
            [212_500, 425_000, 850_000],
            hostile::tiny_files,
        ),
        (
            "hostile_ordinary_files",
            [12_500, 25_000, 50_000],
            hostile::ordinary_files,
        ),
        // What fits the share of the example's 84 KB review (answered).
        (
            "hostile_tiny_files_fitting",
            [200, 400, 800],
            hostile::tiny_files,
        ),
        (
            "hostile_ordinary_files_fitting",
            [50, 100, 200],
            hostile::ordinary_files,
        ),
    ];
    let mut group = c.benchmark_group("hostile");
    group.sample_size(10);
    for (name, sizes, build) in cases {
        for n in sizes {
            let body = build(n);
            let answer = || {
                let budget = scion::server::mutation_budget(body.len());
                scion::budget::run(budget, || match mutator.decode(&body) {
                    Ok(request) => futures::executor::block_on(mutator.mutate(&request))
                        .map(|_| ())
                        .is_ok(),
                    Err(_) => false,
                })
            };
            // What the server answers, once, beside the figure.
            let budget = scion::server::mutation_budget(body.len());
            let outcome = scion::budget::run(budget, || match mutator.decode(&body) {
                Ok(request) => match futures::executor::block_on(mutator.mutate(&request)) {
                    Ok(_) => "mutated".to_string(),
                    Err(d) => format!("denied {}", d.code()),
                },
                Err(e) => format!("refused: {e}"),
            });
            // The CPU time of an answer on this thread (the scheduler's
            // nanoseconds, `/proc/thread-self/schedstat`), averaged over
            // answers that took 200 ms of CPU together (the count advances
            // by scheduler ticks): unlike the wall time criterion reports,
            // it leaves out the time other processes of a shared machine
            // held the CPU.
            let cpu = thread_cpu_ns().map(|start| {
                let mut answers = 0u32;
                let mut used = 0;
                while used < 200_000_000 && answers < 10_000 {
                    answer();
                    answers += 1;
                    used = thread_cpu_ns().unwrap_or(start) - start;
                }
                format!("{:.3} ms", used as f64 / 1e6 / f64::from(answers))
            });
            let cpu = cpu.unwrap_or_else(|| "?".into());
            println!(
                "{name}/{n}: {} bytes, {outcome}, CPU per answer {cpu}",
                body.len()
            );
            group.bench_function(format!("{name}/{n}"), |b| b.iter(answer));
        }
    }
    group.finish();
}

/// The CPU time this thread has run, in nanoseconds (Linux).
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

criterion_group!(benches, bench, hostile_inputs);
criterion_main!(benches);
