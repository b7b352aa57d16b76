//! Ansible's sequence lookup (`with_sequence`, `lookup('sequence', ...)`): the items of one
//! term, as text formatted as Python's `%` formats an integer.

/// The items of Ansible's sequence lookup for one term, as it gives them (text, `format`ted).
pub fn sequence(term: &str) -> Result<Vec<String>, String> {
    // Decimal only, as Ansible's option type reads it (`0x0f` is refused there).
    let int = |name: &str, v: &str| -> Result<i64, String> {
        v.trim()
            .replace('_', "")
            .parse::<i64>()
            .map_err(|_| format!("{name}: invalid value provided for 'integer': '{v}'"))
    };
    let (mut start, mut end, mut count, mut stride, mut format) = (1i64, None, None, 1i64, "%d".to_string());
    // The shortcut form, [start-]end[/stride][:format], the whole term as Ansible matches it.
    let shortcut = regex::Regex::new(r"(?i)^((0?x?[0-9a-f]+)-)?(0?x?[0-9a-f]+)(/(0?x?[0-9a-f]+))?(:(.+))?$")
        .expect("a valid pattern");
    if let Some(c) = shortcut.captures(term) {
        if let Some(a) = c.get(2) {
            start = int("start", a.as_str())?;
        }
        end = Some(int("end", &c[3])?);
        if let Some(st) = c.get(5) {
            stride = int("stride", st.as_str())?;
        }
        if let Some(f) = c.get(7) {
            format = f.as_str().to_string();
        }
    } else {
        let mut unknown = Vec::new();
        for w in term.split_whitespace() {
            let Some((key, val)) = w.split_once('=') else {
                unknown.push("_raw_params".to_string());
                continue;
            };
            match key {
                "start" => start = int("start", val)?,
                "end" => end = Some(int("end", val)?),
                "count" => count = Some(int("count", val)?),
                "stride" => stride = int("stride", val)?,
                "format" => format = val.to_string(),
                other => unknown.push(other.to_string()),
            }
        }
        if !unknown.is_empty() {
            unknown.dedup();
            let list = unknown.iter().map(|u| format!("'{u}'")).collect::<Vec<_>>().join(", ");
            return Err(format!("unrecognized arguments to with_sequence: [{list}]"));
        }
    }
    let end = match (end, count) {
        (Some(_), Some(_)) => return Err("can't specify both count and end in with_sequence".into()),
        (None, None) => return Err("must specify count or end in with_sequence".into()),
        (Some(e), None) => e,
        (None, Some(0)) => return Ok(Vec::new()),
        // Ansible's own arithmetic, off by one for a negative stride as it is there.
        (None, Some(c)) => start + c * stride - 1,
    };
    if stride > 0 && end < start {
        return Err("to count backwards make stride negative".into());
    }
    if stride < 0 && end > start {
        return Err("to count forward don't make stride negative".into());
    }
    if stride == 0 {
        return Ok(Vec::new());
    }
    if format.matches('%').count() != 1 {
        return Err(format!("bad formatting string: {format}"));
    }
    // Python's range(start, end + 1, stride), or end - 1 going down.
    let stop = if stride > 0 { end + 1 } else { end - 1 };
    let mut out = Vec::new();
    let mut i = start;
    while (stride > 0 && i < stop) || (stride < 0 && i > stop) {
        out.push(printf_int(&format, i).ok_or_else(|| format!("problem formatting {i} with '{format}'"))?);
        i += stride;
    }
    Ok(out)
}

/// One `%d`-like conversion (flags `0-+ `, a width, `d i u x X o`) of `format` applied to `n`.
fn printf_int(format: &str, n: i64) -> Option<String> {
    let (before, rest) = format.split_once('%')?;
    let mut chars = rest.char_indices();
    let mut flags = String::new();
    let mut width = String::new();
    let mut conv = None;
    for (i, c) in chars.by_ref() {
        match c {
            '0' | '-' | '+' | ' ' | '#' if width.is_empty() => flags.push(c),
            '0'..='9' => width.push(c),
            'd' | 'i' | 'u' | 'x' | 'X' | 'o' => {
                conv = Some((c, i + c.len_utf8()));
                break;
            }
            _ => return None,
        }
    }
    let (c, end) = conv?;
    let after = &rest[end..];
    let digits = match c {
        'x' => format!("{:x}", n.unsigned_abs()),
        'X' => format!("{:X}", n.unsigned_abs()),
        'o' => format!("{:o}", n.unsigned_abs()),
        _ => n.unsigned_abs().to_string(),
    };
    let sign = if n < 0 {
        "-"
    } else if flags.contains('+') {
        "+"
    } else if flags.contains(' ') {
        " "
    } else {
        ""
    };
    let body = format!("{sign}{digits}");
    let width: usize = width.parse().unwrap_or(0);
    let padded = if body.len() >= width {
        body
    } else if flags.contains('-') {
        format!("{body:<width$}")
    } else if flags.contains('0') {
        format!("{sign}{digits:0>w$}", w = width - sign.len())
    } else {
        format!("{body:>width$}")
    };
    Some(format!("{before}{padded}{after}"))
}

#[cfg(test)]
mod tests {
    use super::sequence;

    fn seq(term: &str) -> Vec<String> {
        sequence(term).unwrap_or_else(|e| panic!("{term}: {e}"))
    }

    #[test]
    fn with_sequence_gives_what_ansibles_sequence_lookup_gives() {
        assert_eq!(seq("count=3"), ["1", "2", "3"]);
        assert_eq!(seq("start=0 count=3"), ["0", "1", "2"]);
        assert_eq!(seq("start=1 end=3"), ["1", "2", "3"]);
        assert_eq!(seq("start=0 end=6 format=%02x"), ["00", "01", "02", "03", "04", "05", "06"]);
        assert_eq!(seq("start=1 count=5 stride=2"), ["1", "3", "5", "7", "9"]);
        assert_eq!(seq("start=5 end=11 stride=2 format=0x%02x"), ["0x05", "0x07", "0x09", "0x0b"]);
        assert_eq!(seq("start=4 end=1 stride=-1"), ["4", "3", "2", "1"]);
        // Ansible's count arithmetic with a negative stride: start + count * stride - 1.
        assert_eq!(seq("start=10 count=3 stride=-1"), ["10", "9", "8", "7", "6"]);
        assert_eq!(seq("2-6/2:x%d"), ["x2", "x4", "x6"]);
        assert_eq!(seq("5"), ["1", "2", "3", "4", "5"]);
        assert_eq!(seq("start=1 end=3 format=host%-3d|"), ["host1  |", "host2  |", "host3  |"]);
        assert!(seq("count=0").is_empty());
        assert!(seq("start=1 end=5 stride=0").is_empty());
    }

    #[test]
    fn with_sequence_refuses_what_ansible_refuses() {
        let err = |t: &str| sequence(t).expect_err(t);
        assert_eq!(err("start=1"), "must specify count or end in with_sequence");
        assert_eq!(err("end=3 count=3"), "can't specify both count and end in with_sequence");
        assert_eq!(err("start=5 end=1"), "to count backwards make stride negative");
        assert_eq!(err("start=1 end=5 stride=-1"), "to count forward don't make stride negative");
        assert_eq!(err("end=3 format=%d%d"), "bad formatting string: %d%d");
        assert_eq!(err("4-1/-1"), "unrecognized arguments to with_sequence: ['_raw_params']");
        assert_eq!(err("end=3 step=1"), "unrecognized arguments to with_sequence: ['step']");
        assert!(err("start=0x0f end=20").contains("invalid value provided for 'integer'"));
    }
}
