//! Installation manifests and webhook registration.
