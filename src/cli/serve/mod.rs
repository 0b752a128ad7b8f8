//! `scion serve`: the HTTPS admission webhook with health and metrics listeners.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;

mod components;
pub mod gardener;
mod values;

use values::parse_addr;
pub use values::parse_duration;

use futures::FutureExt as _;

use super::certs::CertArgs;
use super::logging::{self, LogArgs};
use super::provider::ProviderArgs;
use crate::admission::Mutator;
use crate::controller::extension::metrics::ControllerMetrics;
use crate::deploy::Extension;
use crate::mutation::WebhookMutator;
use crate::profile::{ImageVector, Profile};
use crate::server::{self, Metrics, Readiness, ServerConfig};
use crate::state::StateSource;
use crate::tls::ClientAuthConfig;
use components::LeaderWork;

/// Run the mutating admission webhook.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub provider: ProviderArgs,
    /// Read Cluster, Secret and ConfigMap objects from this directory instead of a cluster.
    #[arg(long, env = "SCION_OBJECTS_DIR", value_name = "DIR")]
    pub objects_dir: Option<PathBuf>,
    /// HTTPS webhook listener.
    #[arg(long, env = "SCION_LISTEN", value_name = "ADDR", default_value = "0.0.0.0:10250", value_parser = parse_addr)]
    pub listen: SocketAddr,
    /// Plain HTTP: GET /healthz, GET /readyz.
    #[arg(long, visible_alias = "health-bind-address", env = "SCION_HEALTH_LISTEN", value_name = "ADDR", default_value = "0.0.0.0:8081", value_parser = parse_addr)]
    pub health_listen: SocketAddr,
    /// Plain HTTP: GET /metrics.
    #[arg(long, visible_alias = "metrics-bind-address", env = "SCION_METRICS_LISTEN", value_name = "ADDR", default_value = "0.0.0.0:8080", value_parser = parse_addr)]
    pub metrics_listen: SocketAddr,
    #[command(flatten)]
    pub cert: CertArgs,
    /// Every request is answered before this (keep it below the webhook's timeoutSeconds).
    #[arg(long, env = "SCION_REQUEST_TIMEOUT", value_name = "DUR", default_value = "8s", value_parser = parse_duration)]
    pub request_timeout: Duration,
    /// Drain time on SIGTERM/SIGINT.
    #[arg(long, env = "SCION_SHUTDOWN_GRACE", value_name = "DUR", default_value = "15s", value_parser = parse_duration)]
    pub shutdown_grace: Duration,
    /// Controllers run by the leader replica when a Kubernetes API is configured:
    /// `controlplane` (deploys the cloud-controller-manager), `healthcheck`
    /// (ControlPlaneHealthy, needs `controlplane`), `heartbeat` (the
    /// gardener-extension-heartbeat Lease), or `none`.
    #[arg(
        long,
        env = "SCION_CONTROLLERS",
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "controlplane,healthcheck,heartbeat"
    )]
    pub controllers: Vec<ControllerName>,
    /// How often the health checks run.
    #[arg(long, env = "SCION_HEALTHCHECK_SYNC_PERIOD", value_name = "DUR", default_value = "30s", value_parser = parse_duration)]
    pub healthcheck_sync_period: Duration,
    /// Namespace of the heartbeat Lease (default: the extension's namespace,
    /// `--webhook-namespace`; Gardener's env LEADER_ELECTION_NAMESPACE also works).
    #[arg(long, env = "LEADER_ELECTION_NAMESPACE", value_name = "NS")]
    pub heartbeat_namespace: Option<String>,
    /// How often the heartbeat Lease is renewed (also its leaseDurationSeconds).
    #[arg(
        long,
        env = "SCION_HEARTBEAT_RENEW_INTERVAL_SECONDS",
        value_name = "N",
        default_value_t = 30
    )]
    pub heartbeat_renew_interval_seconds: u64,
    /// Manage the webhook certificates in the cluster: the leader issues and
    /// rotates a CA and a serving certificate in Secrets of the extension
    /// namespace; every replica copies the current one into --cert-dir (which
    /// must be writable) and waits for it before serving.
    #[arg(long, env = "SCION_MANAGE_CERTS")]
    pub manage_certs: bool,
    /// Create or update the MutatingWebhookConfiguration with the CA bundle in
    /// `<cert-dir>/ca.crt`, at start and whenever it changes (leader only).
    #[arg(long, env = "SCION_REGISTER_WEBHOOK")]
    pub register_webhook: bool,
    /// Open webhook connections at most; further clients wait in the listen backlog
    /// [default: the open-file limit less reserved descriptors, at most 16384].
    #[arg(long, env = "SCION_MAX_CONNECTIONS", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: Option<u32>,
    /// Admission requests in flight at most; further ones are answered HTTP 429 at once.
    #[arg(long, env = "SCION_MAX_REQUESTS_IN_FLIGHT", value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_requests_in_flight: u32,
    /// What one mutation may build from its request, in MiB: the decoded object and what the
    /// codecs make of it (sixteen times the body, at least 1 MiB, at most this).
    #[arg(long, env = "SCION_MUTATION_MEMORY", value_name = "MIB", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub mutation_memory: u32,
    /// What all running mutations may build together, in MiB; a mutation waits for its share.
    #[arg(long, env = "SCION_MUTATION_MEMORY_TOTAL", value_name = "MIB", default_value_t = 48, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub mutation_memory_total: u32,
    /// Require client certificates signed by a CA in this PEM bundle (reloaded when it changes).
    #[arg(long, env = "SCION_CLIENT_CA_FILE", value_name = "FILE")]
    pub client_ca_file: Option<PathBuf>,
    /// With --client-ca-file: accept only client certificates whose subject CN or a DNS SAN is one of these.
    #[arg(
        long,
        env = "SCION_CLIENT_ALLOWED_NAMES",
        value_name = "LIST",
        value_delimiter = ',',
        requires = "client_ca_file"
    )]
    pub client_allowed_names: Vec<String>,
    #[command(flatten)]
    pub engine: crate::cli::engine::EngineArgs,
    /// Namespace of the extension: its Service, leader-election Lease and the owner
    /// of the webhook configuration (default: the Kubernetes client's namespace).
    #[arg(
        long,
        visible_alias = "webhook-config-namespace",
        env = "SCION_WEBHOOK_NAMESPACE",
        value_name = "NS"
    )]
    pub webhook_namespace: Option<String>,
    #[command(flatten)]
    pub log: LogArgs,
    #[command(flatten)]
    pub go: gardener::GoExtensionFlags,
}

