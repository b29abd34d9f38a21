//! The real `redis-server` processes of one replay: started on 127.0.0.1
//! only, on free ports, each start in a fresh empty `--dir`, without
//! persistence; stopped by their own PIDs when the replay ends, fails or is
//! interrupted (the `Drop` of [`Cluster`]).
//!
//! Each server runs in its own process group, so a Ctrl-C in the terminal
//! reaches only `locklab`, which then stops the servers itself; on Linux a
//! server also dies with the thread that started it (`PR_SET_PDEATHSIG`),
//! so even a `kill -9` of `locklab` leaves nothing running.

use crate::resp::{Conn, Value};
use crate::{Error, interrupt};
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The clock-shift shim, compiled at run time only when a trace makes a
/// server's clock jump.
const SHIM_SOURCE: &str = include_str!("../shim/clockshift.c");

/// How to find and run `redis-server`.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// The `redis-server` binary (looked up on `PATH` if it has no slash).
    pub redis_server: PathBuf,
    /// First port to use (servers get consecutive ports); `None` = ports
    /// the operating system reports free.
    pub base_port: Option<u16>,
    /// How long a server may take to answer `PING` (and a replica to sync).
    pub start_timeout: Duration,
    /// How long any reply may take.
    pub reply_timeout: Duration,
}

/// What one server is.
#[derive(Clone, Debug)]
pub struct ServerSpec {
    pub name: String,
    /// Index of the server this one replicates from.
    pub replica_of: Option<usize>,
    /// Runs under the clock-shift shim.
    pub shimmed: bool,
}

/// One server over the whole replay (it may be started several times).
pub struct Server {
    pub spec: ServerSpec,
    pub port: u16,
    child: Option<Child>,
    /// Every PID it had, in order.
    pub pids: Vec<u32>,
    starts: u32,
    /// Frozen by SIGSTOP.
    pub frozen: bool,
    /// Current clock offset (ms) written to its shift file.
    pub offset_ms: i64,
}

impl Server {
    pub fn running(&self) -> bool {
        self.child.is_some()
    }
    fn shift_file(&self, root: &Path) -> PathBuf {
        root.join(format!("{}.clockshift", self.spec.name))
    }
}

/// Every server of one replay, and the scratch directory they live in.
pub struct Cluster {
    root: PathBuf,
    shim: Option<PathBuf>,
    pub servers: Vec<Server>,
    opts: ServerOptions,
}

/// Signals and process checks (Linux: the replay is gated to it).
pub(crate) mod sys {
    pub use libc::{SIGCONT, SIGKILL, SIGSTOP};

    /// Sends `sig` to process `pid`; false if it failed.
    pub fn signal(pid: u32, sig: i32) -> bool {
        // SAFETY: kill(2) on a PID this process started and has not reaped.
        unsafe { libc::kill(pid as libc::pid_t, sig) == 0 }
    }

    /// Sends `sig` to the process group led by `pid` (a server and any
    /// child it forked, such as a replication sync child).
    pub fn signal_group(pid: u32, sig: i32) -> bool {
        // SAFETY: as above; each server leads its own process group.
        unsafe { libc::kill(-(pid as libc::pid_t), sig) == 0 }
    }

    /// Whether a process `pid` exists (signal 0 only checks; EPERM means
    /// it exists but belongs to someone else).
    pub fn exists(pid: u32) -> bool {
        signal(pid, 0) || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }

    /// Makes the child die with the thread that started it.
    #[cfg(target_os = "linux")]
    pub fn die_with_parent() -> std::io::Result<()> {
        // SAFETY: prctl(PR_SET_PDEATHSIG) is async-signal-safe and touches
        // only the calling (child) process.
        if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) } == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// Elsewhere the replay refuses to run (`replay` checks the OS first).
    #[cfg(not(target_os = "linux"))]
    pub fn die_with_parent() -> std::io::Result<()> {
        Err(std::io::Error::other("locklab replay runs on Linux only"))
    }
}

