//! Ansible's `password_hash` filter: a crypt(3) hash of a password for the `user` module, as
//! Ansible makes it with passlib (its `do_encrypt`): SHA-512 (`$6$`, 656000 rounds unless
//! `rounds` says) or SHA-256 (`$5$`, 535000), a 16-character salt drawn at random unless `salt`
//! is given; `rounds=5000` left out of the text, as passlib leaves it.

use minijinja::value::{Kwargs, Rest, Value};
use minijinja::{Environment, Error, ErrorKind};

fn fail(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg.into())
}

/// crypt(3)'s salt alphabet.
const SALT_CHARS: &[u8] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

fn random_salt(size: usize) -> Result<String, Error> {
    let mut bytes = vec![0u8; size];
    getrandom::fill(&mut bytes).map_err(|e| fail(format!("password_hash: cannot read random bytes: {e}")))?;
    Ok(bytes.iter().map(|b| SALT_CHARS[(*b as usize) % SALT_CHARS.len()] as char).collect())
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
    let bad_rounds = |_| fail(format!("password_hash: rounds must be from 1000 to 999999999, not {rounds}"));
    let hash = if id == "6" {
        let p = sha_crypt::Sha512Params::new(rounds).map_err(bad_rounds)?;
        sha_crypt::sha512_crypt_b64(password.as_bytes(), salt.as_bytes(), &p)
    } else {
        let p = sha_crypt::Sha256Params::new(rounds).map_err(bad_rounds)?;
        sha_crypt::sha256_crypt_b64(password.as_bytes(), salt.as_bytes(), &p)
    }
    .map_err(|e| fail(format!("password_hash: Could not hash the secret: {e:?}")))?;
    Ok(if rounds == 5000 { format!("${id}${salt}${hash}") } else { format!("${id}$rounds={rounds}${salt}${hash}") })
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
        let _ = pos(4, "ident")?;
        kw.assert_all_used()?;
        password_hash(&password, &hashtype, salt.as_deref(), salt_size, rounds)
    });
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