/// Controllers `serve` can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ControllerName {
    /// The ControlPlane reconciler (cloud-controller-manager).
    Controlplane,
    /// The ControlPlane health checks.
    Healthcheck,
    /// The heartbeat Lease.
    Heartbeat,
    /// No controller.
    None,
}

impl ControllerName {
    /// The name `--disable-controllers` uses for it.
    fn switch(self) -> &'static str {
        match self {
            ControllerName::Controlplane => "controlplane",
            ControllerName::Healthcheck => "healthcheck",
            ControllerName::Heartbeat => "heartbeat",
            ControllerName::None => "none",
        }
    }
}

impl ServeArgs {
    /// Checks clap cannot express: a provider name must be built in unless a
    /// profile file is given.
    pub fn validate(&self) -> Result<(), String> {
        self.provider.validate()?;
        if self.request_timeout.is_zero() {
            return Err("--request-timeout must be above zero".into());
        }
        if self.heartbeat_renew_interval_seconds == 0 {
            return Err("--heartbeat-renew-interval-seconds must be greater than 0".into());
        }
        if self.healthcheck_sync_period.is_zero() {
            return Err("--healthcheck-sync-period must be above zero".into());
        }
        self.go.validate()
    }

    /// The server configuration these flags describe. The default
    /// connection cap follows the open-file limit at the time of the call.
    pub fn server_config(&self) -> ServerConfig {
        let defaults = ServerConfig::new(&self.cert.cert_dir);
        let mut listen = self.listen;
        if let Some(port) = self.go.webhook_config_server_port {
            listen.set_port(port);
        }
        ServerConfig {
            listen,
            health_listen: self.health_listen,
            metrics_listen: self.metrics_listen,
            cert_dir: self.cert.cert_dir.clone(),
            cert_hosts: self.cert.cert_hosts.clone(),
            request_timeout: self.request_timeout,
            shutdown_grace: self.shutdown_grace,
            max_connections: self
                .max_connections
                .map_or(defaults.max_connections, |n| n as usize),
            max_requests_in_flight: self.max_requests_in_flight as usize,
            mutation_memory: self.mutation_memory as usize * 1024 * 1024,
            mutation_memory_total: self.mutation_memory_total as usize * 1024 * 1024,
            client_auth: self
                .client_ca_file
                .as_ref()
                .map(|ca_file| ClientAuthConfig {
                    ca_file: ca_file.clone(),
                    allowed_names: self
                        .client_allowed_names
                        .iter()
                        .map(|n| n.trim().to_string())
                        .filter(|n| !n.is_empty())
                        .collect(),
                }),
            ..defaults
        }
    }
}

