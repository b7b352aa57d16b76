//! Secrets: variables named like `*password*`, `*token*`, `*secret*` (or listed in env.yaml under
//! `secret_vars`, or holding a value that was vault-encrypted) never appear in what copctl prints or records. `Secret` is the type that
//! prints as `********`; `Redactor` masks known secret values inside any text.

use std::fmt;

use serde_json::Value;

pub const MASK: &str = "********";

/// Which variable names hold secrets.
#[derive(Debug, Clone, Default)]
pub struct SecretNames {
    listed: Vec<String>,
}

impl SecretNames {
    pub fn new(listed: Vec<String>) -> Self {
        SecretNames { listed }
    }

    /// More names to treat as secrets (variables that held vault-encrypted values).
    pub fn add(&mut self, names: impl IntoIterator<Item = String>) {
        for n in names {
            if !self.listed.contains(&n) {
                self.listed.push(n);
            }
        }
    }

    pub fn is_secret(&self, name: &str) -> bool {
        is_secret_name(name) || self.listed.iter().any(|l| l == name)
    }

    /// Replaces the values of secret keys, at any depth.
    pub fn mask(&self, v: &mut Value) {
        match v {
            Value::Object(m) => {
                for (k, val) in m.iter_mut() {
                    if self.is_secret(k) && !val.is_null() {
                        *val = Value::String(MASK.into());
                    } else {
                        self.mask(val);
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.mask(x)),
            _ => {}
        }
    }

    /// Every secret string value found in `v` (for a `Redactor`).
    pub fn collect_values(&self, v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, val) in m {
                    if self.is_secret(k) {
                        collect_strings(val, out);
                    } else {
                        self.collect_values(val, out);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| self.collect_values(x, out)),
            _ => {}
        }
    }
}

/// The text a registered result under a secret name carries (what a slurp read, what a
/// command printed), with and without surrounding whitespace: it is masked from then on.
pub fn result_secrets(result: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for k in ["content", "stdout", "stderr", "stdout_lines", "stderr_lines"] {
        if let Some(v) = result.get(k) {
            collect_strings(v, &mut out);
        }
    }
    let trimmed: Vec<String> = out.iter().map(|s| s.trim().to_string()).collect();
    out.extend(trimmed);
    out
}

fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) if !s.is_empty() => out.push(s.clone()),
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        Value::Object(m) => m.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

pub fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["password", "passwd", "token", "secret", "passphrase"].iter().any(|w| n.contains(w))
}

/// Masks secret-named values with the default naming rule.
pub fn mask_secret_values(v: &mut Value) {
    SecretNames::default().mask(v)
}

/// A secret string: Display and Debug print the mask, never the value.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }

    /// The value itself, for the one place that must send it (stdin of a remote process).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(MASK)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(MASK)
    }
}

/// Replaces known secret values in text. Longest first, so a secret containing another is
/// masked whole.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    values: Vec<String>,
}

impl Redactor {
    pub fn new(mut values: Vec<String>) -> Self {
        values.retain(|v| v.len() >= 3);
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Redactor { values }
    }

    /// Adds secret values learned during a run (a registered token, a secret fact).
    pub fn learn(&mut self, values: Vec<String>) {
        let mut all = std::mem::take(&mut self.values);
        all.extend(values);
        *self = Redactor::new(all);
    }

    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for v in &self.values {
            if out.contains(v.as_str()) {
                out = out.replace(v.as_str(), MASK);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn masks_by_name_and_value() {
        let names = SecretNames::new(vec!["harbor_auth".into()]);
        let mut v = json!({"registry_password": "pw1", "harbor_auth": "abc", "user": "admin",
                           "nested": {"join_token": "K10::x"}});
        let mut found = vec![];
        names.collect_values(&v, &mut found);
        names.mask(&mut v);
        assert_eq!(
            v,
            json!({"registry_password": MASK, "harbor_auth": MASK, "user": "admin",
                             "nested": {"join_token": MASK}})
        );
        let r = Redactor::new(found);
        assert_eq!(r.redact("login admin:pw1 token K10::x"), format!("login admin:{MASK} token {MASK}"));
        assert_eq!(format!("{} {:?}", Secret::new("pw1"), Secret::new("pw1")), format!("{MASK} {MASK}"));
    }
}
