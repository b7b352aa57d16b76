//! `helm`: a release upgraded or installed (`upgrade --install`). The desired release is hashed
//! into the revision's description, so an equal hash means nothing to do (no spurious upgrades).
//! A chart given as a file on the host (an air-gapped site's archive, `/path/chart-1.0.tgz`)
//! adds the archive's sha256 to that hash: the same name with other contents is an upgrade.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::kube::{PRELUDE, report};
use super::{Guards, Kind, Outcome, StepCtx};
use crate::template::shell_quote;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HelmArgs {
    pub release: String,
    pub chart: String,
    pub namespace: String,
    pub version: Option<String>,
    #[serde(default)]
    pub set: IndexMap<String, Value>,
    pub values: Option<String>,
    #[serde(default)]
    pub create_namespace: bool,
}

impl Kind for HelmArgs {
    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = self;
        let q = shell_quote;
        let mut args = format!("upgrade --install {} ", q(&a.release));
        args.push_str(&chart_args(&a.chart, &a.namespace, a.version.as_deref(), &a.set, a.values.as_deref()));
        if a.create_namespace {
            args.push_str(" --create-namespace");
        }
        // The desired release, hashed into the revision's description: equal hash, nothing to do.
        let digest = hex::encode(&Sha256::digest(args.as_bytes())[..8]);
        let script = format!(
            "{PRELUDE}H=$(command -v helm || echo /usr/local/bin/helm); CHECK={check}; \
             {archive}cur=$($H history {r} -n {ns} --max 1 -o json 2>/dev/null || true); \
             case \"$cur\" in *\"copctl-{digest}$sum\"*) echo 'NOTE release up to date'; exit 0;; esac; \
             echo 'CHANGED {r}'; [ $CHECK = 1 ] && exit 0; $H {args} --description \"copctl-{digest}$sum\"",
            check = cx.check as u8,
            r = q(&a.release),
            ns = q(&a.namespace),
            archive = if is_archive(&a.chart) {
                format!(
                    "if [ -f {c} ]; then sum=-$(sha256sum {c} | cut -c1-16); elif [ $CHECK = 1 ]; then sum=-new; \
                     else echo chart archive {c} is not on this host >&2; exit 1; fi; ",
                    c = q(&a.chart)
                )
            } else {
                "sum=; ".to_string()
            },
        );
        let out = match cx.sh(&script, None).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        let mut o = report(&out, &format!("helm {}", a.release));
        o.commands.push(format!("helm {args}"));
        o
    }
}

/// A chart given as a file rather than `repo/name`.
fn is_archive(chart: &str) -> bool {
    chart.starts_with('/') || chart.starts_with("./") || chart.ends_with(".tgz") || chart.ends_with(".tar.gz")
}

/// `CHART -n NS [--version V] [--set k=v]... [-f values]`, quoted, as `upgrade` and `template`
/// both take them.
pub(super) fn chart_args(
    chart: &str,
    namespace: &str,
    version: Option<&str>,
    set: &IndexMap<String, Value>,
    values: Option<&str>,
) -> String {
    let q = shell_quote;
    let mut args = format!("{} -n {}", q(chart), q(namespace));
    // A version means nothing to a chart archive (its own Chart.yaml says it).
    if let Some(v) = version.filter(|_| !is_archive(chart)) {
        args.push_str(&format!(" --version {}", q(v)));
    }
    for (k, v) in set {
        let v = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        args.push_str(&format!(" --set {}", q(&format!("{k}={v}"))));
    }
    if let Some(f) = values {
        args.push_str(&format!(" -f {}", q(f)));
    }
    args
}
