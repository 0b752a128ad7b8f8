//! Gardener's image vector: which image a named component runs, per
//! Kubernetes version — the `imagevector/images.yaml` of every Go provider
//! extension, in the same format, with `IMAGEVECTOR_OVERWRITE` merged as they
//! merge it.
//!
//! A profile names images (`providerSidecar.image:
//! machine-controller-manager-provider-aws`, `${images.cloud-controller-manager}`
//! in a component); the vector says the repository and tag. Each provider
//! folder has its vector (`images.yaml`; `src/providers/<provider>/` for the
//! built-in ones).
//!
//! **Format** (`images:` list; unknown keys such as `sourceRepository` and
//! `labels` are kept for `scion images` but not read): `name`; either `ref`, or
//! `repository` with an optional `tag`; optional `version`, `runtimeVersion`,
//! `targetVersion` (version constraints) and `architectures`. A `caBundle` key
//! is accepted and ignored. Validation has Gardener's messages: `image name is
//! required`, `either image ref or repository+tag is required`, `ref must not be
//! empty if specified`, `cannot specify repository when ref is set`, `cannot
//! specify tag when ref is set`, `repository must not be empty if specified`,
//! `image tag must not be empty if specified`.
//!
//! **Constraints** are written in the profile's one version syntax
//! ([`VersionRange`]): the upstream vectors use only `1.33.x` and `>= 1.36`,
//! which mean the same in Masterminds semver (Gardener's library) and here.
//! Masterminds forms the vectors do not use (`~`, `^`, `||`, hyphen ranges)
//! are rejected when the vector loads, naming the entry.
//!
//! **Lookup** ([`ImageVector::find`]) scores the entries of a name as
//! `FindImage` does: a constraint that holds scores 2 when its text starts with
//! a full `x.y.z` (optionally `v`) or with `=`, else 1; an absent constraint or
//! an absent version scores 0; a constraint that fails disqualifies the entry.
//! Architecture: an entry without `architectures` serves amd64 and arm64 (1
//! point), an entry listing only the wanted one scores 2. The highest score
//! wins, the first entry on ties. An entry without a tag gets
//! `v<target version>`; a tag starting `sha256:` is joined with `@`.
//!
//! **Overwrite** ([`ImageVector::merge`]): entries are keyed by name,
//! runtime and target constraint and architecture list; a matching entry takes
//! the overwrite's fields where it sets them (`ref` survives only when the
//! overwrite sets neither `ref` nor `repository`; a resulting `ref` clears
//! repository and tag; `version` defaults to the old tag when only the tag is
//! overwritten); other entries are appended.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::version::VersionRange;

/// Environment variable naming an image vector file merged over the built-in one.
pub const OVERWRITE_ENV: &str = "IMAGEVECTOR_OVERWRITE";

/// Architecture asked for when none is given (Gardener's default).
pub const DEFAULT_ARCHITECTURE: &str = "amd64";

/// One entry of the vector, as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageSource {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_repository: Option<String>,
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architectures: Option<Vec<String>>,
    /// Informational keys (`labels`, ...), kept as written.
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

/// A validated image vector: its entries in order, constraints parsed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ImageVector {
    entries: Vec<(ImageSource, Option<VersionRange>, Option<VersionRange>)>,
}

/// A vector that cannot be used; the message names the entry and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageVectorError {
    #[error("image vector {file}: {message}")]
    Invalid { file: String, message: String },
    #[error("could not read image vector {path}: {reason}")]
    Io { path: String, reason: String },
    #[error("could not find image {name:?} opts {opts}")]
    NotFound { name: String, opts: String },
}

#[derive(Deserialize)]
struct VectorFile {
    #[serde(default)]
    images: Vec<ImageSource>,
    /// Accepted for compatibility; scion does not pull images itself.
    #[serde(default, rename = "caBundle")]
    _ca_bundle: Option<Value>,
}

/// What a lookup is for.
#[derive(Debug, Clone, Copy, Default)]
pub struct FindOptions<'a> {
    /// The seed's Kubernetes version (`runtimeVersion` constraints).
    pub runtime_version: Option<&'a semver::Version>,
    /// The shoot's Kubernetes version (`targetVersion` constraints).
    pub target_version: Option<&'a semver::Version>,
    /// Default `amd64`.
    pub architecture: Option<&'a str>,
}

