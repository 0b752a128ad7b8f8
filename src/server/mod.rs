//! The HTTPS admission server and the plain-HTTP health and metrics listeners.
