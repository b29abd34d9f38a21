//! The simulator's options: realistic timings with units (`30s`, `200ms`,
//! `0.2ms`, parsed exactly by `locklab_models::units`), fault rates, and the
//! protocol knobs, with their defaults and validation, and their
//! translation into the model's parameters (durations in µs).
//!
//! Every option has one name (its CLI name), used to parse it, to sweep it
//! and to print the command that reruns a seed: the table [`OPTIONS`] is the
//! only place that knows how to read and write each one.

use locklab_models::faults::{FaultKind, UNLIMITED};
use locklab_models::params::{MAX_DURATION, Network, PARAMS};
use locklab_models::params::{ResourceCheck, ResourceOp, TokenRule, TokenStore};
use locklab_models::presets::ClientPreset;
use locklab_models::protocols::{self, Protocol};
use locklab_models::time::{MS, Micros, SEC};
use locklab_models::units;
use locklab_models::{Budgets, LockModel, Params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How the simulator chooses among steps due at the same instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Scheduler {
    /// Uniformly at random among every step due at the earliest time.
    Random,
    /// Always the first: the model's steps in its fixed order.
    Ordered,
}

impl Scheduler {
    pub fn name(self) -> &'static str {
        match self {
            Scheduler::Random => "random",
            Scheduler::Ordered => "ordered",
        }
    }
}

/// Every option of a simulation. Durations are µs (given with units);
/// rates are events per second of simulated time, per target (client,
/// server or node).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct SimConfig {
    pub protocol: String,
    /// Clients competing for the lock.
    pub clients: u8,
    /// Acquisitions each client makes in one run.
    pub acquisitions: u8,
    /// Lock TTL (`PX`; for the watchdog, Redisson's `lockWatchdogTimeout`).
    pub ttl: Micros,
    /// Watchdog renewal period as a fraction of the TTL (Redisson: 1/3).
    pub renew_ratio: f64,
    /// Client request timeout.
    pub timeout: Micros,
    /// Mean think time before each acquisition (exponential).
    pub think: Micros,
    /// Retry backoff after a failed acquisition, uniform in `min..=max`.
    pub backoff_min: Micros,
    pub backoff_max: Micros,
    /// Critical-section work: always inside `work_min..=work_max` (the
    /// model's window) unless the `slow` fault is on; drawn log-normal by
    /// its median and 99th percentile.
    pub work_min: Micros,
    pub work_max: Micros,
    pub work_p50: Micros,
    pub work_p99: Micros,
    /// One-way network latency (and a replica's apply lag): inside
    /// `latency_min..=latency_max` unless the `delay` fault is on;
    /// log-normal.
    pub latency_min: Micros,
    pub latency_max: Micros,
    pub latency_p50: Micros,
    pub latency_p99: Micros,
    /// A client's reaction to a reply, a timer or the end of its work:
    /// uniform in `0..=step`.
    pub step: Micros,
    /// Probability that a message is lost.
    pub loss: f64,
    /// Fault `delay`: a latency drawn past `latency_max` holds the message
    /// back that long (a `Delay` step) instead of being cut to the maximum.
    pub delay: bool,
    /// Fault `slow`: a work time drawn past `work_max` runs that long (a
    /// `Slow` step) instead of being cut to the maximum.
    pub slow: bool,
    /// Process pauses (GC, VM freeze) per second per client, and their
    /// duration, log-normal.
    pub pause_rate: f64,
    pub pause_p50: Micros,
    pub pause_p99: Micros,
    /// Size of a wall-clock jump (forward or backward, even odds).
    pub jump: Micros,
    /// Clock jumps per second per node (each server; each client too when
    /// the protocol reads client clocks).
    pub jump_rate: f64,
    /// Client crashes per second per client.
    pub crash_rate: f64,
    /// Redis restarts (data lost) per second per server.
    pub restart_rate: f64,
    /// Failovers per second per primary.
    pub failover_rate: f64,
    /// Watchdog: stop renewing after this long of renewals.
    pub renew_cap: Option<Micros>,
    /// Watchdog bug: renew with a plain `PEXPIRE`.
    pub renew_unchecked: bool,
    /// Watchdog bug: the renewal is never cancelled.
    pub no_cancel: bool,
    /// Redlock: number of instances (default 5).
    pub instances: Option<u8>,
    /// Redlock: votes needed (default N/2+1).
    pub quorum: Option<u8>,
    /// Redlock: clock-drift factor in parts per million (default 10000:
    /// 1% of the TTL, plus 2 ms).
    pub drift_factor_ppm: Option<u32>,
    /// Clock-rate drift bound in parts per million (default 0): the timers
    /// the model windows stretch by it; timing questions are answered as
    /// an exact clock reads them.
    pub clock_drift_ppm: Option<u32>,
    /// A restarted Redis stays unavailable for a TTL.
    pub delayed_restart: bool,
    /// Where the resource checks fencing tokens (default: the protocol's).
    pub resource_check: Option<ResourceCheck>,
    /// How the resource compares tokens (default: `ge`).
    pub token_rule: Option<TokenRule>,
    /// etcd 3.4: no re-check of the own key after waiting.
    pub no_recheck: bool,
    /// What the critical section does to the resource (default: rmw).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_op: Option<ResourceOp>,
    /// Units in stock at the start (check-then-act, conditional; default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stock: Option<u8>,
    /// Reads carry the token and are checked too.
    #[serde(default, skip_serializing_if = "is_false")]
    pub fence_reads: bool,
    /// Where the resource keeps its highest token (default: durable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_store: Option<TokenStore>,
    /// Writers that bypass the lock and the fence (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfenced_writers: Option<u8>,
    /// Idempotent writes: the resource absorbs a write it already applied.
    #[serde(default, skip_serializing_if = "is_false")]
    pub idempotent: bool,
    /// Resource restarts per second (a highest token kept in memory is
    /// lost; needs `--token-store memory`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resource_restart_rate: f64,
    /// Duplicate deliveries per second per client (a write that landed is
    /// delivered again, while its client can still retry it).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub duplicate_rate: f64,
    /// Reconciliation every this long (§7.5 对账; default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconcile: Option<Micros>,
    /// The bound `detected_within` holds the reconciler to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detect_within: Option<Micros>,
    /// How the network orders messages (default: fifo, one TCP connection).
    pub network: Network,
    /// The client library preset (`check --client`), by name; none: the
    /// protocol's own behaviour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The transport's re-sends of a request that timed out
    /// (`check --transport-retries`); none: the preset's, else 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport_retries: Option<u8>,
    /// A run stops at this simulated time (a client starved by a lock that
    /// never expires would otherwise retry forever).
    pub horizon: Micros,
    pub scheduler: Scheduler,
}