impl fmt::Display for FindOptions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(v) = self.runtime_version {
            write!(f, "runtime version {v} ")?;
        }
        if let Some(v) = self.target_version {
            write!(f, "target version {v} ")?;
        }
        if let Some(a) = self.architecture {
            write!(f, "architecture {a}")?;
        }
        Ok(())
    }
}

impl ImageVector {
    /// Parse and validate a vector; `source` names it in errors.
    pub fn parse(source: &str, text: &str) -> Result<ImageVector, ImageVectorError> {
        let invalid = |message: String| ImageVectorError::Invalid {
            file: source.to_string(),
            message,
        };
        let file: VectorFile = serde_saphyr::from_str(text).map_err(|e| invalid(e.to_string()))?;
        let mut entries = Vec::with_capacity(file.images.len());
        for (i, image) in file.images.into_iter().enumerate() {
            let (runtime, target) = validate(&image)
                .map_err(|(field, m)| invalid(format!("images[{i}].{field}: {m}")))?;
            entries.push((image, runtime, target));
        }
        Ok(ImageVector { entries })
    }

    /// The embedded vector of a built-in provider; empty for any other.
    pub fn builtin(provider: &str) -> ImageVector {
        crate::providers::builtin(provider)
            .and_then(|folder| folder.file("images.yaml"))
            .map(|text| {
                ImageVector::parse(&format!("{provider}/images.yaml"), text)
                    .unwrap_or_else(|e| panic!("embedded image vector: {e}"))
            })
            .unwrap_or_default()
    }

    /// This vector with the file named by `IMAGEVECTOR_OVERWRITE` merged over
    /// it, as the Go extensions start.
    pub fn with_env_overwrite(self) -> Result<ImageVector, ImageVectorError> {
        let base = self;
        match std::env::var_os(OVERWRITE_ENV) {
            Some(path) if !path.is_empty() => {
                let path = std::path::PathBuf::from(path);
                let text = std::fs::read_to_string(&path).map_err(|e| ImageVectorError::Io {
                    path: path.display().to_string(),
                    reason: e.to_string(),
                })?;
                let overwrite = ImageVector::parse(&path.display().to_string(), &text)?;
                Ok(base.merge(overwrite))
            }
            _ => Ok(base),
        }
    }

    /// The entries in order.
    pub fn entries(&self) -> impl Iterator<Item = &ImageSource> {
        self.entries.iter().map(|(s, _, _)| s)
    }

    /// Whether some entry has this name.
    pub fn has(&self, name: &str) -> bool {
        self.entries().any(|s| s.name == name)
    }

    /// `MergeImageVectors(self, overwrite)`.
    pub fn merge(mut self, overwrite: ImageVector) -> ImageVector {
        for (new, runtime, target) in overwrite.entries {
            let key = merge_key(&new);
            match self
                .entries
                .iter_mut()
                .find(|(old, _, _)| merge_key(old) == key)
            {
                Some(slot) => {
                    let merged = merge_sources(&slot.0, new);
                    // Constraints are part of the key, so they are unchanged.
                    slot.0 = merged;
                }
                None => self.entries.push((new, runtime, target)),
            }
        }
        self
    }

    /// The image string (`repository:tag`, `repository@sha256:…`, `ref`) for
    /// `name`, chosen as Gardener's `FindImage` chooses.
    pub fn find(&self, name: &str, opts: &FindOptions<'_>) -> Result<String, ImageVectorError> {
        let mut best: Option<(u32, &ImageSource)> = None;
        for (source, runtime, target) in &self.entries {
            if source.name != name {
                continue;
            }
            let Some(score) = score(source, runtime, target, opts) else {
                continue;
            };
            if best.is_none_or(|(b, _)| score > b) {
                best = Some((score, source));
            }
        }
        let (_, source) = best.ok_or_else(|| ImageVectorError::NotFound {
            name: name.to_string(),
            opts: opts.to_string(),
        })?;
        Ok(image_string(source, opts.target_version))
    }

    /// The vector as `images.yaml` text.
    pub fn to_yaml(&self) -> String {
        #[derive(Serialize)]
        struct Out<'a> {
            images: Vec<&'a ImageSource>,
        }
        let out = Out {
            images: self.entries().collect(),
        };
        serde_saphyr::to_string(&out).unwrap_or_default()
    }
}

