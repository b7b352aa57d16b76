//! The names closest to a misspelt one, for the "did you mean" of every error that names
//! something unknown (hosts, groups, playbooks, modules, keys, step names, device classes): one
//! measure and one threshold, so a typo is caught the same way wherever it is typed.

/// How alike two names must be (Jaro-Winkler, 0 to 1) for one to be offered for the other:
/// `rke2_verison` → `rke2_version`, `webservres` → `webservers`, and a group named without its
/// prefix, `cluster` → `k8s_cluster` (0.79), where unrelated names of a site score below 0.7.
pub const THRESHOLD: f64 = 0.75;

/// How far below the best a candidate may score and still be offered: a clear best match is
/// offered alone (`regster` → `register`, not `retries` too), near-equal ones together.
pub const NEAR_BEST: f64 = 0.1;

/// The candidates alike enough to `name` and near the best of them, most alike first (ties in
/// the candidates' order), each once and at most `most` of them.
pub fn closest<'a, S>(name: &str, candidates: impl IntoIterator<Item = &'a S>, most: usize) -> Vec<&'a str>
where
    S: AsRef<str> + ?Sized + 'a,
{
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .map(|c| c.as_ref())
        .map(|c| (strsim::jaro_winkler(name, c), c))
        .filter(|(s, _)| *s > THRESHOLD)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let best = scored.first().map_or(0.0, |s| s.0);
    scored.retain(|s| s.0 >= best - NEAR_BEST);
    let mut out: Vec<&str> = Vec::new();
    for (_, c) in scored {
        if out.len() == most {
            break;
        }
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn most_alike_first_each_once_and_bounded() {
        let names = ["rke2_version", "rke2_channel", "rke2_version", "registry_host", "rke2_versions"];
        assert_eq!(closest("rke2_verison", names.iter().copied(), 5), ["rke2_version", "rke2_versions"]);
        assert_eq!(closest("rke2_verison", names.iter().copied(), 1), ["rke2_version"]);
        assert!(closest("gpu_model", names.iter().copied(), 5).is_empty());
        assert_eq!(closest("cluster", ["masters", "k8s_cluster"].iter().copied(), 3), ["k8s_cluster"]);
        let owned: Vec<String> = vec!["webservers".into(), "masters".into()];
        assert_eq!(closest("webservres", &owned, 3), ["webservers"]);
    }
}
