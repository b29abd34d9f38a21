//! Symbolic states as the search keeps them between levels: each state's
//! world packed (`crate::world::pack`), then its zone's minimal constraint
//! graph packed (`Dbm::minimal`), one after another in large buffers
//! ([`Arena`]). A wide level of the breadth-first search is held whole, so
//! this, not the state as the model works on it, is what bounds how wide
//! a level can be: for the default Redlock check, a state of about 1.7 KB
//! unpacked (its world's vectors and a 9×9 matrix of 64-bit bounds) packs
//! into about 370 bytes. One buffer per shard and level, not an allocation
//! per state, so that the states of a level, which live long, do not pin
//! half-empty pages of the allocator among the successors, which do not.
//!
//! Packing loses nothing: the world's encoding is canonical and the
//! minimal graph's closure is the zone again, so a state read back is
//! exactly the state packed.

use super::dbm::{Dbm, MinZone};
use super::zone::ZState;
use crate::pack::{Pack, Reader};
use crate::world::World;

/// Packed states, one after another.
#[derive(Debug, Default)]
pub struct Arena {
    bytes: Vec<u8>,
}

/// Where a packed state lies: which arena, where in it, and how long its
/// world is (its zone follows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    offset: u64,
    world_len: u32,
    arena: u16,
}

impl Arena {
    /// Packs a state given by its world (already packed, as the search
    /// compares worlds so) and its zone's minimal graph; `arena` is this
    /// arena's number among those the places will be read from.
    pub fn push(&mut self, arena: u16, world: &[u8], zone: &MinZone) -> Place {
        let offset = self.bytes.len() as u64;
        self.bytes.extend_from_slice(world);
        zone.pack(&mut self.bytes);
        Place {
            offset,
            world_len: world.len() as u32,
            arena,
        }
    }

    /// The packed world at `p`.
    pub fn world(&self, p: Place) -> &[u8] {
        let at = p.offset as usize;
        &self.bytes[at..at + p.world_len as usize]
    }

    /// The zone at `p`, whole.
    pub fn zone(&self, p: Place) -> Dbm {
        let at = p.offset as usize + p.world_len as usize;
        MinZone::unpack(&mut Reader::new(&self.bytes[at..])).to_dbm()
    }

    /// The state at `p`.
    pub fn state(&self, p: Place) -> ZState {
        ZState {
            world: crate::pack::from_bytes::<World>(self.world(p)),
            zone: self.zone(p),
        }
    }

    /// Gives back the room reserved for growth: the level is complete.
    pub fn shrink(&mut self) {
        self.bytes.shrink_to_fit();
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// A level of the search, packed: its states in id order, each with its
/// id, read from the arenas the shards filled.
#[derive(Debug, Default)]
pub struct Level {
    pub arenas: Vec<Arena>,
    pub states: Vec<(u32, Place)>,
}

impl Level {
    /// A level of one state.
    pub fn one(id: u32, s: &ZState) -> Level {
        let mut arena = Arena::default();
        let p = arena.push(0, &crate::pack::to_bytes(&s.world), &s.zone.minimal());
        Level {
            arenas: vec![arena],
            states: vec![(id, p)],
        }
    }

    pub fn len(&self) -> usize {
        self.states.len()
    }

    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// The id of the `k`-th state.
    pub fn id(&self, k: usize) -> u32 {
        self.states[k].0
    }

    /// The `k`-th state, unpacked.
    pub fn state(&self, k: usize) -> ZState {
        let p = self.states[k].1;
        self.arenas[p.arena as usize].state(p)
    }

    /// Bytes held by the packed states.
    pub fn bytes(&self) -> usize {
        self.arenas.iter().map(Arena::len).sum()
    }
}
