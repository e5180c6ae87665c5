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
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use crate::doorbell::Doorbell;

pub const DEFAULT_PATH: &str = "/run/scx_chameleon/control.sock";
pub const VERSION: u32 = 1;
pub const MAX_MESSAGE: usize = 4096;
/// An answer can be long (`tags` lists every tagged cgroup); this bounds
/// what a client reads from an agent that misbehaves.
pub const MAX_ANSWER: usize = 16 << 20;
/// The whole request must arrive within this (not each read: a client
/// trickling a byte at a time must not hold the agent's loop for long).
pub const REQUEST_DEADLINE: Duration = Duration::from_millis(500);
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
    /// Park CPUs (a list like "2-3"): the scheduler stops using them at once;
    /// the module, if loaded, takes them offline after `holdoff_ms`.
    Park {
        cpus: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        holdoff_ms: Option<u32>,
    },
    /// Give parked CPUs back.
    Unpark { cpus: String },
    /// Re-read the rules file (as SIGHUP does); a bad file is refused and
    /// the rules in force stay.
    ReloadRules,
    /// Every tag in force with where it comes from (answered in `tags`).
    Tags,
    /// The agent's state now (answered in `status`, a status.rs Snapshot):
    /// what `scx_chameleon status` shows. The status file is the same,
    /// rewritten once a second, for when the agent cannot answer.
    Status,
    /// Store a tag on a cgroup from settings as `scx_chameleon tag` takes
    /// them (level, weight, tax, smt, prio: "level" → "2"), the whole tag,
    /// and apply it at once (tags/request.rs). A refused request changes
    /// nothing and is answered with its `reason`. `who` names the requester
    /// in the agent's log (the NRI plugin: the pod and container).
    Tag {
        cgroup: PathBuf,
        #[serde(default)]
        set: std::collections::BTreeMap<String, String>,
        #[serde(default)]
        via: crate::tags::request::Via,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        who: Option<String>,
    },
    /// Remove a cgroup's own tag and apply at once; a cgroup already gone
    /// had none.
    Untag {
        cgroup: PathBuf,
        #[serde(default)]
        via: crate::tags::request::Via,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        who: Option<String>,
    },
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
    /// The answer to `tags`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<crate::tags::source::Listed>>,
    /// The answer to `status`: a status.rs Snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<serde_json::Value>,
    /// Why a `tag` request was refused, in one word (tags/request.rs Reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<crate::tags::request::Reason>,
}

impl Response {
    pub fn ok(detail: impl Into<String>) -> Self {
        Response { ok: true, error: None, detail: Some(detail.into()), tags: None, status: None, reason: None }
    }
    pub fn err(e: impl std::fmt::Display) -> Self {
        Response { ok: false, error: Some(e.to_string()), detail: None, tags: None, status: None, reason: None }
    }
    pub fn tags(tags: Vec<crate::tags::source::Listed>) -> Self {
        Response { ok: true, error: None, detail: None, tags: Some(tags), status: None, reason: None }
    }
    pub fn rejected(r: &crate::tags::request::Rejected) -> Self {
        Response { reason: Some(r.reason), ..Response::err(r) }
    }
    pub fn status(snap: &crate::report::status::Snapshot) -> Self {
        match serde_json::to_value(snap) {
            Ok(v) => Response { ok: true, error: None, detail: None, tags: None, status: Some(v), reason: None },
            Err(e) => Response::err(format!("status: {e}")),
        }
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
    serde_json::from_value(value).context("not a known request (ops: reload, ping, subscribe, park, unpark, reload_rules, tags, status, tag, untag)")
}

/// Read one line (up to `max` + 1 bytes, to detect oversize), all of it
/// before `deadline`.
fn read_line(stream: &mut UnixStream, deadline: std::time::Instant, max: usize) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            bail!("the request did not arrive within {} ms", REQUEST_DEADLINE.as_millis());
        }
        stream.set_read_timeout(Some(left)).context("setting the read deadline")?;
        let n = match stream.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                bail!("the request did not arrive within {} ms", REQUEST_DEADLINE.as_millis())
            }
            Err(e) => return Err(e).context("reading the request"),
        };
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf[buf.len() - n..].contains(&b'\n') || buf.len() > max {
            break;
        }
    }
    Ok(buf)
}

