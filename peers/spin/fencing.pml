/* fencing.pml -- locklab peer model (Spin 6.5)
 *
 * Protocol: a consensus-backed lock service (ZooKeeper/etcd semantics:
 *   linearizable, loses nothing, lease judged on its monotonic clock) grants
 *   a lease of TTL ticks together with a fencing token from a monotonic
 *   counter. Client: acquire (retry after R ticks if busy), read the counter,
 *   work W ticks, write counter+1, release (the service deletes the lease only
 *   if the caller still owns it). No keep-alive: TTL > W, so fault-free runs
 *   never lose the lease.
 * Resource: keeps counter and max_seen (highest token seen). CHECK selects
 *   where it checks the token (locklab docs/model.md, the resource and its token checks):
 *     0 none, 1 write (the article's form), 2 read-write (fenced reads).
 *   Rule: accept iff tok >= max_seen (Kleppmann), then max_seen := tok.
 *   A rejected read or write aborts the critical section (client releases).
 * Faults: pause (PAUSE_B, P ticks > TTL), slow (SLOW_B, default 0).
 * Invariants (-DINV mask): 1 mutual_exclusion (belief), 4 no_lost_update
 *   (resource). Expected: 1 breaks under pause for every CHECK; 4 breaks
 *   for CHECK 0 and 1 (pitfall P1) and HOLDS for CHECK 2.
 */
#ifndef NC
#define NC 2
#endif
#ifndef ACQ
#define ACQ 1
#endif
#ifndef TTL
#define TTL 4           /* lease TTL, ticks */
#endif
#ifndef W
#define W 1
#endif
#ifndef WSLOW
#define WSLOW (TTL+1)
#endif
#ifndef P
#define P (TTL+1)
#endif
#ifndef R
#define R 1
#endif
#ifndef CHECK
#define CHECK 2
#endif
#ifndef PAUSE_B
#define PAUSE_B 1
#endif
#ifndef SLOW_B
#define SLOW_B 0
#endif

#include "common.h"

#define IDLE  0   /* due: send ACQUIRE                        */
#define WACQ  1   /* waiting for the grant                    */
#define RETRY 2   /* waiting R ticks after "busy"             */
#define READ  3   /* in CS, due: read (fenced if CHECK == 2)  */
#define WORK  4   /* in CS, working; write due when tmr == 0  */
#define REL   5   /* due: send RELEASE                        */
#define WREL  6   /* waiting for the release reply            */
#define DONE  7

#define M_NONE  0
#define M_ACQ   1  /* request acquire                         */
#define M_REL   2  /* request release (delete lease if mine)  */
#define M_GRANT 3  /* reply granted, token in tok[c]          */
#define M_BUSY  4  /* reply held by another client            */
#define M_RELR  5  /* reply released                          */

byte holder;                /* lease: 0 = free, c+1 = client c         */
byte lrem;                  /* remaining lease ticks                   */
byte tokctr;                /* last token issued                       */
byte counter, writes, maxseen;  /* resource                            */
byte pc[NC], tmr[NC], val[NC], msg[NC], paused[NC], acq[NC], tok[NC];
byte pause_b = PAUSE_B, slow_b = SLOW_B;

#define INCS(c) (pc[c] == READ || pc[c] == WORK)
#define REQ(c)  (msg[c] == M_ACQ || msg[c] == M_REL)
#define CDUE(c) (REQ(c) || (LIVE(c) && (msg[c] >= M_GRANT || pc[c] == IDLE || \
                 pc[c] == READ || pc[c] == REL || \
                 ((pc[c] == RETRY || pc[c] == WORK) && tmr[c] == 0))))
#define DUE ANY(CDUE)

