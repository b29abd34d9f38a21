//! A minimal etcd v3 client over the JSON gRPC gateway etcd 3.4 serves on
//! its client port (`/v3/kv/txn`, `/v3/kv/range`, `/v3/kv/deleterange`,
//! `/v3/lease/grant`, `/v3/lease/keepalive`, `/v3/lease/revoke`,
//! `/v3/lease/timetolive`, `/v3/watch`; keys base64, int64s as strings).
//!
//! Plain HTTP/1.1 over a `TcpStream`, one connection per request
//! (`Connection: close`), and one long-lived connection per watch whose
//! chunked response carries one JSON message per event batch. No async
//! runtime, no gRPC stack, no TLS: the replay talks to a server it started
//! on loopback, and a gRPC client (tonic + tokio + prost + a protobuf
//! build step) would cost minutes of CI build time for eight calls.

use serde_json::{Value, json};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding.
pub fn b64(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let n = chunk.len();
        let v = (chunk[0] as u32) << 16
            | (*chunk.get(1).unwrap_or(&0) as u32) << 8
            | *chunk.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= n {
                out.push(B64[(v >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64 (padding optional); `None` if malformed.
pub fn unb64(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut acc = 0u32;
    let mut bits = 0;
    for c in text.bytes().filter(|c| *c != b'=') {
        let v = B64.iter().position(|x| *x == c)? as u32;
        acc = acc << 6 | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// An int64 of the gateway's JSON (a string, a number, or absent = 0).
pub fn num(v: &Value) -> i64 {
    match v {
        Value::String(s) => s.parse().unwrap_or(0),
        Value::Number(n) => n.as_i64().unwrap_or(0),
        _ => 0,
    }
}

/// One key as a range returns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kv {
    pub key: String,
    pub create_revision: i64,
    pub mod_revision: i64,
    pub lease: i64,
}

impl Kv {
    pub fn from_json(v: &Value) -> Kv {
        Kv {
            key: v["key"]
                .as_str()
                .and_then(unb64)
                .map(|b| String::from_utf8_lossy(&b).to_string())
                .unwrap_or_default(),
            create_revision: num(&v["create_revision"]),
            mod_revision: num(&v["mod_revision"]),
            lease: num(&v["lease"]),
        }
    }
}

/// The keys of a range response.
pub fn kvs(resp: &Value) -> Vec<Kv> {
    resp["kvs"]
        .as_array()
        .map(|a| a.iter().map(Kv::from_json).collect())
        .unwrap_or_default()
}

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EtcdError {
    /// No answer: connection refused, reset or timed out.
    Io(String),
    /// etcd answered with an error (`{"error": ..., "code": ...}`).
    Server(String),
}

impl std::fmt::Display for EtcdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EtcdError::Io(m) => write!(f, "no answer: {m}"),
            EtcdError::Server(m) => write!(f, "error: {m}"),
        }
    }
}

/// The end of a prefix range (the prefix with its last byte + 1).
pub fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    if let Some(last) = end.last_mut() {
        *last += 1;
    }
    end
}

/// The client port of one etcd server.
#[derive(Clone, Copy, Debug)]
pub struct Etcd {
    pub port: u16,
    pub timeout: Duration,
}

fn connect(port: u16, timeout: Duration) -> io::Result<TcpStream> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    Ok(s)
}

fn request(path: &str, port: u16, body: &str, keep: bool) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: {}\r\n\r\n{body}",
        body.len(),
        if keep { "keep-alive" } else { "close" }
    )
}

/// Reads the status line and headers: (status, chunked, content-length).
fn head(r: &mut impl BufRead) -> io::Result<(u16, bool, Option<usize>)> {
    let mut line = String::new();
    r.read_line(&mut line)?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("bad HTTP status line {line:?}"),
            )
        })?;
    let (mut chunked, mut len) = (false, None);
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        } else if let Some(v) = lower.strip_prefix("content-length:") {
            len = v.trim().parse().ok();
        }
    }
    Ok((status, chunked, len))
}

