//! Hex digests: one spelling (lower-case hex) for every hash the service reports or records.

use std::fmt::Write;

use sha2::{Digest, Sha256};

/// Lower-case hex of some bytes.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        // Writing to a String cannot fail.
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Lower-case hex SHA-256 of some bytes (or text).
pub fn sha256_hex(bytes: impl AsRef<[u8]>) -> String {
    hex(&Sha256::digest(bytes.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_hex_known_vector() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(sha256_hex("abc"), sha256_hex(b"abc"));
        assert_eq!(hex(&[0x00, 0x0f, 0xff]), "000fff");
    }
}
