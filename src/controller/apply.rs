//! Applying and deleting the desired objects: server-side apply only where the
//! live object differs, ordered deletion with bounded waits.

use std::time::Duration;

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams};
use serde_json::Value;

use super::Error;
use crate::ccm::{DESIRED_HASH_ANNOTATION, DesiredObject};

/// Field manager of every write.
pub const FIELD_MANAGER: &str = "scion";

fn api(client: &kube::Client, obj: &DesiredObject) -> Api<DynamicObject> {
    let ar = ApiResource {
        group: obj.group.to_string(),
        version: obj.version.to_string(),
        api_version: obj.api_version(),
        kind: obj.kind.to_string(),
        plural: obj.plural.to_string(),
    };
    Api::namespaced_with(client.clone(), &obj.namespace, &ar)
}

/// What happened to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    Unchanged,
    Written,
}

/// GET the live object; apply only when it is missing, carries another desired
/// hash, or no longer contains every field scion sets (drift).
pub async fn ensure(client: &kube::Client, obj: &DesiredObject) -> Result<Applied, Error> {
    let api = api(client, obj);
    let live = api.get_opt(&obj.name).await.map_err(|e| {
        Error::kube(
            format!("get {} {}/{}", obj.kind, obj.namespace, obj.name),
            e,
        )
    })?;
    if let Some(live) = live {
        let live = serde_json::to_value(&live).unwrap_or(Value::Null);
        let same_hash = live
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(DESIRED_HASH_ANNOTATION))
            == obj
                .object
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(DESIRED_HASH_ANNOTATION));
        if same_hash && contains(&live, &obj.object) {
            return Ok(Applied::Unchanged);
        }
    }
    let params = PatchParams::apply(FIELD_MANAGER).force();
    api.patch(&obj.name, &params, &Patch::Apply(&obj.object))
        .await
        .map_err(|e| {
            Error::kube(
                format!("apply {} {}/{}", obj.kind, obj.namespace, obj.name),
                e,
            )
        })?;
    Ok(Applied::Written)
}

/// Whether `live` contains every field of `desired` with the same value. Lists
/// must have the same length and match element by element; the API server's
/// defaults in `live` are ignored.
pub fn contains(live: &Value, desired: &Value) -> bool {
    match (live, desired) {
        (Value::Object(l), Value::Object(d)) => d
            .iter()
            .all(|(k, dv)| l.get(k).is_some_and(|lv| contains(lv, dv))),
        (Value::Array(l), Value::Array(d)) => {
            l.len() == d.len() && l.iter().zip(d).all(|(lv, dv)| contains(lv, dv))
        }
        (l, d) => l == d,
    }
}

/// Delete `objects` in order; after each, wait until it is gone unless `wait` is
/// `None` (force deletion). All waits share one budget (`wait.0`), so the whole
/// deletion stays inside the reconciliation timeout. The error names the object
/// still present and its finalizers.
pub async fn delete_in_order(
    client: &kube::Client,
    objects: &[DesiredObject],
    wait: Option<(Duration, Duration)>,
) -> Result<(), Error> {
    let deadline = wait.map(|(budget, _)| tokio::time::Instant::now() + budget);
    for obj in objects {
        let api = api(client, obj);
        let what = format!("{} {}/{}", obj.kind, obj.namespace, obj.name);
        match api.delete(&obj.name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => continue,
            Err(e) => return Err(Error::kube(format!("delete {what}"), e)),
        }
        let (Some((budget, interval)), Some(deadline)) = (wait, deadline) else {
            continue;
        };
        loop {
            let live = api
                .get_opt(&obj.name)
                .await
                .map_err(|e| Error::kube(format!("get {what}"), e))?;
            let Some(live) = live else { break };
            if tokio::time::Instant::now() + interval > deadline {
                let finalizers = live.metadata.finalizers.unwrap_or_default();
                return Err(Error::DeletionBlocked {
                    object: what,
                    waited: budget,
                    finalizers,
                });
            }
            tokio::time::sleep(interval).await;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::contains;
    use serde_json::json;

    #[test]
    fn live_with_server_defaults_contains_desired() {
        let desired = json!({"spec": {"ports": [{"port": 1}], "a": "x"}});
        let live = json!({"spec": {"ports": [{"port": 1, "protocol": "TCP"}], "a": "x", "b": 2}, "status": {}});
        assert!(contains(&live, &desired));
        assert!(!contains(
            &json!({"spec": {"ports": [{"port": 2}], "a": "x"}}),
            &desired
        ));
        assert!(!contains(
            &json!({"spec": {"ports": [{"port": 1}, {"port": 3}], "a": "x"}}),
            &desired
        ));
        assert!(!contains(
            &json!({"spec": {"ports": [{"port": 1}]}}),
            &desired
        ));
    }
}
