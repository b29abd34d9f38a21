//! A minimal ZooKeeper client: the jute wire protocol over one TCP
//! connection per session, for exactly what the lock recipe needs —
//! connect (and re-attach to a session), `create2`, `getChildren`,
//! `exists` with a watch, `delete`, ping and `closeSession`, and the watch
//! notifications the server pushes (xid -1).
//!
//! Hand-written rather than a crate: the available Rust clients are async
//! (tokio) stacks that would more than double the replay's build, for six
//! request types whose encoding fits on one page (see
//! `zookeeper.jute` in the ZooKeeper sources for the record layouts).

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Request types (`ZooDefs.OpCode`).
const OP_DELETE: i32 = 2;
const OP_EXISTS: i32 = 3;
const OP_GET_CHILDREN: i32 = 8;
const OP_PING: i32 = 11;
const OP_CREATE2: i32 = 15;
const OP_CLOSE: i32 = -11;
/// Reserved xids: notifications and pings.
const XID_NOTIFICATION: i32 = -1;
const XID_PING: i32 = -2;

/// Error codes (`KeeperException.Code`).
pub const NONODE: i32 = -101;
pub const NODEEXISTS: i32 = -110;
pub const SESSIONEXPIRED: i32 = -112;

/// Create modes.
pub const PERSISTENT: i32 = 0;
pub const EPHEMERAL_SEQUENTIAL: i32 = 3;

/// Watch event type `NodeDeleted`.
pub const NODE_DELETED: i32 = 2;

/// The znode metadata (`Stat`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    pub czxid: i64,
    pub mzxid: i64,
    pub cversion: i32,
    pub ephemeral_owner: i64,
    pub num_children: i32,
}

/// A watch notification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchEvent {
    pub kind: i32,
    pub state: i32,
    pub path: String,
}

impl WatchEvent {
    pub fn text(&self) -> String {
        let kind = match self.kind {
            1 => "NodeCreated",
            2 => "NodeDeleted",
            3 => "NodeDataChanged",
            4 => "NodeChildrenChanged",
            -1 => "None",
            _ => "?",
        };
        format!("{kind} {}", self.path)
    }
}

/// What went wrong with a request.
#[derive(Debug)]
pub enum ZkError {
    /// The connection failed or closed (the server closes the connection
    /// of a session it expired).
    Io(io::Error),
    /// The server answered with an error code.
    Server(i32),
}

impl std::fmt::Display for ZkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ZkError::Io(e) => write!(f, "connection: {e}"),
            ZkError::Server(c) => write!(f, "error {c} ({})", code_name(*c)),
        }
    }
}

/// A server error code's name.
pub fn code_name(c: i32) -> &'static str {
    match c {
        0 => "OK",
        NONODE => "NONODE",
        NODEEXISTS => "NODEEXISTS",
        SESSIONEXPIRED => "SESSIONEXPIRED",
        -4 => "CONNECTIONLOSS",
        -102 => "NOAUTH",
        -111 => "NOTEMPTY",
        _ => "other",
    }
}

impl From<io::Error> for ZkError {
    fn from(e: io::Error) -> Self {
        ZkError::Io(e)
    }
}

/// Jute encoding.
#[derive(Default)]
struct Out(Vec<u8>);

impl Out {
    fn int(&mut self, v: i32) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn long(&mut self, v: i64) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn boolean(&mut self, v: bool) -> &mut Self {
        self.0.push(v as u8);
        self
    }
    fn buffer(&mut self, b: &[u8]) -> &mut Self {
        self.int(b.len() as i32);
        self.0.extend_from_slice(b);
        self
    }
    fn string(&mut self, s: &str) -> &mut Self {
        self.buffer(s.as_bytes())
    }
}

/// Jute decoding.
struct In<'a>(&'a [u8]);

fn short() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "short ZooKeeper record")
}

