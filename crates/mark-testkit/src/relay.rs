//! A UDP relay on 127.0.0.1 that makes loopback behave like a real network:
//! a set delay each way, loss, reordering, duplication, and a black hole per
//! direction that a test can switch on and off while traffic flows.
//!
//! The client talks to [`UdpRelay::addr`]; the relay forwards each datagram to
//! the server from a socket of its own per client address, and the server's
//! answers back the same way. It knows nothing about QUIC: it moves
//! datagrams. Randomness comes from a seed, so a failing run can be replayed.

use std::collections::{BinaryHeap, HashMap};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::TestkitError;

/// Largest datagram the relay carries (QUIC's are at most ~1,500 bytes on loopback).
const MAX_DATAGRAM: usize = 65_535;

/// How often the relay's threads look at the stop flag while nothing arrives.
const POLL: Duration = Duration::from_millis(20);

/// What the link does to every datagram, the same way in both directions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkShape {
    /// One-way delay (each direction).
    pub delay: Duration,
    /// Probability that a datagram is lost (0.0 to 1.0).
    pub loss: f64,
    /// Probability that a datagram is held back by [`Self::reorder_by`], so later ones overtake it.
    pub reorder: f64,
    /// How much longer a reordered datagram takes.
    pub reorder_by: Duration,
    /// Probability that a datagram arrives twice.
    pub duplicate: f64,
}

impl LinkShape {
    /// A perfect link: no delay, nothing lost, reordered or duplicated.
    pub const CLEAN: LinkShape = LinkShape {
        delay: Duration::ZERO,
        loss: 0.0,
        reorder: 0.0,
        reorder_by: Duration::ZERO,
        duplicate: 0.0,
    };

    /// A long, lossy link: `delay` each way and `loss` of the datagrams lost, with 1% held
    /// back by 10 ms and 1% duplicated.
    pub fn lossy(delay: Duration, loss: f64) -> LinkShape {
        LinkShape {
            delay,
            loss,
            reorder: 0.01,
            reorder_by: Duration::from_millis(10),
            duplicate: 0.01,
        }
    }
}

/// A direction of the relay's traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the client to the server.
    ToServer,
    /// From the server to the client.
    ToClient,
}

/// What the relay did so far, counted over both directions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RelayStats {
    /// Datagrams sent on (duplicates included).
    pub forwarded: u64,
    /// Datagrams lost on purpose (loss or a black hole).
    pub dropped: u64,
    /// Datagrams held back so later ones overtook them.
    pub reordered: u64,
    /// Extra copies sent.
    pub duplicated: u64,
}

