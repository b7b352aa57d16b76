//! Secrets: variables named like `*password*`, `*token*`, `*secret*` (or listed in env.yaml under
//! `secret_vars`, or holding a value that was vault-encrypted) never appear in what copctl prints or records. `Secret` is the type that
//! prints as `********`; `Redactor` masks known secret values inside any text.

use std::fmt;
use std::sync::{Arc, Mutex};

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

/// Replaces known secret values in text, and the common encodings of each (see `encodings`).
/// Longest first, so a secret containing another is masked whole.
///
/// This is the second line of defence: text rendered from a template that reads a secret
/// variable is withheld before it reaches any output (`template::take_secret_reads`); what
/// still passes here is what copctl cannot see the origin of (a command's own output, a
/// value copied under another name).
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// The secrets as learned, each once.
    secrets: Vec<String>,
    /// What is masked: every secret and its encodings, longest first.
    values: Vec<String>,
    /// Text the site's templates computed from secrets, learned as it is rendered.
    derived: Option<Arc<DerivedSecrets>>,
}

/// Text computed from secrets (`(api_token ~ ':x') | b64encode`, `signing_key[:12]`,
/// `password | regex_replace(...)`), learned by the templates as they render it and masked by
/// every `Redactor` given it from then on, with its encodings: what a host prints back of it
/// (an `echo`, a registered stdout) is as secret as the secret it came from. Shared by the
/// site's templates and the run's redactor, so a value is masked before the step that rendered
/// it reports anything.
#[derive(Debug, Default)]
pub struct DerivedSecrets {
    /// The texts learned, each once, and their encodings longest first (what is masked).
    state: Mutex<(std::collections::HashSet<String>, Arc<Vec<String>>)>,
}

impl DerivedSecrets {
    /// Adds texts computed from secrets. Shorter than `MIN_DERIVED` characters, a text is not
    /// masked as such: it would mask ordinary words (the step that rendered it still shows its
    /// template source, not the text).
    pub fn learn(&self, texts: impl IntoIterator<Item = String>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (learned, values) = &mut *state;
        for t in texts {
            if t.chars().count() < MIN_DERIVED || learned.contains(&t) {
                continue;
            }
            // Each encoding into its place, longest first: a run learning a value per host
            // neither copies nor sorts the whole list each time (the list is copied only while
            // a redactor holds the previous one).
            let list = Arc::make_mut(values);
            for e in encodings(&t).into_iter().filter(|e| e.len() >= 3) {
                if let Err(at) = list.binary_search_by(|x| e.len().cmp(&x.len()).then_with(|| x.cmp(&e))) {
                    list.insert(at, e);
                }
            }
            learned.insert(t);
        }
    }

    /// What is masked now, longest first.
    pub fn values(&self) -> Arc<Vec<String>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).1.clone()
    }
}

/// The shortest text computed from a secret that is masked as a secret (a slice `key[:4]`).
pub const MIN_DERIVED: usize = 4;

fn longest_first(v: &mut Vec<String>) {
    v.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    v.dedup();
}

impl Redactor {
    pub fn new(secrets: Vec<String>) -> Self {
        let mut r = Redactor::default();
        r.learn(secrets);
        r
    }

    /// Adds secret values learned during a run (a registered token, a secret fact).
    pub fn learn(&mut self, secrets: Vec<String>) {
        let mut added = false;
        for s in secrets {
            if s.len() >= 3 && !self.secrets.contains(&s) {
                self.values.extend(encodings(&s));
                self.secrets.push(s);
                added = true;
            }
        }
        if added {
            self.values.retain(|v| v.len() >= 3);
            longest_first(&mut self.values);
        }
    }

    /// Masks, besides its own secrets, what `derived` learns from now on.
    pub fn with_derived(mut self, derived: Arc<DerivedSecrets>) -> Self {
        self.derived = Some(derived);
        self
    }

    pub fn redact(&self, text: &str) -> String {
        let derived = self.derived.as_ref().map(|d| d.values()).unwrap_or_default();
        // One pass over both lists, longest first: a slice of a secret masked before the
        // secret itself would leave the secret's rest in clear.
        let (mut a, mut b) = (self.values.iter().peekable(), derived.iter().peekable());
        let mut out = text.to_string();
        loop {
            let v = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x.len() >= y.len() => a.next(),
                (Some(_), Some(_)) | (None, Some(_)) => b.next(),
                (Some(_), None) => a.next(),
                (None, None) => break,
            };
            if let Some(v) = v
                && out.contains(v.as_str())
            {
                out = out.replace(v.as_str(), MASK);
            }
        }
        out
    }
}

/// A secret as it appears after the usual transformations, all masked: itself; shell-quoted
/// as the `quote` filter writes it (the body between the outer quotes, so a quoted word that
/// holds more than the secret is caught too); JSON-escaped without the outer quotes (as is,
/// with non-ASCII escaped as Ansible's `to_json` writes it, and minijinja's HTML-safe `tojson`); base64, standard and URL-safe, padded and
/// not; URL-encoded as `urlencode` writes it; upper- and lower-case.
pub fn encodings(secret: &str) -> Vec<String> {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let json = serde_json::to_string(secret).unwrap_or_default();
    let json = json.strip_prefix('"').and_then(|j| j.strip_suffix('"')).unwrap_or(&json).to_string();
    let html_safe_json =
        json.replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026").replace('\'', "\\u0027");
    // Ansible's `to_json` (Python's json.dumps) escapes every character past `~` as \uXXXX.
    let ascii_json: String = json
        .chars()
        .flat_map(|c| {
            if (c as u32) > 0x7e {
                let mut buf = [0u16; 2];
                c.encode_utf16(&mut buf).iter().map(|u| format!("\\u{u:04x}")).collect::<Vec<_>>()
            } else {
                vec![c.to_string()]
            }
        })
        .collect();
    let mut out = vec![
        secret.to_string(),
        crate::text::quote::quoted_body(secret),
        json,
        html_safe_json,
        ascii_json,
        urlencode(secret),
        secret.to_uppercase(),
        secret.to_lowercase(),
    ];
    for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
        out.push(engine.encode(secret.as_bytes()));
    }
    out.sort();
    out.dedup();
    out
}