/// Whether process `pid` owns the socket listening on 127.0.0.1:`port`
/// (read from `/proc/net/tcp` and `/proc/PID/fd`). A replay only ever talks
/// to a server it started: a port answered by anyone else is an error, never
/// a server to attach to.
pub fn owns_listener(pid: u32, port: u16) -> bool {
    let Ok(table) = std::fs::read_to_string("/proc/net/tcp") else {
        return false;
    };
    let local = format!("0100007F:{port:04X}");
    let any = format!("00000000:{port:04X}");
    let inodes: Vec<String> = table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
            (f.len() > 9 && (f[1] == local || f[1] == any) && f[3] == "0A")
                .then(|| f[9].to_string())
        })
        .collect();
    if inodes.is_empty() {
        return false;
    }
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|target| {
            let t = target.to_string_lossy();
            inodes.iter().any(|i| t == format!("socket:[{i}]"))
        })
    })
}

/// Prefix of every replay's scratch directory: `locklab-replay-PID-...`.
const SCRATCH_PREFIX: &str = "locklab-replay-";

/// Removes scratch directories left by replays whose process is gone (a
/// `kill -9` of locklab cannot run its cleanup; its servers die with it
/// through `PR_SET_PDEATHSIG`, its directories are removed here).
pub(crate) fn remove_stale_scratch(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(pid) = name
            .strip_prefix(SCRATCH_PREFIX)
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let mine = std::fs::symlink_metadata(e.path()).is_ok_and(|m| {
            use std::os::unix::fs::MetadataExt;
            m.is_dir() && m.uid() == unsafe { libc::geteuid() }
        });
        if mine && pid != std::process::id() && !sys::exists(pid) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// A fresh scratch directory (mode 0700) under the system temp dir.
pub(crate) fn scratch_dir() -> Result<PathBuf, Error> {
    use std::os::unix::fs::DirBuilderExt;
    let base = std::env::temp_dir();
    remove_stale_scratch(&base);
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    for k in 0..100 {
        let d = base.join(format!(
            "{SCRATCH_PREFIX}{}-{stamp}-{k}",
            std::process::id()
        ));
        match std::fs::DirBuilder::new().mode(0o700).create(&d) {
            Ok(()) => return Ok(d),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(Error::Env(format!(
                    "cannot create a scratch directory in {}: {e}",
                    base.display()
                )));
            }
        }
    }
    Err(Error::Env(format!(
        "cannot create a scratch directory in {}",
        base.display()
    )))
}

/// Creates `dir` with mode 0700.
pub(crate) fn private_dir(dir: &Path) -> Result<(), Error> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(dir)
        .map_err(|e| Error::Env(format!("cannot create {}: {e}", dir.display())))
}

/// Compiles the clock shim into `dir` with `$CC`, `cc` or `gcc`.
fn build_shim(dir: &Path) -> Result<PathBuf, Error> {
    let src = dir.join("clockshift.c");
    let out = dir.join("libclockshift.so");
    std::fs::write(&src, SHIM_SOURCE)
        .map_err(|e| Error::Env(format!("cannot write {}: {e}", src.display())))?;
    let mut tried = Vec::new();
    let compilers: Vec<String> = std::env::var("CC")
        .ok()
        .into_iter()
        .chain(["cc".to_string(), "gcc".to_string()])
        .collect();
    for cc in compilers {
        let res = Command::new(&cc)
            .args(["-O2", "-shared", "-fPIC", "-o"])
            .arg(&out)
            .arg(&src)
            .stdin(Stdio::null())
            .output();
        match res {
            Ok(o) if o.status.success() => return Ok(out),
            _ if crate::interrupt::interrupted() => return Err(Error::Interrupted),
            Ok(o) => tried.push(format!(
                "{cc}: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            )),
            Err(e) => tried.push(format!("{cc}: {e}")),
        }
    }
    Err(Error::Env(format!(
        "this trace makes a server's clock jump, which needs the clock-shift shim, and it could not be compiled ({}); install a C compiler (Debian: apt-get install gcc)",
        tried.join("; ")
    )))
}

/// A port on 127.0.0.1 that nothing listens on right now.
pub(crate) fn free_port() -> Result<u16, Error> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| Error::Env(format!("cannot find a free port on 127.0.0.1: {e}")))
}

pub(crate) fn port_in_use(port: u16) -> bool {
    TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_err()
}

