//! Ansible's `urlsplit` filter: Python's urllib.parse.urlsplit, its parts as a mapping or the
//! one asked for (`'https://h:8443/p' | urlsplit('port')`). Python's rules, not a URL
//! standard's: the scheme only where it is one, the netloc after `//`, no normalisation.

use minijinja::value::Value;
use minijinja::{Environment, Error, ErrorKind};

fn fail(msg: String) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg)
}

pub fn add(env: &mut Environment<'static>) {
    env.add_filter("urlsplit", |url: String, query: Option<String>| -> Result<Value, Error> {
        let parts = split(&url)?;
        match query.filter(|q| !q.is_empty()) {
            None => Ok(Value::from_object(
                parts.into_iter().map(|(k, v)| (Value::from(k), v)).collect::<indexmap::IndexMap<_, _>>(),
            )),
            Some(q) => parts
                .into_iter()
                .find(|(k, _)| *k == q)
                .map(|(_, v)| v)
                .ok_or_else(|| fail(format!("urlsplit: unknown URL component: {q}"))),
        }
    });
}

/// The parts, in the order Ansible's mapping has them (sorted by name).
fn split(url: &str) -> Result<Vec<(&'static str, Value)>, Error> {
    // Python strips leading C0 controls and spaces, and removes tabs and newlines anywhere.
    let url: String =
        url.trim_start_matches(|c: char| c <= ' ').chars().filter(|c| !matches!(c, '\t' | '\r' | '\n')).collect();
    let mut rest = url.as_str();
    let mut scheme = String::new();
    if let Some(i) = rest.find(':')
        && i > 0
        && rest.as_bytes()[0].is_ascii_alphabetic()
        && rest[..i].chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        scheme = rest[..i].to_ascii_lowercase();
        rest = &rest[i + 1..];
    }
    let mut netloc = "";
    if let Some(r) = rest.strip_prefix("//") {
        let end = r.find(['/', '?', '#']).unwrap_or(r.len());
        netloc = &r[..end];
        rest = &r[end..];
        if netloc.contains('[') != netloc.contains(']') {
            return Err(fail("urlsplit: Invalid IPv6 URL".into()));
        }
    }
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (userinfo, hostinfo) = match netloc.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, netloc),
    };
    let (username, password) = match userinfo {
        None => (Value::from(()), Value::from(())),
        Some(u) => match u.split_once(':') {
            Some((n, p)) => (Value::from(n), Value::from(p)),
            None => (Value::from(u), Value::from(())),
        },
    };
    let (host, port) = match hostinfo.split_once('[') {
        Some((_, bracketed)) => {
            let (h, after) = bracketed.split_once(']').unwrap_or((bracketed, ""));
            (h, after.split_once(':').map_or("", |(_, p)| p))
        }
        None => hostinfo.split_once(':').unwrap_or((hostinfo, "")),
    };
    let hostname = if host.is_empty() {
        Value::from(())
    } else {
        // Lower case, except an IPv6 zone after `%`.
        let (h, zone) = host.split_once('%').map_or((host, None), |(h, z)| (h, Some(z)));
        Value::from(match zone {
            Some(z) => format!("{}%{z}", h.to_lowercase()),
            None => h.to_lowercase(),
        })
    };
    let port = if port.is_empty() {
        Value::from(())
    } else if port.bytes().all(|b| b.is_ascii_digit()) {
        let n: u64 = port.parse().unwrap_or(u64::MAX);
        if n > 65535 {
            return Err(fail("urlsplit: Port out of range 0-65535".into()));
        }
        Value::from(n)
    } else {
        return Err(fail(format!("urlsplit: Port could not be cast to integer value as '{port}'")));
    };
    Ok(vec![
        ("fragment", Value::from(fragment)),
        ("hostname", hostname),
        ("netloc", Value::from(netloc)),
        ("password", password),
        ("path", Value::from(path)),
        ("port", port),
        ("query", Value::from(query)),
        ("scheme", Value::from(scheme)),
        ("username", username),
    ])
}

#[cfg(test)]
mod tests {
    fn render(t: &str) -> String {
        let mut env = minijinja::Environment::new();
        super::add(&mut env);
        env.render_str(t, minijinja::context! {}).unwrap_or_else(|e| format!("error: {}", e.detail().unwrap_or("")))
    }

    #[test]
    fn urls_split_as_pythons_urlsplit_splits_them() {
        let all = render("{{ 'HTTPS://User:pw@Host.Example:8443/p/a?q=1#f' | urlsplit | tojson }}");
        assert_eq!(
            all,
            r#"{"fragment": "f", "hostname": "host.example", "netloc": "User:pw@Host.Example:8443", "password": "pw", "path": "/p/a", "port": 8443, "query": "q=1", "scheme": "https", "username": "User"}"#
        );
        assert_eq!(render("{{ '//[fe80::1%eth0]:22/x' | urlsplit('hostname') }}"), "fe80::1%eth0");
        assert_eq!(render("{{ 'path/only?x' | urlsplit('path') }}"), "path/only");
        assert_eq!(render("{{ '1http://x' | urlsplit('scheme') }}"), "");
        assert_eq!(render("{{ 'http://x' | urlsplit('port') }}"), "None");
        assert_eq!(render("{{ 'http://x' | urlsplit('nope') }}"), "error: urlsplit: unknown URL component: nope");
        assert_eq!(render("{{ 'http://x:99999' | urlsplit }}"), "error: urlsplit: Port out of range 0-65535");
    }
}