fn validate(
    image: &ImageSource,
) -> Result<(Option<VersionRange>, Option<VersionRange>), (String, String)> {
    let err = |field: &str, m: &str| Err((field.to_string(), m.to_string()));
    if image.name.is_empty() {
        return err("name", "image name is required");
    }
    if image.reference.is_none() && image.repository.is_none() {
        return err(
            "ref/repository",
            "either image ref or repository+tag is required",
        );
    }
    if let Some(r) = &image.reference {
        if r.is_empty() {
            return err("ref", "ref must not be empty if specified");
        }
        if image.repository.is_some() {
            return err("repository", "cannot specify repository when ref is set");
        }
        if image.tag.is_some() {
            return err("tag", "cannot specify tag when ref is set");
        }
    } else {
        if image.repository.as_deref() == Some("") {
            return err("repository", "repository must not be empty if specified");
        }
        if image.tag.as_deref() == Some("") {
            return err("tag", "image tag must not be empty if specified");
        }
    }
    let constraint = |field: &str, text: &Option<String>| {
        text.as_deref()
            .map(|t| {
                VersionRange::parse(t).map_err(|e| {
                    (
                        field.to_string(),
                        format!(
                            "{t:?} is not a version constraint scion understands (e.g. \"1.33.x\", \">= 1.36\"): {e}"
                        ),
                    )
                })
            })
            .transpose()
    };
    Ok((
        constraint("runtimeVersion", &image.runtime_version)?,
        constraint("targetVersion", &image.target_version)?,
    ))
}

/// Name, constraints and the joined architectures: the key entries merge on.
fn merge_key(s: &ImageSource) -> (String, String, String, Option<String>) {
    (
        s.name.clone(),
        s.runtime_version.clone().unwrap_or_default(),
        s.target_version.clone().unwrap_or_default(),
        s.architectures.as_ref().map(|a| a.concat()),
    )
}

fn merge_sources(old: &ImageSource, new: ImageSource) -> ImageSource {
    let repository = new.repository.clone().or_else(|| old.repository.clone());
    let tag = new.tag.clone().or_else(|| old.tag.clone());
    let mut version = new.version.clone().or_else(|| old.version.clone());
    if version.is_none() && tag.is_some() {
        version = old.tag.clone();
    }
    let reference = match (&new.reference, &new.repository) {
        (Some(r), _) => Some(r.clone()),
        (None, None) => old.reference.clone(),
        (None, Some(_)) => None,
    };
    let (repository, tag) = if reference.is_some() {
        (None, None)
    } else {
        (repository, tag)
    };
    ImageSource {
        name: new.name,
        source_repository: new
            .source_repository
            .or_else(|| old.source_repository.clone()),
        reference,
        repository,
        tag,
        version,
        runtime_version: new.runtime_version.or_else(|| old.runtime_version.clone()),
        target_version: new.target_version.or_else(|| old.target_version.clone()),
        architectures: new.architectures.or_else(|| old.architectures.clone()),
        other: if new.other.is_empty() {
            old.other.clone()
        } else {
            new.other
        },
    }
}

/// `^(v?[0-9]+\.[0-9]+\.[0-9]+|=)`: a constraint naming an exact version.
fn exact(text: &str) -> bool {
    if text.starts_with('=') {
        return true;
    }
    let rest = text.strip_prefix('v').unwrap_or(text);
    let mut parts = rest.splitn(3, '.');
    let digits = |p: Option<&str>, whole: bool| {
        p.is_some_and(|p| {
            let lead: &str = if whole {
                let end = p.find(|c: char| !c.is_ascii_digit()).unwrap_or(p.len());
                &p[..end]
            } else {
                p
            };
            !lead.is_empty() && lead.bytes().all(|b| b.is_ascii_digit())
        })
    };
    digits(parts.next(), false) && digits(parts.next(), false) && digits(parts.next(), true)
}

fn score(
    source: &ImageSource,
    runtime: &Option<VersionRange>,
    target: &Option<VersionRange>,
    opts: &FindOptions<'_>,
) -> Option<u32> {
    let constraint =
        |range: &Option<VersionRange>, text: &Option<String>, version: Option<&semver::Version>| {
            match (range, version) {
                (Some(range), Some(version)) => range.contains(version).then(|| {
                    if exact(text.as_deref().unwrap_or_default()) {
                        2
                    } else {
                        1
                    }
                }),
                _ => Some(0),
            }
        };
    let runtime_score = constraint(runtime, &source.runtime_version, opts.runtime_version)?;
    let target_score = constraint(target, &source.target_version, opts.target_version)?;
    let wanted = opts.architecture.unwrap_or(DEFAULT_ARCHITECTURE);
    let arch_score = match &source.architectures {
        None => ["amd64", "arm64"].contains(&wanted).then_some(1)?,
        Some(list) if list.len() > 1 && list.iter().any(|a| a == wanted) => 1,
        Some(list) if list.len() == 1 && list[0] == wanted => 2,
        Some(_) => return None,
    };
    Some(runtime_score + target_score + arch_score)
}

