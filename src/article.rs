//! The article's claims, checked: a page of the gallery that quotes each
//! claim the article locklab is built from makes about which design breaks under
//! which fault, runs the check that tests it, and says what the search
//! found — and whether that agrees with the article.
//!
//! The table below holds only what the article *says* and which check tests
//! it. Every verdict on the page is computed by the search when the gallery
//! is generated (and every counterexample replayed and validated), so when
//! the model changes the page changes with it, and the gallery's staleness
//! test notices.

use crate::util::Failure;
use locklab_models::params::{
    CrashKind, Handoff, ResourceCheck, ResourceOp, TokenSource, TokenStore,
};
use locklab_models::presets::ClientPreset;
use locklab_models::search::SearchOptions;
use locklab_models::time::{MS, Micros, SEC};
use locklab_models::{Budgets, FaultKind, Invariant, LockModel, Params, protocols};
use locklab_traces::{CheckReport, svg};
use std::collections::BTreeMap;
use std::fmt::Write;

/// What the article asserts about a design under a fault.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Says {
    /// It breaks.
    Breaks,
    /// It is safe.
    Safe,
    /// The article does not say (locklab adds the row).
    Silent,
}

struct Claim {
    /// File stem of its counterexample.
    id: &'static str,
    section: &'static str,
    /// The article's words.
    quote: &'static str,
    /// What they claim, in English.
    gloss: &'static str,
    says: Says,
    protocol: &'static str,
    faults: &'static [FaultKind],
    invariant: Invariant,
    /// Knobs beyond the protocol's defaults.
    knobs: fn(&mut Params),
    /// The knobs as command-line words, for the page.
    flags: &'static str,
    /// At most this many faults together (`None`: all the kinds shown can
    /// strike in one execution).
    cap: Option<u8>,
}

use FaultKind::*;
use Invariant::*;

fn none(_: &mut Params) {}

/// Redlock on one instance (a quorum of one).
fn one_instance(p: &mut Params) {
    p.instances = 1;
    p.quorum = 1;
}

/// A reconciler every 10 s (§7.5 对账).
fn reconcile_10s(p: &mut Params) {
    p.reconcile = Some(10 * SEC);
}

/// Redlock on one instance whose clock jumps forward by `jump`: the drift
/// margin under test without the quorum around it.
fn redlock_margin(p: &mut Params, jump: Micros) {
    one_instance(p);
    p.jump = jump;
}

