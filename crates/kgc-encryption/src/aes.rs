//! The `aesgcm` and `aescbc` providers' ciphers (kubernetes/apiserver
//! `pkg/storage/value/encrypt/aes/aes.go`: `gcm` and `cbc`).
//!
//! On disk, after the provider's and key's prefixes: AES-GCM is a random 12-byte nonce, then the
//! ciphertext and its 16-byte tag, authenticated with the storage key; AES-CBC is a random
//! 16-byte IV, then the PKCS#7-padded ciphertext (no authentication: upstream documents aescbc as
//! weaker, and kgc only reads and writes it for compatibility).

use ::aes::{Aes128, Aes192, Aes256};
use aes_gcm::AesGcm;
use aes_gcm::aead::consts::U12;
use aes_gcm::aead::rand_core::RngCore;
use aes_gcm::aead::{Aead, KeyInit, OsRng, Payload};
use cbc::cipher::block_padding::NoPadding;
use cbc::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit};

const NONCE_SIZE: usize = 12;
const BLOCK_SIZE: usize = 16;

/// Go's `crypto/cipher` error for a tag that does not verify.
const AUTH_FAILED: &str = "cipher: message authentication failed";
const SHORT: &str = "the stored data was shorter than the required size";
const NO_RANDOMNESS: &str = "unable to read sufficient random bytes";

/// An AES key of one of the three sizes kube-apiserver accepts (`aes.NewCipher`).
#[derive(Clone)]
enum AesKey {
    A128([u8; 16]),
    A192([u8; 24]),
    A256([u8; 32]),
}

impl AesKey {
    fn new(key: &[u8]) -> Option<Self> {
        Some(match key.len() {
            16 => Self::A128(key.try_into().ok()?),
            24 => Self::A192(key.try_into().ok()?),
            32 => Self::A256(key.try_into().ok()?),
            _ => return None,
        })
    }
}

/// Fills `buf` from the operating system's random source.
pub(crate) fn random(buf: &mut [u8]) -> Result<(), String> {
    OsRng
        .try_fill_bytes(buf)
        .map_err(|_| NO_RANDOMNESS.to_owned())
}

/// An AES-GCM key (`aesgcm` provider).
pub(crate) struct Gcm(GcmCipher);

enum GcmCipher {
    A128(Box<AesGcm<Aes128, U12>>),
    A192(Box<AesGcm<Aes192, U12>>),
    A256(Box<AesGcm<Aes256, U12>>),
}

impl Gcm {
    /// `None` for a key of the wrong length (validation has refused those already).
    pub fn new(key: &[u8]) -> Option<Self> {
        Some(Self(match AesKey::new(key)? {
            AesKey::A128(k) => GcmCipher::A128(Box::new(AesGcm::new(&k.into()))),
            AesKey::A192(k) => GcmCipher::A192(Box::new(AesGcm::new(&k.into()))),
            AesKey::A256(k) => GcmCipher::A256(Box::new(AesGcm::new(&k.into()))),
        }))
    }

    /// `nonce ‖ ciphertext ‖ tag`, appended to `out`.
    pub fn seal(&self, data: &[u8], aad: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        let mut nonce = [0u8; NONCE_SIZE];
        random(&mut nonce)?;
        let payload = Payload { msg: data, aad };
        let sealed = match &self.0 {
            GcmCipher::A128(c) => c.encrypt(&nonce.into(), payload),
            GcmCipher::A192(c) => c.encrypt(&nonce.into(), payload),
            GcmCipher::A256(c) => c.encrypt(&nonce.into(), payload),
        }
        .map_err(|_| "failed to encrypt with AES-GCM".to_owned())?;
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(())
    }

