//! The agent's control socket: how `scx_chameleon tag/untag` reach a running
//! agent so that a tag applies at once.
//!
//! A Unix stream socket, mode 0600, whose peer must be root (SO_PEERCRED).
//! One request per connection: a JSON object on one line, at most
//! [`MAX_MESSAGE`] bytes, with a protocol version; one JSON line answers it.
//! Anything else — oversized, malformed, wrong version, unknown op, non-root —
//! gets an error answer and changes nothing; the agent keeps running.
//!
//! `subscribe` keeps the connection: after the answer, every event follows as
//! one JSON line (`scx_chameleon events`, `top`). A subscriber that does not
//! keep up is dropped rather than allowed to slow the agent down.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const DEFAULT_PATH: &str = "/run/scx_chameleon/control.sock";
pub const VERSION: u32 = 1;
pub const MAX_MESSAGE: usize = 4096;
const IO_TIMEOUT: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Re-read the stored tags of this cgroup and its descendants.
    Reload { cgroup: PathBuf },
    /// Is an agent there, and which protocol does it speak?
    Ping,
    /// Stream every event from now on, one JSON line each.
    Subscribe,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    pub v: u32,
    #[serde(flatten)]
    pub op: Op,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Response {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Response {
    pub fn ok(detail: impl Into<String>) -> Self {
        Response { ok: true, error: None, detail: Some(detail.into()) }
    }
    pub fn err(e: impl std::fmt::Display) -> Self {
        Response { ok: false, error: Some(e.to_string()), detail: None }
    }
}

/// Decode one request, refusing anything the agent must not act on.
pub fn parse_request(data: &[u8]) -> Result<Request> {
    if data.len() > MAX_MESSAGE {
        bail!("message of {} bytes: at most {MAX_MESSAGE}", data.len());
    }
    let text = std::str::from_utf8(data).context("message is not UTF-8")?;
    let text = text.trim_end_matches(['\n', '\r']);
    let value: serde_json::Value = serde_json::from_str(text).context("message is not JSON")?;
    match value.get("v").and_then(|v| v.as_u64()) {
        Some(v) if v == VERSION as u64 => {}
        Some(v) => bail!("protocol version {v}: this agent speaks {VERSION}"),
        None => bail!("message has no protocol version \"v\""),
    }
    serde_json::from_value(value).context("not a known request (ops: reload, ping)")
}

/// Read one line (up to MAX_MESSAGE + 1 bytes, to detect oversize).
fn read_line(stream: &mut UnixStream) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 512];
    loop {
        let n = stream.read(&mut chunk).context("reading the request")?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.contains(&b'\n') || buf.len() > MAX_MESSAGE {
            break;
        }
    }
    Ok(buf)
}

