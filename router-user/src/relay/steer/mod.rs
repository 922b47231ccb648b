//! Passthrough steering, the userspace setup: a passthrough connection whose ClientHello the router
//! read is handed to the XDP datapath, which from then on moves its packets between the client and
//! the pod by itself (design notes: `docs/steering.md`; the contract of this increment:
//! the router opens leg B from a raw socket). Off unless `--xdp-steer-passthrough`.
//!
//! - [`datapath`]: the maps behind a trait (the kernel's in [`aya_maps`], a fake in tests).
//! - [`waiters`]: connections waiting for their pod's SYN-ACK, woken from `STEER_EVENTS`.
//! - [`segment`]: leg B's raw segments; [`entries`]: keys and entries; [`ports`]: Q's ports;
//!   [`reserved_ports`]: the sysctl that keeps the kernel off them.
//! - [`setup`]: the offload of one connection; [`sweep`]: removing ended and idle flows;
//!   [`adopt`]: taking over the flows a router that died left in the pinned maps;
//!   [`fallback`]: the reasons a connection stays on the userspace relay.
//! - [`leg`]: the router's socket R as the setup uses it; [`sys`]: the raw system calls.

mod adopt;
mod aya_maps;
pub mod datapath;
mod entries;
mod leg;
mod pod_interfaces;
mod ports;
mod reserved_ports;
mod segment;
mod setup;
#[cfg(test)]
mod setup_tests;
mod sweep;
mod sys;
mod waiters;

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::ops::RangeInclusive;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use router_common::nat::{FlowKey, FAMILY_IPV4, FAMILY_IPV6};
use router_common::steer::setup::SteerPortKey;
use tokio::net::TcpStream;
use tracing::{debug, info, warn};

pub use datapath::{DatapathError, SteerDatapath};
// The reasons live beside the pinned array that counts them (`xdp::steer_fallbacks`), which `router xdp status`
// reads without the relay.
pub use crate::xdp::SteerFallback as Fallback;
pub use setup::SetupTiming;

use crate::metrics::{Metrics, SteerFallbackLabels};
use crate::xdp::{RouteTo, SteerMaps};
pub use pod_interfaces::{NamedAtStart, PodInterfaces};
use ports::PortPool;
use waiters::AnswerWaiters;

/// How the sweep runs.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// Sends leg B's packets and names the node address they leave from.
pub trait SegmentSender: Send + Sync {
    /// Sends one whole IP packet (IPv4 or IPv6, as `dst`) towards `dst`.
    fn send(&self, dst: IpAddr, packet: &[u8]) -> io::Result<()>;
    /// How the kernel's routing reaches `pod`: the node address leg B leaves from (Q's address) and the
    /// interface the pod's answers come back in by.
    fn route_towards(&self, pod: IpAddr) -> io::Result<RouteTo>;
}

impl SegmentSender for sys::RawSocket {
    fn send(&self, dst: IpAddr, packet: &[u8]) -> io::Result<()> {
        sys::RawSocket::send(self, dst, packet)
    }

    fn route_towards(&self, pod: IpAddr) -> io::Result<RouteTo> {
        crate::xdp::route_to(pod)
    }
}

/// What the router was asked to steer with (`--xdp-steer-passthrough`, `--xdp-steer-ports`).
#[derive(Clone, Debug)]
pub struct SteerConfig {
    /// Q's reserved port range.
    pub ports: RangeInclusive<u16>,
    /// The router's TLS port, whose client SYNs the datapath records.
    pub https_port: u16,
    /// Connections come with a PROXY header: none can be steered.
    pub proxy_protocol: bool,
}

/// A steered flow the sweep watches.
#[derive(Clone, Copy, Debug)]
struct SteeredFlow {
    /// P -> Q: the `STEER_TO_CLIENT` entry.
    pod_key: FlowKey,
    /// C -> the address C connected to: the `STEER_TO_POD` entry.
    client_key: FlowKey,
    port: u16,
    /// The route's tunnel timeout.
    idle_limit: Duration,
}