impl In<'_> {
    fn take(&mut self, n: usize) -> io::Result<&[u8]> {
        if self.0.len() < n {
            return Err(short());
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn int(&mut self) -> io::Result<i32> {
        Ok(i32::from_be_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn long(&mut self) -> io::Result<i64> {
        Ok(i64::from_be_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn buffer(&mut self) -> io::Result<Vec<u8>> {
        let n = self.int()?;
        if n < 0 {
            return Ok(Vec::new());
        }
        Ok(self.take(n as usize)?.to_vec())
    }
    fn string(&mut self) -> io::Result<String> {
        Ok(String::from_utf8_lossy(&self.buffer()?).to_string())
    }
    fn stat(&mut self) -> io::Result<Stat> {
        let czxid = self.long()?;
        let mzxid = self.long()?;
        let _ctime = self.long()?;
        let _mtime = self.long()?;
        let _version = self.int()?;
        let cversion = self.int()?;
        let _aversion = self.int()?;
        let ephemeral_owner = self.long()?;
        let _data_length = self.int()?;
        let num_children = self.int()?;
        let _pzxid = self.long()?;
        Ok(Stat {
            czxid,
            mzxid,
            cversion,
            ephemeral_owner,
            num_children,
        })
    }
}

/// One session's connection.
pub struct ZkConn {
    stream: TcpStream,
    pub session_id: i64,
    pub passwd: Vec<u8>,
    /// The session timeout the server granted, in ms.
    pub timeout_ms: i32,
    xid: i32,
    /// Notifications read while waiting for a reply.
    pub events: VecDeque<WatchEvent>,
    reply_timeout: Duration,
}

fn frame(stream: &mut TcpStream) -> io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len)?;
    let n = i32::from_be_bytes(len);
    if !(0..=16 << 20).contains(&n) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("bad ZooKeeper frame length {n}"),
        ));
    }
    let mut buf = vec![0u8; n as usize];
    stream.read_exact(&mut buf)?;
    Ok(buf)
}

fn send(stream: &mut TcpStream, body: &[u8]) -> io::Result<()> {
    let mut msg = (body.len() as i32).to_be_bytes().to_vec();
    msg.extend_from_slice(body);
    stream.write_all(&msg)
}

