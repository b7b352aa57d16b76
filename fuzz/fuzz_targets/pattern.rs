//! Host patterns and --limit against a fixed inventory (groups, ranges, names with dots).
#![no_main]
use std::sync::OnceLock;

use copctl::error::Source;
use copctl::inventory::Inventory;
use libfuzzer_sys::fuzz_target;

const INVENTORY: &str = "[web]\nweb[01:05].example.com\n[db]\ndb1 ansible_host=192.0.2.10\ndb2\n\
[k8s:children]\nweb\ndb\n[gpu]\ngpu-[1:3]\n[all:vars]\nx=1\n";

fn inventory() -> &'static Inventory {
    static INV: OnceLock<Inventory> = OnceLock::new();
    INV.get_or_init(|| Inventory::parse(Source::new("fuzz.ini", INVENTORY.to_string())).expect("the fixed inventory"))
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (pattern, limit) = text.split_once('\n').unwrap_or((&text, ""));
    let _ = inventory().select(pattern, None);
    let _ = inventory().select("all", Some(limit));
    let _ = inventory().select(pattern, Some(limit));
});
