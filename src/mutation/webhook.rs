//! The shell around the pure engine: the [`Mutator`] the HTTPS server calls.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::apply::Objects;
use super::dispatch::dispatch;
use super::engine::{Engine, kind_word};
use crate::admission::{AdmissionRequest, Denial, Mutator, Operation, Verdict};
use crate::state::StateSource;

/// Mutates control-plane objects with an [`Engine`], reading the shoot context
/// and the needed Secrets/ConfigMaps from a [`StateSource`].
#[derive(Clone)]
pub struct WebhookMutator {
    engine: Engine,
    state: Arc<dyn StateSource>,
}

impl WebhookMutator {
    pub fn new(engine: Engine, state: Arc<dyn StateSource>) -> Self {
        WebhookMutator { engine, state }
    }

    async fn decide(&self, request: &AdmissionRequest) -> Result<Verdict, Denial> {
        if !matches!(request.operation, Operation::Create | Operation::Update) {
            return Ok(Verdict::Unchanged);
        }
        let Some(object) = request.object.as_ref() else {
            return Err(Denial::BadObject(format!(
                "{} request for {} has no object",
                request.operation.as_str(),
                request.kind.kind
            )));
        };
        let Ok(target) = dispatch(&request.kind, object) else {
            return Ok(Verdict::Unchanged);
        };
        let namespace = if request.namespace.is_empty() {
            object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or_default()
        } else {
            request.namespace.as_str()
        };
        let shoot = self
            .state
            .shoot(namespace)
            .map_err(|e| Denial::Forbidden(e.to_string()))?;
        let mut objects = Objects::new();
        for (kind, name) in self.engine.needs(target, &shoot) {
            match self.state.object(kind, namespace, &name).await {
                Ok(Some(data)) => {
                    objects.insert((kind, name), data);
                }
                Ok(None) => {
                    return Err(Denial::Forbidden(format!(
                        "could not get {} '{namespace}/{name}': not found",
                        kind_word(kind)
                    )));
                }
                Err(e) => return Err(Denial::Forbidden(e.to_string())),
            }
        }
        let mutation = self.engine.mutate(target, object, &shoot, &objects)?;
        if &mutation.object == object {
            Ok(Verdict::Unchanged)
        } else {
            Ok(Verdict::Mutated(mutation.object))
        }
    }
}

impl Mutator for WebhookMutator {
    fn mutate<'a>(
        &'a self,
        request: &'a AdmissionRequest,
    ) -> BoxFuture<'a, Result<Verdict, Denial>> {
        Box::pin(self.decide(request))
    }
}