impl SimConfig {
    /// The defaults (sources in `docs/simulation.md`): the checker's
    /// windows (`Params::defaults`), with distributions inside them.
    pub fn defaults(protocol: &str) -> SimConfig {
        SimConfig {
            protocol: protocol.to_string(),
            clients: 2,
            acquisitions: 4,
            ttl: 30 * SEC,
            renew_ratio: 1.0 / 3.0,
            timeout: SEC,
            think: 100 * MS,
            backoff_min: 50 * MS,
            backoff_max: 250 * MS,
            work_min: 200 * MS,
            work_max: 2 * SEC,
            work_p50: 300 * MS,
            work_p99: 1_500 * MS,
            latency_min: 200,
            latency_max: 5 * MS,
            latency_p50: 500,
            latency_p99: 2 * MS,
            step: MS,
            loss: 1e-4,
            delay: false,
            slow: false,
            pause_rate: 1.0,
            pause_p50: 20 * MS,
            pause_p99: 2 * SEC,
            jump: 10 * SEC,
            jump_rate: 1e-4,
            crash_rate: 1e-4,
            restart_rate: 1e-5,
            failover_rate: 1e-5,
            renew_cap: None,
            renew_unchecked: false,
            no_cancel: false,
            instances: None,
            quorum: None,
            drift_factor_ppm: None,
            clock_drift_ppm: None,
            delayed_restart: false,
            resource_check: None,
            token_rule: None,
            no_recheck: false,
            resource_op: None,
            stock: None,
            fence_reads: false,
            token_store: None,
            unfenced_writers: None,
            idempotent: false,
            resource_restart_rate: 0.0,
            duplicate_rate: 0.0,
            reconcile: None,
            detect_within: None,
            network: Network::Fifo,
            client: None,
            transport_retries: None,
            horizon: 600 * SEC,
            scheduler: Scheduler::Random,
        }
    }

