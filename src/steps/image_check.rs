//! `image_check`: before a chart is installed on an air-gapped site, every image it would pull is
//! reachable the way containerd on the host will pull it. The images are what `helm template`
//! renders (container `image:` fields, and the GPU Operator's ClusterPolicy components as
//! `repository`/`image`/`version`, skipping components with `enabled: false`); each is resolved
//! through the host's RKE2 registries.yaml (mirror endpoints in order, `rewrite` rules, then the
//! upstream registry, as containerd falls back to it) and probed with the registry API (a HEAD
//! of the manifest, registries.yaml's credentials and CA). Not here: installing (`helm`).
//!
//! The registry password never reaches a command line: curl reads it from its config on stdin.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::helm::chart_args;
use super::kube::PRELUDE;
use super::{Flag, Guards, Kind, Outcome, StepCtx};
use crate::text::quote::shell_quote;

/// One chart whose images are checked, with the values it will be installed with.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ChartImages {
    pub chart: String,
    #[serde(default = "default_namespace")]
    pub namespace: String,
    pub version: Option<String>,
    #[serde(default)]
    pub set: IndexMap<String, Value>,
    /// false: the chart is not installed, its images not checked.
    pub enabled: Option<Flag>,
}

fn default_namespace() -> String {
    "default".into()
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ImageCheckArgs {
    #[serde(default)]
    pub charts: Vec<ChartImages>,
    /// Images checked besides the charts'.
    #[serde(default)]
    pub images: Vec<String>,
    /// RKE2's registries.yaml on the host (default /etc/rancher/rke2/registries.yaml); none:
    /// every image comes from its own registry.
    pub registries: Option<String>,
}

/// The part of RKE2's registries.yaml that decides where an image is pulled from.
#[derive(Debug, Default, Deserialize)]
struct Registries {
    #[serde(default)]
    mirrors: IndexMap<String, Mirror>,
    #[serde(default)]
    configs: IndexMap<String, RegistryConfig>,
}

#[derive(Debug, Default, Deserialize)]
struct Mirror {
    #[serde(default)]
    endpoint: Vec<String>,
    #[serde(default)]
    rewrite: IndexMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
struct RegistryConfig {
    auth: Option<Auth>,
    tls: Option<Tls>,
}

#[derive(Debug, Default, Deserialize)]
struct Auth {
    username: Option<String>,
    password: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Tls {
    ca_file: Option<String>,
    #[serde(default)]
    insecure_skip_verify: bool,
}

/// An image reference split as a registry client reads it: `docker.io/library/busybox:latest`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ImageRef {
    pub host: String,
    pub repo: String,
    /// A tag or a digest (`sha256:...`).
    pub reference: String,
}

/// Splits a reference with docker's defaults: no registry host is docker.io (one path
/// component is `library/`), no tag is `latest`.
pub(crate) fn parse_ref(image: &str) -> ImageRef {
    let (name, reference) = match image.split_once('@') {
        Some((n, d)) => (n, d.to_string()),
        None => match image.rsplit_once(':') {
            Some((n, t)) if !t.contains('/') => (n, t.to_string()),
            _ => (image, "latest".to_string()),
        },
    };
    let (host, repo) = match name.split_once('/') {
        Some((h, r)) if h.contains('.') || h.contains(':') || h == "localhost" => (h.to_string(), r.to_string()),
        _ => ("docker.io".to_string(), name.to_string()),
    };
    let repo = if host == "docker.io" && !repo.contains('/') { format!("library/{repo}") } else { repo };
    ImageRef { host, repo, reference }
}

/// The images of rendered manifests, in order, once each.
pub(crate) fn images_of(manifests: &str) -> Result<Vec<String>, String> {
    let docs: Vec<Option<Value>> = serde_saphyr::from_multiple(manifests).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for d in docs.iter().flatten() {
        walk(d, &mut out);
    }
    Ok(out)
}

fn walk(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            let off = |x: &Value| x == &json!(false) || x.as_str().is_some_and(|s| s.eq_ignore_ascii_case("false"));
            if m.get("enabled").is_some_and(off) {
                return;
            }
            if let Some(img) = m.get("image").and_then(Value::as_str).filter(|s| !s.is_empty() && !s.contains(' ')) {
                // The GPU Operator's ClusterPolicy: repository + image + version.
                let repo = m.get("repository").and_then(Value::as_str).filter(|s| !s.is_empty());
                let version = m.get("version").and_then(Value::as_str).filter(|s| !s.is_empty());
                let full = match (repo, version) {
                    (Some(r), Some(v)) if !img.contains(':') && !img.contains('@') => {
                        let sep = if v.starts_with("sha256:") { '@' } else { ':' };
                        format!("{}/{img}{sep}{v}", r.trim_end_matches('/'))
                    }
                    _ => img.to_string(),
                };
                if !out.contains(&full) {
                    out.push(full);
                }
            }
            for x in m.values() {
                walk(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
        _ => {}
    }
}

/// Where containerd looks for `r`: the mirror's endpoints (with its rewrites), then upstream.
/// Each is (manifest URL, registry host the configs are keyed by).
fn endpoints(reg: &Registries, r: &ImageRef) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(m) = reg.mirrors.get(&r.host).or_else(|| reg.mirrors.get("*")) {
        let mut repo = r.repo.clone();
        for (pat, with) in &m.rewrite {
            if let Ok(re) = regex::Regex::new(pat) {
                repo = re.replace(&repo, with.as_str()).into_owned();
            }
        }
        for e in &m.endpoint {
            let e = e.trim_end_matches('/');
            let base = if e.contains("://") { e.to_string() } else { format!("https://{e}") };
            let host = base.split_once("://").map(|(_, h)| h).unwrap_or(&base).split('/').next().unwrap_or("");
            let base = base.trim_end_matches("/v2");
            out.push((format!("{base}/v2/{repo}/manifests/{}", r.reference), host.to_string()));
        }
    }
    let up = if r.host == "docker.io" { "registry-1.docker.io" } else { r.host.as_str() };
    out.push((format!("https://{up}/v2/{}/manifests/{}", r.repo, r.reference), r.host.clone()));
    out.dedup();
    out
}

const ACCEPT: &str = "Accept: application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, \
     application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json";

/// A curl config value, double-quoted as curl's config reader unquotes it.
fn curl_quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The probe script: per image, each endpoint in turn until one answers 200 (an endpoint that
/// could not be reached is not tried again: its first answer stands for the rest). Prints
/// `PROBE image endpoint curl-rc http-code err`.
fn probe_script(reg: &Registries, images: &[ImageRef]) -> (String, Vec<Vec<String>>) {
    let mut ids: Vec<String> = Vec::new();
    let mut urls = Vec::new();
    let mut s = String::from("e=$(mktemp); trap 'rm -f \"$e\"' EXIT\n");
    for (i, r) in images.iter().enumerate() {
        let eps = endpoints(reg, r);
        urls.push(eps.iter().map(|(u, _)| u.clone()).collect());
        s.push_str("ok=0\n");
        for (j, (url, host)) in eps.iter().enumerate() {
            let base = url.split("/v2/").next().unwrap_or(url).to_string();
            let id = ids.iter().position(|b| *b == base).unwrap_or_else(|| {
                ids.push(base.clone());
                ids.len() - 1
            });
            let cfg = reg.configs.get(host);
            let mut opts = String::new();
            if let Some(t) = cfg.and_then(|c| c.tls.as_ref()) {
                if t.insecure_skip_verify {
                    opts.push_str(" -k");
                } else if let Some(ca) = t.ca_file.as_deref().filter(|c| !c.is_empty()) {
                    opts.push_str(&format!(" --cacert {}", shell_quote(ca)));
                }
            }
            let auth = cfg.and_then(|c| c.auth.as_ref()).and_then(|a| Some((a.username.as_deref()?, a.password.as_deref()?)));
            let (config, heredoc) = match auth {
                Some((u, p)) => (" -K -", format!(" <<'COPCTL_CURL_CONFIG'\nuser = {}\nCOPCTL_CURL_CONFIG\n", curl_quote(&format!("{u}:{p}")))),
                None => ("", "\n".to_string()),
            };
            s.push_str(&format!(
                "if [ $ok = 0 ] && [ -n \"$dead{id}\" ]; then echo \"PROBE {i} {j} $dead{id}\"; \
                 elif [ $ok = 0 ]; then \
                 c=$(curl -sS -o /dev/null -w '%{{http_code}}' -I --connect-timeout 5 --max-time 30 -H {accept}{opts}{config} {url} 2>\"$e\"{heredoc}); rc=$?\n\
                 r=\"$rc $c $(head -c 300 \"$e\" | tr '\\n' ' ')\"; case $rc in 6|7|28|35|60) dead{id}=$r;; esac; [ \"$c\" = 200 ] && ok=1\n\
                 echo \"PROBE {i} {j} $r\"; fi\n",
                accept = shell_quote(ACCEPT),
                url = shell_quote(url),
            ));
        }
    }
    (s, urls)
}

impl Kind for ImageCheckArgs {
    fn read_only(&self) -> bool {
        true
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let mut images: Vec<String> = Vec::new();
        let mut commands = Vec::new();
        for c in self.charts.iter().filter(|c| c.enabled.as_ref().is_none_or(Flag::get)) {
            let args = chart_args(&c.chart, &c.namespace, c.version.as_deref(), &c.set, None);
            let cmd = format!("helm template copctl-image-check {args}");
            let script = format!("{PRELUDE}H=$(command -v helm || echo /usr/local/bin/helm); $H template copctl-image-check {args}");
            let out = match cx.sh(&script, None).await {
                Ok(o) => o,
                Err(o) => return o,
            };
            commands.push(cmd);
            if !out.success() {
                let err = String::from_utf8_lossy(&out.stderr);
                let mut o = Outcome::failed(format!(
                    "helm template {}: {}; nothing was installed",
                    c.chart,
                    err.trim().lines().last().unwrap_or("failed")
                ))
                .with_output(&out);
                o.commands = commands;
                return o;
            }
            match images_of(&String::from_utf8_lossy(&out.stdout)) {
                Ok(found) => found.into_iter().for_each(|i| {
                    if !images.contains(&i) {
                        images.push(i)
                    }
                }),
                Err(e) => return Outcome::failed(format!("helm template {}: its output is no YAML: {e}", c.chart)),
            }
        }
        for i in &self.images {
            if !images.contains(i) {
                images.push(i.clone());
            }
        }
        if images.is_empty() {
            return Outcome::ok("no images to check");
        }
        let path = self.registries.as_deref().unwrap_or("/etc/rancher/rke2/registries.yaml");
        let read = match cx.sh(&format!("[ ! -e {p} ] || cat {p}", p = shell_quote(path)), None).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        if !read.success() {
            return Outcome::failed(format!("{path}: {}", String::from_utf8_lossy(&read.stderr).trim()));
        }
        let text = String::from_utf8_lossy(&read.stdout);
        let reg: Registries = if text.trim().is_empty() {
            Registries::default()
        } else {
            match serde_saphyr::from_str(&text) {
                Ok(r) => r,
                // serde's message could quote the file, which holds the registry password.
                Err(_) => return Outcome::failed(format!("{path} on {} is not the YAML RKE2 reads", cx.host)),
            }
        };
        let refs: Vec<ImageRef> = images.iter().map(|i| parse_ref(i)).collect();
        let (script, urls) = probe_script(&reg, &refs);
        commands.push(format!("curl -I <the manifest of each of {} image(s) through {path}>", images.len()));
        let out = match cx.sh(&script, None).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        // Per image, what each endpoint tried answered.
        let mut tried: Vec<Vec<String>> = vec![Vec::new(); images.len()];
        let mut found = vec![false; images.len()];
        for l in String::from_utf8_lossy(&out.stdout).lines() {
            let mut w = l.splitn(6, ' ');
            if w.next() != Some("PROBE") {
                continue;
            }
            let (Some(i), Some(j), Some(rc), Some(code)) = (
                w.next().and_then(|x| x.parse::<usize>().ok()),
                w.next().and_then(|x| x.parse::<usize>().ok()),
                w.next(),
                w.next(),
            ) else {
                continue;
            };
            let err = w.next().unwrap_or("").trim();
            if i >= images.len() {
                continue;
            }
            let url = urls[i].get(j).cloned().unwrap_or_default();
            let what = match (rc, code) {
                (_, "200") => {
                    found[i] = true;
                    continue;
                }
                ("0", "401") | ("0", "403") => format!("{code}: the registry refused registries.yaml's credentials"),
                ("0", "404") => "404: not there".to_string(),
                ("0", c) => format!("HTTP {c}"),
                (_, _) if !err.is_empty() => format!("unreachable ({err})"),
                (rc, _) => format!("unreachable (curl exit {rc})"),
            };
            tried[i].push(format!("{url}: {what}"));
        }
        let missing: Vec<usize> = (0..images.len()).filter(|i| !found[*i]).collect();
        let mut o = if missing.is_empty() {
            Outcome::ok(format!("{} image(s) reachable through the registry", images.len()))
        } else {
            let lines: Vec<String> = missing
                .iter()
                .map(|&i| {
                    let how = if tried[i].is_empty() { "not probed".to_string() } else { tried[i].join("; ") };
                    format!("{} ({how})", images[i])
                })
                .collect();
            Outcome::failed(format!(
                "{} of {} image(s) the charts use cannot be pulled through the registry: {}; push them to the \
                 registry (the paths above) and run again; nothing was installed",
                missing.len(),
                images.len(),
                lines.join(", ")
            ))
        };
        o.result.insert("images".into(), json!(images));
        o.result.insert("missing".into(), json!(missing.iter().map(|&i| images[i].clone()).collect::<Vec<_>>()));
        o.commands = commands;
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_get_dockers_defaults() {
        let r = parse_ref("busybox");
        assert_eq!((r.host.as_str(), r.repo.as_str(), r.reference.as_str()), ("docker.io", "library/busybox", "latest"));
        let r = parse_ref("nvcr.io/nvidia/gpu-operator:v25.10.0");
        assert_eq!((r.host.as_str(), r.repo.as_str(), r.reference.as_str()), ("nvcr.io", "nvidia/gpu-operator", "v25.10.0"));
        let r = parse_ref("registry.local:5000/a/b@sha256:abc");
        assert_eq!((r.host.as_str(), r.repo.as_str(), r.reference.as_str()), ("registry.local:5000", "a/b", "sha256:abc"));
        assert_eq!(parse_ref("bitnami/redis").repo, "bitnami/redis");
    }

    #[test]
    fn images_come_from_pod_specs_and_the_cluster_policy_skipping_disabled_components() {
        let m = "---\n# Source: a.yaml\n---\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n      \
                 - name: op\n        image: nvcr.io/nvidia/gpu-operator:v25.10.0\n---\nkind: ClusterPolicy\nspec:\n  \
                 driver:\n    enabled: false\n    repository: nvcr.io/nvidia\n    image: driver\n    version: \"580\"\n  \
                 toolkit:\n    enabled: true\n    repository: nvcr.io/nvidia/k8s\n    image: container-toolkit\n    \
                 version: v1.18.0\n  dcgm:\n    repository: nvcr.io/nvidia/cloud-native\n    image: dcgm\n    version: sha256:ff\n";
        assert_eq!(
            images_of(m).unwrap(),
            [
                "nvcr.io/nvidia/gpu-operator:v25.10.0",
                "nvcr.io/nvidia/k8s/container-toolkit:v1.18.0",
                "nvcr.io/nvidia/cloud-native/dcgm@sha256:ff"
            ]
        );
    }

    #[test]
    fn mirrors_come_first_with_their_rewrites_then_upstream() {
        let reg: Registries = serde_saphyr::from_str(
            "mirrors:\n  nvcr.io:\n    endpoint: [\"https://reg.example:8443\"]\n    rewrite:\n      \"^nvidia/(.*)\": \"nv/$1\"\n",
        )
        .unwrap();
        let e = endpoints(&reg, &parse_ref("nvcr.io/nvidia/gpu-operator:v1"));
        assert_eq!(
            e,
            [
                ("https://reg.example:8443/v2/nv/gpu-operator/manifests/v1".to_string(), "reg.example:8443".to_string()),
                ("https://nvcr.io/v2/nvidia/gpu-operator/manifests/v1".to_string(), "nvcr.io".to_string())
            ]
        );
    }
}
