//! The offload of one passthrough connection (the contract's steps 2-5): the pod-side entry in
//! `STEER_CONNECTING`, leg B's SYN from the raw socket, the pod's answer, R's numbers read in
//! TCP_REPAIR mode, both directions' entries written `STEERED`, the ClientHello replayed until the
//! pod acknowledged it whole. Any failure undoes what was written and names its [`Fallback`].

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use router_common::nat::FlowKey;
use router_common::steer::setup::{SteerAnswer, SteerSyn, ANSWER_RST, SYN_OPT_MSS, SYN_OPT_TIMESTAMPS};
use tokio::time::Instant;

use super::datapath::DatapathError;
use super::entries::{self, RouterSide};
use super::segment::{Segment, TcpOptions, TCP_ACK, TCP_PSH, TCP_RST, TCP_SYN, TIMESTAMP_OPTION_BYTES};
use super::Fallback;
use super::{SteeredFlow, Steering};
use crate::xdp::conntrack::monotonic_ns;

/// Leg B's SYN window (the contract's default: the SteerSyn does not keep C's).
const SYN_WINDOW: u16 = 64_240;
/// The window leg B's ACKs offer, in bytes before C's scale is applied (C's real window reaches P
/// with C's first ACK).
const REPLAY_WINDOW_BYTES: u32 = 1 << 20;
/// The MSS TCP assumes when a SYN carries none (RFC 9293).
const DEFAULT_MSS: u16 = 536;
/// How often the replay's acknowledgement is looked for.
const ACK_POLL: Duration = Duration::from_millis(10);

/// The waits of the setup (the contract's values by default; shorter in tests).
#[derive(Clone, Copy, Debug)]
pub struct SetupTiming {
    /// Wait for the pod's answer after each SYN.
    pub syn_wait: Duration,
    /// SYNs sent before giving up.
    pub syn_tries: u32,
    /// First wait for the replay's acknowledgement (doubling after each resend).
    pub replay_wait: Duration,
    /// Replays sent before giving up.
    pub replay_tries: u32,
}

impl Default for SetupTiming {
    fn default() -> Self {
        SetupTiming {
            syn_wait: Duration::from_millis(500),
            syn_tries: 2,
            replay_wait: Duration::from_millis(200),
            replay_tries: 4,
        }
    }
}

/// R, the router's socket for the connection, as the setup needs it.
pub trait RouterLeg {
    fn repair_on(&self) -> io::Result<()>;
    fn repair_off(&self) -> io::Result<()>;
    /// R's sequence numbers, clock and window scales (in repair mode).
    fn side(&self) -> io::Result<RouterSide>;
}

/// One connection to offload: R's two addresses, the chosen pod, the bytes read from R.
#[derive(Clone, Copy, Debug)]
pub struct SteerRequest<'a> {
    /// C as R sees it (R's peer address).
    pub client: SocketAddr,
    /// R's own address (after any nodePort rewrite).
    pub local: SocketAddr,
    pub pod: SocketAddr,
    /// Every byte read from R: the ClientHello and whatever followed it.
    pub hello: &'a [u8],
    /// The route's tunnel timeout: the steered flow's idle limit.
    pub tunnel_timeout: Duration,
}

/// What the setup has written so far, undone on failure.
struct Undo {
    pod_key: FlowKey,
    client_key: Option<FlowKey>,
    port: u16,
    repair: bool,
    /// Leg B exists at the pod (it answered with SYN-ACK): abandon it with a RST.
    reset: Option<Segment<'static>>,
}

/// `addr` with an IPv4-mapped IPv6 address (a dual-stack listener's view of an IPv4 peer) as the
/// IPv4 address it is: the datapath sees the IPv4 packet.
fn canonical(addr: SocketAddr) -> SocketAddr {
    SocketAddr::new(addr.ip().to_canonical(), addr.port())
}

fn map_fallback(error: DatapathError) -> Fallback {
    match error {
        DatapathError::Full { .. } => Fallback::MapFull,
        DatapathError::Map { .. } => {
            tracing::debug!(%error, "steering map operation failed");
            Fallback::MapError
        }
    }
}

/// `a` is at or after `b` in sequence space.
fn serial_at_least(a: u32, b: u32) -> bool {
    a.wrapping_sub(b) as i32 >= 0
}

