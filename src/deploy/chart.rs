//! The Helm chart `charts/scion`, compiled into the binary: its files, its
//! archive (what a ControllerDeployment carries as `helm.rawChart`), and the
//! one template generated from scion's tables, `templates/rbac.yaml`.
//!
//! The chart's other templates are written by hand; `tests/deploy_chart.rs`
//! renders them with the real `helm template` and checks that the default values give
//! exactly [`super::install_objects`] without the webhook configuration, and
//! that `rbac.yaml` is [`rbac_template`] byte for byte
//! (`SCION_UPDATE_GOLDEN=1 cargo test --test deploy_chart` rewrites it).

use std::io::Write as _;

use super::names::Extension;
use super::{DeployError, Manifest, rbac};

/// Name of the chart (`Chart.yaml`'s `name`, the archive's top directory).
pub const CHART_NAME: &str = "scion";

macro_rules! chart_files {
    ($($path:literal),* $(,)?) => {
        /// Every file of the chart, path relative to the chart directory, in
        /// archive order. `tests/deploy_chart.rs` checks the list against the
        /// directory, so a new template cannot be left out.
        pub const CHART_FILES: &[(&str, &str)] = &[
            $(($path, include_str!(concat!("../../charts/scion/", $path))),)*
        ];
    };
}

chart_files!(
    "Chart.yaml",
    "values.yaml",
    "templates/_helpers.tpl",
    "templates/configmap-imagevector-overwrite.yaml",
    "templates/deployment.yaml",
    "templates/networkpolicy.yaml",
    "templates/poddisruptionbudget.yaml",
    "templates/rbac.yaml",
    "templates/service.yaml",
    "templates/serviceaccount.yaml",
    "templates/vpa.yaml",
);

/// The chart as a Helm archive (`.tgz`, files under `scion/`). Same chart,
/// same bytes: entries in [`CHART_FILES`] order, modification time 0, owner
/// 0:0, mode 0644, and a gzip header without time or name, so the
/// ControllerDeployment's `rawChart` (and gardenlet's rollout) changes only
/// when the chart does.
pub fn archive() -> Vec<u8> {
    let gz = flate2::GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(Vec::new(), flate2::Compression::best());
    let mut tar = tar::Builder::new(gz);
    tar.mode(tar::HeaderMode::Deterministic);
    for (path, text) in CHART_FILES {
        let mut header = tar::Header::new_ustar();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        header.set_entry_type(tar::EntryType::Regular);
        // Writing into a Vec cannot fail; the paths are short ASCII literals.
        tar.append_data(&mut header, format!("{CHART_NAME}/{path}"), text.as_bytes())
            .expect("append a chart file to the in-memory archive");
    }
    let mut gz = tar
        .into_inner()
        .expect("finish the in-memory chart archive");
    gz.flush().expect("flush the in-memory gzip stream");
    gz.finish().expect("finish the in-memory gzip stream")
}

/// Provider and namespace of the placeholder installation whose RBAC is
/// turned into the template; every occurrence becomes a template expression.
const PLACEHOLDER_PROVIDER: &str = "zzprovider";
const PLACEHOLDER_NAMESPACE: &str = "zznamespace";

/// `templates/rbac.yaml`: the ClusterRole, ClusterRoleBinding, Role and
/// RoleBinding [`rbac`] generates from [`rbac::API_CALLS`], with the provider
/// and the namespace as template expressions.
pub fn rbac_template() -> Result<String, DeployError> {
    let ext = Extension::new(PLACEHOLDER_PROVIDER, PLACEHOLDER_NAMESPACE)?;
    let objects = [
        Manifest::ClusterRole(rbac::cluster_role(&ext)),
        Manifest::ClusterRoleBinding(rbac::cluster_role_binding(&ext)),
        Manifest::Role(rbac::role(&ext)),
        Manifest::RoleBinding(rbac::role_binding(&ext)),
    ];
    let mut out = String::from(
        "# Generated from scion's table of API calls (src/deploy/rbac.rs) by\n\
         # `SCION_UPDATE_GOLDEN=1 cargo test --test deploy_chart`; do not edit.\n",
    );
    for (i, object) in objects.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&object.to_yaml()?);
    }
    // Longest names first: each is a prefix-free match of one derived name.
    let replacements = [
        (ext.resource_name(), r#"{{ include "scion.name" . }}"#),
        (
            ext.webhook_config_name(),
            r#"scion-{{ include "scion.extensionName" . }}"#,
        ),
        (
            ext.extension_name(),
            r#"{{ include "scion.extensionName" . }}"#,
        ),
        (PLACEHOLDER_NAMESPACE.to_owned(), "{{ .Release.Namespace }}"),
    ];
    for (from, to) in &replacements {
        out = out.replace(from.as_str(), to);
    }
    if out.contains(PLACEHOLDER_PROVIDER) {
        return Err(DeployError::Yaml {
            kind: "ClusterRole",
            message: format!("a name derived from the provider has no template expression: {out}"),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_archive_is_deterministic_and_holds_every_file() {
        let a = archive();
        assert_eq!(a, archive());
        let mut entries = tar::Archive::new(flate2::read::GzDecoder::new(&a[..]));
        let names: Vec<String> = entries
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        assert_eq!(names.len(), CHART_FILES.len());
        assert_eq!(names[0], "scion/Chart.yaml");
    }

    #[test]
    fn the_rbac_template_names_nothing_of_the_placeholder() {
        let t = rbac_template().unwrap();
        assert!(!t.contains("zz"), "{t}");
        assert!(
            t.contains("name: extensions.gardener.cloud:{{ include \"scion.extensionName\" . }}")
        );
    }
}
