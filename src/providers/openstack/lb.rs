//! OpenStack load-balancer classes: which floating network and subnets the CCM's
//! `[LoadBalancer]` section and its `[LoadBalancerClass "…"]` blocks use
//! (provider-openstack's values provider semantics, quirks included).

use serde::Deserialize;
use serde_json::Value;

use crate::providers::CodeError;

/// One `LoadBalancerClass` of a ControlPlaneConfig or a CloudProfile floating pool.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub(super) struct LbClass {
    pub name: String,
    #[serde(default)]
    pub purpose: Option<String>,
    #[serde(default, rename = "floatingNetworkID")]
    pub floating_network_id: Option<String>,
    #[serde(default, rename = "floatingSubnetID")]
    pub floating_subnet_id: Option<String>,
    #[serde(default, rename = "floatingSubnetName")]
    pub floating_subnet_name: Option<String>,
    #[serde(default, rename = "floatingSubnetTags")]
    pub floating_subnet_tags: Option<String>,
    #[serde(default, rename = "subnetID")]
    pub subnet_id: Option<String>,
}

/// The `[LoadBalancer]` targets and the class blocks.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct LbSettings {
    pub floating_network_id: String,
    pub floating_subnet_id: String,
    pub floating_subnet_name: String,
    pub floating_subnet_tags: String,
    pub subnet_id: String,
    pub classes: Vec<LbClass>,
}

fn set(target: &mut String, value: &Option<String>) {
    if let Some(v) = value.as_deref().filter(|v| !v.is_empty()) {
        *target = v.to_string();
    }
}

fn parse_classes(value: &Value, field: &str) -> Result<Vec<LbClass>, CodeError> {
    serde_json::from_value(value.clone()).map_err(|e| CodeError::ProviderConfig {
        controlplane: String::new(),
        field: field.to_string(),
        reason: e.to_string(),
    })
}

/// Compute the load-balancer settings.
/// `pools`: `cloudProfileConfig.constraints.floatingPools`; `pool_name`: the
/// infrastructure's floating pool name; `classes_override`:
/// `providerConfig.loadBalancerClasses` when set (even empty).
pub(super) fn settings(
    floating_pool_id: &str,
    pool_name: &str,
    region: &str,
    nodes_subnet_id: &str,
    pools: Option<&Value>,
    classes_override: Option<&Value>,
) -> Result<LbSettings, CodeError> {
    let from_profile = match find_floating_pool(pools, pool_name, region) {
        Some(pool) => match pool.get("loadBalancerClasses") {
            Some(v) if !v.is_null() => {
                parse_classes(v, "cloudProfile floatingPools[].loadBalancerClasses")?
            }
            _ => Vec::new(),
        },
        None => Vec::new(),
    };
    let mut classes = match classes_override {
        Some(v) if !v.is_null() => parse_classes(v, "loadBalancerClasses")?,
        _ => from_profile.clone(),
    };
    let mut out = LbSettings {
        floating_network_id: floating_pool_id.to_string(),
        subnet_id: nodes_subnet_id.to_string(),
        ..Default::default()
    };
    if let Some(private) = lookup(&classes, "private") {
        set(&mut out.subnet_id, &private.subnet_id);
    }
    if let Some(default) = lookup(&classes, "default") {
        set(&mut out.floating_network_id, &default.floating_network_id);
        set(&mut out.floating_subnet_id, &default.floating_subnet_id);
        set(&mut out.floating_subnet_name, &default.floating_subnet_name);
        set(&mut out.floating_subnet_tags, &default.floating_subnet_tags);
        set(&mut out.subnet_id, &default.subnet_id);
    }
    // The CloudProfile's vpn class is always offered, once.
    if let Some(vpn) = lookup(&from_profile, "vpn")
        && !classes.iter().any(|c| c.name == vpn.name)
    {
        classes.push(vpn.clone());
    }
    out.classes = classes
        .into_iter()
        .map(|mut class| {
            // A class that names its own floating network gets the shoot's pool
            // instead, as provider-openstack does.
            if class
                .floating_network_id
                .as_deref()
                .is_some_and(|v| !v.is_empty())
                && !floating_pool_id.is_empty()
            {
                class.floating_network_id = Some(floating_pool_id.to_string());
            }
            class
        })
        .collect();
    Ok(out)
}

