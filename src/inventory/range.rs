//! Host ranges in inventory names: `web[01:20]`, `db-[a:f]`, `n[1:10:2]`, several per name.
//! Same expansion rules (and the same refusals) as Ansible's `expand_hostname_range`; the number of
//! names is counted before any is built, so an absurd range is refused, not allocated.

/// Whether `name` contains a range to expand.
pub fn has_range(name: &str) -> bool {
    name.contains('[')
}

/// Expands every range in `name`, left to right. `Err` says what is wrong with the range.
pub fn expand(name: &str) -> Result<Vec<String>, String> {
    expand_at_most(name, usize::MAX)
}

/// As `expand`, refusing (before building any name) a name that makes more than `most` hosts.
pub fn expand_at_most(name: &str, most: usize) -> Result<Vec<String>, String> {
    let n = count(name)?;
    if n > most as u128 {
        return Err(format!(
            "host range '{name}' makes {n} hosts, more than the {most} this inventory has room for (at most {} in all)",
            super::MAX_HOSTS
        ));
    }
    expand_checked(name)
}

/// How many names `name` expands to, computed without expanding it.
fn count(name: &str) -> Result<u128, String> {
    let Some(open) = name.find('[') else { return Ok(1) };
    let close = name[open..].find(']').map(|c| open + c);
    let (here, tail) = match close {
        Some(c) => (bounds(&name[open + 1..c])?.len(), &name[c + 1..]),
        None => return Err(format!("host range '{name}' has no closing ']'")),
    };
    Ok(here.saturating_mul(count(tail)?))
}

/// One range's items, lazily: its count is known without producing them.
enum Items {
    Letters(Vec<char>),
    Numbers { from: u64, to: u64, step: u64, width: usize },
}

impl Items {
    fn len(&self) -> u128 {
        match self {
            Items::Letters(v) => v.len() as u128,
            Items::Numbers { from, to, step, .. } if from <= to => ((to - from) / step) as u128 + 1,
            Items::Numbers { .. } => 0,
        }
    }
}

/// Parses the body of one `[begin:end[:step]]` range.
fn bounds(body: &str) -> Result<Items, String> {
    let bounds: Vec<&str> = body.split(':').collect();
    if bounds.len() != 2 && bounds.len() != 3 {
        return Err(format!("host range [{body}] must be begin:end or begin:end:step"));
    }
    let beg = if bounds[0].is_empty() { "0" } else { bounds[0] };
    let end = bounds[1];
    let step_text = bounds.get(2).copied().unwrap_or("1");
    if end.is_empty() {
        return Err(format!("host range [{body}] must specify an end value"));
    }
    let step: usize = match step_text.parse() {
        Ok(s) if s > 0 => s,
        _ => return Err(format!("host range [{body}] has an invalid step '{step_text}'")),
    };
    let width = if beg.len() > 1 && beg.starts_with('0') {
        if beg.len() != end.len() {
            return Err(format!(
                "host range [{body}] must have begin and end of equal length when zero-padded ({beg} vs {end})"
            ));
        }
        beg.len()
    } else {
        0
    };
    const LETTERS: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    match (LETTERS.find(beg).filter(|_| beg.len() == 1), LETTERS.find(end).filter(|_| end.len() == 1)) {
        (Some(b), Some(e)) => {
            if b > e {
                return Err(format!("host range [{body}] must have begin <= end"));
            }
            Ok(Items::Letters(LETTERS[b..=e].chars().step_by(step).collect()))
        }
        _ => {
            let (Ok(from), Ok(to)) = (beg.parse::<u64>(), end.parse::<u64>()) else {
                return Err(format!("host range [{body}] must be numeric (01:10) or alphabetic (a:f)"));
            };
            Ok(Items::Numbers { from, to, step: step as u64, width })
        }
    }
}

fn expand_checked(name: &str) -> Result<Vec<String>, String> {
    let Some(open) = name.find('[') else { return Ok(vec![name.to_string()]) };
    let Some(close_rel) = name[open..].find(']') else {
        return Err(format!("host range '{name}' has no closing ']'"));
    };
    let close = open + close_rel;
    let (head, body, tail) = (&name[..open], &name[open + 1..close], &name[close + 1..]);
    let items: Vec<String> = match bounds(body)? {
        Items::Letters(v) => v.into_iter().map(String::from).collect(),
        Items::Numbers { from, to, step, width } => {
            (from..=to).step_by(step as usize).map(|n| format!("{n:0width$}")).collect()
        }
    };
    let mut out = Vec::new();
    for item in items {
        let host = format!("{head}{item}{tail}");
        if has_range(&host) {
            out.extend(expand_checked(&host)?);
        } else {
            out.push(host);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::expand;

    #[test]
    fn expands_ranges() {
        assert_eq!(expand("web[01:03]").unwrap(), ["web01", "web02", "web03"]);
        assert_eq!(expand("db-[a:c]").unwrap(), ["db-a", "db-b", "db-c"]);
        assert_eq!(expand("n[1:10:4]").unwrap(), ["n1", "n5", "n9"]);
        assert_eq!(expand("r[1:2]x[a:b]").unwrap(), ["r1xa", "r1xb", "r2xa", "r2xb"]);
        assert_eq!(expand("h[:2]").unwrap(), ["h0", "h1", "h2"]);
        assert_eq!(expand("h[1:0]").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn refuses_bad_ranges() {
        assert!(expand("h[01:3]").unwrap_err().contains("equal length"));
        assert!(expand("h[1]").unwrap_err().contains("begin:end"));
        assert!(expand("h[1:]").unwrap_err().contains("end value"));
        assert!(expand("h[c:a]").unwrap_err().contains("begin <= end"));
        assert!(expand("h[1:x]").unwrap_err().contains("numeric"));
    }
}
