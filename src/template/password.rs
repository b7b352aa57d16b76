//! Ansible's `password_hash` filter: a crypt(3) hash of a password for the `user` module, as
//! Ansible makes it with passlib (its `do_encrypt`): SHA-512 (`$6$`, 656000 rounds unless
//! `rounds` says) or SHA-256 (`$5$`, 535000), a 16-character salt drawn at random unless `salt`
//! is given; `rounds=5000` left out of the text, as passlib leaves it. And the password lookup,
//! which makes and stores passwords for it.

use minijinja::value::{Kwargs, Rest, Value};
use minijinja::{Environment, Error, ErrorKind};

fn fail(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg.into())
}

/// crypt(3)'s salt alphabet.
const SALT_CHARS: &[u8] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

fn random_salt(size: usize) -> Result<String, Error> {
    random_from(&SALT_CHARS.iter().map(|b| *b as char).collect::<Vec<_>>(), size)
}

/// The hash of `password` by `hashtype` (Ansible's names), with passlib's rules for the salt
/// and rounds.
pub fn password_hash(
    password: &str,
    hashtype: &str,
    salt: Option<&str>,
    salt_size: Option<usize>,
    rounds: Option<usize>,
) -> Result<String, Error> {
    let (id, default_rounds) = match hashtype {
        "sha512" | "sha512_crypt" => ("6", 656_000),
        "sha256" | "sha256_crypt" => ("5", 535_000),
        "md5" | "md5_crypt" | "blowfish" | "bcrypt" => {
            return Err(fail(format!(
                "password_hash: '{hashtype}' is not supported yet: copctl hashes with sha512 or sha256"
            )));
        }
        other => {
            return Err(fail(format!(
                "{other} is not in the list of supported passlib algorithms: md5, blowfish, sha256, sha512"
            )));
        }
    };
    let salt = match salt.filter(|s| !s.is_empty()) {
        Some(s) if s.len() > 16 => {
            return Err(fail(format!("password_hash: the salt is {} characters: at most 16", s.len())));
        }
        Some(s) if !s.bytes().all(|b| SALT_CHARS.contains(&b)) => {
            return Err(fail("password_hash: a salt holds only the characters ./0-9A-Za-z".to_string()));
        }
        Some(s) => s.to_string(),
        None => random_salt(salt_size.unwrap_or(16).clamp(1, 16))?,
    };
    let rounds = rounds.unwrap_or(default_rounds);
    let params = u32::try_from(rounds)
        .ok()
        .and_then(|r| sha_crypt::Params::new(r).ok())
        .ok_or_else(|| fail(format!("password_hash: rounds must be from 1000 to 999999999, not {rounds}")))?;
    let hash = if id == "6" {
        crypt_text(&sha_crypt::sha512_crypt(password.as_bytes(), salt.as_bytes(), params), &SHA512_ORDER)
    } else {
        crypt_text(&sha_crypt::sha256_crypt(password.as_bytes(), salt.as_bytes(), params), &SHA256_ORDER)
    };
    Ok(if rounds == 5000 { format!("${id}${salt}${hash}") } else { format!("${id}$rounds={rounds}${salt}${hash}") })
}

/// The order in which crypt(3) writes the digest's bytes before its base64 (the SHA-crypt
/// specification's tables; sha-crypt keeps them private behind its MCF API, which base64s the
/// salt itself, where Ansible gives the salt as text).
const SHA512_ORDER: [usize; 64] = [
    42, 21, 0, 1, 43, 22, 23, 2, 44, 45, 24, 3, 4, 46, 25, 26, 5, 47, 48, 27, 6, 7, 49, 28, 29, 8, 50, 51, 30, 9, 10,
    52, 31, 32, 11, 53, 54, 33, 12, 13, 55, 34, 35, 14, 56, 57, 36, 15, 16, 58, 37, 38, 17, 59, 60, 39, 18, 19, 61, 40,
    41, 20, 62, 63,
];
const SHA256_ORDER: [usize; 32] = [
    20, 10, 0, 11, 1, 21, 2, 22, 12, 23, 13, 3, 14, 4, 24, 5, 25, 15, 26, 16, 6, 17, 7, 27, 8, 28, 18, 29, 19, 9, 30,
    31,
];

fn crypt_text(digest: &[u8], order: &[usize]) -> String {
    use base64ct::{Base64ShaCrypt, Encoding};
    let transposed: Vec<u8> = order.iter().map(|&i| digest[i]).collect();
    Base64ShaCrypt::encode_string(&transposed)
}