/// Whatever the caller keeps alive for as long as the datapath carries a flow (the route's counts of the
/// connection: its pod in flight for least-connections, its concurrent-connection ticket); dropped when the
/// sweep removes the flow, or at once when the connection is not steered.
pub type FlowHold = Box<dyn Send>;

/// A flow being watched, with what its caller holds for it.
struct Watched {
    flow: SteeredFlow,
    _hold: Option<FlowHold>,
}

/// What became of a connection offered for steering.
#[derive(Debug)]
pub enum SteerOutcome {
    /// The datapath carries it; R is closed without a word to C.
    Steered,
    /// The flow was lost half-way (counted `replay_unacked`); R was reset.
    Lost,
    /// Still the router's: carry it with the userspace relay, as without steering.
    NotSteered(TcpStream),
}

/// The steering setup: the maps, leg B's raw socket, Q's ports, the flows being watched.
pub struct Steering {
    datapath: Arc<dyn SteerDatapath>,
    sender: Arc<dyn SegmentSender>,
    pod_interfaces: Arc<dyn PodInterfaces>,
    waiters: Arc<AnswerWaiters>,
    ports: Mutex<PortPool>,
    flows: Mutex<HashMap<FlowKey, Watched>>,
    metrics: Arc<Metrics>,
    timing: SetupTiming,
    proxy_protocol: bool,
    /// The `STEER_EVENTS` reader and the sweep, stopped on a hand-over ([`Steering::hand_over`]).
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Why steering could not start (the router then runs without it).
#[derive(Debug, thiserror::Error)]
pub enum SteerStartError {
    #[error("opening the raw socket for leg B: {0}")]
    RawSocket(#[source] io::Error),
    #[error("adding the port range to net.ipv4.ip_local_reserved_ports: {0}")]
    ReservedPorts(#[source] io::Error),
    #[error("recording the TLS port in STEER_PORTS: {0}")]
    Ports(#[source] DatapathError),
}

impl Steering {
    /// A setup over any datapath and sender (the kernel's, or fakes in tests).
    pub fn new(
        datapath: Arc<dyn SteerDatapath>,
        sender: Arc<dyn SegmentSender>,
        pod_interfaces: Arc<dyn PodInterfaces>,
        config: &SteerConfig,
        metrics: Arc<Metrics>,
        timing: SetupTiming,
    ) -> Steering {
        Steering {
            datapath,
            sender,
            pod_interfaces,
            waiters: Arc::new(AnswerWaiters::default()),
            ports: Mutex::new(PortPool::new(config.ports.clone())),
            flows: Mutex::new(HashMap::new()),
            metrics,
            timing,
            proxy_protocol: config.proxy_protocol,
            tasks: Mutex::new(Vec::new()),
        }
    }

    /// Starts steering over the XDP front's maps: reserves Q's ports in the kernel, records the TLS
    /// port, adopts the steered flows a previous router left in the maps (watched with
    /// `adopted_idle_limit`, their routes' tunnel timeouts being unknown here: the default tunnel
    /// timeout), and spawns the `STEER_EVENTS` reader and the sweep (on the current runtime).
    pub fn start(
        maps: SteerMaps,
        pod_interfaces: Arc<dyn PodInterfaces>,
        config: &SteerConfig,
        metrics: Arc<Metrics>,
        adopted_idle_limit: Duration,
    ) -> Result<Arc<Steering>, SteerStartError> {
        let sender = sys::RawSocket::open().map_err(SteerStartError::RawSocket)?;
        let reserved =
            reserved_ports::reserve(std::path::Path::new(reserved_ports::RESERVED_PORTS), config.ports.clone())
                .map_err(SteerStartError::ReservedPorts)?;
        let SteerMaps { ports, syns, answers, flows, events, fallbacks } = maps;
        let datapath = aya_maps::AyaMaps {
            ports: Mutex::new(ports),
            syns: Mutex::new(syns),
            answers: Mutex::new(answers),
            flows: Mutex::new(flows),
            fallbacks: Mutex::new(fallbacks),
        };
        // Both families: a listener that takes no IPv6 simply never sees an IPv6 SYN's connection.
        for family in [FAMILY_IPV4, FAMILY_IPV6] {
            datapath
                .add_port(SteerPortKey { port: config.https_port, family, _pad: 0 })
                .map_err(SteerStartError::Ports)?;
        }
        let steering = Arc::new(Steering::new(
            Arc::new(datapath),
            Arc::new(sender),
            pod_interfaces,
            config,
            metrics,
            SetupTiming::default(),
        ));
        // Before anything takes a port: the adopted flows hold theirs.
        steering.adopt(adopted_idle_limit);
        let reader = tokio::spawn(waiters::read_events(events, steering.waiters.clone()));
        let sweep = tokio::spawn(sweep::run(Arc::downgrade(&steering), SWEEP_EVERY));
        lock(&steering.tasks).extend([reader, sweep]);
        info!(ports = ?config.ports, reserved_ports = %reserved, "passthrough steering on");
        Ok(steering)
    }

    /// The next router took the datapath over (it adopted the flows): stop reading `STEER_EVENTS`, whose
    /// records are its from now on, and stop sweeping the flows it watches. A setup still waiting falls back.
    pub fn hand_over(&self) {
        for task in lock(&self.tasks).drain(..) {
            task.abort();
        }
    }

    /// Offers `stream` (R, whose ClientHello `hello` was read) to the datapath for the pod `pod`. A steered
    /// flow keeps `hold` until the sweep removes it; otherwise it is dropped before this returns.
    pub async fn steer(
        &self,
        stream: TcpStream,
        hello: &[u8],
        pod: SocketAddr,
        tunnel_timeout: Duration,
        hold: FlowHold,
    ) -> SteerOutcome {
        let (Ok(client), Ok(local)) = (stream.peer_addr(), stream.local_addr()) else {
            return SteerOutcome::NotSteered(stream);
        };
        let request = setup::SteerRequest { client, local, pod, hello, tunnel_timeout };
        match self.offload(&stream, &request).await {
            Ok(pod_key) => {
                self.hold_while_watched(&pod_key, hold);
                self.metrics.xdp_steered_connections.inc();
                debug!(%client, %pod, "passthrough connection steered");
                // Repair mode is on: the close sends nothing to C.
                drop(stream);
                SteerOutcome::Steered
            }
            Err(reason) => {
                self.metrics.xdp_steer_fallbacks.get_or_create(&SteerFallbackLabels { reason: reason.label() }).inc();
                self.datapath.count_fallback(reason.slot());
                debug!(%client, %pod, reason = reason.label(), "passthrough connection not steered");
                if reason.is_fatal() {
                    warn!(%client, %pod, "the pod never acknowledged the replayed ClientHello; the connection is lost");
                    leg::reset(stream);
                    return SteerOutcome::Lost;
                }
                SteerOutcome::NotSteered(stream)
            }
        }
    }

    fn take_port(&self) -> Option<u16> {
        lock(&self.ports).take()
    }

    fn free_port(&self, port: u16) {
        lock(&self.ports).free(port);
    }

    fn register(&self, flow: SteeredFlow) {
        lock(&self.flows).insert(flow.pod_key, Watched { flow, _hold: None });
        self.metrics.xdp_steered_flows.inc();
    }

    /// Keeps `hold` with the flow watched under `pod_key`; dropped now when the sweep removed it already.
    fn hold_while_watched(&self, pod_key: &FlowKey, hold: FlowHold) {
        if let Some(watched) = lock(&self.flows).get_mut(pod_key) {
            watched._hold = Some(hold);
        }
    }

    /// The flows being watched (a copy).
    fn watched(&self) -> Vec<SteeredFlow> {
        lock(&self.flows).values().map(|watched| watched.flow).collect()
    }
}
