//! The passed list of the zone search, sharded by world fingerprint, and
//! the merging of zones on the level being built.
//!
//! Everything the search does to deduplicate a successor — test inclusion
//! in the zones stored for its world, merge it into a zone of the same
//! world met on this level ([`absorb`]), merge groups at the end of the
//! level ([`merge_level`]) — reads and writes the zones of that one world
//! and nothing else. So the passed list is cut into [`SHARDS`] shards by
//! fingerprint, and each shard takes the successors that fall in it in
//! frontier order: the outcome is exactly that of one thread taking every
//! successor in frontier order, whatever the number of threads, and the
//! shards run in parallel (Holzmann and Bošnački's multi-core Spin and
//! TLC's fingerprint set partition the state store alike; here the
//! partition also keeps each world's zone merging on one thread).

use crate::canon::Canon;
use crate::engine::dbm::{Dbm, MinZone};
use crate::engine::packed::{Arena, Place};
use crate::engine::spill::Spill;
use crate::engine::zone::ZState;
use crate::faults::{BudgetOrder, Budgets};
use crate::world::World;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// Shards of the passed list: enough that two threads, or sixty-four,
/// find a shard free when they finish one; fixed, so the layout (and the
/// result) does not depend on the number of threads.
pub const SHARDS: usize = 64;

/// The shard of a fingerprint: its top bits (the hash maps inside a shard
/// index by the low bits, so the two stay independent).
pub fn shard_of(fp: u64) -> usize {
    (fp >> (64 - SHARDS.trailing_zeros())) as usize
}

