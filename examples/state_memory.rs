//! Memory of the objects-directory state with many realistic Clusters.
//!
//! Generates N Clusters (default 250, ~150 KB each, mostly CloudProfile: many
//! machine images, machine types and regions, plus an AMI per image version,
//! region and architecture in the providerConfig) into a directory, loads it
//! with `ObjectsDir`, and prints the resident memory (VmRSS, VmHWM from
//! /proc/self/status).
//!
//! ```text
//! cargo run --release --example state_memory                        # generate into a temp dir, load, report
//! cargo run --release --example state_memory -- --generate-only DIR  # only write the files (for `scion serve --objects-dir DIR`)
//! cargo run --release --example state_memory -- --dir DIR            # load an existing directory
//! ```

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Parser;
use scion::state::{ObjectsDir, StateSource};
use serde_json::{Value, json};

#[derive(Debug, Parser)]
struct Args {
    /// Number of Clusters to generate.
    #[arg(long, default_value_t = 250)]
    clusters: usize,
    /// Only write the Clusters (and a cloudprovider Secret per shoot) into DIR.
    #[arg(long, value_name = "DIR", conflicts_with = "dir")]
    generate_only: Option<PathBuf>,
    /// Load this directory instead of generating one.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// File format of the generated Clusters.
    #[arg(long, default_value = "yaml", value_parser = ["yaml", "json"])]
    format: String,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    if let Some(dir) = &args.generate_only {
        let bytes = generate(dir, args.clusters, &args.format)?;
        println!(
            "wrote {} Clusters ({:.0} KB each on average) to {}",
            args.clusters,
            bytes as f64 / args.clusters as f64 / 1024.0,
            dir.display()
        );
        return Ok(());
    }
    let tmp;
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => {
            tmp = tempfile::tempdir()?;
            let bytes = generate(tmp.path(), args.clusters, &args.format)?;
            println!(
                "generated {} Clusters, {:.1} MiB of {} ({:.0} KB each)",
                args.clusters,
                bytes as f64 / 1048576.0,
                args.format,
                bytes as f64 / args.clusters as f64 / 1024.0
            );
            tmp.path().to_path_buf()
        }
    };
    let before = memory();
    println!("before load:  {before}");
    let started = Instant::now();
    let (state, problems) = ObjectsDir::load(&dir)?;
    let took = started.elapsed();
    for problem in &problems {
        eprintln!("problem: {problem}");
    }
    let snapshot = state.snapshot();
    println!(
        "loaded {} Clusters in {:.2?} ({} problems)",
        snapshot.shoot_count(),
        took,
        problems.len()
    );
    // Touch every context so nothing is lazily skipped.
    let workers: usize = (0..args.clusters)
        .filter_map(|i| state.shoot(&namespace(i)).ok())
        .map(|c| c.shoot.spec.provider.workers.len())
        .sum();
    println!("worker pools: {workers}");
    println!("after load:   {}", memory());
    let started = Instant::now();
    state.reload();
    println!(
        "re-read of the unchanged directory: {:.2?}",
        started.elapsed()
    );
    println!("after reload: {}", memory());
    Ok(())
}

fn namespace(i: usize) -> String {
    format!("shoot--project{:02}--shoot{i:03}", i % 20)
}

/// VmRSS and VmHWM of this process.
fn memory() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or("?".to_string(), |kb| format!("{:.1} MiB", kb / 1024.0))
    };
    format!("VmRSS {} (peak VmHWM {})", field("VmRSS:"), field("VmHWM:"))
}

