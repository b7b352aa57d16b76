//! Where a module's source on the controller is found (copy, template, unarchive, script): under
//! the role's, the task file's and the playbook's directories, as Ansible looks.

use std::path::{Path, PathBuf};

/// A template giving the path of `src` (itself a template) when the task runs: as it is where
/// absolute, else the first of `dirs`' `sub`/SRC and SRC that exists (a file, or for files/ a
/// directory too), else the first of them.
pub(super) fn searched_src(src: &str, dirs: &[PathBuf], sub: &str) -> String {
    let places: Vec<String> = dirs
        .iter()
        .flat_map(|d| [d.join(sub), d.clone()])
        .map(|d| std::path::absolute(&d).unwrap_or(d).display().to_string())
        .map(|d| serde_json::to_string(&format!("{}/", d.trim_end_matches('/'))).expect("a string"))
        .collect();
    let test = if sub == "files" { "is file or (p ~ copctl_src) is directory" } else { "is file" };
    let mut t = format!(
        "{{% set copctl_src %}}{src}{{% endset %}}{{% if copctl_src is startingwith('/') %}}{{{{ copctl_src }}}}"
    );
    for p in &places {
        t.push_str(&format!(
            "{{% elif ({p} ~ copctl_src) {} %}}{{{{ {p} ~ copctl_src }}}}",
            test.replace("p ~", &format!("{p} ~"))
        ));
    }
    t.push_str(&format!("{{% else %}}{{{{ {} ~ copctl_src }}}}{{% endif %}}", places[0]));
    t
}

/// A copy or template source as Ansible finds it: under each of `dirs` (a role's, a task
/// file's, the playbook's), `files/` (`templates/`) first, then the directory itself; an
/// absolute path as it is.
pub(super) fn find_beside(dirs: &[PathBuf], sub: &str, src: &str) -> Option<String> {
    if Path::new(src).is_absolute() {
        return Path::new(src).is_file().then(|| src.to_string());
    }
    dirs.iter()
        .flat_map(|dir| [dir.join(sub).join(src), dir.join(src)])
        .find(|p| p.is_file())
        .map(|p| std::path::absolute(&p).unwrap_or(p).display().to_string())
}

/// A directory `src` of copy, where find_beside looks for a file (a trailing `/` kept: it
/// means the directory's contents).
pub(super) fn find_dir_beside(dirs: &[PathBuf], sub: &str, src: &str) -> Option<String> {
    let slash = if src.ends_with('/') { "/" } else { "" };
    if Path::new(src).is_absolute() {
        return Path::new(src).is_dir().then(|| src.to_string());
    }
    dirs.iter()
        .flat_map(|dir| [dir.join(sub).join(src), dir.join(src)])
        .find(|p| p.is_dir())
        .map(|p| format!("{}{slash}", std::path::absolute(&p).unwrap_or(p).display().to_string().trim_end_matches('/')))
}

pub(super) fn list_dirs(dirs: &[PathBuf]) -> String {
    dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
}
