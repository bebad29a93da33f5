//! A minimal DER reader and writer for the fixed, small key structures `keys` converts between
//! (SEC1, PKCS#1, PKCS#8); definite lengths only, which is all DER allows.

pub(crate) const SEQUENCE: u8 = 0x30;
pub(crate) const INTEGER: u8 = 0x02;
pub(crate) const OCTET_STRING: u8 = 0x04;
pub(crate) const BIT_STRING: u8 = 0x03;
pub(crate) const NULL: u8 = 0x05;
pub(crate) const OID: u8 = 0x06;
pub(crate) const CONTEXT_0: u8 = 0xa0;
pub(crate) const CONTEXT_1: u8 = 0xa1;

/// A cursor over concatenated DER TLVs (definite lengths only, which is all DER allows).
pub(crate) struct Der<'a> {
    pub(crate) rest: &'a [u8],
}

impl<'a> Der<'a> {
    pub(crate) fn new(rest: &'a [u8]) -> Self {
        Self { rest }
    }

    /// The next TLV as (tag, contents), or `None` at the end or on malformed input.
    pub(crate) fn next(&mut self) -> Option<(u8, &'a [u8])> {
        let (&tag, rest) = self.rest.split_first()?;
        let (&first, rest) = rest.split_first()?;
        let (len, rest) = if first < 0x80 {
            (usize::from(first), rest)
        } else {
            let n = usize::from(first & 0x7f);
            if n == 0 || n > 4 || rest.len() < n {
                return None;
            }
            let len = rest[..n]
                .iter()
                .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
            (len, &rest[n..])
        };
        if rest.len() < len {
            return None;
        }
        let (content, rest) = rest.split_at(len);
        self.rest = rest;
        Some((tag, content))
    }

    /// The next TLV's contents as a new cursor, if its tag is `tag`.
    pub(crate) fn expect_tag(&mut self, tag: u8) -> Option<Self> {
        match self.next()? {
            (t, content) if t == tag => Some(Self::new(content)),
            _ => None,
        }
    }
}

pub(crate) fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend_from_slice(&bytes);
    }
    out.extend_from_slice(content);
    out
}

/// A BIT STRING with no unused bits.
pub(crate) fn bit_string(bytes: &[u8]) -> Vec<u8> {
    tlv(BIT_STRING, &[&[0u8][..], bytes].concat())
}
