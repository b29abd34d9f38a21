//! Symbolic states as the search keeps them between levels: each state's
//! world packed (`crate::world::pack`), then its zone's minimal constraint
//! graph packed (`Dbm::minimal`), one after another in blocks that are
//! compressed once full ([`Arena`]). A wide level of the breadth-first
//! search is held whole, so this, not the state as the model works on it,
//! is what bounds how wide a level can be: for the default Redlock check,
//! a state of about 1.7 KB unpacked (its world's vectors and a 9×9 matrix
//! of 64-bit bounds) packs into about 350 bytes, and the states of a level
//! are so alike that a block of them compresses about five times (lz4).
//! One arena per shard and level, not an allocation per state, so that
//! the states of a level, which live long, do not pin half-empty pages of
//! the allocator among the successors, which do not.
//!
//! Packing loses nothing: the world's encoding is canonical, the minimal
//! graph's closure is the zone again, and lz4 is lossless, so a state read
//! back is exactly the state packed.

use super::dbm::{Dbm, MinZone};
use super::spill::Spill;
use super::zone::ZState;
use crate::pack::{Pack, Reader};
use crate::world::World;
use std::borrow::Cow;
use std::sync::Arc;

/// Bytes of packed states per block before it is compressed: some forty
/// states of the default Redlock. Reading a state from a compressed block
/// decompresses the block (a few microseconds); the search reads a
/// block's states in order, or once per merge candidate.
const BLOCK: usize = 16 * 1024;

/// Packed states, one after another: full blocks compressed, the last one
/// whole.
#[derive(Debug, Default)]
pub struct Arena {
    /// Full blocks, lz4-compressed, each prefixed with its length whole.
    blocks: Vec<Block>,
    /// The block being filled.
    tail: Vec<u8>,
    /// The last block [`Arena::world`] or [`Arena::zone`] decompressed.
    scratch: std::sync::Mutex<Cache>,
    /// Where full blocks go once RAM is short (`engine::spill`).
    spill: Option<Arc<Spill>>,
}

/// A full block, compressed: in RAM, or on disk at an offset of the
/// spill file.
#[derive(Debug)]
enum Block {
    Ram(Box<[u8]>),
    Disk { at: u64, len: u32 },
}

/// Where a packed state lies: which arena, which block and where in it,
/// and how long its world is (its zone follows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    block: u32,
    offset: u32,
    world_len: u32,
    arena: u16,
}

/// The last few blocks decompressed, kept for the next reads from them.
/// Deduplication reads the states of the level being built out of order
/// (the one a successor may equal), so one block is not enough.
#[derive(Debug, Default)]
pub struct Cache {
    /// (arena, block) and bytes of each block kept, the most recently
    /// read first; at most [`CACHED_BLOCKS`].
    kept: Vec<((u16, u32), Vec<u8>)>,
    /// A block read back from disk, still compressed.
    read: Vec<u8>,
}

/// How many decompressed blocks a [`Cache`] keeps.
const CACHED_BLOCKS: usize = 4;

impl Arena {
    /// An empty arena that spills its full blocks to `spill`, if given,
    /// once resident memory passes its limit.
    pub fn new(spill: Option<Arc<Spill>>) -> Arena {
        Arena {
            spill,
            ..Arena::default()
        }
    }

    /// An empty arena that spills where this one does.
    pub fn fresh(&self) -> Arena {
        Arena::new(self.spill.clone())
    }

    /// Packs a state given by its world (already packed, as the search
    /// compares worlds so) and its zone's minimal graph; `arena` is this
    /// arena's number among those the places will be read from.
    pub fn push(&mut self, arena: u16, world: &[u8], zone: &MinZone) -> Place {
        if self.tail.len() >= BLOCK {
            self.seal();
        }
        let offset = self.tail.len() as u32;
        self.tail.extend_from_slice(world);
        zone.pack(&mut self.tail);
        Place {
            block: self.blocks.len() as u32,
            offset,
            world_len: world.len() as u32,
            arena,
        }
    }

    /// Compresses the block being filled.
    fn seal(&mut self) {
        let block = lz4_flex::block::compress_prepend_size(&self.tail);
        let on_disk = self
            .spill
            .as_ref()
            .filter(|s| s.wanted())
            .and_then(|s| s.put(&block));
        self.blocks.push(match on_disk {
            Some(at) => Block::Disk {
                at,
                len: block.len() as u32,
            },
            None => Block::Ram(block.into_boxed_slice()),
        });
        self.tail.clear();
    }