/// By purpose first; then (not for `vpn`) by name; a missing `default` falls back
/// to the first class.
fn lookup<'a>(classes: &'a [LbClass], purpose: &str) -> Option<&'a LbClass> {
    if let Some(c) = classes
        .iter()
        .find(|c| c.purpose.as_deref() == Some(purpose))
    {
        return Some(c);
    }
    if purpose == "vpn" {
        return None;
    }
    if let Some(c) = classes.iter().find(|c| c.name == purpose) {
        return Some(c);
    }
    if purpose == "default" {
        classes.first()
    } else {
        None
    }
}

/// The best-scoring floating pool of the region whose name pattern matches;
/// non-constraining pools only when no other matches.
fn find_floating_pool<'a>(pools: Option<&'a Value>, name: &str, region: &str) -> Option<&'a Value> {
    let pools = pools?.as_array()?;
    let candidates = |non_constraining: bool| {
        let mut best: Option<(&Value, usize)> = None;
        for pool in pools {
            let nc = pool
                .get("nonConstraining")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if nc != non_constraining || pool.get("region").and_then(Value::as_str) != Some(region)
            {
                continue;
            }
            let pattern = pool.get("name").and_then(Value::as_str).unwrap_or_default();
            if let Some(score) = simple_match(pattern, name)
                && score > best.map_or(0, |b| b.1)
            {
                best = Some((pool, score));
            }
        }
        best.map(|b| b.0)
    };
    candidates(false).or_else(|| candidates(true))
}

/// `*` (score 0), exact (length), `prefix*` (prefix length), `*suffix` (suffix length).
fn simple_match(pattern: &str, text: &str) -> Option<usize> {
    if pattern == "*" {
        return Some(0);
    }
    if pattern == text {
        return Some(text.len());
    }
    if let Some(prefix) = pattern.strip_suffix('*')
        && text.starts_with(prefix)
    {
        return Some(prefix.len());
    }
    if let Some(suffix) = pattern.strip_prefix('*')
        && text.ends_with(suffix)
    {
        return Some(suffix.len());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pattern_scores() {
        assert_eq!(simple_match("*", "fip"), Some(0));
        assert_eq!(simple_match("fip-a", "fip-a"), Some(5));
        assert_eq!(simple_match("fip-*", "fip-a"), Some(4));
        assert_eq!(simple_match("*-a", "fip-a"), Some(2));
        assert_eq!(simple_match("x*", "fip-a"), None);
    }

    #[test]
    fn profile_classes_default_private_and_vpn() {
        let pools = json!([
            {"name": "fip-*", "region": "eu-de-1", "loadBalancerClasses": [
                {"name": "internet", "floatingSubnetID": "fs-1"},
                {"name": "intranet", "purpose": "private", "subnetID": "priv-1"},
                {"name": "vpn", "purpose": "vpn", "floatingNetworkID": "other"},
            ]},
            {"name": "fip-a", "region": "other-region", "loadBalancerClasses": [{"name": "x"}]},
        ]);
        let s = settings("fip-id", "fip-a", "eu-de-1", "nodes-1", Some(&pools), None)
            .expect("settings");
        assert_eq!(s.subnet_id, "priv-1");
        assert_eq!(s.floating_subnet_id, "fs-1");
        assert_eq!(s.floating_network_id, "fip-id");
        let names: Vec<&str> = s.classes.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["internet", "intranet", "vpn"]);
        assert_eq!(s.classes[2].floating_network_id.as_deref(), Some("fip-id"));

        let own = json!([{"name": "mine", "subnetID": "s-9"}]);
        let s = settings(
            "fip-id",
            "fip-a",
            "eu-de-1",
            "nodes-1",
            Some(&pools),
            Some(&own),
        )
        .expect("settings");
        let names: Vec<&str> = s.classes.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["mine", "vpn"]);
        assert_eq!(s.subnet_id, "s-9");
    }
}
