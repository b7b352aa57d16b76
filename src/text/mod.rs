//! Text rules that sit below every other layer: what a loader (yaml.rs, the vault, the
//! inventory) must know about a text without rendering it.

pub mod python;
