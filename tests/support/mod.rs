//! Shared support of the integration tests, one module per `src/` folder the
//! tests exercise. Each test binary compiles all of it and uses a part.
#![allow(dead_code, unused_imports)]

pub mod controller;
pub mod deploy;
pub mod hostile;
pub mod mutation;
pub mod render;
pub mod server;
pub mod state;
pub mod testbed;

pub use testbed::chart;
