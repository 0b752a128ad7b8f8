//! The hostile seed-webhook inputs of issue 27, built from the example
//! reviews, at any size: shared by `tests/mutation_hostile.rs`,
//! `tests/server_attack.rs`, `benches/mutate.rs` and `examples/attack.rs`
//! (the last two include this file with `#[path]`), so the bench, the
//! attack script and the tests send the same bodies.

use serde_json::{Value, json};

/// gardenlet's UPDATE of a worker pool's OperatingSystemConfig (84 KB).
pub const OSC_REVIEW: &[u8] =
    include_bytes!("../../examples/reviews/aws-operatingsystemconfig.json");
/// The namespace of [`OSC_REVIEW`] (its shoot is in `examples/objects`).
pub const OSC_NAMESPACE: &str = "shoot--dev--aws";
/// The kubelet configuration file of an OSC.
pub const KUBELET_CONFIG: &str = "/var/lib/kubelet/config/kubelet";

/// [`OSC_REVIEW`] changed by `edit` (given the object), compact as an API
/// server sends it.
pub fn osc_review(edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut review: Value = serde_json::from_slice(OSC_REVIEW).expect("the example is JSON");
    edit(&mut review["request"]["object"]);
    serde_json::to_vec(&review).expect("serialises")
}

fn unit_mut<'v>(object: &'v mut Value, name: &str) -> &'v mut Value {
    object["spec"]["units"]
        .as_array_mut()
        .expect("units")
        .iter_mut()
        .find(|u| u["name"] == name)
        .expect("the unit")
}

fn file_mut<'v>(object: &'v mut Value, path: &str) -> &'v mut Value {
    object["spec"]["files"]
        .as_array_mut()
        .expect("files")
        .iter_mut()
        .find(|f| f["path"] == path)
        .expect("the file")
}

/// Item 1: the kubelet unit followed by `n` sections `[s<i>]` of one
/// option each (12 bytes a section).
pub fn many_sections(n: usize) -> Vec<u8> {
    osc_review(|object| {
        let unit = unit_mut(object, "kubelet.service");
        let mut content = unit["content"].as_str().expect("content").to_string();
        content.push('\n');
        for i in 0..n {
            content.push_str(&format!("[s{i}]\na=b\n"));
        }
        unit["content"] = Value::String(content);
    })
}

/// Item 5: the kubelet unit after `lines` lines of `width` bytes (each
/// under go-systemd's 2,048-byte limit) before its first section.
pub fn long_lines_first(lines: usize, width: usize) -> Vec<u8> {
    osc_review(|object| {
        let unit = unit_mut(object, "kubelet.service");
        let line = format!("{}\n", "y".repeat(width));
        let content = format!(
            "{}{}",
            line.repeat(lines),
            unit["content"].as_str().expect("content")
        );
        unit["content"] = Value::String(content);
    })
}

/// Items 2 and 4: a valid kubelet configuration of about `bytes` bytes (a
/// long `providerID`), base64 as gardenlet writes it.
pub fn big_kubelet_config(bytes: usize) -> Vec<u8> {
    kubelet_config_with(&format!("providerID: {}\n", "p".repeat(bytes)))
}

/// The example's kubelet configuration with `extra` YAML lines appended.
pub fn kubelet_config_with(extra: &str) -> Vec<u8> {
    use base64::Engine as _;
    let b64 = &base64::engine::general_purpose::STANDARD;
    osc_review(|object| {
        let file = file_mut(object, KUBELET_CONFIG);
        let data = file["content"]["inline"]["data"].as_str().expect("data");
        let mut text = String::from_utf8(b64.decode(data).expect("b64")).expect("UTF-8");
        text.push_str(extra);
        file["content"]["inline"]["data"] = Value::String(b64.encode(text));
    })
}

/// Item 3: `n` files `{"a": 0}` appended (8 bytes each).
pub fn tiny_files(n: usize) -> Vec<u8> {
    osc_review(|object| {
        let files = object["spec"]["files"].as_array_mut().expect("files");
        files.extend(std::iter::repeat_n(json!({"a": 0}), n));
    })
}

/// Item 3: `n` ordinary files appended (about 110 bytes each).
pub fn ordinary_files(n: usize) -> Vec<u8> {
    osc_review(|object| {
        let files = object["spec"]["files"].as_array_mut().expect("files");
        files.extend((0..n).map(|i| {
            json!({"path": format!("/etc/hostile/file-{i}"), "permissions": 420,
                "content": {"inline": {"encoding": "", "data": "x"}}})
        }));
    })
}

/// A `cloudprovider` Secret review (aws, `shoot--dev--aws`) with `data`
/// (values base64-encoded here) and `labels`.
pub fn secret_review(data: &[(&str, &[u8])], labels: Value) -> Vec<u8> {
    use base64::Engine as _;
    let b64 = &base64::engine::general_purpose::STANDARD;
    let data: serde_json::Map<String, Value> = data
        .iter()
        .map(|(k, v)| ((*k).to_string(), Value::String(b64.encode(v))))
        .collect();
    let mut labels = labels;
    labels["gardener.cloud/purpose"] = json!("cloudprovider");
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "secret-1",
            "kind": {"group": "", "version": "v1", "kind": "Secret"},
            "resource": {"group": "", "version": "v1", "resource": "secrets"},
            "name": "cloudprovider",
            "namespace": OSC_NAMESPACE,
            "operation": "CREATE",
            "object": {"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "cloudprovider", "namespace": OSC_NAMESPACE, "labels": labels},
                "type": "Opaque", "data": data}
        }
    }))
    .expect("serialises")
}
