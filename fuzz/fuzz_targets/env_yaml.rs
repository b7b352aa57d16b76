//! env.yaml, the site settings file.
#![no_main]
use copctl::error::Source;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data).into_owned();
    let _ = copctl::vars::EnvFile::parse(Source::new("env.yaml", text));
});