impl Steering {
    /// Offloads the connection to the datapath. On `Ok`, the flow is steered, watched under the returned
    /// key (P -> Q), and R must be closed as it is (repair mode on: nothing reaches C). On `Err`, every entry
    /// is gone and R is out of repair mode (unless the reason [`Fallback::is_fatal`]).
    pub(super) async fn offload(&self, leg: &impl RouterLeg, request: &SteerRequest<'_>) -> Result<FlowKey, Fallback> {
        if self.proxy_protocol {
            return Err(Fallback::ProxyProtocol);
        }
        let (client, local, pod) = (canonical(request.client), canonical(request.local), canonical(request.pod));
        if client.is_ipv4() != pod.is_ipv4() || client.is_ipv4() != local.is_ipv4() {
            return Err(Fallback::MixedFamily);
        }
        let syn_key = entries::key(client, local);
        let syn = self.datapath.syn(&syn_key).map_err(map_fallback)?.ok_or(Fallback::NoSyn)?;
        let _ = self.datapath.remove_syn(&syn_key);
        let port = self.take_port().ok_or(Fallback::NoPort)?;
        let route = match self.sender.route_towards(pod.ip()) {
            Ok(route) => route,
            Err(error) => {
                tracing::debug!(%error, %pod, "no route to the pod for leg B");
                self.free_port(port);
                return Err(Fallback::RawSocket);
            }
        };
        // Before leg B's SYN: the pod's SYN-ACK must meet `steer_ingress` where it comes in.
        if let Err(error) = self.pod_interfaces.watch(route.if_index) {
            tracing::warn!(%error, %pod, if_index = route.if_index, "steer_ingress cannot run where the pod answers");
            self.free_port(port);
            return Err(Fallback::PodInterface);
        }
        let q = SocketAddr::new(route.source, port);
        if q.is_ipv4() != pod.is_ipv4() {
            self.free_port(port);
            return Err(Fallback::MixedFamily);
        }
        let mut undo = Undo { pod_key: entries::key(pod, q), client_key: None, port, repair: false, reset: None };
        match self.open_leg_b(leg, request, &syn, client, q, pod, &mut undo).await {
            Ok(()) => {
                self.register(SteeredFlow {
                    pod_key: undo.pod_key,
                    client_key: undo.client_key.unwrap_or(syn_key),
                    port,
                    idle_limit: request.tunnel_timeout,
                });
                Ok(undo.pod_key)
            }
            Err(reason) => {
                self.undo(leg, undo, reason);
                Err(reason)
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn open_leg_b(
        &self,
        leg: &impl RouterLeg,
        request: &SteerRequest<'_>,
        syn: &SteerSyn,
        client: SocketAddr,
        q: SocketAddr,
        pod: SocketAddr,
        undo: &mut Undo,
    ) -> Result<(), Fallback> {
        let pod_key = undo.pod_key;
        let now = monotonic_ns();
        let mut answered = self.waiters.wait(pod_key);
        self.datapath.write_flow(&pod_key, &entries::connecting_entry(syn, client, now)).map_err(map_fallback)?;

        let syn_segment = Segment {
            src: q.ip(),
            dst: pod.ip(),
            src_port: q.port(),
            dst_port: pod.port(),
            seq: syn.isn,
            ack: 0,
            flags: TCP_SYN,
            window: SYN_WINDOW,
            options: entries::syn_options(syn),
            payload: &[],
        };
        let mut answer = None;
        for _ in 0..self.timing.syn_tries.max(1) {
            self.send(&syn_segment)?;
            let _ = tokio::time::timeout(self.timing.syn_wait, &mut answered).await;
            answer = self.datapath.answer(&pod_key).map_err(map_fallback)?;
            if answer.is_some() {
                break;
            }
        }
        self.waiters.cancel(&pod_key);
        let answer = answer.ok_or(Fallback::NoAnswer)?;
        let _ = self.datapath.remove_answer(&pod_key);
        if answer.flags & ANSWER_RST != 0 {
            return Err(Fallback::PodRst);
        }
        undo.reset = Some(reset_segment(syn, &answer, q, pod));

        leg.repair_on().map_err(|error| {
            tracing::debug!(%error, "TCP_REPAIR on the router's socket");
            Fallback::Repair
        })?;
        undo.repair = true;
        let side = leg.side().map_err(|error| {
            tracing::debug!(%error, "reading the router socket's sequence numbers");
            Fallback::Repair
        })?;
        let hello_len = u32::try_from(request.hello.len()).map_err(|_| Fallback::LeftoverBytes)?;
        if side.receive_next != syn.isn.wrapping_add(1).wrapping_add(hello_len) {
            return Err(Fallback::LeftoverBytes);
        }
        entries::check_answer(syn, &answer, &side).map_err(|mismatch| {
            tracing::debug!(%mismatch, "the pod's SYN-ACK does not fit leg A");
            Fallback::BadAnswer
        })?;

        let tcp = entries::offsets(&answer, &side);
        let now = monotonic_ns();
        let mut to_client = entries::to_client_entry(syn, client, tcp, now);
        // Nothing of the replay acknowledged yet (the SYN only): the translation stage moves it forward.
        to_client.acked = syn.isn.wrapping_add(1);
        self.datapath.write_flow(&pod_key, &to_client).map_err(map_fallback)?;
        let client_key = entries::key(client, entries::arrival_destination(syn));
        undo.client_key = Some(client_key);
        let to_pod = entries::to_pod_entry(&answer, q, pod, tcp, now);
        self.datapath.write_flow(&client_key, &to_pod).map_err(map_fallback)?;
        // From here on C's packets go to P. Bytes that reached R between the first look and this write
        // would be lost with R: look again.
        let after = leg.side().map_err(|_| Fallback::Repair)?;
        if after.receive_next != side.receive_next {
            return Err(Fallback::LeftoverBytes);
        }

        self.replay(syn, &answer, q, pod, request.hello, side.wscale_client).await
    }

    /// Sends the held bytes on leg B and resends them until P acknowledged all of them.
    async fn replay(
        &self,
        syn: &SteerSyn,
        answer: &SteerAnswer,
        q: SocketAddr,
        pod: SocketAddr,
        hello: &[u8],
        wscale_client: u8,
    ) -> Result<(), Fallback> {
        let timestamps = syn.options & SYN_OPT_TIMESTAMPS != 0;
        let mss = |options: u8, mss: u16| if options & SYN_OPT_MSS != 0 { mss } else { DEFAULT_MSS };
        let option_bytes = if timestamps { TIMESTAMP_OPTION_BYTES } else { 0 };
        let segment_size = usize::from(mss(syn.options, syn.mss).min(mss(answer.options, answer.mss)))
            .saturating_sub(option_bytes)
            .max(1);
        let window = u16::try_from((REPLAY_WINDOW_BYTES >> wscale_client.min(14)).min(65_535)).unwrap_or(u16::MAX);
        let first_seq = syn.isn.wrapping_add(1);
        let chunks: Vec<&[u8]> = hello.chunks(segment_size).collect();
        let end = first_seq.wrapping_add(u32::try_from(hello.len()).unwrap_or(u32::MAX));
        let mut wait = self.timing.replay_wait;
        for _ in 0..self.timing.replay_tries.max(1) {
            let mut offset = 0u32;
            for (i, chunk) in chunks.iter().enumerate() {
                let last = i + 1 == chunks.len();
                let segment = Segment {
                    src: q.ip(),
                    dst: pod.ip(),
                    src_port: q.port(),
                    dst_port: pod.port(),
                    seq: first_seq.wrapping_add(offset),
                    ack: answer.isn.wrapping_add(1),
                    flags: if last { TCP_ACK | TCP_PSH } else { TCP_ACK },
                    window,
                    options: TcpOptions {
                        timestamps: timestamps.then_some((syn.tsval, answer.tsval)),
                        ..TcpOptions::default()
                    },
                    payload: chunk,
                };
                self.send(&segment)?;
                offset = offset.wrapping_add(u32::try_from(chunk.len()).unwrap_or(0));
            }
            let deadline = Instant::now() + wait;
            while Instant::now() < deadline {
                tokio::time::sleep(ACK_POLL).await;
                let entry = self.datapath.flow(&entries::key(pod, q)).map_err(map_fallback)?;
                if entry.is_some_and(|e| serial_at_least(e.acked, end)) {
                    return Ok(());
                }
            }
            wait *= 2;
        }
        let reached_client = self.datapath.flow(&entries::key(pod, q)).map_err(map_fallback)?.map_or(0, |e| e.packets);
        if reached_client == 0 {
            Err(Fallback::NotAcked)
        } else {
            Err(Fallback::ReplayUnacked)
        }
    }

    fn send(&self, segment: &Segment<'_>) -> Result<(), Fallback> {
        self.sender.send(segment.dst, &segment.build()).map_err(|error| {
            tracing::debug!(%error, "sending on leg B's raw socket");
            Fallback::RawSocket
        })
    }

    /// Removes what the setup wrote, abandons leg B at the pod, frees Q's port, and takes R out of
    /// repair mode unless the flow is lost (then R is closed with a RST by the caller).
    fn undo(&self, leg: &impl RouterLeg, undo: Undo, reason: Fallback) {
        self.waiters.cancel(&undo.pod_key);
        let acked_by_pod = match (undo.client_key, undo.reset) {
            (Some(_), Some(rst)) => self
                .datapath
                .flow(&undo.pod_key)
                .ok()
                .flatten()
                .map(|entry| entry.acked)
                .filter(|acked| serial_at_least(*acked, rst.seq)),
            _ => None,
        };
        let _ = self.datapath.remove_flow(&undo.pod_key);
        let _ = self.datapath.remove_answer(&undo.pod_key);
        if let Some(client_key) = undo.client_key {
            let _ = self.datapath.remove_flow(&client_key);
        }
        if let Some(mut rst) = undo.reset {
            // P accepts a RST only at the sequence number it expects next: after what it acknowledged.
            rst.seq = acked_by_pod.unwrap_or(rst.seq);
            let _ = self.send(&rst);
        }
        self.free_port(undo.port);
        if undo.repair && !reason.is_fatal() {
            if let Err(error) = leg.repair_off() {
                tracing::warn!(%error, "cannot take the router's socket out of TCP_REPAIR");
            }
        }
    }
}

/// The RST that abandons leg B before any byte was acknowledged: at Ic + 1, acknowledging P's SYN-ACK.
fn reset_segment(syn: &SteerSyn, answer: &SteerAnswer, q: SocketAddr, pod: SocketAddr) -> Segment<'static> {
    Segment {
        src: q.ip(),
        dst: pod.ip(),
        src_port: q.port(),
        dst_port: pod.port(),
        seq: syn.isn.wrapping_add(1),
        ack: answer.isn.wrapping_add(1),
        flags: TCP_RST | TCP_ACK,
        window: 0,
        options: TcpOptions::default(),
        payload: &[],
    }
}
