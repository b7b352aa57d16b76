//! `-e` extra variables: k=v words, JSON/YAML mappings (one argument per line of input).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let args: Vec<String> = text.split('\n').filter(|a| !a.trim().starts_with('@')).map(str::to_string).collect();
    let _ = copctl::vars::parse_extra_vars(&args);
});
