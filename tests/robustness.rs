//! Bad input never panics: thousands of mutated inventories, patterns, env.yaml files, playbooks
//! and templates (deterministic, seeded) must each give a result or an error, never a panic.
//! The seeded, CI-sized companion of the cargo-fuzz targets in fuzz/ (scripts/fuzz.sh).

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};

use common::Rng;
use copctl::error::Source;
use copctl::inventory::Inventory;

/// Inserts, deletes or replaces a few characters, drawn from what the format finds meaningful.
fn mutate(rng: &mut Rng, text: &str, alphabet: &[char]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(chars.len() + 1);
        match rng.below(3) {
            0 => chars.insert(at.min(chars.len()), alphabet[rng.below(alphabet.len())]),
            1 if !chars.is_empty() => {
                chars.remove(at.min(chars.len() - 1));
            }
            _ if !chars.is_empty() => {
                let i = at.min(chars.len() - 1);
                chars[i] = alphabet[rng.below(alphabet.len())];
            }
            _ => {}
        }
    }
    chars.into_iter().collect()
}

fn no_panic<T>(what: &str, input: &str, f: impl FnOnce() -> T) {
    let r = catch_unwind(AssertUnwindSafe(f));
    assert!(r.is_ok(), "{what} panicked on input:\n{input}");
}

#[test]
fn mutated_inventories_and_patterns_never_panic() {
    let ini_alphabet: Vec<char> = "[]:=,#;\"'\\ \n\t01-9azAZ_.!&~*?@{}()".chars().collect();
    let mut rng = Rng(0x9E3779B97F4A7C15);
    let mut inputs = 0;
    // Every fixture, those in subdirectories (ansible-core's, public ones, refused ones) too.
    let mut fixtures = common::files_under(&common::fixture("inventory"));
    fixtures.sort();
    for (_, text) in fixtures {
        for _ in 0..400 {
            let m = mutate(&mut rng, &text, &ini_alphabet);
            inputs += 1;
            no_panic("the inventory parser", &m, || {
                if let Ok(inv) = Inventory::parse(Source::new("m.ini", m.clone())) {
                    let _ = copctl::report::inventory::list_json(&inv);
                    let _ = copctl::report::inventory::graph(&inv, "all");
                }
            });
        }
    }
    let inv = Inventory::load(&common::fixture("patterns.ini")).unwrap();
    let seeds =
        ["web[0:2]:&db:!web03", "~web0[1-3],db", "k8s[1:]:!gpu-?", "*.example.com", "all:!ungrouped", "web[-1]"];
    let pat_alphabet: Vec<char> = "[]:,&!~*?-0123456789webdgpu().+^$\\ ".chars().collect();
    for s in seeds {
        for _ in 0..1500 {
            let m = mutate(&mut rng, s, &pat_alphabet);
            inputs += 1;
            no_panic("the pattern engine", &m, || {
                let _ = inv.select(&m, None);
                let _ = inv.select("all", Some(&m));
            });
        }
    }
    assert!(inputs > 15_000, "{inputs}");
}

#[test]
fn mutated_yaml_playbooks_and_templates_never_panic() {
    let yaml_alphabet: Vec<char> = ":-[]{}\"'#&*!|>\t\n {}%0123456789abcxyz".chars().collect();
    let mut rng = Rng(0xD1B54A32D192ED03);
    let env = std::fs::read_to_string(common::repo().join("inventory/env.yaml")).unwrap();
    let pb = std::fs::read_to_string(common::repo().join("playbooks/rke2-install.yaml")).unwrap();
    for _ in 0..1500 {
        let m = mutate(&mut rng, &env, &yaml_alphabet);
        no_panic("the env.yaml loader", &m, || {
            copctl::vars::EnvFile::parse(Source::new("env.yaml", m.clone())).map(|_| ())
        });
        let m = mutate(&mut rng, &pb, &yaml_alphabet);
        no_panic("the playbook loader", &m, || {
            copctl::playbook::Playbook::parse("p", Source::new("p.yaml", m.clone())).map(|_| ())
        });
        let e = mutate(&mut rng, "a=1 b='x y' {\"c\": [1, 2]}", &yaml_alphabet);
        no_panic("the -e parser", &e, || copctl::vars::parse_extra_vars(std::slice::from_ref(&e)).map(|_| ()));
    }
    let t = copctl::template::Templates::new(None);
    let ctx = copctl::template::to_value(serde_json::json!({"a": 1, "b": [1, 2], "c": {"d": "x"}}));
    let tpl_alphabet: Vec<char> = "{}%#|()[]'\".,:=~+-*/ abcdefg0123".chars().collect();
    for _ in 0..3000 {
        let m = mutate(
            &mut rng,
            "{{ a + 1 }} {% for x in b %}{{ x | quote }}{% endfor %} {{ c.d | default('z') }}",
            &tpl_alphabet,
        );
        no_panic("the template engine", &m, || {
            let _ = t.render_str(&m, &ctx);
            let _ = t.eval(&m, &ctx);
        });
    }
}
