//! ansible-vault, as ansible-core implements it (`lib/ansible/parsing/vault/__init__.py`): encrypted
//! files (format 1.1, and 1.2 with a vault id), inline `!vault` values in YAML, and the password
//! sources of Ansible's command line. A library: the `copctl vault` commands and the variable
//! loaders call into it; it prints nothing and reads no flags itself.
//!
//! Decrypted data comes back in `Zeroizing` buffers (wiped on drop); callers that put a value into
//! the variables mark it secret (`secret`), so it is masked wherever copctl prints.

mod cipher;
mod envelope;
mod inline;
mod secrets;

use std::path::Path;
use std::sync::{Mutex, OnceLock};

use zeroize::Zeroizing;

use crate::error::{Error, Result, Source};

pub use envelope::DEFAULT_ID;
pub use inline::{InlineSecret, VaultedVars, encrypt_string_block, parse_vars};
pub use secrets::{VaultOptions, VaultSecret, prompt_on_terminal};

/// Whether `data` is a vault envelope (Ansible's `is_encrypted`: ASCII, starts with `$ANSIBLE_VAULT`).
pub fn is_vaulted(data: &[u8]) -> bool {
    envelope::is_vaulted(data)
}

/// What went wrong with one vault text, before the caller says where it came from (`on`, `at`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VaultError {
    NotVaulted,
    /// The envelope or its hex body is damaged (Ansible's `AnsibleVaultFormatError`).
    Format(String),
    UnknownCipher(String),
    /// No secret was loaded at all.
    NoSecrets,
    /// One secret's HMAC did not match (internal: the next secret is tried).
    WrongSecret,
    /// Every candidate secret failed. `vault_id` is the envelope's label; `labels` the secrets'.
    NoMatch {
        vault_id: Option<String>,
        labels: Vec<String>,
    },
    AlreadyEncrypted,
    NotUtf8,
}

const HOW_TO_PASS: &str = "pass it with --vault-id LABEL@FILE, --vault-password-file FILE or --ask-vault-pass (or set ANSIBLE_VAULT_PASSWORD_FILE)";

impl VaultError {
    fn message(&self, origin: &str) -> (String, String) {
        match self {
            VaultError::NotVaulted => (
                format!("Input is not vault encrypted data: {origin}"),
                "a vault file starts with `$ANSIBLE_VAULT;1.1;AES256` or `$ANSIBLE_VAULT;1.2;AES256;LABEL`".into(),
            ),
            VaultError::Format(detail) => (
                format!("{detail} on {origin}"),
                "the vault text is damaged (a cut line, an edit, a merge): restore it from version control, or encrypt the cleartext again with `ansible-vault encrypt`".into(),
            ),
            VaultError::UnknownCipher(c) => (
                format!("Cipher '{c}' could not be found on {origin}"),
                "Ansible vault files use AES256: the header was edited or written by another tool".into(),
            ),
            VaultError::NoSecrets => (
                format!("Attempting to decrypt but no vault secrets found: {origin} is vault-encrypted"),
                format!("give the vault password: {HOW_TO_PASS}"),
            ),
            VaultError::WrongSecret | VaultError::NoMatch { .. } => {
                let (vault_id, labels) = match self {
                    VaultError::NoMatch { vault_id, labels } => (vault_id.clone(), labels.clone()),
                    _ => (None, vec![]),
                };
                let tried = labels.join(", ");
                let help = match vault_id {
                    Some(id) if !labels.contains(&id) => format!(
                        "it is encrypted for vault id `{id}` and no secret has that label (tried: {tried}): add --vault-id {id}@FILE (or {id}@prompt)"
                    ),
                    _ => format!(
                        "the password is wrong or the file was tampered with (tried the secrets for vault ids: {tried}): {HOW_TO_PASS} with the password it was encrypted with"
                    ),
                };
                (format!("Decryption failed (no vault secrets were found that could decrypt) on {origin}"), help)
            }
            VaultError::AlreadyEncrypted => (
                format!("input is already encrypted: {origin}"),
                "decrypt it first, or leave it as it is".into(),
            ),
            VaultError::NotUtf8 => (
                format!("the decrypted value of {origin} is not UTF-8 text"),
                "an inline !vault value must hold text: encrypt binary data as a whole file".into(),
            ),
        }
    }

    /// The error for a whole file or input (`origin` is its path, or `-` for stdin).
    pub fn on(&self, origin: &str) -> Error {
        let (message, help) = self.message(origin);
        Error::with_help(message, help)
    }

    /// The error for a whole vaulted file, at its header: `header` holds the file's first line.
    pub fn in_file(&self, header: &Source) -> Error {
        let (message, help) = self.message(&header.name);
        header.error_at(1, 1, 0, message, "vault-encrypted", Some(help))
    }

