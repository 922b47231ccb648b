//! A forward-only cursor over a byte slice whose every read is bounds checked and reports a
//! [`HelloError::Malformed`] naming the field when the bytes run out.

use super::HelloError;

/// Reads big-endian integers and length-prefixed vectors from the front of a slice.
#[derive(Clone)]
pub(crate) struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { rest: bytes }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// The next `n` bytes; `what` names the field when fewer than `n` are left.
    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], HelloError> {
        let (head, tail) = self.rest.split_at_checked(n).ok_or(HelloError::Malformed(what))?;
        self.rest = tail;
        Ok(head)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, HelloError> {
        let (&first, tail) = self.rest.split_first().ok_or(HelloError::Malformed(what))?;
        self.rest = tail;
        Ok(first)
    }

    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16, HelloError> {
        match *self.take(2, what)? {
            [hi, lo] => Ok(u16::from_be_bytes([hi, lo])),
            _ => Err(HelloError::Malformed(what)),
        }
    }

    /// A vector with a one-byte length prefix; `what` names it when the length overruns the container.
    pub(crate) fn prefixed8(&mut self, what: &'static str) -> Result<&'a [u8], HelloError> {
        let len = self.u8(what)?;
        self.take(usize::from(len), what)
    }

    /// A vector with a two-byte length prefix; `what` names it when the length overruns the container.
    pub(crate) fn prefixed16(&mut self, what: &'static str) -> Result<&'a [u8], HelloError> {
        let len = self.u16(what)?;
        self.take(usize::from(len), what)
    }
}
