//! Passthrough flows steered in the kernel when the client reaches the router through the router Service's
//! nodePort (root only), as a cloud load balancer sends its traffic to `externalTrafficPolicy: Local`
//! nodes: `xdp_front`'s nodePort stage rewrites each flow's first packets to the router's :443, the router
//! steers the flow, and from then on the steering stage (which runs before the nodePort stage) translates
//! the client's packets under the address and port the client used, and `steer_ingress` the pod's back to
//! them. The rows of the :443 matrix (`xdp_common::steer_rows`: a 32 MiB download, a 16 MiB upload and a
//! three-segment ClientHello, byte-exact, nothing on the userspace relay, no fallback), for IPv4 and IPv6,
//! in skb and driver mode, with the pods' interfaces at the kernel's default offloads.

mod xdp_common;

use xdp_common::steer_ends::Front;
use xdp_common::steer_rows::{row_through, Path};
use xdp_common::steer_topology::{Family, Interfaces};

const PREFIX: &str = "rstn";

#[test]
fn ipv4_through_the_node_port_in_skb_mode() {
    row_through(PREFIX, 1, "skb", Interfaces::default(), Path::Xdp, Family::V4, Front::NodePort);
}

#[test]
fn ipv4_through_the_node_port_in_driver_mode() {
    row_through(PREFIX, 2, "driver", Interfaces::default(), Path::Xdp, Family::V4, Front::NodePort);
}

#[test]
fn ipv6_through_the_node_port_in_skb_mode() {
    row_through(PREFIX, 3, "skb", Interfaces::default(), Path::Xdp, Family::V6, Front::NodePort);
}

#[test]
fn ipv6_through_the_node_port_in_driver_mode() {
    row_through(PREFIX, 4, "driver", Interfaces::default(), Path::Xdp, Family::V6, Front::NodePort);
}
