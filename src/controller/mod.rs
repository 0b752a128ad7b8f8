//! The `ControlPlane` reconciler: a thin shell around [`crate::ccm`].