/// The mutator behind `POST /controlplane`: the engine over the profile and
/// the state source.
fn build_mutator(
    args: &ServeArgs,
    profile: Profile,
    images: &ImageVector,
    state: Arc<dyn StateSource>,
) -> anyhow::Result<Arc<dyn Mutator>> {
    let engine = args.engine.engine_with(profile, images);
    let unresolved = engine.unresolved_images();
    if !unresolved.is_empty() {
        anyhow::bail!(
            "the profile names images the image vector does not have: {} (add them with {} or pass --mcm-provider-image)",
            unresolved.join(", "),
            crate::profile::imagevector::OVERWRITE_ENV
        );
    }
    Ok(Arc::new(WebhookMutator::new(engine, state)))
}

/// The installation `serve` belongs to: the profile's provider in
/// `--webhook-namespace` (default: the client's namespace), without the
/// `--disable-webhooks`, reached as `--webhook-config-mode` says.
fn extension(
    args: &ServeArgs,
    profile: &Profile,
    client: &kube::Client,
) -> anyhow::Result<Extension> {
    let namespace = args
        .webhook_namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_string());
    Ok(Extension::new(&profile.provider, &namespace)?
        .with_disabled_webhooks(args.go.disabled_webhooks().map_err(anyhow::Error::msg)?)
        .with_webhook_client(args.go.webhook_client().map_err(anyhow::Error::msg)?))
}