fn peer_is_root(stream: &UnixStream) -> bool {
    let mut cred = libc::ucred { pid: 0, uid: u32::MAX, gid: 0 };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most len bytes into cred.
    let r = unsafe {
        libc::getsockopt(
            std::os::fd::AsRawFd::as_raw_fd(stream),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    r == 0 && cred.uid == 0
}

/// The agent's end.
pub struct Server {
    listener: UnixListener,
    path: PathBuf,
    subscribers: std::cell::RefCell<Vec<UnixStream>>,
}

impl Server {
    pub fn bind(path: &Path) -> Result<Server> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        if UnixStream::connect(path).is_ok() {
            bail!("{}: another agent is listening", path.display());
        }
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path).with_context(|| format!("binding {}", path.display()))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        listener.set_nonblocking(true)?;
        Ok(Server { listener, path: path.to_path_buf(), subscribers: Default::default() })
    }

    /// Serve every connection waiting now; `handle` acts on valid requests.
    pub fn serve(&self, mut handle: impl FnMut(&Request) -> Response) {
        while let Ok((mut stream, _)) = self.listener.accept() {
            let _ = stream.set_nonblocking(false);
            let _ = stream.set_read_timeout(Some(IO_TIMEOUT));
            let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
            let mut subscribe = false;
            let resp = if !peer_is_root(&stream) {
                Response::err("the control socket is for root only")
            } else {
                match read_line(&mut stream).and_then(|d| parse_request(&d)) {
                    Ok(Request { op: Op::Subscribe, .. }) => {
                        subscribe = true;
                        Response::ok("subscribed")
                    }
                    Ok(req) => handle(&req),
                    Err(e) => Response::err(format!("{e:#}")),
                }
            };
            if let Ok(mut line) = serde_json::to_vec(&resp) {
                line.push(b'\n');
                if stream.write_all(&line).is_ok() && subscribe && stream.set_nonblocking(true).is_ok() {
                    self.subscribers.borrow_mut().push(stream);
                }
            }
        }
    }

    pub fn has_subscribers(&self) -> bool {
        !self.subscribers.borrow().is_empty()
    }

    /// Send one line to every subscriber; drop those gone or too slow (a
    /// full socket buffer: they can reconnect).
    pub fn broadcast(&self, line: &[u8]) {
        self.subscribers.borrow_mut().retain_mut(|s| match s.write(line) {
            Ok(n) => n == line.len(),
            Err(_) => false,
        });
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Subscribe to the event stream: returns a reader of JSON lines after the answer.
pub fn subscribe(path: &Path) -> Result<std::io::BufReader<UnixStream>> {
    use std::io::BufRead;
    let mut stream = UnixStream::connect(path).with_context(|| format!("{}: no agent", path.display()))?;
    let mut line = serde_json::to_vec(&Request { v: VERSION, op: Op::Subscribe })?;
    line.push(b'\n');
    stream.write_all(&line)?;
    let mut reader = std::io::BufReader::new(stream);
    let mut answer = String::new();
    reader.read_line(&mut answer)?;
    let resp: Response = serde_json::from_str(&answer).context("the agent's answer is not valid")?;
    if !resp.ok {
        bail!("the agent refused: {}", resp.error.unwrap_or_default());
    }
    Ok(reader)
}

/// The CLI's end: send one request, return the answer. Err if no agent listens.
pub fn send(path: &Path, op: Op) -> Result<Response> {
    let mut stream = UnixStream::connect(path).with_context(|| format!("{}: no agent", path.display()))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut line = serde_json::to_vec(&Request { v: VERSION, op })?;
    line.push(b'\n');
    stream.write_all(&line)?;
    let data = read_line(&mut stream)?;
    serde_json::from_slice(&data).context("the agent's answer is not valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip() {
        for op in [Op::Ping, Op::Reload { cgroup: "/sys/fs/cgroup/seq".into() }] {
            let req = Request { v: VERSION, op };
            let line = serde_json::to_vec(&req).unwrap();
            assert_eq!(parse_request(&line).unwrap(), req);
        }
        let wire = br#"{"v":1,"op":"reload","cgroup":"/sys/fs/cgroup/a"}"#;
        assert_eq!(parse_request(wire).unwrap().op, Op::Reload { cgroup: "/sys/fs/cgroup/a".into() });
    }

    #[test]
    fn refuses_bad_messages_with_a_reason() {
        let msg = |d: &[u8]| format!("{:#}", parse_request(d).unwrap_err());
        assert!(msg(b"not json").contains("not JSON"));
        assert!(msg(&[0xff, 0xfe]).contains("not UTF-8"));
        assert!(msg(br#"{"op":"ping"}"#).contains("no protocol version"));
        assert!(msg(br#"{"v":2,"op":"ping"}"#).contains("protocol version 2"));
        assert!(msg(br#"{"v":1,"op":"format_disk"}"#).contains("not a known request"));
        assert_eq!(parse_request(br#"{"v":1,"op":"subscribe"}"#).unwrap().op, Op::Subscribe);
        assert!(msg(br#"{"v":1,"op":"reload"}"#).contains("not a known request"));
        assert!(msg(&vec![b' '; MAX_MESSAGE + 1]).contains("at most 4096"));
    }

    #[test]
    fn server_answers_garbage_and_keeps_serving() {
        let dir = std::env::temp_dir().join(format!("chameleon-ctl-{}", std::process::id()));
        let path = dir.join("control.sock");
        let server = Server::bind(&path).unwrap();
        let talk = |data: &[u8]| {
            let mut s = UnixStream::connect(&path).unwrap();
            s.write_all(data).unwrap();
            s.shutdown(std::net::Shutdown::Write).unwrap();
            s
        };
        // Tests run as root in the toolchain root; a non-root peer is refused
        // the same way, tested in the VM.
        let mut bad = talk(b"garbage\n");
        let mut good = talk(b"{\"v\":1,\"op\":\"ping\"}\n");
        let mut seen = Vec::new();
        server.serve(|req| {
            seen.push(req.clone());
            Response::ok("pong")
        });
        let answer = |s: &mut UnixStream| -> Response { serde_json::from_slice(&read_line(s).unwrap()).unwrap() };
        let a = answer(&mut bad);
        if unsafe { libc::geteuid() } == 0 {
            assert!(!a.ok && a.error.unwrap().contains("not JSON"));
            assert!(answer(&mut good).ok);
            assert_eq!(seen, vec![Request { v: 1, op: Op::Ping }]);
        } else {
            assert!(!a.ok && a.error.unwrap().contains("root only"));
        }
        drop(server);
        assert!(!path.exists(), "socket removed on drop");
        let _ = std::fs::remove_dir(&dir);
    }
}
