//! Bounds-checked reads of untrusted bytes: every read either yields a value that lies inside
//! the buffer or fails with [`Damaged`], so no offset, length or count taken from a file can
//! make a reader panic or index past its input.

/// Why a symbol file (or the assembly it belongs to) could not be read: a short, fixed reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Damaged(pub &'static str);

pub(crate) type Result<T> = std::result::Result<T, Damaged>;

/// Why reading a file failed: the disk's failure, or the file's content.
#[derive(Debug)]
pub(crate) enum Fault {
    Io(std::io::Error),
    Damaged(Damaged),
}

impl From<std::io::Error> for Fault {
    fn from(error: std::io::Error) -> Self {
        Fault::Io(error)
    }
}

impl From<Damaged> for Fault {
    fn from(damaged: Damaged) -> Self {
        Fault::Damaged(damaged)
    }
}

/// The `len` bytes at `at` in `bytes`.
pub(crate) fn slice(bytes: &[u8], at: usize, len: usize) -> Result<&[u8]> {
    at.checked_add(len).and_then(|end| bytes.get(at..end)).ok_or(Damaged("an offset or length runs past the end"))
}

pub(crate) fn u16_at(bytes: &[u8], at: usize) -> Result<u16> {
    let b = slice(bytes, at, 2)?;
    Ok(u16::from_le_bytes([b[0], b[1]]))
}

pub(crate) fn u32_at(bytes: &[u8], at: usize) -> Result<u32> {
    let b = slice(bytes, at, 4)?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// A 16-byte GUID (or any 16 bytes) at `at`, as stored.
pub(crate) fn guid_at(bytes: &[u8], at: usize) -> Result<[u8; 16]> {
    let mut guid = [0; 16];
    guid.copy_from_slice(slice(bytes, at, 16)?);
    Ok(guid)
}

/// A read position in a byte slice.
#[derive(Clone)]
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at offset `at` of `bytes` (which may be the end, not past it).
    pub(crate) fn at(bytes: &'a [u8], at: usize) -> Result<Self> {
        if at > bytes.len() {
            return Err(Damaged("an offset lies past the end"));
        }
        Ok(Cursor { bytes, at })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.at >= self.bytes.len()
    }

    pub(crate) fn position(&self) -> usize {
        self.at
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.at)
    }

    pub(crate) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    pub(crate) fn take(&mut self, len: usize) -> Result<&'a [u8]> {
        let taken = slice(self.bytes, self.at, len)?;
        self.at += len;
        Ok(taken)
    }

    pub(crate) fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    pub(crate) fn u16(&mut self) -> Result<u16> {
        u16_at(self.take(2)?, 0)
    }

    pub(crate) fn u32(&mut self) -> Result<u32> {
        u32_at(self.take(4)?, 0)
    }

    /// An ECMA-335 compressed unsigned integer (II.23.2): 1, 2 or 4 bytes, big-endian, the top
    /// bits saying which.
    pub(crate) fn compressed_u32(&mut self) -> Result<u32> {
        let first = self.u8()?;
        match first {
            b if b & 0x80 == 0 => Ok(u32::from(b)),
            b if b & 0xc0 == 0x80 => Ok(u32::from(b & 0x3f) << 8 | u32::from(self.u8()?)),
            b if b & 0xe0 == 0xc0 => {
                let rest = self.take(3)?;
                Ok(u32::from(b & 0x1f) << 24 | u32::from(rest[0]) << 16 | u32::from(rest[1]) << 8 | u32::from(rest[2]))
            }
            _ => Err(Damaged("a bad compressed integer")),
        }
    }

    /// An ECMA-335 compressed signed integer (II.23.2): the unsigned form with the sign rotated
    /// into its lowest bit.
    pub(crate) fn compressed_i32(&mut self) -> Result<i32> {
        let first = self.peek().ok_or(Damaged("a truncated compressed integer"))?;
        let bits = match first {
            b if b & 0x80 == 0 => 7,
            b if b & 0xc0 == 0x80 => 14,
            _ => 29,
        };
        let raw = self.compressed_u32()?;
        let magnitude = (raw >> 1) as i32;
        Ok(if raw & 1 == 0 { magnitude } else { magnitude - (1 << (bits - 1)) })
    }

    /// A .NET `BinaryWriter` 7-bit encoded integer (LEB128, at most five bytes), as Mono's
    /// symbol writer stores counts and deltas; negative values are their 32-bit two's complement.
    pub(crate) fn leb128_i32(&mut self) -> Result<i32> {
        let mut value = 0u32;
        for shift in (0..35).step_by(7) {
            let byte = self.u8()?;
            value |= u32::from(byte & 0x7f).checked_shl(shift).unwrap_or(0);
            if byte & 0x80 == 0 {
                return Ok(value as i32);
            }
        }
        Err(Damaged("a 7-bit encoded integer longer than five bytes"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_integers_decode_as_ecma_335_shows() {
        // The examples of ECMA-335 II.23.2.
        let unsigned: &[(&[u8], u32)] = &[
            (&[0x03], 3),
            (&[0x7f], 0x7f),
            (&[0x80, 0x80], 0x80),
            (&[0xae, 0x57], 0x2e57),
            (&[0xbf, 0xff], 0x3fff),
            (&[0xc0, 0x00, 0x40, 0x00], 0x4000),
            (&[0xdf, 0xff, 0xff, 0xff], 0x1fff_ffff),
        ];
        for &(bytes, want) in unsigned {
            assert_eq!(Cursor::at(bytes, 0).unwrap().compressed_u32(), Ok(want), "{bytes:02x?}");
        }
        let signed: &[(&[u8], i32)] = &[
            (&[0x06], 3),
            (&[0x7b], -3),
            (&[0x80, 0x80], 64),
            (&[0x01], -64),
            (&[0xc0, 0x00, 0x40, 0x00], 8192),
            (&[0x80, 0x01], -8192),
            (&[0xdf, 0xff, 0xff, 0xfe], 268_435_455),
            (&[0xc0, 0x00, 0x00, 0x01], -268_435_456),
        ];
        for &(bytes, want) in signed {
            assert_eq!(Cursor::at(bytes, 0).unwrap().compressed_i32(), Ok(want), "{bytes:02x?}");
        }
        assert!(Cursor::at(&[0xe0], 0).unwrap().compressed_u32().is_err());
        assert!(Cursor::at(&[0xc0, 0], 0).unwrap().compressed_u32().is_err());
    }

    #[test]
    fn seven_bit_integers_decode_as_binary_writer_writes_them() {
        let cases: &[(&[u8], i32)] =
            &[(&[0x00], 0), (&[0x7f], 127), (&[0x80, 0x01], 128), (&[0xff, 0xff, 0xff, 0xff, 0x0f], -1)];
        for &(bytes, want) in cases {
            assert_eq!(Cursor::at(bytes, 0).unwrap().leb128_i32(), Ok(want), "{bytes:02x?}");
        }
        assert!(Cursor::at(&[0x80; 6], 0).unwrap().leb128_i32().is_err());
        assert!(Cursor::at(&[0x80], 0).unwrap().leb128_i32().is_err());
        assert!(Cursor::at(&[], 1).is_err());
    }
}
