//! What one access-log line says: an HTTP request (httplog) or a passthrough connection (tcplog), filled on the
//! request path and rendered by the writer task.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use super::connections::{FE_SNI, PUBLIC, PUBLIC_SSL};
use std::time::SystemTime;

/// Milliseconds, or -1 when the phase did not happen (HAProxy's convention).
pub type Millis = i64;

pub const NOT_REACHED: Millis = -1;

/// HAProxy's timers (`%Th %Ti %TR %Tw %Tc %Tr %Ta %Tt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timers {
    pub handshake: Millis,
    pub idle: Millis,
    /// `%TR`: from the request's first byte to its complete head.
    pub request: Millis,
    pub queue: Millis,
    pub connect: Millis,
    /// `%Tr`: from the request sent to the pod to its response head.
    pub response: Millis,
    /// `%Ta`: from the request's first byte to the end of its response.
    pub active: Millis,
    /// `%Tt`: the whole, idle and handshake included.
    pub total: Millis,
}

impl Default for Timers {
    fn default() -> Self {
        Timers {
            handshake: 0,
            idle: 0,
            request: 0,
            queue: NOT_REACHED,
            connect: NOT_REACHED,
            response: NOT_REACHED,
            active: 0,
            total: 0,
        }
    }
}

/// The four characters of `%tsc` (`%ts` is the first two): who ended the session, in which phase, and the
/// sticky cookie's state on the request and on the response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Termination(pub [u8; 4]);

impl Termination {
    pub const NORMAL: Termination = Termination(*b"----");

    pub fn new(cause: u8, phase: u8) -> Termination {
        Termination([cause, phase, b'-', b'-'])
    }

    pub fn with_cookie(mut self, request: u8, response: u8) -> Termination {
        self.0[2] = request;
        self.0[3] = response;
        self
    }
}

/// `%ac/%fc/%bc/%sc/%rc %sq/%bq`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub active: u64,
    pub frontend: u64,
    pub backend: u64,
    pub server: u64,
    pub retries: u32,
    pub server_queue: u64,
    pub backend_queue: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestLine {
    pub method: String,
    pub uri: String,
    /// `HTTP/1.1`, `HTTP/2.0` ...
    pub version: &'static str,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    pub accepted_at: SystemTime,
    /// When the request's first byte came (for a tcplog line: the accept).
    pub requested_at: SystemTime,
    pub client: SocketAddr,
    pub frontend_addr: SocketAddr,
    /// `public`, `fe_sni`, `fe_no_sni`, `public_ssl`.
    pub frontend: &'static str,
    /// The frontend decrypted TLS (`%ft` adds `~`).
    pub tls: bool,
    /// The backend's HAProxy name; the frontend's own name when no backend took the request.
    pub backend: Arc<str>,
    /// The pod that answered: its OpenShift server id and address.
    pub server: Option<(Arc<str>, SocketAddr)>,
    pub timers: Timers,
    /// The status sent to the client; `None` when none was (`-1`).
    pub status: Option<u16>,
    /// `%B`: bytes sent to the client, response head included.
    pub bytes_read: u64,
    /// `%U`: bytes received from the client.
    pub bytes_uploaded: u64,
    pub request_cookie: Option<String>,
    pub response_cookie: Option<String>,
    pub termination: Termination,
    pub counts: Counts,
    /// `None`: no request was read (`<BADREQ>`), or a tcplog line.
    pub request: Option<RequestLine>,
    /// Captured request headers, one per ROUTER_CAPTURE_HTTP_REQUEST_HEADERS entry.
    pub request_headers: Vec<Option<String>>,
    pub response_headers: Vec<Option<String>>,
    pub unique_id: Option<String>,
    /// `%rt`: the router's request (and passthrough connection) counter.
    pub request_counter: u64,
}

impl LogRecord {
    /// A record with nothing known but the connection.
    pub fn new(frontend: &'static str, tls: bool, client: SocketAddr, frontend_addr: SocketAddr) -> LogRecord {
        LogRecord::at(frontend, tls, client, frontend_addr, SystemTime::now())
    }

    /// As [`LogRecord::new`], accepted and requested at `now` (a clock read the caller already made).
    pub fn at(
        frontend: &'static str,
        tls: bool,
        client: SocketAddr,
        frontend_addr: SocketAddr,
        now: SystemTime,
    ) -> LogRecord {
        LogRecord {
            accepted_at: now,
            requested_at: now,
            client,
            frontend_addr,
            frontend,
            tls,
            backend: frontend_name(frontend),
            server: None,
            timers: Timers::default(),
            status: None,
            bytes_read: 0,
            bytes_uploaded: 0,
            request_cookie: None,
            response_cookie: None,
            termination: Termination::NORMAL,
            counts: Counts::default(),
            request: None,
            request_headers: Vec::new(),
            response_headers: Vec::new(),
            unique_id: None,
            request_counter: 0,
        }
    }
}

/// `frontend` as a backend name (a record's backend until one takes the request), shared rather than
/// allocated per record for the router's own frontend names.
fn frontend_name(frontend: &'static str) -> Arc<str> {
    static NAMES: OnceLock<[Arc<str>; 4]> = OnceLock::new();
    let names = NAMES.get_or_init(|| [PUBLIC, FE_SNI, PUBLIC_SSL, "fe_no_sni"].map(Arc::from));
    names.iter().find(|name| ***name == *frontend).cloned().unwrap_or_else(|| Arc::from(frontend))
}
