//! The health checks' only look into a shoot: the newest Event about one
//! object (`health.events` of a component), read through a shoot client built
//! as Gardener's healthcheck actuator builds it (`extensions/pkg/util`
//! `NewClientForShoot`): the kubeconfig under data key `kubeconfig` of the
//! Secret `gardener-internal` in the shoot namespace (the in-cluster address),
//! else of `gardener` (the external one); with `GARDENER_SHOOT_CLIENT=external`
//! only `gardener`. As upstream, a kubeconfig may authenticate with a token,
//! a client certificate, basic auth, or a token / certificate file; `exec`,
//! `auth-provider` and impersonation are refused (a Secret must not make the
//! extension run a command).
//!
//! Bounded: one deadline ([`DEADLINE`]) over reading the Secret, connecting
//! and listing; the list selects the object's Events on the server
//! (`involvedObject.kind`, `involvedObject.name` field selector) in pages of
//! [`PAGE`], at most [`MAX_PAGES`], keeping only the newest Event
//! ([`SeenEvent::newer`]), so memory is one page whatever the shoot holds. A
//! shoot with more Events about the object than that is reported, not guessed.
//!
//! No cache: every pass builds the client anew, as upstream's actuator does
//! per reconcile (a client cache would need a budget and to follow the
//! kubeconfig's rotation; a pass reads only shoots whose check applies, every
//! sync period). Errors are returned as text for the condition's message.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Secret};
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

use super::verdict::SeenEvent;
use crate::profile::component::HealthEvents;

/// The Secret holding the shoot's in-cluster kubeconfig (Gardener's
/// `SecretNameGardenerInternal`), tried first.
pub const INTERNAL_SECRET: &str = "gardener-internal";
/// The Secret holding the shoot's external kubeconfig (`SecretNameGardener`).
pub const EXTERNAL_SECRET: &str = "gardener";
/// The data key of the kubeconfig in both.
pub const KUBECONFIG_KEY: &str = "kubeconfig";
/// The whole read of one shoot: Secret, connection, every page.
pub const DEADLINE: Duration = Duration::from_secs(10);
/// Events per page.
pub const PAGE: u32 = 100;
/// Pages read at most (Kubernetes keeps Events one hour by default, and the
/// recorders' spam filter lets an object collect a few dozen in that time).
pub const MAX_PAGES: usize = 10;

/// The Secrets tried for the shoot kubeconfig, in order: upstream's choice,
/// with `external` (`GARDENER_SHOOT_CLIENT=external`) only the external one.
pub fn kubeconfig_secrets(external: bool) -> &'static [&'static str] {
    if external {
        &[EXTERNAL_SECRET]
    } else {
        &[INTERNAL_SECRET, EXTERNAL_SECRET]
    }
}

/// The newest Event about `spec`'s object in the shoot of `namespace` (the
/// seed's shoot namespace), `None` when there is none; the error says what
/// could not be read, in plain words.
pub async fn newest_event(
    seed: &kube::Client,
    namespace: &str,
    secrets: &[&str],
    spec: &HealthEvents,
) -> Result<Option<SeenEvent>, String> {
    let read = async {
        let shoot = client(seed, namespace, secrets).await?;
        list_newest(&shoot, spec).await
    };
    tokio::time::timeout(DEADLINE, read)
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "no answer within {}",
                crate::gardener::duration::text(DEADLINE)
            ))
        })
}

/// The shoot client from the first of `secrets` that exists in `namespace`.
pub async fn client(
    seed: &kube::Client,
    namespace: &str,
    secrets: &[&str],
) -> Result<kube::Client, String> {
    let api = Api::<Secret>::namespaced(seed.clone(), namespace);
    let mut found = None;
    for name in secrets {
        match api.get_opt(name).await {
            Ok(Some(secret)) => {
                found = Some((*name, secret));
                break;
            }
            Ok(None) => {}
            Err(e) => {
                return Err(format!(
                    "reading Secret {namespace}/{name}: {}",
                    crate::gardener::api_error::describe(&e)
                ));
            }
        }
    }
    let Some((name, secret)) = found else {
        let names: Vec<String> = secrets.iter().map(|s| format!("{s:?}")).collect();
        return Err(format!(
            "no shoot kubeconfig: Secret {} not found in namespace {namespace:?}",
            names.join(" nor ")
        ));
    };
    let bytes = secret
        .data
        .as_ref()
        .and_then(|d| d.get(KUBECONFIG_KEY))
        .map(|b| b.0.as_slice())
        .ok_or_else(|| format!("Secret {namespace}/{name} has no data key {KUBECONFIG_KEY:?}"))?;
    let config = config(bytes)
        .await
        .map_err(|e| format!("the kubeconfig of Secret {namespace}/{name}: {e}"))?;
    kube::Client::try_from(config)
        .map_err(|e| format!("the kubeconfig of Secret {namespace}/{name}: {e}"))
}