fn image_string(source: &ImageSource, target: Option<&semver::Version>) -> String {
    if let Some(r) = &source.reference {
        return r.clone();
    }
    let repository = source.repository.clone().unwrap_or_default();
    let tag = source
        .tag
        .clone()
        .or_else(|| target.map(|v| format!("v{}.{}.{}", v.major, v.minor, v.patch)));
    match tag {
        Some(tag) if tag.starts_with("sha256:") => format!("{repository}@{tag}"),
        Some(tag) => format!("{repository}:{tag}"),
        None => repository,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> semver::Version {
        semver::Version::parse(s).unwrap()
    }

    fn target(version: &semver::Version) -> FindOptions<'_> {
        FindOptions {
            target_version: Some(version),
            ..Default::default()
        }
    }

    /// An entry repeated with the same name, constraints and architectures
    /// is never chosen (the first wins every tie) and an overwrite reaches
    /// only the first: in a built-in vector it is a mistake (two component
    /// files listing a shared sidecar once each).
    #[test]
    fn no_builtin_vector_repeats_an_entry() {
        for provider in crate::providers::BUILTIN_PROVIDERS {
            let vector = ImageVector::builtin(provider);
            let mut seen = std::collections::HashSet::new();
            for entry in vector.entries() {
                assert!(
                    seen.insert(merge_key(entry)),
                    "{provider}/images.yaml lists {:?} twice",
                    merge_key(entry)
                );
            }
        }
    }

    const VECTOR: &str = r#"
images:
- name: ccm
  sourceRepository: github.com/example/ccm
  repository: example.org/ccm
  tag: v1.33.4
  targetVersion: 1.33.x
  labels: [{name: x, value: {a: b}}]
- name: ccm
  repository: example.org/ccm
  tag: v1.36.1
  targetVersion: ">= 1.36"
- name: ccm
  repository: example.org/ccm
  tag: v1.33.9
  targetVersion: "= 1.33.9"
- name: sidecar
  repository: example.org/sidecar
  tag: v0.28.1
- name: pinned
  repository: example.org/pinned
  tag: "sha256:abcd"
- name: untagged
  repository: example.org/untagged
"#;

    #[test]
    fn lookup_scores_as_find_image() {
        let vector = ImageVector::parse("test", VECTOR).unwrap();
        let find = |name: &str, version: &str| vector.find(name, &target(&v(version)));
        assert_eq!(find("ccm", "1.33.2").unwrap(), "example.org/ccm:v1.33.4");
        // An exact constraint scores 2 and beats the wildcard.
        assert_eq!(find("ccm", "1.33.9").unwrap(), "example.org/ccm:v1.33.9");
        assert_eq!(find("ccm", "1.40.0").unwrap(), "example.org/ccm:v1.36.1");
        let err = find("ccm", "1.32.0").unwrap_err().to_string();
        assert_eq!(
            err,
            "could not find image \"ccm\" opts target version 1.32.0 "
        );
        assert_eq!(
            find("sidecar", "1.20.0").unwrap(),
            "example.org/sidecar:v0.28.1"
        );
        assert_eq!(
            find("pinned", "1.20.0").unwrap(),
            "example.org/pinned@sha256:abcd"
        );
        assert_eq!(
            find("untagged", "1.31.2").unwrap(),
            "example.org/untagged:v1.31.2"
        );
        assert_eq!(
            vector.find("untagged", &FindOptions::default()).unwrap(),
            "example.org/untagged"
        );
    }

    #[test]
    fn architectures_filter_and_score() {
        let vector = ImageVector::parse(
            "t",
            "images:\n- {name: a, repository: r/multi, tag: '1'}\n- {name: a, repository: r/arm, tag: '1', architectures: [arm64]}\n",
        )
        .unwrap();
        let arm = FindOptions {
            architecture: Some("arm64"),
            ..Default::default()
        };
        assert_eq!(vector.find("a", &arm).unwrap(), "r/arm:1");
        assert_eq!(
            vector.find("a", &FindOptions::default()).unwrap(),
            "r/multi:1"
        );
        let s390 = FindOptions {
            architecture: Some("s390x"),
            ..Default::default()
        };
        assert!(vector.find("a", &s390).is_err());
    }

    #[test]
    fn validation_has_gardeners_messages() {
        let cases = [
            (
                "images: [{repository: r}]",
                "images[0].name: image name is required",
            ),
            (
                "images: [{name: a}]",
                "images[0].ref/repository: either image ref or repository+tag is required",
            ),
            (
                "images: [{name: a, ref: ''}]",
                "images[0].ref: ref must not be empty if specified",
            ),
            (
                "images: [{name: a, ref: r:1, repository: r}]",
                "images[0].repository: cannot specify repository when ref is set",
            ),
            (
                "images: [{name: a, ref: r:1, tag: '1'}]",
                "images[0].tag: cannot specify tag when ref is set",
            ),
            (
                "images: [{name: a, repository: ''}]",
                "images[0].repository: repository must not be empty if specified",
            ),
            (
                "images: [{name: a, repository: r, tag: ''}]",
                "images[0].tag: image tag must not be empty if specified",
            ),
            (
                "images: [{name: a, repository: r, targetVersion: '~1.33'}]",
                "images[0].targetVersion: \"~1.33\" is not a version constraint",
            ),
        ];
        for (text, want) in cases {
            let err = ImageVector::parse("f.yaml", text).unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("image vector f.yaml: {want}")),
                "{err}"
            );
        }
    }

    #[test]
    fn overwrite_merges_field_by_field_and_appends() {
        let base = ImageVector::parse("b", VECTOR).unwrap();
        let overwrite = ImageVector::parse(
            "o",
            r#"
images:
- name: ccm
  repository: example.org/ccm
  tag: v1.33.5
  targetVersion: 1.33.x
- name: sidecar
  repository: mirror.local/sidecar
- name: ccm
  ref: mirror.local/ccm@sha256:1111
  targetVersion: ">= 1.36"
- name: extra
  repository: mirror.local/extra
  tag: v1
"#,
        )
        .unwrap();
        let merged = base.merge(overwrite);
        let find = |name: &str, version: &str| merged.find(name, &target(&v(version))).unwrap();
        assert_eq!(find("ccm", "1.33.1"), "example.org/ccm:v1.33.5");
        assert_eq!(find("sidecar", "1.33.1"), "mirror.local/sidecar:v0.28.1");
        assert_eq!(find("ccm", "1.37.0"), "mirror.local/ccm@sha256:1111");
        assert_eq!(find("extra", "1.33.1"), "mirror.local/extra:v1");
        let ccm133 = merged
            .entries()
            .find(|s| s.target_version.as_deref() == Some("1.33.x"))
            .unwrap();
        assert_eq!(
            ccm133.version.as_deref(),
            Some("v1.33.4"),
            "version defaults to the old tag"
        );
        assert_eq!(ccm133.other.len(), 1, "labels kept");
        let ccm136 = merged
            .entries()
            .find(|s| s.target_version.as_deref() == Some(">= 1.36"))
            .unwrap();
        assert_eq!(
            (ccm136.repository.as_deref(), ccm136.tag.as_deref()),
            (None, None)
        );
    }

    #[test]
    fn exact_constraints_are_recognised_as_gardener_does() {
        assert!(exact("1.33.1"));
        assert!(exact("v1.33.1, < 2"));
        assert!(exact("= 1.33"));
        assert!(!exact("1.33.x"));
        assert!(!exact(">= 1.36"));
        assert!(!exact("1.33"));
    }

    #[test]
    fn builtin_vectors_load_and_cover_every_supported_minor() {
        for provider in super::super::BUILTIN_PROVIDERS {
            let vector = ImageVector::builtin(provider);
            assert!(vector.entries().count() > 0, "{provider}");
            let ccm = if *provider == "alicloud" {
                "alicloud-controller-manager"
            } else {
                "cloud-controller-manager"
            };
            for minor in 32..=36 {
                let version = v(&format!("1.{minor}.0"));
                vector
                    .find(ccm, &target(&version))
                    .unwrap_or_else(|e| panic!("{provider} 1.{minor}: {e}"));
            }
            let sidecar = format!("machine-controller-manager-provider-{provider}");
            vector.find(&sidecar, &FindOptions::default()).unwrap();
        }
        assert_eq!(ImageVector::builtin("nope").entries().count(), 0);
    }

    #[test]
    fn the_yaml_form_reads_back_to_the_same_vector() {
        let vector = ImageVector::parse("t", VECTOR).unwrap();
        let again = ImageVector::parse("again", &vector.to_yaml()).unwrap();
        assert_eq!(vector, again);
    }
}
