//! The documentation where the code is its source: the env.yaml reference page's table (keys,
//! example values, defaults, the playbooks that read them) is generated here and must match
//! the page; every `COPCTL_*` variable copctl reads is on the environment page; the README's
//! quick start runs on the example site. `COPCTL_BLESS=1` rewrites the generated parts.

mod common;

use std::collections::BTreeSet;

use common::*;
use regex::Regex;

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Keys the shipped playbooks read that the example env.yaml leaves out (their defaults apply).
const OPTIONAL_KEYS: &[&str] = &[
    "host_firewall",
    "keep_firewalld",
    "registry_mirrors",
    "registry_mirror_projects",
    "gpu_operator_chart_file",
    "gpu_dra_chart_file",
    "gpu_image_check",
];

/// The top-level keys of the example env.yaml, in its order, with their values as written.
fn example_keys() -> Vec<(String, String)> {
    let re = Regex::new(r"^([A-Za-z0-9_]+):\s*(.*)$").unwrap();
    read("inventory/env.yaml")
        .lines()
        .filter_map(|l| re.captures(l).map(|c| (c[1].to_string(), c[2].trim().to_string())))
        .collect()
}

/// Each shipped playbook's name and its text with that of the step lists it imports and the
/// templates it names: copctl's own reckoning, which also warns about env.yaml keys none reads.
fn playbook_texts() -> Vec<(String, String)> {
    let opts =
        copctl::site::SiteOptions { inventory: vec![repo().join("inventory/inventory.ini")], ..Default::default() };
    let site = copctl::site::Site::load(&opts).unwrap();
    assert!(site.playbooks.override_dir.is_none(), "the example site has no playbooks of its own");
    copctl::plan::env_keys::playbook_texts(&site)
}

/// A key's default: a playbook's top-level `vars:` entry, else a `KEY | default(X)` in a
/// playbook, step list or template.
fn default_of(key: &str, texts: &[(String, String)]) -> Option<String> {
    let var = Regex::new(&format!(r"(?m)^  {key}:\s*(.+)$")).unwrap();
    let dflt = Regex::new(&format!(r"\b{key}\s*\|\s*default\(([^)]*)\)")).unwrap();
    for (n, _) in texts {
        let own = read(&format!("playbooks/{n}.yaml"));
        let vars = own.split("\nvars:\n").nth(1).map(|v| v.split("\nplays:").next().unwrap_or(v).to_string());
        if let Some(c) = vars.as_deref().and_then(|v| var.captures(v)) {
            return Some(c[1].split(" #").next().unwrap().trim().to_string());
        }
    }
    texts.iter().find_map(|(_, t)| dflt.captures(t).map(|c| c[1].trim().to_string()))
}

fn env_keys_table() -> String {
    let texts = playbook_texts();
    let mut keys = example_keys().into_iter().map(|(k, v)| (k, Some(v))).collect::<Vec<_>>();
    keys.extend(OPTIONAL_KEYS.iter().map(|k| (k.to_string(), None)));
    let mut out = String::from("| key | example site | default | read by |\n|---|---|---|---|\n");
    for (k, example) in keys {
        let readers: Vec<String> =
            copctl::plan::env_keys::readers(&k, &texts).into_iter().map(|n| format!("`{n}`")).collect();
        let readers = match (k.as_str(), readers.is_empty()) {
            ("secret_vars", _) => "copctl: more variable names whose values are masked".to_string(),
            ("gpu_check_image" | "gpu_check_memory", _) => {
                "`copctl gpu check` (its defaults are `gpu-operator`'s vars)".to_string()
            }
            (_, true) => "no playbook: a variable of the site's own (a secret_vars example)".to_string(),
            _ => readers.join(", "),
        };
        let cell = |s: Option<String>| s.filter(|s| !s.is_empty()).map(|s| format!("`{}`", s.replace('|', "\\|")));
        out.push_str(&format!(
            "| `{k}` | {} | {} | {readers} |\n",
            cell(example).unwrap_or_else(|| "—".into()),
            cell(default_of(&k, &texts)).unwrap_or_else(|| "—".into()),
        ));
    }
    out
}

/// Checks (or with COPCTL_BLESS, writes) a generated part of a page, between its markers.
fn generated(page: &str, name: &str, want: &str) {
    let path = repo().join(page);
    let text = std::fs::read_to_string(&path).unwrap();
    let (start, end) = (format!("<!-- generated: {name} -->\n"), format!("<!-- end: {name} -->"));
    let a = text.find(&start).unwrap_or_else(|| panic!("{page} has no {start}")) + start.len();
    let b = text.find(&end).unwrap_or_else(|| panic!("{page} has no {end}"));
    if std::env::var_os("COPCTL_BLESS").is_some() {
        std::fs::write(&path, format!("{}{want}{}", &text[..a], &text[b..])).unwrap();
        return;
    }
    assert!(
        text[a..b] == *want,
        "{page}: the generated part '{name}' differs from the code; COPCTL_BLESS=1 cargo test --test docs \
         rewrites it\n--- expected\n{want}--- in the page\n{}",
        &text[a..b]
    );
}

