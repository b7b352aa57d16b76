//! Text helpers every layer uses: Python's `repr` of a string, `fnmatch` and `shlex.quote`, the
//! test for template syntax, and the names closest to a misspelt one. The lowest layer beside
//! `error`: it imports nothing of the crate, so that settings, the vault and the inventory can use
//! them without reaching up to `template`.

pub mod closest;
pub mod fnmatch;
pub mod python;
pub mod quote;