    pub fn proto(&self) -> Result<&'static dyn Protocol, String> {
        protocols::by_name(&self.protocol).ok_or_else(|| {
            format!(
                "unknown protocol '{}'; known protocols: {}",
                self.protocol,
                protocols::names().join(", ")
            )
        })
    }

    /// The fault kinds driven by a rate, with their rate.
    pub fn rates(&self) -> [(FaultKind, f64); 6] {
        [
            (FaultKind::Pause, self.pause_rate),
            (FaultKind::Loss, self.loss),
            (FaultKind::ClockJump, self.jump_rate),
            (FaultKind::Crash, self.crash_rate),
            (FaultKind::Restart, self.restart_rate),
            (FaultKind::Failover, self.failover_rate),
        ]
    }

    /// Whether fault kind `k` strikes in this simulation: it is switched on
    /// (a rate above 0, or the `delay`/`slow` flag) and the protocol's lock
    /// service can suffer it.
    pub fn fault_on(&self, proto: &dyn Protocol, k: FaultKind) -> bool {
        let on = match k {
            FaultKind::Delay => self.delay,
            FaultKind::Slow => self.slow,
            _ => self.rates().iter().any(|(x, r)| *x == k && *r > 0.0),
        };
        on && proto.faults().contains(&k)
    }

    /// Checks every value; the message names the option and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        self.proto()?;
        for (name, v) in [
            ("loss", self.loss),
            ("pause-rate", self.pause_rate),
            ("jump-rate", self.jump_rate),
            ("crash-rate", self.crash_rate),
            ("restart-rate", self.restart_rate),
            ("failover-rate", self.failover_rate),
            ("resource-restart-rate", self.resource_restart_rate),
            ("duplicate-rate", self.duplicate_rate),
        ] {
            if !v.is_finite() || v < 0.0 {
                return Err(format!(
                    "--{name} {v} is {}: it must be a finite number, 0 or more",
                    if v < 0.0 { "negative" } else { "not finite" }
                ));
            }
        }
        if self.loss > 1.0 {
            return Err(format!(
                "--loss {} is a probability: allowed 0..=1",
                self.loss
            ));
        }
        let dur = |name: &str, v: Micros, lo: Micros| -> Result<(), String> {
            if v < lo || v > MAX_DURATION {
                Err(format!(
                    "--{name} {} is out of range: allowed {} ..= {}",
                    units::show(v),
                    units::show(lo),
                    units::show(MAX_DURATION)
                ))
            } else {
                Ok(())
            }
        };
        dur("think", self.think, 0)?;
        dur("backoff-min", self.backoff_min, 0)?;
        if self.backoff_max < self.backoff_min {
            return Err(format!(
                "--backoff-max {} is below --backoff-min {}",
                units::show(self.backoff_max),
                units::show(self.backoff_min)
            ));
        }
        dur("backoff-max", self.backoff_max, 0)?;
        dur("horizon", self.horizon, MS)?;
        for (what, p50, p99) in [
            ("work", self.work_p50, self.work_p99),
            ("latency", self.latency_p50, self.latency_p99),
            ("pause", self.pause_p50, self.pause_p99),
        ] {
            dur(&format!("{what}-p50"), p50, 1)?;
            dur(&format!("{what}-p99"), p99, 1)?;
            if p99 < p50 {
                return Err(format!(
                    "--{what}-p99 {} is below --{what}-p50 {}: the 99th percentile cannot be below the median",
                    units::show(p99),
                    units::show(p50)
                ));
            }
        }
        if !self.renew_ratio.is_finite() || self.renew_ratio <= 0.0 || self.renew_ratio > 10.0 {
            return Err(format!(
                "--renew-ratio {} is out of range: a fraction of the TTL above 0 (Redisson: 1/3), at most 10",
                self.renew_ratio
            ));
        }
        self.model().map(|_| ())
    }

    /// The model this configuration runs: the protocol's rules with the
    /// simulator's windows, unlimited budgets for the fault kinds that
    /// strike (the simulator draws them by rate), no cap on their number.
    pub fn model(&self) -> Result<LockModel, String> {
        let proto = self.proto()?;
        let mut p = Params::defaults(proto);
        p.clients = self.clients;
        p.acquisitions = self.acquisitions;
        p.ttl = self.ttl;
        p.work_min = self.work_min;
        p.work_max = self.work_max;
        p.latency_min = self.latency_min;
        p.latency_max = self.latency_max;
        p.step = self.step;
        p.timeout = self.timeout;
        // The model's backoff floor: the simulator draws it from here on.
        p.retry = self.backoff_min;
        p.pause_max = None;
        p.delay_max = None;
        p.jump = self.jump;
        p.faults = Budgets::none();
        for k in FaultKind::LOCK_SIDE {
            if self.fault_on(proto, k) {
                p.faults.set(k, UNLIMITED);
            }
        }
        p.max_faults = None;
        p.renew_every = ((self.ttl as f64 * self.renew_ratio + 0.5) as i64).clamp(1, MAX_DURATION);
        if let Some(name) = &self.client {
            let preset = ClientPreset::from_name(name)
                .ok_or_else(|| format!("--client {name:?}: no such preset"))?;
            // The preset sets its library's behaviours, and may set its
            // own renewal period (python-redis-lock: 2/3 of the TTL). A
            // --renew-ratio other than the default 1/3 is the user's and
            // wins over it.
            let renew_every = p.renew_every;
            preset.apply(&mut p, proto.name());
            if (self.renew_ratio - 1.0 / 3.0).abs() > 1e-9 {
                p.renew_every = renew_every;
            }
        }
        if let Some(n) = self.transport_retries {
            p.transport_retries = n;
        }
        p.renew_cap = self.renew_cap;
        p.renew_unchecked = self.renew_unchecked;
        p.no_cancel = self.no_cancel;
        if let Some(n) = self.instances {
            p.instances = n;
            p.quorum = n / 2 + 1;
        }
        if let Some(q) = self.quorum {
            p.quorum = q;
        }
        if let Some(d) = self.drift_factor_ppm {
            p.drift_factor_ppm = d;
        }
        if let Some(d) = self.clock_drift_ppm {
            p.clock_drift_ppm = d;
        }
        p.delayed_restart = self.delayed_restart;
        if let Some(c) = self.resource_check {
            p.resource_check = c;
        }
        // The resource options mean what they mean to `check`.
        p.fence_reads = self.fence_reads;
        p.token_rule = self
            .token_rule
            .unwrap_or_else(|| p.resource_check.default_rule(p.fence_reads));
        if let Some(o) = self.resource_op {
            p.resource_op = o;
        }
        if let Some(n) = self.stock {
            p.stock = n;
        }
        if let Some(s) = self.token_store {
            p.token_store = s;
        }
        if let Some(n) = self.unfenced_writers {
            p.unfenced_writers = n;
        }
        p.idempotent = self.idempotent;
        p.reconcile = self.reconcile;
        p.detect_within = self.detect_within;
        for (k, rate) in [
            (FaultKind::ResourceRestart, self.resource_restart_rate),
            (FaultKind::Duplicate, self.duplicate_rate),
        ] {
            if rate > 0.0 {
                p.faults.set(k, UNLIMITED);
            }
        }
        p.no_recheck = self.no_recheck;
        p.network = self.network;
        // A run shows every heartbeat: folding them saves a search states,
        // and a run has none to save.
        p.fold_heartbeats = false;
        LockModel::new(proto, p).map_err(|e| e.0)
    }

    /// The options that differ from the defaults, as command-line words, in
    /// the table's order: with them, `locklab simulate` runs this exact
    /// configuration again.
    pub fn cli_args(&self) -> Vec<String> {
        let base = SimConfig::defaults(&self.protocol);
        let mut out = Vec::new();
        for o in OPTIONS {
            let (v, d) = ((o.get)(self), (o.get)(&base));
            if v == d || v.is_empty() {
                continue;
            }
            out.push(format!("--{}", o.name));
            if o.kind != Kind::Flag {
                out.push(v);
            } else if v != "true" {
                // A flag switched off against a default of on cannot be
                // written; no flag defaults to on.
                out.pop();
            }
        }
        out
    }

    /// Sets option `name` from its text.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let o = option(name).ok_or_else(|| format!("unknown option '{name}'"))?;
        (o.set)(self, value.trim())
    }

    /// Option `name`'s value as text ("" when unset).
    pub fn get(&self, name: &str) -> String {
        option(name).map(|o| (o.get)(self)).unwrap_or_default()
    }
}

