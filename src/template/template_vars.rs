//! What Ansible's template module and lookup add to a task's variables for a template file:
//! `template_host`, `template_path`, `template_fullpath`, `template_uid`, `template_destpath`
//! and `ansible_managed` (ansible.cfg's, formatted and dated as Python's code does it).

use std::collections::BTreeMap;
use std::path::Path;

use minijinja::value::Value;
use minijinja::{Environment, ErrorKind};

use super::render::render_text;
use super::{Syntax, Templates, clock};
use crate::text::python::py_repr;

/// The global holding ansible.cfg's `ansible_managed`, where the site sets one.
pub(super) const MANAGED: &str = "__copctl_ansible_managed";

impl Templates {
    /// The names Ansible's template module adds for a template file (`template_file_vars`).
    pub fn template_file_vars(
        &self,
        vars: &Value,
        path: &str,
        full: &Path,
        dest: Option<&str>,
    ) -> Result<Value, minijinja::Error> {
        template_file_vars(&self.env, vars, path, full, dest)
    }
}

/// What Ansible's template module and lookup add to the task's variables for a template file
/// (`path` as the task named it, `full` where it was found): `template_host` (the bastion's
/// name), `template_path`, `template_fullpath`, `template_uid` (the file's owner),
/// `template_destpath` (the module's), and `ansible_managed` where `vars` has none: ansible.cfg's
/// (Python's `str.format` of it with `{file}`, `{host}` and `{uid}` as those variables, then
/// `time.strftime` at the file's modification time, then rendered as a template), else its
/// default "Ansible managed". Not `template_run_date` or `template_mtime` (datetimes).
pub(super) fn template_file_vars(
    env: &Environment<'_>,
    vars: &Value,
    path: &str,
    full: &Path,
    dest: Option<&str>,
) -> Result<Value, minijinja::Error> {
    use std::os::unix::fs::MetadataExt;
    let fail = |msg: String| minijinja::Error::new(ErrorKind::InvalidOperation, msg);
    // The bastion's name, read once a run (every host's every template asks for it).
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let host = HOST.get_or_init(|| std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default());
    let meta = std::fs::metadata(full).ok();
    let uid = meta.as_ref().map(|m| m.uid());
    let owner = uid.map(|u| user_name(u).map_or_else(|| Value::from(u), Value::from));
    let mut names: BTreeMap<&str, Value> = BTreeMap::from([
        ("template_host", Value::from(host.trim())),
        ("template_path", Value::from(path)),
        ("template_fullpath", Value::from(full.display().to_string())),
    ]);
    if let Some(o) = owner {
        names.insert("template_uid", o);
    }
    if let Some(d) = dest {
        names.insert("template_destpath", Value::from(d));
    }
    if vars.get_attr("ansible_managed").is_ok_and(|v| !v.is_undefined()) {
        return Ok(Value::from(names));
    }
    let format = env.globals().find(|(k, _)| *k == MANAGED).map(|(_, v)| v.to_string());
    let managed = match format {
        None => Value::from("Ansible managed"),
        Some(f) => {
            let text = python_format(&f, &|k| match k {
                "file" => Some("{{ template_path }}"),
                "host" => Some("{{ template_host }}"),
                "uid" => Some("{{ template_uid }}"),
                _ => None,
            })
            .map_err(|e| fail(format!("ansible.cfg's ansible_managed: {e}")))?;
            let mtime = meta.as_ref().map_or(0, |m| m.mtime());
            let at = chrono::DateTime::from_timestamp(mtime, 0).unwrap_or_default();
            let text = clock::python_strftime(&at.with_timezone(&chrono::Local).naive_local(), &text)?;
            let ctx = minijinja::context! { ..Value::from(names.clone()), ..vars.clone() };
            Value::from(render_text(env, "ansible_managed", &text, &ctx, &Syntax::default())?)
        }
    };
    names.insert("ansible_managed", managed);
    Ok(Value::from(names))
}

/// The bastion's name for user `uid` (Python's `pwd.getpwuid(uid).pw_name`).
fn user_name(uid: u32) -> Option<String> {
    let mut buf = vec![0 as libc::c_char; 4096];
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is to memory owned here and sized as passed.
    let rc = unsafe { libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr(), buf.len(), &mut found) };
    if rc != 0 || found.is_null() {
        return None;
    }
    // SAFETY: getpwuid_r filled pw_name with a NUL-terminated string inside buf.
    Some(unsafe { std::ffi::CStr::from_ptr(pw.pw_name) }.to_string_lossy().into_owned())
}

/// Python's `str.format` with named fields only (`{{`/`}}` a brace): a field `value` does not
/// know is Python's KeyError, in its words.
fn python_format(text: &str, value: &dyn Fn(&str) -> Option<&'static str>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let (c, after) = (rest.as_bytes()[i], &rest[i + 1..]);
        if after.as_bytes().first() == Some(&c) {
            out.push(c as char);
            rest = &after[1..];
        } else if c == b'}' {
            return Err("Single '}' encountered in format string".into());
        } else {
            let end = after.find('}').ok_or("Single '{' encountered in format string")?;
            let field = &after[..end];
            out.push_str(value(field).ok_or_else(|| format!("KeyError: {}", py_repr(field)))?);
            rest = &after[end + 1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansible_managed_is_pythons_format_of_the_setting() {
        let v = |k: &str| match k {
            "file" => Some("F"),
            "host" => Some("H"),
            _ => None,
        };
        assert_eq!(python_format("{file} on {host} {{literal}} %Y", &v).unwrap(), "F on H {literal} %Y");
        assert_eq!(python_format("by {user}", &v).unwrap_err(), "KeyError: 'user'");
        assert_eq!(python_format("a } b", &v).unwrap_err(), "Single '}' encountered in format string");
        assert_eq!(python_format("a { b", &v).unwrap_err(), "Single '{' encountered in format string");
    }
}
