//! Jinja2's and Ansible's text, number and path filters that minijinja lacks, each as the
//! Python original computes it (sizes, float results, `comment`'s layout), so a site's
//! templates render the same text under copctl as under Ansible. The path tests and `relpath`
//! look at the bastion, as Ansible's run on the controller.

use std::path::{Component, Path, PathBuf};

use minijinja::value::{Kwargs, Rest, Value, ValueKind};
use minijinja::{Environment, Error, ErrorKind};

fn fail(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg.into())
}

fn number(v: &Value, filter: &str) -> Result<f64, Error> {
    match v.kind() {
        ValueKind::Number => {
            f64::try_from(v.clone()).map_err(|_| fail(format!("{filter}() can only be used on numbers")))
        }
        _ => Err(fail(format!("{filter}() can only be used on numbers"))),
    }
}

pub fn add(env: &mut Environment<'static>) {
    env.add_filter("comment", comment);
    env.add_filter("center", |s: String, width: Option<usize>| center(&s, width.unwrap_or(80)));
    // Jinja2: the number of words (`\w+`).
    env.add_filter("wordcount", |s: String| -> usize {
        regex::Regex::new(r"\w+").expect("static regex").find_iter(&s).count()
    });
    env.add_filter("truncate", truncate);
    env.add_filter("human_readable", human_readable);
    env.add_filter("human_to_bytes", human_to_bytes);
    env.add_filter("log", |x: Value, base: Option<Value>| -> Result<f64, Error> {
        let x = number(&x, "log")?;
        Ok(match base {
            None => x.ln(),
            Some(b) => match number(&b, "log")? {
                10.0 => x.log10(),
                b => x.ln() / b.ln(),
            },
        })
    });
    env.add_filter("pow", |x: Value, y: Value| -> Result<f64, Error> {
        Ok(number(&x, "pow")?.powf(number(&y, "pow")?))
    });
    env.add_filter("root", |x: Value, base: Option<Value>| -> Result<f64, Error> {
        let x = number(&x, "root")?;
        match base {
            None => Ok(x.sqrt()),
            Some(b) => match number(&b, "root")? {
                2.0 => Ok(x.sqrt()),
                b => Ok(x.powf(1.0 / b)),
            },
        }
    });
    // itertools.product: every combination, one item from each list, as lists.
    env.add_filter("product", |first: Value, rest: Rest<Value>| -> Result<Value, Error> {
        let mut out: Vec<Vec<Value>> = vec![vec![]];
        for list in std::iter::once(&first).chain(rest.iter()) {
            let items: Vec<Value> = list.try_iter()?.collect();
            out = out
                .iter()
                .flat_map(|prefix| {
                    items.iter().map(move |x| {
                        let mut p = prefix.clone();
                        p.push(x.clone());
                        p
                    })
                })
                .collect();
        }
        Ok(Value::from(out.into_iter().map(Value::from).collect::<Vec<_>>()))
    });
    env.add_filter("to_uuid", |s: String, namespace: Option<String>| -> Result<String, Error> {
        to_uuid(&s, namespace.as_deref().unwrap_or("361E6D51-FAEC-444A-9079-341386DA8E2E"))
    });
    env.add_filter("relpath", |path: String, start: Option<String>| -> Result<String, Error> {
        relpath(&path, start.as_deref().unwrap_or("."))
    });
    env.add_filter("path_join", |v: Value| -> Result<String, Error> {
        match v.kind() {
            ValueKind::String => Ok(v.as_str().unwrap_or_default().to_string()),
            ValueKind::Seq | ValueKind::Iterable => {
                let parts = v
                    .try_iter()?
                    .map(|p| p.as_str().map(str::to_string).ok_or_else(|| fail(format!("path_join: {p} is not text"))))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(path_join(&parts))
            }
            other => Err(fail(format!("|path_join expects string or sequence, got {other} instead."))),
        }
    });
    env.add_filter("realpath", |path: String| -> Result<String, Error> { realpath(&path) });
    for (name, test) in [
        ("directory", Path::is_dir as fn(&Path) -> bool),
        ("is_dir", Path::is_dir),
        ("file", Path::is_file),
        ("is_file", Path::is_file),
        ("link", Path::is_symlink),
        ("is_link", Path::is_symlink),
        ("exists", Path::exists),
        ("link_exists", |p: &Path| p.symlink_metadata().is_ok()),
    ] {
        env.add_test(name, move |p: String| test(Path::new(&p)));
    }
}

