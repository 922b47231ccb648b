//! Upgrading the router without a gap (ROUTER_HANDOVER_SOCKET): a new router process started beside the
//! running one takes over its listening sockets instead of binding its own, and the old one drains.
//!
//! 1. The new router connects to the unix socket the running one offers at the path ([`offer`]) and gets
//!    its listeners (admin, :80, :443) as descriptors (`SCM_RIGHTS`, [`fds`]) with a text naming each
//!    ([`message`]).
//! 2. It serves the admin port on them at once, and :80 and :443 once its first complete table is live
//!    (both processes accept from the same queues meanwhile: a connection goes to one or the other,
//!    never to an empty table).
//! 3. It confirms ([`take::Inherited::confirm`]); the old router frees the socket path, stops accepting,
//!    and drains: requests in flight finish, an HTTP/1.1 connection's next response says
//!    `Connection: close` (one idle for a second is closed), HTTP/2 connections get GOAWAY, tunnels
//!    (WebSocket, passthrough) run until they end or ROUTER_HARD_STOP_AFTER. The new router then offers
//!    the listeners at the same path for the next upgrade.
//!
//! Passing the descriptors, rather than both processes binding with SO_REUSEPORT, keeps one accept queue per
//! listener: with SO_REUSEPORT each socket has its own queue, and the connections waiting in the old one's
//! when it closes are reset. A new router that fails before confirming leaves the old one serving.

pub mod fds;
pub mod message;
pub mod offer;
pub mod take;

pub use message::Role;
pub use offer::{offer, Offered, Offering};
pub use take::{take, Inherited, TakeError};

#[cfg(test)]
mod tests {
    use std::net::{SocketAddr, TcpListener};
    use std::os::fd::AsFd as _;

    use super::message::Listener;
    use super::*;

    fn offered(role: Role, listener: &TcpListener) -> Offered {
        let addr = listener.local_addr().expect("addr");
        Offered { listener: Listener { role, addr }, fd: listener.as_fd().try_clone_to_owned().expect("dup") }
    }

    #[tokio::test]
    async fn a_taker_gets_each_listener_by_role_and_the_offer_ends_on_its_confirmation() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("handover.sock");
        let http = TcpListener::bind("127.0.0.1:0").expect("bind");
        let admin = TcpListener::bind("127.0.0.1:0").expect("bind");
        let (http_addr, admin_addr) = (http.local_addr().expect("addr"), admin.local_addr().expect("addr"));
        let offering = offer(&path, vec![offered(Role::Admin, &admin), offered(Role::Http, &http)]).expect("offer");

        let mut inherited = take(&path).expect("take").expect("a router offers");
        assert_eq!(inherited.from_pid(), std::process::id());
        let any = |port| SocketAddr::from(([127, 0, 0, 1], port));
        assert!(inherited.take_role(Role::Http, any(1)).is_none(), "another port is not this listener");
        let got = inherited.take_role(Role::Http, any(http_addr.port())).expect("http");
        assert_eq!(got.iter().map(|l| l.local_addr().expect("addr")).collect::<Vec<_>>(), [http_addr]);
        let got = inherited.take_role(Role::Admin, any(0)).expect("admin, any port");
        assert_eq!(got[0].local_addr().expect("addr"), admin_addr);
        assert!(inherited.take_role(Role::Https, any(0)).is_none());
        inherited.confirm().expect("released");
        offering.taken.await.expect("the offer reports the hand-over");
        assert!(!path.exists(), "the path is free for the taker's own offer");
    }

    #[tokio::test]
    async fn a_taker_that_goes_away_before_confirming_leaves_the_offer_standing() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("handover.sock");
        let http = TcpListener::bind("127.0.0.1:0").expect("bind");
        let mut offering = offer(&path, vec![offered(Role::Http, &http)]).expect("offer");
        drop(take(&path).expect("take").expect("offered"));
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert!(offering.taken.try_recv().is_err(), "not handed over");
        let second = take(&path).expect("take again").expect("still offered");
        second.confirm().expect("released");
        offering.taken.await.expect("handed over to the second taker");
    }

    #[tokio::test]
    async fn a_withdrawn_offer_closes_its_copies_of_the_listeners_and_frees_the_path() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("handover.sock");
        let http = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = http.local_addr().expect("addr");
        let offering = offer(&path, vec![offered(Role::Http, &http)]).expect("offer");
        drop(http);
        assert!(std::net::TcpStream::connect(addr).is_ok(), "the offer's copy keeps the socket listening");
        offering.withdraw();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while path.exists() || std::net::TcpStream::connect(addr).is_ok() {
            assert!(std::time::Instant::now() < deadline, "still offered or listening after the withdrawal");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    #[test]
    fn no_router_offering_is_none_even_with_a_stale_socket_file() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("handover.sock");
        assert!(take(&path).expect("no file").is_none());
        drop(std::os::unix::net::UnixListener::bind(&path).expect("bind"));
        assert!(path.exists(), "a socket file nobody listens on");
        assert!(take(&path).expect("stale file").is_none());
    }
}
