//! Where vault passwords come from, as Ansible's `CLI.setup_vault_secrets` and
//! `get_file_vault_secret` read them: `--vault-id label@source` (a file, an executable script, a
//! `*-client` script asked with `--vault-id label`, or `prompt`), `--vault-password-file`,
//! `vault_password_file`/`ANSIBLE_VAULT_PASSWORD_FILE`, `--ask-vault-pass`. Each source's own
//! stripping rule is Ansible's: a file is stripped of surrounding whitespace, a script's output of
//! surrounding CR/LF only, a prompt answer of surrounding whitespace.

use std::fmt;
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use zeroize::Zeroizing;

use super::envelope::{DEFAULT_ID, strip};
use super::{VaultSecrets, is_vaulted};
use crate::error::{Error, Result};

/// One vault password. Debug prints a mask; the bytes are wiped on drop.
#[derive(Clone)]
pub struct VaultSecret(Zeroizing<Vec<u8>>);

impl VaultSecret {
    pub fn new(bytes: Vec<u8>) -> VaultSecret {
        VaultSecret(Zeroizing::new(bytes))
    }
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for VaultSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(crate::secret::MASK)
    }
}

/// The vault settings of one command: flags, then ansible.cfg / `ANSIBLE_*` settings.
#[derive(Debug, Clone, Default)]
pub struct VaultOptions {
    /// `--vault-id`, each `label@source` or `source`, in order.
    pub vault_ids: Vec<String>,
    /// `--vault-password-file`, in order.
    pub password_files: Vec<PathBuf>,
    /// `--ask-vault-pass`.
    pub ask_vault_pass: bool,
    /// `vault_identity_list` (`ANSIBLE_VAULT_IDENTITY_LIST`): tried before the `--vault-id`s.
    pub identity_list: Vec<String>,
    /// `vault_password_file` (`ANSIBLE_VAULT_PASSWORD_FILE`): after the `--vault-password-file`s.
    pub config_password_file: Option<PathBuf>,
    /// `vault_identity` (`ANSIBLE_VAULT_IDENTITY`): the label of a secret given without one.
    pub default_identity: Option<String>,
    /// `vault_id_match` (`ANSIBLE_VAULT_ID_MATCH`): only the envelope's label may decrypt it.
    pub id_match: bool,
    /// Prompt when no source is given at all (ansible-vault does; ansible-playbook does not).
    pub auto_prompt: bool,
    /// Ask twice, "New vault password", as ansible-vault does before encrypting.
    pub new_password: bool,
}

impl VaultOptions {
    /// Fills the settings from Ansible's (`vault_password_file`, `vault_identity_list`,
    /// `vault_identity`, `vault_id_match`: ansible.cfg, or the `ANSIBLE_VAULT_*` variables over
    /// it, as read by `ansible_cfg`); flags are separate fields and always apply.
    pub fn with_config(mut self, cfg: &crate::ansible_cfg::AnsibleCfg) -> VaultOptions {
        if let Some(f) = cfg.path("DEFAULT_VAULT_PASSWORD_FILE") {
            self.config_password_file = Some(f.to_path_buf());
        }
        if let Some(l) = cfg.list("DEFAULT_VAULT_IDENTITY_LIST") {
            self.identity_list = l.iter().filter(|s| !s.is_empty()).cloned().collect();
        }
        if let Some(d) = cfg.str("DEFAULT_VAULT_IDENTITY") {
            self.default_identity = Some(d.to_string());
        }
        if let Some(m) = cfg.bool("DEFAULT_VAULT_ID_MATCH") {
            self.id_match = m;
        }
        self
    }

    fn default_id(&self) -> &str {
        self.default_identity.as_deref().unwrap_or(DEFAULT_ID)
    }
}

/// Asks on the terminal without echo (rpassword reads /dev/tty, so stdin stays free for data).
pub fn prompt_on_terminal(prompt: &str) -> io::Result<String> {
    rpassword::prompt_password(prompt)
}

/// Ansible rejects `;` in a label: it would split the 1.2 header.
pub fn check_label(label: &str) -> Result<()> {
    if label.contains(';') {
        return Err(Error::with_help(
            format!("'{label}' is not a valid vault id. The character ';' is not allowed in vault ids"),
            "choose a label without `;`",
        ));
    }
    Ok(())
}

