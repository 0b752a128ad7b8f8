//! The OperatingSystemConfig mutation: Gardener's generic mutator for the
//! `reconcile` purpose (`genericmutator/mutator.go`), driven by the
//! `operatingsystemconfig` rules of a profile.
//!
//! Gardener calls the provider's ensurer in a fixed order, whatever order
//! the provider's code is in, and so does [`apply`]: the rules' actions are
//! grouped by what they edit and applied phase by phase, in rule order
//! within a phase:
//!
//! 1. the first unit `kubelet.service` with content: deserialized
//!    ([`unit`]), `kubeletFlag`s on the first `[Service] ExecStart`
//!    ([`cmdline`]), then `unitOption`s, serialized again;
//! 2. the first file `/var/lib/kubelet/config/kubelet` with inline content:
//!    decoded with its encoding ([`file`]), the KubeletConfiguration
//!    decoded ([`kubelet`], gardenlet's block YAML on
//!    [`crate::gocompat::block`]'s fast path), `kubeletConfig` fields set,
//!    encoded ([`crate::gocompat::yaml`]) and re-encoded with the encoding it came with (remembered
//!    in [`memo`] for the next time the same content comes);
//! 3. the first file `/etc/sysctl.d/99-k8s-general.conf` with inline
//!    content: `sysctl` lines ([`sysctl`]); an empty result leaves the file
//!    alone;
//! 4. `file`s, then 5. `unit`s.
//!
//! Phases 1–3 re-encode whenever their object is there, as Gardener does
//! (the first pass over gardenlet's kubelet unit adds blank lines between
//! sections), so a profile that has an `operatingsystemconfig` component
//! gets Gardener's re-serialization even without actions of that kind.
//! Everything else of the object is left as sent.

pub mod cmdline;
pub mod memo;
pub mod sysctl;

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::context::Objects;
use crate::budget::Exhausted;
use crate::gardener::{ObjectData, ObjectKind, ShootContext};
use crate::gocompat::{file, kubelet, quote, unit};
use crate::profile::osc::{ContentVar, FileSpec, NamespaceRef, Placement, Quote, UnitSpec};
use crate::profile::{Action, Rule};

/// The unit Gardener's kubelet lives in.
pub const KUBELET_UNIT: &str = "kubelet.service";
/// The kubelet configuration file.
pub const KUBELET_CONFIG: &str = "/var/lib/kubelet/config/kubelet";
/// The kernel settings file.
pub const SYSCTL_FILE: &str = "/etc/sysctl.d/99-k8s-general.conf";
/// The label naming the worker pool of an OSC.
pub const POOL_LABEL: &str = "worker.gardener.cloud/pool";

/// Why an OSC cannot be mutated: the object is malformed where scion reads
/// it (400), a content cannot be decoded or a provider value is missing
/// (403, as Gardener's ensurer error), or the request's budget ran out.
/// Messages name the field the way the object does (`spec.files[3]`) and
/// quote at most an excerpt of any value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OscError {
    BadObject(String),
    Failed(String),
    Exhausted(Exhausted),
}

impl From<Exhausted> for OscError {
    fn from(e: Exhausted) -> Self {
        OscError::Exhausted(e)
    }
}

/// Copies of the kubelet configuration's text the codec holds at most at
/// once (see [`kubelet_config`]), counted against the request's budget.
const KUBELET_COPIES: usize = 4;

/// What the OSC phases need besides the object.
pub struct OscContext<'a> {
    pub shoot: &'a ShootContext,
    pub objects: &'a Objects,
    /// The k8s.io/kubelet minor of the provider's Go extension.
    pub kubelet_library: u32,
    /// Kubelet configurations encoded earlier.
    pub memo: &'a memo::KubeletMemo,
}

/// The new `spec.units` and `spec.files` (`None`: unchanged) of an OSC.
#[derive(Debug, Default)]
pub struct OscChange {
    pub units: Option<Vec<Value>>,
    pub files: Option<Vec<Value>>,
}

/// A list of the object, copied the first time a phase changes it.
type Items<'v> = Cow<'v, [Value]>;

