//! The seedprovider webhook: each provider's `EnsureETCD` (reference §1.8)
//! over an Etcd's `spec`: storage class and capacity of the main and events
//! Etcds from the extension's configuration, GCP's backup endpoint override.

use serde_json::{Map, Value};

use crate::profile::seed::{EtcdStorage, Storage, UnknownEtcd};

/// The extension's `etcd.storage` configuration: `--etcd-storage-class`,
/// `--etcd-storage-capacity`. `None` takes the profile's chart default; an
/// empty value means "not configured" (the ensurer's fallback applies).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EtcdConfig {
    pub storage_class: Option<String>,
    pub storage_capacity: Option<String>,
}

/// What the Etcd ensurer needs besides the object.
pub struct EtcdContext<'a> {
    pub config: &'a EtcdConfig,
    /// The Etcd as stored before this write (UPDATE), for AWS.
    pub old: Option<&'a Value>,
    /// The BackupBucket's `providerConfig`, when it was read.
    pub backup_bucket: Option<&'a Value>,
}

/// The BackupBucket an Etcd's backup names, if the rule reads it.
pub fn backup_bucket_name<'v>(storage: &EtcdStorage, etcd: &'v Value) -> Option<&'v str> {
    if !storage.backup_endpoint_override {
        return None;
    }
    etcd.pointer("/spec/backup/store/container")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
}

fn configured(value: &Option<String>, default: &str) -> Option<String> {
    match value.as_deref() {
        None => Some(default.to_string()),
        Some("") => None,
        Some(v) => Some(v.to_string()),
    }
}