    /// The error for an inline value at `line:column` of `source`.
    pub fn at(&self, source: &Source, line: usize, column: usize) -> Error {
        let (message, help) = self.message(&format!("the !vault value at {}:{line}", source.name));
        source.error_at(line, column, 0, message, "this value", Some(help))
    }
}

/// The loaded vault secrets, in Ansible's order: `vault_identity_list`, `--vault-id`s,
/// `--vault-password-file`s, `vault_password_file`/`ANSIBLE_VAULT_PASSWORD_FILE`, `--ask-vault-pass`.
#[derive(Debug, Default)]
pub struct VaultSecrets {
    secrets: Vec<(String, VaultSecret)>,
    /// `vault_id_match`: only a secret whose label is the envelope's may decrypt it.
    id_match: bool,
    /// Sources that could not be read while others could (Ansible warns and goes on).
    pub warnings: Vec<String>,
}

impl VaultSecrets {
    /// Reads every source `options` names, prompting on the terminal (no echo) where asked.
    pub fn from_sources(options: &VaultOptions) -> Result<VaultSecrets> {
        secrets::load(options, &mut prompt_on_terminal)
    }

    /// As `from_sources`, with the prompts answered by `prompt` (tests, a GUI).
    pub fn from_sources_with_prompt(
        options: &VaultOptions,
        prompt: &mut dyn FnMut(&str) -> std::io::Result<String>,
    ) -> Result<VaultSecrets> {
        secrets::load(options, prompt)
    }