/// A hasher for keys that already are fingerprints.
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | *b as u64;
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Zones per world (its fingerprint, which leaves out the fault budgets
/// left), each with the budgets left when it was stored. A new zone
/// included in a stored one of the same world, stored with at least as
/// much budget left of every kind, adds nothing (zone successors are
/// monotone, and a fault the new state can strike the stored one can
/// too: whatever it reaches in k steps, the stored state reaches in at
/// most k, with no more faults spent), so it is dropped. A stored zone is never evicted for a larger one met on a
/// later level, which keeps the first violating level the shortest
/// (Bengtsson & Yi 2004; see docs/model.md).
///
/// Past `--memory-limit` the zones of finished levels go to the spill
/// file, each world's in one record ([`Zones::to_disk`]); only the map from
/// fingerprint to record stays in RAM, and an inclusion test reads the
/// record back. Where a zone lives changes no answer.
#[derive(Default)]
pub struct Zones {
    map: HashMap<u64, WorldZones, BuildHasherDefault<PassThrough>>,
    /// A stored zone covers only states with exactly its budgets left
    /// (subsumption by budget off, to compare).
    budgets: BudgetOrder,
    /// Where zones go past the memory limit, if anywhere.
    spill: Option<Arc<Spill>>,
    /// Every world's zones went to disk once; from then on only the worlds
    /// in `touched` have zones in RAM.
    swept: bool,
    /// With a spill file: worlds given a zone since the last
    /// [`Zones::to_disk`].
    touched: Vec<u64>,
}

/// One world's stored zones: in RAM, and in its record on disk.
#[derive(Default)]
struct WorldZones {
    ram: Vec<Stored>,
    disk: OnDisk,
}

impl WorldZones {
    /// Whether one of its zones, in RAM or on disk (in `spill`), stored
    /// with enough budget left, includes `z` (whose [`Hint`] is `hint`).
    fn covers(
        &self,
        spill: Option<&Spill>,
        (z, hint): (&Dbm, &Hint),
        left: &Budgets,
        order: BudgetOrder,
    ) -> bool {
        self.ram
            .iter()
            .any(|s| hint.may_lie_in(&s.hint) && s.covers(z, left, order))
            || disk_covers(spill, self.disk, z, left, order)
    }
}

/// Where a world's record lies in the spill file: its offset (40 bits, a
/// terabyte) and its length (24 bits), in one word; 0 for none. A record
/// that does not fit stays in RAM.
#[derive(Clone, Copy, Default)]
struct OnDisk(u64);

impl OnDisk {
    const LEN_BITS: u32 = 24;

    fn new(at: u64, len: usize) -> Option<OnDisk> {
        (Self::fits(len) && at < 1 << (64 - Self::LEN_BITS))
            .then_some(OnDisk((at << Self::LEN_BITS) | len as u64))
    }

    /// Whether a record of `len` bytes can be pointed at.
    fn fits(len: usize) -> bool {
        len > 0 && len < 1 << Self::LEN_BITS
    }

    fn get(self) -> Option<(u64, usize)> {
        (self.0 != 0).then_some((
            self.0 >> Self::LEN_BITS,
            (self.0 & ((1 << Self::LEN_BITS) - 1)) as usize,
        ))
    }
}

/// Reads record `d` back into `buf`.
fn read_record(spill: &Spill, d: OnDisk, buf: &mut Vec<u8>) -> bool {
    let Some((at, len)) = d.get() else {
        return false;
    };
    buf.clear();
    buf.resize(len, 0);
    spill.get(at, buf);
    true
}

/// Bytes of a zone's budgets left in a record.
const BUDGETS: usize = std::mem::size_of::<Budgets>();

/// Whether a zone of record `d` (each zone's budgets left, then its
/// minimal graph's record, `MinZone::put_record`), stored with at least
/// budgets `left` left, includes `z`.
fn disk_covers(
    spill: Option<&Spill>,
    d: OnDisk,
    z: &Dbm,
    left: &Budgets,
    order: BudgetOrder,
) -> bool {
    let Some(spill) = spill else {
        return false;
    };
    thread_local! {
        static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUF.with_borrow_mut(|buf| {
        if !read_record(spill, d, buf) {
            return false;
        }
        // Each zone: its budgets left, then its graph's record.
        let mut at = 0;
        while at < buf.len() {
            let stored = Budgets(
                buf[at..at + BUDGETS]
                    .try_into()
                    .expect("a record's budgets"),
            );
            let (inside, len) = MinZone::record_includes(&buf[at + BUDGETS..], z);
            if inside && order.covers(&stored, left) {
                return true;
            }
            at += BUDGETS + len;
        }
        false
    })
}

/// Writes world `w`'s zones in RAM to disk, in one record with those
/// already there (which it replaces). They stay in RAM if the record is
/// too long or the write fails.
fn write_out(spill: &Spill, w: &mut WorldZones) {
    if w.ram.is_empty() {
        return;
    }
    let mut rec = Vec::new();
    read_record(spill, w.disk, &mut rec);
    for s in &w.ram {
        rec.extend_from_slice(&s.left.0);
        match &s.zone {
            Kept::Min(m) => m.put_record(&mut rec),
            Kept::Full(d) => d.minimal().put_record(&mut rec),
        }
    }
    if !OnDisk::fits(rec.len()) {
        return;
    }
    if let Some(d) = spill.put(&rec).and_then(|at| OnDisk::new(at, rec.len())) {
        w.disk = d;
        w.ram = Vec::new();
    }
}

/// Four sums of a zone's bounds, each squeezed into 32 bits first
/// (`Bound::squeezed`, which keeps their order), kept beside a stored
/// zone: of its clocks' upper bounds, of their lower bounds, and of the
/// differences `x_i − x_j` above and below the diagonal. A zone included
/// in another has no looser bound anywhere, so no larger sum: a stored
/// zone with a smaller sum than a successor's anywhere cannot include it,
/// and is ruled out here without following the pointer to its constraint
/// graph (the inclusion test took a third of a 3-client `fencing`
/// profile). Sums, not a few clocks' bounds: zones of one world may
/// differ in any entry (a hint of the first clocks' bounds let 95 % of a
/// Redlock world's zones through).
#[derive(Clone, Copy)]
struct Hint([i64; 4]);

impl Hint {
    fn of(z: &Dbm) -> Hint {
        if z.is_empty() {
            // The empty zone is included in every zone.
            return Hint([i64::MIN; 4]);
        }
        let mut h = [0i64; 4];
        let n = z.dim();
        for i in 0..n {
            for j in 0..n {
                let group = match (i, j) {
                    _ if i == j => continue,
                    (_, 0) => 0,
                    (0, _) => 1,
                    _ if i < j => 2,
                    _ => 3,
                };
                h[group] += i64::from(z.bound(i, j).squeezed());
            }
        }
        Hint(h)
    }

    /// Whether a zone with this hint may lie inside one with `outer`'s.
    #[inline]
    fn may_lie_in(&self, outer: &Hint) -> bool {
        self.0.iter().zip(&outer.0).all(|(a, b)| a <= b)
    }
}

/// A stored zone (in the canonical layout of its world), the budgets left
/// with it, the level it was reached on and its index among its shard's
/// states of that level.
struct Stored {
    zone: Kept,
    /// `zone`'s [`Hint`].
    hint: Hint,
    left: Budgets,
    /// (A level is at most the number of states, which ids keep in 32 bits.)
    level: u32,
    at: u32,
}

impl Zones {
    /// An empty passed list; a stored state covers one of the same world
    /// with the budgets `budgets` allows.
    pub fn new(budgets: BudgetOrder) -> Zones {
        Zones {
            budgets,
            ..Zones::default()
        }
    }

    /// Whether a stored zone of world `fp`, with at least budgets `left`
    /// left, includes `z`.
    pub fn covers(&self, fp: u64, z: &Dbm, left: &Budgets) -> bool {
        self.covers_hinted(fp, (z, &Hint::of(z)), left)
    }

    /// [`Zones::covers`], given `z`'s hint.
    fn covers_hinted(&self, fp: u64, z: (&Dbm, &Hint), left: &Budgets) -> bool {
        self.map
            .get(&fp)
            .is_some_and(|w| w.covers(self.spill.as_deref(), z, left, self.budgets))
    }

    /// Stores `z` unless it is covered; true if stored.
    pub fn insert(&mut self, fp: u64, zone: Dbm, left: Budgets, level: u64, at: u32) -> bool {
        let hint = Hint::of(&zone);
        if self.covers_hinted(fp, (&zone, &hint), &left) {
            return false;
        }
        self.touch(fp);
        push_small(
            &mut self.map.entry(fp).or_default().ram,
            Stored {
                hint,
                zone: Kept::Full(zone),
                left,
                level: level as u32,
                at,
            },
        );
        true
    }

    /// Stores a zone, known not to be covered (by [`absorb`] just
    /// before), as its minimal graph: inclusion is all that is asked of it
    /// until a merge grows it (which keeps the merged zone whole until the
    /// level's end, [`merge_level`]).
    fn insert_min(
        &mut self,
        fp: u64,
        (zone, hint): (MinZone, Hint),
        left: Budgets,
        level: u64,
        at: u32,
    ) {
        self.touch(fp);
        push_small(
            &mut self.map.entry(fp).or_default().ram,
            Stored {
                zone: Kept::Min(zone),
                hint,
                left,
                level: level as u32,
                at,
            },
        );
    }

    /// Notes that world `fp` was given a zone (only with a spill file).
    fn touch(&mut self, fp: u64) {
        if self.spill.is_some() {
            self.touched.push(fp);
        }
    }

    /// The end of a level, once merging is done with its zones: if the
    /// spill file is in use (resident memory passed the limit), every
    /// world's zones in RAM go to disk; from then on, at each level's end,
    /// those of the worlds given a zone on that level. A level's merging
    /// reads only that level's zones, so all of them can go.
    pub fn to_disk(&mut self) {
        let Some(spill) = self.spill.clone() else {
            return;
        };
        if !spill.wanted() {
            // A first sweep, when it comes, takes every world.
            self.touched.clear();
            return;
        }
        if !self.swept {
            self.swept = true;
            self.touched.clear();
            for w in self.map.values_mut() {
                write_out(&spill, w);
            }
            return;
        }
        let mut fps = std::mem::take(&mut self.touched);
        fps.sort_unstable();
        fps.dedup();
        for fp in fps {
            if let Some(w) = self.map.get_mut(&fp) {
                write_out(&spill, w);
            }
        }
    }
}

/// Pushes `s` onto a world's list, growing a short list by one: most
/// worlds keep one zone or two, and a vector's first growth makes room
/// for four (about 200 bytes a world lost, a third of the passed list's
/// memory on the default Redlock).
fn push_small(v: &mut Vec<Stored>, s: Stored) {
    if v.len() < 4 {
        v.reserve_exact(1);
    }
    v.push(s);
}

/// How a stored zone is kept. Only inclusion is ever asked of it, and its
/// minimal constraint graph answers that in a fraction of the memory
/// (`Dbm::minimal`): the merged search stores graphs from the start, a
/// zone a merge grew included. A zone stored whole (the unmerged search,
/// a chunk's own deduplication, whose zones live briefly) becomes a graph
/// at its level's end ([`Kept::seal`]).
enum Kept {
    Full(Dbm),
    Min(MinZone),
}

impl Kept {
    fn includes(&self, z: &Dbm) -> bool {
        match self {
            Kept::Full(d) => d.includes(z),
            Kept::Min(m) => m.includes(z),
        }
    }

    /// Keeps the zone as its minimal graph from now on.
    fn seal(&mut self) {
        if let Kept::Full(d) = self {
            *self = Kept::Min(d.minimal());
        }
    }
}

impl Stored {
    fn covers(&self, z: &Dbm, left: &Budgets, order: BudgetOrder) -> bool {
        order.covers(&self.left, left) && self.zone.includes(z)
    }
}

/// A successor handed to its shard: its place in the batch, its world's
/// fingerprint, its zone in the canonical layout and in its own, the fault
/// budgets it has left, and its world packed. The world itself is not
/// kept: a batch holds thousands of successors, and a world unpacked
/// takes several allocations and about a kilobyte.
pub struct Arrival {
    pub seq: u32,
    pub fp: u64,
    pub zone: Dbm,
    /// Its zone in its world's own layout, when that is not `zone`.
    pub real: Option<Dbm>,
    pub left: Budgets,
    pub packed: Box<[u8]>,
    /// `engine::packed::world_hash` of `packed`.
    pub hash: u64,
}

/// A state new on the level being built, packed in its shard's arena
/// (`crate::world::pack`: equal worlds have equal bytes). A hash of its
/// world tells most other worlds apart without reading the arena; when a
/// successor may be its world, its world's bytes are read, once, and its
/// zone unpacked, once, and both stay for the rest of the level: a world
/// with several zones on a level tends to meet more. A zone a merge grew
/// is packed anew at the level's end; the world never changes, since only
/// equal worlds merge.
pub struct Pending {
    place: Place,
    hash: u64,
    /// What was read of it, once it was a merge candidate (most states of
    /// a level never are: then this entry is 32 bytes).
    loaded: Option<Box<Loaded>>,
    grown: bool,
}

/// A merge candidate's world bytes and whole zone, each read on first use.
#[derive(Default)]
struct Loaded {
    world: Option<Box<[u8]>>,
    whole: Option<Dbm>,
}

impl Pending {
    fn new(place: Place, hash: u64) -> Pending {
        Pending {
            place,
            hash,
            loaded: None,
            grown: false,
        }
    }

    fn loaded(&mut self) -> &mut Loaded {
        self.loaded.get_or_insert_with(Box::default)
    }

    /// Its world's bytes, read from the arena the first time.
    fn world(&mut self, arena: &Arena) -> &[u8] {
        let place = self.place;
        self.loaded()
            .world
            .get_or_insert_with(|| arena.world(place).into_owned().into_boxed_slice())
    }

    /// Whether its world is the one packed as `bytes`, whose hash is `hash`.
    fn is_world(&mut self, arena: &Arena, bytes: &[u8], hash: u64) -> bool {
        self.hash == hash && self.world(arena) == bytes
    }

    /// Its zone, unpacked for the rest of the level.
    fn zone(&mut self, arena: &Arena) -> &Dbm {
        let place = self.place;
        self.loaded().whole.get_or_insert_with(|| arena.zone(place))
    }

    /// Its zone is now `zone`.
    fn grow(&mut self, zone: Dbm) {
        self.loaded().whole = Some(zone);
        self.grown = true;
    }

    /// Forgets what was read of it (a grown zone it keeps: nowhere else
    /// has it).
    fn forget(&mut self) {
        if self.grown {
            if let Some(l) = &mut self.loaded {
                l.world = None;
            }
        } else {
            self.loaded = None;
        }
    }

    /// The zone a merge grew it to, taken out.
    fn take_grown(&mut self) -> Option<Dbm> {
        self.loaded.as_mut().and_then(|l| l.whole.take())
    }

    /// The state, unpacked.
    fn state(&mut self, arena: &Arena) -> ZState {
        ZState {
            world: crate::pack::from_bytes::<World>(self.world(arena)),
            zone: self.zone(arena).clone(),
        }
    }
}

/// One shard: the zones of the worlds whose fingerprints fall in it, and
/// the states this level added to it.
#[derive(Default)]
pub struct Shard {
    zones: Zones,
    /// States new on the level being built, by index in the shard.
    pub next: Vec<Pending>,
    /// The packed states of `next`.
    pub arena: Arena,
    /// This shard's number: its arena's among a level's.
    number: u16,
    /// `next[i]` was merged into another state of the level.
    pub dead: Vec<bool>,
    /// Where the level's states lie in `arena` once the level is done
    /// ([`Shard::pack_level`]), by index in the shard; `None` for those
    /// merged into another.
    pub packed: Vec<Option<Place>>,
    /// Fingerprints given a new zone on this level, for [`merge_level`].
    fps: Vec<u64>,
    /// States of `next` whose world or zone was read for a merge, in the
    /// order they were first read (the end of a level queues again those
    /// its group merging read). Past [`CACHED`], the oldest forget what
    /// was read ([`trim`]).
    recent: VecDeque<u32>,
    /// Successors handed to this shard, in frontier order.
    pub inbox: Vec<Arrival>,
    /// For each successor of the inbox that is a new state: its `seq` and
    /// its index in `next`.
    pub placed: Vec<(u32, u32)>,
    /// Whether to note how zones were merged (below), for rebuilding a
    /// trace through a merged state (`witness`).
    pub record: bool,
    /// When recording: each successor merged into a state of this level,
    /// as its `seq` and the index in `next` of the state it joined.
    pub absorbed: Vec<(u32, u32)>,
    /// When recording: each state of this level merged into another, as
    /// their indices in `next` (the one dropped, the one kept).
    pub joined: Vec<(u32, u32)>,
}

/// The passed list: [`SHARDS`] shards.
pub struct Passed {
    pub shards: Vec<Shard>,
}

impl Default for Passed {
    fn default() -> Passed {
        Passed {
            shards: (0..SHARDS)
                .map(|i| Shard {
                    number: i as u16,
                    ..Shard::default()
                })
                .collect(),
        }
    }
}

impl Passed {
    /// A passed list that notes, in each shard, how zones were merged
    /// when `record`, and lets a state cover another with the budgets
    /// `budgets` allows. The shards' arenas spill to `spill`, if given
    /// (`engine::spill`).
    pub fn new(record: bool, budgets: BudgetOrder, spill: Option<Arc<Spill>>) -> Passed {
        let mut p = Passed::default();
        for s in &mut p.shards {
            s.record = record;
            s.zones.budgets = budgets;
            s.zones.spill = spill.clone();
            s.arena = Arena::new(spill.clone());
        }
        p
    }

    /// Whether a stored zone of world `fp`, with at least budgets `left`
    /// left, includes `z`.
    pub fn covers(&self, fp: u64, z: &Dbm, left: &Budgets) -> bool {
        self.shards[shard_of(fp)].zones.covers(fp, z, left)
    }

    /// Stores `z` unless it is covered (the initial state).
    pub fn insert(&mut self, fp: u64, zone: Dbm, left: Budgets, level: u64) -> bool {
        self.shards[shard_of(fp)]
            .zones
            .insert(fp, zone, left, level, 0)
    }

    /// Distinct worlds stored.
    pub fn worlds(&self) -> u64 {
        self.shards.iter().map(|s| s.zones.map.len() as u64).sum()
    }

    /// Hands `a` to its shard (call in frontier order).
    pub fn hand(&mut self, a: Arrival) {
        self.shards[shard_of(a.fp)].inbox.push(a);
    }

    /// Runs `f` on every shard, on the search's worker threads (`pool`;
    /// `None`: on this thread). Shards are independent, so the outcome
    /// does not depend on the threads.
    pub fn each_shard(&mut self, pool: Option<&rayon::ThreadPool>, f: impl Fn(&mut Shard) + Sync) {
        use rayon::prelude::*;
        match pool {
            None => self.shards.iter_mut().for_each(f),
            Some(pool) => pool.install(|| self.shards.par_iter_mut().with_max_len(1).for_each(&f)),
        }
    }
}

impl Shard {
    /// Takes the inbox in order: each successor is dropped if a stored zone
    /// includes it, merged into a state of this level when `merge` and the
    /// union is a zone, and otherwise stored as a new state of `level`
    /// (recorded in `placed`).
    pub fn take_in(&mut self, canon: &Canon, merge: bool, level: u64) {
        for a in std::mem::take(&mut self.inbox) {
            trim(&mut self.next, &mut self.recent);
            let at = self.next.len() as u32;
            let left = a.left;
            let real = if merge {
                // One hint for the inclusion test and the stored entry.
                let hint = Hint::of(&a.zone);
                match absorb(canon, self, (&a, &hint), level) {
                    Some(Absorbed::Covered) => continue,
                    Some(Absorbed::Into(at)) => {
                        if self.record {
                            self.absorbed.push((a.seq, at));
                        }
                        continue;
                    }
                    None => {}
                }
                // Not absorbed: no stored zone includes it. Its zone as
                // the passed list keeps it (in the canonical layout) and as
                // the frontier will, as minimal graphs: one graph when the
                // layouts agree, as they do for most states.
                let canonical = a.zone.minimal();
                let real = match &a.real {
                    None => canonical.clone(),
                    Some(real) => real.minimal(),
                };
                self.zones
                    .insert_min(a.fp, (canonical, hint), left, level, at);
                self.fps.push(a.fp);
                real
            } else {
                let real = a.real.as_ref().unwrap_or(&a.zone).minimal();
                if !self.zones.insert(a.fp, a.zone, left, level, at) {
                    continue;
                }
                real
            };
            self.placed.push((a.seq, at));
            let place = self.arena.push(self.number, &a.packed, &real);
            self.next.push(Pending::new(place, a.hash));
            self.dead.push(false);
        }
    }

    /// The end of a level: groups merged ([`merge_level`]).
    pub fn end_level(&mut self, canon: &Canon, level: u64) {
        merge_level(canon, self, level);
    }

    /// After the level's merging: zones to disk past the memory limit
    /// ([`Zones::to_disk`]).
    pub fn zones_to_disk(&mut self) {
        self.zones.to_disk();
    }

    /// Packs the level's states for the frontier, leaving `next` empty:
    /// the merged ones join the others in `arena`.
    pub fn pack_level(&mut self) {
        let Shard {
            next,
            dead,
            arena,
            packed,
            number,
            recent,
            ..
        } = self;
        recent.clear();
        *packed = next
            .drain(..)
            .zip(dead.drain(..))
            .map(|(p, dead)| {
                (!dead).then(|| {
                    let mut p = p;
                    if !p.grown {
                        return p.place;
                    }
                    let world = p.world(arena).to_vec();
                    let zone = p.take_grown().expect("a grown zone is whole");
                    arena.push(*number, &world, &zone.minimal())
                })
            })
            .collect();
        arena.shrink();
    }
}

/// Merge candidates whose world and zone stay read, per shard. Most of a
/// level's states become candidates (a successor of the same world
/// arrives), and what is read of one (its world's bytes, its zone whole)
/// takes about 600 bytes: on `check zookeeper`, 92,000 of a level's
/// 97,000 states were read, and all of it stayed for the rest of the
/// level. Successors of one world mostly arrive close together, so the
/// 1,024 read last per shard keep nearly all the benefit: measured in
/// alternating pairs, the same time and 14 % less peak memory on
/// `zookeeper` (1,000,000 states), 4 % less on `redlock`.
const CACHED: usize = 1024;

/// Makes the states read longest ago forget what was read of them, down to
/// [`CACHED`].
fn trim(next: &mut [Pending], recent: &mut VecDeque<u32>) {
    while recent.len() > CACHED {
        if let Some(i) = recent.pop_front() {
            next[i as usize].forget();
        }
    }
}

/// Tries to merge the successor `s` into a state of the level being built
/// with the very same world (same layout, so the zones compare directly)
/// when the union of their zones is itself a zone (`Dbm::convex_union`).
/// Merging is exact: the merged zone is exactly the set of clock values
/// either reaches, and zone successors of a union are the union of the
/// successors. Interleavings of independent steps (deliveries to different
/// instances, two clients' moves) end in one world with zones that differ
/// only in the order of the clocks those steps reset; together they cover
/// both orders, so they merge. Returns how `s` was absorbed, if it was.
fn absorb(
    canon: &Canon,
    shard: &mut Shard,
    (s, hint): (&Arrival, &Hint),
    level: u64,
) -> Option<Absorbed> {
    let Shard {
        zones,
        next,
        arena,
        dead,
        record,
        joined,
        recent,
        ..
    } = shard;
    let world = zones.map.get_mut(&s.fp)?;
    if world.covers(
        zones.spill.as_deref(),
        (&s.zone, hint),
        &s.left,
        zones.budgets,
    ) {
        return Some(Absorbed::Covered);
    }
    let list = &mut world.ram;
    let mut into: Option<usize> = None;
    let mut zone = s.real.clone().unwrap_or_else(|| s.zone.clone());
    loop {
        let mut hit = None;
        for (i, e) in list.iter().enumerate() {
            let at = e.at as usize;
            if u64::from(e.level) != level || dead[at] || into == Some(i) {
                continue;
            }
            let read = next[at].loaded.is_some();
            let same = next[at].is_world(arena, &s.packed, s.hash);
            if !read && next[at].loaded.is_some() {
                recent.push_back(at as u32);
            }
            if !same {
                continue;
            }
            if let Some(h) = next[at].zone(arena).convex_union(&zone) {
                hit = Some((i, h));
                break;
            }
        }
        let Some((i, h)) = hit else { break };
        zone = h;
        match into {
            None => into = Some(i),
            Some(keep) => {
                // A second entry joins the first: it is dropped.
                dead[list[i].at as usize] = true;
                if *record {
                    joined.push((list[i].at, list[keep].at));
                }
                list.swap_remove(i);
                if keep == list.len() {
                    into = Some(i);
                }
            }
        }
    }
    let i = into?;
    let at = list[i].at as usize;
    // The merged state's world is the successor's own (they compared equal).
    let merged = ZState {
        world: crate::pack::from_bytes::<World>(&s.packed),
        zone,
    };
    let grown = canon.canonical(&merged).1;
    list[i].hint = Hint::of(&grown);
    // Only inclusion is asked of a stored zone (merging reads the state's
    // own zone, `next[at]`): its minimal graph answers that in a fraction
    // of the memory.
    list[i].zone = Kept::Min(grown.minimal());
    next[at].grow(merged.zone);
    Some(Absorbed::Into(at as u32))
}

/// How [`absorb`] took a successor in.
enum Absorbed {
    /// A stored zone includes it: it adds nothing to any state.
    Covered,
    /// It was merged into the state at this index of the shard's `next`.
    Into(u32),
}

/// Pieces the exactness test of a group merge may keep at once, per zone
/// of the group; past it the group is left as it is (see [`merge_level`]).
/// Most groups that reach the cap are not convex, and subtracting them
/// costs more than it saves: at 16, `redlock --instances 3 --faults none`
/// took 1.73 s instead of 1.28 s without group merging; at 4, 1.46 s,
/// while `zookeeper --faults delay` went from 0.66 s (31,343 states) to
/// 0.26 s (14,378).
const PIECES_PER_ZONE: usize = 4;

/// At the end of a level, merges the zones of one world that pairwise
/// merging ([`absorb`]) left apart, when together they are convex. The
/// orders of k independent steps leave k! zones that are cells of one
/// box-like zone: adjacent orders merge pairwise, but once a few have
/// merged, no two of the rest may have a convex union although all of
/// them together do (measured on `redlock --faults none`: 1,260 zones of
/// one world at depth 9, 313 after pairwise merging to a fixpoint, 1 as a
/// group). Exact: the hull replaces the group only when
/// `Dbm::covered_by_union` proves the hull is their union. The entry
/// first met keeps its path (a violation's trace is rebuilt without
/// merging when that path does not reach it, see `search::search_watched`).
fn merge_level(canon: &Canon, shard: &mut Shard, level: u64) {
    let Shard {
        zones,
        next,
        arena,
        dead,
        fps,
        record,
        joined,
        recent,
        ..
    } = shard;
    fps.sort_unstable();
    fps.dedup();
    for fp in fps.drain(..) {
        let Some(list) = zones.map.get_mut(&fp).map(|w| &mut w.ram) else {
            continue;
        };
        merge_world(canon, list, (next, arena), dead, *record, joined, level);
        // The level is done with these zones: from now on they are only
        // asked about inclusion.
        for e in list.iter_mut().filter(|e| u64::from(e.level) == level) {
            if next[e.at as usize].loaded.is_some() {
                recent.push_back(e.at);
            }
            e.zone.seal();
        }
        trim(next, recent);
    }
}

/// Merges the groups of this level's zones of one world's list whose union
/// is a zone ([`merge_level`]).
fn merge_world(
    canon: &Canon,
    list: &mut Vec<Stored>,
    (next, arena): (&mut [Pending], &Arena),
    dead: &mut [bool],
    record: bool,
    joined: &mut Vec<(u32, u32)>,
    level: u64,
) {
    let mine: Vec<usize> = (0..list.len())
        .filter(|&i| u64::from(list[i].level) == level && !dead[list[i].at as usize])
        .collect();
    if mine.len() < 2 {
        return;
    }
    // One group per world (a fingerprint is a world up to renaming):
    // first by the worlds' hashes, which reads no arena, then, in the
    // groups large enough to merge, by their bytes.
    let mut by_hash: Vec<Vec<usize>> = Vec::new();
    for i in mine {
        let h = next[list[i].at as usize].hash;
        match by_hash
            .iter_mut()
            .find(|g| next[list[g[0]].at as usize].hash == h)
        {
            Some(g) => g.push(i),
            None => by_hash.push(vec![i]),
        }
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for g in by_hash.into_iter().filter(|g| g.len() >= 3) {
        let mut exact: Vec<(Box<[u8]>, Vec<usize>)> = Vec::new();
        for i in g {
            let w = next[list[i].at as usize].world(arena);
            match exact.iter_mut().find(|(b, _)| **b == *w) {
                Some((_, e)) => e.push(i),
                None => exact.push((w.into(), vec![i])),
            }
        }
        groups.extend(exact.into_iter().map(|(_, e)| e));
    }
    let mut gone: Vec<usize> = Vec::new();
    // Two entries of one world left apart by `absorb` have been
    // tried as a pair already: only groups of three or more can merge.
    for g in groups.iter().filter(|g| g.len() >= 3) {
        let hull = {
            for &i in g {
                next[list[i].at as usize].zone(arena);
            }
            let zones: Vec<&Dbm> = g
                .iter()
                .map(|&i| {
                    let p = &next[list[i].at as usize];
                    p.loaded
                        .as_ref()
                        .and_then(|l| l.whole.as_ref())
                        .expect("unpacked just above")
                })
                .collect();
            let hull = zones[1..].iter().fold(zones[0].clone(), |h, z| h.hull(z));
            if hull.covered_by_union(&zones, PIECES_PER_ZONE * zones.len()) != Some(true) {
                continue;
            }
            hull
        };
        let keep = *g
            .iter()
            .min_by_key(|&&i| list[i].at)
            .expect("a group of two or more");
        let at = list[keep].at as usize;
        next[at].grow(hull);
        let grown = canon.canonical(&next[at].state(arena)).1;
        list[keep].hint = Hint::of(&grown);
        list[keep].zone = Kept::Min(grown.minimal());
        for &i in g.iter().filter(|&&i| i != keep) {
            dead[list[i].at as usize] = true;
            if record {
                joined.push((list[i].at, list[keep].at));
            }
            gone.push(i);
        }
    }
    gone.sort_unstable_by(|a, b| b.cmp(a));
    for i in gone {
        list.swap_remove(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::dbm::Bound;
    use crate::engine::spill::SpillTo;
    use crate::faults::FaultKind;

    /// The box `0 ≤ x ≤ a`, `0 ≤ y ≤ b`.
    fn boxed(a: i64, b: i64) -> Dbm {
        let mut d = Dbm::universe(3);
        d.constrain(1, 0, Bound::new(a, false));
        d.constrain(2, 0, Bound::new(b, false));
        d
    }

    fn budgets(pauses: u8) -> Budgets {
        let mut b = Budgets::none();
        b.set(FaultKind::Pause, pauses);
        b
    }

    /// A hint never rules out a zone that includes another, and rules out
    /// most that do not: zones over five clocks, with lower and upper
    /// bounds, a diagonal and strictness, pairwise.
    #[test]
    fn a_hint_rules_out_only_zones_that_do_not_include() {
        let mut zones = vec![Dbm::empty(6)];
        for lo in [0, 2] {
            for hi in [3, 5, 9] {
                for diag in [None, Some(1)] {
                    for strict in [false, true] {
                        for last in [4, 8] {
                            let mut d = Dbm::universe(6);
                            d.constrain(0, 1, Bound::new(-lo, false));
                            d.constrain(1, 0, Bound::new(hi, strict));
                            d.constrain(2, 0, Bound::new(hi + 1, false));
                            if let Some(c) = diag {
                                d.constrain(3, 4, Bound::new(c, false));
                            }
                            d.constrain(5, 0, Bound::new(last, false));
                            zones.push(d);
                        }
                    }
                }
            }
        }
        let (mut ruled_out, mut not_in) = (0, 0);
        for outer in &zones {
            for inner in &zones {
                let may = Hint::of(inner).may_lie_in(&Hint::of(outer));
                if outer.includes(inner) {
                    assert!(may, "a hint ruled out a zone that includes");
                } else {
                    not_in += 1;
                    ruled_out += !may as usize;
                }
            }
        }
        // Sums cannot tell every pair apart.
        assert!(ruled_out * 2 > not_in, "{ruled_out} of {not_in} ruled out");
        assert!(ruled_out < not_in, "{ruled_out} of {not_in} ruled out");
    }

    /// Zones written to disk, in one record per world rewritten as the
    /// world gains zones, answer every inclusion test as in RAM.
    #[test]
    fn zones_on_disk_answer_as_in_ram() {
        let to = SpillTo {
            dir: std::env::temp_dir(),
            limit: 0,
        };
        let spill = Arc::new(Spill::create(&to).unwrap());
        let subsume = BudgetOrder {
            subsume: true,
            ..BudgetOrder::default()
        };
        let mut ram = Zones::new(subsume);
        let mut disk = Zones::new(subsume);
        disk.spill = Some(spill.clone());
        // Three levels; worlds 1 and 2 gain zones on each, world 3 on the
        // first only, and each level ends by writing its zones out.
        let stored = [
            (1, (2, 5), 1),
            (2, (7, 1), 0),
            (3, (4, 4), 1),
            (1, (5, 2), 0),
            (2, (3, 3), 1),
            (1, (1, 9), 1),
            (2, (9, 0), 0),
        ];
        for (level, chunk) in [&stored[..3], &stored[3..5], &stored[5..]]
            .into_iter()
            .enumerate()
        {
            for &(fp, (a, b), pauses) in chunk {
                let z = boxed(a, b);
                assert!(ram.insert(fp, z.clone(), budgets(pauses), level as u64, 0));
                assert!(disk.insert(fp, z, budgets(pauses), level as u64, 0));
            }
            disk.to_disk();
            assert!(disk.map.values().all(|w| w.ram.is_empty()));
        }
        assert!(spill.written() > 0);
        let (mut yes, mut no) = (0, 0);
        for fp in 0..4 {
            for a in 0..10 {
                for b in 0..10 {
                    for pauses in 0..2 {
                        let z = boxed(a, b);
                        let left = budgets(pauses);
                        let want = ram.covers(fp, &z, &left);
                        assert_eq!(disk.covers(fp, &z, &left), want, "{fp} {a} {b} {pauses}");
                        if want { yes += 1 } else { no += 1 }
                    }
                }
            }
        }
        assert!(yes > 20 && no > 20, "{yes} covered, {no} not");
        // A zone covered on disk is not stored again.
        assert!(!disk.insert(1, boxed(1, 4), budgets(0), 3, 0));
        assert!(disk.insert(1, boxed(6, 6), budgets(0), 3, 0));
    }
}
