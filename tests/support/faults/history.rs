//! Every version of the objects the ControlPlane controller writes into the
//! shoot namespaces (Secrets, ManagedResources), watched from the start of a
//! scenario: an object written twice with different content (two leaders,
//! or a restarted process, rendering it differently) shows as two contents
//! under one name.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt as _;
use kube::runtime::watcher::{self, Event};
use serde_json::{Value, json};

use super::super::testbed::{ApiServer, eventually};

/// Object (`Kind namespace/name`) → its distinct contents in order.
type Seen = BTreeMap<String, Vec<Value>>;

/// The watches; stop when dropped.
pub struct History {
    seen: Arc<Mutex<Seen>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// What counts as an object's content: for a Secret its type, data and
/// immutability; for a ManagedResource its spec.
fn content(kind: &str, object: &Value) -> Value {
    match kind {
        "Secret" => json!({
            "type": object["type"],
            "data": object["data"],
            "immutable": object["immutable"],
        }),
        _ => object["spec"].clone(),
    }
}

impl History {
    /// Watch Secrets and ManagedResources in the namespaces starting with
    /// `prefix`; returns once both watches have listed.
    pub async fn start(api: &ApiServer, prefix: &str) -> History {
        let seen: Arc<Mutex<Seen>> = Default::default();
        let listed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for (api_version, kind) in [
            ("v1", "Secret"),
            ("resources.gardener.cloud/v1alpha1", "ManagedResource"),
        ] {
            let all = api.api(api_version, kind, None).await;
            let (seen, listed, prefix) = (seen.clone(), listed.clone(), prefix.to_owned());
            tasks.push(tokio::spawn(async move {
                let mut stream = std::pin::pin!(watcher::watcher(all, watcher::Config::default()));
                while let Some(event) = stream.next().await {
                    let object = match event {
                        Ok(Event::Apply(o) | Event::InitApply(o)) => o,
                        Ok(Event::InitDone) => {
                            listed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            continue;
                        }
                        _ => continue,
                    };
                    let ns = object.metadata.namespace.clone().unwrap_or_default();
                    if !ns.starts_with(&prefix) {
                        continue;
                    }
                    let key = format!(
                        "{kind} {ns}/{}",
                        object.metadata.name.clone().unwrap_or_default()
                    );
                    let value = content(kind, &serde_json::to_value(&object).unwrap());
                    let mut seen = seen.lock().unwrap();
                    let versions = seen.entry(key).or_default();
                    if versions.last() != Some(&value) {
                        versions.push(value);
                    }
                }
            }));
        }
        eventually(
            "the history's watches listed",
            Duration::from_secs(60),
            || {
                let n = listed.load(std::sync::atomic::Ordering::SeqCst);
                async move { (n >= 2).then_some(()) }
            },
        )
        .await;
        History { seen, tasks }
    }

    /// The objects written with more than one content, with how many.
    pub fn rewritten(&self) -> Vec<(String, usize)> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, v)| v.len() > 1)
            .map(|(k, v)| (k.clone(), v.len()))
            .collect()
    }

    /// How many objects were seen.
    pub fn objects(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    /// The contents seen of `key` (`Kind namespace/name`).
    pub fn contents(&self, key: &str) -> Vec<Value> {
        self.seen
            .lock()
            .unwrap()
            .get(key)
            .cloned()
            .unwrap_or_default()
    }
}

impl Drop for History {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}