/// The new `spec` of the Etcd named `name` (`None`: unchanged).
pub fn ensure(
    storage: &EtcdStorage,
    name: &str,
    etcd: &Value,
    ctx: &EtcdContext<'_>,
) -> Result<Option<Map<String, Value>>, String> {
    let spec = match etcd.get("spec") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(_) => return Err("field spec must be a map".into()),
    };
    let main = match name {
        "etcd-main" => true,
        "etcd-events" => false,
        "virtual-garden-etcd-main" | "virtual-garden-etcd-events"
            if storage.unknown_names == UnknownEtcd::Deny =>
        {
            return Err(format!("unknown ETCD name {name:?}"));
        }
        "virtual-garden-etcd-main" => true,
        "virtual-garden-etcd-events" => false,
        _ => return Ok(None),
    };
    let class = configured(
        &ctx.config.storage_class,
        &storage.chart_defaults.class_name,
    );
    let capacity = configured(
        &ctx.config.storage_capacity,
        &storage.chart_defaults.capacity,
    );
    let Storage {
        class_name: fallback_class,
        capacity: fallback_capacity,
    } = &storage.fallback;
    let (mut new_class, mut new_capacity) = if main {
        (
            class.clone().unwrap_or_else(|| fallback_class.clone()),
            capacity
                .clone()
                .unwrap_or_else(|| fallback_capacity.clone()),
        )
    } else {
        (fallback_class.clone(), fallback_capacity.clone())
    };
    if main && storage.keep_old_main && (class.is_some() || capacity.is_some()) {
        let old = |key: &str| {
            ctx.old
                .and_then(|o| o.pointer(&format!("/spec/{key}")))
                .and_then(Value::as_str)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        if let Some(old_class) = old("storageClass") {
            new_class = old_class;
        }
        if let Some(old_capacity) = old("storageCapacity") {
            new_capacity = old_capacity;
        }
    }
    for field in ["storageClass", "storageCapacity"] {
        if !matches!(spec.get(field), None | Some(Value::Null | Value::String(_))) {
            return Err(format!("field spec.{field} must be a string"));
        }
    }
    let mut out = spec.clone();
    out.insert("storageClass".into(), Value::String(new_class));
    out.insert("storageCapacity".into(), Value::String(new_capacity));
    if let Some(container) = backup_bucket_name(storage, etcd) {
        let bucket = ctx
            .backup_bucket
            .ok_or_else(|| format!("could not get BackupBucket {container:?}: not found"))?;
        if let Some(endpoint) = bucket.pointer("/store/endpointOverride") {
            let store = out
                .get_mut("backup")
                .and_then(Value::as_object_mut)
                .and_then(|b| b.get_mut("store"))
                .and_then(Value::as_object_mut)
                .ok_or("field spec.backup.store must be a map")?;
            store.insert("endpointOverride".into(), endpoint.clone());
        }
    }
    Ok((out != spec).then_some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(keep_old: bool, unknown: UnknownEtcd, backup: bool) -> EtcdStorage {
        EtcdStorage {
            chart_defaults: Storage {
                class_name: "gardener.cloud-fast".into(),
                capacity: "25Gi".into(),
            },
            fallback: Storage {
                class_name: String::new(),
                capacity: "10Gi".into(),
            },
            keep_old_main: keep_old,
            unknown_names: unknown,
            backup_endpoint_override: backup,
        }
    }

    fn run(
        r: &EtcdStorage,
        name: &str,
        etcd: Value,
        config: EtcdConfig,
        old: Option<Value>,
    ) -> Result<Option<Value>, String> {
        let ctx = EtcdContext {
            config: &config,
            old: old.as_ref(),
            backup_bucket: Some(&json!({"store": {"endpointOverride": "https://s3"}})),
        };
        ensure(r, name, &etcd, &ctx).map(|o| o.map(Value::Object))
    }

    #[test]
    fn main_gets_the_configuration_events_the_fallback() {
        let r = rules(false, UnknownEtcd::Same, false);
        let main = run(
            &r,
            "etcd-main",
            json!({"spec": {"replicas": 3}}),
            EtcdConfig::default(),
            None,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            main,
            json!({"replicas": 3, "storageClass": "gardener.cloud-fast", "storageCapacity": "25Gi"})
        );
        let events = run(
            &r,
            "etcd-events",
            json!({"spec": {}}),
            EtcdConfig::default(),
            None,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            events,
            json!({"storageClass": "", "storageCapacity": "10Gi"})
        );
        let unset = EtcdConfig {
            storage_class: Some(String::new()),
            storage_capacity: Some("80Gi".into()),
        };
        let main = run(&r, "etcd-main", json!({"spec": {}}), unset, None)
            .unwrap()
            .unwrap();
        assert_eq!(main, json!({"storageClass": "", "storageCapacity": "80Gi"}));
        assert_eq!(
            run(
                &r,
                "etcd-other",
                json!({"spec": {}}),
                EtcdConfig::default(),
                None
            )
            .unwrap(),
            None
        );
        // Already right: no change.
        assert_eq!(
            run(
                &r,
                "etcd-events",
                json!({"spec": {"storageClass": "", "storageCapacity": "10Gi"}}),
                EtcdConfig::default(),
                None
            )
            .unwrap(),
            None
        );
    }

    #[test]
    fn aws_keeps_the_old_volume_openstack_denies_others_gcp_copies_the_endpoint() {
        let aws = rules(true, UnknownEtcd::Same, false);
        let old = json!({"spec": {"storageClass": "gp2", "storageCapacity": "80Gi"}});
        let main = run(
            &aws,
            "etcd-main",
            json!({"spec": {"storageClass": null}}),
            EtcdConfig::default(),
            Some(old),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            main,
            json!({"storageClass": "gp2", "storageCapacity": "80Gi"})
        );
        let openstack = rules(false, UnknownEtcd::Deny, false);
        assert_eq!(
            run(
                &openstack,
                "virtual-garden-etcd-main",
                json!({}),
                EtcdConfig::default(),
                None
            )
            .unwrap_err(),
            "unknown ETCD name \"virtual-garden-etcd-main\""
        );
        let gcp = rules(false, UnknownEtcd::Same, true);
        let etcd =
            json!({"spec": {"backup": {"store": {"container": "bucket-1", "provider": "GCS"}}}});
        let out = run(&gcp, "etcd-main", etcd, EtcdConfig::default(), None)
            .unwrap()
            .unwrap();
        assert_eq!(out["backup"]["store"]["endpointOverride"], "https://s3");
        assert!(
            run(
                &gcp,
                "etcd-main",
                json!({"spec": {"storageClass": 1}}),
                EtcdConfig::default(),
                None
            )
            .unwrap_err()
            .contains("spec.storageClass")
        );
    }
}
