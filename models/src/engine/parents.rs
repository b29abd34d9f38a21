//! The parent index: for every state the search stores, the state it was
//! first reached from and the step taken ([`Link`]), by state id. Traces
//! are read back from it, by following links from a violating state to
//! the initial one and replaying the steps (`search::path_to`).
//!
//! It is written in id order and read only when a trace is built, so
//! full chunks of it can go to disk (`engine::spill`) once RAM is short:
//! 12 bytes a state that a long search need not keep in RAM.

use super::spill::Spill;
use super::zone::Succ;
use crate::action::Action;
use crate::search::Fingerprinter;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// The id a root's parent link names: the initial state has no parent.
pub(crate) const ROOT: u32 = u32::MAX;

/// Links per chunk: 768 KB.
const CHUNK: usize = 1 << 16;
/// Bytes of a link on disk: the parent id, the step's index, its check.
const WIDE: usize = 12;

/// A step as stored in the parent links: which of its parent's successors
/// it is (`LockModel::successors` lists them in an order that is a
/// function of the state), with a 32-bit check of its action and answers.
/// Eight bytes, where the step itself takes 56: one link is kept for every
/// state stored.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Link {
    index: u32,
    check: u32,
}

impl Link {
    pub(crate) const NONE: Link = Link { index: 0, check: 0 };

    pub(crate) fn new(index: usize, action: &Action, answers: &[bool]) -> Link {
        Link {
            index: index as u32,
            check: Link::check_of(action, answers),
        }
    }

    fn check_of(action: &Action, answers: &[bool]) -> u32 {
        let mut h = Fingerprinter::new();
        (action, answers).hash(&mut h);
        h.finish() as u32
    }

    /// The index in `succs` (the successors of the state this step left)
    /// of the step. Where the search took it, unless that one fails the
    /// check: the state replayed along its first parents' path may have
    /// a smaller zone than the one the search expanded, which a merge
    /// grew, and so other successors. A check that collides would name
    /// another step, and the path it gives would fail the feasibility
    /// check every counterexample passes (`feasible`) before it is shown.
    pub(crate) fn find(&self, succs: &[Succ]) -> Option<usize> {
        let ok = |x: &Succ| Link::check_of(&x.action, &x.answers) == self.check;
        match succs.get(self.index as usize) {
            Some(x) if ok(x) => Some(self.index as usize),
            _ => succs.iter().position(ok),
        }
    }

    /// A total order on steps, to keep lists of them deterministic.
    pub(crate) fn sort_key(&self) -> (u32, u32) {
        (self.index, self.check)
    }
}

/// Each state's first parent and the step from it, by id: full chunks in
/// RAM or on disk, the last one growing.
#[derive(Debug, Default)]
pub(crate) struct Parents {
    chunks: Vec<Chunk>,
    tail: Vec<(u32, Link)>,
    spill: Option<Arc<Spill>>,
}

#[derive(Debug)]
enum Chunk {
    Ram(Box<[(u32, Link)]>),
    /// [`CHUNK`] links of [`WIDE`] bytes at this offset of the spill file.
    Disk(u64),
}

impl Parents {
    /// An empty index whose full chunks go to `spill`, if given, once
    /// resident memory passes its limit.
    pub(crate) fn new(spill: Option<Arc<Spill>>) -> Parents {
        Parents {
            spill,
            ..Parents::default()
        }
    }

    /// The next state's parent and step; its id is the count before.
    pub(crate) fn push(&mut self, parent: u32, step: Link) {
        self.tail.push((parent, step));
        if self.tail.len() == CHUNK {
            let full = std::mem::replace(&mut self.tail, Vec::with_capacity(CHUNK));
            let on_disk = self.spill.as_ref().filter(|s| s.wanted()).and_then(|s| {
                let mut bytes = Vec::with_capacity(CHUNK * WIDE);
                for (p, l) in &full {
                    bytes.extend_from_slice(&p.to_le_bytes());
                    bytes.extend_from_slice(&l.index.to_le_bytes());
                    bytes.extend_from_slice(&l.check.to_le_bytes());
                }
                s.put(&bytes)
            });
            self.chunks.push(match on_disk {
                Some(at) => Chunk::Disk(at),
                None => Chunk::Ram(full.into_boxed_slice()),
            });
        }
    }

    /// States stored.
    pub(crate) fn len(&self) -> usize {
        self.chunks.len() * CHUNK + self.tail.len()
    }

    /// The parent of state `id` and the step from it.
    pub(crate) fn get(&self, id: u32) -> (u32, Link) {
        let (c, i) = (id as usize / CHUNK, id as usize % CHUNK);
        match self.chunks.get(c) {
            None => self.tail[i],
            Some(Chunk::Ram(links)) => links[i],
            Some(Chunk::Disk(at)) => {
                let spill = self.spill.as_ref().expect("a chunk on disk has its file");
                let mut b = [0u8; WIDE];
                spill.get(at + (i * WIDE) as u64, &mut b);
                let word = |k: usize| u32::from_le_bytes(b[k..k + 4].try_into().expect("4 bytes"));
                (
                    word(0),
                    Link {
                        index: word(4),
                        check: word(8),
                    },
                )
            }
        }
    }

    /// The number of steps from the initial state to `id` along first
    /// parents.
    pub(crate) fn depth(&self, id: u32) -> u64 {
        let mut d = 0;
        let mut cur = id;
        while self.get(cur).0 != ROOT {
            d += 1;
            cur = self.get(cur).0;
        }
        d
    }

    /// The steps from the initial state to `id` along first parents, in
    /// order.
    pub(crate) fn links_to(&self, id: u32) -> Vec<Link> {
        let mut links = Vec::new();
        let mut cur = id;
        loop {
            let (p, l) = self.get(cur);
            if p == ROOT {
                break;
            }
            links.push(l);
            cur = p;
        }
        links.reverse();
        links
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::spill::SpillTo;

    #[test]
    fn links_read_back_from_ram_and_disk_alike() {
        let spill = Arc::new(
            Spill::create(&SpillTo {
                dir: std::env::temp_dir(),
                limit: 0,
            })
            .expect("a spill file"),
        );
        let mut on_disk = Parents::new(Some(spill.clone()));
        let mut in_ram = Parents::new(None);
        let n = 2 * CHUNK + 77;
        for id in 0..n as u32 {
            let (p, l) = (
                // State 0 is the root: its parent is ROOT (u32::MAX).
                id.wrapping_sub(1),
                Link {
                    index: id % 7,
                    check: id.wrapping_mul(2_654_435_761),
                },
            );
            on_disk.push(p, l);
            in_ram.push(p, l);
        }
        assert!(
            spill.written() >= (2 * CHUNK * WIDE) as u64,
            "full chunks went to disk"
        );
        assert_eq!(on_disk.len(), n);
        for id in [
            0,
            1,
            CHUNK as u32 - 1,
            CHUNK as u32,
            2 * CHUNK as u32 + 5,
            n as u32 - 1,
        ] {
            let (a, b) = (on_disk.get(id), in_ram.get(id));
            assert_eq!((a.0, a.1.sort_key()), (b.0, b.1.sort_key()));
        }
        assert_eq!(on_disk.depth(n as u32 - 1), n as u64 - 1);
    }
}
