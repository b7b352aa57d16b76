//! copctl: an Ansible-compatible orchestrator for installing and operating OPENMARU COP (RKE2,
//! Harbor, NVIDIA GPU Operator). Data flows one way: load → select → plan → execute → report.

pub mod ansible_cfg;
pub mod cli;
pub mod descriptors;
pub mod error;
pub mod gpu;
pub mod inventory;
pub mod plan;
pub mod playbook;
pub mod procedures;
pub mod report;
pub mod run;
pub mod secret;
pub mod site;
pub mod steps;
pub mod template;
pub mod text;
pub mod transport;
pub mod vars;
pub mod vault;
pub mod yaml;

/// The async runtime of a command that talks to hosts.
pub fn runtime() -> error::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| error::Error::plain(format!("cannot start the async runtime: {e}")))
}