/// The last lines of a server's log, for error messages.
pub(crate) fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = &lines[lines.len().saturating_sub(3)..];
    if tail.is_empty() {
        "(its log is empty)".into()
    } else {
        tail.join(" | ")
    }
}

/// One field of `INFO replication`.
fn info_field(info: &Value, key: &str) -> Option<String> {
    info.as_str()?.lines().find_map(|l| {
        l.strip_prefix(key)
            .and_then(|r| r.strip_prefix(':'))
            .map(|v| v.trim().to_string())
    })
}

impl Cluster {
    /// Starts every server of `specs` (replicas after their primary, each
    /// replica synced before this returns).
    pub fn start(specs: Vec<ServerSpec>, opts: ServerOptions) -> Result<Cluster, Error> {
        let root = scratch_dir()?;
        let mut cluster = Cluster {
            root,
            shim: None,
            servers: Vec::new(),
            opts,
        };
        if specs.iter().any(|s| s.shimmed) {
            cluster.shim = Some(build_shim(&cluster.root)?);
        }
        for (i, spec) in specs.into_iter().enumerate() {
            let port = match cluster.opts.base_port {
                Some(b) => {
                    let p = b.checked_add(i as u16).ok_or_else(|| {
                        Error::Env(format!("--base-port {b}: port {b}+{i} is past 65535"))
                    })?;
                    if port_in_use(p) {
                        return Err(Error::Env(format!(
                            "port {p} on 127.0.0.1 is in use ({} would listen there); pick another --base-port or leave it out to use free ports",
                            spec.name
                        )));
                    }
                    p
                }
                // Two lookups can return the same port while nothing
                // listens yet: ask again until it is not taken by an
                // earlier server.
                None => loop {
                    let p = free_port()?;
                    if !cluster.servers.iter().any(|s| s.port == p) {
                        break p;
                    }
                },
            };
            cluster.servers.push(Server {
                spec,
                port,
                child: None,
                pids: Vec::new(),
                starts: 0,
                frozen: false,
                offset_ms: 0,
            });
            if cluster.servers[i].spec.shimmed {
                cluster.set_offset(i, 0)?;
            }
        }
        // Primaries first, all at once, then their replicas (a replica that
        // finds no primary retries only once a second).
        for replicas in [false, true] {
            let group: Vec<usize> = (0..cluster.servers.len())
                .filter(|&i| cluster.servers[i].spec.replica_of.is_some() == replicas)
                .collect();
            for &i in &group {
                cluster.spawn(i)?;
            }
            for &i in &group {
                cluster.settle(i)?;
            }
        }
        Ok(cluster)
    }

    /// The replay's scratch directory (mode 0700).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Starts server `i` again with a fresh empty directory, and waits
    /// until it answers (a replica: until it has synced).
    pub fn launch(&mut self, i: usize) -> Result<(), Error> {
        self.spawn(i)?;
        self.settle(i)
    }

    /// Waits for a spawned server. A free port found by binding may be
    /// taken by someone else before redis-server binds it: then it picks
    /// another (only for ports it chose itself, and only at the first start,
    /// before any client or replica knows the port).
    fn settle(&mut self, i: usize) -> Result<(), Error> {
        let mut attempts = 0;
        loop {
            match self.wait_up(i) {
                Err(Error::Env(msg))
                    if msg.contains("Address already in use")
                        && self.opts.base_port.is_none()
                        && self.servers[i].starts == 1
                        && attempts < 3 =>
                {
                    attempts += 1;
                    self.servers[i].starts = 0;
                    self.servers[i].port = free_port()?;
                    self.spawn(i)?;
                }
                other => return other,
            }
        }
    }