/// Reads one chunk of a chunked body; `None` at the last chunk.
fn chunk(r: &mut impl BufRead) -> io::Result<Option<Vec<u8>>> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad chunk size"))?;
    let mut data = vec![0u8; size];
    r.read_exact(&mut data)?;
    let mut crlf = [0u8; 2];
    r.read_exact(&mut crlf)?;
    Ok((size > 0).then_some(data))
}

impl Etcd {
    /// POSTs `body` to `path` and returns the JSON answer.
    pub fn post(&self, path: &str, body: &Value) -> Result<Value, EtcdError> {
        let io = |e: io::Error| EtcdError::Io(format!("{path}: {e}"));
        let mut s = connect(self.port, self.timeout).map_err(io)?;
        s.write_all(request(path, self.port, &body.to_string(), false).as_bytes())
            .map_err(io)?;
        let mut r = BufReader::new(s);
        let (status, chunked, len) = head(&mut r).map_err(io)?;
        let mut data = Vec::new();
        if chunked {
            while let Some(c) = chunk(&mut r).map_err(io)? {
                data.extend_from_slice(&c);
            }
        } else if let Some(n) = len {
            data.resize(n, 0);
            r.read_exact(&mut data).map_err(io)?;
        } else {
            r.read_to_end(&mut data).map_err(io)?;
        }
        let v: Value = serde_json::from_slice(&data).map_err(|e| {
            EtcdError::Io(format!(
                "{path}: HTTP {status}, not JSON ({e}): {}",
                String::from_utf8_lossy(&data)
            ))
        })?;
        // Streaming endpoints wrap their message in "result".
        let v = if v.get("result").is_some() {
            v["result"].clone()
        } else {
            v
        };
        if let Some(e) = v.get("error") {
            let msg = v["message"].as_str().or(e.as_str()).unwrap_or("error");
            return Err(EtcdError::Server(msg.to_string()));
        }
        if status != 200 {
            return Err(EtcdError::Server(format!("HTTP {status}: {v}")));
        }
        Ok(v)
    }

    pub fn health(&self) -> bool {
        let Ok(mut s) = connect(self.port, self.timeout) else {
            return false;
        };
        let req = format!(
            "GET /health HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
            self.port
        );
        let mut out = String::new();
        s.write_all(req.as_bytes()).is_ok()
            && s.read_to_string(&mut out).is_ok()
            && out.contains("\"health\":\"true\"")
    }

    /// `LeaseGrant`: the lease id.
    pub fn grant(&self, ttl_secs: u64) -> Result<(i64, i64), EtcdError> {
        let v = self.post("/v3/lease/grant", &json!({ "TTL": ttl_secs }))?;
        Ok((num(&v["ID"]), num(&v["TTL"])))
    }

    /// One `LeaseKeepAlive` round: the TTL it was renewed to (0: the lease
    /// is gone).
    pub fn keepalive(&self, id: i64) -> Result<i64, EtcdError> {
        let v = self.post("/v3/lease/keepalive", &json!({ "ID": id.to_string() }))?;
        Ok(num(&v["TTL"]))
    }

    /// `LeaseTimeToLive`: seconds left (-1: the lease is gone).
    pub fn time_to_live(&self, id: i64) -> Result<i64, EtcdError> {
        let v = self.post("/v3/lease/timetolive", &json!({ "ID": id.to_string() }))?;
        Ok(num(&v["TTL"]))
    }

    pub fn revoke(&self, id: i64) -> Result<Value, EtcdError> {
        self.post("/v3/lease/revoke", &json!({ "ID": id.to_string() }))
    }

    /// Every key under `prefix`, oldest creation first, and the revision
    /// the read saw.
    pub fn range_prefix(&self, prefix: &str) -> Result<(Vec<Kv>, i64), EtcdError> {
        let v = self.post("/v3/kv/range", &range_prefix_op(prefix))?;
        Ok((kvs(&v), num(&v["header"]["revision"])))
    }

