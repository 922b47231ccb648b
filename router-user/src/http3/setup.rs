//! What the HTTP/3 listener needs at start: its UDP sockets, bound on the HTTPS port's number with the
//! families of ROUTER_IP_V4_V6_MODE, and a quinn endpoint on each with the QUIC server configuration (the
//! :443 TLS policy with ALPN `h3`, certificates chosen per ClientHello; transport limits from the client
//! timeouts and ROUTER_HTTP3_MAX_STREAMS). Any error stops the start with what failed named.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use quinn::crypto::rustls::QuicServerConfig;
use quinn::{IdleTimeout, TransportConfig, VarInt};
use socket2::{Domain, Protocol, Socket, Type};

use super::cert_resolver::SniResolver;
use crate::https::HttpsContext;
use crate::listen::{listen_addresses, IpMode};

#[derive(Debug, thiserror::Error)]
pub enum Http3Error {
    #[error("cannot bind UDP {addr} (HTTP/3): {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    /// The TLS policy leaves QUIC nothing (TLS 1.2 only, or no TLS_AES_128_GCM_SHA256 for its initial keys).
    #[error("HTTP/3: the TLS settings do not allow QUIC (it needs TLS 1.3 and TLS_AES_128_GCM_SHA256): {0}")]
    Tls(String),
    #[error("HTTP/3: ROUTER_DEFAULT_CLIENT_TIMEOUT is too long for a QUIC idle timeout: {0}")]
    IdleTimeout(String),
    #[error("HTTP/3: cannot start the QUIC endpoint on {addr}: {source}")]
    Endpoint { addr: SocketAddr, source: std::io::Error },
}

/// The UDP sockets of the HTTPS port `addr` (its port already the bound TCP port), one per family as the TCP
/// listeners have them. `shared` (ROUTER_HANDOVER_SOCKET): SO_REUSEPORT, so that the next router can bind the
/// port while this one drains (UDP sockets are not handed over; see docs/http3.md).
pub fn bind_udp(addr: SocketAddr, mode: IpMode, shared: bool) -> Result<Vec<UdpSocket>, Http3Error> {
    listen_addresses(addr, mode)
        .into_iter()
        .map(|each| bind_one(each, shared).map_err(|source| Http3Error::Bind { addr: each, source }))
        .collect()
}

fn bind_one(addr: SocketAddr, shared: bool) -> std::io::Result<UdpSocket> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if addr.is_ipv6() && addr.ip().is_unspecified() {
        socket.set_only_v6(true)?;
    }
    if shared {
        socket.set_reuse_port(true)?;
    }
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    Ok(socket.into())
}

/// The quinn endpoints serving HTTP/3, one per UDP socket.
pub struct Http3Endpoints {
    pub endpoints: Vec<quinn::Endpoint>,
}

impl Http3Endpoints {
    /// Starts an endpoint on each socket with the configuration `context` (the :443 one) gives; `max_streams`
    /// is ROUTER_HTTP3_MAX_STREAMS.
    pub fn start(
        sockets: Vec<UdpSocket>,
        context: &Arc<HttpsContext>,
        max_streams: u32,
    ) -> Result<Http3Endpoints, Http3Error> {
        let tls = context.configs.for_quic(Arc::new(SniResolver::new(context.clone())));
        let crypto = QuicServerConfig::try_from(tls).map_err(|error| Http3Error::Tls(error.to_string()))?;
        let mut server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        server.transport_config(Arc::new(transport(context.timeouts.client, max_streams)?));
        let endpoints = sockets
            .into_iter()
            .map(|socket| {
                let addr = socket.local_addr().map_err(|source| Http3Error::Bind { addr: unspecified(), source })?;
                let runtime = Arc::new(quinn::TokioRuntime);
                quinn::Endpoint::new(quinn::EndpointConfig::default(), Some(server.clone()), socket, runtime)
                    .map_err(|source| Http3Error::Endpoint { addr, source })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Http3Endpoints { endpoints })
    }

    /// The address of the first endpoint (its port is every endpoint's).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.endpoints.first().and_then(|endpoint| endpoint.local_addr().ok())
    }
}

/// QUIC transport limits: a client silent for the client timeout (ROUTER_DEFAULT_CLIENT_TIMEOUT) is gone,
/// as a TCP client that sends and reads nothing is; `max_streams` requests at once; no datagrams (HTTP/3
/// does not use them without extensions).
fn transport(idle: Duration, max_streams: u32) -> Result<TransportConfig, Http3Error> {
    let mut transport = TransportConfig::default();
    let idle = IdleTimeout::try_from(idle).map_err(|error| Http3Error::IdleTimeout(error.to_string()))?;
    transport.max_idle_timeout(Some(idle));
    transport.max_concurrent_bidi_streams(VarInt::from_u32(max_streams));
    // HTTP/3's control stream and QPACK's encoder and decoder streams, with room for a client's extensions.
    transport.max_concurrent_uni_streams(VarInt::from_u32(8));
    transport.datagram_receive_buffer_size(None);
    Ok(transport)
}

fn unspecified() -> SocketAddr {
    SocketAddr::from(([0, 0, 0, 0], 0))
}