fn peer_is_root(stream: &UnixStream) -> bool {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    getsockopt(stream, PeerCredentials).is_ok_and(|c| c.uid() == 0)
}

/// Held for the agent's whole life (across scheduler restarts): a second
/// agent started at the same time stops here, before it touches the socket
/// or the status file of the first. An flock, so a killed agent leaves no
/// lock behind.
pub struct InstanceLock {
    _lock: nix::fcntl::Flock<std::fs::File>,
}

impl InstanceLock {
    /// Take the lock file next to the control socket, or say who holds it.
    pub fn acquire(socket: &Path) -> Result<InstanceLock> {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = socket.parent().unwrap_or(Path::new("/"));
        private_dir(dir)?;
        let path = dir.join("agent.lock");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        let mut lock = match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
            Ok(lock) => lock,
            Err((mut file, _)) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                bail!("another scx_chameleon agent is running (pid {}; lock {})", holder.trim(), path.display());
            }
        };
        lock.set_len(0)?;
        write!(lock, "{}", std::process::id())?;
        Ok(InstanceLock { _lock: lock })
    }
}

/// The agent's end. Clients are served on threads of their own, never on
/// the agent's loop: a client trickling its request (up to
/// REQUEST_DEADLINE) or reading a long answer slowly holds only its own
/// thread. What needs the loop's state goes to it through `handle`, which
/// may wait for the answer.
pub struct Server {
    listener: UnixListener,
    path: PathBuf,
    /// (device, inode) of the socket we bound: only that one is removed.
    ident: (u64, u64),
    subscribers: Arc<Mutex<Vec<UnixStream>>>,
    /// Set while serving: the acceptor's stop bell and thread.
    acceptor: Option<(Arc<Doorbell>, std::thread::JoinHandle<()>)>,
    /// Times the acceptor backed off (ACCEPT_BACKOFF), since bind.
    backoffs: Arc<std::sync::atomic::AtomicU64>,
}

/// Connections served at once; past it a client is told to come back.
/// Only root's requests do anything, but anyone may connect: this bounds
/// the threads a flood of idle connections makes.
pub const MAX_CLIENTS: usize = 32;

/// How long the acceptor waits after accept() failed for lack of file
/// descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM; any error but a
/// client gone or a signal). The connection stays in the backlog and the
/// listener stays readable, so going straight back to poll() would spin at
/// a whole CPU for as long as the shortage lasts (a flood of requesters'
/// pidfds, another process filling the system's file table).
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Answers valid requests, from the connection's thread.
pub type Handler = Arc<dyn Fn(Request) -> Response + Send + Sync>;

