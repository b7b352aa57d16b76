//! `copctl vault encrypt|decrypt|view|encrypt_string`: ansible-vault's commands over the same
//! formats (src/vault), with its choices: the secrets are read first (prompting when no source
//! is given, twice before encrypting), `--encrypt-vault-id` picks the secret when there are
//! several, `-` is stdin/stdout. Files are rewritten atomically (a temporary file beside them,
//! renamed over them) and keep their mode and owner.

use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::Cli;
use super::args::VaultCmd;
use crate::error::{Error, Result, Source};
use crate::vault::{self, VaultSecret, VaultSecrets};

pub fn vault(cli: &Cli, what: &VaultCmd) -> Result<i32> {
    match what {
        VaultCmd::Encrypt { files, output, encrypt_vault_id } => {
            let secrets = secrets(cli, true)?;
            let (label, secret) = secrets.encrypt_secret(encrypt_vault_id.as_deref())?;
            for_each_file(files, output.as_deref(), |data, name| {
                if vault::is_vaulted(data) {
                    return Err(Error::with_help(
                        format!("input is already encrypted: {name}"),
                        "it is a vault file already: `copctl vault view` shows it",
                    ));
                }
                Ok(encrypt(data, secret, label)?.into_bytes())
            })
        }
        VaultCmd::Decrypt { files, output } => {
            let secrets = secrets(cli, false)?;
            for_each_file(files, output.as_deref(), |data, name| Ok(decrypt(&secrets, data, name)?.to_vec()))
        }
        VaultCmd::View { files } => {
            let secrets = secrets(cli, false)?;
            let mut out = std::io::stdout().lock();
            for f in files {
                let data = read_input(f)?;
                out.write_all(&decrypt(&secrets, &data, f)?)?;
            }
            out.flush()?;
            Ok(0)
        }
        VaultCmd::EncryptString { strings, names, stdin_name, output, encrypt_vault_id } => {
            encrypt_string(cli, strings, names, stdin_name.as_deref(), output.as_deref(), encrypt_vault_id.as_deref())
        }
    }
}

/// The secrets of a vault command: ansible-vault prompts when no source is given ("New Vault
/// password" twice before encrypting).
fn secrets(cli: &Cli, new_password: bool) -> Result<VaultSecrets> {
    let mut opts = cli.vault_options();
    opts.auto_prompt = true;
    opts.new_password = new_password;
    let secrets = VaultSecrets::from_sources(&opts)?;
    for w in &secrets.warnings {
        eprintln!("warning: {w}");
    }
    Ok(secrets)
}

/// `ANSIBLE_VAULT_ENCRYPT_SALT`, as ansible-vault reads it: a fixed salt (the text's bytes), for
/// reproducible output. Otherwise a random one per encryption.
fn encrypt(data: &[u8], secret: &VaultSecret, label: &str) -> Result<String> {
    match std::env::var("ANSIBLE_VAULT_ENCRYPT_SALT").ok().filter(|s| !s.is_empty()) {
        Some(salt) => vault::encrypt_with_salt(data, secret, Some(label), salt.as_bytes()),
        None => vault::encrypt(data, secret, Some(label)),
    }
}

fn decrypt(secrets: &VaultSecrets, data: &[u8], name: &str) -> Result<zeroize::Zeroizing<Vec<u8>>> {
    let header = Source::new(name, String::from_utf8_lossy(data.split(|b| *b == b'\n').next().unwrap_or_default()));
    if !vault::is_vaulted(data) {
        return Err(vault::VaultError::NotVaulted.on(name));
    }
    secrets.decrypt(data).map_err(|e| e.in_file(&header))
}

fn read_input(name: &str) -> Result<Vec<u8>> {
    if name == "-" {
        let mut data = Vec::new();
        std::io::stdin().lock().read_to_end(&mut data)?;
        return Ok(data);
    }
    std::fs::read(name).map_err(|e| {
        Error::with_help(format!("Unable to read source file ({name}): {e}"), "check the path of the file to work on")
    })
}

/// Reads each input (`-`: stdin), transforms it, and writes it back in place, or to `output`.
fn for_each_file(
    files: &[String],
    output: Option<&str>,
    transform: impl Fn(&[u8], &str) -> Result<Vec<u8>>,
) -> Result<i32> {
    let stdin = ["-".to_string()];
    let files = if files.is_empty() { &stdin[..] } else { files };
    if output.is_some() && files.len() > 1 {
        return Err(Error::with_help(
            "At most one input file may be used with the --output option",
            "give one file, or leave --output out to work on each file in place",
        ));
    }
    for f in files {
        // In place follows a symlink to the file it names, as ansible-vault does.
        let target = match output {
            Some(o) => o.to_string(),
            None if f == "-" => "-".to_string(),
            None => std::fs::canonicalize(f).map(|p| p.display().to_string()).unwrap_or_else(|_| f.clone()),
        };
        let data = read_input(f)?;
        let out = zeroize::Zeroizing::new(transform(&data, f)?);
        write_output(&target, &out)?;
    }
    Ok(0)
}

