//! `net.ipv4.ip_local_reserved_ports` gets leg B's port range at start, merged with what is there,
//! so that the kernel never hands one of Q's ports to a socket of its own.

use std::io;
use std::ops::RangeInclusive;
use std::path::Path;

/// The sysctl, per network namespace.
pub const RESERVED_PORTS: &str = "/proc/sys/net/ipv4/ip_local_reserved_ports";

/// Adds `range` to the sysctl at `path` (normally [`RESERVED_PORTS`]); returns what was written.
pub fn reserve(path: &Path, range: RangeInclusive<u16>) -> io::Result<String> {
    let existing = std::fs::read_to_string(path)?;
    let merged = merge(&existing, range);
    std::fs::write(path, format!("{merged}\n"))?;
    Ok(merged)
}

/// The sysctl's list ("a-b,c,...") with `range` added, overlapping and adjacent ranges joined.
/// Parts that do not parse are kept out (the kernel wrote the list, so there are none).
pub fn merge(existing: &str, range: RangeInclusive<u16>) -> String {
    let mut ranges: Vec<(u16, u16)> = existing
        .trim()
        .split(',')
        .filter_map(|part| {
            let part = part.trim();
            match part.split_once('-') {
                Some((a, b)) => Some((a.trim().parse().ok()?, b.trim().parse().ok()?)),
                None => part.parse().ok().map(|p| (p, p)),
            }
        })
        .collect();
    ranges.push((*range.start(), *range.end()));
    ranges.sort_unstable();
    let mut joined: Vec<(u16, u16)> = Vec::new();
    for (start, end) in ranges {
        match joined.last_mut() {
            Some(last) if u32::from(start) <= u32::from(last.1) + 1 => last.1 = last.1.max(end),
            _ => joined.push((start, end)),
        }
    }
    joined.iter().map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_with_what_is_there() {
        assert_eq!(merge("", 61_000..=61_999), "61000-61999");
        assert_eq!(merge("\n", 61_000..=61_999), "61000-61999");
        assert_eq!(merge("8080,9000-9100\n", 61_000..=61_999), "8080,9000-9100,61000-61999");
        assert_eq!(merge("60000-61500", 61_000..=61_999), "60000-61999", "overlap joined");
        assert_eq!(merge("62000", 61_000..=61_999), "61000-62000", "adjacent joined");
        assert_eq!(merge("61000-61999", 61_000..=61_999), "61000-61999", "already there");
        assert_eq!(merge("65535", 65_530..=65_535), "65530-65535");
    }

    #[test]
    fn writes_the_merged_list() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("ip_local_reserved_ports");
        std::fs::write(&path, "1000-1010\n").expect("write");
        assert_eq!(reserve(&path, 61_000..=61_002).expect("reserve"), "1000-1010,61000-61002");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "1000-1010,61000-61002\n");
    }
}
