//! `[]byte` as JSON: standard base64, decoded as Go's `base64.StdEncoding.Decode` decodes it
//! (encoding/json's `literalStore` calls it), so the same strings are refused at the same byte.
//!
//! Go's decoder (src/encoding/base64/base64.go `decodeQuantum`) skips `\r` and `\n` anywhere,
//! requires the padding, and, not being strict, accepts non-zero bits after the last byte; it
//! reports `illegal base64 data at input byte N` at the first offending byte. encoding/json
//! then prints the bytes again in canonical form, which is what kube-apiserver stores.

/// The decoded bytes, or the offset Go's `CorruptInputError` names.
pub(crate) fn decode(src: &[u8]) -> Result<Vec<u8>, usize> {
    let mut out = Vec::with_capacity(src.len() / 4 * 3);
    let mut si = 0;
    while si < src.len() {
        si = quantum(src, si, &mut out)?;
    }
    Ok(out)
}

fn value(b: u8) -> Option<u8> {
    match b {
        b'A'..=b'Z' => Some(b - b'A'),
        b'a'..=b'z' => Some(b - b'a' + 26),
        b'0'..=b'9' => Some(b - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

fn is_newline(b: u8) -> bool {
    b == b'\n' || b == b'\r'
}

/// Go's `decodeQuantum`: decodes up to four symbols from `src[si..]` into `out` and returns the
/// next offset.
fn quantum(src: &[u8], mut si: usize, out: &mut Vec<u8>) -> Result<usize, usize> {
    let mut buf = [0u8; 4];
    let mut len = 4;
    let mut j = 0;
    let mut trailing = None;
    while j < 4 {
        if si == src.len() {
            return match j {
                0 => Ok(si),
                // Padding is required: an incomplete quantum is corrupt.
                _ => Err(si - j),
            };
        }
        let b = src[si];
        si += 1;
        if let Some(v) = value(b) {
            buf[j] = v;
            j += 1;
            continue;
        }
        if is_newline(b) {
            continue;
        }
        if b != b'=' {
            return Err(si - 1);
        }
        // Padding: only after two or three symbols; `==` after two.
        match j {
            0 | 1 => return Err(si - 1),
            2 => {
                while si < src.len() && is_newline(src[si]) {
                    si += 1;
                }
                if si == src.len() {
                    return Err(src.len());
                }
                if src[si] != b'=' {
                    return Err(si - 1);
                }
                si += 1;
            }
            _ => {}
        }
        while si < src.len() && is_newline(src[si]) {
            si += 1;
        }
        if si < src.len() {
            // Go decodes this quantum, then reports the trailing garbage.
            trailing = Some(si);
        }
        len = j;
        break;
    }
    let n = u32::from(buf[0]) << 18
        | u32::from(buf[1]) << 12
        | u32::from(buf[2]) << 6
        | u32::from(buf[3]);
    let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
    out.extend_from_slice(&bytes[..len - 1]);
    match trailing {
        Some(at) => Err(at),
        None => Ok(si),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_like_go() {
        assert_eq!(decode(b""), Ok(vec![]));
        assert_eq!(decode(b"Zg=="), Ok(b"f".to_vec()));
        assert_eq!(decode(b"Zm8="), Ok(b"fo".to_vec()));
        assert_eq!(decode(b"Zm9v"), Ok(b"foo".to_vec()));
        assert_eq!(decode(b"Zm9v\r\nYmFy\n"), Ok(b"foobar".to_vec()));
        assert_eq!(decode(b"Zm\n8\r="), Ok(b"fo".to_vec()));
        // Not strict: non-zero trailing bits are accepted (and dropped).
        assert_eq!(decode(b"Zh=="), Ok(b"f".to_vec()));
    }

    #[test]
    fn corrupt_input_offsets_like_go() {
        for (input, offset) in [
            (&b"Zg"[..], 0),
            (b"Zg=", 3),
            (b"Z", 0),
            (b"Zm9vY", 4),
            (b"Zm9v*", 4),
            (b"=", 0),
            (b"Z===", 1),
            (b"Zg=x", 2),
            (b"Zg==Zg==", 4),
            (b"Zm8=x", 4),
            (b"not base64!", 3),
            (b"Zm9v Ym", 4),
            (b"Zm\n", 1),
        ] {
            assert_eq!(
                decode(input),
                Err(offset),
                "{}",
                String::from_utf8_lossy(input)
            );
        }
    }
}
