//! A compact, canonical byte encoding for the states the search keeps
//! between levels (SPIN's state vector and TLC's on-disk queue keep states
//! as bytes for the same reason: a wide level of the breadth-first search
//! is held whole, so its size per state bounds what the search can reach).
//!
//! The encoding is *canonical*: two values are equal exactly when their
//! bytes are, so the search compares packed worlds without unpacking them.
//! Integers are LEB128 varints (signed ones zigzag-encoded first), so the
//! small numbers a world holds take a byte each; a `Vec` is its length
//! then its items; an enum is a tag byte then its fields.
//!
//! Packed bytes never leave the process except through the search's own
//! spill files, which it writes and reads back itself, so a malformed
//! encoding is a bug and [`Reader`] panics on one.

/// A value with a compact canonical byte encoding.
pub trait Pack: Sized {
    /// Appends the encoding of `self` to `out`.
    fn pack(&self, out: &mut Vec<u8>);
    /// Reads one value back, advancing `r` past it.
    fn unpack(r: &mut Reader) -> Self;
}

/// Reads packed values back from a byte slice.
pub struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes }
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        self.bytes
    }

    pub fn byte(&mut self) -> u8 {
        let (&b, rest) = self
            .bytes
            .split_first()
            .expect("a packed state ends before its last field (a bug in its encoding)");
        self.bytes = rest;
        b
    }

    pub fn varint(&mut self) -> u64 {
        let mut x = 0u64;
        let mut shift = 0;
        loop {
            let b = self.byte();
            x |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return x;
            }
            shift += 7;
            assert!(shift < 64, "a packed varint longer than 64 bits");
        }
    }
}

