//! The dense-time clock-zone engine: difference-bound matrices ([`dbm`]) for
//! the symbolic search, and an exact difference-constraint solver ([`solve`])
//! that turns a symbolic path into concrete rational timestamps and validates
//! them independently of the zone code. The search keeps its states in
//! the passed list ([`passed`]: zones per world, merging), its levels
//! packed and compressed ([`packed`]) and its parent links ([`parents`]);
//! levels and links go to disk once RAM is short ([`spill`]).

pub mod concrete;
pub mod dbm;
pub mod packed;
pub mod parents;
pub mod passed;
pub mod solve;
pub mod spill;
pub mod zone;