active [NC] proctype client()
{
  do
  /* start (or retry): send ACQUIRE */
  :: d_step { LIVE(_pid) && (pc[_pid] == IDLE || (pc[_pid] == RETRY && tmr[_pid] == 0)) ->
       msg[_pid] = M_ACQ; tmr[_pid] = 0; pc[_pid] = WACQ }
  /* lock service executes ACQUIRE: grant lease + next token, or busy */
  :: d_step { msg[_pid] == M_ACQ ->
       if
       :: holder == 0 -> holder = _pid + 1; lrem = TTL; tokctr++; tok[_pid] = tokctr; msg[_pid] = M_GRANT
       :: else -> msg[_pid] = M_BUSY
       fi }
  /* grant: the client believes it holds the lock, enters the CS */
  :: d_step { LIVE(_pid) && msg[_pid] == M_GRANT ->
       msg[_pid] = M_NONE; pc[_pid] = READ;
#if (INV & 1)
       assert(SUM(INCS) <= 1)     /* mutual_exclusion (belief) */
#endif
     }
  /* busy: retry after R ticks */
  :: d_step { LIVE(_pid) && msg[_pid] == M_BUSY ->
       msg[_pid] = M_NONE; tmr[_pid] = R; pc[_pid] = RETRY }
  /* read the resource (fenced read: rejected if tok < max_seen) */
  :: d_step { LIVE(_pid) && pc[_pid] == READ ->
#if CHECK == 2
       if
       :: tok[_pid] >= maxseen -> maxseen = tok[_pid]; val[_pid] = counter; tmr[_pid] = W; pc[_pid] = WORK
       :: else -> pc[_pid] = REL                              /* rejected: abort */
       fi
#else
       val[_pid] = counter; tmr[_pid] = W; pc[_pid] = WORK
#endif
     }
  /* same, with the slow-work fault */
  :: d_step { LIVE(_pid) && pc[_pid] == READ && slow_b > 0 ->
       slow_b--;
#if CHECK == 2
       if
       :: tok[_pid] >= maxseen -> maxseen = tok[_pid]; val[_pid] = counter; tmr[_pid] = WSLOW; pc[_pid] = WORK
       :: else -> pc[_pid] = REL
       fi
#else
       val[_pid] = counter; tmr[_pid] = WSLOW; pc[_pid] = WORK
#endif
     }
  /* work done: write read+1 with the token (fenced write if CHECK >= 1) */
  :: d_step { LIVE(_pid) && pc[_pid] == WORK && tmr[_pid] == 0 ->
#if CHECK >= 1
       if
       :: tok[_pid] >= maxseen -> maxseen = tok[_pid]; counter = val[_pid] + 1; writes++
       :: else -> skip                                        /* rejected */
       fi;
#else
       counter = val[_pid] + 1; writes++;
#endif
       val[_pid] = 0; pc[_pid] = REL;
#if (INV & 4)
       assert(counter == writes)  /* no_lost_update */
#endif
     }
  /* release: send RELEASE */
  :: d_step { LIVE(_pid) && pc[_pid] == REL -> msg[_pid] = M_REL; pc[_pid] = WREL }
  /* lock service deletes the lease only if the caller owns it */
  :: d_step { msg[_pid] == M_REL ->
       if :: holder == _pid + 1 -> holder = 0; lrem = 0 :: else -> skip fi;
       msg[_pid] = M_RELR }
  /* release reply: done (or next acquisition) */
  :: d_step { LIVE(_pid) && msg[_pid] == M_RELR ->
       msg[_pid] = M_NONE; tok[_pid] = 0; acq[_pid]++;
       if :: acq[_pid] < ACQ -> pc[_pid] = IDLE :: else -> pc[_pid] = DONE fi }
  /* fault: pause this client for P ticks */
  :: d_step { pause_b > 0 && paused[_pid] == 0 && pc[_pid] != DONE ->
       pause_b--; paused[_pid] = P }
  od
}

/* Tick: true time advances by one; only when nothing is due (urgency) */
#define TICKC(c) \
  if :: tmr[c] > 0 -> tmr[c]-- :: else -> skip fi; \
  if :: paused[c] > 0 -> paused[c]-- :: else -> skip fi

active proctype tick()
{
  do
  :: d_step { !DUE ->
       if
       :: holder != 0 && lrem == 0 -> holder = 0         /* lease expired */
       :: holder != 0 && lrem > 0 -> lrem--
       :: else -> skip
       fi;
       FORC(TICKC)
     }
  od
}