fn write_output(target: &str, data: &[u8]) -> Result<()> {
    if target == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(data)?;
        out.flush()?;
        return Ok(());
    }
    write_atomically(Path::new(target), data).map_err(|e| {
        Error::with_help(format!("cannot write {target}: {e}"), "check that its directory exists and is writable")
    })
}

/// Writes `data` to a new file beside `path` (mode 0600 while written), gives it the mode and
/// owner `path` had (0600 for a new file), and renames it over `path`: a reader sees the old
/// content or the new, never a part, and a crash leaves the old file.
fn write_atomically(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let old = std::fs::metadata(path).ok();
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let (tmp, mut file) = (0..100)
        .find_map(|i| {
            let tmp = dir.join(format!(".{name}.copctl-vault-{}-{i}", std::process::id()));
            match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp) {
                Ok(f) => Some(Ok((tmp, f))),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => None,
                Err(e) => Some(Err(e)),
            }
        })
        .unwrap_or_else(|| Err(std::io::Error::other("no free temporary file name")))?;
    let result = (|| {
        file.write_all(data)?;
        if let Some(m) = &old {
            // The owner first: chown clears set-id bits, which the mode then restores.
            let _ = std::os::unix::fs::fchown(&file, Some(m.uid()), Some(m.gid()));
            file.set_permissions(std::fs::Permissions::from_mode(m.mode() & 0o7777))?;
        }
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// `ansible-vault encrypt_string`: the strings given (named in order by --name), or stdin, each
/// printed as a `!vault |` block; with several, a comment on stderr says which is which.
fn encrypt_string(
    cli: &Cli,
    strings: &[String],
    names: &[String],
    stdin_name: Option<&str>,
    output: Option<&str>,
    encrypt_vault_id: Option<&str>,
) -> Result<i32> {
    let secrets = secrets(cli, true)?;
    let (label, secret) = secrets.encrypt_secret(encrypt_vault_id)?;
    let mut plaintexts: Vec<(zeroize::Zeroizing<String>, &str, Option<&str>)> = Vec::new();
    let args: Vec<&String> = strings.iter().filter(|s| *s != "-").collect();
    if strings.iter().any(|s| s == "-") || stdin_name.is_some() || strings.is_empty() {
        let mut text = zeroize::Zeroizing::new(String::new());
        std::io::stdin().lock().read_to_string(&mut text)?;
        if text.is_empty() {
            return Err(Error::with_help(
                "stdin was empty, not encrypting",
                "pipe the value in, or give it as an argument",
            ));
        }
        plaintexts.push((text, "stdin", stdin_name));
    }
    if args.len() > names.len() && !names.is_empty() {
        eprintln!("The number of --name options do not match the number of args.");
        eprintln!(
            "The last named variable will be \"{}\". The rest will not have names.",
            names.last().map(String::as_str).unwrap_or_default()
        );
    }
    for (i, a) in args.iter().enumerate() {
        if a.is_empty() {
            return Err(Error::with_help(
                "The plaintext provided from the command line args was empty, not encrypting",
                "give a non-empty string",
            ));
        }
        plaintexts.push((
            zeroize::Zeroizing::new(a.to_string()),
            "the command line args",
            names.get(i).map(String::as_str),
        ));
    }
    let several = plaintexts.len() > 1;
    let mut blocks = Vec::new();
    for (i, (plain, from, name)) in plaintexts.iter().enumerate() {
        let text = encrypt(plain.as_bytes(), secret, label)?;
        if several {
            match name {
                Some(n) => {
                    eprintln!("# The encrypted version of variable (\"{n}\", the string #{} from {from}).", i + 1)
                }
                // ansible-vault's own text, stray parenthesis included.
                None => eprintln!("# The encrypted version of the string #{} from {from}.)", i + 1),
            }
        }
        blocks.push(vault::encrypt_string_block(&text, *name));
    }
    blocks.push(String::new());
    write_output(output.unwrap_or("-"), blocks.join("\n").as_bytes())?;
    Ok(0)
}