    /// The bytes of the block that holds `p`, from `p` on, decompressing
    /// the block into `cache` unless it is there already.
    fn from<'a>(&'a self, p: Place, cache: &'a mut Cache) -> &'a [u8] {
        let b = p.block as usize;
        let bytes: &[u8] = if b == self.blocks.len() {
            &self.tail
        } else {
            let key = (p.arena, p.block);
            match cache.kept.iter().position(|(k, _)| *k == key) {
                Some(i) => cache.kept[..=i].rotate_right(1),
                None => {
                    let block: &[u8] = match &self.blocks[b] {
                        Block::Ram(bytes) => bytes,
                        Block::Disk { at, len } => {
                            let spill = self.spill.as_ref().expect("a block on disk has its file");
                            cache.read.resize(*len as usize, 0);
                            spill.get(*at, &mut cache.read);
                            &cache.read
                        }
                    };
                    let mut bytes = if cache.kept.len() < CACHED_BLOCKS {
                        Vec::new()
                    } else {
                        cache.kept.pop().map(|(_, b)| b).unwrap_or_default()
                    };
                    let (len, data) = block.split_at(4);
                    let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
                    bytes.resize(len, 0);
                    let n = lz4_flex::block::decompress_into(data, &mut bytes)
                        .expect("a block this arena compressed decompresses");
                    assert_eq!(n, len, "a block decompresses to its length");
                    cache.kept.insert(0, (key, bytes));
                }
            }
            &cache.kept[0].1
        };
        &bytes[p.offset as usize..]
    }

    /// The packed world at `p`: borrowed when it is in the block being
    /// filled, copied out of its block otherwise.
    pub fn world(&self, p: Place) -> Cow<'_, [u8]> {
        let len = p.world_len as usize;
        if p.block as usize == self.blocks.len() {
            Cow::Borrowed(&self.tail[p.offset as usize..][..len])
        } else {
            let mut cache = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
            Cow::Owned(self.from(p, &mut cache)[..len].to_vec())
        }
    }

    /// The zone at `p`, whole.
    pub fn zone(&self, p: Place) -> Dbm {
        let mut cache = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let bytes = self.from(p, &mut cache);
        MinZone::unpack(&mut Reader::new(&bytes[p.world_len as usize..])).to_dbm()
    }

    /// The state at `p`, reading its block through `cache`.
    pub fn state(&self, p: Place, cache: &mut Cache) -> ZState {
        let bytes = self.from(p, cache);
        let mut r = Reader::new(bytes);
        let world = World::unpack(&mut r);
        let zone = MinZone::unpack(&mut r).to_dbm();
        ZState { world, zone }
    }

    /// The whole packed state at `p` (world and zone), read through
    /// `cache`, and its world's length.
    fn raw<'a>(&'a self, p: Place, cache: &'a mut Cache) -> &'a [u8] {
        let bytes = self.from(p, cache);
        let mut r = Reader::new(&bytes[p.world_len as usize..]);
        MinZone::unpack(&mut r);
        let len = bytes.len() - r.rest().len();
        &bytes[..len]
    }

    /// Appends a state packed elsewhere, `bytes` whole, its world
    /// `world_len` long.
    fn push_raw(&mut self, bytes: &[u8], world_len: u32) -> Place {
        if self.tail.len() >= BLOCK {
            self.seal();
        }
        let offset = self.tail.len() as u32;
        self.tail.extend_from_slice(bytes);
        Place {
            block: self.blocks.len() as u32,
            offset,
            world_len,
            arena: 0,
        }
    }

    /// Gives back the room reserved for growth: the level is complete.
    pub fn shrink(&mut self) {
        self.tail.shrink_to_fit();
        self.blocks.shrink_to_fit();
    }

    /// Bytes held, compressed or not.
    #[cfg(test)]
    fn len(&self) -> usize {
        let block = |b: &Block| match b {
            Block::Ram(bytes) => bytes.len(),
            Block::Disk { len, .. } => *len as usize,
        };
        self.tail.len() + self.blocks.iter().map(block).sum::<usize>()
    }
}