pub fn add(env: &mut Environment<'static>) {
    // password_hash(hashtype='sha512', salt=None, salt_size=None, rounds=None, ident=None)
    env.add_filter("password_hash", |password: String, args: Rest<Value>, kw: Kwargs| -> Result<String, Error> {
        let pos = |i: usize, name: &str| -> Result<Option<Value>, Error> {
            match (args.get(i), kw.get::<Option<Value>>(name)?) {
                (Some(v), _) => Ok(Some(v.clone())),
                (None, v) => Ok(v),
            }
        };
        let text = |v: Option<Value>| {
            v.filter(|v| !v.is_none()).map(|v| v.as_str().map(str::to_string).unwrap_or(v.to_string()))
        };
        let number = |v: Option<Value>, name: &str| -> Result<Option<usize>, Error> {
            match v.filter(|v| !v.is_none()) {
                None => Ok(None),
                Some(v) => usize::try_from(v.clone())
                    .map(Some)
                    .map_err(|_| fail(format!("password_hash: {name} must be a whole number, not {v}"))),
            }
        };
        let hashtype = text(pos(0, "hashtype")?).unwrap_or_else(|| "sha512".into());
        let salt = text(pos(1, "salt")?);
        let salt_size = number(pos(2, "salt_size")?, "salt_size")?;
        let rounds = number(pos(3, "rounds")?, "rounds")?;
        // passlib reads `ident` for bcrypt only, which copctl refuses above.
        let _ = pos(4, "ident")?;
        kw.assert_all_used()?;
        password_hash(&password, &hashtype, salt.as_deref(), salt_size, rounds)
    });
}

/// Python's `string` module sets the password lookup's `chars` may name.
fn char_set(spec: &str) -> String {
    let lower = "abcdefghijklmnopqrstuvwxyz";
    let upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let punct = r##"!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~"##;
    match spec {
        "ascii_letters" => format!("{lower}{upper}"),
        "ascii_lowercase" => lower.into(),
        "ascii_uppercase" => upper.into(),
        "digits" => "0123456789".into(),
        "hexdigits" => "0123456789abcdefABCDEF".into(),
        "octdigits" => "01234567".into(),
        "punctuation" => punct.into(),
        "printable" => format!("0123456789{lower}{upper}{punct} \t\n\r\x0b\x0c"),
        "whitespace" => " \t\n\r\x0b\x0c".into(),
        other => other.into(),
    }
}

/// `length` characters drawn uniformly from `chars` (rejection sampling: no modulo bias).
fn random_from(chars: &[char], length: usize) -> Result<String, Error> {
    if chars.is_empty() {
        return Err(fail("lookup('password', ...): no characters to choose from"));
    }
    let limit = 256 - 256 % chars.len();
    let mut out = String::new();
    while out.chars().count() < length {
        let mut buf = [0u8; 64];
        getrandom::fill(&mut buf).map_err(|e| fail(format!("cannot read random bytes from the OS: {e}")))?;
        for b in buf {
            if (b as usize) < limit && out.chars().count() < length {
                out.push(chars[b as usize % chars.len()]);
            }
        }
    }
    Ok(out)
}

