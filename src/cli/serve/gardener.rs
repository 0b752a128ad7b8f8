//! The flags of Gardener's Go extensions that `scion serve` accepts under
//! their Go names (reference §3.6), so a chart or an operator's habits carry
//! over. Where scion has its own flag the Go name is an alias on it (in
//! `mod.rs`: `--metrics-bind-address`, `--health-bind-address`,
//! `--webhook-config-namespace`); the flags here have no scion twin.
//!
//! List flags follow pflag's string slices: comma-separated, an empty value
//! is an empty list, and the chart's literal `"*"` (quotes included) means
//! every webhook.

use clap::Args;

use crate::deploy::WebhookClient;
use crate::profile::WEBHOOKS;

/// Controllers `--disable-controllers` knows (Go switch names scion has).
pub const CONTROLLER_SWITCHES: &[&str] = &["controlplane", "healthcheck", "heartbeat"];

/// The Go extensions' flags.
#[derive(Debug, Clone, Args)]
pub struct GoExtensionFlags {
    /// Port of the HTTPS webhook listener (sets the port of --listen).
    #[arg(long, env = "SCION_WEBHOOK_CONFIG_SERVER_PORT", value_name = "PORT")]
    pub webhook_config_server_port: Option<u16>,
    /// Address of the HTTPS webhook listener (sets the IP of --listen).
    #[arg(long, env = "SCION_WEBHOOK_CONFIG_SERVER_HOST", value_name = "IP")]
    pub webhook_config_server_host: Option<std::net::IpAddr>,
    /// The Service port in the webhook configuration. scion's Service
    /// listens on 443, so only 443 (or Go's 0: "the server port's") is accepted.
    #[arg(long, env = "SCION_WEBHOOK_CONFIG_SERVICE_PORT", value_name = "PORT", value_parser = parse_service_port)]
    pub webhook_config_service_port: Option<u16>,
    /// The Gardener version gardenlet runs (`gardener.version`); logged at start.
    #[arg(long, env = "SCION_GARDENER_VERSION", value_name = "VERSION")]
    pub gardener_version: Option<String>,
    /// ControlPlanes whose health condition is written at the same time.
    #[arg(long, env = "SCION_HEALTHCHECK_MAX_CONCURRENT_RECONCILES", value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..))]
    pub healthcheck_max_concurrent_reconciles: u16,
    /// How the API server reaches the webhook server: `service` (the
    /// extension's Service) or `url` (`https://<--webhook-config-url>/<path>`,
    /// for a server outside the seed's pod network).
    #[arg(long, env = "SCION_WEBHOOK_CONFIG_MODE", value_name = "MODE", default_value = "service", value_parser = ["service", "url"])]
    pub webhook_config_mode: String,
    /// host[:port] the webhook configuration points at in `url` mode; the
    /// managed serving certificate names its host.
    #[arg(long, env = "SCION_WEBHOOK_CONFIG_URL", value_name = "HOST[:PORT]")]
    pub webhook_config_url: Option<String>,
    /// Elect a leader through a Lease before running the controller and the
    /// webhook registration; `false` runs them at once (one replica only).
    #[arg(long, env = "SCION_LEADER_ELECTION", value_name = "BOOL", default_value_t = true, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub leader_election: bool,
    /// Name of the leader-election Lease [default: provider-<p>-leader-election].
    #[arg(long, env = "SCION_LEADER_ELECTION_ID", value_name = "NAME")]
    pub leader_election_id: Option<String>,
    /// Namespace of the leader-election Lease [default: the extension namespace].
    #[arg(long, env = "LEADER_ELECTION_NAMESPACE", value_name = "NS")]
    pub leader_election_namespace: Option<String>,
    /// ControlPlanes reconciled at the same time.
    #[arg(long, env = "SCION_CONTROLPLANE_MAX_CONCURRENT_RECONCILES", value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..))]
    pub controlplane_max_concurrent_reconciles: u16,
    /// Render new desired state on every change of a ControlPlane or its
    /// Cluster, not only when gardenlet requests it (`=true`/`=false` as the
    /// Go extensions take it; bare means true).
    #[arg(long, env = "SCION_IGNORE_OPERATION_ANNOTATION", value_name = "BOOL", default_value_t = false, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub ignore_operation_annotation: bool,
    /// Controllers not to run (Go switch names: controlplane, healthcheck, heartbeat).
    #[arg(long, env = "SCION_DISABLE_CONTROLLERS", value_name = "LIST", value_delimiter = ',', num_args = 0..=1, default_value = "")]
    pub disable_controllers: Vec<String>,
    /// Webhooks not to register (cloudprovider, controlplane, seedprovider; `*` for all).
    #[arg(long, env = "SCION_DISABLE_WEBHOOKS", value_name = "LIST", value_delimiter = ',', num_args = 0..=1, default_value = "")]
    pub disable_webhooks: Vec<String>,
    #[command(flatten)]
    pub gates: crate::cli::gates::FeatureGateArgs,
    /// Kubernetes API requests per second, sustained.
    #[arg(long, env = "SCION_KUBE_API_QPS", value_name = "QPS", default_value_t = 100.0, value_parser = parse_qps)]
    pub kube_api_qps: f64,
    /// Kubernetes API requests allowed in a burst above the QPS.
    #[arg(long, env = "SCION_KUBE_API_BURST", value_name = "N", default_value_t = 130, value_parser = clap::value_parser!(u32).range(1..))]
    pub kube_api_burst: u32,
}