/// The leader-only work the flags ask for; `None` without a Kubernetes API.
fn leader_work(
    args: &ServeArgs,
    profile: &Profile,
    images: &ImageVector,
    state: &Arc<dyn StateSource>,
    client: Option<kube::Client>,
    metrics: &Metrics,
) -> anyhow::Result<Option<LeaderWork>> {
    let disabled_controllers = args.go.disabled_controllers().map_err(anyhow::Error::msg)?;
    let wants = |name: ControllerName| {
        args.controllers.contains(&name)
            && !args.controllers.contains(&ControllerName::None)
            && !disabled_controllers.contains(&name.switch())
    };
    let wants_controller = wants(ControllerName::Controlplane);
    let Some(client) = client else {
        for (set, flag) in [
            (args.register_webhook, "--register-webhook"),
            (args.manage_certs, "--manage-certs"),
        ] {
            if set {
                anyhow::bail!(
                    "{flag} needs a Kubernetes API; it cannot be used with --objects-dir"
                );
            }
        }
        if wants_controller {
            tracing::info!(
                "no Kubernetes API (--objects-dir): the ControlPlane controller does not run"
            );
        }
        return Ok(None);
    };
    let provider = profile.provider.clone();
    let extension = extension(args, profile, &client)?;
    let controller = if wants_controller {
        // The components' images were checked against the profile's vector
        // when it loaded.
        let spec = profile.control_plane().cloned().with_context(|| {
            format!("the ControlPlane controller cannot use {}", profile.source)
        })?;
        Some(components::controller_context(
            client.clone(),
            state.clone(),
            components::ControllerSettings {
                provider: provider.clone(),
                spec,
                images: images.clone(),
                feature_gates: args.go.gates.settings(),
                ignore_operation_annotation: args.go.ignore_operation_annotation,
                concurrency: args.go.controlplane_max_concurrent_reconciles,
                metrics: Some(ControllerMetrics::register(&mut metrics.registry())),
            },
        ))
    } else {
        None
    };
    let health = match &controller {
        Some(ctx) if wants(ControllerName::Healthcheck) => Some(components::health_checks(
            client.clone(),
            state.clone(),
            ctx,
            args.healthcheck_sync_period,
            usize::from(args.go.healthcheck_max_concurrent_reconciles),
            Some(crate::controller::health::HealthMetrics::register(
                &mut metrics.registry(),
            )),
        )),
        _ => None,
    };
    let heartbeat =
        wants(ControllerName::Heartbeat).then(|| crate::controller::heartbeat::Heartbeat {
            client: client.clone(),
            namespace: args
                .heartbeat_namespace
                .clone()
                .unwrap_or_else(|| extension.namespace().to_owned()),
            holder: format!("provider-{provider}"),
            interval: Duration::from_secs(args.heartbeat_renew_interval_seconds),
            now: crate::controller::heartbeat::now_micro,
        });
    let work = LeaderWork {
        client,
        lease: args.go.leader_election.then(|| components::LeaseName {
            name: args
                .go
                .leader_election_id
                .clone()
                .unwrap_or_else(|| extension.leader_election_lease()),
            namespace: args
                .go
                .leader_election_namespace
                .clone()
                .unwrap_or_else(|| extension.namespace().to_owned()),
        }),
        extension,
        manage_certs: args.manage_certs,
        controller,
        health,
        heartbeat,
        register_webhook: args
            .register_webhook
            .then(|| args.cert.cert_dir.join(crate::tls::CA_CERT_FILE)),
        leader_status: Default::default(),
    };
    Ok((!work.is_empty()).then_some(work))
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    logging::init(&args.log)?;
    // Idle connections are bounded by deadlines and the connection cap, not
    // by running out of descriptors; the default cap is sized from this.
    match server::raise_open_file_limit() {
        Ok((before, after)) if before != after => {
            tracing::info!(
                before,
                after,
                "raised the open-file limit to its hard limit"
            );
        }
        Ok(_) => {}
        Err(error) => tracing::warn!(%error, "cannot raise the open-file limit"),
    }
    if let (Some(cap), Some(limit)) = (args.max_connections, server::open_file_limit()) {
        let usable = limit.saturating_sub(server::reserved_descriptors() as u64);
        if u64::from(cap) > usable {
            tracing::warn!(
                max_connections = cap,
                open_file_limit = limit,
                "--max-connections leaves fewer than {} descriptors for the rest of the process; accepts may fail before the cap is reached",
                server::reserved_descriptors()
            );
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(server::blocking_threads())
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(serve(args))
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let shutdown = shutdown_signal()
        .context("cannot install the signal handlers")?
        .shared();
    start_line(&args);
    let readiness = Readiness::new();
    let metrics = Metrics::new();
    let profile = args.provider.profile()?;
    log_feature_gates(&args, &profile.feature_gates);
    let images = super::provider::images(&profile)?;
    let limit = components::ClientLimit {
        qps: args.go.kube_api_qps,
        burst: args.go.kube_api_burst,
    };
    let choice = components::open_state(args.objects_dir.as_deref(), &readiness, limit).await?;
    if args.register_webhook && !args.manage_certs {
        // The registration reads `<cert-dir>/ca.crt` at once: generate the
        // development certificate (when the directory has none) before the
        // leader starts, not when the server binds.
        prepare_certificates(&args.server_config())?;
    }
    let cert_client = choice.client.clone().filter(|_| args.manage_certs);
    let cert_extension = match &cert_client {
        Some(client) => Some(extension(&args, &profile, client)?),
        None => None,
    };
    let leader = leader_work(
        &args,
        &profile,
        &images,
        &choice.state,
        choice.client,
        &metrics,
    )?
    .map(|work| {
        if work.lease.is_some() {
            // Never unready: every replica serves the webhook, leading or
            // not; the note says whether this one runs the leader work.
            let status = work.leader_status.clone();
            readiness.add_check("leader-election", Arc::new(|| true));
            readiness.add_note("leader-election", Arc::new(move || status.note()));
        }
        let (shutdown, liveness) = (shutdown.clone(), readiness.clone());
        tokio::spawn(async move {
            // A panic in the election is a failure like any other.
            let outcome = std::panic::AssertUnwindSafe(work.run(shutdown))
                .catch_unwind()
                .await;
            let reason = match outcome {
                Ok(Ok(())) => return,
                Ok(Err(err)) => format!("{err:#}"),
                Err(_) => "the leader election panicked".to_owned(),
            };
            liveness.fail_liveness("leader-election", reason);
        })
    });
    // Managed certificates: wait for the first copy (the leader, maybe this
    // replica, issues it), then keep copying rotations.
    if let (Some(client), Some(ext)) = (cert_client, cert_extension) {
        crate::deploy::certs::wait_for_cert_dir(
            &client,
            &ext,
            &args.cert.cert_dir,
            Duration::from_secs(1),
        )
        .await
        .context("cannot prepare the managed webhook certificate")?;
        let dir = args.cert.cert_dir.clone();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            crate::deploy::certs::keep_cert_dir(
                &client,
                &ext,
                &dir,
                crate::deploy::certs::CertTiming::default(),
                stop,
            )
            .await;
        });
    }
    let mutator = build_mutator(&args, profile, &images, choice.state.clone())?;
    server::run(args.server_config(), mutator, readiness, metrics, shutdown).await?;
    if let Some(leader) = leader {
        // The lease is released once the leader work has seen the shutdown.
        let _ = tokio::time::timeout(args.shutdown_grace, leader).await;
    }
    tracing::info!("stopped");
    Ok(())
}

