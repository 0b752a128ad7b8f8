//! `scion registration`'s artefacts are what Gardener accepts: the
//! ControllerDeployment and ControllerRegistration check against the OpenAPI
//! schema gardener-apiserver serves (vendored in
//! tests/fixtures/gardener-api/core-openapi.json), the operator's Extension
//! against its CRD, field for field with unknown fields refused. The inline
//! chart is `charts/scion` and renders the same installation; the
//! registration claims only ControlPlane/<provider>, and the Pod Security
//! level it declares is one the chart's pods meet.

#[path = "support/testbed/mod.rs"]
mod testbed;

use testbed::chart;

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use scion::deploy::registration::{
    self, ChartSource, POD_SECURITY_ANNOTATION, POD_SECURITY_LEVEL, RegistrationOptions,
};
use scion::profile::BUILTIN_PROVIDERS;
use serde_json::Value;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(chart::root().join("tests/fixtures/gardener-api").join(name)).unwrap()
}

/// Check `value` against a definition of gardener's generated OpenAPI.
fn check_openapi(defs: &Value, def: &str, value: &Value, path: &str, errors: &mut Vec<String>) {
    let Some(d) = defs.get(def) else {
        errors.push(format!("{path}: no definition {def}"));
        return;
    };
    let Some(obj) = value.as_object() else {
        errors.push(format!("{path}: {def} must be an object"));
        return;
    };
    for required in d["required"].as_array().unwrap() {
        if !obj.contains_key(required.as_str().unwrap()) {
            errors.push(format!("{path}: missing required {required}"));
        }
    }
    for (key, v) in obj {
        match d["properties"].get(key) {
            Some(prop) => check_prop(defs, prop, v, &format!("{path}.{key}"), errors),
            None => errors.push(format!("{path}.{key}: unknown field of {def}")),
        }
    }
}

fn check_prop(defs: &Value, prop: &Value, v: &Value, path: &str, errors: &mut Vec<String>) {
    if let Some(r) = prop["ref"].as_str() {
        match r {
            "metav1.ObjectMeta" => {
                let ok = v["name"].is_string()
                    && ["labels", "annotations"].iter().all(|k| {
                        v.get(*k).is_none_or(|m| {
                            m.as_object()
                                .is_some_and(|m| m.values().all(Value::is_string))
                        })
                    });
                if !ok {
                    errors.push(format!("{path}: not an ObjectMeta with a name: {v}"));
                }
            }
            // free JSON (helm.values)
            "apiextensionsv1.JSON" => {}
            r if r.starts_with("v1.") || r.starts_with("v1beta1.") => {
                check_openapi(defs, r, v, path, errors)
            }
            _ if v.is_object() => {}
            _ => errors.push(format!("{path}: {r} must be an object")),
        }
        return;
    }
    let ok = match prop["type"].as_str() {
        Some("string") if prop["format"] == "byte" => {
            v.as_str().is_some_and(|s| STANDARD.decode(s).is_ok())
        }
        Some("string") => v.is_string(),
        Some("boolean") => v.is_boolean(),
        Some("integer") => v.is_i64(),
        Some("array") => {
            if let Some(items) = v.as_array() {
                for (i, item) in items.iter().enumerate() {
                    check_prop(defs, &prop["items"], item, &format!("{path}[{i}]"), errors);
                }
                true
            } else {
                false
            }
        }
        Some("object") => v.is_object(),
        other => {
            errors.push(format!("{path}: schema type {other:?} not handled"));
            true
        }
    };
    if !ok {
        errors.push(format!("{path}: {v} is not of type {}", prop["type"]));
    }
}

/// Check `value` against a CRD's structural OpenAPI v3 schema.
fn check_crd(schema: &Value, v: &Value, path: &str, errors: &mut Vec<String>) {
    if schema["x-kubernetes-preserve-unknown-fields"] == true && schema.get("type").is_none() {
        return;
    }
    let ok = match schema["type"].as_str() {
        Some("object") => v.is_object(),
        Some("array") => v.is_array(),
        Some("string") => v.is_string(),
        Some("boolean") => v.is_boolean(),
        Some("integer") => v.is_i64(),
        Some("number") => v.is_number(),
        _ => true,
    };
    if !ok {
        errors.push(format!("{path}: {v} is not of type {}", schema["type"]));
        return;
    }
    if let Some(values) = schema["enum"].as_array()
        && !values.contains(v)
    {
        errors.push(format!("{path}: {v} is not one of {values:?}"));
    }
    if let Some(obj) = v.as_object() {
        for required in schema["required"].as_array().into_iter().flatten() {
            if !obj.contains_key(required.as_str().unwrap()) {
                errors.push(format!("{path}: missing required {required}"));
            }
        }
        let props = schema["properties"].as_object();
        for (key, child) in obj {
            match props.and_then(|p| p.get(key)) {
                Some(s) => check_crd(s, child, &format!("{path}.{key}"), errors),
                None if schema.get("additionalProperties").is_some() => check_crd(
                    &schema["additionalProperties"],
                    child,
                    &format!("{path}.{key}"),
                    errors,
                ),
                None if schema["x-kubernetes-preserve-unknown-fields"] == true => {}
                None if path.ends_with(".metadata") || path == "$" && key == "metadata" => {}
                None => errors.push(format!("{path}.{key}: unknown field")),
            }
        }
    }
    if let (Some(items), Some(list)) = (schema.get("items"), v.as_array()) {
        for (i, item) in list.iter().enumerate() {
            check_crd(items, item, &format!("{path}[{i}]"), errors);
        }
    }
}