    fn spawn(&mut self, i: usize) -> Result<(), Error> {
        self.servers[i].starts += 1;
        let s = &self.servers[i];
        let log = self.log_path(i);
        let dir = log.parent().unwrap_or(&self.root).to_path_buf();
        private_dir(&dir)?;
        let mut cmd = Command::new(&self.opts.redis_server);
        cmd.args(["--port", &s.port.to_string(), "--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(&dir)
            .arg("--logfile")
            .arg(&log)
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            // A replica must sync at once, not after the default 5 s wait,
            // and its stream must flow at once too: after a diskless sync a
            // Redis 7.0 primary holds the command stream back until the
            // replica's first REPLCONF ACK, which its once-a-second cron
            // sends (measured: writes reached the replica up to 1 s late).
            // A disk-based sync streams as soon as the RDB is sent; the RDB
            // lands in this start's own fresh directory, which no later
            // start reuses, so nothing ever persists.
            .args(["--repl-diskless-sync-delay", "0"])
            .args(["--repl-diskless-sync", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        if let Some(p) = s.spec.replica_of {
            cmd.args([
                "--replicaof",
                "127.0.0.1",
                &self.servers[p].port.to_string(),
            ]);
        }
        if s.spec.shimmed
            && let Some(shim) = &self.shim
        {
            cmd.env("LD_PRELOAD", shim)
                .env("CLOCKSHIFT_FILE", s.shift_file(&self.root));
        }
        // SAFETY: the closure only calls prctl, which is async-signal-safe.
        unsafe {
            cmd.pre_exec(sys::die_with_parent);
        }
        let child = cmd.spawn().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::Env(format!(
                    "{} not found: locklab replay needs Redis (Debian: apt-get install redis-server), or pass --redis-server PATH",
                    self.opts.redis_server.display()
                ))
            } else {
                Error::Env(format!(
                    "cannot start {}: {e}",
                    self.opts.redis_server.display()
                ))
            }
        })?;
        let s = &mut self.servers[i];
        s.pids.push(child.id());
        s.child = Some(child);
        s.frozen = false;
        Ok(())
    }

    fn log_path(&self, i: usize) -> PathBuf {
        let s = &self.servers[i];
        self.root
            .join(format!("{}-{}", s.spec.name, s.starts))
            .join("redis.log")
    }

    fn wait_up(&mut self, i: usize) -> Result<(), Error> {
        let log = self.log_path(i);
        let log = log.as_path();
        let deadline = Instant::now() + self.opts.start_timeout;
        let timeout = self.opts.start_timeout;
        let port = self.servers[i].port;
        let name = format!(
            "{} (redis-server on 127.0.0.1:{port}, pid {})",
            self.servers[i].spec.name,
            self.servers[i].pids.last().copied().unwrap_or(0)
        );
        loop {
            if interrupt::interrupted() {
                return Err(Error::Interrupted);
            }
            if let Some(child) = &mut self.servers[i].child
                && let Ok(Some(status)) = child.try_wait()
            {
                self.servers[i].child = None;
                return Err(Error::Env(format!(
                    "{name} exited at start ({status}): {}",
                    log_tail(log)
                )));
            }
            let up = Conn::connect(port, Duration::from_millis(200))
                .and_then(|mut c| {
                    let pong = c.call(&["PING"])?;
                    if self.servers[i].spec.replica_of.is_none() {
                        return Ok(pong == Value::Simple("PONG".into()));
                    }
                    let info = c.call(&["INFO", "replication"])?;
                    Ok(info_field(&info, "master_link_status").as_deref() == Some("up"))
                })
                .unwrap_or(false);
            if up {
                let pid = self.servers[i].pids.last().copied().unwrap_or(0);
                if owns_listener(pid, port) {
                    return Ok(());
                }
                // Something answers on the port, but not the server this
                // replay started (another replay, or anything else): never
                // attach to it.
                if let Some(child) = &mut self.servers[i].child
                    && let Ok(Some(_)) = child.try_wait()
                {
                    self.servers[i].child = None;
                }
                return Err(Error::Env(format!(
                    "port {port} on 127.0.0.1 answers, but not from {name}: another process listens there (Address already in use); the replay never attaches to a server it did not start: {}",
                    log_tail(log)
                )));
            }
            if Instant::now() >= deadline {
                let what = if self.servers[i].spec.replica_of.is_some() {
                    "answer and sync with its primary"
                } else {
                    "answer PING"
                };
                return Err(Error::Env(format!(
                    "{name} did not {what} within {} ms: {}",
                    timeout.as_millis(),
                    log_tail(log)
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Kills server `i` with SIGKILL (a crash: nothing is saved) and reaps it.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.servers[i].child.take() {
            sys::signal_group(child.id(), sys::SIGKILL);
            let _ = child.kill();
            let _ = child.wait();
        }
        self.servers[i].frozen = false;
    }

    /// Freezes (SIGSTOP) or thaws (SIGCONT) server `i`.
    pub fn freeze(&mut self, i: usize, frozen: bool) -> Result<(), Error> {
        let s = &mut self.servers[i];
        let Some(child) = &s.child else {
            return Err(Error::Env(format!("{} is not running", s.spec.name)));
        };
        let sig = if frozen { sys::SIGSTOP } else { sys::SIGCONT };
        if !sys::signal(child.id(), sig) {
            return Err(Error::Env(format!(
                "cannot {} {}: {}",
                if frozen { "SIGSTOP" } else { "SIGCONT" },
                s.spec.name,
                std::io::Error::last_os_error()
            )));
        }
        s.frozen = frozen;
        Ok(())
    }

    /// Sets server `i`'s clock offset: writes a temporary file and renames
    /// it over the shift file, so the shim never reads a half-written one.
    pub fn set_offset(&mut self, i: usize, ms: i64) -> Result<(), Error> {
        let path = self.servers[i].shift_file(&self.root);
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, format!("{ms}\n"))
            .and_then(|_| std::fs::rename(&tmp, &path))
            .map_err(|e| Error::Env(format!("cannot write {}: {e}", path.display())))?;
        self.servers[i].offset_ms = ms;
        Ok(())
    }

    /// A new connection to server `i`.
    pub fn connect(&self, i: usize) -> Result<Conn, Error> {
        let s = &self.servers[i];
        Conn::connect(s.port, self.opts.reply_timeout).map_err(|e| {
            Error::Env(format!(
                "cannot connect to {} on 127.0.0.1:{}: {e}",
                s.spec.name, s.port
            ))
        })
    }

    /// Waits until replica `r` has applied everything its primary `p` has
    /// written (their replication offsets agree).
    pub fn wait_replicated(&self, p: usize, r: usize) -> Result<(), Error> {
        let deadline = Instant::now() + self.opts.start_timeout;
        let mut pc = self.connect(p)?;
        let mut rc = self.connect(r)?;
        let field = |c: &mut Conn, key: &str| -> Option<String> {
            c.call(&["INFO", "replication"])
                .ok()
                .and_then(|v| info_field(&v, key))
        };
        loop {
            let master = field(&mut pc, "master_repl_offset");
            let replica = field(&mut rc, "slave_repl_offset");
            let link = field(&mut rc, "master_link_status");
            if master.is_some() && master == replica && link.as_deref() == Some("up") {
                return Ok(());
            }
            if interrupt::interrupted() {
                return Err(Error::Interrupted);
            }
            if Instant::now() >= deadline {
                return Err(Error::Env(format!(
                    "{} did not catch up with {} within {} ms (offsets {} and {})",
                    self.servers[r].spec.name,
                    self.servers[p].spec.name,
                    self.opts.start_timeout.as_millis(),
                    replica.unwrap_or_else(|| "?".into()),
                    master.unwrap_or_else(|| "?".into())
                )));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Every PID any server had.
    pub fn pids(&self) -> Vec<u32> {
        self.servers
            .iter()
            .flat_map(|s| s.pids.iter().copied())
            .collect()
    }

    /// PIDs of this replay's servers that still exist (checked with
    /// signal 0; empty after `shutdown`).
    pub fn survivors(&self) -> Vec<u32> {
        self.pids()
            .into_iter()
            .filter(|p| sys::exists(*p))
            .collect()
    }

    /// Stops every server and removes the scratch directory.
    pub fn shutdown(&mut self) {
        for i in 0..self.servers.len() {
            self.kill(i);
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_info_fields() {
        let info = Value::Bulk(Some(
            "# Replication\r\nrole:slave\r\nmaster_link_status:up\r\nslave_repl_offset:42\r\n"
                .into(),
        ));
        assert_eq!(
            info_field(&info, "master_link_status").as_deref(),
            Some("up")
        );
        assert_eq!(
            info_field(&info, "slave_repl_offset").as_deref(),
            Some("42")
        );
        assert_eq!(info_field(&info, "master_repl_offset"), None);
    }
}
