//! Disk for the parts of the search that need not stay in RAM: the packed
//! levels (`packed::Arena`'s compressed blocks), the parent links
//! (`parents::Parents`) and the zones of the passed list
//! (`passed::Zones::to_disk`). The first two are written once and read
//! back rarely or in order, as TLC's queue file is: a level is read block
//! after block when it is expanded, a block of the level being built is
//! read again only when one of its states is a merge candidate, and the
//! parent links only when a trace is rebuilt. The passed list is probed by
//! every successor: a world's zones are one record, read back (from the
//! system's page cache while it has room, from the disk after) whenever a
//! successor of that world is tested for inclusion; only the map from a
//! world's fingerprint to its record stays in RAM.
//!
//! Nothing goes to disk while the process's resident memory is under the
//! limit; above it, every block sealed, every full chunk of parent links
//! and, at each level's end, the zones of the worlds given one on that
//! level are written to one file instead. So a search whose levels outgrow
//! RAM goes on, slower, to the same result: where a byte lives changes no
//! state, no order and no verdict (`models/tests/spill.rs`).
//!
//! The file is created new in the directory given, under a name no other
//! file has, and unlinked at once (Unix): it takes no name in the
//! directory, and the system frees it when the search ends, however it
//! ends.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Where a search is to spill and from what resident memory on: each
/// search makes its own file there ([`Spill::create`]), freed when the
/// search ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpillTo {
    /// The directory the file is made in.
    pub dir: PathBuf,
    /// Resident memory, in bytes, above which what can go to disk does.
    pub limit: u64,
}

/// A search's spill file, and from what resident memory on it is used.
pub struct Spill {
    file: File,
    /// Where the file was created (for messages).
    dir: PathBuf,
    /// Resident memory (bytes) above which what can go to disk does.
    limit: u64,
    /// Bytes written: the next write's offset.
    end: Mutex<u64>,
    /// Reads since the last look at resident memory (see [`Spill::wanted`]).
    asks: AtomicU64,
    /// Resident memory was seen over the limit.
    over: AtomicBool,
    /// The first write that failed, if one did: from then on everything
    /// stays in RAM.
    failed: Mutex<Option<String>>,
}

impl std::fmt::Debug for Spill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spill")
            .field("dir", &self.dir)
            .field("limit", &self.limit)
            .field("written", &self.written())
            .finish()
    }
}

impl Spill {
    /// A new spill file in `to.dir`, used once resident memory passes
    /// `to.limit` bytes.
    pub fn create(to: &SpillTo) -> io::Result<Spill> {
        Spill::create_in(&to.dir, to.limit)
    }

    fn create_in(dir: &Path, limit: u64) -> io::Result<Spill> {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let mut tries = 0u32;
        let (file, path) = loop {
            let path = dir.join(format!(
                "locklab-spill-{}-{stamp}-{tries}",
                std::process::id()
            ));
            match OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(f) => break (f, path),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 100 => tries += 1,
                Err(e) => return Err(e),
            }
        };
        // The file is this search's alone: it needs no name.
        std::fs::remove_file(&path)?;
        Ok(Spill {
            file,
            dir: dir.to_path_buf(),
            limit,
            end: Mutex::new(0),
            asks: AtomicU64::new(0),
            over: Default::default(),
            failed: Mutex::new(None),
        })
    }

    /// Whether what is sealed now should go to disk: resident memory is
    /// over the limit (or cannot be read). Resident memory is read at most
    /// once in 64 asks; once over, it stays over.
    pub(crate) fn wanted(&self) -> bool {
        if self.over.load(Ordering::Relaxed) {
            return true;
        }
        if !self.asks.fetch_add(1, Ordering::Relaxed).is_multiple_of(64) {
            return false;
        }
        let over = crate::search::resident_memory_bytes().is_none_or(|r| r > self.limit);
        if over {
            self.over.store(true, Ordering::Relaxed);
        }
        over
    }

    /// Writes `bytes` at the end of the file; its offset, or `None` if the
    /// write failed (the caller keeps them in RAM, and the failure is
    /// reported with the result).
    pub(crate) fn put(&self, bytes: &[u8]) -> Option<u64> {
        let mut end = self.end.lock().unwrap_or_else(|e| e.into_inner());
        let at = *end;
        match self.file.write_all_at(bytes, at) {
            Ok(()) => {
                *end += bytes.len() as u64;
                Some(at)
            }
            Err(e) => {
                let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
                failed.get_or_insert_with(|| {
                    format!(
                        "writing to the spill file in {}: {e}; the rest stayed in RAM",
                        self.dir.display()
                    )
                });
                None
            }
        }
    }

    /// Reads back `buf.len()` bytes written at `at`.
    ///
    /// # Panics
    /// If the file cannot be read back: the system lost what it accepted,
    /// and the search cannot go on without it.
    pub(crate) fn get(&self, at: u64, buf: &mut [u8]) {
        self.file.read_exact_at(buf, at).unwrap_or_else(|e| {
            panic!("reading back the spill file in {}: {e}", self.dir.display())
        })
    }

    /// Bytes written to disk so far.
    pub fn written(&self) -> u64 {
        *self.end.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The first write that failed, if one did.
    pub fn failure(&self) -> Option<String> {
        self.failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_put_reads_back_and_leaves_no_name_behind() {
        let dir = std::env::temp_dir().join(format!("locklab-spill-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let s = Spill::create_in(&dir, 0).unwrap();
        assert!(s.wanted(), "a limit of 0 spills at once");
        let a = s.put(b"first").unwrap();
        let b = s.put(b"second block").unwrap();
        let mut buf = vec![0; 12];
        s.get(b, &mut buf);
        assert_eq!(&buf, b"second block");
        let mut buf = vec![0; 5];
        s.get(a, &mut buf);
        assert_eq!(&buf, b"first");
        assert_eq!(s.written(), 17);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir(&dir).unwrap();
    }
}