fn ident(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// One connection, start to end: root check, request, answer; a subscriber
/// joins `subscribers` instead of closing.
fn serve_one(mut stream: UnixStream, handle: &Handler, subscribers: &Mutex<Vec<UnixStream>>) {
    let deadline = std::time::Instant::now() + REQUEST_DEADLINE;
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
    let mut subscribe = false;
    let resp = if !peer_is_root(&stream) {
        Response::err("the control socket is for root only")
    } else {
        match read_line(&mut stream, deadline, MAX_MESSAGE).and_then(|d| parse_request(&d)) {
            Ok(Request { op: Op::Subscribe, .. }) => {
                subscribe = true;
                Response::ok("subscribed")
            }
            Ok(req) => handle(req),
            Err(e) => Response::err(format!("{e:#}")),
        }
    };
    if let Ok(mut line) = serde_json::to_vec(&resp) {
        line.push(b'\n');
        if stream.write_all(&line).is_ok() && subscribe && stream.set_nonblocking(true).is_ok() {
            subscribers.lock().unwrap_or_else(|e| e.into_inner()).push(stream);
        }
    }
}

/// The directory of the control socket and the instance lock. Whoever may
/// write it may replace the socket with their own (and answer the CLI's
/// `tag` or `status`) or the lock: it is created mode 0755 if missing
/// (parents too), and refused unless it is a directory (not a link) owned
/// by the agent's uid (root) that neither its group nor others may write.
/// systemd's `RuntimeDirectory=` makes it so.
pub fn private_dir(dir: &Path) -> Result<()> {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    std::fs::DirBuilder::new().recursive(true).mode(0o755).create(dir).with_context(|| format!("creating {}", dir.display()))?;
    let md = std::fs::symlink_metadata(dir).with_context(|| format!("{}", dir.display()))?;
    let me = nix::unistd::geteuid().as_raw();
    if md.file_type().is_symlink() {
        bail!("{}: a symbolic link; the control socket's directory must be a directory", dir.display());
    }
    if !md.is_dir() {
        bail!("{}: not a directory", dir.display());
    }
    if md.uid() != me {
        bail!("{}: owned by uid {}, not by the agent (uid {me}); the control socket's directory must be the agent's", dir.display(), md.uid());
    }
    if md.mode() & 0o022 != 0 {
        bail!(
            "{}: writable by its group or others (mode {:04o}); the control socket's directory must be writable by its owner only (chmod go-w, or remove it)",
            dir.display(),
            md.mode() & 0o7777
        );
    }
    Ok(())
}

/// A listening socket at `path`, created mode 0600 (less the umask): the
/// socket's own inode is fchmod-ed before bind(2), and bind gives the file
/// it creates that inode's mode, so there is no moment at which the socket
/// is reachable with a wider mode (as there was between bind and a chmod by
/// path). Checked after bind all the same.
fn listen_at(path: &Path) -> Result<UnixListener> {
        use nix::sys::socket::{bind, listen, socket, AddressFamily, Backlog, SockFlag, SockType, UnixAddr};
    use nix::sys::stat::{fchmod, Mode};
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;
    let io = |e: nix::Error| std::io::Error::from(e);
    let fd = socket(AddressFamily::Unix, SockType::Stream, SockFlag::SOCK_CLOEXEC, None).map_err(io).context("creating the control socket")?;
    fchmod(&fd, Mode::from_bits_truncate(0o600)).map_err(io).context("setting the control socket's mode")?;
    let addr = UnixAddr::new(path).map_err(io).with_context(|| format!("control socket path {}", path.display()))?;
    bind(fd.as_raw_fd(), &addr).map_err(io).with_context(|| format!("binding {}", path.display()))?;
    let mode = std::fs::symlink_metadata(path).with_context(|| format!("{}", path.display()))?.mode() & 0o777;
    if mode & !0o600 != 0 {
        let _ = std::fs::remove_file(path);
        bail!("{}: the socket was created mode {mode:04o}, not 0600; removed", path.display());
    }
    listen(&fd, Backlog::MAXCONN).map_err(io).with_context(|| format!("listening on {}", path.display()))?;
    Ok(UnixListener::from(fd))
}

impl Server {
    pub fn bind(path: &Path) -> Result<Server> {
        use std::os::unix::fs::FileTypeExt;
        if let Some(dir) = path.parent() {
            private_dir(dir)?;
        }
        match std::fs::symlink_metadata(path) {
            // A socket left by an agent that died: nobody answers on it.
            Ok(m) if m.file_type().is_socket() => {
                if UnixStream::connect(path).is_ok() {
                    bail!("{}: another agent is listening", path.display());
                }
                std::fs::remove_file(path).with_context(|| format!("removing the stale {}", path.display()))?;
            }
            Ok(_) => bail!("{}: exists and is not a socket; not removing it", path.display()),
            Err(_) => {}
        }
        let listener = listen_at(path)?;
        listener.set_nonblocking(true)?;
        let ident = ident(path).context("the socket vanished after bind")?;
        Ok(Server { listener, path: path.to_path_buf(), ident, subscribers: Default::default(), acceptor: None, backoffs: Default::default() })
    }

    /// Start serving: a thread accepts, and each connection gets a thread
    /// of its own that calls `handle` for a valid request. Clients that
    /// connected before this wait in the backlog and are served now.
    pub fn start(&mut self, handle: Handler) -> Result<()> {
        let listener = self.listener.try_clone().context("duplicating the control socket")?;
        let stop = Doorbell::new()?;
        let subscribers = self.subscribers.clone();
        let bell = stop.clone();
        let active = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let backoffs = self.backoffs.clone();
        let thread = std::thread::Builder::new()
            .name("control".into())
            .spawn(move || {
                use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
                use std::os::fd::AsFd;
                use std::sync::atomic::Ordering;
                // Wait out a shortage, or until stopped.
                let back_off = || {
                    backoffs.fetch_add(1, Ordering::Relaxed);
                    let mut fds = [PollFd::new(bell.fd(), PollFlags::POLLIN)];
                    let _ = poll(&mut fds, PollTimeout::try_from(ACCEPT_BACKOFF.as_millis() as i32).unwrap_or(PollTimeout::MAX));
                };
                while !bell.requested() {
                    let mut fds = [PollFd::new(listener.as_fd(), PollFlags::POLLIN), PollFd::new(bell.fd(), PollFlags::POLLIN)];
                    match poll(&mut fds, PollTimeout::NONE) {
                        Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                        // ENOMEM: as for accept() below.
                        Err(_) => {
                            back_off();
                            continue;
                        }
                    }
                    loop {
                        let mut stream = match listener.accept() {
                            Ok((stream, _)) => stream,
                            // The backlog is empty.
                            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                            // A client gone before it was taken, a signal: the next one.
                            Err(e) if matches!(e.kind(), std::io::ErrorKind::ConnectionAborted | std::io::ErrorKind::Interrupted) => continue,
                            // A shortage (or anything else that would fail
                            // again at once): the connection waits.
                            Err(_) => {
                                back_off();
                                break;
                            }
                        };
                        if active.load(Ordering::Relaxed) >= MAX_CLIENTS {
                            let _ = stream.set_nonblocking(true);
                            let _ = stream.write_all(b"{\"ok\":false,\"error\":\"the agent is serving too many clients; try again\"}\n");
                            continue;
                        }
                        active.fetch_add(1, Ordering::Relaxed);
                        let (handle, subscribers, done) = (handle.clone(), subscribers.clone(), active.clone());
                        let spawned = std::thread::Builder::new().name("control-client".into()).spawn(move || {
                            serve_one(stream, &handle, &subscribers);
                            done.fetch_sub(1, Ordering::Relaxed);
                        });
                        if spawned.is_err() {
                            active.fetch_sub(1, Ordering::Relaxed);
                        }
                    }
                }
            })
            .context("starting the control thread")?;
        self.acceptor = Some((stop, thread));
        Ok(())
    }

    /// Times the acceptor waited out a shortage (ACCEPT_BACKOFF).
    pub fn accept_backoffs(&self) -> u64 {
        self.backoffs.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn has_subscribers(&self) -> bool {
        !self.subscribers.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
    }

    /// Send one line to every subscriber; drop those gone or too slow (a
    /// full socket buffer: they can reconnect). Non-blocking writes: the
    /// loop calls this.
    pub fn broadcast(&self, line: &[u8]) {
        self.subscribers.lock().unwrap_or_else(|e| e.into_inner()).retain_mut(|s| match s.write(line) {
            Ok(n) => n == line.len(),
            Err(_) => false,
        });
    }
}

impl Drop for Server {
    /// Stop accepting (clients being served finish on their own threads,
    /// whose requests to a gone loop are answered with an error), then
    /// remove the socket only if it is still ours (not one a later agent
    /// bound).
    fn drop(&mut self) {
        if let Some((stop, thread)) = self.acceptor.take() {
            stop.request();
            let _ = thread.join();
        }
        if ident(&self.path) == Some(self.ident) {
            let _ = std::fs::remove_file(&self.path);
        }
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
    send_within(path, op, Duration::from_secs(5))
}

/// `send`, giving up on an answer after `within`.
pub fn send_within(path: &Path, op: Op, within: Duration) -> Result<Response> {
    let mut stream = UnixStream::connect(path).with_context(|| format!("{}: no agent", path.display()))?;
    let mut line = serde_json::to_vec(&Request { v: VERSION, op })?;
    line.push(b'\n');
    stream.write_all(&line)?;
    let data = read_line(&mut stream, std::time::Instant::now() + within, MAX_ANSWER)?;
    if data.len() > MAX_ANSWER {
        bail!("the agent's answer is longer than {MAX_ANSWER} bytes");
    }
    serde_json::from_slice(&data).context("the agent's answer is not valid")
}

#[cfg(test)]
mod tests;