/// Ansible's `comment`: the text as a comment block in one of its styles, every part
/// overridable (`decoration`, `prefix`, `postfix`, their counts, `beginning`, `end`, `newline`).
fn comment(text: String, style: Option<String>, kw: Kwargs) -> Result<String, Error> {
    let style = style.unwrap_or_else(|| "plain".into());
    let (beginning, decoration, end) = match style.as_str() {
        "plain" => ("", "# ", ""),
        "erlang" => ("", "% ", ""),
        "c" => ("", "// ", ""),
        "cblock" => ("/*", " * ", " */"),
        "xml" => ("<!--", " - ", "-->"),
        other => return Err(fail(format!("comment: invalid style '{other}' (plain, erlang, c, cblock, xml)"))),
    };
    let given = |k: &str| -> Result<Option<String>, Error> { kw.get::<Option<String>>(k) };
    let prepostfix = given("decoration")?.unwrap_or_else(|| decoration.to_string());
    let newline = given("newline")?.unwrap_or_else(|| "\n".into());
    let beginning = given("beginning")?.unwrap_or_else(|| beginning.into());
    let prefix = given("prefix")?.unwrap_or_else(|| prepostfix.trim_end().to_string());
    let postfix = given("postfix")?.unwrap_or_else(|| prepostfix.trim_end().to_string());
    // Ansible's own style table sets `decoration` over the (empty) default for every style.
    let decoration = given("decoration")?.unwrap_or_else(|| decoration.to_string());
    let end = given("end")?.unwrap_or_else(|| end.into());
    let prefix_count = kw.get::<Option<usize>>("prefix_count")?.unwrap_or(1);
    let postfix_count = kw.get::<Option<usize>>("postfix_count")?.unwrap_or(1);
    kw.assert_all_used()?;
    let mut out = String::new();
    if !beginning.is_empty() {
        out += &format!("{beginning}{newline}");
    }
    if !prefix.is_empty() {
        let one = if prefix != newline { format!("{prefix}{newline}") } else { newline.clone() };
        out += &one.repeat(prefix_count);
    }
    let body = format!("{decoration}{}", text.replace(&newline, &format!("{newline}{decoration}")));
    out += &body.replace(&format!("{decoration}{newline}"), &format!("{}{newline}", decoration.trim_end()));
    for _ in 0..postfix_count {
        out += &format!("{newline}{postfix}");
    }
    if !end.is_empty() {
        out += &format!("{newline}{end}");
    }
    Ok(out)
}

/// Python's str.center: the extra space goes right when the padding is odd and the text's
/// length even, left otherwise.
fn center(s: &str, width: usize) -> String {
    let len = s.chars().count();
    if width <= len {
        return s.to_string();
    }
    let pad = width - len;
    let left = pad / 2 + (pad & width & 1);
    format!("{}{s}{}", " ".repeat(left), " ".repeat(pad - left))
}

/// Jinja2's truncate(length=255, killwords=False, end='...', leeway=5).
fn truncate(
    s: String,
    length: Option<usize>,
    killwords: Option<bool>,
    end: Option<String>,
    kw: Kwargs,
) -> Result<String, Error> {
    let length = kw.get::<Option<usize>>("length")?.or(length).unwrap_or(255);
    let killwords = kw.get::<Option<bool>>("killwords")?.or(killwords).unwrap_or(false);
    let end = kw.get::<Option<String>>("end")?.or(end).unwrap_or_else(|| "...".into());
    let leeway = kw.get::<Option<usize>>("leeway")?.unwrap_or(5);
    kw.assert_all_used()?;
    let chars: Vec<char> = s.chars().collect();
    let end_len = end.chars().count();
    if length < end_len {
        return Err(fail(format!("truncate: expected length >= {end_len}, got {length}")));
    }
    if chars.len() <= length + leeway {
        return Ok(s);
    }
    let head: String = chars[..length - end_len].iter().collect();
    if killwords {
        return Ok(head + &end);
    }
    let head = match head.rfind(' ') {
        Some(i) => head[..i].to_string(),
        None => head,
    };
    Ok(head + &end)
}

