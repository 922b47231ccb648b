//! Load-balancing algorithms by their HAProxy names, and how the OpenShift router picks the default.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BalanceAlgorithm {
    RoundRobin,
    LeastConn,
    Source,
    Random,
}

impl BalanceAlgorithm {
    pub fn parse(value: &str) -> Option<BalanceAlgorithm> {
        match value.trim().to_ascii_lowercase().as_str() {
            "roundrobin" => Some(BalanceAlgorithm::RoundRobin),
            "leastconn" => Some(BalanceAlgorithm::LeastConn),
            "source" => Some(BalanceAlgorithm::Source),
            "random" => Some(BalanceAlgorithm::Random),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            BalanceAlgorithm::RoundRobin => "roundrobin",
            BalanceAlgorithm::LeastConn => "leastconn",
            BalanceAlgorithm::Source => "source",
            BalanceAlgorithm::Random => "random",
        }
    }
}