/// What an option holds: a number or a duration that can be swept, a
/// duration range, a switch, or a choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Number,
    Duration,
    Range,
    Flag,
    Choice,
}

/// One option: its CLI name and how to read and write it.
pub struct Opt {
    pub name: &'static str,
    pub kind: Kind,
    get: fn(&SimConfig) -> String,
    set: fn(&mut SimConfig, &str) -> Result<(), String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn num<T: std::str::FromStr>(name: &str, v: &str, what: &str) -> Result<T, String> {
    v.parse::<T>()
        .map_err(|_| format!("--{name} {v:?}: expected {what}"))
}

fn real(name: &str, v: &str) -> Result<f64, String> {
    let x: f64 = num(name, v, "a number")?;
    if x.is_finite() {
        Ok(x)
    } else {
        Err(format!("--{name} {v:?}: expected a finite number"))
    }
}

fn duration(name: &str, v: &str) -> Result<Micros, String> {
    units::parse(v).map_err(|e| format!("--{name}: {e}"))
}

fn range(name: &str, v: &str) -> Result<(Micros, Micros), String> {
    units::parse_range(v).map_err(|e| format!("--{name}: {e}"))
}

fn show_range(lo: Micros, hi: Micros) -> String {
    format!("{}..{}", units::arg(lo), units::arg(hi))
}

const COUNT: &str = "a whole number (0 to 255)";

macro_rules! dur {
    ($name:literal, $f:ident) => {
        Opt {
            name: $name,
            kind: Kind::Duration,
            get: |c| units::arg(c.$f),
            set: |c, v| {
                c.$f = duration($name, v)?;
                Ok(())
            },
        }
    };
}
macro_rules! real {
    ($name:literal, $f:ident) => {
        Opt {
            name: $name,
            kind: Kind::Number,
            get: |c| c.$f.to_string(),
            set: |c, v| {
                c.$f = real($name, v)?;
                Ok(())
            },
        }
    };
}
macro_rules! maybe {
    ($name:literal, $f:ident, $what:expr) => {
        Opt {
            name: $name,
            kind: Kind::Number,
            get: |c| c.$f.map(|x| x.to_string()).unwrap_or_default(),
            set: |c, v| {
                c.$f = Some(num($name, v, $what)?);
                Ok(())
            },
        }
    };
}
macro_rules! flag {
    ($name:literal, $f:ident) => {
        Opt {
            name: $name,
            kind: Kind::Flag,
            get: |c| c.$f.to_string(),
            set: |c, v| {
                c.$f = num($name, v, "true or false")?;
                Ok(())
            },
        }
    };
}

/// Every option, in the order help and rerun commands list them.
pub static OPTIONS: &[Opt] = &[
    Opt {
        name: "clients",
        kind: Kind::Number,
        get: |c| c.clients.to_string(),
        set: |c, v| {
            c.clients = num("clients", v, COUNT)?;
            Ok(())
        },
    },
    Opt {
        name: "acquisitions",
        kind: Kind::Number,
        get: |c| c.acquisitions.to_string(),
        set: |c, v| {
            c.acquisitions = num("acquisitions", v, COUNT)?;
            Ok(())
        },
    },
    dur!("ttl", ttl),
    real!("renew-ratio", renew_ratio),
    dur!("timeout", timeout),
    dur!("think", think),
    dur!("backoff-min", backoff_min),
    dur!("backoff-max", backoff_max),
    Opt {
        name: "work",
        kind: Kind::Range,
        get: |c| show_range(c.work_min, c.work_max),
        set: |c, v| {
            (c.work_min, c.work_max) = range("work", v)?;
            Ok(())
        },
    },
    dur!("work-p50", work_p50),
    dur!("work-p99", work_p99),
    Opt {
        name: "latency",
        kind: Kind::Range,
        get: |c| show_range(c.latency_min, c.latency_max),
        set: |c, v| {
            (c.latency_min, c.latency_max) = range("latency", v)?;
            Ok(())
        },
    },
    dur!("latency-p50", latency_p50),
    dur!("latency-p99", latency_p99),
    dur!("step", step),
    real!("loss", loss),
    flag!("delay", delay),
    flag!("slow", slow),
    real!("pause-rate", pause_rate),
    dur!("pause-p50", pause_p50),
    dur!("pause-p99", pause_p99),
    dur!("jump", jump),
    real!("jump-rate", jump_rate),
    real!("crash-rate", crash_rate),
    real!("restart-rate", restart_rate),
    real!("failover-rate", failover_rate),
    Opt {
        name: "renew-cap",
        kind: Kind::Duration,
        get: |c| c.renew_cap.map(units::arg).unwrap_or_default(),
        set: |c, v| {
            c.renew_cap = Some(duration("renew-cap", v)?);
            Ok(())
        },
    },
    flag!("renew-unchecked", renew_unchecked),
    flag!("no-cancel", no_cancel),
    maybe!("instances", instances, COUNT),
    maybe!("quorum", quorum, COUNT),
    maybe!(
        "drift-factor-ppm",
        drift_factor_ppm,
        "a whole number of parts per million"
    ),
    maybe!(
        "clock-drift-ppm",
        clock_drift_ppm,
        "a whole number of parts per million"
    ),
    flag!("delayed-restart", delayed_restart),
    Opt {
        name: "resource-check",
        kind: Kind::Choice,
        get: |c| {
            c.resource_check
                .map(|r| r.name())
                .unwrap_or_default()
                .to_string()
        },
        set: |c, v| {
            c.resource_check =
                Some(ResourceCheck::parse(v).map_err(|e| format!("--resource-check {e}"))?);
            Ok(())
        },
    },
    Opt {
        name: "token-rule",
        kind: Kind::Choice,
        get: |c| {
            c.token_rule
                .map(|r| r.name())
                .unwrap_or_default()
                .to_string()
        },
        set: |c, v| {
            c.token_rule = Some(TokenRule::parse(v).map_err(|e| format!("--token-rule {e}"))?);
            Ok(())
        },
    },
    Opt {
        name: "resource-op",
        kind: Kind::Choice,
        get: |c| {
            c.resource_op
                .map(|o| o.name())
                .unwrap_or_default()
                .to_string()
        },
        set: |c, v| {
            c.resource_op = Some(ResourceOp::parse(v).map_err(|e| format!("--resource-op {e}"))?);
            Ok(())
        },
    },
    maybe!("stock", stock, COUNT),
    flag!("fence-reads", fence_reads),
    Opt {
        name: "token-store",
        kind: Kind::Choice,
        get: |c| {
            c.token_store
                .map(|o| o.name())
                .unwrap_or_default()
                .to_string()
        },
        set: |c, v| {
            c.token_store = Some(TokenStore::parse(v).map_err(|e| format!("--token-store {e}"))?);
            Ok(())
        },
    },
    maybe!("unfenced-writers", unfenced_writers, COUNT),
    flag!("idempotent", idempotent),
    real!("resource-restart-rate", resource_restart_rate),
    real!("duplicate-rate", duplicate_rate),
    Opt {
        name: "reconcile",
        kind: Kind::Duration,
        get: |c| c.reconcile.map(units::arg).unwrap_or_default(),
        set: |c, v| {
            c.reconcile = Some(duration("reconcile", v)?);
            Ok(())
        },
    },
    Opt {
        name: "detect-within",
        kind: Kind::Duration,
        get: |c| c.detect_within.map(units::arg).unwrap_or_default(),
        set: |c, v| {
            c.detect_within = Some(duration("detect-within", v)?);
            Ok(())
        },
    },
    flag!("no-recheck", no_recheck),
    Opt {
        name: "network",
        kind: Kind::Choice,
        get: |c| c.network.name().to_string(),
        set: |c, v| {
            c.network = match v {
                "fifo" => Network::Fifo,
                "unordered" => Network::Unordered,
                _ => return Err(format!("--network {v:?}: expected fifo or unordered")),
            };
            Ok(())
        },
    },
    Opt {
        name: "client",
        kind: Kind::Choice,
        get: |c| c.client.clone().unwrap_or_default(),
        set: |c, v| {
            if ClientPreset::from_name(v).is_none() {
                let names: Vec<&str> = ClientPreset::ALL.iter().map(|p| p.name()).collect();
                return Err(format!(
                    "--client {v:?}: no such preset; the presets: {}",
                    names.join(", ")
                ));
            }
            c.client = Some(v.to_string());
            Ok(())
        },
    },
    maybe!("transport-retries", transport_retries, COUNT),
    dur!("horizon", horizon),
    Opt {
        name: "scheduler",
        kind: Kind::Choice,
        get: |c| c.scheduler.name().to_string(),
        set: |c, v| {
            c.scheduler = match v {
                "random" => Scheduler::Random,
                "ordered" => Scheduler::Ordered,
                _ => {
                    return Err(format!("--scheduler {v:?}: expected random or ordered"));
                }
            };
            Ok(())
        },
    },
];

pub fn option(name: &str) -> Option<&'static Opt> {
    OPTIONS.iter().find(|o| o.name == name)
}

