//! The `secretbox` provider's cipher (kubernetes/apiserver
//! `pkg/storage/value/encrypt/secretbox/secretbox.go`): NaCl's secretbox (XSalsa20-Poly1305).
//! On disk, after the prefixes: a random 24-byte nonce, then the box as NaCl seals it (the
//! 16-byte tag first, then the ciphertext).

use crypto_secretbox::XSalsa20Poly1305;
use crypto_secretbox::aead::{Aead, KeyInit};

const NONCE_SIZE: usize = 24;
const OVERHEAD: usize = 16;

pub(crate) struct SecretBox(Box<XSalsa20Poly1305>);

impl SecretBox {
    /// `None` unless the key is 32 bytes (validation has refused others already).
    pub fn new(key: &[u8]) -> Option<Self> {
        let key: [u8; 32] = key.try_into().ok()?;
        Some(Self(Box::new(XSalsa20Poly1305::new(&key.into()))))
    }

    /// `nonce ‖ tag ‖ ciphertext`, appended to `out`.
    pub fn seal(&self, data: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        let mut nonce = [0u8; NONCE_SIZE];
        crate::aes::random(&mut nonce)?;
        self.seal_with(&nonce, data, out)
    }

    fn seal_with(
        &self,
        nonce: &[u8; NONCE_SIZE],
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        let sealed = self
            .0
            .encrypt(nonce.into(), data)
            .map_err(|_| "failed to encrypt with secretbox".to_owned())?;
        out.extend_from_slice(nonce);
        out.extend_from_slice(&sealed);
        Ok(())
    }

    pub fn open(&self, data: &[u8]) -> Result<Vec<u8>, String> {
        if data.len() < OVERHEAD + NONCE_SIZE {
            return Err("the stored data was shorter than the required size".to_owned());
        }
        let (nonce, sealed) = data.split_at(NONCE_SIZE);
        let nonce: [u8; NONCE_SIZE] = nonce
            .try_into()
            .map_err(|_| "the stored data was shorter than the required size".to_owned())?;
        // Upstream's text for a box that does not open, word for word.
        self.0
            .decrypt(&nonce.into(), sealed)
            .map_err(|_| "output array was not large enough for encryption".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// golang.org/x/crypto `nacl/secretbox` `TestSecretBox`, whose expected box was generated
    /// with the C implementation of NaCl.
    #[test]
    fn seals_as_nacl_does() {
        let expected = concat!(
            "8442bc313f4626f1359e3b50122b6ce6fe66ddfe7d39d14e637eb4fd5b45beadab55198df6ab5368",
            "439792a23c87db70acb6156dc5ef957ac04f6276cf6093b84be77ff0849cc33e34b7254d5a8f65ad"
        );
        let sb = SecretBox::new(&[1; 32]).unwrap();
        let mut out = Vec::new();
        sb.seal_with(&[2; NONCE_SIZE], &[3; 64], &mut out).unwrap();
        let hex: String = out[NONCE_SIZE..]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(hex, expected);
        assert_eq!(sb.open(&out).unwrap(), vec![3; 64]);
    }

    #[test]
    fn round_trips_and_refuses_a_wrong_key() {
        let sb = SecretBox::new(&[5; 32]).unwrap();
        let mut out = Vec::new();
        sb.seal(b"{\"data\":{}}", &mut out).unwrap();
        assert_eq!(sb.open(&out).unwrap(), b"{\"data\":{}}");
        assert_eq!(
            SecretBox::new(&[6; 32]).unwrap().open(&out).unwrap_err(),
            "output array was not large enough for encryption"
        );
        assert_eq!(
            sb.open(&[0; 39]).unwrap_err(),
            "the stored data was shorter than the required size"
        );
        assert!(SecretBox::new(&[0; 16]).is_none());
    }
}