    pub fn open(&self, data: &[u8], aad: &[u8]) -> Result<Vec<u8>, String> {
        if data.len() < NONCE_SIZE {
            return Err(SHORT.to_owned());
        }
        let (nonce, sealed) = data.split_at(NONCE_SIZE);
        let nonce: [u8; NONCE_SIZE] = nonce.try_into().map_err(|_| SHORT.to_owned())?;
        let payload = Payload { msg: sealed, aad };
        match &self.0 {
            GcmCipher::A128(c) => c.decrypt(&nonce.into(), payload),
            GcmCipher::A192(c) => c.decrypt(&nonce.into(), payload),
            GcmCipher::A256(c) => c.decrypt(&nonce.into(), payload),
        }
        .map_err(|_| AUTH_FAILED.to_owned())
    }
}

/// An AES-CBC key (`aescbc` provider).
pub(crate) struct Cbc(AesKey);

impl Cbc {
    pub fn new(key: &[u8]) -> Option<Self> {
        AesKey::new(key).map(Self)
    }

    /// `iv ‖ ciphertext` of the PKCS#7-padded data, appended to `out`.
    pub fn seal(&self, data: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        let mut iv = [0u8; BLOCK_SIZE];
        random(&mut iv)?;
        let padding = BLOCK_SIZE - data.len() % BLOCK_SIZE;
        let mut buf = Vec::with_capacity(data.len() + padding);
        buf.extend_from_slice(data);
        buf.resize(data.len() + padding, padding as u8);
        let len = buf.len();
        let sealed = match &self.0 {
            AesKey::A128(k) => cbc::Encryptor::<Aes128>::new(k.into(), &iv.into())
                .encrypt_padded_mut::<NoPadding>(&mut buf, len)
                .map(|s| s.len()),
            AesKey::A192(k) => cbc::Encryptor::<Aes192>::new(k.into(), &iv.into())
                .encrypt_padded_mut::<NoPadding>(&mut buf, len)
                .map(|s| s.len()),
            AesKey::A256(k) => cbc::Encryptor::<Aes256>::new(k.into(), &iv.into())
                .encrypt_padded_mut::<NoPadding>(&mut buf, len)
                .map(|s| s.len()),
        }
        .map_err(|_| "failed to encrypt with AES-CBC".to_owned())?;
        out.extend_from_slice(&iv);
        out.extend_from_slice(&buf[..sealed]);
        Ok(())
    }