    /// One key, and the revision the read saw.
    pub fn get(&self, key: &str) -> Result<(Option<Kv>, i64), EtcdError> {
        let v = self.post("/v3/kv/range", &json!({ "key": b64(key.as_bytes()) }))?;
        Ok((kvs(&v).into_iter().next(), num(&v["header"]["revision"])))
    }

    /// Deletes one key: how many were deleted, and the revision after.
    pub fn delete(&self, key: &str) -> Result<(i64, i64), EtcdError> {
        let v = self.post("/v3/kv/deleterange", &json!({ "key": b64(key.as_bytes()) }))?;
        Ok((num(&v["deleted"]), num(&v["header"]["revision"])))
    }

    /// Opens a watch on `key` from revision `start`.
    pub fn watch(&self, key: &str, start: i64) -> Result<WatchStream, EtcdError> {
        let io = |e: io::Error| EtcdError::Io(format!("/v3/watch: {e}"));
        let mut s = connect(self.port, self.timeout).map_err(io)?;
        let body = json!({ "create_request": {
            "key": b64(key.as_bytes()),
            "start_revision": start.to_string(),
        }});
        s.write_all(request("/v3/watch", self.port, &body.to_string(), true).as_bytes())
            .map_err(io)?;
        let mut w = WatchStream {
            r: BufReader::new(s),
            timeout: self.timeout,
        };
        let (status, chunked, _) = head(&mut w.r).map_err(io)?;
        if status != 200 || !chunked {
            return Err(EtcdError::Server(format!(
                "/v3/watch answered HTTP {status} (chunked: {chunked})"
            )));
        }
        let created = w.next(self.timeout)?;
        match created {
            Some(v) if v["created"].as_bool() == Some(true) => Ok(w),
            other => Err(EtcdError::Server(format!(
                "the watch was not created: {}",
                other
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "no answer".into())
            ))),
        }
    }
}

/// A range request for every key under `prefix`, oldest creation first.
pub fn range_prefix_op(prefix: &str) -> Value {
    json!({
        "key": b64(prefix.as_bytes()),
        "range_end": b64(&prefix_end(prefix)),
        "sort_order": "ASCEND",
        "sort_target": "CREATE",
    })
}

/// An open watch: its messages, one per chunk.
pub struct WatchStream {
    r: BufReader<TcpStream>,
    timeout: Duration,
}

impl WatchStream {
    /// The next watch message within `wait` (`None`: nothing came).
    pub fn next(&mut self, wait: Duration) -> Result<Option<Value>, EtcdError> {
        let io = |e: io::Error| EtcdError::Io(format!("/v3/watch: {e}"));
        let deadline = Instant::now() + wait;
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        self.r.get_ref().set_read_timeout(Some(left)).map_err(io)?;
        let res = chunk(&mut self.r);
        self.r
            .get_ref()
            .set_read_timeout(Some(self.timeout))
            .map_err(io)?;
        let data = match res {
            Ok(Some(d)) => d,
            Ok(None) => return Err(EtcdError::Io("/v3/watch: the stream ended".into())),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Ok(None);
            }
            Err(e) => return Err(io(e)),
        };
        let v: Value = serde_json::from_slice(&data).map_err(|e| {
            EtcdError::Io(format!(
                "/v3/watch: not JSON ({e}): {}",
                String::from_utf8_lossy(&data)
            ))
        })?;
        Ok(Some(if v.get("result").is_some() {
            v["result"].clone()
        } else {
            v
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        assert_eq!(b64(b"lock/"), "bG9jay8=");
        assert_eq!(b64(b"lock0"), "bG9jazA=");
        assert_eq!(b64(b"ab"), "YWI=");
        assert_eq!(unb64("bG9jay9h").unwrap(), b"lock/a");
        assert_eq!(unb64("YWI=").unwrap(), b"ab");
        assert_eq!(prefix_end("lock/"), b"lock0");
    }

    #[test]
    fn gateway_numbers_are_strings() {
        assert_eq!(num(&json!("42")), 42);
        assert_eq!(num(&json!(7)), 7);
        assert_eq!(num(&Value::Null), 0);
    }
}
