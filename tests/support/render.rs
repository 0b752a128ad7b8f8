//! Rendering an example ControlPlane and reading rendered objects in the
//! render tests (`tests/render_*.rs`): the containers of a workload, their
//! args, the names of a list, a shoot at another minor or with an annotation.
//! Each helper panics naming what is missing, so a failed lookup reads as the
//! expectation it breaks.

use scion::gardener::ShootContext;
use serde_json::Value;
use sha2::Digest as _;

/// The containers of a workload's pod template, in order.
pub fn containers(workload: &Value) -> Vec<&Value> {
    workload["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .collect()
}

/// The container `name` of a workload's pod template.
pub fn container<'a>(workload: &'a Value, name: &str) -> &'a Value {
    containers(workload)
        .into_iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("container {name}"))
}

/// A JSON list of strings.
pub fn strings(v: &Value) -> Vec<String> {
    serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}"))
}

/// The args of the container `name` of a workload.
pub fn args(workload: &Value, name: &str) -> Vec<String> {
    strings(&container(workload, name)["args"])
}

/// A workload's pod spec.
pub fn pod_spec(workload: &Value) -> &Value {
    &workload["spec"]["template"]["spec"]
}

/// The `name`s of a JSON list (containers, volumes, ports), in order.
pub fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .expect("list")
        .iter()
        .map(|v| v["name"].as_str().expect("name").to_string())
        .collect()
}

/// The shoot at Kubernetes `1.<minor>.2`.
pub fn with_version(mut s: ShootContext, minor: u64) -> ShootContext {
    s.shoot.spec.kubernetes.version = semver::Version::new(1, minor, 2);
    s
}

/// The shoot with one more annotation.
pub fn with_annotation(mut s: ShootContext, key: &str, value: &str) -> ShootContext {
    s.shoot
        .metadata
        .annotations
        .insert(key.to_string(), value.to_string());
    s
}

/// The render of the ControlPlane `control-plane` in `namespace` of the
/// objects directory `objects` (an example's), with `profile`'s components and
/// image vector and fixed certificate names.
pub fn render_example(
    profile: &scion::profile::Profile,
    objects: &std::path::Path,
    namespace: &str,
) -> scion::render::Rendered {
    let (cp, shoot, credentials) =
        scion::cli::render::load_render_inputs(objects, namespace, "control-plane")
            .expect("inputs");
    let spec = profile.control_plane().expect("controlPlane");
    scion::render::render(
        &scion::render::RenderInput {
            credentials: credentials.as_ref(),
            ..scion::render::RenderInput::new(
                &cp,
                &shoot,
                &profile.images,
                &scion::secrets::Certificates::fixed("server", &spec.certificates(), ""),
            )
        },
        spec,
    )
    .unwrap_or_else(|e| panic!("{namespace}: {e}"))
}

/// Lower-case hex SHA-256, as Helm's `sha256sum` and Gardener's checksums.
pub fn sha256_hex(data: impl AsRef<[u8]>) -> String {
    format!("{:x}", sha2::Sha256::digest(data.as_ref()))
}
