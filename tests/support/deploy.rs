//! Fixtures of the deploy tests: an extension, CA bundles, the CA bundle of
//! a stored configuration.
#![allow(dead_code)]

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use scion::deploy::Extension;
use serde_json::Value;

pub const MWC_PATH: &str =
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/scion-provider-aws";

pub fn extension() -> Extension {
    Extension::new("aws", "extension-provider-aws").unwrap()
}

pub fn ca(name: &str) -> Vec<u8> {
    rcgen::generate_simple_self_signed(vec![name.to_owned()])
        .unwrap()
        .cert
        .pem()
        .into_bytes()
}

/// The CA bundle of the configuration; every webhook entry must carry the
/// same one.
pub fn ca_bundle_of(body: &Value) -> Vec<u8> {
    let hooks = body["webhooks"].as_array().unwrap();
    let encoded = hooks[0]["clientConfig"]["caBundle"].as_str().unwrap();
    for hook in hooks {
        assert_eq!(
            hook["clientConfig"]["caBundle"].as_str(),
            Some(encoded),
            "{} carries another CA bundle",
            hook["name"]
        );
    }
    STANDARD.decode(encoded).unwrap()
}