    /// Secrets given directly (label, password).
    pub fn new(secrets: Vec<(String, VaultSecret)>) -> VaultSecrets {
        VaultSecrets { secrets, id_match: false, warnings: vec![] }
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    pub fn labels(&self) -> Vec<String> {
        self.secrets.iter().map(|(l, _)| l.clone()).collect()
    }

    /// Decrypts a vault envelope (a file's bytes, or an inline value's text).
    pub fn decrypt(&self, data: &[u8]) -> Result<Zeroizing<Vec<u8>>, VaultError> {
        self.decrypt_and_get_vault_id(data).map(|(plain, _)| plain)
    }

    /// Decrypts and says which secret's label did it.
    pub fn decrypt_and_get_vault_id(&self, data: &[u8]) -> Result<(Zeroizing<Vec<u8>>, String), VaultError> {
        if !is_vaulted(data) {
            return Err(VaultError::NotVaulted);
        }
        let env = envelope::parse(data)?;
        if env.cipher != "AES256" {
            return Err(VaultError::UnknownCipher(env.cipher));
        }
        if self.secrets.is_empty() {
            return Err(VaultError::NoSecrets);
        }
        let vt = envelope::parse_vaulttext(&env.body)?;
        let target = env.vault_id.clone().unwrap_or_else(|| DEFAULT_ID.to_string());
        // Ansible tries every secret in order (the envelope's label is not authenticated, only a
        // hint); the result is the same whichever order, so the labelled secrets go first to spare
        // a 10,000-round PBKDF2 per wrong guess.
        let labelled = self.secrets.iter().filter(|(l, _)| *l == target);
        let others = self.secrets.iter().filter(|(l, _)| *l != target && !self.id_match);
        for (label, secret) in labelled.chain(others) {
            match cipher::decrypt(&vt, secret.bytes()) {
                Ok(plain) => return Ok((plain, label.clone())),
                Err(VaultError::WrongSecret) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(VaultError::NoMatch { vault_id: env.vault_id, labels: self.labels() })
    }

    /// Reads `path` and decrypts it if it is vaulted; `None` when it is cleartext.
    pub fn decrypt_file(&self, path: &Path) -> Result<Option<Zeroizing<Vec<u8>>>> {
        let data = std::fs::read(path)
            .map_err(|e| Error::with_help(format!("cannot read {}: {e}", path.display()), "check the path"))?;
        if !is_vaulted(&data) {
            return Ok(None);
        }
        self.decrypt(&data).map(Some).map_err(|e| e.on(&path.display().to_string()))
    }

    /// The secret to encrypt with, chosen as ansible-vault chooses (`match_encrypt_secret`).
    pub fn encrypt_secret(&self, encrypt_vault_id: Option<&str>) -> Result<(&str, &VaultSecret)> {
        if self.secrets.is_empty() {
            return Err(Error::with_help("A vault password is required to use Ansible's Vault", HOW_TO_PASS));
        }
        match encrypt_vault_id {
            Some(id) => self.secrets.iter().find(|(l, _)| l == id).map(|(l, s)| (l.as_str(), s)).ok_or_else(|| {
                Error::with_help(
                    format!(
                        "Did not find a match for --encrypt-vault-id={id} in the known vault-ids [{}]",
                        self.labels().iter().map(|l| format!("'{l}'")).collect::<Vec<_>>().join(", ")
                    ),
                    format!("add --vault-id {id}@FILE, or name one of the known vault ids"),
                )
            }),
            None if self.secrets.len() > 1 => Err(Error::with_help(
                format!(
                    "The vault-ids {} are available to encrypt. Specify the vault-id to encrypt with --encrypt-vault-id",
                    self.labels().join(",")
                ),
                "pass --encrypt-vault-id LABEL",
            )),
            None => Ok((self.secrets[0].0.as_str(), &self.secrets[0].1)),
        }
    }
}

/// A file read for parsing: decrypted first when it is vaulted, and then every value in it is a
/// secret (`encrypted`). The decrypted text lives in the `Source` so that parse errors can name
/// its lines; they must not quote it (`Error::without_snippet`). It is not wiped on drop (the
/// parsed variables hold the same values anyway).
#[derive(Debug)]
pub struct LoadedSource {
    pub source: Source,
    pub encrypted: bool,
}

impl LoadedSource {
    /// An error of parsing this source, without quoting it when it was decrypted.
    pub fn guard(&self, e: Error) -> Error {
        if !self.encrypted || e.location().is_none() {
            return e;
        }
        let name = &self.source.name;
        e.without_snippet().with_extra_help(&format!(
            "{name} is vault-encrypted, so its lines are not shown: `copctl vault view {name}` shows them"
        ))
    }
}

/// `error::read_source` for files that may be vaulted (inventory, env.yaml, `-e @file`): the
/// secrets are asked for only when the file is vaulted. An error decrypting it points at the
/// vault header (line 1) of the file.
pub fn read_source(path: &Path, secrets: &dyn SecretSource) -> Result<LoadedSource> {
    let data = crate::error::read_bytes(path)?;
    if !is_vaulted(&data) {
        return Ok(LoadedSource { source: crate::error::source_from_bytes(path, data)?, encrypted: false });
    }
    let name = path.display().to_string();
    let header =
        Source::new(name.clone(), String::from_utf8_lossy(data.split(|b| *b == b'\n').next().unwrap_or_default()));
    let plain = secrets.secrets()?.decrypt(&data).map_err(|e| e.in_file(&header))?;
    let text = std::str::from_utf8(&plain).map_err(|_| {
        Error::with_help(
            format!("{name}: the decrypted file is not valid UTF-8"),
            "a vaulted file read by copctl must hold UTF-8 text (YAML or INI)",
        )
    })?;
    Ok(LoadedSource { source: Source::new(name, text), encrypted: true })
}

/// Where the vault secrets come from when a vaulted input needs them: already loaded
/// (`VaultSecrets`), or read on first use (`Vault`).
pub trait SecretSource {
    fn secrets(&self) -> Result<&VaultSecrets>;
}

impl SecretSource for VaultSecrets {
    fn secrets(&self) -> Result<&VaultSecrets> {
        Ok(self)
    }
}

/// The vault secrets of one command, read from their sources (files, scripts, prompts) the first
/// time an encrypted input is met, once: a site without vault never asks for a password, and a
/// password file that is missing is no error until it is needed.
pub struct Vault {
    options: VaultOptions,
    loaded: OnceLock<VaultSecrets>,
    loading: Mutex<()>,
    /// Told each source that could not be read while others could (Ansible's warnings).
    warn: fn(&str),
}

impl Vault {
    pub fn new(options: VaultOptions, warn: fn(&str)) -> Vault {
        Vault { options, loaded: OnceLock::new(), loading: Mutex::new(()), warn }
    }

    /// A vault whose secrets are given (tests, library users).
    pub fn with_secrets(secrets: VaultSecrets) -> Vault {
        let v = Vault::new(VaultOptions::default(), |_| {});
        let _ = v.loaded.set(secrets);
        v
    }

    pub fn options(&self) -> &VaultOptions {
        &self.options
    }
}

impl Default for Vault {
    fn default() -> Self {
        Vault::new(VaultOptions::default(), |_| {})
    }
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vault").field("options", &self.options).field("loaded", &self.loaded.get().is_some()).finish()
    }
}

impl SecretSource for Vault {
    fn secrets(&self) -> Result<&VaultSecrets> {
        if let Some(s) = self.loaded.get() {
            return Ok(s);
        }
        // One loader at a time: two files met at once must not prompt twice.
        let _one = self.loading.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = self.loaded.get() {
            return Ok(s);
        }
        let loaded = VaultSecrets::from_sources(&self.options)?;
        for w in &loaded.warnings {
            (self.warn)(w);
        }
        Ok(self.loaded.get_or_init(|| loaded))
    }
}

/// Encrypts `plaintext` with a fresh 32-byte salt from the OS; `vault_id` other than `default`
/// writes format 1.2 with that label. The result is what `ansible-vault encrypt` writes.
pub fn encrypt(plaintext: &[u8], secret: &VaultSecret, vault_id: Option<&str>) -> Result<String> {
    let mut salt = [0u8; cipher::SALT_LEN];
    getrandom::fill(&mut salt).map_err(|e| Error::plain(format!("cannot read random bytes from the OS: {e}")))?;
    encrypt_with_salt(plaintext, secret, vault_id, &salt)
}

/// As `encrypt` with a given salt: Ansible's `VAULT_ENCRYPT_SALT` setting (the setting's text is
/// the salt's bytes). A fixed salt makes equal plaintexts visible: for tests and reproducible output.
pub fn encrypt_with_salt(
    plaintext: &[u8],
    secret: &VaultSecret,
    vault_id: Option<&str>,
    salt: &[u8],
) -> Result<String> {
    if is_vaulted(plaintext) {
        return Err(VaultError::AlreadyEncrypted.on("the plaintext"));
    }
    if salt.is_empty() {
        return Err(Error::plain("Empty or invalid salt passed to encrypt()"));
    }
    if let Some(id) = vault_id {
        secrets::check_label(id)?;
    }
    Ok(envelope::format(&cipher::encrypt(plaintext, secret.bytes(), salt), vault_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(list: &[(&str, &str)]) -> VaultSecrets {
        VaultSecrets::new(list.iter().map(|(l, p)| (l.to_string(), VaultSecret::new(p.as_bytes().to_vec()))).collect())
    }

    #[test]
    fn several_secrets_and_labels() {
        let s = secrets(&[("a", "pa"), ("b", "pb")]);
        let text = encrypt(b"data", &VaultSecret::new(b"pb".to_vec()), Some("b")).unwrap();
        assert!(text.starts_with("$ANSIBLE_VAULT;1.2;AES256;b\n"));
        let (plain, used) = s.decrypt_and_get_vault_id(text.as_bytes()).unwrap();
        assert_eq!((&plain[..], used.as_str()), (&b"data"[..], "b"));
        // The label is only a hint: a secret under another label still decrypts it, as in Ansible.
        let relabelled = text.replacen(";b\n", ";zzz\n", 1);
        assert_eq!(&s.decrypt(relabelled.as_bytes()).unwrap()[..], b"data");
        let strict = VaultSecrets { id_match: true, ..secrets(&[("a", "pb")]) };
        assert_eq!(
            strict.decrypt(text.as_bytes()),
            Err(VaultError::NoMatch { vault_id: Some("b".into()), labels: vec!["a".into()] })
        );
    }

    #[test]
    fn errors() {
        let s = secrets(&[("default", "pw")]);
        assert_eq!(s.decrypt(b"hello"), Err(VaultError::NotVaulted));
        assert_eq!(secrets(&[]).decrypt(b"$ANSIBLE_VAULT;1.1;AES256\n00\n"), Err(VaultError::NoSecrets));
        assert_eq!(s.decrypt(b"$ANSIBLE_VAULT;1.1;DES\n00\n"), Err(VaultError::UnknownCipher("DES".into())));
        assert!(matches!(s.decrypt(b"$ANSIBLE_VAULT;1.1;AES256\nzz\n"), Err(VaultError::Format(_))));
        let text = encrypt(b"x", &VaultSecret::new(b"other".to_vec()), None).unwrap();
        let err = s.decrypt(text.as_bytes()).unwrap_err().on("group_vars/all.yml");
        assert_eq!(
            err.to_string(),
            "Decryption failed (no vault secrets were found that could decrypt) on group_vars/all.yml"
        );
        assert!(encrypt(text.as_bytes(), &VaultSecret::new(b"pw".to_vec()), None).is_err());
    }

    #[test]
    fn choosing_the_encrypt_secret() {
        let s = secrets(&[("a", "pa"), ("b", "pb")]);
        assert_eq!(s.encrypt_secret(Some("b")).unwrap().0, "b");
        assert_eq!(
            s.encrypt_secret(None).unwrap_err().to_string(),
            "The vault-ids a,b are available to encrypt. Specify the vault-id to encrypt with --encrypt-vault-id"
        );
        assert_eq!(
            s.encrypt_secret(Some("c")).unwrap_err().to_string(),
            "Did not find a match for --encrypt-vault-id=c in the known vault-ids ['a', 'b']"
        );
    }
}
