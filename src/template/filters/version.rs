//! Ansible's `version` test (and its old name `version_compare`): LooseVersion's comparison
//! of dotted versions, StrictVersion's and semantic versions', as Ansible's test compares.

use minijinja::{Environment, ErrorKind};

pub(super) fn add(env: &mut Environment<'static>) {
    env.add_test("version_compare", version_test);
    env.add_test("version", version_test);
}

// Ansible's `x is version(y, '>=', strict=False, version_type=None)`: LooseVersion's
// comparison unless `strict` (StrictVersion's: `1.0a1` before `1.0`, anything else that
// is not `N.N[.N][aN|bN]` an error) or `version_type` (`loose`, `strict`, `semver`/`semantic`).
fn version_test(
    v: String,
    other: String,
    op: Option<String>,
    kw: minijinja::value::Kwargs,
) -> Result<bool, minijinja::Error> {
    use std::cmp::Ordering::*;
    let strict: Option<bool> = kw.get("strict")?;
    let kind: Option<String> = kw.get("version_type")?;
    kw.assert_all_used()?;
    let fail = |m: String| minijinja::Error::new(ErrorKind::InvalidOperation, m);
    if strict.is_some() && kind.is_some() {
        return Err(fail("version: give strict or version_type, not both".into()));
    }
    let kind = match (strict, kind.as_deref()) {
        (Some(true), _) => "strict",
        (_, Some(k)) => k,
        _ => "loose",
    };
    let o = match kind {
        "loose" => compare_versions(&v, &other),
        "strict" => strict_version(&v).zip(strict_version(&other)).map(|(a, b)| a.cmp(&b)).ok_or_else(|| {
            let bad = if strict_version(&v).is_none() { &v } else { &other };
            fail(format!("Version comparison failed: invalid version number '{bad}'"))
        })?,
        "semver" | "semantic" => {
            let parse = |s: &str| {
                semver::Version::parse(s)
                    .map_err(|_| fail(format!("Version comparison failed: invalid semantic version '{s}'")))
            };
            parse(&v)?.cmp_precedence(&parse(&other)?)
        }
        k => {
            return Err(fail(format!(
                "version: version_type {k:?} is not one copctl compares (loose, strict, semver, semantic)"
            )));
        }
    };
    Ok(match op.as_deref().unwrap_or("==") {
        ">=" | "ge" => o != Less,
        ">" | "gt" => o == Greater,
        "<=" | "le" => o != Greater,
        "<" | "lt" => o == Less,
        "==" | "eq" | "=" => o == Equal,
        "!=" | "ne" | "<>" => o != Equal,
        other => {
            return Err(minijinja::Error::new(
                ErrorKind::InvalidOperation,
                format!("unknown version operator {other}"),
            ));
        }
    })
}

/// Compares dotted versions numerically (`580.95.05` > `565.57.01`, `v1.31.4+rke2r1` < `v1.32.0`).
/// Python's StrictVersion as an ordered key: `N.N[.N]` and a pre-release `aN`/`bN`, which comes
/// before the release (none: after every pre-release).
fn strict_version(s: &str) -> Option<([u64; 3], (u8, char, u64))> {
    static STRICT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:([ab])(\d+))?$").expect("a valid pattern")
    });
    let c = STRICT.captures(s)?;
    let n = |i: usize| c.get(i).map_or(Some(0), |m| m.as_str().parse().ok());
    let pre = match c.get(4) {
        Some(l) => (0, l.as_str().chars().next()?, n(5)?),
        None => (1, ' ', 0),
    };
    Some(([n(1)?, n(2)?, n(3)?], pre))
}

pub fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    let parts = |s: &str| -> Vec<u64> {
        s.trim_start_matches('v')
            .split(|c: char| !c.is_ascii_digit())
            .filter(|p| !p.is_empty())
            .map(|p| p.parse().unwrap_or(0))
            .collect()
    };
    let (x, y) = (parts(a), parts(b));
    for i in 0..x.len().max(y.len()) {
        let o = x.get(i).copied().unwrap_or(0).cmp(&y.get(i).copied().unwrap_or(0));
        if o != std::cmp::Ordering::Equal {
            return o;
        }
    }
    std::cmp::Ordering::Equal
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::template::{NoHosts, Templates, host_context, to_value};

    #[test]
    fn version_test() {
        let t = Templates::new(None);
        let ctx = host_context(
            &t,
            "h",
            crate::inventory::Vars::new(),
            to_value(serde_json::json!({})),
            &[],
            Arc::new(NoHosts),
        );
        assert!(t.eval("'580.95.05' is version('565.57.01', '>=')", &ctx).unwrap().is_true());
        assert!(!t.eval("'550.1' is version('565.57.01', '>=')", &ctx).unwrap().is_true());
        assert!(t.eval("'v1.31.4+rke2r1' is version('v1.32.0', '<')", &ctx).unwrap().is_true());
    }
}