pub(super) fn load(options: &VaultOptions, prompt: &mut dyn FnMut(&str) -> io::Result<String>) -> Result<VaultSecrets> {
    let default_id = options.default_id().to_string();
    // build_vault_ids: identities, then password files as `default@file`, then the prompt.
    let mut slugs: Vec<String> = options.identity_list.iter().chain(&options.vault_ids).cloned().collect();
    for f in options.password_files.iter().chain(&options.config_password_file) {
        slugs.push(format!("{default_id}@{}", f.display()));
    }
    if options.ask_vault_pass || (slugs.is_empty() && options.auto_prompt) {
        slugs.push(format!("{default_id}@prompt_ask_vault_pass"));
    }

    let mut out = VaultSecrets { id_match: options.id_match, ..VaultSecrets::default() };
    let mut last_error = None;
    for slug in &slugs {
        let (name, value) = match slug.split_once('@') {
            Some((n, v)) => (Some(n), v),
            None => (None, slug.as_str()),
        };
        let label = name.filter(|n| !n.is_empty()).unwrap_or(&default_id).to_string();
        check_label(&label)?;
        if value == "prompt" || value == "prompt_ask_vault_pass" {
            // A prompt that fails stops everything, as in Ansible.
            let secret = ask(&label, value == "prompt_ask_vault_pass", options.new_password, prompt)?;
            out.secrets.push((label, secret));
            continue;
        }
        match read_source(value, name, &out) {
            Ok(secret) => out.secrets.push((label, secret)),
            Err(e) => {
                // Ansible warns and goes on; the error stands only if no secret is found at all.
                out.warnings.push(format!("Error getting vault password file ({label}): {e}"));
                tracing::debug!("Error getting vault password file ({label}): {e}");
                last_error = Some(e);
            }
        }
    }
    match last_error {
        Some(e) if out.secrets.is_empty() => Err(e),
        _ => Ok(out),
    }
}

fn ask(
    label: &str,
    old_format: bool,
    new_password: bool,
    prompt: &mut dyn FnMut(&str) -> io::Result<String>,
) -> Result<VaultSecret> {
    let prompts: Vec<String> = match (old_format, new_password) {
        (true, false) => vec!["Vault password: ".into()],
        (true, true) => vec!["New Vault password: ".into(), "Confirm New Vault password: ".into()],
        (false, false) => vec![format!("Vault password ({label}): ")],
        (false, true) => {
            vec![format!("New vault password ({label}): "), format!("Confirm new vault password ({label}): ")]
        }
    };
    let mut answers: Vec<Zeroizing<Vec<u8>>> = Vec::new();
    for p in &prompts {
        let answer = Zeroizing::new(prompt(p).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                Error::plain(format!("EOFError (ctrl-d) on prompt for ({label})"))
            } else {
                Error::with_help(
                    format!("cannot ask for the vault password ({label}): {e}"),
                    "run from a terminal, or give the password with --vault-password-file FILE",
                )
            }
        })?);
        let stripped = Zeroizing::new(strip(answer.as_bytes()).to_vec());
        if answer.is_empty() {
            return Err(Error::with_help("Invalid vault password was provided", "type a non-empty password"));
        }
        answers.push(stripped);
    }
    if answers.iter().any(|a| **a != *answers[0]) {
        return Err(Error::with_help("Passwords do not match", "type the same password twice"));
    }
    Ok(VaultSecret(answers.swap_remove(0)))
}

/// Ansible's `unfrackpath(follow=False)`: `~` expanded, made absolute, not resolved.
fn unfrack(path: &str) -> PathBuf {
    let p = match path.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME").map(|h| Path::new(&h).join(rest)).unwrap_or_else(|| path.into()),
        None => PathBuf::from(path),
    };
    std::path::absolute(&p).unwrap_or(p)
}

