//! The real consensus server of one replay: a single-node `etcd` or a
//! standalone ZooKeeper, started on 127.0.0.1 only, on free ports, in a
//! fresh data directory (mode 0700) under the replay's scratch directory,
//! in its own process group, dying with the thread that started it
//! (`PR_SET_PDEATHSIG`), and stopped by its own PID on every exit path
//! (the `Drop` of [`CoordServer`]).
//!
//! * etcd: `--heartbeat-interval 10 --election-timeout 100`, so its
//!   minimum lease TTL (1.5 election timeouts, rounded up to a second) is
//!   1 s instead of the default 2 s.
//! * ZooKeeper: `ZooKeeperServerMain` run directly with `java` on the
//!   Debian jar, a generated `zoo.cfg` with the replay's small `tickTime`
//!   and session-timeout bounds wide enough for any mapped session, the
//!   AdminServer (port 8080) and four-letter words off.

use crate::etcd::Etcd;
use crate::servers::{
    free_port, log_tail, owns_listener, port_in_use, private_dir, scratch_dir, sys,
};
use crate::timemap::{System, TimeMap};
use crate::zk::ZkConn;
use crate::{Error, interrupt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where to find the consensus servers.
#[derive(Clone, Debug)]
pub struct CoordOptions {
    /// The `etcd` binary (Debian: etcd-server).
    pub etcd: PathBuf,
    /// The ZooKeeper server jar (Debian: zookeeper), whose manifest names
    /// its dependencies.
    pub zookeeper_jar: PathBuf,
    /// The `java` binary.
    pub java: PathBuf,
    pub base_port: Option<u16>,
    pub start_timeout: Duration,
    pub reply_timeout: Duration,
}

impl CoordOptions {
    pub const DEFAULT_ZOOKEEPER_JAR: &'static str = "/usr/share/java/zookeeper.jar";
}

pub struct CoordServer {
    pub system: System,
    pub name: String,
    pub port: u16,
    pub pid: u32,
    child: Option<Child>,
    root: PathBuf,
    log: PathBuf,
}

impl CoordServer {
    /// Starts the server for `system` and waits until it answers.
    pub fn start(system: System, opts: &CoordOptions, time: TimeMap) -> Result<CoordServer, Error> {
        let root = scratch_dir()?;
        // Ports: the client port, and etcd's peer port.
        let mut attempts = 0;
        loop {
            let ports = match pick_ports(opts.base_port, 2) {
                Ok(p) => p,
                Err(e) => {
                    let _ = std::fs::remove_dir_all(&root);
                    return Err(e);
                }
            };
            let mut s = CoordServer {
                system,
                name: match system {
                    System::Etcd => "etcd".into(),
                    _ => "zookeeper".into(),
                },
                port: ports[0],
                pid: 0,
                child: None,
                root: root.clone(),
                log: root.join(format!("{}.log", system.name().to_lowercase())),
            };
            s.spawn(opts, time, ports[1])?;
            match s.wait_up(opts, time) {
                Err(Error::Env(m))
                    if m.contains("another process listens")
                        && opts.base_port.is_none()
                        && attempts < 3 =>
                {
                    // A free port was taken between the check and the
                    // bind: stop this one and pick others.
                    attempts += 1;
                    s.stop();
                    s.root = PathBuf::new(); // keep the scratch directory
                }
                Err(e) => return Err(e),
                Ok(()) => return Ok(s),
            }
        }
    }

    fn spawn(&mut self, opts: &CoordOptions, time: TimeMap, peer: u16) -> Result<(), Error> {
        let data = self.root.join(format!("data-{}", self.port));
        private_dir(&data)?;
        let (mut cmd, program, package) = match self.system {
            System::Etcd => {
                let client = format!("http://127.0.0.1:{}", self.port);
                let peer = format!("http://127.0.0.1:{peer}");
                let mut c = Command::new(&opts.etcd);
                c.args(["--name", "locklab"])
                    .arg("--data-dir")
                    .arg(data.join("etcd"))
                    .args(["--listen-client-urls", &client])
                    .args(["--advertise-client-urls", &client])
                    .args(["--listen-peer-urls", &peer])
                    .args(["--initial-advertise-peer-urls", &peer])
                    .args(["--initial-cluster", &format!("locklab={peer}")])
                    .args(["--initial-cluster-state", "new"])
                    .args(["--heartbeat-interval", "10", "--election-timeout", "100"])
                    .args(["--logger", "zap", "--log-outputs", "stderr"]);
                (c, opts.etcd.clone(), "etcd-server")
            }
            _ => {
                let cfg = self.root.join(format!("zoo-{}.cfg", self.port));
                let tick = time.zk_tick_time_ms();
                std::fs::write(
                    &cfg,
                    format!(
                        "tickTime={tick}\ndataDir={}\nclientPort={}\nclientPortAddress=127.0.0.1\nminSessionTimeout={}\nmaxSessionTimeout=86400000\nmaxClientCnxns=0\nadmin.enableServer=false\n4lw.commands.whitelist=\nforceSync=no\n",
                        data.display(),
                        self.port,
                        2 * tick
                    ),
                )
                .map_err(|e| Error::Env(format!("cannot write {}: {e}", cfg.display())))?;
                if !opts.zookeeper_jar.exists() {
                    return Err(Error::Env(format!(
                        "{} not found: locklab replay of the zookeeper protocol needs ZooKeeper (Debian: apt-get install zookeeper), or pass --zookeeper-jar PATH",
                        opts.zookeeper_jar.display()
                    )));
                }
                // The jar's manifest names its dependencies; slf4j-simple
                // (if present) sends the server's log to stderr (our log).
                let mut cp = opts.zookeeper_jar.display().to_string();
                let simple = Path::new("/usr/share/java/slf4j-simple.jar");
                if simple.exists() {
                    cp.push_str(&format!(":{}", simple.display()));
                }
                let mut c = Command::new(&opts.java);
                c.args([
                    "-Xms16m",
                    "-Xmx256m",
                    "-XX:+UseSerialGC",
                    "-XX:TieredStopAtLevel=1",
                    "-Djava.net.preferIPv4Stack=true",
                    "-Dzookeeper.admin.enableServer=false",
                    "-Dzookeeper.forceSync=no",
                    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                    "-cp",
                    &cp,
                    "org.apache.zookeeper.server.ZooKeeperServerMain",
                ])
                .arg(&cfg);
                (c, opts.java.clone(), "zookeeper")
            }
        };
        let log = std::fs::File::create(&self.log)
            .map_err(|e| Error::Env(format!("cannot create {}: {e}", self.log.display())))?;
        let log2 = log
            .try_clone()
            .map_err(|e| Error::Env(format!("cannot open {}: {e}", self.log.display())))?;
        cmd.current_dir(&self.root)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .process_group(0);
        // SAFETY: the closure only calls prctl, which is async-signal-safe.
        unsafe {
            cmd.pre_exec(sys::die_with_parent);
        }
        let child = cmd.spawn().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::Env(format!(
                    "{} not found: locklab replay of this protocol needs {} (Debian: apt-get install {package})",
                    program.display(),
                    self.system.name()
                ))
            } else {
                Error::Env(format!("cannot start {}: {e}", program.display()))
            }
        })?;
        self.pid = child.id();
        self.child = Some(child);
        Ok(())
    }

    fn wait_up(&mut self, opts: &CoordOptions, time: TimeMap) -> Result<(), Error> {
        let deadline = Instant::now() + opts.start_timeout;
        let what = format!(
            "{} on 127.0.0.1:{}, pid {}",
            self.system.name(),
            self.port,
            self.pid
        );
        loop {
            if interrupt::interrupted() {
                return Err(Error::Interrupted);
            }
            if let Some(child) = &mut self.child
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                let tail = log_tail(&self.log);
                if tail.contains("address already in use")
                    || tail.contains("Address already in use")
                {
                    return Err(Error::Env(format!(
                        "port {} on 127.0.0.1 is in use: another process listens there; the replay never attaches to a server it did not start ({what} exited: {tail})",
                        self.port
                    )));
                }
                return Err(Error::Env(format!(
                    "{what} exited at start ({status}): {tail}"
                )));
            }
            let answers = match self.system {
                System::Etcd => Etcd {
                    port: self.port,
                    timeout: Duration::from_millis(300),
                }
                .health(),
                _ => ZkConn::connect(self.port, time.zk_session_ms(1), Duration::from_millis(300))
                    .and_then(|mut c| {
                        c.close_session()
                            .map_err(|e| std::io::Error::other(e.to_string()))
                    })
                    .is_ok(),
            };
            if answers {
                if owns_listener(self.pid, self.port) {
                    return Ok(());
                }
                return Err(Error::Env(format!(
                    "port {} on 127.0.0.1 answers, but not from {what}: another process listens there; the replay never attaches to a server it did not start",
                    self.port
                )));
            }
            if Instant::now() >= deadline {
                return Err(Error::Env(format!(
                    "{what} did not answer within {} ms: {}",
                    opts.start_timeout.as_millis(),
                    log_tail(&self.log)
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the server's process group and reaps it.
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            sys::signal_group(child.id(), sys::SIGKILL);
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the server and removes its directory.
    pub fn shutdown(&mut self) {
        self.stop();
        if !self.root.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }

    /// Whether the server's PID still exists (false after `shutdown`).
    pub fn survives(&self) -> bool {
        self.pid != 0 && sys::exists(self.pid)
    }
}

impl Drop for CoordServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// `n` ports: consecutive from `base`, each checked free, or free ports.
fn pick_ports(base: Option<u16>, n: usize) -> Result<Vec<u16>, Error> {
    let mut out = Vec::new();
    for i in 0..n {
        let p = match base {
            Some(b) => {
                let p = b.checked_add(i as u16).ok_or_else(|| {
                    Error::Env(format!("--base-port {b}: port {b}+{i} is past 65535"))
                })?;
                if port_in_use(p) {
                    return Err(Error::Env(format!(
                        "port {p} on 127.0.0.1 is in use; pick another --base-port or leave it out to use free ports"
                    )));
                }
                p
            }
            None => loop {
                let p = free_port()?;
                if !out.contains(&p) {
                    break p;
                }
            },
        };
        out.push(p);
    }
    Ok(out)
}
