//! Start the test bed by hand (what `scripts/testbed.sh shell` runs inside
//! its network namespace): etcd, a seed kube-apiserver with the CRDs of
//! `manifests/crds/` installed, and with `--shoot` a second API server. It
//! writes the shell lines that point `kubectl`, `helm` and `scion serve` at
//! it into `<state>/env`, then runs until SIGTERM or SIGINT and stops
//! everything it started.
//!
//! ```sh
//! scripts/testbed.sh shell            # the usual way
//! cargo run --example testbed -- --state /tmp/bed [--shoot]   # inside a loopback-only namespace
//! ```

#[path = "../tests/support/testbed/mod.rs"]
mod testbed;

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let state = args
        .iter()
        .position(|a| a == "--state")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from)
        .expect("usage: testbed --state DIR [--shoot]");
    let shoot = args.iter().any(|a| a == "--shoot");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        let bed = if shoot {
            testbed::Testbed::start_with_shoot().await
        } else {
            testbed::Testbed::start().await
        };
        bed.seed.install_crds().await;
        let bins = testbed::binaries();
        let mut env = String::new();
        writeln!(env, "# the test bed (files in {})", bed.dir().display()).unwrap();
        writeln!(env, "export PATH={}:\"$PATH\"", bins.dir.display()).unwrap();
        writeln!(env, "export KUBECONFIG={}", bed.seed.kubeconfig.display()).unwrap();
        writeln!(env, "export SCION_TESTBED_SEED={}", bed.seed.url).unwrap();
        if let Some(shoot) = &bed.shoot {
            writeln!(
                env,
                "export SHOOT_KUBECONFIG={}",
                shoot.kubeconfig.display()
            )
            .unwrap();
        }
        std::fs::write(state.join("env.tmp"), env).unwrap();
        std::fs::rename(state.join("env.tmp"), state.join("env")).unwrap();
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).unwrap();
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        drop(bed);
    });
}