#[test]
fn the_env_yaml_reference_matches_the_playbooks() {
    generated("docs/src/reference/env-yaml.md", "env-keys", &env_keys_table());
}

/// Every `COPCTL_*` environment variable copctl's code reads is on the environment page.
#[test]
fn every_copctl_variable_is_documented() {
    let re = Regex::new(r#"env(?:::var(?:_os)?\(|\s*=\s*)"(COPCTL_[A-Z_]+)""#).unwrap();
    let konst = Regex::new(r#"const [A-Z_]+: &str = "(COPCTL_[A-Z_]+)""#).unwrap();
    let mut found = BTreeSet::new();
    let mut stack = vec![repo().join("src")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                // Test modules read made-up variables of their own.
                let code = text.split("#[cfg(test)]").next().unwrap();
                for c in re.captures_iter(code).chain(konst.captures_iter(code)) {
                    found.insert(c[1].to_string());
                }
            }
        }
    }
    assert!(found.len() >= 8, "{found:?}");
    let page = read("docs/src/reference/environment.md");
    let missing: Vec<&String> = found.iter().filter(|v| !page.contains(&format!("`{v}`"))).collect();
    assert!(missing.is_empty(), "not in docs/src/reference/environment.md: {missing:?}");
}

/// The README's commands on the example site (its quick start): each `copctl validate` and
/// `copctl plan` line of its shell blocks runs in the repository, as a fresh clone has it, and
/// exits 0.
#[test]
fn the_readme_quick_start_runs_on_the_example_site() {
    let readme = read("README.md");
    let mut in_sh = false;
    let mut commands = Vec::new();
    for line in readme.lines() {
        let l = line.trim();
        if l.starts_with("```") {
            in_sh = l == "```sh";
            continue;
        }
        if in_sh && (l.starts_with("copctl validate") || l.starts_with("copctl plan")) {
            commands.push(l.split(" #").next().unwrap().trim().to_string());
        }
    }
    assert!(commands.iter().any(|c| c == "copctl validate"), "{commands:?}");
    assert!(commands.iter().any(|c| c.starts_with("copctl plan")), "{commands:?}");
    for c in commands {
        let args: Vec<&str> = c.split_whitespace().skip(1).collect();
        let ran = Test::repo().args(&args).run();
        if args[0] == "validate" {
            // Notes on the playbooks that need `-e` (node playbooks' node, etcd-restore's
            // snapshot), then the verdict.
            let (last, notes) =
                ran.stdout.trim_end().lines().collect::<Vec<_>>().split_last().map(|(l, n)| (*l, n.to_vec())).unwrap();
            assert!(
                notes.iter().all(|n| n.starts_with("note: node-") || n.starts_with("note: etcd-restore ")),
                "{c}: {}",
                ran.stdout
            );
            assert!(
                last.starts_with("ok: 9 host(s), 7 group(s), ") && last.ends_with("; nothing was run"),
                "{c}: {}",
                ran.stdout
            );
        }
    }
}

/// The man pages' ENVIRONMENT names every variable of the environment page's own table.
#[test]
fn the_man_pages_name_every_copctl_variable() {
    let page = read("docs/src/reference/environment.md");
    let own = page.split("## copctl's own").nth(1).unwrap().split("\n## ").next().unwrap();
    let vars: Vec<&str> =
        own.lines().filter_map(|l| l.strip_prefix("| `")).filter_map(|l| l.split('`').next()).collect();
    assert!(vars.len() >= 8, "{vars:?}");
    let man = Test::new().args(["man", "run"]).stderr("").run().stdout;
    let environment = man.split(".SH ENVIRONMENT").nth(1).unwrap().split(".SH FILES").next().unwrap();
    for v in vars {
        assert!(environment.contains(&format!("\\fB{v}\\fR")), "`copctl man run` ENVIRONMENT lacks {v}");
    }
}

/// The commands page's table: every command, what it does and the options of its own, from the
/// same clap definitions as `--help`.
fn commands_table() -> String {
    fn walk(cmd: &clap::Command, path: &str, out: &mut String) {
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let at = format!("{path} {}", sub.get_name());
            let own: Vec<String> = sub
                .get_arguments()
                .filter(|a| !a.is_hide_set() && !a.is_global_set() && a.get_id() != "help")
                .map(|a| match (a.get_long(), a.get_short()) {
                    (Some(l), _) => format!("`--{l}`"),
                    (None, Some(s)) => format!("`-{s}`"),
                    (None, None) => {
                        let name = a.get_value_names().and_then(|n| n.first()).map(|n| n.to_string());
                        format!("`<{}>`", name.unwrap_or_else(|| a.get_id().to_string().to_uppercase()))
                    }
                })
                .collect();
            let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default().replace('|', "\\|");
            out.push_str(&format!("| `{at}` | {about} | {} |\n", own.join(", ")));
            walk(sub, &at, out);
        }
    }
    let mut out = String::from("| command | what it does | its own options |\n|---|---|---|\n");
    walk(&<copctl::cli::args::Cli as clap::CommandFactory>::command(), "copctl", &mut out);
    out
}

#[test]
fn the_commands_reference_matches_the_command_line() {
    generated("docs/src/reference/commands.md", "commands", &commands_table());
}