/// A running relay; dropping it stops its threads.
pub struct UdpRelay {
    addr: SocketAddr,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for UdpRelay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpRelay")
            .field("addr", &self.addr)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

/// One datagram waiting for its time.
struct Pending {
    due: Instant,
    /// Breaks ties in arrival order.
    seq: u64,
    bytes: Vec<u8>,
    via: Arc<UdpSocket>,
    to: SocketAddr,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Pending) -> bool {
        (self.due, self.seq) == (other.due, other.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Pending) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pending {
    /// Reversed: `BinaryHeap` is a max-heap and the earliest datagram goes first.
    fn cmp(&self, other: &Pending) -> std::cmp::Ordering {
        (other.due, other.seq).cmp(&(self.due, self.seq))
    }
}

struct Control {
    shape: LinkShape,
    /// A black hole per direction, indexed by `Direction as usize`.
    black_holes: [bool; 2],
    rng: fastrand::Rng,
    /// Where the clients' datagrams go (and the only address answers are taken from).
    server: SocketAddr,
    queue: BinaryHeap<Pending>,
    seq: u64,
}

struct Shared {
    control: Mutex<Control>,
    wake: Condvar,
    stop: AtomicBool,
    forwarded: AtomicU64,
    dropped: AtomicU64,
    reordered: AtomicU64,
    duplicated: AtomicU64,
}

impl Shared {
    fn control(&self) -> MutexGuard<'_, Control> {
        self.control.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `bytes` for sending through `via` to `to` (`None`: the server) as the link
    /// shape says.
    fn schedule(
        &self,
        direction: Direction,
        bytes: &[u8],
        via: &Arc<UdpSocket>,
        to: Option<SocketAddr>,
    ) {
        let mut control = self.control();
        let to = to.unwrap_or(control.server);
        let holed = control.black_holes[direction as usize];
        let shape = control.shape;
        if holed || control.rng.f64() < shape.loss {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let mut due = Instant::now() + shape.delay;
        if control.rng.f64() < shape.reorder {
            due += shape.reorder_by;
            self.reordered.fetch_add(1, Ordering::Relaxed);
        }
        let copies = if control.rng.f64() < shape.duplicate {
            self.duplicated.fetch_add(1, Ordering::Relaxed);
            2
        } else {
            1
        };
        for copy in 0..copies {
            control.seq += 1;
            let seq = control.seq;
            control.queue.push(Pending {
                due: due + Duration::from_micros(copy * 100),
                seq,
                bytes: bytes.to_vec(),
                via: Arc::clone(via),
                to,
            });
        }
        drop(control);
        self.wake.notify_one();
    }

    /// Sends each queued datagram when it is due, until stopped.
    fn run_scheduler(&self) {
        let mut control = self.control();
        while !self.stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            match control.queue.peek().map(|p| p.due) {
                Some(due) if due <= now => {
                    if let Some(p) = control.queue.pop() {
                        // A send error (the client went away) loses the datagram, as a network would.
                        let _ = p.via.send_to(&p.bytes, p.to);
                        self.forwarded.fetch_add(1, Ordering::Relaxed);
                    }
                }
                next => {
                    let wait = next.map_or(POLL, |due| (due - now).min(POLL));
                    control = self
                        .wake
                        .wait_timeout(control, wait)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
    }
}

fn io_error(what: &str, source: std::io::Error) -> TestkitError {
    TestkitError::Spawn {
        program: format!("udp relay ({what})"),
        source,
    }
}

impl UdpRelay {
    /// Starts a relay on 127.0.0.1 (a free port) in front of `server`, shaping the link
    /// as `shape` says with randomness from `seed`.
    pub fn start(
        server: SocketAddr,
        shape: LinkShape,
        seed: u64,
    ) -> Result<UdpRelay, TestkitError> {
        let front = UdpSocket::bind("127.0.0.1:0").map_err(|e| io_error("bind", e))?;
        front
            .set_read_timeout(Some(POLL))
            .map_err(|e| io_error("timeout", e))?;
        let addr = front.local_addr().map_err(|e| io_error("address", e))?;
        let front = Arc::new(front);
        let shared = Arc::new(Shared {
            control: Mutex::new(Control {
                shape,
                black_holes: [false; 2],
                rng: fastrand::Rng::with_seed(seed),
                server,
                queue: BinaryHeap::new(),
                seq: 0,
            }),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
            forwarded: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            reordered: AtomicU64::new(0),
            duplicated: AtomicU64::new(0),
        });
        let scheduler = {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || shared.run_scheduler())
        };
        let listener = {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || relay_from_clients(&shared, &front))
        };
        Ok(UdpRelay {
            addr,
            shared,
            threads: vec![scheduler, listener],
        })
    }

    /// The address clients send to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Changes the link's shape for datagrams that arrive from now on.
    pub fn set_shape(&self, shape: LinkShape) {
        self.shared.control().shape = shape;
    }

    /// Sends the clients' datagrams to `server` from now on, and takes answers only from it
    /// (a server that crashed and came back elsewhere behind the same address).
    pub fn retarget(&self, server: SocketAddr) {
        self.shared.control().server = server;
    }

    /// Drops every datagram going `direction` while `on` (a link that went dark one way).
    pub fn black_hole(&self, direction: Direction, on: bool) {
        self.shared.control().black_holes[direction as usize] = on;
    }

    /// What the relay did so far.
    pub fn stats(&self) -> RelayStats {
        let get = |n: &AtomicU64| n.load(Ordering::Relaxed);
        RelayStats {
            forwarded: get(&self.shared.forwarded),
            dropped: get(&self.shared.dropped),
            reordered: get(&self.shared.reordered),
            duplicated: get(&self.shared.duplicated),
        }
    }
}

impl Drop for UdpRelay {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.shared.wake.notify_all();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// Reads the clients' datagrams and queues them for the server, opening one upstream
/// socket (and a thread reading the server's answers on it) per client address.
fn relay_from_clients(shared: &Arc<Shared>, front: &Arc<UdpSocket>) {
    let mut upstreams: HashMap<SocketAddr, Arc<UdpSocket>> = HashMap::new();
    let mut readers = Vec::new();
    let mut buf = vec![0u8; MAX_DATAGRAM];
    while !shared.stop.load(Ordering::Relaxed) {
        let Ok((len, client)) = front.recv_from(&mut buf) else {
            continue;
        };
        let upstream = match upstreams.get(&client) {
            Some(socket) => Arc::clone(socket),
            None => {
                let Ok(socket) = upstream_socket() else {
                    continue;
                };
                let socket = Arc::new(socket);
                upstreams.insert(client, Arc::clone(&socket));
                let (shared, front, from) =
                    (Arc::clone(shared), Arc::clone(front), Arc::clone(&socket));
                readers.push(std::thread::spawn(move || {
                    relay_from_server(&shared, &from, &front, client)
                }));
                socket
            }
        };
        shared.schedule(Direction::ToServer, &buf[..len], &upstream, None);
    }
    for reader in readers {
        let _ = reader.join();
    }
}

fn upstream_socket() -> std::io::Result<UdpSocket> {
    let socket = UdpSocket::bind("127.0.0.1:0")?;
    socket.set_read_timeout(Some(POLL))?;
    Ok(socket)
}

/// Reads the server's answers to one client and queues them for it.
fn relay_from_server(
    shared: &Shared,
    from: &UdpSocket,
    front: &Arc<UdpSocket>,
    client: SocketAddr,
) {
    let mut buf = vec![0u8; MAX_DATAGRAM];
    while !shared.stop.load(Ordering::Relaxed) {
        if let Ok((len, sender)) = from.recv_from(&mut buf)
            && sender == shared.control().server
        {
            shared.schedule(Direction::ToClient, &buf[..len], front, Some(client));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An echo server on 127.0.0.1 and a client socket, both with a read timeout.
    fn echo() -> (SocketAddr, UdpSocket, JoinHandle<()>) {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        server
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let addr = server.local_addr().unwrap();
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            while let Ok((len, from)) = server.recv_from(&mut buf) {
                if &buf[..len] == b"stop" {
                    break;
                }
                server.send_to(&buf[..len], from).unwrap();
            }
        });
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        (addr, client, thread)
    }

    fn received(client: &UdpSocket) -> Vec<Vec<u8>> {
        let mut got = Vec::new();
        let mut buf = [0u8; 2048];
        while let Ok(len) = client.recv(&mut buf) {
            got.push(buf[..len].to_vec());
        }
        got
    }

    #[test]
    fn a_clean_relay_forwards_both_ways_in_order() {
        let (server, client, echo) = echo();
        let relay = UdpRelay::start(server, LinkShape::CLEAN, 1).unwrap();
        for i in 0..20u8 {
            client.send_to(&[i], relay.addr()).unwrap();
        }
        let got = received(&client);
        assert_eq!(got, (0..20u8).map(|i| vec![i]).collect::<Vec<_>>());
        assert_eq!(relay.stats().forwarded, 40);
        client.send_to(b"stop", server).unwrap();
        echo.join().unwrap();
    }

    #[test]
    fn loss_duplication_and_reordering_happen_at_their_rates() {
        let (server, client, echo) = echo();
        let shape = LinkShape {
            delay: Duration::from_millis(1),
            loss: 0.2,
            reorder: 0.2,
            reorder_by: Duration::from_millis(5),
            duplicate: 0.2,
        };
        let relay = UdpRelay::start(server, shape, 7).unwrap();
        for i in 0..200u8 {
            client.send_to(&[i], relay.addr()).unwrap();
            std::thread::sleep(Duration::from_micros(200));
        }
        let got = received(&client);
        let stats = relay.stats();
        // 400 datagrams pass the relay (200 each way, fewer after losses on the way out).
        assert!((40..=120).contains(&stats.dropped), "{stats:?}");
        assert!(stats.duplicated > 20 && stats.reordered > 20, "{stats:?}");
        assert!(got.len() > 100 && got.len() < 260, "{}", got.len());
        assert!(got.windows(2).any(|w| w[0] > w[1]), "some overtook others");
        client.send_to(b"stop", server).unwrap();
        echo.join().unwrap();
    }

    #[test]
    fn a_black_hole_drops_one_direction_until_lifted() {
        let (server, client, echo) = echo();
        let relay = UdpRelay::start(server, LinkShape::CLEAN, 3).unwrap();
        relay.black_hole(Direction::ToClient, true);
        client.send_to(b"a", relay.addr()).unwrap();
        assert!(received(&client).is_empty());
        relay.black_hole(Direction::ToClient, false);
        client.send_to(b"b", relay.addr()).unwrap();
        assert_eq!(received(&client), vec![b"b".to_vec()]);
        client.send_to(b"stop", server).unwrap();
        echo.join().unwrap();
    }

    #[test]
    fn the_delay_applies_each_way() {
        let (server, client, echo) = echo();
        let shape = LinkShape {
            delay: Duration::from_millis(40),
            ..LinkShape::CLEAN
        };
        let relay = UdpRelay::start(server, shape, 5).unwrap();
        let sent = Instant::now();
        client.send_to(b"x", relay.addr()).unwrap();
        let mut buf = [0u8; 8];
        client.recv(&mut buf).unwrap();
        // A lower bound only: the relay never delivers early.
        assert!(
            sent.elapsed() >= Duration::from_millis(80),
            "{:?}",
            sent.elapsed()
        );
        client.send_to(b"stop", server).unwrap();
        echo.join().unwrap();
    }
}
