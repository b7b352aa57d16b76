//! Templates and `when:` expressions (minijinja, strict undefined, copctl's filters and tests).
#![no_main]
use std::sync::OnceLock;

use copctl::template::Templates;
use libfuzzer_sys::fuzz_target;

fn fixtures() -> &'static (Templates, minijinja::Value) {
    static F: OnceLock<(Templates, minijinja::Value)> = OnceLock::new();
    F.get_or_init(|| {
        let ctx = copctl::template::to_value(serde_json::json!({
            "a": 1, "b": [1, 2, 3], "c": {"d": "x y"}, "version": "v1.31.4+rke2r1",
            "registry_password": "secret", "hosts": {"h1": {"ip": "192.0.2.1"}}
        }));
        (Templates::new(None), ctx)
    })
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (t, ctx) = fixtures();
    let _ = t.render_str(&text, ctx);
    let _ = t.eval(&text, ctx);
});
