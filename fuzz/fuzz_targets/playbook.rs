//! Playbooks (the YAML model with every step kind's arguments).
#![no_main]
use copctl::error::Source;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data).into_owned();
    let _ = copctl::playbook::Playbook::parse("fuzz", Source::new("fuzz.yaml", text));
});
