//! A minimal RESP2 client: one TCP connection, commands as arrays of bulk
//! strings, replies parsed exactly. The replay speaks RESP itself rather
//! than shelling out to `redis-cli`, which exits 0 on error replies, prints
//! nil as an empty line when not on a terminal, and costs ~6 ms a call.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

/// A reply from Redis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// `+OK`, `+PONG`
    Simple(String),
    /// `-ERR ...`
    Error(String),
    /// `:1`
    Int(i64),
    /// `$n ...`; `None` is the nil bulk `$-1`.
    Bulk(Option<String>),
    /// `*n ...`; `None` is the nil array `*-1`.
    Array(Option<Vec<Value>>),
}

impl Value {
    /// The reply as `redis-cli` would show it, on one line.
    pub fn text(&self) -> String {
        match self {
            Value::Simple(s) => s.clone(),
            Value::Error(e) => format!("(error) {e}"),
            Value::Int(i) => i.to_string(),
            Value::Bulk(Some(s)) => format!("{s:?}"),
            Value::Bulk(None) | Value::Array(None) => "nil".into(),
            Value::Array(Some(v)) => {
                let parts: Vec<String> = v.iter().map(Value::text).collect();
                format!("[{}]", parts.join(", "))
            }
        }
    }

    /// The bulk string, if the reply is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Bulk(Some(s)) | Value::Simple(s) => Some(s),
            _ => None,
        }
    }
}

/// One connection to one Redis server.
pub struct Conn {
    reader: BufReader<TcpStream>,
}

impl Conn {
    /// Connects to `127.0.0.1:port`. Replies must arrive within `timeout`.
    pub fn connect(port: u16, timeout: Duration) -> io::Result<Conn> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let stream = TcpStream::connect_timeout(&addr, timeout)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        Ok(Conn {
            reader: BufReader::new(stream),
        })
    }

    /// Sends one command and reads its reply.
    pub fn call(&mut self, args: &[&str]) -> io::Result<Value> {
        self.reader.get_mut().write_all(&encode(args))?;
        read_value(&mut self.reader)
    }
}

/// A command as a RESP array of bulk strings.
pub fn encode(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn bad(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

fn read_line(r: &mut impl BufRead) -> io::Result<String> {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line)?;
    if line.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the server closed the connection",
        ));
    }
    if !line.ends_with(b"\r\n") {
        return Err(bad("a RESP line without CRLF"));
    }
    line.truncate(line.len() - 2);
    String::from_utf8(line).map_err(|_| bad("a RESP line that is not UTF-8"))
}

fn number(s: &str) -> io::Result<i64> {
    s.parse().map_err(|_| {
        bad(format!(
            "a RESP length or integer that is not a number: {s:?}"
        ))
    })
}

/// Reads one reply.
pub fn read_value(r: &mut impl BufRead) -> io::Result<Value> {
    let line = read_line(r)?;
    let (tag, rest) = line.split_at(line.chars().next().map_or(0, char::len_utf8));
    match tag {
        "+" => Ok(Value::Simple(rest.to_string())),
        "-" => Ok(Value::Error(rest.to_string())),
        ":" => Ok(Value::Int(number(rest)?)),
        "$" => {
            let n = number(rest)?;
            if n < 0 {
                return Ok(Value::Bulk(None));
            }
            let mut buf = vec![0u8; n as usize + 2];
            r.read_exact(&mut buf)?;
            if !buf.ends_with(b"\r\n") {
                return Err(bad("a bulk string without CRLF"));
            }
            buf.truncate(n as usize);
            String::from_utf8(buf)
                .map(|s| Value::Bulk(Some(s)))
                .map_err(|_| bad("a bulk string that is not UTF-8"))
        }
        "*" => {
            let n = number(rest)?;
            if n < 0 {
                return Ok(Value::Array(None));
            }
            (0..n)
                .map(|_| read_value(r))
                .collect::<io::Result<Vec<_>>>()
                .map(|v| Value::Array(Some(v)))
        }
        _ => Err(bad(format!("an unknown RESP reply: {line:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(bytes: &[u8]) -> io::Result<Value> {
        read_value(&mut io::Cursor::new(bytes.to_vec()))
    }

    #[test]
    fn encodes_commands_as_bulk_arrays() {
        assert_eq!(
            encode(&["SET", "lock", "c1#1"]),
            b"*3\r\n$3\r\nSET\r\n$4\r\nlock\r\n$4\r\nc1#1\r\n".to_vec()
        );
    }

    #[test]
    fn parses_every_reply_kind() {
        assert_eq!(parse(b"+OK\r\n").unwrap(), Value::Simple("OK".into()));
        assert_eq!(
            parse(b"-ERR bad\r\n").unwrap(),
            Value::Error("ERR bad".into())
        );
        assert_eq!(parse(b":-2\r\n").unwrap(), Value::Int(-2));
        assert_eq!(parse(b"$-1\r\n").unwrap(), Value::Bulk(None));
        assert_eq!(
            parse(b"$4\r\nc2#1\r\n").unwrap(),
            Value::Bulk(Some("c2#1".into()))
        );
        assert_eq!(
            parse(b"*2\r\n:1\r\n$0\r\n\r\n").unwrap(),
            Value::Array(Some(vec![Value::Int(1), Value::Bulk(Some(String::new()))]))
        );
        assert_eq!(Value::Bulk(None).text(), "nil");
        assert_eq!(Value::Bulk(Some("c1#1".into())).text(), "\"c1#1\"");
    }

    #[test]
    fn rejects_malformed_replies() {
        assert!(parse(b"?what\r\n").is_err());
        assert!(parse(b"+OK\n").is_err());
        assert!(parse(b"$4\r\nab").is_err());
        assert!(parse(b"").is_err());
        assert!(parse(b":x\r\n").is_err());
    }
}
