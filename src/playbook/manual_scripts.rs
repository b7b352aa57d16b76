//! The operators' manual's numbered shell scripts (`./120-gpu-preinstall.sh`) and the built-in
//! playbook each one ran: an operator following the manual types the script's name. Kept apart
//! from the playbook model: it is the manual's vocabulary, not the format.

use std::path::Path;

/// Each script the manual names (cop-operating-procedures, "Node Addition Procedure") that a
/// built-in playbook replaces, without its `.sh`.
const SCRIPTS: &[(&str, &str)] = &[
    ("120-gpu-preinstall", "gpu-preinstall"),
    ("140-gpu-install", "gpu-install"),
    ("450-gpu-operator-install", "gpu-operator"),
];

/// The built-in playbook the manual's script `name` ran: with or without `.sh`, with or without
/// a directory (`./140-gpu-install.sh`).
pub(super) fn playbook(name: &str) -> Option<&'static str> {
    let file = Path::new(name).file_name()?.to_str()?;
    let stem = file.strip_suffix(".sh").unwrap_or(file);
    SCRIPTS.iter().find(|(s, _)| *s == stem).map(|(_, p)| *p)
}

#[cfg(test)]
mod tests {
    use super::playbook;

    #[test]
    fn the_manuals_script_names_with_or_without_sh_or_a_directory() {
        for (name, want) in [
            ("120-gpu-preinstall", Some("gpu-preinstall")),
            ("120-gpu-preinstall.sh", Some("gpu-preinstall")),
            ("./140-gpu-install.sh", Some("gpu-install")),
            ("/opt/scripts/450-gpu-operator-install.sh", Some("gpu-operator")),
            ("450-gpu-operator-install", Some("gpu-operator")),
            ("build-app.sh", None),
            ("120-gpu-preinstall.yaml", None),
            ("gpu-preinstall", None),
        ] {
            assert_eq!(playbook(name), want, "{name}");
        }
    }
}