/// A client configuration from kubeconfig bytes, refusing what upstream
/// refuses (see the module doc), with the deadline as read timeout.
pub async fn config(bytes: &[u8]) -> Result<kube::Config, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())?;
    let kubeconfig = Kubeconfig::from_yaml(text).map_err(|e| e.to_string())?;
    refuse_unsafe(&kubeconfig)?;
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .map_err(|e| e.to_string())?;
    config.connect_timeout = Some(DEADLINE);
    config.read_timeout = Some(DEADLINE);
    config.write_timeout = Some(DEADLINE);
    Ok(config)
}

/// Gardener's allow-list (`ValidateConfigWithAllowList` with token file,
/// client key and client certificate files allowed): no `exec`, no
/// `auth-provider` with configuration, no impersonation.
fn refuse_unsafe(kubeconfig: &Kubeconfig) -> Result<(), String> {
    for named in &kubeconfig.auth_infos {
        let Some(user) = &named.auth_info else {
            continue;
        };
        let name = &named.name;
        if user.exec.is_some() {
            return Err(format!(
                "user {name:?}: exec configurations are not supported"
            ));
        }
        if user
            .auth_provider
            .as_ref()
            .is_some_and(|p| !p.config.is_empty())
        {
            return Err(format!(
                "user {name:?}: auth provider configurations are not supported"
            ));
        }
        if user.impersonate.is_some() || user.impersonate_groups.is_some() {
            return Err(format!("user {name:?}: impersonation is not supported"));
        }
    }
    Ok(())
}

/// The newest Event about `spec`'s object, page by page.
async fn list_newest(
    shoot: &kube::Client,
    spec: &HealthEvents,
) -> Result<Option<SeenEvent>, String> {
    let api = Api::<Event>::namespaced(shoot.clone(), &spec.namespace);
    let selector = format!(
        "involvedObject.kind={},involvedObject.name={}",
        spec.kind, spec.name
    );
    let mut params = ListParams::default().fields(&selector).limit(PAGE);
    let mut newest = None;
    for _ in 0..MAX_PAGES {
        let page = api.list(&params).await.map_err(|e| {
            format!(
                "listing the Events of {} {}/{} in the shoot: {}",
                spec.kind,
                spec.namespace,
                spec.name,
                crate::gardener::api_error::describe(&e)
            )
        })?;
        newest = page.items.iter().fold(newest, SeenEvent::newer);
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(newest),
        }
    }
    Err(format!(
        "more than {} Events of {} {}/{} in the shoot; not read further",
        PAGE as usize * MAX_PAGES,
        spec.kind,
        spec.namespace,
        spec.name
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kubeconfig(user: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: shoot\n  cluster: {{server: 'https://kube-apiserver'}}\nusers:\n- name: gardener\n  user: {user}\ncontexts:\n- name: shoot\n  context: {{cluster: shoot, user: gardener}}\ncurrent-context: shoot\n"
        )
    }

    #[tokio::test]
    async fn a_token_kubeconfig_gives_a_config_with_the_deadline() {
        let config = config(kubeconfig("{token: abc}").as_bytes())
            .await
            .expect("accepted");
        assert_eq!(config.cluster_url.to_string(), "https://kube-apiserver/");
        assert_eq!(
            (config.connect_timeout, config.read_timeout),
            (Some(DEADLINE), Some(DEADLINE))
        );
    }

    #[tokio::test]
    async fn what_gardener_refuses_is_refused_before_anything_runs() {
        for (user, error) in [
            (
                "{exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/touch, args: [/tmp/scion-exec-ran]}}",
                "user \"gardener\": exec configurations are not supported",
            ),
            (
                "{auth-provider: {name: oidc, config: {client-id: x}}}",
                "user \"gardener\": auth provider configurations are not supported",
            ),
            (
                "{token: abc, as: admin}",
                "user \"gardener\": impersonation is not supported",
            ),
        ] {
            let got = config(kubeconfig(user).as_bytes()).await.map(|_| ());
            assert_eq!(got, Err(error.to_string()), "{user}");
        }
        assert!(!std::path::Path::new("/tmp/scion-exec-ran").exists());
        assert_eq!(
            config(&[0xff, 0xfe]).await.map(|_| ()),
            Err("not UTF-8 text".to_string())
        );
        assert!(config(b"clusters: [").await.is_err());
    }

    #[test]
    fn the_internal_kubeconfig_first_unless_external_is_asked_for() {
        assert_eq!(kubeconfig_secrets(false), ["gardener-internal", "gardener"]);
        assert_eq!(kubeconfig_secrets(true), ["gardener"]);
    }
}