const CLAIMS: &[Claim] = &[
    Claim {
        id: "setnx-crash",
        section: "§2.1",
        quote: "先SETNX再EXPIRE……两条命令之间客户端崩溃，就会留下一把没有过期时间的锁",
        gloss: "SETNX then EXPIRE: a crash between the two leaves a lock that never expires",
        says: Says::Breaks,
        protocol: "setnx-expire",
        faults: &[Crash],
        invariant: NoOrphanLock,
        knobs: none,
        flags: "",
        cap: None,
    },
    Claim {
        id: "setnx-delay",
        section: "§2.1",
        quote: "",
        gloss: "no crash needed: the SETNX wins but its answer is held up; the client times out, and every retry finds its own key, which has no expiry",
        says: Says::Silent,
        protocol: "setnx-expire",
        faults: &[Delay],
        invariant: NoOrphanLock,
        knobs: none,
        flags: "",
        cap: None,
    },
    Claim {
        id: "slow-work",
        section: "§3.1",
        quote: "设短了，破坏互斥。业务偶发地慢……超过过期时间，锁被自动释放，第二个客户端加锁成功",
        gloss: "a critical section slower than the TTL lets a second client in",
        says: Says::Breaks,
        protocol: "lua-release",
        faults: &[Slow],
        invariant: MutualExclusion,
        knobs: none,
        flags: "",
        cap: None,
    },
    Claim {
        id: "gc-pause",
        section: "§3.3",
        quote: "甲的进程进入一次长垃圾回收……此刻系统里有两个都认为自己独占资源的写入者",
        gloss: "a GC pause longer than the TTL: two clients believe they hold the lock",
        says: Says::Breaks,
        protocol: "lua-release",
        faults: &[Pause],
        invariant: MutualExclusion,
        knobs: none,
        flags: "",
        cap: None,
    },
    Claim {
        id: "gc-pause-overwrite",
        section: "§3.3",
        quote: "如果临界区是\u{201c}读余额、算新值、写回去\u{201d}，两边会互相覆盖",
        gloss: "and a read-modify-write critical section loses an update",
        says: Says::Breaks,
        protocol: "lua-release",
        faults: &[Pause],
        invariant: NoLostUpdate,
        knobs: none,
        flags: "",
        cap: None,
    },
    Claim {
        id: "naive-del",
        section: "§4.1",
        quote: "一条DEL把锁删了——但此刻锁属于乙",
        gloss: "a plain DEL deletes the lock another client now holds",
        says: Says::Breaks,
        protocol: "naive-del",
        faults: &[Pause],
        invariant: Ownership,
        knobs: none,
        flags: "",
        cap: None,
    },
    Claim {
        id: "get-del",
        section: "§4.2",
        quote: "先查再删依然是错的……DEL到达时删掉的已经是乙的锁",
        gloss: "GET-then-DEL still deletes another's lock: the key changes hands in between",
        says: Says::Breaks,
        protocol: "get-del",
        faults: &[Delay],
        invariant: Ownership,
        knobs: none,
        flags: "",
        cap: None,
    },
    Claim {
        id: "get-del-race",
        section: "§4.2",
        quote: "GET返回时锁确实还是自己的，DEL命令在网络上飞行的几毫秒里锁过期、被乙抢到",
        gloss: "no fault needed: with ordinary latency (0.2..5 ms a message) and work that runs up to the TTL (29.99 s..30 s), the key expires between c1's GET and its DEL and c2's SET NX lands in that window",
        says: Says::Breaks,
        protocol: "get-del",
        faults: &[],
        invariant: Ownership,
        knobs: |p| {
            p.work_min = 29_990 * MS;
            p.work_max = 30 * SEC;
        },
        flags: "--work 29.99s..30s",
        cap: None,
    },
    Claim {
        id: "lua-release",
        section: "§4.3",
        quote: "用 Lua 把校验与删除压成一步",
        gloss: "the Lua compare-and-delete never deletes another client's lock",
        says: Says::Safe,
        protocol: "lua-release",
        faults: &[Pause, Slow, Loss, Delay, Crash],
        invariant: Ownership,
        knobs: none,
        flags: "",
        cap: None,
    },
    Claim {
        id: "handoff-async",
        section: "§4.4",
        quote: "持锁线程返回后锁被释放，异步任务还在裸奔",
        gloss: "a write handed to an async task runs after the release, outside the lock",
        says: Says::Breaks,
        protocol: "lua-release",
        faults: &[],
        invariant: NoLostUpdate,
        knobs: |p| p.handoff = Handoff::Async,
        flags: "--handoff async",
        cap: None,
    },
    Claim {
        id: "handoff-transfer",
        section: "§4.4",
        quote: "显式地把锁的生命周期管理权（含凭证）移交给接手方",
        gloss: "hand the task the lock and its credential: it writes, then releases",
        says: Says::Safe,
        protocol: "lua-release",
        faults: &[],
        invariant: NoLostUpdate,
        knobs: |p| p.handoff = Handoff::Transfer,
        flags: "--handoff transfer",
        cap: None,
    },
    Claim {
        id: "watchdog-slow",
        section: "§5.2",
        quote: "看门狗解决的是\u{201c}正常慢\u{201d}",
        gloss: "the watchdog keeps the lock through slow work",
        says: Says::Safe,
        protocol: "watchdog",
        faults: &[Slow],
        invariant: MutualExclusion,
        knobs: none,
        flags: "",
        cap: None,
    },
    Claim {
        id: "watchdog-pause",
        section: "§5.2",
        quote: "但看门狗治不了\u{201c}停顿\u{201d}……业务线程冻结的同时，续期线程也冻结了",
        gloss: "but not through a pause: the pause freezes the watchdog too",
        says: Says::Breaks,
        protocol: "watchdog",
        faults: &[Pause],
        invariant: MutualExclusion,
        knobs: none,
        flags: "",
        cap: None,
    },
    Claim {
        id: "watchdog-lost-renewal",
        section: "§5.1",
        quote: "\u{201c}三分之一周期\u{201d}的设计给了连续两次续期失败的重试余地：即使一次续期因网络抖动丢失，下一次续期仍在锁过期之前到达",
        gloss: "renewing every third of the TTL survives one lost renewal (Redisson 3.44 and later)",
        says: Says::Safe,
        protocol: "watchdog",
        faults: &[Loss, Slow],
        invariant: MutualExclusion,
        knobs: |p| ClientPreset::Redisson.apply(p, "watchdog"),
        flags: "--client redisson",
        cap: None,
    },
    Claim {
        id: "watchdog-lost-renewal-3-43",
        section: "§5.1",
        quote: "\u{201c}三分之一周期\u{201d}的设计给了连续两次续期失败的重试余地",
        gloss: "the same with Redisson up to 3.43, whose watchdog stops for good after one failed renewal",
        says: Says::Safe,
        protocol: "watchdog",
        faults: &[Loss, Slow],
        invariant: MutualExclusion,
        knobs: |p| ClientPreset::Redisson343.apply(p, "watchdog"),
        flags: "--client redisson@3.43",
        cap: None,
    },
    Claim {
        id: "reentrant-thread-value",
        section: "§4.4",
        quote: "字段名是\u{201c}客户端标识加线程标识\u{201d}，字段值是重入计数",
        gloss: "the reentrant hash names a thread, not an acquisition: a delayed unlock from the thread's first acquisition counts down and deletes its second",
        says: Says::Silent,
        protocol: "watchdog",
        faults: &[Delay],
        invariant: Ownership,
        knobs: |p| {
            ClientPreset::Redisson.apply(p, "watchdog");
            p.clients = 1;
            p.acquisitions = 2;
        },
        flags: "--client redisson --clients 1 --acquisitions 2",
        cap: None,
    },
    Claim {
        id: "renew-unchecked",
        section: "§5.1",
        quote: "续期脚本必须校验所有权……否则就是在给别人的锁续命",
        gloss: "a renewal without the ownership check extends another client's lock",
        says: Says::Breaks,
        protocol: "watchdog",
        faults: &[Pause],
        invariant: Ownership,
        knobs: |p| p.renew_unchecked = true,
        flags: "--renew-unchecked",
        cap: None,
    },
    Claim {
        id: "no-cancel",
        section: "§5.3",
        quote: "忘记取消续期任务的后果是锁永不过期",
        gloss: "a renewal never cancelled keeps a crashed holder's lock forever",
        says: Says::Breaks,
        protocol: "watchdog",
        faults: &[Crash],
        invariant: NoOrphanLock,
        knobs: |p| p.no_cancel = true,
        flags: "--no-cancel",
        cap: None,
    },
    Claim {
        id: "renew-cap",
        section: "§5.3",
        quote: "给续期设一个总时长上限（比如十分钟）是合理的兜底",
        gloss: "a cap on total renewal time is the fallback",
        says: Says::Safe,
        protocol: "watchdog",
        faults: &[Crash],
        invariant: NoOrphanLock,
        knobs: |p| {
            p.no_cancel = true;
            p.renew_cap = Some(10 * 60 * SEC);
        },
        flags: "--no-cancel --renew-cap 10m",
        cap: None,
    },
    Claim {
        id: "failover",
        section: "§6.1",
        quote: "哨兵把一个尚未收到这条写入的从节点提升为新主……第二个客户端向新主加锁，成功",
        gloss: "a failover loses the unreplicated lock: a second client gets it",
        says: Says::Breaks,
        protocol: "replicated",
        faults: &[Failover],
        invariant: MutualExclusion,
        knobs: none,
        flags: "",
        cap: None,
    },
    Claim {
        id: "failover-wait",
        section: "§6.1",
        quote: "加锁命令在主节点执行成功、给客户端返回OK的那一刻，这条写入可能还没到达任何从节点",
        gloss: "unless the client waits for a replica: Redisson sends WAIT 1 after its lock script, and a failover alone then loses no lock it acknowledged",
        says: Says::Silent,
        protocol: "replicated",
        faults: &[Failover],
        invariant: MutualExclusion,
        knobs: |p| ClientPreset::Redisson.apply(p, "replicated"),
        flags: "--client redisson",
        cap: None,
    },
    Claim {
        id: "redlock-restart",
        section: "§6.2",
        quote: "单实例宕机、单实例的记忆丢失都不再直接导致双持锁",
        gloss: "with Redlock, one instance crashing or losing its memory no longer leads to two holders",
        says: Says::Safe,
        protocol: "redlock",
        faults: &[Restart],
        invariant: MutualExclusion,
        knobs: none,
        flags: "",
        cap: None,
    },
    Claim {
        id: "redlock-delayed-restart",
        section: "§6.2",
        quote: "",
        gloss: "the Redlock page's advice: keep a restarted instance down for a TTL",
        says: Says::Silent,
        protocol: "redlock",
        faults: &[Restart],
        invariant: MutualExclusion,
        knobs: |p| p.delayed_restart = true,
        flags: "--delayed-restart",
        cap: None,
    },
    Claim {
        id: "redlock-clock-jump",
        section: "§6.3",
        quote: "如果某个实例的时钟被同步协议向前跳了一大步，它上面的锁会提前过期，多数派相交的前提被打破",
        gloss: "a forward clock jump on one instance breaks Redlock's majority",
        says: Says::Breaks,
        protocol: "redlock",
        faults: &[ClockJump],
        invariant: MutualExclusion,
        knobs: none,
        flags: "",
        cap: None,
    },
    Claim {
        id: "redlock-drift-within",
        section: "§6.3",
        quote: "回应方认为，量级合理的时钟漂移可以通过缩短有效期来吸收",
        gloss: "clock error within the drift allowance is absorbed: the allowance is `int(TTL_ms × 0.01) + 2` = 302 ms; one instance's clock jumps 301 ms forward while the holder's work runs long (one instance: the margin, not the quorum, is under test)",
        says: Says::Safe,
        protocol: "redlock",
        faults: &[ClockJump, Slow],
        invariant: NoLostUpdate,
        knobs: |p| redlock_margin(p, 301 * MS),
        flags: "--instances 1 --jump 301ms",
        cap: None,
    },
    Claim {
        id: "redlock-drift-edge",
        section: "§6.3",
        quote: "回应方认为，量级合理的时钟漂移可以通过缩短有效期来吸收",
        gloss: "the same with a 301.5 ms jump, still within the 302 ms allowance; but the holder's write may come a client step (1 ms) after its last validity check, while its key was set one shortest message leg (0.2 ms) after its clock started and the rival hears its OK one leg after taking the expired key, so by this arithmetic the real margin is 302 − 1 + 2 × 0.2 = 301.4 ms",
        says: Says::Safe,
        protocol: "redlock",
        faults: &[ClockJump, Slow],
        invariant: NoLostUpdate,
        knobs: |p| redlock_margin(p, 301_500),
        flags: "--instances 1 --jump 301.5ms",
        cap: None,
    },
    Claim {
        id: "redlock-drift-beyond",
        section: "§6.3",
        quote: "",
        gloss: "a 303 ms jump, beyond the 302 ms allowance",
        says: Says::Silent,
        protocol: "redlock",
        faults: &[ClockJump, Slow],
        invariant: NoLostUpdate,
        knobs: |p| redlock_margin(p, 303 * MS),
        flags: "--instances 1 --jump 303ms",
        cap: None,
    },
    Claim {
        id: "redlock-drift-ideal",
        section: "§6.3",
        quote: "",
        gloss: "\"safe within the allowance\" holds only in an idealised world: with no latency floor and an instant client step, a jump of exactly the 302 ms allowance is absorbed",
        says: Says::Silent,
        protocol: "redlock",
        faults: &[ClockJump, Slow],
        invariant: NoLostUpdate,
        knobs: |p| {
            redlock_margin(p, 302 * MS);
            p.latency_min = 0;
            p.step = 0;
        },
        flags: "--instances 1 --jump 302ms --latency 0ms..5ms --step 0ms",
        cap: None,
    },
    Claim {
        id: "redlock-drift-ideal-beyond",
        section: "§6.3",
        quote: "",
        gloss: "and there the allowance is exact: 302.5 ms is not absorbed",
        says: Says::Silent,
        protocol: "redlock",
        faults: &[ClockJump, Slow],
        invariant: NoLostUpdate,
        knobs: |p| {
            redlock_margin(p, 302_500);
            p.latency_min = 0;
            p.step = 0;
        },
        flags: "--instances 1 --jump 302.5ms --latency 0ms..5ms --step 0ms",
        cap: None,
    },
    Claim {
        id: "redlock-pause",
        section: "§6.3",
        quote: "客户端从五个实例凑齐多数派、拿到锁，然后停顿六十秒……另一个客户端凑齐了新的多数派——停顿结束后，陈旧客户端照样带着过时认知去写资源",
        gloss: "a pause after acquiring a Redlock majority: another client gets a new majority, and after its pause the stale client still writes the resource (on one instance: a pause outlasts the TTL on every instance alike, and with five the exact-time search does not finish yet)",
        says: Says::Breaks,
        protocol: "redlock",
        faults: &[Pause],
        invariant: NoLostUpdate,
        knobs: one_instance,
        flags: "--instances 1",
        cap: None,
    },
    Claim {
        id: "redlock-pause-late-write",
        section: "§6.3",
        quote: "",
        gloss: "the stale write is a write past the client's own validity: a client that checks its validity before writing is caught only by a pause between the check and the write",
        says: Says::Silent,
        protocol: "redlock",
        faults: &[Pause],
        invariant: WithinValidity,
        knobs: one_instance,
        flags: "--instances 1",
        cap: None,
    },
    Claim {
        id: "redlock-pause-belief",
        section: "§6.3",
        quote: "",
        gloss: "but the two beliefs never overlap: read on its own clock, the paused client's validity ends before its keys do, so it no longer believes it holds when the other client gets its majority",
        says: Says::Silent,
        protocol: "redlock",
        faults: &[Pause],
        invariant: MutualExclusion,
        knobs: one_instance,
        flags: "--instances 1",
        cap: None,
    },
    Claim {
        id: "fencing-write-only",
        section: "§7.2",
        quote: "即使乙还没来得及写入、甲先带着 33 写成功了……旧持有者最多完成一次\u{201c}其实无害\u{201d}的写入",
        gloss: "checking tokens on writes is enough: a stale write that lands first is harmless — tested with a client that reads, computes and writes back (`--resource-op rmw`)",
        says: Says::Safe,
        protocol: "fencing",
        faults: &[Pause],
        invariant: NoLostUpdate,
        knobs: |p| {
            p.resource_check = ResourceCheck::Write;
            p.resource_op = ResourceOp::Rmw;
        },
        flags: "--resource-check write --resource-op rmw",
        cap: None,
    },
    Claim {
        id: "fencing-write-only-in-place",
        section: "§7.2",
        quote: "只要资源端的比较与更新是原子的，最终收敛到新持有者胜出，旧持有者最多完成一次\u{201c}其实无害\u{201d}的写入",
        gloss: "the same claim where the article is right: the resource applies the change itself (`stock = stock - 1`), so the stale write overwrites nothing",
        says: Says::Safe,
        protocol: "fencing",
        faults: &[Pause, Slow, Loss, Delay, Crash],
        invariant: NoLostUpdate,
        knobs: |p| {
            p.resource_check = ResourceCheck::Write;
            p.resource_op = ResourceOp::InPlace;
        },
        flags: "--resource-check write --resource-op in-place",
        cap: Some(2),
    },
    Claim {
        id: "fencing-write-only-oversell",
        section: "§7.2",
        quote: "防线的承诺是\u{201c}过时的结果写不进去\u{201d}，而非\u{201c}过时的计算不会发生\u{201d}",
        gloss: "a result computed from stale data cannot be written — tested on the oversell shape: the client checks \"stock > 0\" itself, then decrements",
        says: Says::Safe,
        protocol: "fencing",
        faults: &[Pause],
        invariant: NoOversell,
        knobs: |p| {
            p.resource_check = ResourceCheck::Write;
            p.resource_op = ResourceOp::CheckThenAct;
        },
        flags: "--resource-check write --resource-op check-then-act",
        cap: None,
    },
    Claim {
        id: "fencing-read-write",
        section: "§7.2",
        quote: "",
        gloss: "fence the reads too",
        says: Says::Silent,
        protocol: "fencing",
        faults: &[Pause, Slow, Loss, Delay, Crash],
        invariant: NoLostUpdate,
        knobs: |p| p.resource_check = ResourceCheck::ReadWrite,
        flags: "--resource-check read-write",
        cap: Some(2),
    },
    Claim {
        id: "fencing-redis",
        section: "§7.3",
        quote: "主从切换丢锁的同时也可能丢计数器进度——计数器回退会发出重复令牌",
        gloss: "a failover can roll a Redis INCR token back and hand the same token out twice",
        says: Says::Breaks,
        protocol: "fencing-redis",
        faults: &[Failover],
        invariant: TokenMonotonic,
        knobs: none,
        flags: "",
        cap: None,
    },
    Claim {
        id: "fencing-redis-wait",
        section: "§7.3",
        quote: "",
        gloss: "with Redisson's WAIT after the token script, a failover alone repeats no token a client received",
        says: Says::Silent,
        protocol: "fencing-redis",
        faults: &[Failover],
        invariant: TokenMonotonic,
        knobs: |p| ClientPreset::Redisson.apply(p, "fencing-redis"),
        flags: "--client redisson",
        cap: None,
    },
    Claim {
        id: "update-where",
        section: "§7.4 1.1",
        quote: "一条语句同时完成\u{201c}比较\u{201d}与\u{201c}更新\u{201d}，原子性由数据库保证",
        gloss: "the conditional UPDATE on a token column (`... WHERE fencing_token < :token`), with the article's in-place `stock = stock - 1`",
        says: Says::Safe,
        protocol: "fencing",
        faults: &[Pause, Slow, Loss, Delay, Crash],
        invariant: NoLostUpdate,
        knobs: |p| {
            p.resource_check = ResourceCheck::UpdateWhere;
            p.token_rule = ResourceCheck::UpdateWhere.default_rule(false);
            p.resource_op = ResourceOp::InPlace;
        },
        flags: "--resource-check update-where --resource-op in-place",
        cap: Some(2),
    },
    Claim {
        id: "txn-for-update",
        section: "§7.4 1.2",
        quote: "在同一个事务里先以加锁读（SELECT ... FOR UPDATE）取出当前令牌高水位并比较……令牌校验与业务写入的原子性由事务隔离保证",
        gloss: "check, then write, in one transaction under a row lock (reads fenced, so the write's check is what is tested)",
        says: Says::Safe,
        protocol: "fencing",
        faults: &[Pause, Slow, Loss, Delay, Crash],
        invariant: NoLostUpdate,
        knobs: |p| {
            p.resource_check = ResourceCheck::TxnForUpdate;
            p.fence_reads = true;
            p.token_rule = ResourceCheck::TxnForUpdate.default_rule(true);
        },
        flags: "--resource-check txn-for-update --fence-reads",
        cap: Some(2),
    },
    Claim {
        id: "txn-read-committed",
        section: "§7.4 1.2",
        quote: "",
        gloss: "the same transaction under read-committed without the row lock: the check and the write are two steps, and the other holder's write lands between them",
        says: Says::Silent,
        protocol: "fencing",
        faults: &[Pause],
        invariant: NoLostUpdate,
        knobs: |p| {
            p.resource_check = ResourceCheck::TxnReadCommitted;
            p.fence_reads = true;
            p.token_rule = ResourceCheck::TxnReadCommitted.default_rule(true);
        },
        flags: "--resource-check txn-read-committed --fence-reads",
        cap: None,
    },
    Claim {
        id: "cas",
        section: "§7.4 2",
        quote: "对象存储、KV 存储普遍提供条件写原语……把令牌放进版本条件里即可",
        gloss: "a store's compare-and-set with the token as the version, on the oversell shape (reads fenced)",
        says: Says::Safe,
        protocol: "fencing",
        faults: &[Pause, Slow, Loss, Delay, Crash],
        invariant: NoOversell,
        knobs: |p| {
            p.resource_check = ResourceCheck::Cas;
            p.fence_reads = true;
            p.token_rule = ResourceCheck::Cas.default_rule(true);
            p.resource_op = ResourceOp::CheckThenAct;
        },
        flags: "--resource-check cas --fence-reads --resource-op check-then-act",
        cap: Some(2),
    },
    Claim {
        id: "service-memory",
        section: "§7.4 3",
        quote: "",
        gloss: "your own service keeping the highest token only in memory (the article says to restore it from storage): a restart forgets it and a stale write gets in",
        says: Says::Silent,
        protocol: "fencing",
        faults: &[Pause, ResourceRestart],
        invariant: NoLostUpdate,
        knobs: |p| {
            p.resource_check = ResourceCheck::Service;
            p.fence_reads = true;
            p.token_rule = ResourceCheck::Service.default_rule(true);
            p.token_store = TokenStore::Memory;
        },
        flags: "--resource-check service --fence-reads --token-store memory",
        cap: None,
    },
    Claim {
        id: "unfenced-writer",
        section: "§7.4 3",
        quote: "要求所有写路径统一过这道校验——绕过校验的旁路写入会让整个机制形同虚设",
        gloss: "a writer that bypasses the fence (a batch job, an old client) loses an update, with reads and writes fenced and no fault at all",
        says: Says::Breaks,
        protocol: "fencing",
        faults: &[],
        invariant: NoLostUpdate,
        knobs: |p| {
            p.resource_check = ResourceCheck::ReadWrite;
            p.unfenced_writers = 1;
        },
        flags: "--resource-check read-write --unfenced-writers 1",
        cap: None,
    },
    Claim {
        id: "idempotent-duplicate",
        section: "§7.5",
        quote: "幂等设计：让\u{201c}同一操作执行两次\u{201d}与\u{201c}执行一次\u{201d}结果相同……能吃掉最常见的重复执行事故",
        gloss: "a unique key on the operation id absorbs a write delivered twice (no lock at all)",
        says: Says::Safe,
        protocol: "no-lock",
        faults: &[Pause, Slow, Crash, Duplicate],
        invariant: NoDuplicateEffect,
        knobs: |p| {
            p.idempotent = true;
            p.resource_op = ResourceOp::InPlace;
        },
        flags: "--idempotent --resource-op in-place",
        cap: None,
    },
    Claim {
        id: "idempotent-interleaving",
        section: "§7.5",
        quote: "幂等不能防止两个不同操作交错",
        gloss: "idempotent writes do not stop two different operations interleaving: a read-modify-write still loses an update",
        says: Says::Breaks,
        protocol: "no-lock",
        faults: &[Duplicate],
        invariant: NoLostUpdate,
        knobs: |p| p.idempotent = true,
        flags: "--idempotent --resource-op rmw",
        cap: None,
    },
    Claim {
        id: "reconcile-detects",
        section: "§7.5",
        quote: "",
        gloss: "reconciliation after the fact (对账) every 10 s, with no lock: the lost update of a read-modify-write is flagged within one period and a step (10.001 s), whatever the schedule",
        says: Says::Silent,
        protocol: "no-lock",
        faults: &[Slow, Crash],
        invariant: DetectedWithin,
        knobs: reconcile_10s,
        flags: "--reconcile 10s",
        cap: None,
    },
    Claim {
        id: "reconcile-does-not-prevent",
        section: "§7.5",
        quote: "",
        gloss: "but reconciliation only detects: the same update is lost all the same",
        says: Says::Silent,
        protocol: "no-lock",
        faults: &[],
        invariant: NoLostUpdate,
        knobs: reconcile_10s,
        flags: "--reconcile 10s",
        cap: None,
    },
    Claim {
        id: "reconcile-paused",
        section: "§7.5",
        quote: "",
        gloss: "and a reconciler is a process too: a pause of its own leaves the damage unflagged past the bound",
        says: Says::Silent,
        protocol: "no-lock",
        faults: &[Pause],
        invariant: DetectedWithin,
        knobs: reconcile_10s,
        flags: "--reconcile 10s",
        cap: None,
    },
    Claim {
        id: "zookeeper-sequence-token",
        section: "§8.1",
        quote: "现成的令牌（节点序号单调递增，天然是 Fencing Token）",
        gloss: "the node's sequence number as the token: it is the parent's cversion, and starts over when ZooKeeper reaps the empty container parent",
        says: Says::Safe,
        protocol: "zookeeper",
        faults: &[Pause],
        invariant: TokenMonotonic,
        knobs: |p| p.token = TokenSource::Sequence,
        flags: "--token sequence",
        cap: None,
    },
    Claim {
        id: "zookeeper-pause",
        section: "§8.3",
        quote: "会话与租约同样会过期……临时节点照样删除、租约照样到期、锁照样易主",
        gloss: "ZooKeeper sessions expire under a pause too",
        says: Says::Breaks,
        protocol: "zookeeper",
        faults: &[Pause],
        invariant: MutualExclusion,
        knobs: none,
        flags: "",
        cap: None,
    },
    Claim {
        id: "etcd-pause",
        section: "§8.3",
        quote: "客户端进程整体停顿，会话心跳与租约保活一样会停",
        gloss: "and so do etcd leases",
        says: Says::Breaks,
        protocol: "etcd",
        faults: &[Pause],
        invariant: MutualExclusion,
        knobs: none,
        flags: "",
        cap: None,
    },
    Claim {
        id: "etcd-heartbeats",
        section: "§8.3",
        quote: "",
        gloss: "no pause needed: a slow holder whose keepalives are delayed and lost loses its lease",
        says: Says::Silent,
        protocol: "etcd",
        faults: &[Slow, Loss, Delay],
        invariant: MutualExclusion,
        knobs: none,
        flags: "",
        cap: None,
    },
    Claim {
        id: "session-thread-crash",
        section: "§8.2",
        quote: "客户端失联则租约到期、键自动删除——同样是内置的看门狗",
        gloss: "when the client process dies; a business thread that dies alone leaves the session heartbeat running, and its key stays",
        says: Says::Silent,
        protocol: "etcd",
        faults: &[Crash],
        invariant: NoOrphanLock,
        knobs: |p| p.crash = CrashKind::Thread,
        flags: "--crash thread",
        cap: None,
    },
    Claim {
        id: "no-lock-conditional",
        section: "§9.3",
        quote: "很多\u{201c}分布式锁需求\u{201d}其实是一条带WHERE条件的UPDATE就能解决的事",
        gloss: "no lock at all: the resource's own `UPDATE ... SET stock = stock - 1 WHERE stock > 0` never oversells",
        says: Says::Safe,
        protocol: "no-lock",
        faults: &[Pause, Slow, Crash],
        invariant: NoOversell,
        knobs: |p| p.resource_op = ResourceOp::Conditional,
        flags: "--resource-op conditional",
        cap: None,
    },
    Claim {
        id: "no-lock-check-then-act",
        section: "§9.3",
        quote: "",
        gloss: "no lock, and the client checks \"stock > 0\" itself: it oversells with no fault at all",
        says: Says::Silent,
        protocol: "no-lock",
        faults: &[],
        invariant: NoOversell,
        knobs: |p| p.resource_op = ResourceOp::CheckThenAct,
        flags: "--resource-op check-then-act",
        cap: None,
    },
    Claim {
        id: "queue-zombie",
        section: "§9.3",
        quote: "由单一消费者串行处理（单写者原则），互斥由架构保证而不是由锁保证，没有过期、没有误删、没有陈旧客户端",
        gloss: "a single-writer queue has no stale clients: but a consumer paused past its heartbeats is evicted from the group, its partition rebalanced to another consumer, and it writes as a zombie",
        says: Says::Safe,
        protocol: "queue",
        faults: &[Pause],
        invariant: NoLostUpdate,
        knobs: none,
        flags: "",
        cap: None,
    },
    Claim {
        id: "queue-epoch-fence",
        section: "§9.3",
        quote: "",
        gloss: "the same queue with an epoch fence at the sink (the generation checked on reads and writes): the zombie is turned away",
        says: Says::Silent,
        protocol: "queue",
        faults: &[Pause, Slow, Loss, Delay, Crash],
        invariant: NoLostUpdate,
        knobs: |p| p.resource_check = ResourceCheck::ReadWrite,
        flags: "--resource-check read-write",
        cap: Some(2),
    },
];