/// Percent-encoding as minijinja's (and Jinja2's) `urlencode` filter writes it: every byte
/// but ASCII letters, digits and `/ . - _` as `%XX` (upper-case hex; a space is `%20`).
pub fn urlencode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"/.-_".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
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

    /// A secret with a quote, a space, `$`, a backslash, HTML-special and non-ASCII characters;
    /// its base64 has a `/` (`_` URL-safe) and padding.
    const PW: &str = "pä'ss w$rd\\1<&ÿ?!";

    fn masked(text: &str) -> String {
        Redactor::new(vec![PW.into()]).redact(text)
    }

    #[test]
    fn masks_the_secret_shell_quoted() {
        // As the `quote` filter writes it, alone and inside a longer quoted word.
        assert_eq!(masked(r#"echo 'pä'"'"'ss w$rd\1<&ÿ?!'"#), format!("echo '{MASK}'"));
        assert_eq!(masked(r#"echo 'user:pä'"'"'ss w$rd\1<&ÿ?!@h'"#), format!("echo 'user:{MASK}@h'"));
    }

    #[test]
    fn masks_the_secret_json_escaped() {
        assert_eq!(masked(r#"{"pw": "pä'ss w$rd\\1<&ÿ?!"}"#), format!(r#"{{"pw": "{MASK}"}}"#));
        // minijinja's `tojson` is HTML-safe: < > & ' as \u escapes.
        assert_eq!(masked(r#"pw="pä\u0027ss w$rd\\1\u003c\u0026ÿ?!""#), format!(r#"pw="{MASK}""#));
    }

    #[test]
    fn masks_the_secret_in_base64_standard_and_url_safe_padded_or_not() {
        for b64 in [
            "cMOkJ3NzIHckcmRcMTwmw78/IQ==",
            "cMOkJ3NzIHckcmRcMTwmw78/IQ",
            "cMOkJ3NzIHckcmRcMTwmw78_IQ==",
            "cMOkJ3NzIHckcmRcMTwmw78_IQ",
        ] {
            assert_eq!(masked(&format!("auth {b64} end")), format!("auth {MASK} end"), "{b64}");
        }
    }

    #[test]
    fn masks_the_secret_url_encoded() {
        assert_eq!(urlencode(PW), "p%C3%A4%27ss%20w%24rd%5C1%3C%26%C3%BF%3F%21");
        assert_eq!(urlencode("a-b_c.d/e f"), "a-b_c.d/e%20f");
        assert_eq!(masked("https://u:p%C3%A4%27ss%20w%24rd%5C1%3C%26%C3%BF%3F%21@h/"), format!("https://u:{MASK}@h/"));
    }

    #[test]
    fn masks_the_secret_in_upper_and_lower_case() {
        assert_eq!(masked("PÄ'SS W$RD\\1<&Ÿ?!"), MASK);
        let r = Redactor::new(vec!["MiXeD-Secret".into()]);
        assert_eq!(r.redact("MIXED-SECRET mixed-secret MiXeD-Secret"), format!("{MASK} {MASK} {MASK}"));
    }

    #[test]
    fn learned_secrets_get_their_encodings_too() {
        let mut r = Redactor::new(vec!["first-secret".into()]);
        r.learn(vec!["K10::tok'en".into()]);
        assert_eq!(r.redact(r#"a 'K10::tok'"'"'en' b SzEwOjp0b2snZW4="#), format!("a '{MASK}' b {MASK}"));
        assert_eq!(r.redact("FIRST-SECRET"), MASK);
        // Short values are not masked (they would mask ordinary words), nor their encodings.
        assert_eq!(Redactor::new(vec!["ab".into()]).redact("ab AB YWI"), "ab AB YWI");
    }

    #[test]
    fn derived_values_are_masked_longest_first_whatever_order_they_are_learned_in() {
        let d = Arc::new(DerivedSecrets::default());
        let r = Redactor::new(vec!["sk_live_51HqLyjWDarjtT1zdp7dc".into()]).with_derived(d.clone());
        // A slice learned before a longer slice: the longer is masked whole, not its tail left.
        d.learn(["sk_live_51Hq".to_string()]);
        d.learn(["sk_live_51HqLyjWD".to_string(), "abc".to_string()]);
        assert_eq!(r.redact("a sk_live_51HqLyjWD b sk_live_51Hq abc"), format!("a {MASK} b {MASK} abc"));
        // The secret itself stays masked whole, before any slice of it.
        assert_eq!(r.redact("sk_live_51HqLyjWDarjtT1zdp7dc"), MASK);
        let v = d.values();
        assert!(v.windows(2).all(|w| w[0].len() >= w[1].len()), "longest first: {v:?}");
    }
}