/// The first line of `serve`: what it runs with. Unset options are left out
/// (tracing records no field for `None`), paths are written as paths.
fn start_line(args: &ServeArgs) {
    let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
    let (profile, objects_dir) = (path(&args.provider.profile), path(&args.objects_dir));
    tracing::info!(
        provider = args.provider.provider.as_deref(),
        profile = profile.as_deref(),
        objects_dir = objects_dir.as_deref(),
        state = if args.objects_dir.is_some() {
            "objects directory"
        } else {
            "Kubernetes API"
        },
        gardener_version = args.go.gardener_version.as_deref(),
        version = env!("CARGO_PKG_VERSION"),
        "starting scion serve"
    );
}

/// The extension feature gates at start: each gate the provider declares
/// with its value (`info`), each one set that it does not declare (`warn`:
/// no effect, as the Go charts pass gates of parts scion does not run).
fn log_feature_gates(args: &ServeArgs, declared: &[crate::profile::FeatureGate]) {
    let set = args.go.gates.settings();
    let gates = crate::profile::FeatureGates::resolve(declared, &set);
    for gate in declared {
        tracing::info!(
            gate = gate.name.as_str(),
            enabled = gates.enabled(&gate.name),
            set = set.contains_key(&gate.name),
            "extension feature gate"
        );
    }
    for (gate, on) in crate::profile::featuregates::undeclared(declared, &set) {
        tracing::warn!(
            gate,
            enabled = on,
            "feature gate has no effect: the provider declares no such extension feature gate (the Go extensions' other gates belong to the infrastructure, worker, backup and seed parts scion does not run)"
        );
    }
}

/// Load the serving certificate of `config`, generating a development CA and
/// certificate when the directory holds none (what the server does when it
/// binds; it then finds them).
fn prepare_certificates(config: &ServerConfig) -> anyhow::Result<()> {
    let initial =
        crate::tls::load_or_generate(&config.cert_dir, &config.cert_hosts).with_context(|| {
            format!(
                "cannot prepare the certificate in {}",
                config.cert_dir.display()
            )
        })?;
    if let Some(generated) = &initial.generated {
        tracing::info!(
            ca = %generated.ca_cert.display(),
            names = %generated.names.join(", "),
            reused_ca = generated.reused_ca,
            "generated a development server certificate; clients must trust the CA file"
        );
    }
    Ok(())
}

