//! Certificates: development CA generation, loading, live reload.
