//! Ansible's `VaultAES256`: PBKDF2-HMAC-SHA256 (10,000 rounds) derives 80 bytes from the password
//! and salt — the AES-256 key, the HMAC-SHA256 key, the CTR initial counter — then AES-256-CTR over
//! the PKCS#7-padded plaintext (padding a stream cipher is useless, but it is the format), and an
//! HMAC-SHA256 over the ciphertext, checked in constant time before anything is decrypted.

use aes::Aes256;
use ctr::cipher::{KeyIvInit, StreamCipher};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use zeroize::Zeroizing;

use super::VaultError;
use super::envelope::{self, Vaulttext};

type Aes256Ctr = ctr::Ctr128BE<Aes256>;

const ROUNDS: u32 = 10_000;
const KEY_LEN: usize = 32;
const IV_LEN: usize = 16;
const BLOCK: usize = 16;

/// Ansible draws 32 random bytes (`os.urandom(32)`) per encryption.
pub const SALT_LEN: usize = 32;

struct Keys(Zeroizing<[u8; 2 * KEY_LEN + IV_LEN]>);

impl Keys {
    fn derive(password: &[u8], salt: &[u8]) -> Keys {
        let mut k = Zeroizing::new([0u8; 2 * KEY_LEN + IV_LEN]);
        pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, ROUNDS, &mut k[..]);
        Keys(k)
    }
    fn cipher(&self) -> &[u8] {
        &self.0[..KEY_LEN]
    }
    fn mac(&self) -> Hmac<Sha256> {
        <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0[KEY_LEN..2 * KEY_LEN]).expect("HMAC takes any key length")
    }
    fn ctr(&self) -> Aes256Ctr {
        Aes256Ctr::new_from_slices(self.cipher(), &self.0[2 * KEY_LEN..]).expect("32-byte key, 16-byte IV")
    }
}

/// The hexlified body (`format_vaulttext`), without the header.
pub fn encrypt(plaintext: &[u8], password: &[u8], salt: &[u8]) -> String {
    let keys = Keys::derive(password, salt);
    let pad = BLOCK - plaintext.len() % BLOCK;
    let mut data = Vec::with_capacity(plaintext.len() + pad);
    data.extend_from_slice(plaintext);
    data.resize(plaintext.len() + pad, pad as u8);
    keys.ctr().apply_keystream(&mut data);
    let mut mac = keys.mac();
    mac.update(&data);
    let tag = mac.finalize().into_bytes();
    envelope::format_vaulttext(salt, &tag, &data)
}

/// `Err(WrongSecret)` when the HMAC does not match: the caller tries the next secret.
pub fn decrypt(vt: &Vaulttext, password: &[u8]) -> Result<Zeroizing<Vec<u8>>, VaultError> {
    let keys = Keys::derive(password, &vt.salt);
    let mut mac = keys.mac();
    mac.update(&vt.ciphertext);
    // `verify_slice` compares in constant time (and rejects a tag of the wrong length).
    mac.verify_slice(&vt.hmac).map_err(|_| VaultError::WrongSecret)?;
    let mut data = Zeroizing::new(vt.ciphertext.clone());
    keys.ctr().apply_keystream(&mut data);
    let pad = data.last().copied().unwrap_or(0) as usize;
    let valid = (1..=BLOCK).contains(&pad)
        && data.len().is_multiple_of(BLOCK)
        && data.len() >= pad
        && data[data.len() - pad..].iter().all(|b| *b as usize == pad);
    if !valid {
        // Only reachable with a genuine HMAC over bad padding: a file written by a broken tool.
        return Err(VaultError::Format("Invalid padding bytes (the HMAC matched: the file was written with the right password by a tool that pads wrongly)".into()));
    }
    let len = data.len() - pad;
    data.truncate(len);
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written by ansible-vault 2.19 with `ANSIBLE_VAULT_ENCRYPT_SALT=0123456789abcdef0123456789abcdef`,
    /// password `pw1`, plaintext `hello\n`: a fixed salt makes the output deterministic.
    const KNOWN: &str = "$ANSIBLE_VAULT;1.1;AES256
33303331333233333334333533363337333833393631363236333634363536363330333133323333
3334333533363337333833393631363236333634363536360a656366323532663639343233663663
32366630373661633262623439643664353136666135613932613962336261323364396133363566
6165343735366439640a393766326538313237343034623533646239616131623465346537346363
6163
";

    #[test]
    fn known_answer_from_ansible_vault() {
        let salt = b"0123456789abcdef0123456789abcdef";
        assert_eq!(envelope::format(&encrypt(b"hello\n", b"pw1", salt), None), KNOWN);
        let env = envelope::parse(KNOWN.as_bytes()).unwrap();
        let vt = envelope::parse_vaulttext(&env.body).unwrap();
        assert_eq!(&decrypt(&vt, b"pw1").unwrap()[..], b"hello\n");
    }

    #[test]
    fn round_trip_and_padding() {
        for n in [0usize, 1, 15, 16, 17, 1000] {
            let plain = vec![b'x'; n];
            let body = encrypt(&plain, b"pw", b"salt-salt");
            let vt = envelope::parse_vaulttext(body.as_bytes()).unwrap();
            assert_eq!(vt.ciphertext.len(), (n / 16 + 1) * 16);
            assert_eq!(&decrypt(&vt, b"pw").unwrap()[..], &plain[..]);
            assert!(matches!(decrypt(&vt, b"other"), Err(VaultError::WrongSecret)));
        }
    }
}