    pub fn open(&self, data: &[u8]) -> Result<Vec<u8>, String> {
        if data.len() < BLOCK_SIZE {
            return Err(SHORT.to_owned());
        }
        let (iv, sealed) = data.split_at(BLOCK_SIZE);
        if sealed.len() % BLOCK_SIZE != 0 {
            return Err("the stored data is not a multiple of the block size".to_owned());
        }
        let iv: [u8; BLOCK_SIZE] = iv.try_into().map_err(|_| SHORT.to_owned())?;
        let mut buf = sealed.to_vec();
        let opened = match &self.0 {
            AesKey::A128(k) => cbc::Decryptor::<Aes128>::new(k.into(), &iv.into())
                .decrypt_padded_mut::<NoPadding>(&mut buf)
                .map(|s| s.len()),
            AesKey::A192(k) => cbc::Decryptor::<Aes192>::new(k.into(), &iv.into())
                .decrypt_padded_mut::<NoPadding>(&mut buf)
                .map(|s| s.len()),
            AesKey::A256(k) => cbc::Decryptor::<Aes256>::new(k.into(), &iv.into())
                .decrypt_padded_mut::<NoPadding>(&mut buf)
                .map(|s| s.len()),
        }
        .map_err(|_| "the stored data is not a multiple of the block size".to_owned())?;
        buf.truncate(opened);
        // PKCS#7, checked as upstream checks it (and with its error texts).
        let Some(&last) = buf.last() else {
            return Err("invalid PKCS7 data (empty or not padded)".to_owned());
        };
        let padding = usize::from(last);
        if padding == 0 || padding > buf.len() {
            return Err("invalid PKCS7 data (empty or not padded)".to_owned());
        }
        let size = buf.len() - padding;
        if buf[size..].iter().any(|&b| b != last) {
            return Err("invalid padding on input".to_owned());
        }
        buf.truncate(size);
        Ok(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn gcm_round_trips_with_every_key_size_and_binds_the_storage_key() {
        for len in [16, 24, 32] {
            let gcm = Gcm::new(&vec![7u8; len]).unwrap();
            let mut sealed = Vec::new();
            gcm.seal(b"{\"data\":1}", b"/registry/secrets/a/b", &mut sealed)
                .unwrap();
            assert_eq!(sealed.len(), NONCE_SIZE + 10 + 16);
            assert_eq!(
                gcm.open(&sealed, b"/registry/secrets/a/b").unwrap(),
                b"{\"data\":1}"
            );
            assert_eq!(
                gcm.open(&sealed, b"/registry/secrets/a/c").unwrap_err(),
                AUTH_FAILED
            );
        }
        assert!(Gcm::new(&[0; 20]).is_none());
        assert_eq!(
            Gcm::new(&[0; 16]).unwrap().open(b"short", b"").unwrap_err(),
            SHORT
        );
    }

    /// The test case 4 of McGrew and Viega's GCM specification (AES-128, 60 bytes, 20 bytes of
    /// authenticated data), in the on-disk layout (nonce first).
    #[test]
    fn gcm_opens_the_specification_test_vector() {
        let key = hex("feffe9928665731c6d6a8f9467308308");
        let nonce = hex("cafebabefacedbaddecaf888");
        let plain = hex(concat!(
            "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72",
            "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
        ));
        let aad = hex("feedfacedeadbeeffeedfacedeadbeefabaddad2");
        let cipher = hex(concat!(
            "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e",
            "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091",
            "5bc94fbc3221a5db94fae95ae7121a47"
        ));
        let mut stored = nonce;
        stored.extend_from_slice(&cipher);
        assert_eq!(Gcm::new(&key).unwrap().open(&stored, &aad).unwrap(), plain);
    }

    #[test]
    fn cbc_round_trips_and_reports_upstreams_errors() {
        for len in [16, 24, 32] {
            let cbc = Cbc::new(&vec![9u8; len]).unwrap();
            for data in [&b""[..], b"0123456789abcdef", b"{\"kind\":\"Secret\"}"] {
                let mut sealed = Vec::new();
                cbc.seal(data, &mut sealed).unwrap();
                assert_eq!(sealed.len(), BLOCK_SIZE + (data.len() / 16 + 1) * 16);
                assert_eq!(cbc.open(&sealed).unwrap(), data);
            }
        }
        let cbc = Cbc::new(&[1; 32]).unwrap();
        assert_eq!(cbc.open(b"short").unwrap_err(), SHORT);
        assert_eq!(
            cbc.open(&[0; 20]).unwrap_err(),
            "the stored data is not a multiple of the block size"
        );
        // A wrong key decrypts to garbage whose padding almost never checks out.
        let mut sealed = Vec::new();
        cbc.seal(b"some secret value", &mut sealed).unwrap();
        let wrong = Cbc::new(&[2; 32]).unwrap().open(&sealed).unwrap_err();
        assert!(
            wrong == "invalid padding on input"
                || wrong == "invalid PKCS7 data (empty or not padded)",
            "{wrong}"
        );
    }

    /// NIST SP 800-38A F.2.5 (CBC-AES256, first block), with the PKCS#7 block kube-apiserver
    /// appends to a full block.
    #[test]
    fn cbc_opens_the_nist_test_vector() {
        let key = hex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4");
        let iv = hex("000102030405060708090a0b0c0d0e0f");
        let plain = hex("6bc1bee22e409f96e93d7e117393172a");
        let mut buf = plain.clone();
        buf.extend_from_slice(&[16; 16]);
        let len = buf.len();
        let enc = cbc::Encryptor::<Aes256>::new(key.as_slice().into(), iv.as_slice().into())
            .encrypt_padded_mut::<NoPadding>(&mut buf, len)
            .unwrap()
            .to_vec();
        assert_eq!(enc[..16], hex("f58c4c04d6e5f1ba779eabfb5f7bfbd6")[..]);
        let mut stored = iv;
        stored.extend_from_slice(&enc);
        assert_eq!(Cbc::new(&key).unwrap().open(&stored).unwrap(), plain);
    }
}