const SIZES: [(char, u128); 9] = [
    ('Y', 1 << 80),
    ('Z', 1 << 70),
    ('E', 1 << 60),
    ('P', 1 << 50),
    ('T', 1 << 40),
    ('G', 1 << 30),
    ('M', 1 << 20),
    ('K', 1 << 10),
    ('B', 1),
];

/// Ansible's human_readable: `1.00 KB`, `512.00 Bytes`, `1.00 Mb` with isbits.
fn human_readable(size: Value, isbits: Option<bool>, unit: Option<String>, kw: Kwargs) -> Result<String, Error> {
    let isbits = kw.get::<Option<bool>>("isbits")?.or(isbits);
    let unit = kw.get::<Option<String>>("unit")?.or(unit);
    kw.assert_all_used()?;
    let size = number(&size, "human_readable")?;
    let base = if isbits.unwrap_or(false) { "bits" } else { "Bytes" };
    let unit = unit.map(|u| u.to_uppercase());
    let (suffix, limit) = SIZES
        .iter()
        .find(|(s, l)| match &unit {
            None => size >= *l as f64,
            Some(u) => u.starts_with(*s),
        })
        .copied()
        .unwrap_or(('B', 1));
    let suffix = if limit != 1 { format!("{suffix}{}", &base[..1]) } else { base.to_string() };
    Ok(format!("{:.2} {suffix}", size / limit as f64))
}

/// Ansible's human_to_bytes: `2K` → 2048, `1MB`, `10 megabytes`; bits with isbits (`1Mb`).
fn human_to_bytes(v: Value, default_unit: Option<String>, isbits: Option<bool>, kw: Kwargs) -> Result<i64, Error> {
    let default_unit = kw.get::<Option<String>>("default_unit")?.or(default_unit);
    let isbits = kw.get::<Option<bool>>("isbits")?.or(isbits);
    kw.assert_all_used()?;
    let text = v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
    let cant = || fail(format!("human_to_bytes() can't interpret the input: {text}"));
    let re = regex::Regex::new(r"^([0-9]*\.?[0-9]+)(?:\s*([A-Za-z]+))?\s*$").expect("static regex");
    let m = re.captures(&text).ok_or_else(cant)?;
    let num: f64 = m[1].parse().map_err(|_| cant())?;
    let Some(unit) = m.get(2).map(|u| u.as_str().to_string()).or(default_unit) else {
        return Ok(num.round() as i64);
    };
    let key = unit.chars().next().unwrap_or('B').to_ascii_uppercase();
    let limit = SIZES.iter().find(|(s, _)| *s == key).map(|(_, l)| *l).ok_or_else(cant)?;
    if unit.chars().count() > 1 {
        let bits = isbits.unwrap_or(false);
        let names =
            ["byte", "kilobyte", "megabyte", "gigabyte", "terabyte", "petabyte", "exabyte", "zetabyte", "yottabyte"];
        let i = "BKMGTPEZY".find(key).unwrap_or(0);
        let long = if bits { names[i].replace("byte", "bit") } else { names[i].to_string() };
        let short = if key == 'B' {
            (if bits { "b" } else { "B" }).to_string()
        } else {
            format!("{key}{}", if bits { 'b' } else { 'B' })
        };
        if unit.to_lowercase() != long && unit != short {
            return Err(cant());
        }
    }
    Ok((num * limit as f64).round() as i64)
}