/// Appends `x` as a LEB128 varint.
pub fn put_varint(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push((x as u8) | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// Zigzag: small magnitudes of either sign become small unsigned numbers.
pub fn zigzag(x: i64) -> u64 {
    ((x << 1) ^ (x >> 63)) as u64
}

pub fn unzigzag(x: u64) -> i64 {
    ((x >> 1) as i64) ^ -((x & 1) as i64)
}

impl Pack for u8 {
    fn pack(&self, out: &mut Vec<u8>) {
        out.push(*self);
    }
    fn unpack(r: &mut Reader) -> u8 {
        r.byte()
    }
}

impl Pack for bool {
    fn pack(&self, out: &mut Vec<u8>) {
        out.push(*self as u8);
    }
    fn unpack(r: &mut Reader) -> bool {
        match r.byte() {
            0 => false,
            1 => true,
            b => panic!("a packed bool reads {b}"),
        }
    }
}

macro_rules! pack_unsigned {
    ($($t:ty),*) => {$(
        impl Pack for $t {
            fn pack(&self, out: &mut Vec<u8>) {
                put_varint(out, *self as u64);
            }
            fn unpack(r: &mut Reader) -> $t {
                let x = r.varint();
                <$t>::try_from(x).expect("a packed integer out of its type's range")
            }
        }
    )*};
}
pack_unsigned!(u16, u32, u64);

impl Pack for i64 {
    fn pack(&self, out: &mut Vec<u8>) {
        put_varint(out, zigzag(*self));
    }
    fn unpack(r: &mut Reader) -> i64 {
        unzigzag(r.varint())
    }
}

impl<T: Pack> Pack for Option<T> {
    fn pack(&self, out: &mut Vec<u8>) {
        match self {
            None => out.push(0),
            Some(x) => {
                out.push(1);
                x.pack(out);
            }
        }
    }
    fn unpack(r: &mut Reader) -> Option<T> {
        match r.byte() {
            0 => None,
            1 => Some(T::unpack(r)),
            b => panic!("a packed Option reads tag {b}"),
        }
    }
}

impl<T: Pack> Pack for Vec<T> {
    fn pack(&self, out: &mut Vec<u8>) {
        put_varint(out, self.len() as u64);
        for x in self {
            x.pack(out);
        }
    }
    fn unpack(r: &mut Reader) -> Vec<T> {
        let n = r.varint() as usize;
        (0..n).map(|_| T::unpack(r)).collect()
    }
}

impl<T: Pack, const N: usize> Pack for [T; N] {
    fn pack(&self, out: &mut Vec<u8>) {
        for x in self {
            x.pack(out);
        }
    }
    fn unpack(r: &mut Reader) -> [T; N] {
        std::array::from_fn(|_| T::unpack(r))
    }
}

impl<A: Pack, B: Pack> Pack for (A, B) {
    fn pack(&self, out: &mut Vec<u8>) {
        self.0.pack(out);
        self.1.pack(out);
    }
    fn unpack(r: &mut Reader) -> (A, B) {
        let a = A::unpack(r);
        (a, B::unpack(r))
    }
}

impl<A: Pack, B: Pack, C: Pack> Pack for (A, B, C) {
    fn pack(&self, out: &mut Vec<u8>) {
        self.0.pack(out);
        self.1.pack(out);
        self.2.pack(out);
    }
    fn unpack(r: &mut Reader) -> (A, B, C) {
        let a = A::unpack(r);
        let b = B::unpack(r);
        (a, b, C::unpack(r))
    }
}

/// `Pack` for a struct, field by field in the order listed. The listing
/// destructures the struct, so a field added to it and not here does not
/// compile.
macro_rules! pack_struct {
    ($t:ident { $($f:ident),* $(,)? }) => {
        impl $crate::pack::Pack for $t {
            fn pack(&self, out: &mut Vec<u8>) {
                let $t { $($f),* } = self;
                $( $crate::pack::Pack::pack($f, out); )*
            }
            fn unpack(r: &mut $crate::pack::Reader) -> $t {
                $( let $f = $crate::pack::Pack::unpack(r); )*
                $t { $($f),* }
            }
        }
    };
}
pub(crate) use pack_struct;

/// `Pack` for an enum: each variant with its tag byte and its fields
/// (`0 Idle`, `1 Acquire(step)`, `2 Place { rev, pred }`). The match is
/// exhaustive, so a variant added to the enum and not here does not
/// compile.
macro_rules! pack_enum {
    ($t:ident { $($tag:literal $v:ident $( ( $($a:ident),* ) )? $( { $($g:ident),* } )?),* $(,)? }) => {
        impl $crate::pack::Pack for $t {
            fn pack(&self, out: &mut Vec<u8>) {
                match self {
                    $( $t::$v $( ( $($a),* ) )? $( { $($g),* } )? => {
                        out.push($tag);
                        $( $( $crate::pack::Pack::pack($a, out); )* )?
                        $( $( $crate::pack::Pack::pack($g, out); )* )?
                    } )*
                }
            }
            fn unpack(r: &mut $crate::pack::Reader) -> $t {
                match r.byte() {
                    $( $tag => {
                        $( $( let $a = $crate::pack::Pack::unpack(r); )* )?
                        $( $( let $g = $crate::pack::Pack::unpack(r); )* )?
                        $t::$v $( ( $($a),* ) )? $( { $($g),* } )?
                    } )*
                    b => panic!("a packed {} reads tag {b}", stringify!($t)),
                }
            }
        }
    };
}
pub(crate) use pack_enum;

/// The bytes of `x`.
pub fn to_bytes<T: Pack>(x: &T) -> Vec<u8> {
    let mut out = Vec::new();
    x.pack(&mut out);
    out
}

/// `x` back from its bytes; every byte must be used.
pub fn from_bytes<T: Pack>(bytes: &[u8]) -> T {
    let mut r = Reader::new(bytes);
    let x = T::unpack(&mut r);
    assert!(r.rest().is_empty(), "bytes left after a packed value");
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_round_trip_and_small_ones_take_a_byte() {
        for x in [
            0i64,
            1,
            -1,
            63,
            -64,
            64,
            1 << 40,
            -(1 << 40),
            i64::MAX,
            i64::MIN,
        ] {
            assert_eq!(from_bytes::<i64>(&to_bytes(&x)), x);
        }
        assert_eq!(to_bytes(&-64i64).len(), 1);
        assert_eq!(to_bytes(&64i64).len(), 2);
        for x in [0u32, 127, 128, u32::MAX] {
            assert_eq!(from_bytes::<u32>(&to_bytes(&x)), x);
        }
        assert_eq!(to_bytes(&127u16).len(), 1);
        let v: Vec<Option<(u8, u16)>> = vec![None, Some((3, 300))];
        assert_eq!(from_bytes::<Vec<Option<(u8, u16)>>>(&to_bytes(&v)), v);
    }

    #[test]
    #[should_panic(expected = "ends before its last field")]
    fn a_truncated_encoding_is_caught() {
        let b = to_bytes(&(1u8, 300u16));
        from_bytes::<(u8, u16)>(&b[..2]);
    }
}
