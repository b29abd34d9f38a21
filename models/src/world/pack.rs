//! The packed encoding of a world (`crate::pack`): what the search keeps
//! of a state between levels. Every type of the world is listed here field
//! by field, so a field added to the world and not here does not compile.

use super::*;
use crate::pack::{Pack, Reader, pack_enum, pack_struct};

impl Pack for Clk {
    fn pack(&self, out: &mut Vec<u8>) {
        out.push(self.0);
    }
    fn unpack(r: &mut Reader) -> Clk {
        Clk(r.byte())
    }
}

impl Pack for Budgets {
    fn pack(&self, out: &mut Vec<u8>) {
        self.0.pack(out);
    }
    fn unpack(r: &mut Reader) -> Budgets {
        Budgets(Pack::unpack(r))
    }
}

pack_enum!(Node {
    0 Client(c),
    1 Redis(r),
    2 Service,
});
pack_struct!(Val {
    client,
    round,
    attempt,
    per_attempt,
    task,
});
pack_enum!(Chan { 0 Main, 1 Watchdog });
pack_enum!(Cmd {
    0 SetNxPx { val, ttl },
    1 SetNx { val },
    2 Expire { ttl },
    3 Get,
    4 Del,
    5 Cad { val },
    6 Renew { val, ttl },
    7 PExpire { ttl },
    8 FencedSet { val, ttl },
    9 HashLock { val, ttl },
    10 HashUnlock { val, ttl },
    11 Open,
    12 Lock { round },
    13 Create { round },
    14 Txn { round },
    15 Order { rev },
    16 Watch { rev },
    17 KeepAlive,
    18 Remove { rev },
});
pack_enum!(Reply {
    0 Ok,
    1 Nil,
    2 Int(i),
    3 Val(v),
    4 Token(t),
    5 Busy,
    6 Place { rev, pred, mine },
    7 Exists(b),
    8 Deleted(r),
    9 Alive(b),
});
pack_enum!(Body { 0 Req(c), 1 Reply(r) });
pack_struct!(Msg {
    from,
    to,
    chan,
    conn,
    seq,
    body,
    held,
    late,
    arrived,
    orphan,
    repl_wait,
    clk,
});
pack_struct!(Expiry { ttl, shift, since });
pack_struct!(Entry { val, exp, holds });
pack_enum!(Role { 0 Primary, 1 Replica });
pack_enum!(Status { 0 Up, 1 Down(c), 2 Dead });
pack_enum!(ReplKind {
    0 Set(v),
    1 Del,
    2 Expire,
    3 SetAndIncr(v),
    4 Holds(v, n),
});
pack_struct!(ReplOp { kind, exp });
pack_struct!(RedisNode {
    status,
    role,
    lock,
    counter,
    clock,
    backlog,
});
pack_enum!(Phase {
    0 Idle,
    1 Acquire(s),
    2 Work,
    3 Write,
    4 Leave,
    5 Release(s),
    6 Task,
    7 Done,
    8 Reenter,
    9 InnerRelease,
});
pack_enum!(WaitKind {
    0 Start,
    1 Backoff,
    2 Reply,
    3 Work,
    4 Slow,
    5 Step,
    6 Renewal,
    7 Reconcile,
    8 Gather,
});
pack_struct!(Wait { kind, late, clk });
pack_enum!(WdState { 0 Sleeping, 1 Waiting });
pack_struct!(Watchdog {
    val,
    state,
    wait,
    renewals,
    holds,
    resent,
});
pack_enum!(Vote {
    0 Pending,
    1 Yes,
    2 No,
    3 Unsent,
});
pack_struct!(Client {
    alive,
    paused,
    phase,
    wait,
    round,
    read,
    token,
    wrote,
    wd,
    votes,
    t1,
    t1_shift,
    attempt,
    per_attempt,
    reentered,
    resent,
    request,
    gather,
    unfolded,
});
pack_struct!(Resource {
    value,
    accepted,
    max_token,
    writers,
    recon,
});
pack_struct!(Recon {
    wait,
    paused,
    damage,
    flagged,
    missed,
});
pack_enum!(Writer { 0 Done, 1 Ready, 2 Read(v) });
pack_struct!(Ghost {
    foreign,
    last_token,
    token_regressed,
    duplicated,
    late_write,
});
pack_enum!(Touch {
    0 Deleted,
    1 Extended,
    2 DeletedOwnCurrent,
});
pack_struct!(CoordEntry {
    owner,
    round,
    rev,
    seq,
});
pack_struct!(Coord {
    rev,
    sessions,
    entries,
    watches,
    cversion,
});
// The budgets come first, at a fixed place: the search reads them from a
// packed world without unpacking the rest (`budgets_of`).
pack_struct!(World {
    faults_left,
    clients,
    redis,
    net,
    resource,
    ghost,
    coord,
});

/// The fault budgets left in a packed world, read without unpacking it.
pub fn budgets_of(packed: &[u8]) -> Budgets {
    Budgets::unpack(&mut Reader::new(packed))
}
