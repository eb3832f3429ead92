//! A short text built on the stack: the numbers, dates and times a
//! document writes by the dozen, each of which was a heap block as a
//! `String`. Written through `fmt::Write`; a write that does not fit fails
//! (callers size `N` for the longest text they make).

use std::fmt;
use std::ops::Deref;

pub struct StackText<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> StackText<N> {
    pub fn new() -> Self {
        StackText {
            bytes: [0; N],
            len: 0,
        }
    }

    /// Empties it, to be written again.
    pub fn clear(&mut self) {
        self.len = 0;
    }
}

impl<const N: usize> Default for StackText<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> fmt::Write for StackText<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        self.bytes
            .get_mut(self.len..end)
            .ok_or(fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

impl<const N: usize> Deref for StackText<N> {
    type Target = str;

    fn deref(&self) -> &str {
        // Only whole `str`s are ever copied in.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
    }
}

impl<const N: usize> fmt::Display for StackText<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write as _;

    #[test]
    fn holds_what_fits_and_refuses_the_rest() {
        let mut t = StackText::<4>::new();
        assert!(write!(t, "ab").is_ok());
        assert!(write!(t, "cd").is_ok());
        assert_eq!(&*t, "abcd");
        assert!(write!(t, "e").is_err());
        assert_eq!(&*t, "abcd");
        t.clear();
        assert!(write!(t, "ñ").is_ok());
        assert_eq!(t.to_string(), "ñ");
    }
}
