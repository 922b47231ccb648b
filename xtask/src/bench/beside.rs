//! What runs beside the load during a measured run (a SYN flood, hostile clients), on the load's CPU: its CPU is
//! the bench's own, not noise.

pub trait Beside {
    fn pids(&self) -> Vec<u32>;
}

impl Beside for () {
    fn pids(&self) -> Vec<u32> {
        Vec::new()
    }
}