/// Write `count` Clusters and a `cloudprovider` Secret per shoot; returns the
/// bytes written for the Clusters.
fn generate(dir: &Path, count: usize, format: &str) -> Result<usize, Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir)?;
    let profile = cloud_profile();
    let seed = seed();
    let mut total = 0;
    for i in 0..count {
        let ns = namespace(i);
        let cluster = json!({
            "apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "Cluster",
            "metadata": {"name": ns, "resourceVersion": format!("{}", 1000 + i),
                "annotations": {"generic-token-kubeconfig.secret.gardener.cloud/name": format!("generic-token-kubeconfig-{i:08x}")},
                "managedFields": [{"manager": "gardenlet", "operation": "Update", "apiVersion": "extensions.gardener.cloud/v1alpha1",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:cloudProfile": {}, "f:seed": {}, "f:shoot": {}}}}]},
            "spec": {"cloudProfile": profile, "seed": seed, "shoot": shoot(i, &ns)}
        });
        let text = match format {
            "json" => serde_json::to_string(&cluster)?,
            _ => serde_saphyr::to_string(&cluster)?,
        };
        total += text.len();
        let folder = dir.join(format!("project{:02}", i % 20)).join(&ns);
        std::fs::create_dir_all(&folder)?;
        std::fs::write(folder.join(format!("cluster.{format}")), text)?;
        let secret = format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cloudprovider\n  namespace: {ns}\n  labels:\n    gardener.cloud/purpose: cloudprovider\nstringData:\n  accessKeyID: AKIAFAKE{i:012}\n  secretAccessKey: fake-secret-{i}\n"
        );
        std::fs::write(folder.join("secret-cloudprovider.yaml"), secret)?;
    }
    Ok(total)
}

const REGIONS: [&str; 24] = [
    "eu-west-1",
    "eu-west-2",
    "eu-west-3",
    "eu-central-1",
    "eu-central-2",
    "eu-north-1",
    "eu-south-1",
    "eu-south-2",
    "us-east-1",
    "us-east-2",
    "us-west-1",
    "us-west-2",
    "ca-central-1",
    "sa-east-1",
    "ap-south-1",
    "ap-south-2",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-southeast-3",
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-northeast-3",
    "me-central-1",
    "af-south-1",
];
const IMAGES: [&str; 4] = ["gardenlinux", "suse-chost", "ubuntu", "flatcar"];

fn image_version(image: usize, v: usize) -> String {
    match image {
        0 => format!("{}.{}.0", 1443 + v * 11, v % 4),
        1 => format!("15.{}.{}", 5 + v / 6, 20240101 + v * 37),
        2 => format!("22.04.{}", 20240101 + v * 97),
        _ => format!("{}.{}.{}", 3815 + v * 23, v % 3, v % 2),
    }
}

fn cloud_profile() -> Value {
    let k8s: Vec<Value> = (27..=34)
        .flat_map(|minor| (0..6).map(move |patch| (minor, patch)))
        .map(|(minor, patch)| {
            let mut v = json!({"version": format!("1.{minor}.{patch}"), "classification": if minor >= 32 { "supported" } else { "deprecated" }});
            if minor < 32 {
                v["expirationDate"] = json!("2026-12-31T23:59:59Z");
            }
            v
        })
        .collect();
    let images: Vec<Value> = IMAGES
        .iter()
        .enumerate()
        .map(|(i, name)| json!({"name": name, "updateStrategy": "minor", "versions": (0..12).map(|v| json!({
            "version": image_version(i, v), "architectures": ["amd64", "arm64"], "cri": [{"name": "containerd"}],
            "classification": if v > 8 { "supported" } else { "deprecated" }, "expirationDate": "2026-12-31T23:59:59Z",
            "kubeletVersionConstraint": ">= 1.27"})).collect::<Vec<_>>()}))
        .collect();
    let families = [
        "m5", "m6i", "m7i", "c5", "c6i", "r5", "r6i", "t3", "m6g", "c7g", "g5", "p4d",
    ];
    let sizes = [
        ("large", 2),
        ("xlarge", 4),
        ("2xlarge", 8),
        ("4xlarge", 16),
        ("8xlarge", 32),
        ("12xlarge", 48),
        ("16xlarge", 64),
        ("24xlarge", 96),
    ];
    let types: Vec<Value> = families
        .iter()
        .flat_map(|f| sizes.iter().map(move |s| (f, s)))
        .map(|(family, (size, cpu))| json!({
            "name": format!("{family}.{size}"), "cpu": cpu.to_string(), "gpu": if family.starts_with('g') || family.starts_with('p') { "1" } else { "0" },
            "memory": format!("{}Gi", cpu * 4), "usable": true,
            "architecture": if family.ends_with('g') { "arm64" } else { "amd64" },
            "storage": {"class": "standard", "type": "gp3", "size": "50Gi"}}))
        .collect();
    let regions: Vec<Value> = REGIONS
        .iter()
        .map(|r| {
            let zones: Vec<Value> = ["a", "b", "c"].iter().map(|z| json!({"name": format!("{r}{z}")})).collect();
            json!({"name": r, "zones": zones, "labels": {"topology.example.com/continent": r.split('-').next()}})
        })
        .collect();
    let provider_images: Vec<Value> = IMAGES
        .iter()
        .enumerate()
        .map(|(i, name)| json!({"name": name, "versions": (0..8).map(|v| json!({
            "version": image_version(i, v + 4),
            "regions": REGIONS.iter().enumerate().flat_map(|(r, region)| ["amd64", "arm64"].iter().map(move |arch| json!({
                "name": region, "architecture": arch,
                "ami": format!("ami-{:017x}", (i * 1_000_003 + v * 10_007 + r * 101 + arch.len()) * 2_654_435_761 % (1 << 60))}))).collect::<Vec<_>>()
        })).collect::<Vec<_>>()}))
        .collect();
    json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "CloudProfile",
        "metadata": {"name": "aws", "resourceVersion": "881234", "generation": 57, "uid": "7e1c6c1e-0b6f-4d7b-9a52-5b0f7b1e2d11"},
        "spec": {"type": "aws", "kubernetes": {"versions": k8s}, "machineImages": images, "machineTypes": types,
            "regions": regions,
            "volumeTypes": [{"name": "gp3", "class": "standard", "usable": true}, {"name": "io1", "class": "premium", "usable": true}],
            "providerConfig": {"apiVersion": "aws.provider.extensions.gardener.cloud/v1alpha1", "kind": "CloudProfileConfig", "machineImages": provider_images}}
    })
}