/// A version-5 UUID of the text in the namespace (Ansible's to_uuid, Python's uuid.uuid5).
fn to_uuid(s: &str, namespace: &str) -> Result<String, Error> {
    use sha1::{Digest, Sha1};
    let hex: String = namespace.chars().filter(|c| *c != '-').collect();
    let ns = (0..hex.len())
        .step_by(2)
        .map(|i| hex.get(i..i + 2).and_then(|b| u8::from_str_radix(b, 16).ok()))
        .collect::<Option<Vec<u8>>>()
        .filter(|b| b.len() == 16)
        .ok_or_else(|| fail(format!("to_uuid: invalid value '{namespace}' for 'namespace'")))?;
    let mut h = Sha1::new();
    h.update(&ns);
    h.update(s.as_bytes());
    let mut b: Vec<u8> = h.finalize()[..16].to_vec();
    b[6] = (b[6] & 0x0f) | 0x50;
    b[8] = (b[8] & 0x3f) | 0x80;
    let x = hex::encode(&b);
    Ok(format!("{}-{}-{}-{}-{}", &x[..8], &x[8..12], &x[12..16], &x[16..20], &x[20..]))
}

/// Python's os.path.relpath on the bastion: both made absolute and normalised, then the way
/// from `start` to `path`.
fn relpath(path: &str, start: &str) -> Result<String, Error> {
    if path.is_empty() {
        return Err(fail("relpath: no path specified"));
    }
    let cwd = std::env::current_dir().map_err(|e| fail(format!("relpath: {e}")))?;
    let norm = |p: &str| -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for c in cwd.join(p).components() {
            match c {
                Component::ParentDir => {
                    out.pop();
                }
                Component::Normal(n) => out.push(n.to_string_lossy().into_owned()),
                _ => {}
            }
        }
        out
    };
    let (p, s) = (norm(path), norm(start));
    let common = p.iter().zip(&s).take_while(|(a, b)| a == b).count();
    let mut rel = PathBuf::new();
    for _ in common..s.len() {
        rel.push("..");
    }
    for part in &p[common..] {
        rel.push(part);
    }
    let rel = rel.to_string_lossy().into_owned();
    Ok(if rel.is_empty() { ".".into() } else { rel })
}

/// Python's os.path.join: a part that is absolute starts the path again.
fn path_join(parts: &[String]) -> String {
    let mut out = String::new();
    for (i, p) in parts.iter().enumerate() {
        if p.starts_with('/') || i == 0 {
            out = p.clone();
        } else if out.is_empty() || out.ends_with('/') {
            out.push_str(p);
        } else {
            out.push('/');
            out.push_str(p);
        }
    }
    out
}

/// Python's os.path.normpath.
pub fn normpath(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    // POSIX allows one implementation-defined meaning for exactly two leading slashes.
    let lead = if path.starts_with("//") && !path.starts_with("///") {
        "//"
    } else if path.starts_with('/') {
        "/"
    } else {
        ""
    };
    let mut out: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." if !lead.is_empty() && out.is_empty() => {}
            ".." if out.last().is_some_and(|l| *l != "..") => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    let joined = format!("{lead}{}", out.join("/"));
    if joined.is_empty() { ".".into() } else { joined }
}

/// Python's os.path.realpath (not strict), on the bastion as Ansible's filter runs there: links
/// resolved as far as the path exists, the rest kept, a link loop left as it is.
fn realpath(path: &str) -> Result<String, Error> {
    fn join_real(
        mut path: String,
        rest: &str,
        seen: &mut std::collections::HashMap<String, Option<String>>,
    ) -> (String, bool) {
        let mut rest = rest.to_string();
        if let Some(r) = rest.strip_prefix('/') {
            rest = r.to_string();
            path = "/".into();
        }
        while !rest.is_empty() {
            let (name, tail) =
                rest.split_once('/').map_or((rest.clone(), String::new()), |(a, b)| (a.to_string(), b.to_string()));
            rest = tail;
            if name.is_empty() || name == "." {
                continue;
            }
            if name == ".." {
                if path.is_empty() {
                    path = "..".into();
                } else {
                    let (head, last) = split(&path);
                    path = if last == ".." { path_join(&[head, "..".into(), "..".into()]) } else { head };
                }
                continue;
            }
            let new = path_join(&[path.clone(), name]);
            let is_link = std::fs::symlink_metadata(&new).is_ok_and(|m| m.file_type().is_symlink());
            if !is_link {
                path = new;
                continue;
            }
            if let Some(known) = seen.get(&new) {
                match known {
                    Some(p) => {
                        path = p.clone();
                        continue;
                    }
                    None => return (path_join(&[new, rest]), false),
                }
            }
            seen.insert(new.clone(), None);
            let target = std::fs::read_link(&new).map(|t| t.to_string_lossy().into_owned()).unwrap_or_default();
            let (p, ok) = join_real(path, &target, seen);
            if !ok {
                return (path_join(&[p, rest]), false);
            }
            seen.insert(new, Some(p.clone()));
            path = p;
        }
        (path, true)
    }
    /// Python's os.path.split.
    fn split(p: &str) -> (String, String) {
        let i = p.rfind('/').map_or(0, |i| i + 1);
        let (head, tail) = p.split_at(i);
        let trimmed = head.trim_end_matches('/');
        (if trimmed.is_empty() { head.to_string() } else { trimmed.to_string() }, tail.to_string())
    }
    let (p, _) = join_real(String::new(), path, &mut Default::default());
    let abs = if p.starts_with('/') {
        p
    } else {
        let cwd = std::env::current_dir().map_err(|e| fail(format!("realpath: {e}")))?;
        path_join(&[cwd.to_string_lossy().into_owned(), p])
    };
    Ok(normpath(&abs))
}