/// The fault kinds of the article's own scenarios for `protocol`'s
/// `invariant` (claims it makes, breaks or safe, about the protocol at its
/// defaults), with the sections they come from: what a room-friendly
/// `check PROTOCOL --invariants NAME` explores when no fault is named.
/// `None` when the article tells no such story.
pub fn scenario_faults(
    protocol: &str,
    invariant: Invariant,
) -> Option<(Vec<FaultKind>, Vec<&'static str>)> {
    let mut kinds: Vec<FaultKind> = Vec::new();
    let mut sections: Vec<&'static str> = Vec::new();
    for c in CLAIMS.iter().filter(|c| {
        c.protocol == protocol
            && c.invariant == invariant
            && c.flags.is_empty()
            && c.says != Says::Silent
            && !c.faults.is_empty()
    }) {
        kinds.extend_from_slice(c.faults);
        if !sections.contains(&c.section) {
            sections.push(c.section);
        }
    }
    kinds.sort();
    kinds.dedup();
    (!kinds.is_empty()).then_some((kinds, sections))
}

fn model(c: &Claim) -> Result<LockModel, Failure> {
    let proto = protocols::by_name(c.protocol).ok_or_else(|| {
        Failure::input(format!(
            "the article page names an unknown protocol {}",
            c.protocol
        ))
    })?;
    let mut p = Params::defaults(proto);
    p.faults = Budgets::none();
    for k in c.faults {
        p.faults.set(*k, 1);
    }
    p.max_faults = c.cap;
    (c.knobs)(&mut p);
    LockModel::new(proto, p).map_err(|e| Failure::input(e.0))
}

