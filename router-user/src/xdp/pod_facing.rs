//! Pod-facing interfaces found while the router runs. A steered flow's pod answers leg B, and sends its
//! half of the flow, on the interface the node reaches it by: a pod's veth, a CNI bridge, an overlay's
//! management port, or the NIC itself for a pod on another node. The steering setup asks the FIB for that
//! interface ([`super::route_to`]) before leg B's SYN leaves and calls [`XdpFront::watch_pod_interface`],
//! which attaches `steer_ingress` there the first time (pinned as `link_tci_<iface>`, adopted by the next
//! router like the others). Interfaces that go away (a deleted pod's veth) take their tcx link with them;
//! [`XdpFront::prune_pod_interfaces`] forgets them and removes their pins.

use super::{links::LinkKind, loader, XdpError, XdpFront};

impl XdpFront {
    /// Makes sure the packets arriving on interface `if_index` meet `steer_ingress`: attaches it there
    /// unless it runs there already (the front's own interface, one named at start, one found before).
    /// Returns whether it attached now.
    pub fn watch_pod_interface(&self, if_index: u32) -> Result<bool, XdpError> {
        if if_index == self.if_index {
            return Ok(false);
        }
        let mut hooks = self.hooks();
        if hooks.links.iter().any(|link| link.kind == LinkKind::TcxIngress && link.if_index == if_index) {
            return Ok(false);
        }
        let iface = loader::if_name(if_index).ok_or(XdpError::UnknownInterface { iface: format!("#{if_index}") })?;
        // A link on a gone interface of the same name would hold the pin name.
        prune(&mut hooks, self.prog_id);
        let super::Hooks { links, pins, ebpf } = &mut *hooks;
        let link = loader::attach_pod_facing(ebpf, &iface, if_index, pins)?;
        tracing::info!(%iface, if_index, "steer_ingress attached to a pod-facing interface found from the FIB");
        links.push(link);
        Ok(true)
    }

    /// Forgets the pod-facing interfaces that no longer exist (their links are gone with them) and removes
    /// their pins; returns their names.
    pub fn prune_pod_interfaces(&self) -> Vec<String> {
        prune(&mut self.hooks(), self.prog_id)
    }
}

fn prune(hooks: &mut super::Hooks, prog_id: u32) -> Vec<String> {
    let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut hooks.links).into_iter().partition(|link| {
        link.kind == LinkKind::TcxIngress && loader::if_name(link.if_index).is_none_or(|name| name != link.iface)
    });
    hooks.links = kept;
    let mut names = Vec::new();
    for link in gone {
        let iface = link.iface.clone();
        if let Err(err) = loader::detach(&mut hooks.ebpf, link, prog_id) {
            tracing::debug!(%iface, %err, "removing the link of a pod-facing interface that went away");
        }
        tracing::info!(%iface, "pod-facing interface gone; its steer_ingress link removed");
        names.push(iface);
    }
    names
}