/// The list `spec.<key>`; every item must be a map (Go decodes each into a
/// struct).
fn list<'v>(spec: Option<&'v Value>, key: &str) -> Result<&'v [Value], OscError> {
    let items = match spec.and_then(|s| s.get(key)) {
        None | Some(Value::Null) => return Ok(&[]),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(OscError::BadObject(format!(
                "field spec.{key} must be a list"
            )));
        }
    };
    if let Some(i) = items.iter().position(|item| !item.is_object()) {
        return Err(OscError::BadObject(format!(
            "field spec.{key}[{i}] must be a map"
        )));
    }
    Ok(items)
}

/// The list for writing: copied the first time, the copy counted against
/// the request's budget.
fn writable<'l>(items: &'l mut Items<'_>) -> Result<&'l mut Vec<Value>, OscError> {
    if let Cow::Borrowed(borrowed) = items {
        crate::budget::charge(cost(borrowed))?;
    }
    Ok(items.to_mut())
}

/// What a copy of `items` allocates, estimated as the decoder counts it
/// ([`crate::budget::cost`]).
fn cost(items: &[Value]) -> usize {
    use crate::budget::cost::{ELEMENT, ENTRY, MAP, STRING};
    fn of(v: &Value) -> usize {
        match v {
            Value::String(s) => s.len() + STRING,
            Value::Array(items) => items.iter().map(|i| ELEMENT + of(i)).sum(),
            Value::Object(map) if map.is_empty() => 0,
            Value::Object(map) => {
                MAP + (map.len() - 1) * ENTRY
                    + map
                        .iter()
                        .map(|(k, v)| k.len() + STRING + of(v))
                        .sum::<usize>()
            }
            _ => 0,
        }
    }
    items.iter().map(|i| ELEMENT + of(i)).sum()
}

/// Apply the actions of the matching `rules` to the units and files of
/// `object` (its `spec.units` and `spec.files` as sent).
pub fn apply(object: &Value, rules: &[&Rule], ctx: &OscContext<'_>) -> Result<OscChange, OscError> {
    let spec = object.get("spec");
    let units_in = list(spec, "units")?;
    let files_in = list(spec, "files")?;
    let mut units: Items<'_> = Cow::Borrowed(units_in);
    let mut files: Items<'_> = Cow::Borrowed(files_in);
    let actions: Vec<&Action> = rules.iter().flat_map(|r| &r.actions).collect();

    kubelet_unit(&mut units, &actions)?;
    crate::budget::check()?;
    kubelet_config(&mut files, &actions, ctx)?;
    crate::budget::check()?;
    sysctl_file(&mut files, &actions)?;
    for action in &actions {
        if let Action::File(spec) = action
            && let Some(file) = build_file(spec, ctx)?
        {
            place_file(&mut files, file, spec.placement)?;
        }
    }
    for action in &actions {
        if let Action::Unit(spec) = action {
            append_unique_unit(&mut units, spec)?;
        }
    }
    crate::budget::check()?;
    let changed = |items: Items<'_>, before: &[Value]| match items {
        Cow::Owned(items) if items.as_slice() != before => Some(items),
        _ => None,
    };
    Ok(OscChange {
        units: changed(units, units_in),
        files: changed(files, files_in),
    })
}

/// The index of the first item whose `key` is `value` (every item is a map,
/// see [`list`]).
fn first(items: &[Value], key: &str, value: &str) -> Option<usize> {
    items
        .iter()
        .position(|item| item.get(key).and_then(Value::as_str) == Some(value))
}