/// Names of the options a sweep can vary.
pub fn sweepable() -> Vec<&'static str> {
    OPTIONS
        .iter()
        .filter(|o| matches!(o.kind, Kind::Number | Kind::Duration))
        .map(|o| o.name)
        .collect()
}

/// Checks that option `name`, set by the user, means something for `proto`:
/// a fault rate for a fault its lock service can suffer, a protocol knob for
/// a protocol that has it.
pub fn applies(name: &str, proto: &dyn Protocol) -> Result<(), String> {
    let fault = match name {
        "pause-rate" | "pause-p50" | "pause-p99" => Some(FaultKind::Pause),
        "loss" => Some(FaultKind::Loss),
        "delay" => Some(FaultKind::Delay),
        "slow" => Some(FaultKind::Slow),
        "jump" | "jump-rate" => Some(FaultKind::ClockJump),
        "crash-rate" => Some(FaultKind::Crash),
        "restart-rate" | "delayed-restart" => Some(FaultKind::Restart),
        "failover-rate" => Some(FaultKind::Failover),
        _ => None,
    };
    if let Some(k) = fault
        && !proto.faults().contains(&k)
    {
        let can: Vec<&str> = proto.faults().iter().map(|f| f.name()).collect();
        return Err(format!(
            "--{name} does not apply to {}: fault '{}' does not; its lock service can suffer {}",
            proto.name(),
            k.name(),
            can.join(", ")
        ));
    }
    // The model's own table says which protocols have which knob.
    let model_name = match name {
        "renew-ratio" => "renew-every",
        n => n,
    };
    if let Some(info) = PARAMS.iter().find(|p| p.name == model_name)
        && let Some(only) = info.only
        && !only.contains(&proto.name())
    {
        return Err(format!(
            "--{name} does not apply to {}: it is an option of {}",
            proto.name(),
            only.join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_for_every_protocol() {
        for p in protocols::ALL {
            let c = SimConfig::defaults(p.name());
            c.validate().unwrap();
            assert!(c.cli_args().is_empty());
        }
    }

    #[test]
    fn cli_args_round_trip_through_set() {
        let mut c = SimConfig::defaults("redlock");
        c.set("ttl", "12s").unwrap();
        c.set("pause-p99", "0.1ms").unwrap();
        c.set("pause-p50", "50us").unwrap();
        c.set("work", "10ms..1.5s").unwrap();
        c.set("network", "unordered").unwrap();
        c.set("delay", "true").unwrap();
        c.set("renew-ratio", "0.3333").unwrap();
        c.set("instances", "3").unwrap();
        c.set("delayed-restart", "true").unwrap();
        c.set("scheduler", "ordered").unwrap();
        let args = c.cli_args();
        let mut back = SimConfig::defaults("redlock");
        let mut words = args.iter().peekable();
        while let Some(w) = words.next() {
            let name = w.trim_start_matches("--");
            let v = match words.peek() {
                Some(v) if !v.starts_with("--") => words.next().unwrap().as_str(),
                _ => "true",
            };
            back.set(name, v).unwrap();
        }
        assert_eq!(back, c, "{args:?}");
    }

    #[test]
    fn bad_values_are_named() {
        let mut c = SimConfig::defaults("watchdog");
        c.pause_rate = -1.0;
        assert!(
            c.validate()
                .unwrap_err()
                .contains("--pause-rate -1 is negative")
        );
        let mut c = SimConfig::defaults("watchdog");
        c.pause_p99 = 5 * MS;
        assert!(c.validate().unwrap_err().contains("below --pause-p50"));
        let mut c = SimConfig::defaults("watchdog");
        assert!(c.set("ttl", "5").unwrap_err().contains("no unit"));
        assert!(c.set("work", "2s..1s").unwrap_err().contains("empty"));
        c.ttl = 0;
        assert!(
            c.validate()
                .unwrap_err()
                .contains("--ttl 0 is out of range")
        );
        let lua = protocols::by_name("lua-release").unwrap();
        assert!(
            applies("failover-rate", lua)
                .unwrap_err()
                .contains("does not apply")
        );
        assert!(
            applies("renew-ratio", lua)
                .unwrap_err()
                .contains("option of watchdog")
        );
        assert!(applies("pause-p99", lua).is_ok());
    }
}
