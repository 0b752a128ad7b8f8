//! The seedprovider webhook: each provider's `EnsureETCD` (reference §1.8)
//! over an Etcd's `spec`: storage class and capacity of the main and events
//! Etcds from the extension's configuration, GCP's backup endpoint override.

use serde_json::{Map, Value};

use crate::gocompat::kubelet::canonical_quantity;
use crate::profile::seed::{EtcdStorage, UnknownEtcd};

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

/// Where a storage value of an Etcd came from (`scion mutate --explain`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `--etcd-storage-class` / `--etcd-storage-capacity`.
    Flag,
    /// The profile's chart default (the Go extension's chart value), the flag not given.
    ChartDefault,
    /// The provider's fallback: the flag set empty, or the events Etcd.
    Fallback,
    /// The stored Etcd's value, kept so an existing volume is never resized.
    Kept,
}

impl Source {
    /// For people, `what` being `class` or `capacity`.
    pub fn describe(self, what: &str) -> String {
        let flag = format!("--etcd-storage-{what}");
        match self {
            Source::Flag => format!("from {flag}"),
            Source::ChartDefault => format!(
                "the profile's chart default (the Go extension's etcd.storage value); {flag} overrides it"
            ),
            Source::Fallback => format!(
                "the provider's fallback ({flag} set empty, or the events Etcd, which the extension's configuration does not reach)"
            ),
            Source::Kept => {
                "kept from the stored Etcd, so an existing volume is never resized".to_owned()
            }
        }
    }
}

/// The storage class and capacity of an Etcd, each with its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageChoice {
    pub class: (String, Source),
    pub capacity: (String, Source),
}

/// The storage of the main (`main`) or events Etcd: the flags, else the
/// profile's chart defaults; an empty flag or the events Etcd takes the
/// provider's fallback; where the provider keeps the stored main Etcd's
/// values (AWS), those win.
pub fn choose(
    storage: &EtcdStorage,
    main: bool,
    config: &EtcdConfig,
    old: Option<&Value>,
) -> StorageChoice {
    let sourced = |flag: &Option<String>, default: &str| match flag.as_deref() {
        None => Some((default.to_string(), Source::ChartDefault)),
        Some("") => None,
        Some(v) => Some((v.to_string(), Source::Flag)),
    };
    let class = sourced(&config.storage_class, &storage.chart_defaults.class_name);
    let capacity = sourced(&config.storage_capacity, &storage.chart_defaults.capacity);
    let fallback = |v: &String| (v.clone(), Source::Fallback);
    let mut choice = if main {
        StorageChoice {
            class: class
                .clone()
                .unwrap_or_else(|| fallback(&storage.fallback.class_name)),
            capacity: capacity
                .clone()
                .unwrap_or_else(|| fallback(&storage.fallback.capacity)),
        }
    } else {
        StorageChoice {
            class: fallback(&storage.fallback.class_name),
            capacity: fallback(&storage.fallback.capacity),
        }
    };
    if main && storage.keep_old_main && (class.is_some() || capacity.is_some()) {
        // What Go's decoded old object has: a set pointer (an empty class
        // included), a capacity written as a number or a string.
        let stored = |key: &str| {
            old.and_then(|o| o.pointer(&format!("/spec/{key}")))
                .and_then(|v| match v {
                    Value::String(s) => Some(s.clone()),
                    Value::Number(n) if key == "storageCapacity" => Some(n.to_string()),
                    _ => None,
                })
                .map(|v| (v, Source::Kept))
        };
        if let Some(kept) = stored("storageClass") {
            choice.class = kept;
        }
        if let Some(kept) = stored("storageCapacity") {
            choice.capacity = kept;
        }
    }
    choice
}