/// The `locklab check` command that reproduces a row.
fn command(c: &Claim) -> String {
    let faults: Vec<&str> = c.faults.iter().map(|k| k.name()).collect();
    let cap = c.cap.map_or("all".to_string(), |n| n.to_string());
    let faults = if faults.is_empty() {
        "none".to_string()
    } else {
        faults.join(",")
    };
    let mut s = format!(
        "locklab check {} --faults {faults} --max-faults {cap} --invariants {}",
        c.protocol,
        c.invariant.name()
    );
    if !c.flags.is_empty() {
        s.push(' ');
        s.push_str(c.flags);
    }
    s
}

/// Each row's search stops after this many states (BFS stops at the same
/// state whatever the thread count, so the page stays deterministic). A
/// row the bound stops is shown undecided, never as agreeing: the exact-time
/// search of Redlock with five instances, and of fencing and the queue under
/// several faults, does not finish yet (docs/model.md, What the search does not finish yet).
const ROW_STATES: u64 = crate::docs::GALLERY_STATES;

/// The article page and the files it links to, by path in the gallery.
pub fn page(threads: usize) -> Result<BTreeMap<String, String>, Failure> {
    let mut files = BTreeMap::new();
    let mut out = String::new();
    let _ = writeln!(out, "# The article's claims, checked");
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Each row quotes a claim the article makes about a lock design under a fault, states what it asserts, and runs the check that tests it (with exactly the fault kinds shown, each at most once, and as many of them together as `--max-faults` says). The verdicts are computed by the search when this page is generated; a broken row links to its shortest counterexample, replayed through the model. Rows marked *not in the article* are what locklab adds."
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Time is exact (zones over real-valued clocks, as in UPPAAL), and every row runs with the defaults unless its command says otherwise: a 30 s TTL, work of 200 ms..2 s in the critical section, 0.2..5 ms per message, a client step of at most 1 ms, a 1 s request timeout. Normal timing is a window, not a fault: `slow` is work beyond 2 s, `delay` a message beyond 5 ms, `pause` a process frozen for as long as the search likes. Each search stops after {} states; a row it stops is shown undecided.",
        crate::report::thousands(ROW_STATES)
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "| § | the article says | check | locklab finds | |");
    let _ = writeln!(out, "|---|---|---|---|---|");
    let mut wrong = Vec::new();
    for c in CLAIMS {
        let m = model(c)?;
        let opts = SearchOptions {
            subsume_budgets: true,
            invariants: vec![c.invariant],
            max_states: Some(ROW_STATES),
            max_depth: None,
            symmetry: true,
            threads,
            spill: None,
        };
        let r: CheckReport = crate::check::report(&m, &opts, false, None)?;
        let v = r
            .verdicts
            .iter()
            .find(|v| v.invariant == c.invariant.name())
            .ok_or_else(|| Failure::input(format!("no verdict for {}", c.id)))?;
        let found = match v.status.as_str() {
            "violated" => {
                let t = &r.traces[0];
                files.insert(format!("traces/article-{}.json", c.id), t.to_json());
                files.insert(format!("svg/article-{}.svg", c.id), svg::render(t));
                format!(
                    "✗ **broken** in {} steps ([picture](svg/article-{}.svg), [trace](traces/article-{}.json)): {}",
                    v.steps.unwrap_or(0),
                    c.id,
                    c.id,
                    v.note
                )
            }
            "holds" => format!("✓ holds ({})", v.note),
            "vacuous" => format!("∅ vacuous: {}", v.note),
            other => format!("? {other}: {}", v.note),
        };
        // Only a finished search can agree or disagree: an incomplete one
        // (none is bounded here, but a change could make one) decides nothing.
        let agreement = match (c.says, v.status.as_str()) {
            (Says::Silent, _) => "adds".to_string(),
            (Says::Breaks, "violated") | (Says::Safe, "holds") => "agrees".to_string(),
            (Says::Breaks, "holds") | (Says::Safe, "violated") => {
                wrong.push(c);
                "**the article is wrong here**".to_string()
            }
            (_, "vacuous") => "undecided: the property is never put to the test".to_string(),
            _ => "undecided: the search did not finish".to_string(),
        };
        let mut command = command(c);
        if !matches!(v.status.as_str(), "violated" | "holds" | "vacuous") {
            let _ = write!(command, " --max-states {ROW_STATES}");
        }
        let said = if c.quote.is_empty() {
            format!("*not in the article:* {}", c.gloss)
        } else {
            format!("「{}」 — {}", c.quote, c.gloss)
        };
        let _ = writeln!(
            out,
            "| {} | {said} | `{command}` | {found} | {agreement} |",
            c.section,
        );
    }
    let _ = writeln!(out);
    if !wrong.is_empty() {
        let _ = writeln!(out, "## Where the checker disagrees with the article");
        let _ = writeln!(out);
        for c in wrong {
            let _ = writeln!(
                out,
                "- {} 「{}」 ({}): the check `{}` finds the opposite; see its counterexample above.",
                c.section,
                c.quote,
                c.gloss,
                command(c)
            );
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(
        out,
        "Generated with the gallery by `cargo run --release -- docs --out docs/gallery`."
    );
    files.insert("article.md".into(), out);
    Ok(files)
}