fn kubelet_unit(units: &mut Items<'_>, actions: &[&Action]) -> Result<(), OscError> {
    let Some(i) = first(units, "name", KUBELET_UNIT) else {
        return Ok(());
    };
    let content = match units[i].get("content") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::String(s)) => s.as_str(),
        Some(_) => {
            return Err(OscError::BadObject(format!(
                "field spec.units[{i}].content must be a string"
            )));
        }
    };
    let mut options = unit::deserialize(content).map_err(|e| match e {
        unit::UnitError::Exhausted(e) => OscError::Exhausted(e),
        unit::UnitError::Syntax(e) => OscError::Failed(format!(
            "unit {KUBELET_UNIT}: could not deserialize kubelet.service unit content: {e}"
        )),
    })?;
    if let Some(exec) = options
        .iter_mut()
        .find(|o| o.section == "Service" && o.name == "ExecStart")
    {
        let mut tokens = cmdline::split(&exec.value);
        crate::budget::charge(tokens.len() * std::mem::size_of::<Cow<'_, str>>())?;
        for action in actions {
            if let Action::KubeletFlag(f) = action {
                cmdline::ensure_token(&mut tokens, &f.flag, &f.value);
            }
        }
        let joined = cmdline::join(&tokens);
        drop(tokens);
        exec.value = Cow::Owned(joined);
    }
    for action in actions {
        if let Action::UnitOption(o) = action {
            let wanted = unit::UnitOption::new(&o.section, &o.name, o.value());
            if !options.contains(&wanted) {
                options.push(wanted);
            }
        }
    }
    // The unit written again is as long as the one read.
    crate::budget::charge(content.len())?;
    let serialized = unit::serialize(&options);
    if serialized != content {
        drop(options);
        writable(units)?[i]["content"] = Value::String(serialized);
    }
    Ok(())
}

/// The inline content of the first file at `path`: index, encoding, data.
fn inline_file<'v>(
    files: &'v [Value],
    path: &str,
) -> Result<Option<(usize, &'v str, &'v str)>, OscError> {
    let Some(i) = first(files, "path", path) else {
        return Ok(None);
    };
    let inline = match files[i].get("content").and_then(|c| c.get("inline")) {
        None | Some(Value::Null) => return Ok(None),
        Some(inline) => inline,
    };
    let field = |key: &str| match inline.get(key) {
        None | Some(Value::Null) => Ok(""),
        Some(Value::String(s)) => Ok(s.as_str()),
        Some(_) => Err(OscError::BadObject(format!(
            "field spec.files[{i}].content.inline.{key} must be a string"
        ))),
    };
    Ok(Some((i, field("encoding")?, field("data")?)))
}

fn decode_file(path: &str, encoding: &str, data: &str, what: &str) -> Result<Vec<u8>, OscError> {
    file::decode(encoding, data)
        .map_err(|e| OscError::Failed(format!("file {path}: could not decode {what}: {}", e.0)))
}

fn set_data(files: &mut Items<'_>, i: usize, data: String) -> Result<(), OscError> {
    if files[i]["content"]["inline"]["data"].as_str() != Some(data.as_str()) {
        writable(files)?[i]["content"]["inline"]["data"] = Value::String(data);
    }
    Ok(())
}