/// A hash of a packed world, to tell most unequal worlds apart without
/// reading them.
pub fn world_hash(bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = crate::search::Fingerprinter::new();
    h.write(bytes);
    h.finish()
}

/// A level of the search, packed: its states in id order, each with its
/// id, in one arena.
#[derive(Debug, Default)]
pub struct Level {
    arena: Arena,
    states: Vec<(u32, Place)>,
}

impl Level {
    /// The states at `states`, in that order, copied out of the shards'
    /// arenas into one, so that reading them in order decompresses each
    /// block once. The shards fill their arenas in parallel, each with its
    /// own states; the search reads a level in id order, which takes a
    /// state from each shard in turn.
    pub fn ordered(
        arenas: &[Arena],
        states: Vec<(u32, Place)>,
        spill: Option<Arc<Spill>>,
    ) -> Level {
        let mut arena = Arena::new(spill);
        let mut caches: Vec<Cache> = arenas.iter().map(|_| Cache::default()).collect();
        let states = states
            .into_iter()
            .map(|(id, p)| {
                let a = p.arena as usize;
                let bytes = arenas[a].raw(p, &mut caches[a]);
                (id, arena.push_raw(bytes, p.world_len))
            })
            .collect();
        arena.shrink();
        Level { arena, states }
    }

    /// A level of one state.
    pub fn one(id: u32, s: &ZState) -> Level {
        let mut arena = Arena::default();
        let p = arena.push(0, &crate::pack::to_bytes(&s.world), &s.zone.minimal());
        Level {
            arena,
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

    /// The `k`-th state, unpacked; `cache` keeps its block for the next.
    pub fn state(&self, k: usize, cache: &mut Cache) -> ZState {
        self.arena.state(self.states[k].1, cache)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::dbm::Bound;
    use crate::engine::spill::SpillTo;

    #[test]
    fn states_read_back_from_full_blocks_and_the_tail() {
        read_back(Arena::default());
    }

    #[test]
    fn states_read_back_from_blocks_spilled_to_disk() {
        let dir = std::env::temp_dir();
        let spill = Arc::new(
            Spill::create(&SpillTo { dir, limit: 0 }).expect("a spill file in the temp dir"),
        );
        read_back(Arena::new(Some(spill.clone())));
        assert!(spill.written() > 0, "every full block went to disk");
    }

    fn read_back(mut a: Arena) {
        let world = World {
            clients: Vec::new(),
            redis: Vec::new(),
            net: Vec::new(),
            resource: Default::default(),
            faults_left: crate::faults::Budgets::none(),
            ghost: Default::default(),
            coord: Default::default(),
        };
        let mut places = Vec::new();
        for k in 0..5000i64 {
            let mut z = Dbm::zero(3);
            z.up();
            z.constrain(1, 0, Bound::new(k, false));
            let mut w = world.clone();
            w.resource.value = (k % 200) as u8;
            let bytes = crate::pack::to_bytes(&w);
            places.push((
                a.push(0, &bytes, &z.minimal()),
                ZState { world: w, zone: z },
            ));
        }
        assert!(a.blocks.len() > 2, "the test fills several blocks");
        assert!(
            a.blocks.len() > CACHED_BLOCKS + 1,
            "more blocks than a cache keeps"
        );
        let mut cache = Cache::default();
        for (p, s) in &places {
            assert_eq!(a.state(*p, &mut cache), *s);
            assert_eq!(a.zone(*p), s.zone);
            assert_eq!(&a.world(*p)[..], &crate::pack::to_bytes(&s.world)[..]);
        }
        // Out of order, as deduplication reads: hits on every slot of the
        // cache, misses that evict the least recently read block, and the
        // block being filled, all give the state stored there.
        let n = places.len();
        for k in 0..3 * n {
            let (p, s) = &places[(k * 7919 + (k % 5) * 131) % n];
            assert_eq!(a.state(*p, &mut cache), *s);
            assert!(cache.kept.len() <= CACHED_BLOCKS);
        }
        let whole: usize = places
            .iter()
            .map(|(_, s)| {
                crate::pack::to_bytes(&s.world).len()
                    + crate::pack::to_bytes(&s.zone.minimal()).len()
            })
            .sum();
        assert!(
            a.len() * 2 < whole,
            "alike states compress: {} of {whole}",
            a.len()
        );
    }
}
