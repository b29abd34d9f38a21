//! A symbolic state as the search keeps it between levels: its world
//! packed (`crate::world::pack`), then its zone's minimal constraint graph
//! packed (`Dbm::minimal`). A wide level of the breadth-first search is
//! held whole, so this, not the state as the model works on it, is what
//! bounds how wide a level can be: for the default Redlock check, a state
//! of about 1.7 KB unpacked (its world's vectors and a 9×9 matrix of
//! 64-bit bounds) packs into a few hundred bytes.
//!
//! Packing loses nothing: the world's encoding is canonical and the
//! minimal graph's closure is the zone again, so `Packed::state` gives
//! back exactly the state packed.

use super::dbm::{Dbm, MinZone};
use super::zone::ZState;
use crate::pack::{Pack, Reader};
use crate::world::World;

/// A state's world and zone, packed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packed {
    bytes: Box<[u8]>,
    /// Where the world's bytes end and the zone's begin.
    split: u32,
}

impl Packed {
    /// Packs `world` (already packed, as the search compares worlds so)
    /// and a zone given by its minimal graph.
    pub fn new(world: &[u8], zone: &MinZone) -> Packed {
        let mut out = Vec::with_capacity(world.len() + 3 * zone.constraints() + 2);
        out.extend_from_slice(world);
        zone.pack(&mut out);
        Packed {
            bytes: out.into_boxed_slice(),
            split: world.len() as u32,
        }
    }

    /// Packs a state.
    pub fn of(s: &ZState) -> Packed {
        Packed::new(&crate::pack::to_bytes(&s.world), &s.zone.minimal())
    }

    /// The world's bytes.
    pub fn world(&self) -> &[u8] {
        &self.bytes[..self.split as usize]
    }

    /// The zone again, whole.
    pub fn zone(&self) -> Dbm {
        let mut r = Reader::new(&self.bytes[self.split as usize..]);
        let zone = MinZone::unpack(&mut r).to_dbm();
        assert!(r.rest().is_empty(), "bytes left after a packed zone");
        zone
    }

    /// The state again.
    pub fn state(&self) -> ZState {
        ZState {
            world: crate::pack::from_bytes::<World>(self.world()),
            zone: self.zone(),
        }
    }

    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Never true: a packed state holds at least a world.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}