fn options(provider: &str, chart: ChartSource) -> RegistrationOptions {
    RegistrationOptions::new(provider, "reg.local/gardener/scion:0.1.0", chart).unwrap()
}

#[test]
fn artefacts_check_against_gardeners_schemas() {
    let defs: Value = serde_json::from_str(&fixture("core-openapi.json")).unwrap();
    let crd: Value =
        serde_saphyr::from_str(&fixture("crd-operator.gardener.cloud_extensions.yaml")).unwrap();
    let version = crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "v1alpha1")
        .unwrap();
    let extension_schema = &version["schema"]["openAPIV3Schema"];
    for provider in BUILTIN_PROVIDERS {
        for chart in [
            ChartSource::Inline,
            ChartSource::Oci(format!("reg.local/charts/scion-{provider}:0.1.0")),
        ] {
            for staged in [false, true] {
                let opts = if staged {
                    options(provider, chart.clone()).webhooks_only()
                } else {
                    options(provider, chart.clone())
                };
                // what `scion registration` prints parses back into the same objects
                let stream = registration::render(&opts).unwrap();
                let parsed: Vec<Value> = scion::deploy::split_documents(&stream)
                    .iter()
                    .map(|d| serde_saphyr::from_str(d).unwrap())
                    .collect();
                assert_eq!(parsed, registration::objects(&opts));
                let mut errors = Vec::new();
                for object in &parsed {
                    match (object["apiVersion"].as_str(), object["kind"].as_str()) {
                        (Some("core.gardener.cloud/v1"), Some("ControllerDeployment")) => {
                            check_openapi(
                                &defs,
                                "v1.ControllerDeployment",
                                object,
                                "$",
                                &mut errors,
                            )
                        }
                        (Some("core.gardener.cloud/v1beta1"), Some("ControllerRegistration")) => {
                            check_openapi(
                                &defs,
                                "v1beta1.ControllerRegistration",
                                object,
                                "$",
                                &mut errors,
                            )
                        }
                        (Some("operator.gardener.cloud/v1alpha1"), Some("Extension")) => {
                            assert_eq!(crd["spec"]["names"]["kind"], "Extension");
                            check_crd(extension_schema, object, "$", &mut errors)
                        }
                        other => panic!("unexpected object {other:?}"),
                    }
                }
                assert!(errors.is_empty(), "{provider}: {errors:#?}");
            }
        }
    }
}

#[test]
fn the_validators_refuse_what_gardener_refuses() {
    let defs: Value = serde_json::from_str(&fixture("core-openapi.json")).unwrap();
    let mut cd = registration::controller_deployment(&options("aws", ChartSource::Inline));
    cd["helm"]["chart"] = Value::String("x".into());
    cd["injectGardenKubeconfig"] = Value::String("yes".into());
    cd["helm"]["rawChart"] = Value::String("%%%".into());
    let mut errors = Vec::new();
    check_openapi(&defs, "v1.ControllerDeployment", &cd, "$", &mut errors);
    assert_eq!(errors.len(), 3, "{errors:#?}");
    let crd: Value =
        serde_saphyr::from_str(&fixture("crd-operator.gardener.cloud_extensions.yaml")).unwrap();
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    let mut ext =
        registration::operator_extension(&options("aws", ChartSource::Oci("r/c:1".into())))
            .unwrap();
    ext["spec"]["deployment"]["extension"]["helm"]["rawChart"] = Value::String("x".into());
    let mut errors = Vec::new();
    check_crd(schema, &ext, "$", &mut errors);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(errors[0].contains("rawChart"), "{errors:?}");
}

#[test]
fn the_registration_claims_only_the_controlplane_of_its_provider() {
    for provider in BUILTIN_PROVIDERS {
        let cr = registration::controller_registration(&options(provider, ChartSource::Inline));
        assert_eq!(
            cr["spec"]["resources"],
            serde_json::json!([{"kind": "ControlPlane", "type": provider, "primary": true}])
        );
        assert_eq!(cr["metadata"]["name"], format!("scion-provider-{provider}"));
        assert_eq!(
            cr["spec"]["deployment"]["deploymentRefs"][0]["name"],
            cr["metadata"]["name"]
        );
        assert_eq!(
            cr["metadata"]["annotations"][POD_SECURITY_ANNOTATION],
            POD_SECURITY_LEVEL
        );
    }
}

