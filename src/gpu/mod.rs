//! GPU sharing as the operators' manual describes it (chapter "Devices (GPU Sharing)"): what
//! copctl checks about it. `lint` reads workload manifests offline, with no cluster; `cluster`
//! reads the cluster's DRA objects as kubectl lists them, `status` answers the chapter's
//! questions from them, `check` proves on each GPU node that claims are allocated and shared;
//! `smi` reads what nvidia-smi prints.

pub mod check;
pub mod cluster;
pub mod lint;
pub mod smi;
pub mod status;