#[cfg(test)]
mod tests {
    use minijinja::context;

    fn render(t: &str) -> String {
        let mut env = minijinja::Environment::new();
        super::add(&mut env);
        env.render_str(t, context! {}).unwrap_or_else(|e| format!("error: {e}"))
    }

    #[test]
    fn filters_give_what_python_gives() {
        // Each expected text is what ansible-core 2.19 renders for the same expression.
        let cases = [
            ("{{ 'x' | comment }}", "#\n# x\n#"),
            ("{{ 'a\\nb' | comment('c') }}", "//\n// a\n// b\n//"),
            ("{{ 'a\\n\\nb' | comment('cblock') }}", "/*\n *\n * a\n *\n * b\n *\n */"),
            ("{{ 'x' | comment('xml') }}", "<!--\n -\n - x\n -\n-->"),
            ("{{ 'x' | comment(decoration='; ', prefix_count=2) }}", ";\n;\n; x\n;"),
            ("[{{ '1' | center(9) }}][{{ 'ab' | center(5) }}][{{ 'abc' | center(6) }}]", "[    1    ][  ab ][ abc  ]"),
            ("{{ 'one, two-three' | wordcount }}", "3"),
            ("{{ 'hello world and more' | truncate(9, leeway=0) }}", "hello..."),
            ("{{ 'hello world and more' | truncate(9, True, leeway=0) }}", "hello ..."),
            ("{{ 'short' | truncate(3) }}", "short"),
            (
                "{{ 1024 | human_readable }}|{{ 512 | human_readable }}|{{ 1048576 | human_readable(isbits=True) }}",
                "1.00 KB|512.00 Bytes|1.00 Mb",
            ),
            ("{{ 1536 | human_readable(unit='K') }}", "1.50 KB"),
            (
                "{{ '2K' | human_to_bytes }}|{{ '1 MB' | human_to_bytes }}|{{ '10 megabyte' | human_to_bytes }}|{{ 3 | human_to_bytes('K') }}",
                "2048|1048576|10485760|3072",
            ),
            ("{{ '1Mb' | human_to_bytes(isbits=True) }}", "1048576"),
            (
                "{{ '1Mb' | human_to_bytes }}",
                "error: invalid operation: human_to_bytes() can't interpret the input: 1Mb (in <string>:1)",
            ),
            ("{{ 8 | root(3) }}|{{ 16 | root }}|{{ 2 | pow(10) }}|{{ 100 | log(10) }}", "2.0|4.0|1024.0|2.0"),
            ("{{ [1, 2] | product(['a']) | list }}", "[[1, 'a'], [2, 'a']]"),
            ("{{ 'a' | to_uuid }}", "9b6d1a0c-51b1-5093-93fc-cf09a700edff"),
            ("{{ '/a/b/c' | relpath('/a/x') }}|{{ '/a' | relpath('/a') }}", "../b/c|."),
            ("{{ '/' is directory }}{{ '/' is file }}{{ '/surely/not/here' is exists }}", "TrueFalseFalse"),
        ];
        for (t, want) in cases {
            assert_eq!(render(t), want, "{t}");
        }
    }
}
