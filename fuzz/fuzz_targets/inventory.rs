//! The INI inventory parser, then what `inventory list` and `graph` make of the result.
#![no_main]
use copctl::error::Source;
use copctl::inventory::Inventory;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data).into_owned();
    if let Ok(inv) = Inventory::parse(Source::new("fuzz.ini", text)) {
        let _ = copctl::report::inventory::list_json(&inv);
        let _ = copctl::report::inventory::graph(&inv, "all");
        let _ = inv.select("all", None);
    }
});