fn kubelet_config(
    files: &mut Items<'_>,
    actions: &[&Action],
    ctx: &OscContext<'_>,
) -> Result<(), OscError> {
    let Some((i, encoding, data)) = inline_file(files, KUBELET_CONFIG)? else {
        return Ok(());
    };
    let failed = |e: String| OscError::Failed(format!("file {KUBELET_CONFIG}: {e}"));
    let sets: String = actions
        .iter()
        .filter_map(|a| match a {
            Action::KubeletConfig(k) => Some(format!("{}={}\n", k.field, k.value)),
            _ => None,
        })
        .collect();
    let key = memo::Key::of(ctx.kubelet_library, encoding, data, sets);
    if let Some(encoded) = key.as_ref().and_then(|key| ctx.memo.get(key)) {
        return set_data(files, i, encoded);
    }
    let bytes = decode_file(KUBELET_CONFIG, encoding, data, "kubelet configuration")?;
    // What the codec makes of the text at most at once: the decoded tree,
    // its normalised copy, the YAML written and its encoding (measured: a
    // 5 MB configuration peaked at 99.5 MiB before this was counted).
    crate::budget::charge(KUBELET_COPIES * bytes.len())?;
    // Each pass below is linear but long for a long configuration (a 5 MB
    // one: tens of milliseconds each in a debug build); the deadline is
    // looked at between them.
    crate::budget::check()?;
    let text = String::from_utf8(bytes)
        .map_err(|_| failed("could not decode kubelet configuration: not UTF-8".into()))?;
    let mut config = kubelet::decode(&text, ctx.kubelet_library).map_err(|e| match e {
        kubelet::DecodeError::Exhausted(e) => OscError::Exhausted(e),
        kubelet::DecodeError::Config(e) => {
            failed(format!("could not decode kubelet configuration: {}", e.0))
        }
    })?;
    drop(text);
    crate::budget::check()?;
    // A value that is already there (gardenlet's own config has what most
    // providers set) changes nothing: no second pass over the struct.
    let mut touched = false;
    for action in actions {
        if let Action::KubeletConfig(k) = action {
            let path = k.path();
            if kubelet::get(&config, &path) != Some(&k.value) {
                kubelet::set(&mut config, &path, k.value.clone());
                touched = true;
            }
        }
    }
    if touched {
        config = kubelet::normalize(&Value::Object(config), ctx.kubelet_library)
            .map_err(|e| failed(format!("could not set kubelet configuration: {}", e.0)))?;
    }
    crate::budget::check()?;
    let yaml = kubelet::encode(&config);
    drop(config);
    crate::budget::check()?;
    let encoded = file::encode(encoding, yaml.as_bytes())
        .map_err(|e| failed(format!("could not encode kubelet configuration: {}", e.0)))?;
    if let Some(key) = key {
        ctx.memo.put(key, encoded.clone());
    }
    set_data(files, i, encoded)
}

fn sysctl_file(files: &mut Items<'_>, actions: &[&Action]) -> Result<(), OscError> {
    let Some((i, encoding, data)) = inline_file(files, SYSCTL_FILE)? else {
        return Ok(());
    };
    let bytes = decode_file(
        SYSCTL_FILE,
        encoding,
        data,
        "kubernetes general configuration",
    )?;
    // Bytes, not text: Go's strings keep what is not UTF-8, and so does the
    // file (a b64 file may hold any bytes). The new text and its encoding
    // are counted with the decoded one.
    crate::budget::charge(3 * bytes.len())?;
    let mut text = bytes;
    for action in actions {
        if let Action::Sysctl(s) = action {
            text = sysctl::ensure(&text, &s.key, &s.value, &s.comments);
        }
    }
    if text.is_empty() {
        return Ok(());
    }
    let encoded = file::encode(encoding, &text).map_err(|e| {
        OscError::Failed(format!(
            "file {SYSCTL_FILE}: could not encode kubernetes general configuration: {}",
            e.0
        ))
    })?;
    set_data(files, i, encoded)
}

/// A template variable's value (see [`ContentVar`]).
fn var_value(name: &str, var: &ContentVar, shoot: &ShootContext) -> Result<String, OscError> {
    let config = match var.config.config() {
        crate::profile::Config::Infrastructure => shoot.infrastructure_config(),
        crate::profile::Config::ControlPlane => shoot.control_plane_config(),
        crate::profile::Config::CloudProfile => shoot.cloud_profile_config(),
    };
    let field = config.and_then(|c| var.path.split('.').try_fold(c, |v, key| v.get(key)));
    let items: Vec<&str> = match field {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str().ok_or_else(|| {
                    OscError::Failed(format!(
                        "{}.{}: {i} is not a string (template variable {name})",
                        var.config.config().key(),
                        var.path
                    ))
                })
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(OscError::Failed(format!(
                "{}.{}: {other} is not a list of strings (template variable {name})",
                var.config.config().key(),
                var.path
            )));
        }
    };
    let mut text = if items.is_empty() {
        String::new()
    } else {
        format!("{}{}", var.prefix, items.join(&var.join))
    };
    if var.quote == Some(Quote::Go) {
        text = quote::go_quote(&text);
    }
    Ok(text)
}