/// Writers of password files, one at a time: hosts render at once, and the first one's
/// password must be the one every other host reads (Ansible's lock file).
static PASSWORD_FILES: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Ansible's password lookup for one term (`PATH [length=N] [chars=SPEC,...] [encrypt=SCHEME]`,
/// the options also as keyword arguments): the password stored at PATH (relative to the
/// playbook's directory), or a new one written there (0600, its directory 0700); `/dev/null`
/// never stores it. With `encrypt`, the salt is stored beside it and the hash returned.
/// `planning`: nothing is written (a missing file gives "").
pub fn password_lookup(
    term: &str,
    kw: &minijinja::value::Kwargs,
    base: Option<&std::path::Path>,
    planning: bool,
) -> Result<String, Error> {
    let (rel, rest) = term.split_once(' ').unwrap_or((term, ""));
    let mut params: Vec<(String, String)> = Vec::new();
    for word in rest.split_whitespace() {
        let Some((k, v)) = word.split_once('=') else {
            return Err(fail("Unrecognized value after key=value parameters given to password lookup"));
        };
        params.push((k.to_string(), v.trim_matches(|c| c == '"' || c == '\'').to_string()));
    }
    for k in ["length", "chars", "encrypt", "seed", "ident"] {
        if let Some(v) = kw.get::<Option<Value>>(k)? {
            let v = v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
            params.push((k.to_string(), v));
        }
    }
    let get = |k: &str| params.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    if let Some((k, _)) =
        params.iter().find(|(k, _)| !matches!(k.as_str(), "length" | "chars" | "encrypt" | "seed" | "ident"))
    {
        return Err(fail(format!("Unrecognized parameter(s) given to password lookup: {k}")));
    }
    if get("seed").is_some() || get("ident").is_some() {
        return Err(fail("lookup('password', ...): seed and ident are not supported yet"));
    }
    let length: usize = match get("length") {
        None => 20,
        Some(l) => l.parse().map_err(|_| fail(format!("lookup('password', ...): length must be a number, not {l}")))?,
    };
    let chars: String = match get("chars") {
        None => format!("{}{}.,:-_", char_set("ascii_letters"), char_set("digits")),
        Some(spec) => {
            let mut parts: Vec<String> = Vec::new();
            if spec.contains(",,") {
                parts.push(",".into());
            }
            parts.extend(spec.replace(",,", ",").split(',').filter(|c| !c.is_empty()).map(char_set));
            parts.concat().replace(['"', '\''], "")
        }
    };
    let encrypt = get("encrypt");
    let path = match base {
        Some(b) if !rel.starts_with('/') => b.join(rel),
        _ => std::path::PathBuf::from(rel),
    };
    let null = path == std::path::Path::new("/dev/null");
    let _one_at_a_time = PASSWORD_FILES.lock().unwrap_or_else(|e| e.into_inner());
    let stored = if null { None } else { std::fs::read_to_string(&path).ok().map(|c| c.trim_end().to_string()) };
    let (password, salt, changed) = match stored {
        Some(c) => match c.rsplit_once(" salt=") {
            Some((p, s)) => (p.to_string(), Some(s.to_string()), false),
            None => (c, None, false),
        },
        None if planning => return Ok(String::new()),
        None => (random_from(&chars.chars().collect::<Vec<_>>(), length)?, None, true),
    };
    let (salt, changed) = match (&encrypt, salt) {
        // Ansible's random_salt: letters, digits and "./", crypt(3)'s alphabet.
        (Some(_), None) => (Some(random_salt(16)?), true),
        (_, s) => (s, changed),
    };
    if changed && !null && !planning {
        let content = match (&encrypt, &salt) {
            (Some(_), Some(s)) => format!("{password} salt={s}\n"),
            _ => format!("{password}\n"),
        };
        write_private(&path, &content)
            .map_err(|e| fail(format!("lookup('password', ...): cannot write {}: {e}", path.display())))?;
    }
    match encrypt.as_deref() {
        None => Ok(password),
        Some(scheme) => password_hash(&password, scheme, salt.as_deref(), None, None),
    }
}

fn write_private(path: &std::path::Path, content: &str) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    }
    let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)?;
    std::io::Write::write_all(&mut f, content.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_passlibs() {
        // passlib 1.7.4's sha512_crypt / sha256_crypt with the same salt and rounds.
        assert_eq!(
            password_hash("secret", "sha512", Some("saltsalt"), None, None).unwrap(),
            "$6$rounds=656000$saltsalt$Vg7us3Hcq8rplCTNjwvGRwObM2xyfDZZ.XP2YLQ.ii85wAq/psu28uEfoMveNszsQWMgkWRxbZm2mBBlNn3.J0"
        );
        assert_eq!(
            password_hash("secret", "sha512", Some("saltsalt"), None, Some(5000)).unwrap(),
            "$6$saltsalt$TVLlQcbpFVof5W3Yz4DTP6gRstiNuHwwTt6GLc1E5n0U0aDehy0S5knV8wiOQSpT0Y77vwPZN.Pq.H91p5hVO1"
        );
        assert_eq!(
            password_hash("secret", "sha256", Some("saltsalt"), None, None).unwrap(),
            "$5$rounds=535000$saltsalt$VSmVlMm.XSbjLKI0G48ksoE0xc0243La2Jr.EPuau75"
        );
        let random = password_hash("secret", "sha512", None, None, Some(1000)).unwrap();
        assert!(random.starts_with("$6$rounds=1000$") && random.len() == 15 + 17 + 86, "{random}");
        assert_eq!(
            password_hash("x", "md5", None, None, None).unwrap_err().detail(),
            Some("password_hash: 'md5' is not supported yet: copctl hashes with sha512 or sha256")
        );
    }
}