/// Ansible's `script_is_client`: the file name without its extension ends in `-client`.
fn is_client_script(filename: &str) -> bool {
    let base_start = filename.rfind('/').map_or(0, |i| i + 1);
    let base = &filename[base_start..];
    let stem_len = match base.trim_start_matches('.').rfind('.') {
        Some(i) => base.len() - base.trim_start_matches('.').len() + i,
        None => base.len(),
    };
    filename[..base_start + stem_len].ends_with("-client")
}

fn read_source(filename: &str, label: Option<&str>, loaded: &VaultSecrets) -> Result<VaultSecret> {
    let path = unfrack(filename);
    let shown = path.display().to_string();
    let meta = std::fs::metadata(&path).map_err(|_| {
        Error::with_help(
            format!("The vault password file {shown} was not found"),
            "check the path given to --vault-id/--vault-password-file or in ANSIBLE_VAULT_PASSWORD_FILE",
        )
    })?;
    if meta.is_dir() {
        return Err(Error::plain(format!("The vault password file provided '{shown}' can not be a directory")));
    }
    if meta.permissions().mode() & 0o111 != 0 {
        let client = is_client_script(filename);
        let client_label = label.filter(|l| client && !l.is_empty());
        return run_script(&path, client_label, client);
    }
    let mut bytes = Zeroizing::new(Vec::new());
    std::fs::File::open(&path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|e| Error::plain(format!("Could not read vault password file '{shown}': {e}")))?;
    let mut pass = Zeroizing::new(strip(&bytes).to_vec());
    // A password file may itself be vaulted with a secret loaded before it (Ansible's loader
    // decrypts it with the secrets known so far).
    if is_vaulted(&pass) {
        let plain = loaded.decrypt(&pass).map_err(|e| e.on(&shown))?;
        pass = Zeroizing::new(strip_crlf(&plain).to_vec());
    }
    if pass.is_empty() {
        return Err(Error::with_help(
            format!("Invalid vault password was provided from file ({shown})"),
            "the file is empty: write the password on its first line",
        ));
    }
    Ok(VaultSecret(pass))
}

fn strip_crlf(b: &[u8]) -> &[u8] {
    let start = b.iter().position(|c| !matches!(c, b'\r' | b'\n')).unwrap_or(b.len());
    let end = b.iter().rposition(|c| !matches!(c, b'\r' | b'\n')).map_or(start, |e| e + 1);
    &b[start..end]
}