/// `{{name}}` replaced by the file's variables, `{{namespace}}` and
/// `{{region}}` (all checked when the profile loaded).
fn render(text: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        match vars.get(after[..end].trim()) {
            Some(v) => out.push_str(v),
            None => out.push_str(&rest[start..start + 2 + end + 2]),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

/// The file of a `file` action; `None` when its ConfigMap does not exist.
fn build_file(spec: &FileSpec, ctx: &OscContext<'_>) -> Result<Option<Value>, OscError> {
    let mut file = Map::new();
    file.insert("path".into(), Value::String(spec.path.clone()));
    if let Some(mode) = spec.mode() {
        file.insert("permissions".into(), Value::from(mode));
    }
    let content = if let Some(image) = &spec.image_ref {
        let reference = image
            .image_for(ctx.shoot.kubernetes_version())
            .map_err(|e| OscError::Failed(format!("file {}: {e}", spec.path)))?;
        json!({"imageRef": {"image": reference, "filePathInImage": image.file_path_in_image}})
    } else {
        let text = if let Some(key) = &spec.config_map_key {
            match ctx
                .objects
                .get(&(ObjectKind::ConfigMap, key.namespace, key.name.clone()))
            {
                Some(ObjectData::ConfigMap { data, .. }) => data
                    .as_ref()
                    .and_then(|d| d.get(&key.key))
                    .cloned()
                    .unwrap_or_default(),
                _ => return Ok(None),
            }
        } else {
            let mut vars = BTreeMap::new();
            vars.insert("namespace".to_string(), ctx.shoot.cluster_name.clone());
            vars.insert("region".to_string(), ctx.shoot.region().to_string());
            for (name, var) in &spec.vars {
                vars.insert(name.clone(), var_value(name, var, ctx.shoot)?);
            }
            render(spec.content.as_deref().unwrap_or_default(), &vars)
        };
        let data = file::encode(&spec.encoding, text.as_bytes())
            .map_err(|e| OscError::Failed(format!("file {}: {}", spec.path, e.0)))?;
        json!({"inline": {"encoding": spec.encoding, "data": data}})
    };
    file.insert("content".into(), content);
    Ok(Some(Value::Object(file)))
}

fn place_file(files: &mut Items<'_>, file: Value, placement: Placement) -> Result<(), OscError> {
    let path = file.get("path").cloned();
    let same = |f: &Value| f.get("path") == path.as_ref();
    match placement {
        Placement::InPlace => match files.iter().position(same) {
            Some(i) if files[i] == file => {}
            Some(i) => writable(files)?[i] = file,
            None => writable(files)?.push(file),
        },
        Placement::MoveToEnd => {
            let at_end =
                files.iter().filter(|f| same(f)).count() == 1 && files.last() == Some(&file);
            if !at_end {
                let files = writable(files)?;
                files.retain(|f| !same(f));
                files.push(file);
            }
        }
    }
    Ok(())
}

fn append_unique_unit(units: &mut Items<'_>, spec: &UnitSpec) -> Result<(), OscError> {
    if units
        .iter()
        .any(|u| u.get("name").and_then(Value::as_str) == Some(spec.name.as_str()))
    {
        return Ok(());
    }
    let mut unit = Map::new();
    unit.insert("name".into(), Value::String(spec.name.clone()));
    if let Some(command) = &spec.command {
        unit.insert("command".into(), Value::String(command.clone()));
    }
    if let Some(enable) = spec.enable {
        unit.insert("enable".into(), Value::Bool(enable));
    }
    if let Some(content) = &spec.content {
        unit.insert("content".into(), Value::String(content.clone()));
    }
    writable(units)?.push(Value::Object(unit));
    Ok(())
}

/// The ConfigMaps the OSC rules may read (conditions and file contents), all
/// optional: a missing one is a fact, not an error.
pub fn config_maps_read(rules: &[Rule]) -> Vec<(NamespaceRef, String)> {
    let mut out = Vec::new();
    for rule in rules {
        if let Some(when) = &rule.when {
            when.config_maps(&mut out);
        }
        for action in &rule.actions {
            if let Action::File(spec) = action
                && let Some(key) = &spec.config_map_key
            {
                out.push((key.namespace, key.name.clone()));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}
