//! The router's socket R for a connection being steered: repair mode, its numbers, and the reset
//! that ends a lost flow.

use std::io;
use std::os::fd::AsFd;

use tokio::net::TcpStream;

use super::entries::RouterSide;
use super::setup::RouterLeg;
use super::sys;

impl RouterLeg for TcpStream {
    fn repair_on(&self) -> io::Result<()> {
        sys::repair_on(self.as_fd())
    }

    fn repair_off(&self) -> io::Result<()> {
        sys::repair_off(self.as_fd())
    }

    fn side(&self) -> io::Result<RouterSide> {
        let fd = self.as_fd();
        let (send_next, receive_next) = sys::queue_sequences(fd)?;
        let ts_now = sys::timestamp_now(fd)?;
        let (wscale_client, wscale_router) = sys::window_scales(fd)?;
        Ok(RouterSide { send_next, receive_next, ts_now, wscale_router, wscale_client })
    }
}

/// Closes R with a RST (the flow is lost; C must not wait).
pub fn reset(stream: TcpStream) {
    let _ = sys::repair_off(stream.as_fd());
    let _ = crate::relay::sys::zero_linger(stream.as_fd());
    drop(stream);
}