fn untar(tgz: &[u8], into: &std::path::Path) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(tgz));
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().display().to_string();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut entry, &mut text).unwrap();
        let target = into.join(&path);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(&target, &text).unwrap();
        files.insert(path, text);
    }
    files
}

#[test]
fn the_inline_chart_is_charts_scion_and_gardenlets_rendering_uses_the_image() {
    let opts = options("openstack", ChartSource::Inline);
    let cd = registration::controller_deployment(&opts);
    let tgz = STANDARD
        .decode(cd["helm"]["rawChart"].as_str().unwrap())
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let files = untar(&tgz, dir.path());
    for (path, text) in scion::deploy::chart::CHART_FILES {
        assert_eq!(files[&format!("scion/{path}")], *text, "{path}");
    }
    // gardenlet: the ControllerDeployment's values with its `gardener` map merged over
    let mut values = cd["helm"]["values"].clone();
    values["gardener"] =
        serde_json::json!({"version": "v1.120.0", "seed": {"provider": "openstack", "spec": {}}});
    let docs = chart::try_render_chart(
        &dir.path().join("scion"),
        &values.to_string(),
        "scion-provider-openstack",
        "extension-scion-provider-openstack-1a2b3",
        "1.33.0",
    )
    .unwrap();
    let deployment = &docs
        .iter()
        .find(|d| d.kind() == "Deployment")
        .unwrap()
        .object;
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "reg.local/gardener/scion:0.1.0");
    assert!(
        container["args"]
            .as_array()
            .unwrap()
            .contains(&Value::String("--provider=openstack".into()))
    );
}

/// The rules of the Pod Security Standard `restricted` (v1.33) a Deployment's pods must meet.
fn restricted_violations(pod: &Value) -> Vec<String> {
    let mut v = Vec::new();
    let spec = &pod["spec"];
    for host in ["hostNetwork", "hostPID", "hostIPC"] {
        if spec[host] == true {
            v.push(host.to_string());
        }
    }
    for vol in spec["volumes"].as_array().into_iter().flatten() {
        let allowed = [
            "configMap",
            "csi",
            "downwardAPI",
            "emptyDir",
            "ephemeral",
            "persistentVolumeClaim",
            "projected",
            "secret",
        ];
        let kind = vol
            .as_object()
            .unwrap()
            .keys()
            .find(|k| *k != "name")
            .unwrap();
        if !allowed.contains(&kind.as_str()) {
            v.push(format!("volume type {kind}"));
        }
    }
    let pod_sc = &spec["securityContext"];
    for c in spec["containers"].as_array().unwrap() {
        let sc = &c["securityContext"];
        if sc["privileged"] == true {
            v.push("privileged".into());
        }
        if sc["allowPrivilegeEscalation"] != false {
            v.push("allowPrivilegeEscalation not false".into());
        }
        if sc["runAsNonRoot"] != true && pod_sc["runAsNonRoot"] != true {
            v.push("runAsNonRoot not true".into());
        }
        if sc["runAsUser"] == 0 || pod_sc["runAsUser"] == 0 {
            v.push("runAsUser 0".into());
        }
        let seccomp = sc["seccompProfile"]["type"]
            .as_str()
            .or(pod_sc["seccompProfile"]["type"].as_str());
        if !matches!(seccomp, Some("RuntimeDefault" | "Localhost")) {
            v.push("seccompProfile".into());
        }
        if !sc["capabilities"]["drop"]
            .as_array()
            .is_some_and(|d| d.contains(&Value::String("ALL".into())))
        {
            v.push("capabilities not dropping ALL".into());
        }
        for add in sc["capabilities"]["add"].as_array().into_iter().flatten() {
            if add != "NET_BIND_SERVICE" {
                v.push(format!("adds capability {add}"));
            }
        }
        if c["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|p| p.get("hostPort").is_some())
        {
            v.push("hostPort".into());
        }
    }
    v
}

#[test]
fn the_chart_pods_meet_the_declared_pod_security_level() {
    assert_eq!(POD_SECURITY_LEVEL, "restricted");
    for provider in BUILTIN_PROVIDERS {
        let docs = chart::render(
            &format!("provider: {provider}\nimageVectorOverwrite: \"images: []\"\n"),
            "ns",
        );
        let d = docs.iter().find(|d| d.kind() == "Deployment").unwrap();
        let violations = restricted_violations(&d.object["spec"]["template"]);
        assert!(violations.is_empty(), "{provider}: {violations:?}");
    }
    // the check itself is not vacuous
    let mut bad = chart::render("provider: aws\n", "ns")
        .into_iter()
        .find(|d| d.kind() == "Deployment")
        .unwrap()
        .object;
    bad["spec"]["template"]["spec"]["hostNetwork"] = Value::Bool(true);
    bad["spec"]["template"]["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"] =
        Value::Bool(true);
    assert_eq!(restricted_violations(&bad["spec"]["template"]).len(), 2);
}