fn seed() -> Value {
    json!({"apiVersion": "core.gardener.cloud/v1beta1", "kind": "Seed", "metadata": {"name": "aws-eu1"},
        "spec": {"provider": {"type": "aws", "region": "eu-west-1"},
            "networks": {"nodes": "10.242.0.0/16", "pods": "100.96.0.0/11", "services": "100.64.0.0/13"},
            "ingress": {"domain": "ingress.aws-eu1.seed.example.com", "controller": {"kind": "nginx"}},
            "settings": {"scheduling": {"visible": true}, "verticalPodAutoscaler": {"enabled": true}}}})
}

fn shoot(i: usize, ns: &str) -> Value {
    let ipv6 = i.is_multiple_of(10);
    let workers: Vec<Value> = (0..1 + i % 3)
        .map(|w| {
            let mut pool = json!({"name": format!("pool-{w}"),
                "machine": {"type": "m5.large", "image": {"name": "gardenlinux", "version": image_version(0, 9)}, "architecture": "amd64"},
                "minimum": 1, "maximum": 5, "maxSurge": 1, "maxUnavailable": 0, "volume": {"type": "gp3", "size": "50Gi"},
                "zones": ["eu-west-1a", "eu-west-1b"], "cri": {"name": "containerd"}});
            if w == 1 {
                pool["kubernetes"] = json!({"version": "1.32.8"});
            }
            pool
        })
        .collect();
    json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Shoot",
        "metadata": {"name": format!("shoot{i:03}"), "namespace": format!("garden-project{:02}", i % 20),
            "annotations": {"gardener.cloud/created-by": "jane.doe@example.com"}},
        "spec": {"region": "eu-west-1", "kubernetes": {"version": format!("1.33.{}", i % 5), "kubeControllerManager": {"nodeCIDRMaskSize": 24}},
            "networking": {"type": "calico", "ipFamilies": if ipv6 { json!(["IPv4", "IPv6"]) } else { json!(["IPv4"]) },
                "pods": "100.64.0.0/12", "nodes": "10.180.0.0/16", "services": "100.104.0.0/13"},
            "hibernation": {"enabled": i.is_multiple_of(7)},
            "provider": {"type": "aws", "workers": workers,
                "infrastructureConfig": {"apiVersion": "aws.provider.extensions.gardener.cloud/v1alpha1", "kind": "InfrastructureConfig",
                    "networks": {"vpc": {"cidr": "10.180.0.0/16"}, "zones": [{"name": "eu-west-1a", "workers": "10.180.0.0/19", "public": "10.180.32.0/20", "internal": "10.180.48.0/20"}]}},
                "controlPlaneConfig": {"apiVersion": "aws.provider.extensions.gardener.cloud/v1alpha1", "kind": "ControlPlaneConfig",
                    "cloudControllerManager": {"useCustomRouteController": true}}}},
        "status": {"technicalID": ns, "isHibernated": i.is_multiple_of(7),
            "lastOperation": {"type": "Reconcile", "state": "Succeeded", "progress": 100},
            "networking": {"pods": ["100.64.0.0/12"], "nodes": ["10.180.0.0/16"], "services": ["100.104.0.0/13"]}}
    })
}
