//! `helm`: a release upgraded or installed (`upgrade --install`). The desired release is hashed
//! into the revision's description, so an equal hash means nothing to do (no spurious upgrades).

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
        let mut args = format!("upgrade --install {} {} -n {}", q(&a.release), q(&a.chart), q(&a.namespace));
        if a.create_namespace {
            args.push_str(" --create-namespace");
        }
        if let Some(v) = &a.version {
            args.push_str(&format!(" --version {}", q(v)));
        }
        for (k, v) in &a.set {
            let v = match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            args.push_str(&format!(" --set {}", q(&format!("{k}={v}"))));
        }
        if let Some(f) = &a.values {
            args.push_str(&format!(" -f {}", q(f)));
        }
        // The desired release, hashed into the revision's description: equal hash, nothing to do.
        let digest = hex::encode(&Sha256::digest(args.as_bytes())[..8]);
        let script = format!(
            "{PRELUDE}H=$(command -v helm || echo /usr/local/bin/helm); CHECK={check}; \
             cur=$($H history {r} -n {ns} --max 1 -o json 2>/dev/null || true); \
             case \"$cur\" in *copctl-{digest}*) echo 'NOTE release up to date'; exit 0;; esac; \
             echo 'CHANGED {r}'; [ $CHECK = 1 ] && exit 0; $H {args} --description copctl-{digest}",
            check = cx.check as u8,
            r = q(&a.release),
            ns = q(&a.namespace),
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
