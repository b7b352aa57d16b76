//! `copctl gpu lint`: workload manifests checked offline against the chapter's "Common Mistakes"
//! and its YAML rules, reported as compilers report (`FILE:LINE: error: …` and a `help:` line).
//! Errors are what Kubernetes rejects or what can never work; warnings are legal but probably not
//! what was meant. The rules are in `pods` (a pod's claims) and `claims` (the DRA objects).

mod claims;
mod objects;
mod pods;
pub mod tree;

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};
use objects::Object;

/// The device class the NVIDIA DRA driver publishes (the chapter's examples).
pub const DRIVER_CLASSES: &[&str] = &["gpu.nvidia.com"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// One finding, at the line of the key it is about.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub file: String,
    pub line: usize,
    pub severity: Severity,
    /// A short name of the rule, for filtering the JSON output.
    pub rule: &'static str,
    pub message: String,
    pub help: String,
}

/// A manifest file's name (as given; `<stdin>` for `-`) and text.
pub struct Input {
    pub name: String,
    pub text: String,
}

/// What the lint found, in file order, by line.
#[derive(Debug, Serialize)]
pub struct Report {
    pub findings: Vec<Finding>,
    pub errors: usize,
    pub warnings: usize,
    pub objects: usize,
    pub files: usize,
}

/// The manifests `paths` name: files, directories (their `*.yaml` and `*.yml`, recursively, in
/// name order, hidden ones left out), `-` for standard input.
pub fn read_inputs(paths: &[PathBuf]) -> Result<Vec<Input>> {
    let mut inputs = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text)?;
            inputs.push(Input { name: "<stdin>".into(), text });
        } else if p.is_dir() {
            for f in yaml_files(p)? {
                inputs.push(read(&f)?);
            }
        } else {
            inputs.push(read(p)?);
        }
    }
    Ok(inputs)
}

fn read(p: &Path) -> Result<Input> {
    let text = std::fs::read_to_string(p).map_err(|e| {
        Error::with_help(
            format!("cannot read {}: {e}", p.display()),
            "give manifest files, directories of them, or - for standard input",
        )
    })?;
    Ok(Input { name: p.display().to_string(), text })
}

fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::plain(format!("cannot read the directory {}: {e}", dir.display())))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
        .collect();
    entries.sort();
    let mut out = Vec::new();
    for p in entries {
        if p.is_dir() {
            out.extend(yaml_files(&p)?);
        } else if p.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(p);
        }
    }
    Ok(out)
}

/// Checks every object of `inputs`; `classes` are the cluster's device classes besides the
/// driver's (`--device-class`).
pub fn lint(inputs: &[Input], classes: &[String]) -> Report {
    let mut findings = Vec::new();
    let mut docs = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        match tree::documents(&input.text) {
            Ok(d) => docs.push((i, d)),
            Err((line, message)) => findings.push(Finding {
                file: input.name.clone(),
                line,
                severity: Severity::Error,
                rule: "yaml",
                message: format!("not valid YAML: {message}"),
                help: "fix the YAML: kubectl cannot read the file either".into(),
            }),
        }
    }
    let all: Vec<Object> = docs.iter().flat_map(|(i, d)| objects::objects(*i, d)).collect();
    let mut known: Vec<String> = DRIVER_CLASSES.iter().map(|s| s.to_string()).collect();
    known.extend(classes.iter().cloned());
    // A DeviceClass among the manifests exists once they are applied.
    known.extend(all.iter().filter(|o| o.kind == "DeviceClass").map(|o| o.name.clone()));
    let mut cx = Cx { inputs, objects: &all, classes: known, findings };
    for o in &all {
        claims::check(&mut cx, o);
        if let Some(p) = objects::pod_spec(o) {
            pods::check(&mut cx, &p);
        }
    }
    let mut findings = cx.findings;
    // In the order the files were given, then by line (a stable sort keeps each line's order).
    let order = |f: &Finding| inputs.iter().position(|i| i.name == f.file).unwrap_or(usize::MAX);
    findings.sort_by_key(|f| (order(f), f.line));
    findings.dedup();
    let errors = findings.iter().filter(|f| f.severity == Severity::Error).count();
    Report { errors, warnings: findings.len() - errors, findings, objects: all.len(), files: inputs.len() }
}

/// What the rules share: every object (for references across documents and files), the known
/// device classes, the findings so far.
struct Cx<'i, 'a> {
    inputs: &'i [Input],
    objects: &'i [Object<'a>],
    classes: Vec<String>,
    findings: Vec<Finding>,
}

impl Cx<'_, '_> {
    fn add(&mut self, o: &Object, line: usize, severity: Severity, rule: &'static str, message: String, help: String) {
        let file = self.inputs[o.file].name.clone();
        self.findings.push(Finding { file, line, severity, rule, message: format!("{}: {message}", o.label()), help });
    }

    fn error(&mut self, o: &Object, line: usize, rule: &'static str, message: String, help: String) {
        self.add(o, line, Severity::Error, rule, message, help);
    }

    fn warning(&mut self, o: &Object, line: usize, rule: &'static str, message: String, help: String) {
        self.add(o, line, Severity::Warning, rule, message, help);
    }
}

/// The closest of `names` to `name`, where one is close enough to be a slip of the keyboard.
fn closest<'n>(name: &str, names: impl IntoIterator<Item = &'n str>) -> Option<&'n str> {
    let others: Vec<&str> = names.into_iter().filter(|n| *n != name).collect();
    crate::text::closest::closest(name, others, 1).first().copied()
}

/// The report as compilers print it: each finding and its help, then a summary line.
pub fn human(r: &Report) -> String {
    let mut out = String::new();
    for f in &r.findings {
        let sev = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        out.push_str(&format!("{}:{}: {sev}: {}\n  help: {}\n", f.file, f.line, f.message, f.help));
    }
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let checked = format!("{} in {}", plural(r.objects, "object"), plural(r.files, "file"));
    if r.findings.is_empty() {
        out.push_str(&format!("gpu lint: no problems ({checked})\n"));
    } else {
        out.push_str(&format!(
            "gpu lint: {}, {} ({checked})\n",
            plural(r.errors, "error"),
            plural(r.warnings, "warning")
        ));
    }
    out
}