impl ZkConn {
    /// Opens a new session with timeout `session_ms`.
    pub fn connect(port: u16, session_ms: u64, reply_timeout: Duration) -> io::Result<ZkConn> {
        Self::handshake(port, session_ms, 0, &[0u8; 16], reply_timeout)?.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "the server refused a new session",
            )
        })
    }

    /// Re-attaches to session `id` on a new connection, as a client does
    /// after its connection broke. `Ok(None)`: the server says the session
    /// has expired.
    pub fn reattach(
        port: u16,
        session_ms: u64,
        id: i64,
        passwd: &[u8],
        reply_timeout: Duration,
    ) -> io::Result<Option<ZkConn>> {
        Self::handshake(port, session_ms, id, passwd, reply_timeout)
    }

    fn handshake(
        port: u16,
        session_ms: u64,
        id: i64,
        passwd: &[u8],
        reply_timeout: Duration,
    ) -> io::Result<Option<ZkConn>> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let mut stream = TcpStream::connect_timeout(&addr, reply_timeout)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(reply_timeout))?;
        let mut req = Out::default();
        req.int(0) // protocolVersion
            .long(0) // lastZxidSeen
            .int(session_ms.min(i32::MAX as u64) as i32)
            .long(id)
            .buffer(passwd)
            .boolean(false); // readOnly
        send(&mut stream, &req.0)?;
        let resp = frame(&mut stream)?;
        let mut r = In(&resp);
        let _proto = r.int()?;
        let timeout_ms = r.int()?;
        let session_id = r.long()?;
        let passwd = r.buffer()?;
        // An expired session is answered with timeout 0 and the
        // connection closed.
        if timeout_ms <= 0 {
            return Ok(None);
        }
        Ok(Some(ZkConn {
            stream,
            session_id,
            passwd,
            timeout_ms,
            xid: 0,
            events: VecDeque::new(),
            reply_timeout,
        }))
    }

    /// Sends one request and reads its reply (keeping notifications that
    /// arrive first). Returns the reply's zxid and body.
    fn call(&mut self, op: i32, body: &[u8]) -> Result<(i64, Vec<u8>), ZkError> {
        let xid = if op == OP_PING {
            XID_PING
        } else {
            self.xid += 1;
            self.xid
        };
        let mut req = Out::default();
        req.int(xid).int(op);
        req.0.extend_from_slice(body);
        send(&mut self.stream, &req.0)?;
        loop {
            let f = frame(&mut self.stream)?;
            let mut r = In(&f);
            let rx = r.int()?;
            let zxid = r.long()?;
            let err = r.int()?;
            if rx == XID_NOTIFICATION {
                self.events.push_back(WatchEvent {
                    kind: r.int()?,
                    state: r.int()?,
                    path: r.string()?,
                });
                continue;
            }
            if rx != xid {
                return Err(ZkError::Io(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("reply for xid {rx}, expected {xid}"),
                )));
            }
            if err != 0 {
                return Err(ZkError::Server(err));
            }
            return Ok((zxid, r.0.to_vec()));
        }
    }

    /// `create2` with an open ACL: the created path and its `Stat`.
    pub fn create(
        &mut self,
        path: &str,
        data: &[u8],
        mode: i32,
    ) -> Result<(String, Stat), ZkError> {
        let mut b = Out::default();
        b.string(path).buffer(data);
        // ACL: world:anyone, all permissions.
        b.int(1).int(31).string("world").string("anyone");
        b.int(mode);
        let (_, body) = self.call(OP_CREATE2, &b.0)?;
        let mut r = In(&body);
        Ok((r.string()?, r.stat()?))
    }

    pub fn delete(&mut self, path: &str) -> Result<(), ZkError> {
        let mut b = Out::default();
        b.string(path).int(-1);
        self.call(OP_DELETE, &b.0).map(|_| ())
    }

    /// `exists`, optionally leaving a watch; `None` if there is no node.
    pub fn exists(&mut self, path: &str, watch: bool) -> Result<Option<Stat>, ZkError> {
        let mut b = Out::default();
        b.string(path).boolean(watch);
        match self.call(OP_EXISTS, &b.0) {
            Ok((_, body)) => Ok(Some(In(&body).stat()?)),
            Err(ZkError::Server(NONODE)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The children of `path` (no watch), sorted by name.
    pub fn children(&mut self, path: &str) -> Result<Vec<String>, ZkError> {
        let mut b = Out::default();
        b.string(path).boolean(false);
        let (_, body) = self.call(OP_GET_CHILDREN, &b.0)?;
        let mut r = In(&body);
        let n = r.int()?.max(0);
        let mut out = Vec::with_capacity(n as usize);
        for _ in 0..n {
            out.push(r.string()?);
        }
        out.sort();
        Ok(out)
    }

    pub fn ping(&mut self) -> Result<(), ZkError> {
        self.call(OP_PING, &[]).map(|_| ())
    }

    /// Ends the session (its ephemeral nodes are deleted).
    pub fn close_session(&mut self) -> Result<(), ZkError> {
        self.call(OP_CLOSE, &[]).map(|_| ())
    }

    /// The next watch notification: one already read, or one that arrives
    /// within `wait`.
    pub fn next_event(&mut self, wait: Duration) -> Result<Option<WatchEvent>, ZkError> {
        if let Some(e) = self.events.pop_front() {
            return Ok(Some(e));
        }
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            self.stream.set_read_timeout(Some(left))?;
            let res = frame(&mut self.stream);
            self.stream.set_read_timeout(Some(self.reply_timeout))?;
            let f = match res {
                Ok(f) => f,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Ok(None);
                }
                Err(e) => return Err(e.into()),
            };
            let mut r = In(&f);
            let rx = r.int()?;
            let _zxid = r.long()?;
            let _err = r.int()?;
            if rx == XID_NOTIFICATION {
                return Ok(Some(WatchEvent {
                    kind: r.int()?,
                    state: r.int()?,
                    path: r.string()?,
                }));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jute_records_round_trip() {
        let mut o = Out::default();
        o.int(-101).long(1 << 40).string("/lock").boolean(true);
        let mut i = In(&o.0);
        assert_eq!(i.int().unwrap(), -101);
        assert_eq!(i.long().unwrap(), 1 << 40);
        assert_eq!(i.string().unwrap(), "/lock");
        assert_eq!(i.take(1).unwrap(), [1]);
        assert!(i.int().is_err());
    }
}