fn parse_service_port(value: &str) -> Result<u16, String> {
    match value.parse::<u16>() {
        Ok(port @ (0 | 443)) => Ok(port),
        _ => Err(format!(
            "{value:?}: scion's Service serves the webhook on port 443, so the webhook configuration names 443 (or 0)"
        )),
    }
}

fn parse_qps(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(q) if q.is_finite() && q > 0.0 => Ok(q),
        _ => Err(format!("{value:?} is not a positive number")),
    }
}

/// pflag's CSV reading of one list item: surrounding whitespace and one pair
/// of double quotes dropped.
fn unquote(item: &str) -> &str {
    let item = item.trim();
    item.strip_prefix('"')
        .and_then(|i| i.strip_suffix('"'))
        .unwrap_or(item)
}

impl GoExtensionFlags {
    /// Names of the webhooks `--disable-webhooks` turns off, checked against
    /// the table; `*` is every webhook.
    pub fn disabled_webhooks(&self) -> Result<Vec<&'static str>, String> {
        let mut out = Vec::new();
        for item in self.disable_webhooks.iter().map(|i| unquote(i)) {
            if item.is_empty() {
                continue;
            }
            if item == "*" {
                return Ok(WEBHOOKS.iter().map(|w| w.name).collect());
            }
            match WEBHOOKS.iter().find(|w| w.name == item) {
                Some(w) if !out.contains(&w.name) => out.push(w.name),
                Some(_) => {}
                None => {
                    return Err(format!(
                        "cannot disable unknown webhook {item:?} (known: {}, *)",
                        WEBHOOKS
                            .iter()
                            .map(|w| w.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
            }
        }
        Ok(out)
    }

    /// Names of the controllers `--disable-controllers` turns off.
    pub fn disabled_controllers(&self) -> Result<Vec<&'static str>, String> {
        let mut out = Vec::new();
        for item in self.disable_controllers.iter().map(|i| unquote(i)) {
            if item.is_empty() {
                continue;
            }
            match CONTROLLER_SWITCHES.iter().find(|c| **c == item) {
                Some(c) => out.push(*c),
                None => return Err(format!("cannot disable unknown controller {item:?}")),
            }
        }
        Ok(out)
    }

    /// How the webhook configuration reaches the server
    /// (`--webhook-config-mode`, `--webhook-config-url`).
    pub fn webhook_client(&self) -> Result<WebhookClient, String> {
        match (self.webhook_config_mode.as_str(), &self.webhook_config_url) {
            ("url", Some(url)) => {
                WebhookClient::url(url).map_err(|e| format!("--webhook-config-url: {e}"))
            }
            ("url", None) => {
                Err("--webhook-config-mode=url needs --webhook-config-url host[:port]".into())
            }
            (_, Some(_)) => {
                Err("--webhook-config-url is used only with --webhook-config-mode=url".into())
            }
            _ => Ok(WebhookClient::Service),
        }
    }

    /// Checks clap cannot express.
    pub fn validate(&self) -> Result<(), String> {
        self.webhook_client()?;
        self.disabled_webhooks()?;
        self.disabled_controllers()?;
        if self.leader_election_id.as_deref() == Some("") {
            return Err("--leader-election-id must not be empty".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        flags: GoExtensionFlags,
    }

    fn parse(args: &[&str]) -> Result<GoExtensionFlags, clap::Error> {
        let mut argv = vec!["x"];
        argv.extend_from_slice(args);
        Cli::try_parse_from(argv).map(|c| c.flags)
    }

    #[test]
    fn go_defaults_and_the_charts_literal_forms() {
        let d = parse(&[]).unwrap();
        assert!(d.leader_election);
        assert_eq!(d.controlplane_max_concurrent_reconciles, 5);
        assert_eq!((d.kube_api_qps, d.kube_api_burst), (100.0, 130));
        assert_eq!(d.disabled_webhooks().unwrap(), Vec::<&str>::new());
        let f = parse(&[
            "--disable-webhooks=\"*\"",
            "--disable-controllers=",
            "--leader-election=false",
            "--ignore-operation-annotation=false",
        ])
        .unwrap();
        assert_eq!(f.disabled_webhooks().unwrap().len(), WEBHOOKS.len());
        assert!(f.disabled_controllers().unwrap().is_empty());
        assert!(!f.leader_election);
        assert!(f.validate().is_ok());
        let some = parse(&["--disable-webhooks=seedprovider,cloudprovider"]).unwrap();
        assert_eq!(
            some.disabled_webhooks().unwrap(),
            ["seedprovider", "cloudprovider"]
        );
    }

    #[test]
    fn unknown_names_and_unsupported_values_are_named() {
        let w = parse(&["--disable-webhooks=shoot-service"]).unwrap();
        assert!(w.validate().unwrap_err().contains("\"shoot-service\""));
        let c = parse(&["--disable-controllers=worker"]).unwrap();
        assert_eq!(
            c.validate().unwrap_err(),
            "cannot disable unknown controller \"worker\""
        );
        let i = parse(&["--ignore-operation-annotation"]).unwrap();
        assert!(i.ignore_operation_annotation && i.validate().is_ok());
        let f = parse(&["--ignore-operation-annotation=false"]).unwrap();
        assert!(!f.ignore_operation_annotation);
        assert!(parse(&["--webhook-config-service-port=443"]).is_ok());
        let gates = parse(&[
            "--feature-gates=MTUCustomizer=true,B=false,",
            "--feature-gates=B=true",
        ])
        .unwrap();
        assert_eq!(
            gates.gates.settings(),
            [("MTUCustomizer".to_owned(), true), ("B".to_owned(), true)].into()
        );
        assert!(parse(&["--feature-gates=MTUCustomizer"]).is_err());
        assert!(parse(&["--feature-gates=A=yes"]).is_err());
        let port = parse(&["--webhook-config-service-port=8443"])
            .unwrap_err()
            .to_string();
        assert!(port.contains("port 443"), "{port}");
        assert_eq!(
            parse(&["--healthcheck-max-concurrent-reconciles=7"])
                .unwrap()
                .healthcheck_max_concurrent_reconciles,
            7
        );
        assert!(parse(&["--webhook-config-mode=url-service"]).is_err());
        let no_url = parse(&["--webhook-config-mode=url"]).unwrap();
        assert!(
            no_url
                .validate()
                .unwrap_err()
                .contains("needs --webhook-config-url")
        );
        let stray = parse(&["--webhook-config-url=127.0.0.1:9443"]).unwrap();
        assert!(
            stray
                .validate()
                .unwrap_err()
                .contains("only with --webhook-config-mode=url")
        );
        let bad = parse(&[
            "--webhook-config-mode=url",
            "--webhook-config-url=https://x/y",
        ])
        .unwrap();
        assert!(
            bad.validate()
                .unwrap_err()
                .starts_with("--webhook-config-url: invalid webhook URL")
        );
        let url = parse(&[
            "--webhook-config-mode=url",
            "--webhook-config-url=127.0.0.1:9443",
        ])
        .unwrap();
        assert_eq!(
            url.webhook_client().unwrap(),
            WebhookClient::Url("127.0.0.1:9443".into())
        );
        assert_eq!(
            parse(&[]).unwrap().webhook_client().unwrap(),
            WebhookClient::Service
        );
        assert!(parse(&["--kube-api-qps=0"]).is_err());
        assert!(parse(&["--controlplane-max-concurrent-reconciles=0"]).is_err());
    }
}
