/* naive-del.pml -- locklab peer model (Spin 6.5)
 *
 * Protocol : SET k <client-id> NX PX TTL on ONE Redis; critical section =
 *            read counter, work W ticks, write counter+1; release = plain DEL.
 * Faults   : pause (a client freezes P ticks, P > TTL), slow (the work of one
 *            critical section takes WSLOW > TTL ticks). Budgets PAUSE_B, SLOW_B.
 * Invariants (select with -DINV=mask, see common.h):
 *   1 mutual_exclusion : at most one client believes it holds the lock and is
 *                        in its critical section (a paused one included)
 *   2 ownership        : a DEL never removes an entry whose value is another
 *                        client's
 *   4 no_lost_update   : resource counter == number of accepted writes
 *
 * World and time (locklab before dense time: whole ticks): integer ticks; every timer is
 * RELATIVE (remaining ticks), so no time horizon is needed. A key set with
 * PX TTL is still there when now == expire_at: it stays visible for TTL
 * ticks and is gone on the (TTL+1)-th Tick. Urgency: Tick is enabled only
 * when no live, unpaused participant has a step due (macro DUE).
 * Clock offsets are constant here (no clock faults), so with relative timers
 * they cancel out and are not stored.
 */
#ifndef NC
#define NC 2            /* clients */
#endif
#ifndef ACQ
#define ACQ 1           /* successful acquisitions per client */
#endif
#ifndef TTL
#define TTL 4           /* lock TTL, ticks */
#endif
#ifndef W
#define W 1             /* normal work, ticks */
#endif
#ifndef WSLOW
#define WSLOW (TTL+1)   /* slow work (fault), ticks */
#endif
#ifndef P
#define P (TTL+1)       /* pause length (fault), ticks */
#endif
#ifndef R
#define R 1             /* retry delay after a Nil reply, ticks */
#endif
#ifndef PAUSE_B
#define PAUSE_B 1
#endif
#ifndef SLOW_B
#define SLOW_B 1
#endif

#include "common.h"

/* client program counter */
#define IDLE  0   /* due: send SET NX PX                      */
#define WSET  1   /* waiting for the SET reply               */
#define RETRY 2   /* waiting R ticks after Nil               */
#define READ  3   /* in CS, due: read the counter            */
#define WORK  4   /* in CS, working; write due when tmr == 0 */
#define REL   5   /* due: send DEL                           */
#define WDEL  6   /* waiting for the DEL reply               */
#define DONE  7

/* the (single) message in flight between client c and Redis */
#define M_NONE 0
#define M_SET  1  /* request  SET k c NX PX TTL */
#define M_DEL  2  /* request  DEL k             */
#define M_OK   3  /* reply    +OK               */
#define M_NIL  4  /* reply    nil               */
#define M_DELR 5  /* reply    :0 / :1           */

byte owner;                 /* Redis key: 0 = absent, c+1 = value of client c */
byte rem;                   /* remaining ticks of the key (0 when absent)     */
byte counter, writes;       /* resource                                       */
byte pc[NC], tmr[NC], val[NC], msg[NC], paused[NC], acq[NC];
byte pause_b = PAUSE_B, slow_b = SLOW_B;

#define INCS(c) (pc[c] == READ || pc[c] == WORK)
#define REQ(c)  (msg[c] == M_SET || msg[c] == M_DEL)
#define CDUE(c) (REQ(c) || (LIVE(c) && (msg[c] >= M_OK || pc[c] == IDLE || \
                 pc[c] == READ || pc[c] == REL || \
                 ((pc[c] == RETRY || pc[c] == WORK) && tmr[c] == 0))))
#define DUE ANY(CDUE)

active [NC] proctype client()
{
  do
  /* start (or retry after R ticks): send SET k me NX PX TTL */
  :: d_step { LIVE(_pid) && (pc[_pid] == IDLE || (pc[_pid] == RETRY && tmr[_pid] == 0)) ->
       msg[_pid] = M_SET; tmr[_pid] = 0; pc[_pid] = WSET }
  /* Redis executes SET NX PX (an expired key counts as absent) */
  :: d_step { msg[_pid] == M_SET ->
       if
       :: owner == 0 -> owner = _pid + 1; rem = TTL; msg[_pid] = M_OK
       :: else -> msg[_pid] = M_NIL
       fi }
  /* +OK: the client now believes it holds the lock and enters the CS */
  :: d_step { LIVE(_pid) && msg[_pid] == M_OK ->
       msg[_pid] = M_NONE; pc[_pid] = READ;
#if (INV & 1)
       assert(SUM(INCS) <= 1)     /* mutual_exclusion */
#endif
     }
  /* nil: retry after R ticks */
  :: d_step { LIVE(_pid) && msg[_pid] == M_NIL ->
       msg[_pid] = M_NONE; tmr[_pid] = R; pc[_pid] = RETRY }
  /* read the resource, start working (normal) */
  :: d_step { LIVE(_pid) && pc[_pid] == READ ->
       val[_pid] = counter; tmr[_pid] = W; pc[_pid] = WORK }
  /* read the resource, start working (fault: slow work) */
  :: d_step { LIVE(_pid) && pc[_pid] == READ && slow_b > 0 ->
       slow_b--; val[_pid] = counter; tmr[_pid] = WSLOW; pc[_pid] = WORK }
  /* work done: write read+1 (the resource accepts every write) */
  :: d_step { LIVE(_pid) && pc[_pid] == WORK && tmr[_pid] == 0 ->
       counter = val[_pid] + 1; writes++; val[_pid] = 0; pc[_pid] = REL;
#if (INV & 4)
       assert(counter == writes)  /* no_lost_update */
#endif
     }
  /* release: send DEL k */
  :: d_step { LIVE(_pid) && pc[_pid] == REL -> msg[_pid] = M_DEL; pc[_pid] = WDEL }
  /* Redis executes DEL (removes whatever value is there) */
  :: d_step { msg[_pid] == M_DEL ->
#if (INV & 2)
       assert(owner == 0 || owner == _pid + 1);   /* ownership */
#endif
       owner = 0; rem = 0; msg[_pid] = M_DELR }
  /* DEL reply: done (or next acquisition) */
  :: d_step { LIVE(_pid) && msg[_pid] == M_DELR ->
       msg[_pid] = M_NONE; acq[_pid]++;
       if :: acq[_pid] < ACQ -> pc[_pid] = IDLE :: else -> pc[_pid] = DONE fi }
  /* fault: pause this client for P ticks (business thread frozen) */
  :: d_step { pause_b > 0 && paused[_pid] == 0 && pc[_pid] != DONE ->
       pause_b--; paused[_pid] = P }
  od
}

/* Tick: true time advances by one; only when nothing is due (urgency).
 * Client timers are deadlines on the client's own clock, which keeps running
 * while the client is paused. */
#define TICKC(c) \
  if :: tmr[c] > 0 -> tmr[c]-- :: else -> skip fi; \
  if :: paused[c] > 0 -> paused[c]-- :: else -> skip fi

active proctype tick()
{
  do
  :: d_step { !DUE ->
       if
       :: owner != 0 && rem == 0 -> owner = 0     /* now > expire_at: expired */
       :: owner != 0 && rem > 0  -> rem--
       :: else -> skip
       fi;
       FORC(TICKC)
     }
  od
}
