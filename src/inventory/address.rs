//! Ansible's `parse_address`: is a string a host (name, IPv4, IPv6, with ranges) with an
//! optional `:port`? The INI parser uses it to split `host:port`, and pattern splitting uses it
//! to decide whether a colon separates patterns or belongs to an address.

use std::sync::LazyLock;

use regex::Regex;

const NUMERIC_RANGE: &str = r"\[(?:[0-9]+:[0-9]+)(?::[0-9]+)?\]";
const HEX_RANGE: &str = r"\[(?:[0-9a-f]+:[0-9a-f]+)(?::[0-9]+)?\]";
const ALNUM_RANGE: &str = r"\[(?:[a-z]:[a-z]|[0-9]+:[0-9]+)(?::[0-9]+)?\]";

static BRACKETED_HOSTPORT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\[(.+)\]:([0-9]+)$").unwrap());
static HOSTPORT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^((?:[^:\[\]]|\[[^\]]*\])*):([0-9]+)$").unwrap());
static IPV4: LazyLock<Regex> = LazyLock::new(|| {
    let c = format!(r"(?:[01]?[0-9]{{1,2}}|2[0-4][0-9]|25[0-5]|{NUMERIC_RANGE})");
    Regex::new(&format!(r"(?i)^(?:{c}\.){{3}}{c}$")).unwrap()
});
static IPV6: LazyLock<Regex> = LazyLock::new(|| {
    let c = format!(r"(?:[0-9a-f]{{1,4}}|{HEX_RANGE})");
    let alts = [
        format!(r"(?:{c}:){{7}}{c}"),
        format!(r"(?:{c}:){{1,6}}:"),
        format!(r"(?:{c}:)(?::{c}){{1,6}}"),
        format!(r"(?:{c}:){{2}}(?::{c}){{1,5}}"),
        format!(r"(?:{c}:){{3}}(?::{c}){{1,4}}"),
        format!(r"(?:{c}:){{4}}(?::{c}){{1,3}}"),
        format!(r"(?:{c}:){{5}}(?::{c}){{1,2}}"),
        format!(r"(?:{c}:){{6}}(?::{c})"),
        format!(r":(?::{c}){{1,6}}"),
        format!(r"{c}?::"),
        format!(r"(?:0:){{6}}(?:{c}\.){{3}}{c}"),
        format!(r"::(?:ffff:)?(?:{c}\.){{3}}{c}"),
        format!(r"(?:0:){{5}}ffff:(?:{c}\.){{3}}{c}"),
    ];
    Regex::new(&format!(r"(?i)^(?:{})$", alts.join("|"))).unwrap()
});
static HOSTNAME: LazyLock<Regex> = LazyLock::new(|| {
    let r = ALNUM_RANGE;
    // Ansible's label uses a look-behind ("may not end with - or _"); spelled out here instead.
    let label = format!(r"(?:(?:[^\W_]|{r})|(?:\w|{r})(?:[\w-]|{r})*(?:[^\W_]|{r}))");
    Regex::new(&format!(r"(?i)^{label}(?:\.{label})*$")).unwrap()
});

/// `(host, port)` when `address` is a host identifier (ranges allowed), else `None`.
pub fn parse_address(address: &str) -> Option<(String, Option<u16>)> {
    let mut host = address.to_string();
    let mut port = None;
    for re in [&*BRACKETED_HOSTPORT, &*HOSTPORT] {
        if let Some(m) = re.captures(&host.clone()) {
            host = m[1].to_string();
            port = Some(m[2].parse::<u64>().ok()?);
        }
    }
    let ok = IPV4.is_match(&host) || IPV6.is_match(&host) || HOSTNAME.is_match(&host);
    if !ok {
        return None;
    }
    let port = match port {
        Some(p) => Some(u16::try_from(p).ok()?),
        None => None,
    };
    Some((host, port))
}

#[cfg(test)]
mod tests {
    use super::parse_address;

    #[test]
    fn parses_hosts_and_ports() {
        assert_eq!(parse_address("web01"), Some(("web01".into(), None)));
        assert_eq!(parse_address("web[01:03]:2222"), Some(("web[01:03]".into(), Some(2222))));
        assert_eq!(parse_address("10.0.0.1:22"), Some(("10.0.0.1".into(), Some(22))));
        assert_eq!(parse_address("[::1]:22"), Some(("::1".into(), Some(22))));
        assert_eq!(parse_address("fe80::1"), Some(("fe80::1".into(), None)));
        assert_eq!(parse_address("web:db"), None);
        assert_eq!(parse_address("web-"), None);
        assert_eq!(parse_address("g[1:]"), None);
        assert_eq!(parse_address("a_b"), Some(("a_b".into(), None)));
    }
}
