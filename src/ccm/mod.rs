//! Pure rendering of the cloud-controller-manager objects for a `ControlPlane`.