/// `storageClass` is a string (`*string`) and `storageCapacity` a
/// `resource.Quantity`, which Go reads from a string or a number (issue 27:
/// an integer capacity was refused in the new object and ignored in the
/// old one).
fn check_storage(spec: &Map<String, Value>, at: &str) -> Result<(), String> {
    if !matches!(
        spec.get("storageClass"),
        None | Some(Value::Null | Value::String(_))
    ) {
        return Err(format!("field {at}.storageClass must be a string"));
    }
    let text = match spec.get("storageCapacity") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(_) => {
            return Err(format!(
                "field {at}.storageCapacity must be a quantity (a string or a number)"
            ));
        }
    };
    canonical_quantity(&text)
        .map(drop)
        .map_err(|e| format!("field {at}.storageCapacity: {e}"))
}

/// Whether the Etcd named `name` is a main (`Some(true)`) or events
/// (`Some(false)`) Etcd the ensurer handles.
pub fn is_main(name: &str) -> Option<bool> {
    match name {
        "etcd-main" | "virtual-garden-etcd-main" => Some(true),
        "etcd-events" | "virtual-garden-etcd-events" => Some(false),
        _ => None,
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
    let Some(main) = is_main(name) else {
        return Ok(None);
    };
    if name.starts_with("virtual-garden-") && storage.unknown_names == UnknownEtcd::Deny {
        return Err(format!("unknown ETCD name {name:?}"));
    }
    // Both objects must decode as Go's Etcd: the old one is decoded too.
    check_storage(&spec, "spec")?;
    if let Some(old) = ctx.old.and_then(|o| o.get("spec")) {
        match old {
            Value::Object(old) => check_storage(old, "oldObject.spec")?,
            Value::Null => {}
            _ => return Err("field oldObject.spec must be a map".into()),
        }
    }
    let choice = choose(storage, main, ctx.config, ctx.old);
    let (new_class, new_capacity) = (choice.class.0, choice.capacity.0);
    // Go writes a resource.Quantity in its canonical form.
    let new_capacity = canonical_quantity(&new_capacity).unwrap_or(new_capacity);
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
    use crate::profile::seed::Storage;
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

    /// Issue 27, item 6: a capacity written as a number is a quantity, in
    /// the stored object (kept, canonical) and in the new one (replaced).
    #[test]
    fn numeric_capacities_are_quantities_as_go_reads_them() {
        let aws = rules(true, UnknownEtcd::Same, false);
        let old = json!({"spec": {"storageClass": "gp3", "storageCapacity": 53687091200u64}});
        let main = run(
            &aws,
            "etcd-main",
            json!({"spec": {}}),
            EtcdConfig::default(),
            Some(old),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            main,
            json!({"storageClass": "gp3", "storageCapacity": "53687091200"})
        );
        let azure = rules(false, UnknownEtcd::Same, false);
        let new = json!({"spec": {"storageCapacity": 53687091200u64}});
        let main = run(&azure, "etcd-main", new, EtcdConfig::default(), None)
            .unwrap()
            .unwrap();
        assert_eq!(main["storageCapacity"], "25Gi");
        // Kept values come out canonical; an empty stored class is kept.
        let old = json!({"spec": {"storageClass": "", "storageCapacity": "51200Mi"}});
        let main = run(
            &aws,
            "etcd-main",
            json!({"spec": {}}),
            EtcdConfig::default(),
            Some(old),
        )
        .unwrap()
        .unwrap();
        assert_eq!(main, json!({"storageClass": "", "storageCapacity": "50Gi"}));
        // What Go cannot decode is refused, in either object.
        for (new, old) in [
            (json!({"spec": {"storageCapacity": "lots"}}), None),
            (
                json!({"spec": {}}),
                Some(json!({"spec": {"storageCapacity": true}})),
            ),
            (
                json!({"spec": {}}),
                Some(json!({"spec": {"storageClass": 7}})),
            ),
        ] {
            let err = run(&aws, "etcd-main", new, EtcdConfig::default(), old).unwrap_err();
            assert!(err.starts_with("field "), "{err}");
        }
    }
}
