//! copctl: an Ansible-compatible orchestrator for installing and operating OPENMARU COP (RKE2,
//! Harbor, NVIDIA GPU Operator). Data flows one way: load → select → plan → execute → report.

pub mod cli;
pub mod error;
pub mod inventory;
pub mod plan;
pub mod playbook;
pub mod site;
pub mod template;
pub mod vars;
pub mod yaml;