/// Completes on the first SIGTERM or SIGINT. Handlers are installed now, so
/// a signal during startup is not lost. A second signal during the drain
/// exits at once with code 130.
fn shutdown_signal() -> std::io::Result<impl Future<Output = ()> + Send> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        Ok(async move {
            let name = tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = int.recv() => "SIGINT",
            };
            tracing::info!(
                signal = name,
                "signal received; draining (send another to exit now)"
            );
            tokio::spawn(async move {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
                eprintln!("scion: second signal received; exiting without draining");
                std::process::exit(130);
            });
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
            tracing::info!(signal = "ctrl-c", "signal received");
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    fn parse(args: &[&str]) -> Result<ServeArgs, clap::Error> {
        let mut argv = vec!["scion", "serve"];
        argv.extend_from_slice(args);
        match crate::cli::Cli::try_parse_from(argv)?.command {
            crate::cli::Command::Serve(args) => Ok(args),
            other => panic!("parsed {other:?}"),
        }
    }

    #[test]
    fn defaults_match_the_documented_table() {
        let args = parse(&["--provider", "aws"]).unwrap();
        assert_eq!(args.listen, "0.0.0.0:10250".parse().unwrap());
        assert_eq!(args.health_listen, "0.0.0.0:8081".parse().unwrap());
        assert_eq!(args.metrics_listen, "0.0.0.0:8080".parse().unwrap());
        assert_eq!(args.cert.cert_dir, PathBuf::from("certs"));
        assert_eq!(args.request_timeout, Duration::from_secs(8));
        assert_eq!(args.shutdown_grace, Duration::from_secs(15));
        assert_eq!(args.log.log_format, logging::LogFormat::Json);
        assert_eq!(args.log.log_level, "info");
        assert_eq!(args.max_connections, None);
        assert_eq!(args.max_requests_in_flight, 64);
        assert_eq!(args.client_ca_file, None);
        assert!(args.validate().is_ok());
        let config = args.server_config();
        assert_eq!(
            config.max_connections,
            server::default_max_connections(server::open_file_limit())
        );
        assert_eq!(config.max_requests_in_flight, 64);
        assert_eq!(config.mutation_memory, server::DEFAULT_MUTATION_MEMORY);
        assert_eq!(
            config.mutation_memory_total,
            server::DEFAULT_MUTATION_MEMORY_TOTAL
        );
        assert_eq!(config.client_auth, None);
    }

    #[test]
    fn caps_and_client_authentication_flags() {
        let args = parse(&[
            "--provider",
            "aws",
            "--max-connections",
            "500",
            "--max-requests-in-flight",
            "8",
            "--client-ca-file",
            "/etc/scion/client-ca.crt",
            "--client-allowed-names",
            "kube-apiserver, scion.garden.svc",
        ])
        .unwrap();
        let config = args.server_config();
        assert_eq!(config.max_connections, 500);
        assert_eq!(config.max_requests_in_flight, 8);
        assert_eq!(
            config.client_auth,
            Some(ClientAuthConfig {
                ca_file: PathBuf::from("/etc/scion/client-ca.crt"),
                allowed_names: vec!["kube-apiserver".into(), "scion.garden.svc".into()],
            })
        );
        assert!(parse(&["--provider", "aws", "--max-connections", "0"]).is_err());
        assert!(parse(&["--provider", "aws", "--max-requests-in-flight", "0"]).is_err());
        // Names without a CA would silently check nothing.
        assert!(parse(&["--provider", "aws", "--client-allowed-names", "x"]).is_err());
    }

    #[test]
    fn provider_is_required_and_checked_unless_a_profile_is_given() {
        assert!(parse(&[]).is_err());
        let unknown = parse(&["--provider", "nope"]).unwrap();
        assert!(unknown.validate().unwrap_err().contains("\"nope\""));
        let custom = parse(&["--provider", "nope", "--profile", "p.yaml"]).unwrap();
        assert!(custom.validate().is_ok());
        let profile_only = parse(&["--profile", "p.yaml", "--objects-dir", "objs"]).unwrap();
        assert_eq!(profile_only.objects_dir, Some(PathBuf::from("objs")));
    }

    #[test]
    fn controllers_default_to_controlplane_and_can_be_turned_off() {
        let args = parse(&["--provider", "aws"]).unwrap();
        assert_eq!(
            args.controllers,
            [
                ControllerName::Controlplane,
                ControllerName::Healthcheck,
                ControllerName::Heartbeat
            ]
        );
        assert!(!args.register_webhook);
        assert!(!args.go.ignore_operation_annotation);
        assert_eq!(args.healthcheck_sync_period, Duration::from_secs(30));
        assert_eq!(args.heartbeat_renew_interval_seconds, 30);
        let zero = parse(&[
            "--provider",
            "aws",
            "--heartbeat-renew-interval-seconds",
            "0",
        ])
        .unwrap();
        assert_eq!(
            zero.validate().unwrap_err(),
            "--heartbeat-renew-interval-seconds must be greater than 0"
        );
        let off = parse(&["--provider", "aws", "--controllers", "none"]).unwrap();
        assert_eq!(off.controllers, [ControllerName::None]);
        assert!(parse(&["--provider", "aws", "--controllers", "worker"]).is_err());
    }

    #[test]
    fn hosts_repeat_and_addresses_accept_a_bare_port() {
        let args = parse(&[
            "--provider",
            "gcp",
            "--cert-host",
            "a",
            "--cert-host",
            "b",
            "--metrics-listen",
            ":9090",
            "--request-timeout",
            "500ms",
        ])
        .unwrap();
        assert_eq!(args.cert.cert_hosts, ["a", "b"]);
        assert_eq!(args.metrics_listen, "0.0.0.0:9090".parse().unwrap());
        assert_eq!(
            args.server_config().request_timeout,
            Duration::from_millis(500)
        );
        assert!(parse(&["--provider", "aws", "--listen", "localhost"]).is_err());
        assert!(parse(&["--provider", "aws", "--log-format", "xml"]).is_err());
    }
}
