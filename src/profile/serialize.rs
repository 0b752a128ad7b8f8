//! Writing a validated profile back in the documented schema: the inverse of
//! [`super::Profile::from_yaml`], so a profile round-trips (parse → write →
//! parse gives an equal profile). Conditions come out in their compiled form:
//! several keys of one `when` map are written as an explicit `all:` list.

use serde_json::{Map, Value, json};

use super::condition::{Condition, FieldTest};
use super::{Profile, ProfileError, Rule};

impl Profile {
    /// The profile as YAML in the documented schema.
    pub fn to_yaml(&self) -> Result<String, ProfileError> {
        let fail = |message: String| ProfileError::Other {
            file: self.source.clone(),
            message,
        };
        let mut top = Map::new();
        top.insert("provider".into(), json!(self.provider));
        if let Some(d) = &self.description {
            top.insert("description".into(), json!(d));
        }
        let mut components = Map::new();
        for (component, rules) in &self.components {
            let rules = rules
                .iter()
                .map(rule_value)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| fail(format!("component {component}: {e}")))?;
            components.insert((*component).to_string(), Value::Array(rules));
        }
        top.insert("components".into(), Value::Object(components));
        if let Some(ccm) = &self.ccm {
            top.insert("ccm".into(), ccm.clone());
        }
        serde_saphyr::to_string(&Value::Object(top)).map_err(|e| fail(e.to_string()))
    }
}

fn rule_value(rule: &Rule) -> Result<Value, String> {
    let mut out = Map::new();
    out.insert("name".into(), json!(rule.name));
    if let Some(d) = &rule.description {
        out.insert("description".into(), json!(d));
    }
    if let Some(c) = &rule.when {
        out.insert("when".into(), condition_value(c));
    }
    if let Some(c) = &rule.container {
        out.insert("container".into(), json!(c));
    }
    let actions = rule
        .actions
        .iter()
        .map(|a| serde_json::to_value(a).map_err(|e| format!("rule {:?}: {e}", rule.name)))
        .collect::<Result<Vec<_>, _>>()?;
    out.insert("actions".into(), Value::Array(actions));
    Ok(Value::Object(out))
}

fn condition_value(c: &Condition) -> Value {
    match c {
        Condition::Kubernetes(range) => json!({"kubernetes": range.to_string()}),
        Condition::WorkerKubernetes { pool, range } => {
            let mut w = Map::new();
            if let Some(pool) = pool {
                w.insert("pool".into(), json!(pool));
            }
            w.insert("range".into(), json!(range.to_string()));
            json!({"workerKubernetes": w})
        }
        Condition::Ipv6(b) => json!({"ipv6": b}),
        Condition::AnnotationTrue(key) => json!({"annotation": key}),
        Condition::InfrastructureConfig { path, test } => {
            let mut f = Map::new();
            f.insert("path".into(), json!(path.join(".")));
            match test {
                FieldTest::Equals(v) => f.insert("equals".into(), v.clone()),
                FieldTest::NotFalse => f.insert("notFalse".into(), json!(true)),
            };
            json!({"infrastructureConfig": f})
        }
        Condition::All(list) => {
            json!({"all": list.iter().map(condition_value).collect::<Vec<_>>()})
        }
        Condition::Any(list) => {
            json!({"any": list.iter().map(condition_value).collect::<Vec<_>>()})
        }
        Condition::Not(inner) => json!({"not": condition_value(inner)}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_condition_and_action_form_round_trips() {
        let yaml = r#"
provider: x
description: all forms
components:
  kube-controller-manager:
    - name: a
      description: d
      container: other
      when:
        kubernetes: ">= 1.31, < 1.34"
        workerKubernetes: {pool: p, range: "< 1.30"}
        ipv6: false
        annotation: x.io/a
        infrastructureConfig: {path: a.b, equals: {c: [1]}}
        any: [{not: {ipv6: true}}, {infrastructureConfig: {path: z, notFalse: true}}]
        all: [{workerKubernetes: {range: "= 1.2"}}]
      actions:
        - ensureFlag: {flag: "--a=", value: "{{region}}", in: args}
        - removeFlag: {flag: "--b="}
        - replaceFlag: {remove: "--c", flag: "--c=", value: "false"}
        - ensureListItem: {flag: "--d=", item: x, separator: ";"}
        - removeListItem: {flag: "--d=", item: y}
        - ensureEnv: {name: E, value: "1"}
        - removeEnv: {name: F}
        - ensureVolumeMount: {name: m, mountPath: /m}
        - removeVolumeMount: {name: n}
        - ensureVolume: {name: v, emptyDir: {}}
        - removeVolume: {name: w}
        - ensureContainer: {name: c}
        - removeContainer: {name: d}
        - setLabel: {key: k, value: v}
        - deleteLabel: {key: l}
        - setAnnotation: {key: k, value: v}
        - deleteAnnotation: {key: l}
        - secretChecksum: {name: s}
        - configMapChecksum: {name: cm}
        - providerSidecar:
            provider: provider-x
            image: x:1
            workloadIdentity: true
            workloadIdentityLabels: {a: b}
            extraArgs: [--z=1]
  machine-controller-manager-vpa:
    - name: vpa
      actions:
        - ensureVpaContainerPolicy: {containerName: c, controlledValues: RequestsOnly}
        - removeVpaContainerPolicy: {containerName: d}
ccm:
  anything: [1, {deep: true}]
"#;
        let p = Profile::from_yaml("x.yaml", yaml).unwrap();
        let written = p.to_yaml().unwrap();
        let again = Profile::from_yaml("x.yaml", &written).unwrap();
        assert_eq!(p, again, "{written}");
        // Each action kind of the schema is in the example.
        let kinds: std::collections::BTreeSet<&str> = p
            .components
            .iter()
            .flat_map(|(_, rules)| {
                rules
                    .iter()
                    .flat_map(|r| r.actions.iter().map(|a| a.kind()))
            })
            .collect();
        assert_eq!(kinds.len(), 22, "{kinds:?}");
    }
}