/// Runs a password script. A client script gets `--vault-id LABEL` and exits 2 for an unknown id;
/// its stderr is captured for the message. A plain script's stderr stays on the terminal, so it
/// may prompt there.
fn run_script(path: &Path, client_label: Option<&str>, client: bool) -> Result<VaultSecret> {
    let shown = path.display().to_string();
    let kind = if client { "Vault password client script" } else { "Vault password script" };
    let mut cmd = Command::new(path);
    cmd.stdout(Stdio::piped()).stderr(if client { Stdio::piped() } else { Stdio::inherit() });
    if let Some(l) = client_label {
        cmd.args(["--vault-id", l]);
    }
    let out = cmd.output().map_err(|e| {
        Error::with_help(
            format!("Problem running {} {shown} ({e}).", kind.to_lowercase()),
            "If this is not a script, remove the executable bit from the file.",
        )
    })?;
    let stdout = Zeroizing::new(out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    let id = client_label.unwrap_or("None");
    if client && out.status.code() == Some(2) {
        return Err(Error::with_help(
            format!("{kind} {shown} did not find a secret for vault-id={id}: {stderr}"),
            "the script knows no password for this label: check the label given to --vault-id",
        ));
    }
    if !out.status.success() {
        let rc = out.status.code().map_or_else(|| "killed by a signal".to_string(), |c| c.to_string());
        let what = if client { format!(" when getting secret for vault-id={id}: {stderr}") } else { String::new() };
        return Err(Error::with_help(
            format!("{kind} {shown} returned non-zero ({rc}){what}"),
            "run the script by hand to see why it fails",
        ));
    }
    let pass = strip_crlf(&stdout);
    if pass.is_empty() {
        return Err(Error::with_help(
            format!("Invalid vault password was provided from script ({shown})"),
            "the script printed nothing: it must print the password on stdout",
        ));
    }
    Ok(VaultSecret::new(pass.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_prompt(_: &str) -> io::Result<String> {
        panic!("no prompt expected")
    }

    #[test]
    fn client_script_names() {
        for (f, want) in [
            ("vault-client", true),
            ("/x/vault-client.py", true),
            ("a.b/pass-client.sh", true),
            ("vault-client.py.bak", false),
            ("client", false),
            ("/x/.vault-client", true),
            ("pw-client/script", false),
        ] {
            assert_eq!(is_client_script(f), want, "{f}");
        }
    }

    #[test]
    fn files_scripts_prompts_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        std::fs::write(&file, " pass word \n\n").unwrap();
        let script = dir.path().join("pw.sh");
        std::fs::write(&script, "#!/bin/sh\nprintf ' scripted \\r\\n'\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let client = dir.path().join("keys-client.sh");
        std::fs::write(&client, "#!/bin/sh\n[ \"$2\" = prod ] && echo p-$2 && exit 0\necho nope >&2; exit 2\n")
            .unwrap();
        std::fs::set_permissions(&client, std::fs::Permissions::from_mode(0o755)).unwrap();

        let opts = VaultOptions {
            vault_ids: vec![format!("prod@{}", client.display()), format!("s@{}", script.display()), "p@prompt".into()],
            password_files: vec![file.clone()],
            ask_vault_pass: true,
            ..VaultOptions::default()
        };
        let mut asked = vec![];
        let s = load(&opts, &mut |p: &str| {
            asked.push(p.to_string());
            Ok(format!(" typed-{} ", asked.len()))
        })
        .unwrap();
        assert_eq!(asked, vec!["Vault password (p): ", "Vault password: "]);
        let got: Vec<(String, String)> =
            s.secrets.iter().map(|(l, v)| (l.clone(), String::from_utf8(v.bytes().to_vec()).unwrap())).collect();
        let want = [
            ("prod", "p-prod"),
            ("s", " scripted "),
            ("p", "typed-1"),
            ("default", "pass word"),
            ("default", "typed-2"),
        ];
        assert_eq!(got, want.map(|(a, b)| (a.to_string(), b.to_string())));

        let bad = VaultOptions { vault_ids: vec![format!("dev@{}", client.display())], ..VaultOptions::default() };
        assert_eq!(
            load(&bad, &mut no_prompt).unwrap_err().to_string(),
            format!("Vault password client script {} did not find a secret for vault-id=dev: nope", client.display())
        );
    }

    #[test]
    fn a_missing_file_warns_while_another_source_works() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        std::fs::write(&file, "pw\n").unwrap();
        let missing = dir.path().join("missing");
        let opts = VaultOptions { password_files: vec![missing.clone(), file], ..VaultOptions::default() };
        let s = load(&opts, &mut no_prompt).unwrap();
        assert_eq!(s.labels(), vec!["default"]);
        assert_eq!(
            s.warnings,
            vec![format!(
                "Error getting vault password file (default): The vault password file {} was not found",
                missing.display()
            )]
        );
        let only_missing = VaultOptions { password_files: vec![missing.clone()], ..VaultOptions::default() };
        assert_eq!(
            load(&only_missing, &mut no_prompt).unwrap_err().to_string(),
            format!("The vault password file {} was not found", missing.display())
        );
        let empty = dir.path().join("empty");
        std::fs::write(&empty, " \n").unwrap();
        let opts = VaultOptions { password_files: vec![empty.clone()], ..VaultOptions::default() };
        assert_eq!(
            load(&opts, &mut no_prompt).unwrap_err().to_string(),
            format!("Invalid vault password was provided from file ({})", empty.display())
        );
    }

    #[test]
    fn new_password_is_confirmed() {
        let opts = VaultOptions { ask_vault_pass: true, new_password: true, ..VaultOptions::default() };
        let mut n = 0;
        let err = load(&opts, &mut |_: &str| {
            n += 1;
            Ok(format!("p{n}"))
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "Passwords do not match");
        let none = VaultOptions { auto_prompt: true, ..VaultOptions::default() };
        let s = load(&none, &mut |p: &str| {
            assert_eq!(p, "Vault password: ");
            Ok("x".into())
        })
        .unwrap();
        assert_eq!(s.labels(), vec!["default"]);
    }
}
