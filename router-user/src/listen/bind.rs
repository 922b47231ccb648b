//! Binding the client listeners for ROUTER_IP_V4_V6_MODE, as OpenShift's template writes HAProxy's `bind`
//! lines: `v4` (the default) listens on IPv4 (`bind :80`), `v6` on IPv6 only (`bind :::80 v6only`), `v4v6` on
//! both, as two sockets on the same port. The mode decides only for the wildcard address; a specific
//! ROUTER_BIND_IP is bound as it is. Which pod addresses are used does not depend on the mode (OpenShift
//! writes every ready endpoint of both families).

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::TcpListener;

/// ROUTER_IP_V4_V6_MODE.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum IpMode {
    #[default]
    V4,
    V6,
    V4v6,
}

/// The addresses a listener for `addr` binds in `mode`, in binding order.
pub fn listen_addresses(addr: SocketAddr, mode: IpMode) -> Vec<SocketAddr> {
    if !addr.ip().is_unspecified() {
        return vec![addr];
    }
    let v4 = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), addr.port());
    let v6 = SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), addr.port());
    match mode {
        IpMode::V4 => vec![v4],
        IpMode::V6 => vec![v6],
        IpMode::V4v6 => vec![v4, v6],
    }
}

/// Binds every address of [`listen_addresses`]; with port 0 the first socket's port is used for the others,
/// so both families answer on one port. An IPv6 wildcard socket takes IPv6 only. `backlog` is the listen
/// backlog (the kernel caps it at net.core.somaxconn).
pub fn bind_listeners(
    addr: SocketAddr,
    mode: IpMode,
    backlog: u32,
) -> Result<Vec<TcpListener>, (SocketAddr, io::Error)> {
    let mut listeners = Vec::new();
    let mut port = addr.port();
    for mut each in listen_addresses(addr, mode) {
        each.set_port(port);
        let listener = bind_one(each, backlog).map_err(|error| (each, error))?;
        port = listener.local_addr().map_or(port, |bound| bound.port());
        listeners.push(listener);
    }
    Ok(listeners)
}

fn bind_one(addr: SocketAddr, backlog: u32) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if addr.is_ipv6() && addr.ip().is_unspecified() {
        socket.set_only_v6(true)?;
    }
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(i32::try_from(backlog).unwrap_or(i32::MAX))?;
    TcpListener::from_std(socket.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_picks_the_families_of_the_wildcard_only() {
        let any: SocketAddr = "0.0.0.0:80".parse().expect("addr");
        let text = |mode| listen_addresses(any, mode).iter().map(ToString::to_string).collect::<Vec<_>>();
        assert_eq!(text(IpMode::V4), ["0.0.0.0:80"]);
        assert_eq!(text(IpMode::V6), ["[::]:80"]);
        assert_eq!(text(IpMode::V4v6), ["0.0.0.0:80", "[::]:80"]);
        let specific: SocketAddr = "127.0.0.1:80".parse().expect("addr");
        assert_eq!(listen_addresses(specific, IpMode::V4v6), [specific]);
    }

    #[tokio::test]
    async fn both_families_listen_on_one_port_and_v6_takes_no_ipv4() {
        let listeners = bind_listeners("0.0.0.0:0".parse().expect("addr"), IpMode::V4v6, 1024).expect("bind both");
        let ports: Vec<u16> = listeners.iter().map(|l| l.local_addr().expect("addr").port()).collect();
        assert_eq!(ports.len(), 2);
        assert_eq!(ports[0], ports[1]);
        let only_v6 = bind_listeners("[::]:0".parse().expect("addr"), IpMode::V6, 1024).expect("bind v6");
        let port = only_v6[0].local_addr().expect("addr").port();
        let v4 = tokio::net::TcpStream::connect(("127.0.0.1", port)).await;
        assert!(v4.is_err(), "a v6only socket takes no IPv4 connection");
        tokio::net::TcpStream::connect(("::1", port)).await.expect("IPv6 connects");
    }
}
