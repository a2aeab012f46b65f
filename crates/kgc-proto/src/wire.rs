//! The protobuf wire format, read defensively: every length is checked, nothing panics.

/// One field value as it appears on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WireValue<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

impl WireValue<'_> {
    pub(crate) fn wire_type_name(&self) -> &'static str {
        match self {
            WireValue::Varint(_) => "varint",
            WireValue::Fixed64(_) => "fixed64",
            WireValue::Bytes(_) => "length-delimited",
            WireValue::Fixed32(_) => "fixed32",
        }
    }
}

/// The largest field number protobuf allows.
const MAX_FIELD_NUMBER: u64 = (1 << 29) - 1;
/// Nesting limit for (deprecated, skipped) groups.
const MAX_GROUP_DEPTH: usize = 64;

/// Reads a base-128 varint at `*pos`, advancing it.
pub(crate) fn read_varint(buf: &[u8], pos: &mut usize) -> Result<u64, String> {
    let mut value: u64 = 0;
    for shift in (0..64).step_by(7) {
        let Some(&byte) = buf.get(*pos) else {
            return Err("unexpected end of data inside a varint".to_owned());
        };
        *pos += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Ok(value);
        }
    }
    Err("varint overflows 64 bits".to_owned())
}

fn take<'a>(buf: &'a [u8], pos: &mut usize, len: u64) -> Result<&'a [u8], String> {
    let remaining = buf.len() - *pos;
    let len = usize::try_from(len)
        .ok()
        .filter(|&len| len <= remaining)
        .ok_or_else(|| format!("field length {len} exceeds the {remaining} remaining bytes"))?;
    let slice = &buf[*pos..*pos + len];
    *pos += len;
    Ok(slice)
}

/// Splits a message into its `(field number, value)` pairs in wire order. Groups are skipped,
/// as gogo-protobuf's generated `skipGenerated` does.
pub(crate) fn parse_fields(buf: &[u8]) -> Result<Vec<(u32, WireValue<'_>)>, String> {
    let mut fields = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        if let Some(field) = read_field(buf, &mut pos, 0)? {
            fields.push(field);
        }
    }
    Ok(fields)
}

/// Reads one field at `*pos`; `None` for a skipped group.
fn read_field<'a>(
    buf: &'a [u8],
    pos: &mut usize,
    group_depth: usize,
) -> Result<Option<(u32, WireValue<'a>)>, String> {
    let key = read_varint(buf, pos)?;
    let number = key >> 3;
    if number == 0 || number > MAX_FIELD_NUMBER {
        return Err(format!("illegal field number {number}"));
    }
    // Checked just above: the number fits in 29 bits.
    let number = u32::try_from(number).map_err(|e| e.to_string())?;
    let value = match key & 7 {
        0 => WireValue::Varint(read_varint(buf, pos)?),
        1 => {
            let bytes = take(buf, pos, 8)?;
            let mut array = [0u8; 8];
            array.copy_from_slice(bytes);
            WireValue::Fixed64(u64::from_le_bytes(array))
        }
        2 => {
            let len = read_varint(buf, pos)?;
            WireValue::Bytes(take(buf, pos, len)?)
        }
        3 => {
            skip_group(buf, pos, number, group_depth + 1)?;
            return Ok(None);
        }
        4 => return Err(format!("unexpected end-group marker for field {number}")),
        5 => {
            let bytes = take(buf, pos, 4)?;
            let mut array = [0u8; 4];
            array.copy_from_slice(bytes);
            WireValue::Fixed32(u32::from_le_bytes(array))
        }
        other => return Err(format!("illegal wire type {other} for field {number}")),
    };
    Ok(Some((number, value)))
}

fn skip_group(buf: &[u8], pos: &mut usize, number: u32, depth: usize) -> Result<(), String> {
    if depth > MAX_GROUP_DEPTH {
        return Err("groups nested too deeply".to_owned());
    }
    loop {
        if *pos >= buf.len() {
            return Err(format!("unterminated group for field {number}"));
        }
        let start = *pos;
        let key = read_varint(buf, pos)?;
        if key & 7 == 4 {
            if key >> 3 == u64::from(number) {
                return Ok(());
            }
            return Err(format!("mismatched end-group marker for field {number}"));
        }
        *pos = start;
        read_field(buf, pos, depth)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_wire_type_and_skips_groups() {
        // 1: varint 150; 2: "hi"; 3: fixed64 1; 4: fixed32 2; 5: group { 1: varint 1 }
        let buf = [
            0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i', 0x19, 1, 0, 0, 0, 0, 0, 0, 0, 0x25, 2, 0, 0,
            0, 0x2b, 0x08, 0x01, 0x2c,
        ];
        let fields = parse_fields(&buf).unwrap();
        assert_eq!(
            fields,
            vec![
                (1, WireValue::Varint(150)),
                (2, WireValue::Bytes(b"hi")),
                (3, WireValue::Fixed64(1)),
                (4, WireValue::Fixed32(2)),
            ]
        );
    }

    #[test]
    fn rejects_truncation_and_bad_keys() {
        assert!(parse_fields(&[0x12, 0x05, b'a']).is_err());
        assert!(parse_fields(&[0x08]).is_err());
        assert!(parse_fields(&[0x00, 0x00]).is_err());
        assert!(parse_fields(&[0x0e]).is_err());
        assert!(parse_fields(&[0x0c]).is_err());
        assert!(parse_fields(&[0x0b, 0x08, 0x01]).is_err());
        assert!(
            parse_fields(&[
                0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01
            ])
            .is_err()
        );
    }
}
