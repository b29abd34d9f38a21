//! The packed encoding of a world (`crate::pack`): what the search keeps
//! of a state between levels. Every type of the world is listed here field
//! by field, so a field added to the world and not here does not compile.

use super::*;
use crate::pack::{Pack, Reader, pack_enum, pack_struct, put_varint};

/// Up to eight flags in one byte.
fn flags(bits: &[bool]) -> u8 {
    bits.iter()
        .enumerate()
        .fold(0, |acc, (i, &b)| acc | (b as u8) << i)
}

fn flag(byte: u8, i: u8) -> bool {
    byte >> i & 1 == 1
}

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
// A value is two bytes, its client and its round, unless it is an
// attempt's own or a task thread's (a flag in the round's varint says so).
impl Pack for Val {
    fn pack(&self, out: &mut Vec<u8>) {
        let Val {
            client,
            round,
            attempt,
            per_attempt,
            task,
        } = *self;
        let more = attempt != 0 || per_attempt || task;
        out.push(client);
        put_varint(out, (round as u64) << 1 | more as u64);
        if more {
            out.push(attempt);
            out.push(flags(&[per_attempt, task]));
        }
    }
    fn unpack(r: &mut Reader) -> Val {
        let client = r.byte();
        let x = r.varint();
        let round = u8::try_from(x >> 1).expect("a packed round out of range");
        let (attempt, f) = if x & 1 == 1 {
            (r.byte(), r.byte())
        } else {
            (0, 0)
        };
        Val {
            client,
            round,
            attempt,
            per_attempt: flag(f, 0),
            task: flag(f, 1),
        }
    }
}
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
// A message's four flags share a byte.
impl Pack for Msg {
    fn pack(&self, out: &mut Vec<u8>) {
        let Msg {
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
        } = self;
        from.pack(out);
        to.pack(out);
        chan.pack(out);
        conn.pack(out);
        seq.pack(out);
        body.pack(out);
        out.push(flags(&[*held, *late, *arrived, *orphan]));
        repl_wait.pack(out);
        clk.pack(out);
    }
    fn unpack(r: &mut Reader) -> Msg {
        let from = Pack::unpack(r);
        let to = Pack::unpack(r);
        let chan = Pack::unpack(r);
        let conn = Pack::unpack(r);
        let seq = Pack::unpack(r);
        let body = Pack::unpack(r);
        let f = r.byte();
        let repl_wait = Pack::unpack(r);
        let clk = Pack::unpack(r);
        Msg {
            from,
            to,
            chan,
            conn,
            seq,
            body,
            held: flag(f, 0),
            late: flag(f, 1),
            arrived: flag(f, 2),
            orphan: flag(f, 3),
            repl_wait,
            clk,
        }
    }
}
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
// A client's five flags share a byte.
impl Pack for Client {
    fn pack(&self, out: &mut Vec<u8>) {
        let Client {
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
        } = self;
        out.push(flags(&[
            *alive,
            *wrote,
            *per_attempt,
            *reentered,
            *unfolded,
        ]));
        paused.pack(out);
        phase.pack(out);
        wait.pack(out);
        round.pack(out);
        read.pack(out);
        token.pack(out);
        wd.pack(out);
        votes.pack(out);
        t1.pack(out);
        t1_shift.pack(out);
        attempt.pack(out);
        resent.pack(out);
        request.pack(out);
        gather.pack(out);
    }
    fn unpack(r: &mut Reader) -> Client {
        let f = r.byte();
        let paused = Pack::unpack(r);
        let phase = Pack::unpack(r);
        let wait = Pack::unpack(r);
        let round = Pack::unpack(r);
        let read = Pack::unpack(r);
        let token = Pack::unpack(r);
        let wd = Pack::unpack(r);
        let votes = Pack::unpack(r);
        let t1 = Pack::unpack(r);
        let t1_shift = Pack::unpack(r);
        let attempt = Pack::unpack(r);
        let resent = Pack::unpack(r);
        let request = Pack::unpack(r);
        let gather = Pack::unpack(r);
        Client {
            alive: flag(f, 0),
            paused,
            phase,
            wait,
            round,
            read,
            token,
            wrote: flag(f, 1),
            wd,
            votes,
            t1,
            t1_shift,
            attempt,
            per_attempt: flag(f, 2),
            reentered: flag(f, 3),
            resent,
            request,
            gather,
            unfolded: flag(f, 4),
        }
    }
}
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
pack_enum!(Session { 0 Live(c), 1 Kept, 2 Closing });
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
