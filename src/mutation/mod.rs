//! The mutation engine: applies a provider profile to a control-plane object.
