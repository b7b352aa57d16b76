//! GPU sharing as the operators' manual describes it (chapter "Devices (GPU Sharing)"): what
//! copctl checks about it. `lint` reads workload manifests offline, with no cluster; it knows
//! nothing of a site, so it sits apart from the playbook engine.

pub mod lint;
