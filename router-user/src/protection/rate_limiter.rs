//! Per-client-address limits of one route (`rate-limit-connections`): concurrent connections, new
//! connections over 3 s and HTTP requests over 10 s. Like HAProxy's stick table, the count includes the
//! connection or request being judged and a client is refused when a count reaches the limit. Memory is
//! bounded: at most 100,000 client entries, each forgotten 30 s after its last activity.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::policy::RateLimits;

const CONNECTION_WINDOW: Duration = Duration::from_secs(3);
const REQUEST_WINDOW: Duration = Duration::from_secs(10);
const MAX_CLIENTS: usize = 100_000;
const EXPIRE_AFTER: Duration = Duration::from_secs(30);

/// Which limit refused a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    ConcurrentConnections,
    ConnectionRate,
    RequestRate,
}

impl Refused {
    /// The limit's name in the annotation (and the metric label).
    pub fn reason(self) -> &'static str {
        match self {
            Refused::ConcurrentConnections => "concurrent-tcp",
            Refused::ConnectionRate => "rate-tcp",
            Refused::RequestRate => "rate-http",
        }
    }
}

#[derive(Debug)]
pub struct RateLimiter {
    limits: RateLimits,
    clients: Arc<Mutex<HashMap<IpAddr, Client>>>,
}

#[derive(Debug)]
struct Client {
    connections: u32,
    /// Start times of recent connections (at most `rate_tcp` kept).
    connected: VecDeque<Instant>,
    /// Times of recent requests (at most `rate_http` kept).
    requested: VecDeque<Instant>,
    last_seen: Instant,
}

/// A client connection counted against the route; dropping it ends the count.
#[derive(Debug)]
pub struct ConnectionTicket {
    clients: Arc<Mutex<HashMap<IpAddr, Client>>>,
    ip: IpAddr,
}

impl RateLimiter {
    pub fn new(limits: RateLimits) -> Self {
        Self { limits, clients: Arc::new(Mutex::new(HashMap::new())) }
    }

    /// Identifies this limiter among a connection's tickets.
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.clients) as usize
    }

    /// A client connection starts using this route.
    pub fn connect(&self, ip: IpAddr, now: Instant) -> Result<ConnectionTicket, Refused> {
        let mut clients = self.lock();
        let client = entry(&mut clients, ip, now);
        client.connections += 1;
        prune(&mut client.connected, now, CONNECTION_WINDOW);
        client.connected.push_back(now);
        bound(&mut client.connected, self.limits.rate_tcp);
        let refused = if self.limits.concurrent_tcp.is_some_and(|max| client.connections >= max) {
            Some(Refused::ConcurrentConnections)
        } else if self.limits.rate_tcp.is_some_and(|max| client.connected.len() as u32 >= max) {
            Some(Refused::ConnectionRate)
        } else {
            None
        };
        match refused {
            Some(refused) => {
                // The refused connection closes at once: it no longer counts as concurrent.
                client.connections -= 1;
                Err(refused)
            }
            None => Ok(ConnectionTicket { clients: self.clients.clone(), ip }),
        }
    }

    /// A request from `ip` on a connection already counted: checks every limit again.
    pub fn request(&self, ip: IpAddr, now: Instant) -> Result<(), Refused> {
        let mut clients = self.lock();
        let client = entry(&mut clients, ip, now);
        prune(&mut client.requested, now, REQUEST_WINDOW);
        prune(&mut client.connected, now, CONNECTION_WINDOW);
        client.requested.push_back(now);
        bound(&mut client.requested, self.limits.rate_http);
        if self.limits.concurrent_tcp.is_some_and(|max| client.connections >= max) {
            return Err(Refused::ConcurrentConnections);
        }
        if self.limits.rate_tcp.is_some_and(|max| client.connected.len() as u32 >= max) {
            return Err(Refused::ConnectionRate);
        }
        if self.limits.rate_http.is_some_and(|max| client.requested.len() as u32 >= max) {
            return Err(Refused::RequestRate);
        }
        Ok(())
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<IpAddr, Client>> {
        self.clients.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    #[cfg(test)]
    fn tracked(&self) -> usize {
        self.lock().len()
    }
}

impl Drop for ConnectionTicket {
    fn drop(&mut self) {
        let mut clients = self.clients.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(client) = clients.get_mut(&self.ip) {
            client.connections = client.connections.saturating_sub(1);
        }
    }
}

fn entry(clients: &mut HashMap<IpAddr, Client>, ip: IpAddr, now: Instant) -> &mut Client {
    if clients.len() >= MAX_CLIENTS && !clients.contains_key(&ip) {
        clients.retain(|_, c| c.connections > 0 || now.duration_since(c.last_seen) < EXPIRE_AFTER);
        if clients.len() >= MAX_CLIENTS {
            // Still full of live clients: forget the least recently seen idle one.
            let oldest =
                clients.iter().filter(|(_, c)| c.connections == 0).min_by_key(|(_, c)| c.last_seen).map(|(ip, _)| *ip);
            if let Some(oldest) = oldest {
                clients.remove(&oldest);
            }
        }
    }
    let client = clients.entry(ip).or_insert_with(|| Client {
        connections: 0,
        connected: VecDeque::new(),
        requested: VecDeque::new(),
        last_seen: now,
    });
    client.last_seen = now;
    client
}

fn prune(times: &mut VecDeque<Instant>, now: Instant, window: Duration) {
    while times.front().is_some_and(|t| now.duration_since(*t) >= window) {
        times.pop_front();
    }
}

/// Only the newest `limit` events matter for a `>= limit` check.
fn bound(times: &mut VecDeque<Instant>, limit: Option<u32>) {
    let keep = limit.map_or(1, |l| l.max(1) as usize);
    while times.len() > keep {
        times.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLIENT: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));

    #[test]
    fn concurrent_connections_count_the_one_being_judged() {
        let limiter = RateLimiter::new(RateLimits { concurrent_tcp: Some(3), ..Default::default() });
        let now = Instant::now();
        let first = limiter.connect(CLIENT, now).expect("1st");
        let _second = limiter.connect(CLIENT, now).expect("2nd");
        assert_eq!(limiter.connect(CLIENT, now).err(), Some(Refused::ConcurrentConnections));
        drop(first);
        assert!(limiter.connect(CLIENT, now).is_ok(), "a closed connection frees its place");
    }

    #[test]
    fn connection_and_request_rates_use_sliding_windows() {
        let limiter = RateLimiter::new(RateLimits { rate_tcp: Some(2), rate_http: Some(3), ..Default::default() });
        let start = Instant::now();
        let ticket = limiter.connect(CLIENT, start).expect("first connection");
        drop(ticket);
        assert_eq!(limiter.connect(CLIENT, start).err(), Some(Refused::ConnectionRate));
        let later = start + Duration::from_secs(4);
        let _ticket = limiter.connect(CLIENT, later).expect("window passed");
        assert!(limiter.request(CLIENT, later).is_ok());
        assert!(limiter.request(CLIENT, later).is_ok());
        assert_eq!(limiter.request(CLIENT, later).err(), Some(Refused::RequestRate));
        assert!(limiter.request(CLIENT, later + Duration::from_secs(11)).is_ok());
    }

    #[test]
    fn memory_stays_bounded() {
        let limiter = RateLimiter::new(RateLimits { rate_http: Some(100), ..Default::default() });
        let now = Instant::now();
        for i in 0..(MAX_CLIENTS as u32 + 50) {
            let ip = IpAddr::from(i.to_be_bytes());
            let _ = limiter.request(ip, now);
        }
        assert!(limiter.tracked() <= MAX_CLIENTS);
    }
}
