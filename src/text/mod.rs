//! Text helpers every layer uses: Python's `repr` of a string, `fnmatch` and `shlex.quote`, and
//! the test for template syntax. The lowest layer beside `error`: it imports nothing of the crate,
//! so that settings, the vault and the inventory can use them without reaching up to `template`.

pub mod fnmatch;
pub mod python;
pub mod quote;
