//! Declarative provider profiles.

/// Names of the built-in provider profiles.
pub const BUILTIN_PROVIDERS: &[&str] = &["alicloud", "aws", "azure", "gcp", "openstack"];
